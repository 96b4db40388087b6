/* mcp.c — `sandlot mcp`: the MCP server over stdio, as a bridge: each JSON-RPC line on
 * stdin is POSTed to the daemon's /mcp on its unix socket, each answer is a line on stdout.
 * Requests run concurrently (a ping is answered while a long command runs), at most
 * INFLIGHT_MAX at once; initialize runs alone, since the others need its session. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "state.h"

/* The daemon's cap on a JSON body (api.h: API_DEFAULT_MAX_JSON). */
#define LINE_MAX_BYTES (8u << 20)
#define INFLIGHT_MAX   16

typedef struct bridge {
	char socket[PATH_MAX];
	pthread_mutex_t mu; /* guards what follows, and stdout */
	pthread_cond_t done;
	int inflight;
	char session[80]; /* Mcp-Session-Id of the daemon's session, once initialized */
	char *initialize; /* the client's initialize line, to make a new session */
} bridge;

/* One MCP request on a connection of its own, with the session's header when there is one;
 * the session the daemon names in its answer into *SID_OUT (80 bytes). */
static int http_call(const bridge *b, const char *session, const char *method, const char *body,
		     size_t len, cli_http_reply *out, sl_err *err)
{
	char extra[160] = "";
	if (session[0])
		snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", session);
	if (cli_daemon_http(b->socket, method, "/mcp", extra, body, len, out, err) < 0)
		return -1;
	const char *h = cli_http_header(out, "Mcp-Session-Id");
	if (h)
		sscanf(h, "%79[^\r\n ]", out->session);
	return 0;
}

/* One answer, one line on stdout (the daemon prints JSON unformatted: no newline in it). */
static void emit(bridge *b, const char *text)
{
	pthread_mutex_lock(&b->mu);
	printf("%s\n", text);
	fflush(stdout);
	pthread_mutex_unlock(&b->mu);
}

/* A JSON-RPC error for LINE's request (none for a notification) when the daemon could
 * not answer it. */
static void answer_failure(bridge *b, const char *line, const sl_err *err)
{
	fprintf(stderr, "sandlot mcp: %s\n", err->msg);
	cJSON *m = cJSON_Parse(line);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	if (cJSON_IsString(id) || cJSON_IsNumber(id)) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "jsonrpc", "2.0");
		cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, false));
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddNumberToObject(e, "code", -32603);
		cJSON_AddStringToObject(e, "message", err->msg);
		char *s = cJSON_PrintUnformatted(o);
		if (s)
			emit(b, s);
		free(s);
		cJSON_Delete(o);
	}
	cJSON_Delete(m);
}

static bool is_initialize(const char *line)
{
	cJSON *m = cJSON_Parse(line);
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	bool yes = cJSON_IsString(method) && !strcmp(method->valuestring, "initialize");
	cJSON_Delete(m);
	return yes;
}

static void session_get(bridge *b, char sid[80])
{
	pthread_mutex_lock(&b->mu);
	snprintf(sid, 80, "%s", b->session);
	pthread_mutex_unlock(&b->mu);
}

/* A new session with the client's initialize, unless another request already replaced
 * STALE. */
static void session_renew(bridge *b, const char *stale)
{
	pthread_mutex_lock(&b->mu);
	if (!strcmp(b->session, stale) && b->initialize) {
		cli_http_reply again;
		sl_err err = {0};
		b->session[0] = '\0';
		if (http_call(b, "", "POST", b->initialize, strlen(b->initialize), &again, &err) ==
			0 &&
		    again.status == 200)
			snprintf(b->session, sizeof(b->session), "%s", again.session);
		free(again.buf);
	}
	pthread_mutex_unlock(&b->mu);
}

/* Forward LINE. A daemon restarted since initialize knows no session: a new one is made
 * with the client's initialize, and LINE sent again, once. */
static int forward(bridge *b, const char *line, size_t len, bool init, sl_err *err)
{
	char sid[80] = "";
	if (!init)
		session_get(b, sid);
	cli_http_reply rep;
	int rc = http_call(b, sid, "POST", line, len, &rep, err);
	if (rc == 0 && rep.status == 404 && sid[0]) {
		session_renew(b, sid);
		session_get(b, sid);
		free(rep.buf);
		rc = http_call(b, sid, "POST", line, len, &rep, err);
	}
	if (rc < 0) {
		free(rep.buf);
		return -1;
	}
	if (init && rep.session[0]) {
		pthread_mutex_lock(&b->mu);
		snprintf(b->session, sizeof(b->session), "%s", rep.session);
		free(b->initialize);
		b->initialize = strdup(line);
		pthread_mutex_unlock(&b->mu);
	}
	if (rep.body[0])
		emit(b, rep.body);
	free(rep.buf);
	return 0;
}

typedef struct job {
	bridge *b;
	char *line;
	size_t len;
	bool init; /* an initialize */
} job;

static void job_run(job *j)
{
	sl_err err = {0};
	if (j->len > LINE_MAX_BYTES)
		sl_fail(&err, SL_TOOLARGE, 0, "a message of %zu bytes (at most %u)", j->len,
			LINE_MAX_BYTES);
	if (err.kind || forward(j->b, j->line, j->len, j->init, &err) < 0)
		answer_failure(j->b, j->line, &err);
}

static void *job_thread(void *arg)
{
	job *j = arg;
	bridge *b = j->b;
	job_run(j);
	free(j->line);
	free(j);
	pthread_mutex_lock(&b->mu);
	b->inflight--;
	pthread_cond_signal(&b->done);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* Wait until at most MAX requests are in flight. */
static void inflight_wait(bridge *b, int max)
{
	pthread_mutex_lock(&b->mu);
	while (b->inflight > max)
		pthread_cond_wait(&b->done, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

/* LINE (taken) on a thread of its own; initialize (or a failed thread start) here. */
static void dispatch(bridge *b, char *line, size_t len)
{
	job *j = malloc(sizeof(*j));
	pthread_t th;
	pthread_attr_t attr;
	bool init = is_initialize(line);
	if (j && !init) {
		*j = (job){b, line, len, false};
		inflight_wait(b, INFLIGHT_MAX - 1);
		pthread_mutex_lock(&b->mu);
		b->inflight++;
		pthread_mutex_unlock(&b->mu);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int e = pthread_create(&th, &attr, job_thread, j);
		pthread_attr_destroy(&attr);
		if (e == 0)
			return;
		pthread_mutex_lock(&b->mu);
		b->inflight--;
		pthread_mutex_unlock(&b->mu);
	} else {
		inflight_wait(b, 0);
	}
	job one = {b, line, len, init};
	job_run(&one);
	free(line);
	free(j);
}

int cmd_mcp(int argc, char **argv)
{
	bridge b = {.mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
	const char *socket_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			socket_path = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: sandlot mcp [--socket PATH]\n"
			     "The MCP server over stdio (JSON-RPC, one message a line), for MCP\n"
			     "clients that start a command. It talks to the running daemon "
			     "(`sandlot\n"
			     "serve`) on its unix socket (default <run dir>/sandlot.sock); see\n"
			     "docs/mcp.md.");
			return 0;
		} else
			return cli_usage("mcp: unexpected argument \"%s\"", argv[i]);
	}
	if (socket_path) {
		snprintf(b.socket, sizeof(b.socket), "%s", socket_path);
	} else {
		sl_config cfg;
		sl_err err = {0};
		if (config_load(&cfg, &err) < 0)
			return cli_fail(&err);
		state_api_socket_path(&cfg, b.socket, sizeof(b.socket));
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n)
			dispatch(&b, steal_ptr(&line), n);
		cap = 0;
	}
	free(line);
	/* The client closed stdin: the answers still to come, then the session's end. */
	inflight_wait(&b, 0);
	if (b.session[0]) {
		cli_http_reply rep;
		sl_err err = {0};
		http_call(&b, b.session, "DELETE", "", 0, &rep, &err);
		free(rep.buf);
	}
	free(b.initialize);
	return 0;
}

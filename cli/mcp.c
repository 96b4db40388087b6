/* mcp.c — `sandlot mcp`: the MCP server over stdio, as a bridge: each JSON-RPC line on
 * stdin is POSTed to the daemon's /mcp on its unix socket, each answer is a line on stdout. */
#include <errno.h>
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

typedef struct bridge {
	char socket[PATH_MAX];
	char session[80]; /* Mcp-Session-Id of the daemon's session, once initialized */
	char *initialize; /* the client's initialize line, to make a new session */
} bridge;

typedef struct http_reply {
	int status;
	char session[80];
	char *body; /* NUL-terminated; points into the buffer */
	char *buf;
} http_reply;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w, n -= w;
	}
	return 0;
}

/* One request on a connection of its own (Connection: close: the answer ends at EOF). */
static int http_call(const bridge *b, const char *method, const char *body, size_t len,
		     http_reply *out, sl_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memset(out, 0, sizeof(*out));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->socket);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sl_sysfail(err, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return sl_fail(err, SL_INTERNAL, errno,
			       "no sandlot daemon on %s (start `sandlot serve`, or pass --socket)",
			       b->socket);
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "%s /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
			 "Content-Type: application/json\r\n"
			 "Accept: application/json, text/event-stream\r\n"
			 "Content-Length: %zu\r\n%s%s%s\r\n",
			 method, len, b->session[0] ? "Mcp-Session-Id: " : "", b->session,
			 b->session[0] ? "\r\n" : "");
	if (write_all(fd, head, n) < 0 || write_all(fd, body, len) < 0)
		return sl_sysfail(err, "send to the daemon on %s", b->socket);
	size_t cap = 65536, got = 0;
	for (;;) {
		if (got + 1 >= cap || !out->buf) {
			char *nb = realloc(out->buf, out->buf ? cap *= 2 : cap);
			if (!nb)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "the daemon's answer");
			out->buf = nb;
		}
		ssize_t r = read(fd, out->buf + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "read the daemon's answer");
		if (r == 0)
			break;
		got += r;
	}
	out->buf[got] = '\0';
	char *end = strstr(out->buf, "\r\n\r\n");
	if (sscanf(out->buf, "HTTP/1.%*d %d", &out->status) != 1 || !end)
		return sl_fail(err, SL_INTERNAL, 0, "the daemon on %s gave no HTTP answer",
			       b->socket);
	*end = '\0';
	out->body = end + 4;
	for (char *h = strstr(out->buf, "\r\n"); h; h = strstr(h + 2, "\r\n"))
		if (!strncasecmp(h + 2, "Mcp-Session-Id:", 15))
			sscanf(h + 17, " %79[^\r\n ]", out->session);
	return 0;
}

/* A JSON-RPC error for LINE's request (none for a notification) when the daemon could
 * not answer it. */
static void answer_failure(const char *line, const sl_err *err)
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
			printf("%s\n", s);
		fflush(stdout);
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

/* Forward LINE. A daemon restarted since initialize knows no session: a new one is made
 * with the client's initialize, and LINE sent again, once. */
static int forward(bridge *b, const char *line, size_t len, sl_err *err)
{
	bool init = is_initialize(line);
	if (init)
		b->session[0] = '\0';
	http_reply rep;
	int rc = http_call(b, "POST", line, len, &rep, err);
	if (rc == 0 && rep.status == 404 && b->session[0] && b->initialize) {
		http_reply again;
		b->session[0] = '\0';
		if (http_call(b, "POST", b->initialize, strlen(b->initialize), &again, err) == 0 &&
		    again.status == 200 && again.session[0]) {
			snprintf(b->session, sizeof(b->session), "%s", again.session);
			free(rep.buf);
			rc = http_call(b, "POST", line, len, &rep, err);
		}
		free(again.buf);
	}
	if (rc < 0) {
		free(rep.buf);
		return -1;
	}
	if (init && rep.session[0]) {
		snprintf(b->session, sizeof(b->session), "%s", rep.session);
		free(b->initialize);
		b->initialize = strdup(line);
	}
	if (rep.body[0]) {
		/* Every answer is one line of JSON (the daemon prints it unformatted). */
		printf("%s\n", rep.body);
		fflush(stdout);
	}
	free(rep.buf);
	return 0;
}

int cmd_mcp(int argc, char **argv)
{
	bridge b = {0};
	const char *socket_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			socket_path = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: sandlot mcp [--socket PATH]\n"
			     "The MCP server over stdio (JSON-RPC, one message a line), for MCP "
			     "clients\nthat start a command. It talks to the running daemon "
			     "(`sandlot serve`) on\nits unix socket (default <run "
			     "dir>/sandlot.sock); "
			     "see docs/mcp.md.");
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
		if (!n)
			continue;
		sl_err err = {0};
		if ((size_t)n > LINE_MAX_BYTES)
			sl_fail(&err, SL_TOOLARGE, 0, "a message of %zd bytes (at most %u)", n,
				LINE_MAX_BYTES);
		if (err.kind || forward(&b, line, n, &err) < 0)
			answer_failure(line, &err);
	}
	free(line);
	/* The client closed stdin: end the session. */
	if (b.session[0]) {
		http_reply rep;
		sl_err err = {0};
		http_call(&b, "DELETE", "", 0, &rep, &err);
		free(rep.buf);
	}
	free(b.initialize);
	return 0;
}

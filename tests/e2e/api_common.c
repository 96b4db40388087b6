/* api_common.c — what the test_api_*.c programs share: the main daemon D with its key and
 * fixtures, request helpers over common.h's client, a WebSocket client, and the spec check. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "api_common.h"

e2e_daemon D;
char KEY[80];
sl_ctx CTX;
static char CAPTURES[256]; /* <root>/captures.jsonl: this program's responses */

/* ---- fixtures ---------------------------------------------------------------------------- */

/* e2e_on_leak: the last warnings and errors of the daemon (and of the CLI), in
 * $SANDLOT_STATE_DIR/sandlot.log. */
static void print_daemon_warnings(void)
{
	char *log = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *text = e2e_read_file(log);
	const char *lines[20];
	int n = 0;
	for (char *l = text, *end; l && *l; l = end) {
		end = l + strcspn(l, "\n");
		if (*end)
			*end++ = '\0';
		if (strstr(l, "Z warn [") || strstr(l, "Z error ["))
			lines[n++ % 20] = l;
	}
	if (n)
		print_error("the last warnings logged (of %d, in %s):\n", n, log);
	for (int i = n > 20 ? n - 20 : 0; i < n; i++)
		print_error("  %s\n", lines[i % 20]);
	free(text);
	free(log);
}

int api_group_setup(void **state)
{
	e2e_group_setup(state);
	char *init = e2e_build_path("sandlot-init");
	char prof[PATH_MAX];
	if (!realpath("seccomp/default.json", prof))
		fail_msg("run from the source tree (seccomp/default.json)");
	setenv("SANDLOT_INIT", init, 1);
	setenv("SANDLOT_SECCOMP_PROFILE", prof, 1);
	free(init);
	sl_err err = {0};
	if (ctx_open(&CTX, &err) < 0)
		fail_msg("ctx_open: %s", err.msg);
	snprintf(CAPTURES, sizeof(CAPTURES), "%s/captures.jsonl", e2e_root());
	char *sock = e2e_printf("%s/api.sock", e2e_root());
	e2e_daemon_start(&D, sock, true, NULL);
	free(sock);
	e2e_http_use(&D, CAPTURES);
	e2e_on_leak = print_daemon_warnings;
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "key", NULL);
	assert_int_equal(r.status, 0);
	snprintf(KEY, sizeof(KEY), "%.*s", (int)strcspn(r.out, "\n"), r.out);
	e2e_result_free(&r);
	return 0;
}

int api_group_teardown(void **state)
{
	int st = e2e_daemon_halt(&D);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		print_error("sandlot serve did not stop cleanly (wait status %d)\n", st);
	ctx_close(&CTX);
	return e2e_group_teardown(state);
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- HTTP: common.h's client, to D when a request names no daemon ------------------------ */

const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v))
		fail_msg("%s: not a number in %s", key, cJSON_PrintUnformatted(o));
	return v->valuedouble;
}

const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Fail unless R has STATUS; on an error status, the error's code must be CODE and its
 * message must contain NEEDLE (when given). */
void expect(const e2e_resp *r, long status, const char *code, const char *needle)
{
	if (r->status != status)
		fail_msg("expected HTTP %ld, got %ld: %s", status, r->status, r->body);
	if (!code)
		return;
	assert_non_null(r->json);
	const cJSON *e = jget(r->json, "error");
	assert_non_null(e);
	assert_string_equal(jstr(e, "code"), code);
	assert_non_null(jstr(e, "message"));
	if (needle && !strstr(jstr(e, "message"), needle))
		fail_msg("error message \"%s\" does not mention \"%s\"", jstr(e, "message"),
			 needle);
}

/* A sandbox from the create body BODY (NULL: busybox, nothing else); returns its id. */
char *sandbox_new(const char *body)
{
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes", body ? body : "{\"image\":\"busybox\"}");
	expect(&r, 201, NULL, NULL);
	char *id = strdup(jstr(r.json, "id"));
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	return id;
}

void sandbox_del(char *id)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "DELETE", p, NULL);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	free(id);
}

/* Run BODY (an ExecutionRequest) with ?wait=; the ended Execution (caller frees). */
cJSON *run_wait(const char *id, const char *body)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=60s", id);
	e2e_http(&r, "POST", p, body);
	free(p);
	expect(&r, 201, NULL, NULL);
	cJSON *o = r.json;
	r.json = NULL;
	e2e_resp_free(&r);
	if (!strcmp(jstr(o, "status"), "running"))
		fail_msg("execution still running after the wait: %s", cJSON_PrintUnformatted(o));
	return o;
}

/* Start BODY without waiting; returns the execution id. */
char *exec_start_id(const char *id, const char *body)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_http(&r, "POST", p, body);
	free(p);
	expect(&r, 201, NULL, NULL);
	char *eid = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	return eid;
}

cJSON *exec_get_wait(const char *id, const char *eid, const char *wait)
{
	e2e_resp r;
	char *p = wait ? e2e_printf("/v1/sandboxes/%s/executions/%s?wait=%s", id, eid, wait)
		       : e2e_printf("/v1/sandboxes/%s/executions/%s", id, eid);
	e2e_http(&r, "GET", p, NULL);
	free(p);
	expect(&r, 200, NULL, NULL);
	cJSON *o = r.json;
	r.json = NULL;
	e2e_resp_free(&r);
	return o;
}

/* Shell line -> stdout of a command run to its end (exit 0 required). */
char *sh_ok(const char *id, const char *line)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "command", line);
	char *body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	cJSON *e = run_wait(id, body);
	free(body);
	if (jnum(e, "exitCode") != 0)
		fail_msg("`%s` failed: %s", line, cJSON_PrintUnformatted(e));
	char *out = strdup(jstr(e, "stdout"));
	cJSON_Delete(e);
	return out;
}

char *get_raw(const char *path, long *status)
{
	e2e_resp r;
	e2e_http(&r, "GET", path, NULL);
	*status = r.status;
	char *b = r.body;
	r.body = NULL;
	e2e_resp_free(&r);
	return b;
}

void expect_call(const char *method, const char *path, const char *body, long status,
		 const char *code, const char *needle)
{
	e2e_resp r;
	e2e_http(&r, method, path, body);
	expect(&r, status, code, needle);
	e2e_resp_free(&r);
}

/* The host pid of sandbox ID's init, from its record. */
pid_t record_init_pid(const char *id)
{
	char *rec = e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
	char *text = e2e_read_file(rec);
	cJSON *o = cJSON_Parse(text);
	pid_t pid = (pid_t)jnum(o, "init_pid");
	cJSON_Delete(o);
	free(text);
	free(rec);
	assert_true(pid > 1);
	return pid;
}

/* PATH (a /proc or cgroup file) comes to hold NEEDLE within 1 s. */
void assert_file_comes_to_hold(const char *path, const char *needle)
{
	char *text = NULL;
	for (int i = 0; i < 200 && !(text && strstr(text, needle)); i++) {
		free(text);
		usleep(5000);
		text = e2e_read_file(path);
	}
	assert_non_null(text);
	assert_non_null(strstr(text, needle));
	free(text);
}

/* PID is reaped within 2 s, not left a zombie: kill(2) still finds a zombie. Only the
 * daemon, the parent of inits and spares, can reap them (an init: api/server.c,
 * reap_inits; a spare it dropped: runtime/launch.c, launch_spare_drop). */
void assert_reaped(pid_t pid)
{
	bool reaped = false;
	for (int i = 0; i < 100 && !reaped; i++) {
		reaped = kill(pid, 0) < 0 && errno == ESRCH;
		if (!reaped)
			usleep(20000);
	}
	assert_true(reaped);
}

/* Inodes of the entries of DIR whose names start with PREFIX (and do not hold SKIP, when
 * given), up to MAX: a renamed directory keeps its own. */
int prefixed_inodes(const char *dir, const char *prefix, const char *skip, unsigned long *out,
		    int max)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < max)
		if (!strncmp(de->d_name, prefix, strlen(prefix)) &&
		    !(skip && strstr(de->d_name, skip))) {
			struct stat st;
			char *p = e2e_printf("%s/%s", dir, de->d_name);
			if (stat(p, &st) == 0)
				out[n++] = st.st_ino;
			free(p);
		}
	if (d)
		closedir(d);
	return n;
}

/* The run dirs of the spare inits of daemon PID, as inodes (a take renames one to the
 * sandbox's run dir, which keeps it). */
int spare_init_dirs_of(pid_t pid, unsigned long *out, int max)
{
	char *dir = e2e_printf("%s/sandboxes", getenv("SANDLOT_RUN_DIR"));
	char *mine = e2e_printf(".spare-%d-", (int)pid);
	int n = prefixed_inodes(dir, mine, NULL, out, max);
	free(mine);
	free(dir);
	return n;
}

/* ---- a request on a thread of its own --------------------------------------------------- */

void *job_main(void *p)
{
	job *j = p;
	e2e_resp r;
	double t0 = now_s();
	e2e_req q = {.method = j->method,
		     .path = j->path,
		     .body = j->body,
		     .len = j->body ? strlen(j->body) : 0};
	j->status = e2e_http_q(&r, &q);
	j->secs = now_s() - t0;
	j->bytes = r.len;
	if (r.json && cJSON_IsString(jget(r.json, "status")))
		snprintf(j->estatus, sizeof(j->estatus), "%s", jstr(r.json, "status"));
	j->data = r.body;
	r.body = NULL;
	e2e_resp_free(&r);
	return NULL;
}

/* ---- what a daemon's restart may change ------------------------------------------------- */

/* The snapshot differs from BEFORE only by the daemon's pid (OLD gone, NEW there). */
/* ---- a WebSocket client ------------------------------------------------------------------ */

/* The client half of the opening handshake on connected FD, for HOST and PATH; the
 * HTTP status, with the status line in STATUS_LINE and Sec-WebSocket-Accept checked. */
int ws_handshake(ws *w, int fd, const char *host, const char *path, char *status_line, size_t sl)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	unsigned char raw[16];
	char key[32], accept_want[32];
	assert_int_equal(getrandom(raw, sizeof(raw), 0), 16);
	base64_encode_raw(key, 16, raw);
	key[24] = '\0';
	struct sha1_ctx sha;
	uint8_t dg[SHA1_DIGEST_SIZE];
	sha1_init(&sha);
	sha1_update(&sha, 24, (const uint8_t *)key);
	sha1_update(&sha, 36, (const uint8_t *)"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
	sha1_digest(&sha, sizeof(dg), dg);
	base64_encode_raw(accept_want, sizeof(dg), dg);
	accept_want[28] = '\0';
	char *rq = e2e_printf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
			      "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
			      "Sec-WebSocket-Version: 13\r\n\r\n",
			      path, host, key);
	assert_int_equal(write(w->fd, rq, strlen(rq)), (ssize_t)strlen(rq));
	free(rq);
	char *end = NULL;
	while (!end) {
		struct pollfd pf = {w->fd, POLLIN, 0};
		assert_true(poll(&pf, 1, 10000) == 1);
		ssize_t n = read(w->fd, w->buf + w->len, sizeof(w->buf) - w->len - 1);
		assert_true(n > 0);
		w->len += n;
		w->buf[w->len] = '\0';
		end = strstr((char *)w->buf, "\r\n\r\n");
	}
	snprintf(status_line, sl, "%.*s", (int)strcspn((char *)w->buf, "\r\n"), (char *)w->buf);
	int code = atoi((char *)w->buf + 9);
	if (code == 101) {
		char want[64];
		snprintf(want, sizeof(want), "Sec-WebSocket-Accept: %s", accept_want);
		if (!strcasestr((char *)w->buf, want))
			fail_msg("bad handshake: %s", w->buf);
	}
	size_t hl = end + 4 - (char *)w->buf;
	memmove(w->buf, w->buf + hl, w->len - hl);
	w->len -= hl;
	return code;
}

/* A WebSocket on the daemon's unix socket. */
int ws_connect(ws *w, const char *path, char *status_line, size_t sl)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", D.sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return ws_handshake(w, fd, "sandlot", path, status_line, sl);
}

void ws_send(ws *w, int op, const void *data, size_t len)
{
	unsigned char h[14], mask[4];
	size_t hl = 2;
	h[0] = 0x80 | op;
	if (len < 126) {
		h[1] = 0x80 | len;
	} else {
		h[1] = 0x80 | 126;
		h[2] = len >> 8, h[3] = len;
		hl = 4;
	}
	assert_int_equal(getrandom(mask, 4, 0), 4);
	memcpy(h + hl, mask, 4);
	hl += 4;
	unsigned char *m = malloc(hl + len);
	memcpy(m, h, hl);
	for (size_t i = 0; i < len; i++)
		m[hl + i] = ((const unsigned char *)data)[i] ^ mask[i & 3];
	assert_int_equal(write(w->fd, m, hl + len), (ssize_t)(hl + len));
	free(m);
}

/* Read frames until OUT contains NEEDLE (or a close frame arrives: *close = its code). */
bool ws_until(ws *w, char *out, size_t cap, const char *needle, int *close, int ms)
{
	size_t olen = strlen(out);
	double end = now_s() + ms / 1000.0;
	while (now_s() < end) {
		while (w->len >= 2) {
			int op = w->buf[0] & 15;
			size_t l = w->buf[1] & 127, p = 2;
			if (w->buf[1] & 0x80)
				fail_msg("a server frame is masked");
			if (l == 126) {
				if (w->len < 4)
					break;
				l = (size_t)w->buf[2] << 8 | w->buf[3];
				p = 4;
			}
			if (w->len < p + l)
				break;
			if (op == 8) {
				*close = l >= 2 ? (w->buf[p] << 8 | w->buf[p + 1]) : 1005;
				return needle && strstr(out, needle);
			}
			if (op == 2 && olen + l < cap) {
				memcpy(out + olen, w->buf + p, l);
				olen += l;
				out[olen] = '\0';
			}
			memmove(w->buf, w->buf + p + l, w->len - p - l);
			w->len -= p + l;
		}
		if (needle && strstr(out, needle))
			return true;
		struct pollfd pf = {w->fd, POLLIN, 0};
		if (poll(&pf, 1, 100) == 1) {
			ssize_t n = read(w->fd, w->buf + w->len, sizeof(w->buf) - w->len);
			if (n <= 0)
				return false;
			w->len += n;
		}
	}
	return false;
}

/* ---- the spec -------------------------------------------------------------------------- */

/* Last in each program: api/openapi.yaml against the sources, the live daemon D, and
 * every response this program's tests recorded (tests/api/spec_check.py). */
void test_zz_spec(void **state)
{
	char *report = e2e_spec_check(D.sock, CAPTURES);
	print_message("%s", report);
	assert_null(strstr(report, " 0 captured"));
	free(report);
}

long long metric(const char *name)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/metrics", NULL);
	expect(&r, 200, NULL, NULL);
	char *key = e2e_printf("\n%s ", name);
	const char *at = strstr(r.body, key);
	long long v = at ? atoll(at + strlen(key)) : -1;
	free(key);
	e2e_resp_free(&r);
	return v;
}

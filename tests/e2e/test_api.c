/* test_api.c — end-to-end tests of `sandlot serve`: the real daemon on a test socket and a
 * loopback port, driven over HTTP (common.h's libcurl client): every route and error case, concurrency,
 * kill -9 restarts, files and hostile paths, WebSocket attach, and the spec check. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <grp.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "common.h"
#include "sandbox.h"

/* ---- the daemon -------------------------------------------------------------------------- */


static e2e_daemon D;	   /* the main daemon every test talks to */
static char KEY[80];	   /* its API key */
static char CAPTURES[256]; /* responses recorded for the spec check */


static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* ---- HTTP: common.h's client, the main daemon D when a request names none ---------- */

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v))
		fail_msg("%s: not a number in %s", key, cJSON_PrintUnformatted(o));
	return v->valuedouble;
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Fail unless R has STATUS; on an error status, the error's code must be CODE and its
 * message must contain NEEDLE (when given). */
static void expect(const e2e_resp *r, long status, const char *code, const char *needle)
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
static char *sandbox_new(const char *body)
{
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes", body ? body : "{\"image\":\"busybox\"}");
	expect(&r, 201, NULL, NULL);
	char *id = strdup(jstr(r.json, "id"));
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	return id;
}

static void sandbox_del(char *id)
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
static cJSON *run_wait(const char *id, const char *body)
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
static char *exec_start_id(const char *id, const char *body)
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

static cJSON *exec_get_wait(const char *id, const char *eid, const char *wait)
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
static char *sh_ok(const char *id, const char *line)
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

static char *get_raw(const char *path, long *status)
{
	e2e_resp r;
	e2e_http(&r, "GET", path, NULL);
	*status = r.status;
	char *b = r.body;
	r.body = NULL;
	e2e_resp_free(&r);
	return b;
}

/* ---- fixtures ---------------------------------------------------------------------------- */

static sl_ctx CTX; /* for runtime calls the API does not offer yet (pause) */

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

/* ---- a state written by the previous version ---- */

#define FIXTURE_SB "sbx_jzpkjfnp3364bofrvqce"
#define FIXTURE_GONE "sbx_cakjobdq4i37uzikd5co"
#define FIXTURE_EXE "exe_isixd3szdkotrrf6hljb"

/* Copy tests/fixtures/state-v1/{state,run}/REL to ROOT/REL (ROOT: the state or run dir),
 * refusing to replace anything there. FIX edits a record's JSON on the way (its clock
 * fields, which must lie around now). */
static void fixture_copy(const char *root, const char *rel, void (*fix)(cJSON *))
{
	const char *kind = !strcmp(root, getenv("SANDLOT_RUN_DIR")) ? "run" : "state";
	char *src = e2e_printf("tests/fixtures/state-v1/%s/%s", kind, rel);
	char *dst = e2e_printf("%s/%s", root, rel);
	char *text = e2e_read_file(src);
	assert_non_null(text);
	char *out = text;
	cJSON *o = NULL;
	if (fix) {
		o = cJSON_Parse(text);
		assert_non_null(o);
		fix(o);
		out = cJSON_PrintUnformatted(o);
	}
	for (char *sl = strchr(dst + strlen(root) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
		*sl = '\0';
		mkdir(dst, 0700);
		*sl = '/';
	}
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		fail_msg("fixture %s: %s", dst, strerror(errno));
	assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
	close(fd);
	if (o) {
		free(out);
		cJSON_Delete(o);
	}
	free(text);
	free(src);
	free(dst);
}

/* The version-1 record's own clock fields, moved to now (its lifetime ends a day from
 * now, its tombstone is a second old): what they were when the fixture was written. */
static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)(ts.tv_nsec / 1000000);
}

static void fix_live(cJSON *o)
{
	cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "internal");
	double now = wall_ms();
	cJSON_ReplaceItemInObject(in, "createdMs", cJSON_CreateNumber(now - 60e3));
	cJSON_ReplaceItemInObject(in, "expiresMs", cJSON_CreateNumber(now + 86400e3));
}

static void fix_gone(cJSON *o)
{
	cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "internal");
	double now = wall_ms();
	cJSON_ReplaceItemInObject(in, "terminatedMs", cJSON_CreateNumber(now - 1e3));
}

/* A daemon upgraded in place reads every sandbox, execution, snapshot and volume the
 * previous version wrote (tests/fixtures/state-v1, written by 8358faa's daemon: a stopped
 * sandbox with env, labels, limits, a volume and timeouts; a tombstone; an execution
 * with its output; a snapshot; a volume), and its next save writes schema 2. */
static void test_state_of_the_previous_version_loads(void **state)
{
	const char *sd = getenv("SANDLOT_STATE_DIR"), *rd = getenv("SANDLOT_RUN_DIR");
	char *slot = e2e_printf("%s/slots/36086", sd);
	if (access(slot, F_OK) == 0)
		skip(); /* a live sandbox of this run has the fixture's uid range */
	fixture_copy(sd, "sandboxes/" FIXTURE_SB "/sandbox.json", fix_live);
	fixture_copy(sd, "sandboxes/" FIXTURE_GONE "/sandbox.json", fix_gone);
	fixture_copy(sd, "names/fixture-a", NULL);
	fixture_copy(sd, "slots/36086", NULL);
	fixture_copy(sd, "snapshots/snp_7k5acnmd3nfmichbvvfq.json", NULL);
	fixture_copy(sd, "snapshots/names/fixture-snap", NULL);
	fixture_copy(sd, "volumes/fixture-vol.json", NULL);
	static const char *const exe[] = {"exec.json", "exit", "stdout", "stderr"};
	for (size_t i = 0; i < 4; i++) {
		char *rel = e2e_printf("sandboxes/" FIXTURE_SB "/execs/" FIXTURE_EXE "/%s", exe[i]);
		fixture_copy(rd, rel, NULL);
		free(rel);
	}

	e2e_resp r;
	assert_int_equal(e2e_http(&r, "GET", "/v1/sandboxes/fixture-a", NULL), 200);
	assert_string_equal(jstr(r.json, "id"), FIXTURE_SB);
	assert_string_equal(jstr(r.json, "status"), "stopped");
	assert_string_equal(jstr(r.json, "image"), "busybox");
	assert_string_equal(jstr(jget(r.json, "env"), "GREETING"), "hello");
	assert_string_equal(jstr(jget(r.json, "labels"), "team"), "core");
	assert_string_equal(jstr(r.json, "user"), "65534");
	assert_string_equal(jstr(r.json, "workingDirectory"), "/tmp");
	const cJSON *res = jget(r.json, "resources");
	assert_string_equal(jstr(res, "cpu"), "500m");
	assert_string_equal(jstr(res, "memory"), "128Mi");
	assert_string_equal(jstr(res, "disk"), "1Gi");
	assert_int_equal((int)jnum(res, "pids"), 256);
	assert_int_equal((int)jnum(jget(r.json, "timeout"), "idle"), 3600000);
	assert_int_equal((int)jnum(jget(r.json, "timeout"), "lifetime"), 86400000);
	assert_non_null(jstr(r.json, "expiresAt"));
	const cJSON *vol = cJSON_GetArrayItem(jget(r.json, "volumes"), 0);
	assert_string_equal(jstr(vol, "name"), "fixture-vol");
	assert_string_equal(jstr(vol, "mountPath"), "/data");
	e2e_resp_free(&r);

	assert_int_equal(e2e_http(&r, "GET", "/v1/sandboxes/" FIXTURE_GONE, NULL), 200);
	assert_string_equal(jstr(r.json, "status"), "terminated");
	assert_string_equal(jstr(r.json, "name"), "fixture-gone");
	assert_non_null(jstr(r.json, "reason"));
	e2e_resp_free(&r);

	assert_int_equal(e2e_http(&r, "GET", "/v1/sandboxes/fixture-a/executions/" FIXTURE_EXE, NULL),
			 200);
	assert_string_equal(jstr(r.json, "status"), "failed");
	assert_int_equal((int)jnum(r.json, "exitCode"), 3);
	e2e_resp_free(&r);
	assert_int_equal(e2e_http(&r, "GET",
			      "/v1/sandboxes/fixture-a/executions/" FIXTURE_EXE "/stdout", NULL),
			 200);
	assert_string_equal(r.body, "fixture-out\n");
	e2e_resp_free(&r);

	assert_int_equal(e2e_http(&r, "GET", "/v1/snapshots/fixture-snap", NULL), 200);
	assert_string_equal(jstr(r.json, "id"), "snp_7k5acnmd3nfmichbvvfq");
	assert_string_equal(jstr(r.json, "sandboxId"), FIXTURE_SB);
	assert_string_equal(jstr(r.json, "image"), "busybox");
	e2e_resp_free(&r);
	assert_int_equal(e2e_http(&r, "GET", "/v1/volumes", NULL), 200);
	assert_true(e2e_contains(r.body, "\"fixture-vol\""));
	e2e_resp_free(&r);

	/* The next save writes the runtime's own schema, and loses nothing. */
	assert_int_equal(e2e_http(&r, "PATCH", "/v1/sandboxes/fixture-a",
			      "{\"labels\":{\"team\":\"core\",\"after\":\"upgrade\"}}"),
			 200);
	e2e_resp_free(&r);
	char *rec = e2e_printf("%s/sandboxes/" FIXTURE_SB "/sandbox.json", sd);
	char *text = e2e_read_file(rec);
	assert_non_null(text);
	assert_true(e2e_contains(text, "\"schema\":2"));
	assert_false(e2e_contains(text, "\"internal\""));
	free(text);
	assert_int_equal(e2e_http(&r, "GET", "/v1/sandboxes/fixture-a", NULL), 200);
	assert_string_equal(jstr(jget(r.json, "labels"), "after"), "upgrade");
	assert_string_equal(jstr(jget(r.json, "env"), "GREETING"), "hello");
	assert_string_equal(jstr(jget(r.json, "resources"), "memory"), "128Mi");
	assert_int_equal((int)jnum(jget(r.json, "timeout"), "idle"), 3600000);
	e2e_resp_free(&r);

	/* Gone again: the sandbox (no layer, no cgroup: nothing of it is on this host), and
	 * the snapshot's and the volume's records (their subvolumes never were). */
	assert_int_equal(e2e_http(&r, "DELETE", "/v1/sandboxes/fixture-a", NULL), 204);
	e2e_resp_free(&r);
	char *p = e2e_printf("%s/snapshots/snp_7k5acnmd3nfmichbvvfq.json", sd);
	unlink(p);
	free(p);
	p = e2e_printf("%s/snapshots/names/fixture-snap", sd);
	unlink(p);
	free(p);
	p = e2e_printf("%s/volumes/fixture-vol.json", sd);
	unlink(p);
	free(p);
	free(rec);
	free(slot);
}

static int group_setup(void **state)
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

static e2e_daemon SMALL; /* the second daemon of test_caps_and_clean_stop */

static int group_teardown(void **state)
{
	e2e_daemon_halt(&SMALL);
	int st = e2e_daemon_halt(&D);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		print_error("sandlot serve did not stop cleanly (wait status %d)\n", st);
	ctx_close(&CTX);
	return e2e_group_teardown(state);
}

/* ---- health, auth, metrics ------------------------------------------------------------- */

static void test_health_and_auth(void **state)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/health", NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "ok");
	assert_true(strlen(jstr(r.json, "version")) > 0);
	assert_true(jnum(r.json, "sandboxes") >= 0);
	e2e_resp_free(&r);

	/* The key: 64 hex digits, mode 0600, what `sandlot key` prints. */
	assert_int_equal(strlen(KEY), 64);
	char *kp = e2e_printf("%s/api.key", getenv("SANDLOT_STATE_DIR"));
	struct stat st;
	assert_int_equal(stat(kp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char *kf = e2e_read_file(kp);
	assert_int_equal(strncmp(kf, KEY, 64), 0);
	free(kf);
	free(kp);
	struct stat ss;
	assert_int_equal(stat(D.sock, &ss), 0);
	assert_true(S_ISSOCK(ss.st_mode));
	assert_int_equal(ss.st_mode & 0777, 0660);

	/* TCP: nothing answers without the key, the unknown route included. */
	char bearer[128], xkey[128], wrong[128];
	snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s", KEY);
	snprintf(xkey, sizeof(xkey), "X-API-Key: %s", KEY);
	snprintf(wrong, sizeof(wrong), "Authorization: Bearer %.63s%c", KEY,
		 KEY[63] == '0' ? '1' : '0');
	const struct {
		const char *auth, *path;
		long status;
	} cases[] = {
	    {NULL, "/v1/health", 401},
	    {wrong, "/v1/health", 401},
	    {"X-API-Key: short", "/v1/health", 401},
	    {NULL, "/v1/no-such-route", 401},
	    {NULL, "/metrics", 401},
	    {bearer, "/v1/health", 200},
	    {xkey, "/v1/health", 200},
	    {bearer, "/v1/no-such-route", 404},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		e2e_req q = {
		    .method = "GET", .path = cases[i].path, .tcp = true, .auth = cases[i].auth};
		e2e_http_q(&r, &q);
		expect(&r, cases[i].status, cases[i].status == 401 ? "UNAUTHENTICATED" : NULL,
		       NULL);
		e2e_resp_free(&r);
	}

	/* Metrics: Prometheus text with the promised families. */
	char *id = sandbox_new(NULL);
	free(sh_ok(id, "true"));
	e2e_http(&r, "GET", "/metrics", NULL);
	expect(&r, 200, NULL, NULL);
	assert_non_null(strstr(r.ctype, "text/plain"));
	char *line = e2e_printf("sandlot_sandbox_cpu_seconds_total{sandbox=\"%s\"}", id);
	assert_non_null(strstr(r.body, line));
	free(line);
	line = e2e_printf("sandlot_sandbox_memory_bytes{sandbox=\"%s\"}", id);
	assert_non_null(strstr(r.body, line));
	free(line);
	assert_non_null(strstr(r.body, "sandlot_sandboxes{status=\"running\"}"));
	const char *ex = strstr(r.body, "\nsandlot_executions_total ");
	assert_non_null(ex);
	assert_true(atoi(ex + strlen("\nsandlot_executions_total ")) >= 1);
	e2e_resp_free(&r);
	sandbox_del(id);
}

/* A counter or gauge from /metrics (-1 when absent). */
static long long metric(const char *name)
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

/* The daemon answers a create, a pause, a resume once the record is in place, and its
 * syncer makes each record durable right after: three syncs, none left pending. */
static void test_records_synced_after_answer(void **state)
{
	long long before = metric("sandlot_record_syncs_total");
	assert_true(before >= 0);
	assert_true(metric("sandlot_record_syncs_pending") >= 0);
	char *id = sandbox_new(NULL);
	/* In place at the answer: another process reads it (the CLI does). */
	char *rec = e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
	char *body = e2e_read_file(rec);
	assert_non_null(strstr(body, "\"status\":\"running\""));
	free(body);
	for (const char *const *verb = (const char *const[]){"pause", "resume", NULL}; *verb;
	     verb++) {
		e2e_resp r;
		char *p = e2e_printf("/v1/sandboxes/%s/%s", id, *verb);
		e2e_http(&r, "POST", p, NULL);
		expect(&r, 200, NULL, NULL);
		e2e_resp_free(&r);
		free(p);
	}
	long long synced = 0, pending = 1;
	for (int i = 0; i < 100 && (synced < before + 3 || pending); i++) {
		usleep(50 * 1000);
		synced = metric("sandlot_record_syncs_total");
		pending = metric("sandlot_record_syncs_pending");
	}
	assert_true(synced >= before + 3);
	assert_int_equal(pending, 0);
	body = e2e_read_file(rec);
	assert_non_null(strstr(body, "\"status\":\"running\""));
	free(body);
	free(rec);
	sandbox_del(id);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void expect_call(const char *method, const char *path, const char *body, long status,
			const char *code, const char *needle)
{
	e2e_resp r;
	e2e_http(&r, method, path, body);
	expect(&r, status, code, needle);
	e2e_resp_free(&r);
}

static void test_errors(void **state)
{
	e2e_resp r;
	/* Routes: unknown paths say so; known paths name the methods they take. */
	e2e_http(&r, "GET", "/v1/nope", NULL);
	expect(&r, 404, "NOT_FOUND", NULL);
	assert_string_equal(jstr(jget(r.json, "error"), "route"), "unknown");
	e2e_resp_free(&r);
	expect_call("GET", "/v1/sandboxes/a/b/c/d/e", NULL, 404, "NOT_FOUND", "no route");
	e2e_http(&r, "PUT", "/v1/health", NULL);
	expect(&r, 405, "METHOD_NOT_ALLOWED", NULL);
	assert_string_equal(r.allow, "GET");
	e2e_resp_free(&r);
	e2e_http(&r, "PATCH", "/v1/sandboxes", "{}");
	expect(&r, 405, "METHOD_NOT_ALLOWED", NULL);
	assert_non_null(strstr(r.allow, "POST"));
	e2e_resp_free(&r);

	/* Bodies: malformed JSON names the place; types and units name the field. */
	expect_call("POST", "/v1/sandboxes", "{\"image\": \"busybox\",}", 400, "INVALID_ARGUMENT",
		    "malformed JSON at byte");
	expect_call("POST", "/v1/sandboxes", "{\"image\": ", 400, "INVALID_ARGUMENT",
		    "malformed JSON");
	expect_call("POST", "/v1/sandboxes", "[1]", 400, "INVALID_ARGUMENT", "object");
	expect_call("POST", "/v1/sandboxes", "{\"resources\":{\"memory\":\"12XB\"}}", 400,
		    "INVALID_ARGUMENT", "resources.memory");
	expect_call("POST", "/v1/sandboxes", "{\"resources\":{\"cpu\":\"fast\"}}", 400,
		    "INVALID_ARGUMENT", "resources.cpu");
	expect_call("POST", "/v1/sandboxes", "{\"resources\":{\"pids\":\"many\"}}", 400,
		    "INVALID_ARGUMENT", "resources.pids");
	expect_call("POST", "/v1/sandboxes", "{\"resources\":{\"pids\":1.5}}", 400,
		    "INVALID_ARGUMENT", "resources.pids");
	expect_call("POST", "/v1/sandboxes", "{\"env\":\"A=1\"}", 400, "INVALID_ARGUMENT", "env");
	expect_call("POST", "/v1/sandboxes", "{\"labels\":{\"a\":1}}", 400, "INVALID_ARGUMENT",
		    "labels.a");
	expect_call("POST", "/v1/sandboxes", "{\"ephemeral\":\"yes\"}", 400, "INVALID_ARGUMENT",
		    "ephemeral");
	expect_call("POST", "/v1/sandboxes", "{\"imgae\":\"busybox\"}", 400, "INVALID_ARGUMENT",
		    "imgae");
	expect_call("POST", "/v1/sandboxes", "{\"timeout\":{\"execution\":\"5 parsecs\"}}", 400,
		    "INVALID_ARGUMENT", "timeout.execution");
	/* Fields of later features: 501 naming them. */
	expect_call("POST", "/v1/sandboxes",
		    "{\"network\":{\"enabled\":true,\"allow\":[\"10.0.0.0/33\"]}}", 400,
		    "INVALID_ARGUMENT", "network.allow[0]");
	expect_call("POST", "/v1/sandboxes", "{\"network\":{\"deny\":[\"10.0.0.0/8\"]}}", 400,
		    "INVALID_ARGUMENT", "network.enabled");
	expect_call("POST", "/v1/sandboxes", "{\"snapshot\":\"snp_aaaaaaaaaaaaaaaaaaaa\"}", 404,
		    "NOT_FOUND", "snapshot");
	expect_call("POST", "/v1/sandboxes", "{\"timeout\":{\"idle\":\"10 parsecs\"}}", 400,
		    "INVALID_ARGUMENT", "timeout.idle");
	/* Packages: each field checked as its manager allows (test_packages installs). */
	expect_call("POST", "/v1/sandboxes", "{\"packages\":[{\"name\":\"requests\"}]}", 400,
		    "INVALID_ARGUMENT", "packages[0].name and manager");
	expect_call("POST", "/v1/sandboxes",
		    "{\"packages\":[{\"name\":\"rails\",\"manager\":\"gem\"}]}", 400,
		    "INVALID_ARGUMENT", "packages[0].manager");
	expect_call("POST", "/v1/sandboxes",
		    "{\"packages\":[{\"name\":\"--index-url=http://x\",\"manager\":\"pip\"}]}",
		    400, "INVALID_ARGUMENT", "packages[0].name");
	expect_call("POST", "/v1/sandboxes",
		    "{\"packages\":[{\"name\":\"curl\",\"version\":\"1;id\",\"manager\":"
		    "\"apt\"}]}",
		    400, "INVALID_ARGUMENT", "packages[0].version");
	expect_call("POST", "/v1/sandboxes", "{\"packages\":{\"name\":\"x\"}}", 400,
		    "INVALID_ARGUMENT", "packages");
	/* An image without the installer: the create fails saying so, leaving nothing. */
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"packages\":[{\"name\":\"requests\",\"manager\":"
		    "\"pip\"}]}",
		    400, "INVALID_ARGUMENT", "no python3");
	expect_call("POST", "/v1/sandboxes", "{\"volumes\":[{\"name\":\"v\"}]}", 400,
		    "INVALID_ARGUMENT", "volumes[0]");
	expect_call("POST", "/v1/sandboxes",
		    "{\"volumes\":[{\"name\":\"/etc\",\"mountPath\":\"/h\"}]}", 400,
		    "INVALID_ARGUMENT", "allow-list");
	/* network.enabled=false is simply the default. */
	char *id = sandbox_new("{\"image\":\"busybox\",\"network\":{\"enabled\":false}}");

	/* Unknown sandbox: 404 NOT_FOUND (not an unknown route). */
	e2e_http(&r, "GET", "/v1/sandboxes/sbx_aaaaaaaaaaaaaaaaaaaa", NULL);
	expect(&r, 404, "NOT_FOUND", NULL);
	assert_null(jget(jget(r.json, "error"), "route"));
	e2e_resp_free(&r);
	expect_call("POST", "/v1/sandboxes/sbx_aaaaaaaaaaaaaaaaaaaa/executions",
		    "{\"command\":\"true\"}", 404, "NOT_FOUND", NULL);
	expect_call("GET", "/v1/sandboxes/nosuchname/files?path=/etc/passwd", NULL, 404,
		    "NOT_FOUND", NULL);
	expect_call("DELETE", "/v1/sandboxes/sbx_aaaaaaaaaaaaaaaaaaaa", NULL, 404, "NOT_FOUND",
		    NULL);

	/* Executions: the request's fields. */
	char *p = e2e_printf("/v1/sandboxes/%s/executions", id);
	expect_call("POST", p, "{\"command\":5}", 400, "INVALID_ARGUMENT", "command");
	expect_call("POST", p, "{\"command\":[]}", 400, "INVALID_ARGUMENT", "command");
	expect_call("POST", p, "{\"command\":[\"echo\",1]}", 400, "INVALID_ARGUMENT", "command[1]");
	expect_call("POST", p, "{}", 400, "INVALID_ARGUMENT", "command");
	expect_call("POST", p, "", 400, "INVALID_ARGUMENT", NULL);
	expect_call("POST", p, "{\"command\":\"true\",\"timeout\":\"soon\"}", 400,
		    "INVALID_ARGUMENT", "timeout");
	expect_call("POST", p, "{\"command\":\"true\",\"timeout\":-5}", 400, "INVALID_ARGUMENT",
		    "timeout");
	expect_call("POST", p, "{\"command\":\"true\",\"env\":{\"A\":[1]}}", 400,
		    "INVALID_ARGUMENT", "env.A");
	expect_call("POST", p, "{\"command\":\"true\",\"pty\":{\"cols\":0}}", 400,
		    "INVALID_ARGUMENT", "pty.cols");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions?wait=forever", id);
	expect_call("POST", p, "{\"command\":\"true\"}", 400, "INVALID_ARGUMENT", "?wait");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions/exe_aaaaaaaaaaaaaaaaaaaa", id);
	expect_call("GET", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files", id);
	expect_call("GET", p, NULL, 400, "INVALID_ARGUMENT", "?path");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/processes/1?signal=SIGNOPE", id);
	expect_call("DELETE", p, NULL, 400, "INVALID_ARGUMENT", "SIGNOPE");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s", id);
	expect_call("PATCH", p, "{\"labels\":\"x\"}", 400, "INVALID_ARGUMENT", "labels");
	expect_call("PATCH", p, "{\"name\":\"x\"}", 400, "INVALID_ARGUMENT", "name");
	free(p);

	/* 413: over the JSON cap (8 MiB), announced up front or streamed chunked. */
	size_t big = 9u << 20;
	char *blob = malloc(big + 1);
	memset(blob, ' ', big);
	blob[0] = '{';
	blob[big - 1] = '}';
	blob[big] = '\0';
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_req q = {.method = "POST", .path = p, .body = blob, .len = big};
	e2e_http_q(&r, &q);
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	q.chunked = true;
	e2e_http_q(&r, &q);
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	free(blob);
	free(p);

	/* Wrong state: a paused sandbox answers 409 unless the call says autoResume. */
	sl_err err = {0};
	if (sandbox_pause(&CTX, id, NULL, &err) < 0)
		fail_msg("pause: %s", err.msg);
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	expect_call("POST", p, "{\"command\":\"true\"}", 409, "CONFLICT", "paused");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/etc/passwd", id);
	expect_call("GET", p, NULL, 409, "CONFLICT", "autoResume");
	free(p);
	/* autoResume resumes and answers. */
	p = e2e_printf("/v1/sandboxes/%s/files?path=/etc/passwd&autoResume=1", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	free(sh_ok(id, "true"));
	/* Wrong state for a lifecycle call: resuming a running sandbox. */
	p = e2e_printf("/v1/sandboxes/%s/resume", id);
	expect_call("POST", p, NULL, 409, "CONFLICT", "paused");
	free(p);
	/* Routes of features that have not landed. */
	expect_call("POST", "/v1/volumes", "{}", 400, "INVALID_ARGUMENT", "name");

	/* Deleted: gone for every call but GET (the tombstone); deleting again is 404. */
	char *keep = strdup(id);
	sandbox_del(id);
	p = e2e_printf("/v1/sandboxes/%s", keep);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "terminated");
	assert_string_equal(jstr(r.json, "reason"), "deleted");
	e2e_resp_free(&r);
	expect_call("DELETE", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions", keep);
	expect_call("POST", p, "{\"command\":\"true\"}", 404, "NOT_FOUND", "destroyed");
	free(p);
	free(keep);
}

/* ---- lifecycle, snapshots, volumes, code and timeouts over HTTP ----------------------------- */

static void assert_only_daemon_changed(const e2e_snapshot *before, pid_t old, pid_t neu);

/* A file written, the sandbox stopped and started: the file is still there. */
static void stop_start_keeps_files(const char *id)
{
	e2e_resp r = {0};
	free(sh_ok(id, "echo kept > /root/f"));
	const char *steps[][2] = { { "stop", "stopped" }, { "start", "running" } };
	for (int i = 0; i < 2; i++) {
		char *p = e2e_printf("/v1/sandboxes/%s/%s", id, steps[i][0]);
		e2e_http(&r, "POST", p, NULL);
		expect(&r, 200, NULL, NULL);
		assert_string_equal(jstr(r.json, "status"), steps[i][1]);
		e2e_resp_free(&r);
		free(p);
	}
	char *out = sh_ok(id, "cat /root/f");
	assert_string_equal(out, "kept\n");
	free(out);
}

static void test_lifecycle_routes(void **state)
{
	e2e_resp r = {0};
	char *id = sandbox_new("{\"image\":\"busybox\"}");
	char *p = e2e_printf("/v1/sandboxes/%s/pause", id);
	e2e_http(&r, "POST", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "paused");
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/resume", id);
	e2e_http(&r, "POST", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	free(p);
	stop_start_keeps_files(id);
	/* An ephemeral sandbox's layer is mounted "volatile", whose marker overlay
	 * refuses on the next mount: a stop and start still keeps its files. */
	char *eid = sandbox_new("{\"image\":\"busybox\",\"ephemeral\":true}");
	stop_start_keeps_files(eid);
	char *out;
	/* ... and so does a sandbox made from its snapshot (the layer is cloned). */
	p = e2e_printf("/v1/sandboxes/%s/snapshots", eid);
	e2e_http(&r, "POST", p, "{\"name\":\"eph-snap\"}");
	expect(&r, 201, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	char *eid2 = sandbox_new("{\"snapshot\":\"eph-snap\"}");
	out = sh_ok(eid2, "cat /root/f");
	assert_string_equal(out, "kept\n");
	free(out);
	sandbox_del(eid2);
	sandbox_del(eid);
	expect_call("DELETE", "/v1/snapshots/eph-snap", NULL, 204, NULL, NULL);

	/* Paused survives a kill -9 of the daemon; resume works after the restart. */
	p = e2e_printf("/v1/sandboxes/%s/pause", id);
	expect_call("POST", p, NULL, 200, NULL, NULL);
	free(p);
	pid_t old_daemon = D.pid;
	kill(D.pid, SIGKILL);
	assert_int_equal(waitpid(D.pid, NULL, 0), D.pid);
	e2e_daemon_start(&D, D.sock, true, NULL);
	p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "paused");
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/resume", id);
	expect_call("POST", p, NULL, 200, NULL, NULL);
	free(p);
	out = sh_ok(id, "echo after-restart");
	assert_string_equal(out, "after-restart\n");
	free(out);

	/* Snapshots: create, get by name, a sandbox from it, delete refused while used. */
	p = e2e_printf("/v1/sandboxes/%s/snapshots", id);
	e2e_http(&r, "POST", p, "{\"name\":\"api-snap\"}");
	expect(&r, 201, NULL, NULL);
	char *sid = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	free(p);
	e2e_http(&r, "GET", "/v1/snapshots/api-snap", NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "id"), sid);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/snapshots", NULL);
	expect(&r, 200, NULL, NULL);
	e2e_resp_free(&r);
	char *id2 = sandbox_new("{\"snapshot\":\"api-snap\",\"volumes\":[{\"name\":\"apivol\","
				"\"mountPath\":\"/vol\"}]}");
	out = sh_ok(id2, "cat /root/f; echo v > /vol/x; cat /vol/x");
	assert_string_equal(out, "kept\nv\n");
	free(out);
	expect_call("DELETE", "/v1/snapshots/api-snap", NULL, 409, "CONFLICT", "in use");
	expect_call("DELETE", "/v1/volumes/apivol", NULL, 409, "CONFLICT", "mounted");
	e2e_http(&r, "GET", "/v1/volumes", NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(strstr(r.body, "apivol") != NULL);
	e2e_resp_free(&r);

	/* executeCode (busybox has sh only: the bash language falls back to it). */
	p = e2e_printf("/v1/sandboxes/%s/code", id2);
	e2e_http(&r, "POST", p, "{\"code\":\"echo hi; echo '{\\\"n\\\": 2}'\",\"language\":\"bash\"}");
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "success")));
	assert_int_equal((int)jget(jget(r.json, "output"), "n")->valuedouble, 2);
	e2e_resp_free(&r);
	expect_call("POST", p, "{\"code\":\"true\",\"language\":\"cobol\"}", 400,
		    "INVALID_ARGUMENT", "language");
	free(p);

	sandbox_del(id2); /* frees id2 */
	expect_call("DELETE", "/v1/snapshots/api-snap", NULL, 204, NULL, NULL);
	expect_call("DELETE", "/v1/volumes/apivol", NULL, 204, NULL, NULL);

	/* Lifetime: PATCH sets it from now; the daemon destroys at the deadline. */
	p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "PATCH", p, "{\"timeout\":{\"lifetime\":\"1s\"}}");
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsString(jget(r.json, "expiresAt")));
	e2e_resp_free(&r);
	int64_t t0 = e2e_now_ms();
	bool gone = false;
	while (!gone && e2e_now_ms() - t0 < 8000) {
		usleep(200000);
		e2e_http(&r, "GET", p, NULL);
		gone = r.json && !strcmp(jstr(r.json, "status"), "terminated");
		if (gone)
			assert_string_equal(jstr(r.json, "reason"), "lifetime expired");
		e2e_resp_free(&r);
	}
	assert_true(gone);
	free(p);
	/* Idle: an ephemeral sandbox with no calls and no commands is destroyed. */
	char *id3 = sandbox_new("{\"image\":\"busybox\",\"ephemeral\":true,"
				"\"timeout\":{\"idle\":\"1s\"}}");
	p = e2e_printf("/v1/sandboxes/%s", id3);
	t0 = e2e_now_ms();
	gone = false;
	while (!gone && e2e_now_ms() - t0 < 8000) {
		usleep(500000);
		sl_sandbox sb;
		sl_err err = {0};
		if (sandbox_get(&CTX, id3, &sb, &err) == 0) {
			gone = sb.status == SL_ST_TERMINATED;
			sandbox_free(&sb);
		}
	}
	assert_true(gone);
	free(p);
	free(id3);
	free(sid);
	free(id);
	/* A lifetime that runs out while no daemon runs is acted on at start. */
	char *id4 = sandbox_new("{\"image\":\"busybox\",\"timeout\":{\"lifetime\":\"2s\"}}");
	kill(D.pid, SIGKILL);
	assert_int_equal(waitpid(D.pid, NULL, 0), D.pid);
	sleep(3);
	{
		sl_sandbox sb;
		sl_err err = {0};
		assert_int_equal(sandbox_get(&CTX, id4, &sb, &err), 0);
		assert_int_equal(sb.status, SL_ST_RUNNING); /* nobody acted yet */
		sandbox_free(&sb);
	}
	e2e_daemon_start(&D, D.sock, true, NULL);
	p = e2e_printf("/v1/sandboxes/%s", id4);
	gone = false;
	for (int i = 0; i < 40 && !gone; i++) {
		e2e_http(&r, "GET", p, NULL);
		gone = r.json && !strcmp(jstr(r.json, "status"), "terminated");
		if (gone)
			assert_string_equal(jstr(r.json, "reason"), "lifetime expired");
		e2e_resp_free(&r);
		if (!gone)
			usleep(100000);
	}
	assert_true(gone);
	free(p);
	free(id4);
	/* The fixture compares against a snapshot with the restarted daemon in it. */
	assert_only_daemon_changed(*state, old_daemon, D.pid);
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

/* ---- ports: relay and preview proxy ------------------------------------------------------- */

/* Send RAW to 127.0.0.1:PORT and read what comes back until EOF or 5 s. */
static char *tcp_exchange(int port, const char *raw, size_t rawlen, bool half_close)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(fd, raw, rawlen, MSG_NOSIGNAL), (ssize_t)rawlen);
	if (half_close)
		shutdown(fd, SHUT_WR);
	size_t cap = 65536, len = 0;
	char *buf = calloc(1, cap + 1);
	struct pollfd p = {fd, POLLIN, 0};
	while (len < cap && poll(&p, 1, 5000) > 0) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	return buf;
}

static void test_ports(void **state)
{
	e2e_resp r = {0};
	char *id = sandbox_new("{\"image\":\"busybox\"}");
	/* A web server inside a sandbox whose network is off (only lo). */
	free(sh_ok(id, "mkdir -p /www && echo hello-from-inside > /www/index.html && "
		       "(busybox httpd -f -p 8080 -h /www >/dev/null 2>&1 &) && "
		       "(nc -lk -p 9000 -e cat >/dev/null 2>&1 || nc -ll -p 9000 -e cat) "
		       ">/dev/null 2>&1 &"));
	usleep(300000);
	char *p = e2e_printf("/v1/sandboxes/%s/ports/8080", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const char *host = jstr(r.json, "host"), *url = jstr(r.json, "url");
	assert_true(!strncmp(host, "127.0.0.1:", 10));
	int hp = atoi(host + 10);
	char want[128];
	snprintf(want, sizeof(want), "http://8080-%s.localhost:", id);
	assert_true(!strncmp(url, want, strlen(want)));
	int pp = atoi(url + strlen(want));
	e2e_resp_free(&r);
	free(p);
	/* Through the relay: plain HTTP to host:port. */
	const char *get = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
	char *out = tcp_exchange(hp, get, strlen(get), false);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	/* Through the preview proxy, routed by the Host header (no API key). */
	char *head = e2e_printf("GET /index.html HTTP/1.0\r\nHost: 8080-%s.localhost:%d\r\n\r\n", id,
			    pp);
	out = tcp_exchange(pp, head, strlen(head), false);
	assert_true(e2e_contains(out, "200 OK"));
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	free(head);
	/* A browser loads the preview URL (Chromium resolves *.localhost itself). */
	char *page = e2e_printf("http://8080-%s.localhost:%d/", id, pp);
	char *profile = e2e_printf("%s/chromium-profile", e2e_root());
	char *udd = e2e_printf("--user-data-dir=%s", profile);
	char *cargv[] = {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
			 "--disable-quic", "--no-first-run", "--disable-background-networking",
			 "--disable-component-update", "--disable-sync", udd, "--dump-dom", page,
			 NULL};
	e2e_result cr;
	e2e_run(&cr, NULL, 0, 60000, cargv);
	if (!e2e_contains(cr.out, "hello-from-inside"))
		fail_msg("chromium did not show the page (status %d): %s %s", cr.status, cr.out,
			 cr.err);
	e2e_result_free(&cr);
	char *rmcmd = e2e_printf("rm -rf %s", profile);
	assert_int_equal(system(rmcmd), 0);
	free(rmcmd);
	free(udd);
	free(profile);
	free(page);
	/* An upgrade: after the head, bytes flow both ways untouched (an echo server). */
	head = e2e_printf("GET /ws HTTP/1.1\r\nHost: 9000-%s.localhost\r\nUpgrade: websocket\r\n"
		      "Connection: Upgrade\r\n\r\n\x81\x05hello",
		      id);
	out = tcp_exchange(pp, head, strlen(head), true);
	assert_true(e2e_contains(out, "Upgrade: websocket"));
	assert_true(e2e_contains(out, "\x81\x05hello"));
	free(out);
	free(head);
	/* Unknown sandbox or a bad host: clear errors. */
	head = e2e_printf("GET / HTTP/1.0\r\nHost: 8080-sbx_aaaaaaaaaaaaaaaaaaaa.localhost\r\n\r\n");
	out = tcp_exchange(pp, head, strlen(head), false);
	assert_true(e2e_contains(out, "502"));
	free(out);
	free(head);
	out = tcp_exchange(pp, "GET / HTTP/1.0\r\nHost: example.com\r\n\r\n", 40, false);
	assert_true(e2e_contains(out, "404"));
	free(out);
	/* Bad port numbers. */
	p = e2e_printf("/v1/sandboxes/%s/ports/0", id);
	expect_call("GET", p, NULL, 400, "INVALID_ARGUMENT", "port");
	free(p);
	/* Relays close when the sandbox stops. */
	p = e2e_printf("/v1/sandboxes/%s/stop", id);
	e2e_http(&r, "POST", p, NULL);
	expect(&r, 200, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	bool closed = false;
	for (int i = 0; i < 40 && !closed; i++) {
		usleep(100000);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(hp),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		closed = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0;
		close(fd);
	}
	assert_true(closed);
	sandbox_del(id);
}


/* Send RAW to 127.0.0.1:PORT from a child that is uid and gid 65534 (nobody), and read
 * what comes back until EOF or 5 s ("" when the server closed on it at once). */
static char *exchange_as_nobody(int port, const char *raw)
{
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0 ||
		    getuid() != 65534)
			_exit(2);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(3);
		if (send(fd, raw, strlen(raw), MSG_NOSIGNAL) < 0 && errno != ECONNRESET &&
		    errno != EPIPE)
			_exit(4);
		char buf[65536];
		struct pollfd p = {fd, POLLIN, 0};
		while (poll(&p, 1, 5000) > 0) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n <= 0 || write(pfd[1], buf, n) != n)
				break;
		}
		_exit(0);
	}
	close(pfd[1]);
	size_t cap = 65536, len = 0;
	char *out = calloc(1, cap + 1);
	ssize_t n;
	while (len < cap && (n = read(pfd[0], out + len, cap - len)) > 0)
		len += n;
	close(pfd[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the uid-65534 client failed (wait status %d)", st);
	return out;
}

/* The relay and the preview URL of PORT in ID through daemon D (NULL: the main one):
 * relay port, preview port, token. */
static void port_endpoints(const e2e_daemon *d, const char *id, int port, int *hp, int *pp,
			   char token[80])
{
	e2e_resp r = {0};
	char *p = e2e_printf("/v1/sandboxes/%s/ports/%d", id, port);
	e2e_req q = {.method = "GET", .path = p, .d = d};
	e2e_http_q(&r, &q);
	expect(&r, 200, NULL, NULL);
	*hp = atoi(jstr(r.json, "host") + strlen("127.0.0.1:"));
	const char *url = jstr(r.json, "url");
	*pp = atoi(strrchr(url, ':') + 1);
	const char *tok = jstr(r.json, "token");
	assert_int_equal(strlen(tok), 64);
	snprintf(token, 80, "%s", tok);
	e2e_resp_free(&r);
	free(p);
}

static void patch_public(const char *id, int port, bool pub)
{
	e2e_resp r = {0};
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	char *body = e2e_printf("{\"ports\":{\"%d\":{\"public\":%s}}}", port, pub ? "true" : "false");
	e2e_http(&r, "PATCH", p, body);
	expect(&r, 200, NULL, NULL);
	char key[8];
	snprintf(key, sizeof(key), "%d", port);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(jget(r.json, "ports"), key);
	if (pub)
		assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "public")));
	else
		assert_null(e);
	e2e_resp_free(&r);
	free(body);
	free(p);
}

/* Hardening fix 4: the relays and preview URLs let in root and --allow-uid users; any
 * other local user needs a public port or (preview) the sandbox's token. */
static void test_ports_refuse_other_users(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\"}");
	free(sh_ok(id, "mkdir -p /www && echo hello-from-inside > /www/index.html && "
		       "(busybox httpd -f -p 8080 -h /www >/dev/null 2>&1 &)"));
	usleep(300000);
	int hp, pp;
	char token[80];
	port_endpoints(NULL, id, 8080, &hp, &pp, token);
	const char *get = "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n";
	char *host = e2e_printf("8080-%s.localhost:%d", id, pp);
	char *plain = e2e_printf("GET /index.html HTTP/1.0\r\nHost: %s\r\n\r\n", host);
	char *with_tok = e2e_printf("GET /index.html HTTP/1.0\r\nHost: %s\r\n"
				    "X-Sandlot-Preview-Token: %s\r\n\r\n",
				    host, token);
	char *wrong = e2e_printf("GET /index.html HTTP/1.0\r\nHost: %s\r\n"
				 "X-Sandlot-Preview-Token: %064d\r\n\r\n",
				 host, 7);
	char *unknown = e2e_printf("GET / HTTP/1.0\r\nHost: 8080-sbx_aaaaaaaaaaaaaaaaaaaa.localhost\r\n\r\n");
	/* Root gets through both. */
	char *out = tcp_exchange(hp, get, strlen(get), false);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	out = tcp_exchange(pp, plain, strlen(plain), false);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	/* Nobody: the relay closes at once, the preview answers 401 without the token or
	 * with a wrong one (and for an unknown sandbox: no telling which ids exist). */
	out = exchange_as_nobody(hp, get);
	assert_string_equal(out, "");
	free(out);
	out = exchange_as_nobody(pp, plain);
	assert_true(e2e_contains(out, "401 Unauthorized"));
	assert_false(e2e_contains(out, "hello-from-inside"));
	free(out);
	out = exchange_as_nobody(pp, wrong);
	assert_true(e2e_contains(out, "401 Unauthorized"));
	free(out);
	out = exchange_as_nobody(pp, unknown);
	assert_true(e2e_contains(out, "401 Unauthorized"));
	free(out);
	/* With the token: in, and the token does not reach the sandbox's server. */
	out = exchange_as_nobody(pp, with_tok);
	assert_true(e2e_contains(out, "200 OK"));
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	/* ?sandlot_token= once: a cookie for this host and a redirect without it. */
	char *visit = e2e_printf("GET /index.html?sandlot_token=%s HTTP/1.1\r\nHost: %s\r\n\r\n",
				 token, host);
	out = exchange_as_nobody(pp, visit);
	assert_true(e2e_contains(out, "303 See Other"));
	assert_true(e2e_contains(out, "\r\nLocation: /index.html\r\n"));
	char *cookie = e2e_printf("Set-Cookie: sandlot_token=%s; Path=/; HttpOnly", token);
	assert_true(e2e_contains(out, cookie));
	free(cookie);
	free(out);
	free(visit);
	char *with_cookie = e2e_printf("GET /index.html HTTP/1.1\r\nHost: %s\r\n"
				       "Cookie: a=b; sandlot_token=%s\r\n\r\n",
				       host, token);
	out = exchange_as_nobody(pp, with_cookie);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	free(with_cookie);
	/* Made public: nobody gets through both without a token; private again: not. */
	patch_public(id, 8080, true);
	out = exchange_as_nobody(hp, get);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	out = exchange_as_nobody(pp, plain);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	patch_public(id, 8080, false);
	out = exchange_as_nobody(hp, get);
	assert_string_equal(out, "");
	free(out);
	/* Bad shapes name the field. */
	char *sp = e2e_printf("/v1/sandboxes/%s", id);
	expect_call("PATCH", sp, "{\"ports\":{\"0\":{\"public\":true}}}", 400, "INVALID_ARGUMENT",
		    "ports.0");
	expect_call("PATCH", sp, "{\"ports\":{\"80\":{\"public\":1}}}", 400, "INVALID_ARGUMENT",
		    "ports.80.public");
	expect_call("PATCH", sp, "{\"ports\":[80]}", 400, "INVALID_ARGUMENT", "ports");
	free(sp);
	expect_call("POST", "/v1/sandboxes", "{\"ports\":{\"http\":{\"public\":true}}}", 400,
		    "INVALID_ARGUMENT", "ports.http");
	/* At create: public ports are in the record and the sandbox; "*" is every port. */
	e2e_resp r = {0};
	e2e_http(&r, "POST", "/v1/sandboxes",
	     "{\"image\":\"busybox\",\"ports\":{\"*\":{\"public\":true},\"81\":{\"public\":false}}}");
	expect(&r, 201, NULL, NULL);
	char *id3 = strdup(jstr(r.json, "id"));
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(jget(r.json, "ports"), "*");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(all, "public")));
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "ports")), 1);
	e2e_resp_free(&r);
	char *pp3 = e2e_printf("/v1/sandboxes/%s/ports/5000", id3);
	e2e_http(&r, "GET", pp3, NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "public")));
	e2e_resp_free(&r);
	free(pp3);
	sandbox_del(id3);
	/* A daemon started with --allow-uid 65534 lets nobody in without a token. */
	e2e_daemon d2;
	char *sock2 = e2e_printf("%s/allow-uid.sock", e2e_root());
	const char *extra[] = {"--allow-uid", "65534", NULL};
	e2e_daemon_start(&d2, sock2, false, extra);
	int hp2, pp2;
	char token2[80];
	port_endpoints(&d2, id, 8080, &hp2, &pp2, token2);
	assert_string_equal(token2, token); /* the sandbox's, not the daemon's */
	out = exchange_as_nobody(hp2, get);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	char *plain2 = e2e_printf("GET /index.html HTTP/1.0\r\nHost: 8080-%s.localhost:%d\r\n\r\n",
				  id, pp2);
	out = exchange_as_nobody(pp2, plain2);
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	free(plain2);
	e2e_daemon_stop(&d2);
	free(sock2);
	free(unknown);
	free(wrong);
	free(with_tok);
	free(plain);
	free(host);
	sandbox_del(id);
}

/* ---- sandboxes --------------------------------------------------------------------------- */

static int count_dir(const char *dir)
{
	char *cmd = e2e_printf("ls -A %s 2>/dev/null | wc -l", dir);
	FILE *f = popen(cmd, "r");
	int n = -1;
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	free(cmd);
	return n;
}

/* ---- answers found from the head alone ----------------------------------------------- */

static int tcp_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void send_all(int fd, const char *what, const char *data, size_t len)
{
	ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
	if (n != (ssize_t)len)
		fail_msg("sending %s: %zd of %zu bytes (%s)", what, n, len, strerror(errno));
}

/* One HTTP/1.1 response from FD, head and Content-Length body (5 s at most). */
static char *read_response(int fd)
{
	size_t cap = 65536, len = 0;
	char *buf = calloc(1, cap + 1);
	struct pollfd p = {fd, POLLIN, 0};
	for (;;) {
		char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strcasestr(buf, "\r\nContent-Length:");
		if (end && cl && cl < end &&
		    len >= (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10))
			break;
		if (len == cap || poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += n;
	}
	return buf;
}

/* An error the daemon knows from the head alone (no route, no key, wrong method) is
 * still answered after the body the client goes on sending, on a connection that
 * stays open: replying first made libmicrohttpd close it, and a client writing its
 * body got EPIPE or a reset instead of the error. */
static void test_early_answers_read_the_body(void **state)
{
	char bearer[128];
	snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s\r\n", KEY);
	const struct {
		const char *auth, *path, *status, *code;
	} cases[] = {
	    {bearer, "/v1/no-such-route", "HTTP/1.1 404 ", "NOT_FOUND"},
	    {"", "/v1/sandboxes", "HTTP/1.1 401 ", "UNAUTHENTICATED"},
	    {bearer, "/v1/health", "HTTP/1.1 405 ", "METHOD_NOT_ALLOWED"},
	};
	const char *body = "{\"image\":\"busybox\",\"labels\":{\"a\":\"b\"}}";
	size_t half = strlen(body) / 2;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = tcp_to(D.port);
		char *head = e2e_printf("POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: "
					"application/json\r\nContent-Length: %zu\r\n\r\n",
					cases[i].path, cases[i].auth, strlen(body));
		send_all(fd, "the head", head, strlen(head));
		usleep(150000);
		send_all(fd, "the body's first half", body, half);
		usleep(150000);
		send_all(fd, "the body's second half", body + half, strlen(body) - half);
		char *out = read_response(fd);
		if (strncmp(out, cases[i].status, strlen(cases[i].status)) ||
		    !strstr(out, cases[i].code))
			fail_msg("POST %s: want %s%s, got: %s", cases[i].path, cases[i].status,
				 cases[i].code, out);
		free(out);
		/* The body was read whole: the next request on the connection is answered. */
		char *next = e2e_printf("GET /v1/health HTTP/1.1\r\nHost: x\r\n%s\r\n", bearer);
		send_all(fd, "a second request", next, strlen(next));
		out = read_response(fd);
		if (strncmp(out, "HTTP/1.1 200 ", 13))
			fail_msg("GET /v1/health after POST %s: %s", cases[i].path, out);
		free(out), free(next), free(head);
		close(fd);
	}
}

static void test_sandbox_crud(void **state)
{
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes",
	     "{\"image\":\"busybox\",\"name\":\"api-crud\",\"resources\":{\"cpu\":\"500m\","
	     "\"memory\":\"128Mi\",\"disk\":\"512Mi\",\"pids\":64},\"env\":{\"GREETING\":\"hi\"},"
	     "\"labels\":{\"team\":\"a\",\"tier\":\"x\"},\"user\":\"nobody\","
	     "\"workingDirectory\":\"/tmp\",\"timeout\":{\"execution\":\"1500ms\"}}");
	expect(&r, 201, NULL, NULL);
	char *id = strdup(jstr(r.json, "id"));
	assert_int_equal(strncmp(id, "sbx_", 4), 0);
	assert_int_equal(strlen(id), 24);
	assert_string_equal(jstr(r.json, "name"), "api-crud");
	const cJSON *res = jget(r.json, "resources");
	assert_string_equal(jstr(res, "cpu"), "500m");
	assert_string_equal(jstr(res, "memory"), "128Mi");
	assert_string_equal(jstr(res, "disk"), "512Mi");
	assert_int_equal(jnum(res, "pids"), 64);
	assert_string_equal(jstr(jget(r.json, "env"), "GREETING"), "hi");
	assert_string_equal(jstr(r.json, "user"), "nobody");
	assert_string_equal(jstr(r.json, "workingDirectory"), "/tmp");
	assert_int_equal(jnum(jget(r.json, "timeout"), "execution"), 1500);
	e2e_resp_free(&r);

	/* What the sandbox's commands see. */
	char *out = sh_ok(id, "echo $GREETING; pwd; id -u");
	assert_string_equal(out, "hi\n/tmp\n65534\n");
	free(out);
	/* Files written through the API belong to the sandbox's user. */
	char *fp = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/owned.txt", id);
	e2e_req put = {.method = "PUT", .path = fp, .body = "mine", .len = 4};
	e2e_resp pr;
	e2e_http_q(&pr, &put);
	expect(&pr, 204, NULL, NULL);
	e2e_resp_free(&pr);
	free(fp);
	out = sh_ok(id, "stat -c '%U %a' /tmp/owned.txt; cat /tmp/owned.txt");
	assert_string_equal(out, "nobody 644\nmine");
	free(out);
	/* The sandbox's default execution timeout applies. */
	cJSON *e = run_wait(id, "{\"command\":[\"sleep\",\"30\"]}");
	assert_string_equal(jstr(e, "status"), "timeout");
	cJSON_Delete(e);

	/* GET: usage from the cgroup. */
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *u = jget(r.json, "usage");
	assert_non_null(u);
	assert_true(jnum(u, "pids") >= 1);
	assert_true(jnum(u, "memoryBytes") > 0);
	assert_true(jnum(u, "cpuSeconds") > 0);
	assert_int_equal(jnum(r.json, "executions"), 3);
	e2e_resp_free(&r);
	/* By name too. */
	e2e_http(&r, "GET", "/v1/sandboxes/api-crud", NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "id"), id);
	e2e_resp_free(&r);

	/* List: filters, paging, total. */
	char *id2 = sandbox_new("{\"image\":\"busybox\",\"labels\":{\"team\":\"b\"}}");
	char *id3 =
	    sandbox_new("{\"image\":\"busybox\",\"labels\":{\"team\":\"a\",\"tier\":\"y\"}}");
	e2e_http(&r, "GET", "/v1/sandboxes?label=team%3Da", NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "total"), 2);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/sandboxes?label=team%3Da&label=tier%3Dy", NULL);
	assert_int_equal(jnum(r.json, "total"), 1);
	assert_string_equal(jstr(cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0), "id"), id3);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/sandboxes?status=running&limit=2&offset=1", NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "total"), 3);
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "sandboxes")), 2);
	assert_string_equal(jstr(cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0), "id"), id2);
	e2e_resp_free(&r);
	expect_call("GET", "/v1/sandboxes?status=sleeping", NULL, 400, "INVALID_ARGUMENT",
		    "sleeping");
	expect_call("GET", "/v1/sandboxes?label=novalue", NULL, 400, "INVALID_ARGUMENT", "label");
	expect_call("GET", "/v1/sandboxes?limit=-1", NULL, 400, "INVALID_ARGUMENT", "limit");

	/* PATCH labels replaces them. */
	e2e_http(&r, "PATCH", p, "{\"labels\":{\"team\":\"c\"}}");
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(jget(r.json, "labels"), "team"), "c");
	assert_null(jget(jget(r.json, "labels"), "tier"));
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/sandboxes?label=team%3Dc", NULL);
	assert_int_equal(jnum(r.json, "total"), 1);
	e2e_resp_free(&r);

	/* DELETE leaves a tombstone that only ?status=terminated lists. */
	char *keep = strdup(id2);
	sandbox_del(id2);
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	assert_int_equal(jnum(r.json, "total"), 2);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/sandboxes?status=terminated&label=team%3Db", NULL);
	assert_int_equal(jnum(r.json, "total"), 1);
	assert_string_equal(jstr(cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0), "id"), keep);
	e2e_resp_free(&r);
	free(keep);
	free(p);
	sandbox_del(id);
	sandbox_del(id3);
}

/* A create that fails, before or midway, leaves no record, claim or host resource (the
 * leak check covers mounts, cgroups, processes, loop devices). */
static void test_create_failure_leaves_nothing(void **state)
{
	char *sbdir = e2e_printf("%s/sandboxes", getenv("SANDLOT_STATE_DIR"));
	char *slots = e2e_printf("%s/slots", getenv("SANDLOT_STATE_DIR"));
	char *names = e2e_printf("%s/names", getenv("SANDLOT_STATE_DIR"));
	int n0 = count_dir(sbdir), s0 = count_dir(slots), m0 = count_dir(names);
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"no-such-image\"}", 404, "NOT_FOUND",
		    "no-such-image");
	/* Midway: the writable layer cannot hold the image's first writes. */
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes",
	     "{\"image\":\"busybox\",\"name\":\"doomed\",\"resources\":{\"disk\":\"1Ki\"}}");
	assert_true(r.status >= 400);
	e2e_resp_free(&r);
	/* A name taken already. */
	char *id = sandbox_new("{\"image\":\"busybox\",\"name\":\"taken\"}");
	int n1 = count_dir(sbdir);
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"name\":\"taken\"}", 409,
		    "CONFLICT", "taken");
	assert_int_equal(count_dir(sbdir), n1);
	sandbox_del(id);
	/* The one good sandbox left its tombstone; the failures left nothing. Its uid
	 * slot and name are freed by the releaser, just after the DELETE's answer. */
	for (int i = 0; i < 250 && (count_dir(slots) != s0 || count_dir(names) != m0); i++)
		usleep(20000);
	assert_int_equal(count_dir(sbdir), n0 + 1);
	assert_int_equal(count_dir(slots), s0);
	assert_int_equal(count_dir(names), m0);
	e2e_http(&r, "GET", "/v1/sandboxes?status=creating,failed", NULL);
	assert_int_equal(jnum(r.json, "total"), 0);
	e2e_resp_free(&r);
	free(sbdir);
	free(slots);
	free(names);
}

/* The host pid of sandbox ID's init, from its record. */
static pid_t record_init_pid(const char *id)
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
static void assert_file_comes_to_hold(const char *path, const char *needle)
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
static void assert_reaped(pid_t pid)
{
	bool reaped = false;
	for (int i = 0; i < 100 && !reaped; i++) {
		reaped = kill(pid, 0) < 0 && errno == ESRCH;
		if (!reaped)
			usleep(20000);
	}
	assert_true(reaped);
}

/* An init that dies is reaped by the daemon (its parent), so the sandbox reads failed
 * at once, the zombie goes, and calls on it are refused; deleting it still frees
 * everything. */
static void test_dead_init_reads_failed(void **state)
{
	char *id = sandbox_new(NULL);
	pid_t pid = record_init_pid(id);
	assert_int_equal(kill(pid, SIGKILL), 0);
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	bool failed = false;
	for (int i = 0; i < 100 && !failed; i++) {
		e2e_resp r;
		e2e_http(&r, "GET", p, NULL);
		failed =
		    r.json && jstr(r.json, "status") && !strcmp(jstr(r.json, "status"), "failed");
		e2e_resp_free(&r);
		if (!failed)
			usleep(20000);
	}
	assert_true(failed);
	assert_reaped(pid);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	expect_call("POST", p, "{\"command\":\"true\"}", 409, "CONFLICT", NULL);
	free(p);
	sandbox_del(id);
}

/* A DELETE kills init on a CPU other than the one the daemon answers on, so that its
 * teardown does not preempt the answer (runtime/sandbox.c, kill_elsewhere). Seen on an
 * init frozen behind the runtime's back, which holds the SIGKILL until it is thawed: its
 * affinity is one CPU short of what it was. */
static void test_deleted_init_dies_elsewhere(void **state)
{
	char *id = sandbox_new(NULL);
	pid_t pid = record_init_pid(id);
	cpu_set_t before, after;
	assert_int_equal(sched_getaffinity(pid, sizeof(before), &before), 0);
	/* v1 only (a v2 freezer lets SIGKILL through), and a host with CPUs to choose from */
	if (CPU_COUNT(&before) < 2) {
		sandbox_del(id);
		skip();
	}
	char *fz = e2e_printf("/sys/fs/cgroup/freezer/sandlot/%s/freezer.state", id);
	if (access(fz, F_OK) != 0) {
		free(fz);
		sandbox_del(id);
		skip();
	}
	FILE *f = fopen(fz, "w");
	assert_non_null(f);
	fputs("FROZEN", f);
	assert_int_equal(fclose(f), 0);
	assert_file_comes_to_hold(fz, "FROZEN");
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_resp r;
	e2e_http(&r, "DELETE", p, NULL);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	int there = kill(pid, 0); /* still there, frozen with the SIGKILL pending */
	int got = sched_getaffinity(pid, sizeof(after), &after);
	f = fopen(fz, "w"); /* thawed before any assert, so that a failure leaves nothing */
	if (f) {
		fputs("THAWED", f);
		fclose(f);
	}
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		struct pollfd pf = {pfd, POLLIN, 0};
		assert_int_equal(poll(&pf, 1, 5000), 1);
		close(pfd);
	}
	assert_int_equal(there, 0);
	assert_int_equal(got, 0);
	assert_int_equal(CPU_COUNT(&after), CPU_COUNT(&before) - 1);
	free(fz);
	free(p);
	free(id);
}

/* The inode of a network namespace link ("net:[N]"), 0 if LINK is not one. */
static unsigned long netns_ino(const char *link)
{
	char buf[64];
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	unsigned long ino = 0;
	return sscanf(buf, "net:[%lu]", &ino) == 1 ? ino : 0;
}

/* The network namespaces the daemon holds open (its spares), up to MAX. Not the host's:
 * a spare being made holds that one open for a moment too (launch_new_netns). */
static int daemon_netns_fds(unsigned long *out, int max)
{
	unsigned long host = netns_ino("/proc/self/ns/net");
	char *dir = e2e_printf("/proc/%d/fd", (int)D.pid);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		char *l = e2e_printf("%s/%s", dir, de->d_name);
		unsigned long ino = netns_ino(l);
		if (ino && ino != host)
			out[n++] = ino;
		free(l);
	}
	closedir(d);
	free(dir);
	return n;
}

static unsigned long init_netns(const char *id)
{
	char *l = e2e_printf("/proc/%d/ns/net", (int)record_init_pid(id));
	unsigned long ino = netns_ino(l);
	free(l);
	assert_true(ino != 0);
	return ino;
}

/* Waits (2 s at most) until LIST shows the daemon's two spares, into HELD: exactly two
 * (a third may be on its way while one is being made). */
static void wait_held(int (*list)(unsigned long *, int), unsigned long held[8])
{
	int n = 0;
	for (int i = 0; i < 200 && n != 2; i++) {
		n = list(held, 8);
		if (n != 2)
			usleep(10000);
	}
	assert_int_equal(n, 2);
}

/* Waits (2 s at most) until LIST shows two spares again and TAKEN is not among them: what
 * a daemon does after a create took one (its syncer, 20 ms later). NOW gets the list. */
static void wait_replaced(int (*list)(unsigned long *, int), unsigned long taken,
			  unsigned long now[8])
{
	int m = 0;
	bool still = true;
	for (int i = 0; i < 200 && (m != 2 || still); i++) {
		m = list(now, 8);
		still = false;
		for (int k = 0; k < m; k++)
			still = still || now[k] == taken;
		if (m != 2 || still)
			usleep(10000);
	}
	assert_int_equal(m, 2);
	assert_false(still);
}

/* A create with the network off takes a network namespace the daemon made ahead (lo up,
 * nothing else) instead of cloning one, and the daemon makes another; no two sandboxes
 * share one, nor does any the host's (runtime/sandbox.c, netns_spare_take). Limits other
 * than the defaults, so that no spare init (which brings its own) is taken. */
#define OTHER_LIMITS "{\"image\":\"busybox\",\"resources\":{\"memory\":\"256Mi\"}}"
static void test_creates_take_spare_netns(void **state)
{
	unsigned long host = netns_ino("/proc/self/ns/net"), held[8], now[8];
	assert_true(host != 0);
	wait_held(daemon_netns_fds, held); /* NETNS_SPARES, made at the start and after each take */
	char *a = sandbox_new(OTHER_LIMITS);
	unsigned long na = init_netns(a);
	assert_true(na == held[0] || na == held[1]);
	/* Handed over, and replaced shortly after. */
	wait_replaced(daemon_netns_fds, na, now);
	char *b = sandbox_new(OTHER_LIMITS);
	unsigned long nb = init_netns(b);
	assert_true(nb == now[0] || nb == now[1]);
	assert_true(na != nb && na != host && nb != host);
	/* What the clone would have made: lo alone, up, and reachable on any port. */
	char *out = sh_ok(a, "ls /sys/class/net; cat /sys/class/net/lo/flags; "
			     "(nc -l -p 7 -e echo ok &) ; sleep 0.2; nc 127.0.0.1 7 </dev/null");
	assert_string_equal(out, "lo\n0x9\nok\n");
	free(out);
	sandbox_del(a);
	sandbox_del(b);
}

/* Inodes of the entries of DIR whose names start with PREFIX (and do not hold SKIP, when
 * given), up to MAX: a renamed directory keeps its own. */
static int prefixed_inodes(const char *dir, const char *prefix, const char *skip,
			   unsigned long *out, int max)
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

/* The daemon's spare cgroups in the v1 memory hierarchy, as inodes (a renamed cgroup keeps
 * its own); not those its spare inits are in (.spare-...-i<n>). */
static int spare_cgroups(unsigned long *out, int max)
{
	char *mine = e2e_printf(".spare-%d-", (int)D.pid);
	int n = prefixed_inodes("/sys/fs/cgroup/memory/sandlot", mine, "-i", out, max);
	free(mine);
	return n;
}

static unsigned long memcg_ino(const char *id)
{
	char *p = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s", id);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	free(p);
	return st.st_ino;
}

/* PID is in sandbox ID's cgroups, in every v1 hierarchy of them. */
static void assert_in_cgroups(pid_t pid, const char *id)
{
	char *f = e2e_printf("/proc/%d/cgroup", (int)pid);
	char *cg = e2e_read_file(f);
	free(f);
	assert_non_null(cg);
	static const char *const ctrls[] = {":cpu:", ":cpuacct:", ":memory:", ":pids:",
					    ":freezer:"};
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		char *want = e2e_printf("%s/sandlot/%s\n", ctrls[i], id);
		if (!strstr(cg, want))
			fail_msg("pid %d not in %s of %s:\n%s", (int)pid, ctrls[i], id, cg);
		free(want);
	}
	free(cg);
}

/* On cgroup v1 the daemon keeps two cgroups of the default limits made, and a create with
 * those limits renames one to its own (runtime/sandbox.c, cgroup_create_or_take); one with
 * other limits makes its own. They go when the daemon stops (the group's leak check). A
 * volume keeps the first create off the spare inits, which bring cgroups of their own. */
static void test_creates_take_spare_cgroups(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no rename, no spares */
	unsigned long held[8], now[8];
	wait_held(spare_cgroups, held);
	char *a = sandbox_new("{\"image\":\"busybox\",\"volumes\":[{\"name\":\"cgvol\","
			      "\"mountPath\":\"/vol\"}]}");
	unsigned long ia = memcg_ino(a);
	assert_true(ia == held[0] || ia == held[1]);
	char *f = e2e_printf("/sys/fs/cgroup/pids/sandlot/%s/pids.max", a);
	char *lim = e2e_read_file(f);
	assert_string_equal(lim, "512\n");
	free(lim);
	free(f);
	/* init is in every hierarchy of it */
	assert_in_cgroups(record_init_pid(a), a);
	/* replaced shortly after */
	wait_replaced(spare_cgroups, ia, now);
	char *b = sandbox_new("{\"image\":\"busybox\",\"resources\":{\"memory\":\"256Mi\"}}");
	unsigned long ib = memcg_ino(b);
	assert_true(ib != now[0] && ib != now[1] && ib != ia);
	f = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/memory.limit_in_bytes", b);
	lim = e2e_read_file(f);
	assert_string_equal(lim, "268435456\n");
	free(lim);
	free(f);
	sandbox_del(a);
	sandbox_del(b);
	expect_call("DELETE", "/v1/volumes/cgvol", NULL, 204, NULL, NULL);
}

/* The run dirs of the spare inits of daemon PID, as inodes (a take renames one to the
 * sandbox's run dir, which keeps it). */
static int spare_init_dirs_of(pid_t pid, unsigned long *out, int max)
{
	char *dir = e2e_printf("%s/sandboxes", getenv("SANDLOT_RUN_DIR"));
	char *mine = e2e_printf(".spare-%d-", (int)pid);
	int n = prefixed_inodes(dir, mine, NULL, out, max);
	free(mine);
	free(dir);
	return n;
}

static int spare_init_dirs(unsigned long *out, int max)
{
	return spare_init_dirs_of(D.pid, out, max);
}

static unsigned long run_dir_ino(const char *id)
{
	char *p = e2e_printf("%s/sandboxes/%s", getenv("SANDLOT_RUN_DIR"), id);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	free(p);
	return st.st_ino;
}

/* The daemon's spare inits: its children in a mount namespace of their own that are not
 * (yet) a sandbox's sandlot-init. */
static int spare_init_pids(pid_t *out, int max)
{
	char *self = e2e_printf("/proc/%d/ns/mnt", (int)D.pid);
	char dns[64] = "";
	ssize_t l = readlink(self, dns, sizeof(dns) - 1);
	free(self);
	assert_true(l > 0);
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		int pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		char *stat = e2e_printf("/proc/%d/stat", pid);
		char *text = e2e_read_file(stat);
		free(stat);
		int ppid = 0;
		char comm[64] = "";
		if (text && sscanf(text, "%*d (%63[^)]) %*c %d", comm, &ppid) == 2 && ppid == D.pid &&
		    strcmp(comm, "sandlot-init")) {
			char *ns = e2e_printf("/proc/%d/ns/mnt", pid), buf[64] = "";
			if (readlink(ns, buf, sizeof(buf) - 1) > 0 && strcmp(buf, dns))
				out[n++] = pid;
			free(ns);
		}
		free(text);
	}
	closedir(d);
	return n;
}

/* The probe's chroot escape (tests/probe) run by the root of sandbox ID: "same" when the
 * climb ended on the sandbox's own root, "moved" when it got out. */
static char *chroot_escape(const char *id)
{
	size_t len;
	char *bytes = e2e_probe_bytes(&len);
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/probe&mode=0755", id);
	e2e_req q = {.method = "PUT", .path = p, .body = bytes, .len = len};
	e2e_resp r;
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	free(bytes);
	char *out = sh_ok(id, "/tmp/probe --chroot-escape /tmp/esc");
	char *v = e2e_probe_field(out, "chroot_escape");
	assert_non_null(v);
	free(out);
	return v;
}

/* The control: in a plain chroot(2) on the host the same probe does get out. */
static void chroot_escape_control(void)
{
	char dir[] = "/tmp/sandlot-escape.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *copy = e2e_printf("%s/probe", dir);
	size_t len;
	char *bytes = e2e_probe_bytes(&len);
	FILE *f = fopen(copy, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(copy, 0755), 0);
	e2e_result r;
	char *argv[] = {"/usr/sbin/chroot", dir, "/probe", "--chroot-escape", "/esc", NULL};
	assert_int_equal(e2e_run(&r, NULL, 0, 30000, argv), 0);
	char *v = e2e_probe_field(r.out, "chroot_escape");
	assert_non_null(v);
	assert_string_equal(v, "moved");
	free(v);
	e2e_result_free(&r);
	char *esc = e2e_printf("%s/esc", dir);
	rmdir(esc);
	unlink(copy);
	rmdir(dir);
	free(esc);
	free(copy);
	free(bytes);
}

/* The system calls a spare's take makes (launch_take_calls), each tried by a sandbox's
 * root: all must fail. */
#define HELD_CALLS_DENIED                                                                          \
	"grep ^Seccomp_filters /proc/self/status; mount -t tmpfs x /mnt 2>&1 | grep -c denied; "   \
	"hostname x 2>&1 | grep -c 'not permitted'; unshare -U true 2>&1 | grep -c 'not "          \
	"permitted'; nsenter -t $$ -u true 2>&1 | grep -c 'not permitted'"
#define HELD_DENIED_OUT "1\n1\n1\n1\n"

/* On cgroup v1 the daemon keeps two sandbox inits made ahead (runtime/launch.c,
 * sl_launch_spare): in their namespaces and cgroups of the default limits, /proc, /sys and
 * /dev mounted in a staging root of their own run dir, the host's tree detached. A create of the
 * default limits with no network and no volumes renames one's run dir and cgroups to its own and
 * hands it the rest; what it becomes is the sandbox a launch from nothing makes (its devices and
 * ttys the sandbox's root's, the masks in place). A spare killed under the daemon costs nothing but
 * the wait for it: the create launches from nothing. */
static void test_creates_take_spare_init(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no rename, no spares */
	unsigned long held[8], now[8];
	wait_held(spare_init_dirs, held);
	/* A spare's dir is made just before its process: wait for both processes too. */
	pid_t spids[8];
	int n = 0;
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	char *a = sandbox_new(NULL);
	unsigned long ia = run_dir_ino(a);
	assert_true(ia == held[0] || ia == held[1]);
	pid_t ipid = record_init_pid(a);
	assert_true(ipid == spids[0] || ipid == spids[1]);
	assert_in_cgroups(ipid, a);
	char *f = e2e_printf("/proc/%d/status", (int)ipid);
	char *status = e2e_read_file(f);
	free(f);
	unsigned base = 0;
	assert_non_null(strstr(status, "\nUid:"));
	assert_int_equal(sscanf(strstr(status, "\nUid:"), "\nUid: %u", &base), 1);
	free(status);
	assert_true(base >= 65536);
	wait_replaced(spare_init_dirs, ia, now);

	char *out = sh_ok(a, "hostname; ls -ldn /dev /dev/null /dev/tty /dev/shm | "
			     "awk '{print $3\":\"$4}' | sort -u; ls /sys/firmware | wc -l; "
			     "echo x > /proc/sys/kernel/domainname 2>/dev/null || echo ro; "
			     "ls /sys/class/net; cat /proc/sys/net/ipv4/ip_unprivileged_port_start; "
			     "grep -o ' devpts devpts .*gid=[0-9]*' /proc/self/mountinfo | "
			     "sed 's/.*gid=//'; echo s > /dev/shm/x && cat /dev/shm/x; "
			     "cat /proc/1/comm");
	char *want = e2e_printf("%s\n0:0\n0\nro\nlo\n0\n%u\ns\nsandlot-init\n", a, base + 5);
	assert_string_equal(out, want);
	free(want);
	free(out);
	/* Its profile came in two filters (the whole one installed while it was made, a
	 * small one at the take: seccomp_bpf_get_split), and the calls the take still made
	 * are denied again. */
	out = sh_ok(a, HELD_CALLS_DENIED);
	assert_string_equal(out, "Seccomp_filters:\t2\n" HELD_DENIED_OUT);
	free(out);
	/* Its root was moved onto the spare's staging root, not pivoted into: a chroot escape
	 * by its root still ends on it (the control shows the probe's escape works). */
	chroot_escape_control();
	char *v = chroot_escape(a);
	assert_string_equal(v, "same");
	free(v);

	/* Both spares killed under the daemon: the next create drops them (reaped, not handed
	 * the sandbox) and launches from nothing; the one after may take a spare made since,
	 * and spares come back. */
	n = spare_init_pids(spids, 8);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(kill(spids[i], SIGKILL), 0);
	for (int i = 0; i < n; i++) { /* dead, not yet reaped: the daemon is their parent */
		char *sf = e2e_printf("/proc/%d/stat", (int)spids[i]);
		assert_file_comes_to_hold(sf, ") Z ");
		free(sf);
	}
	char *b = sandbox_new(NULL);
	for (int i = 0; i < n; i++)
		assert_reaped(spids[i]);
	char *c = sandbox_new(NULL);
	for (int i = 0; i < 2; i++) {
		char *id = i ? c : b;
		out = sh_ok(id, "hostname; ls /sys/class/net");
		want = e2e_printf("%s\nlo\n", id);
		assert_string_equal(out, want);
		free(want);
		free(out);
	}
	out = sh_ok(b, HELD_CALLS_DENIED); /* launched from nothing: one filter, all of it */
	assert_string_equal(out, "Seccomp_filters:\t1\n" HELD_DENIED_OUT);
	free(out);
	v = chroot_escape(b); /* launched from nothing: pivot_root */
	assert_string_equal(v, "same");
	free(v);
	pid_t ib = record_init_pid(b), ic = record_init_pid(c);
	assert_true(ib != spids[0] && ib != spids[1] && ic != spids[0] && ic != spids[1]);
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	sandbox_del(a);
	sandbox_del(b);
	sandbox_del(c);
}

/* ---- executions -------------------------------------------------------------------------- */

/* executeCode drops its own execution's record, and only that one: a snippet that ended
 * within the first wait named the whole execs dir, every execution of the sandbox. */
static void test_code_keeps_other_executions(void **state)
{
	char *id = sandbox_new(NULL);
	char *bg = exec_start_id(id, "{\"command\":[\"sh\",\"-c\",\"echo bg; sleep 30\"]}");
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/code", id);
	e2e_http(&r, "POST", p, "{\"code\":\"echo hi\",\"language\":\"bash\"}");
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "success")));
	e2e_resp_free(&r);
	free(p);
	cJSON *g = exec_get_wait(id, bg, NULL);
	assert_string_equal(jstr(g, "status"), "running");
	cJSON_Delete(g);
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(strstr(r.body, bg) != NULL);
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "executions")), 1); /* the snippet's: gone */
	e2e_resp_free(&r);
	free(p);
	free(bg);
	sandbox_del(id);
}

/* A command's output lands in the sandbox's own log space (a tmpfs of a quarter of its
 * memory, at least 16 MiB): past it the command gets ENOSPC, the sandbox is not left out
 * of memory, and the next start makes room by removing the oldest finished execution. */
static void test_output_bounded_by_log_space(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\",\"resources\":{\"memory\":\"64Mi\"}}");
	cJSON *big = run_wait(id, "{\"command\":[\"head\",\"-c\",\"40000000\",\"/dev/zero\"]}");
	assert_int_equal((int)jnum(big, "exitCode"), 1); /* head: write error */
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(big, "oomKilled")));
	char *execs = e2e_printf("%s/sandboxes/%s/execs", getenv("SANDLOT_RUN_DIR"), id);
	struct statfs f;
	assert_int_equal(statfs(execs, &f), 0);
	assert_int_equal((long long)f.f_blocks * f.f_bsize, 16LL << 20);
	char *usage = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/memory.usage_in_bytes", id);
	char *u = e2e_read_file(usage);
	assert_non_null(u);
	assert_true(strtoull(u, NULL, 10) < (40ULL << 20));
	/* Still able to run a command, which took the big one's place. */
	cJSON *hi = run_wait(id, "{\"command\":[\"echo\",\"hi\"]}");
	assert_int_equal((int)jnum(hi, "exitCode"), 0);
	assert_string_equal(jstr(hi, "stdout"), "hi\n");
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s", id, jstr(big, "id"));
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 404, NULL, NULL);
	e2e_resp_free(&r);
	assert_int_equal(statfs(execs, &f), 0);
	assert_true(f.f_bavail > f.f_blocks / 2);
	free(p);
	free(u);
	free(usage);
	free(execs);
	cJSON_Delete(hi);
	cJSON_Delete(big);
	sandbox_del(id);
}

static void test_executions(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\",\"env\":{\"A\":\"1\"}}");
	cJSON *e =
	    run_wait(id, "{\"command\":[\"sh\",\"-c\",\"echo $A $B; pwd; id -u; echo oops >&2; "
			 "exit 3\"],\"env\":{\"B\":\"2\"},\"cwd\":\"/tmp\",\"user\":\"nobody\"}");
	assert_string_equal(jstr(e, "stdout"), "1 2\n/tmp\n65534\n");
	assert_string_equal(jstr(e, "stderr"), "oops\n");
	assert_string_equal(jstr(e, "status"), "failed");
	assert_int_equal(jnum(e, "exitCode"), 3);
	assert_true(cJSON_IsFalse(jget(e, "stdoutTruncated")));
	assert_true(jnum(e, "durationMs") >= 0);
	char *eid = strdup(jstr(e, "id"));
	cJSON_Delete(e);

	e = run_wait(id, "{\"command\":\"true\"}");
	assert_string_equal(jstr(e, "status"), "completed");
	assert_int_equal(jnum(e, "exitCode"), 0);
	cJSON_Delete(e);
	e = run_wait(id, "{\"command\":[\"no-such-command\"]}");
	assert_string_equal(jstr(e, "status"), "failed");
	assert_int_equal(jnum(e, "exitCode"), 127);
	cJSON_Delete(e);
	double t0 = now_s();
	e = run_wait(id, "{\"command\":[\"sleep\",\"30\"],\"timeout\":\"300ms\"}");
	assert_string_equal(jstr(e, "status"), "timeout");
	assert_true(now_s() - t0 < 10);
	cJSON_Delete(e);
	e = run_wait(id, "{\"command\":[\"sleep\",\"30\"],\"timeout\":200}");
	assert_string_equal(jstr(e, "status"), "timeout");
	cJSON_Delete(e);
	/* Invalid UTF-8 becomes U+FFFD inline; the raw stream keeps the bytes. */
	e = run_wait(id, "{\"command\":\"printf 'a\\\\377b'\"}");
	assert_string_equal(jstr(e, "stdout"), "a\xef\xbf\xbd"
					       "b");
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, jstr(e, "id"));
	long st;
	char *raw = get_raw(p, &st);
	assert_int_equal(st, 200);
	assert_memory_equal(raw, "a\377b", 3);
	free(raw);
	free(p);
	cJSON_Delete(e);

	/* Over 1 MiB: inline output is cut and says so; the stream has it all. */
	e = run_wait(id, "{\"command\":\"head -c 1500000 /dev/zero | tr '\\\\0' a; echo e >&2\"}");
	assert_true(cJSON_IsTrue(jget(e, "stdoutTruncated")));
	assert_true(cJSON_IsFalse(jget(e, "stderrTruncated")));
	assert_int_equal(strlen(jstr(e, "stdout")), 1 << 20);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, jstr(e, "id"));
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(r.len, 1500000);
	assert_non_null(strstr(r.ctype, "application/octet-stream"));
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/stderr", id, jstr(e, "id"));
	raw = get_raw(p, &st);
	assert_string_equal(raw, "e\n");
	free(raw);
	free(p);
	cJSON_Delete(e);

	/* Without ?wait: the running record; GET ?wait= then answers at the end. */
	char *e2 = exec_start_id(id, "{\"command\":\"sleep 0.5; echo late\"}");
	cJSON *g = exec_get_wait(id, e2, NULL);
	assert_string_equal(jstr(g, "status"), "running");
	assert_true(cJSON_IsNull(jget(g, "exitCode")));
	assert_null(jget(g, "stdout"));
	cJSON_Delete(g);
	g = exec_get_wait(id, e2, "30s");
	assert_string_equal(jstr(g, "status"), "completed");
	assert_string_equal(jstr(g, "stdout"), "late\n");
	cJSON_Delete(g);
	/* A wait that runs out answers with the running record. */
	char *e3 = exec_start_id(id, "{\"command\":[\"sleep\",\"30\"]}");
	t0 = now_s();
	g = exec_get_wait(id, e3, "300ms");
	assert_string_equal(jstr(g, "status"), "running");
	assert_true(now_s() - t0 >= 0.25 && now_s() - t0 < 5);
	cJSON_Delete(g);

	/* The list has them all, oldest first. */
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *list = jget(r.json, "executions");
	assert_int_equal(cJSON_GetArraySize(list), 9);
	assert_string_equal(jstr(cJSON_GetArrayItem(list, 0), "id"), eid);
	e2e_resp_free(&r);
	free(p);
	free(eid);
	free(e2);
	free(e3);
	sandbox_del(id);
}

static void test_stdin_signal_processes(void **state)
{
	char *id = sandbox_new(NULL);
	e2e_resp r;
	/* stdin: bodies appended in order, ?eof=1 closes. */
	char *eid =
	    exec_start_id(id, "{\"command\":[\"sh\",\"-c\",\"cat; echo done\"],\"stdin\":true}");
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdin", id, eid);
	expect_call("POST", p, "abc", 204, NULL, NULL);
	char *pe = e2e_printf("%s?eof=1", p);
	expect_call("POST", pe, "def\n", 204, NULL, NULL);
	free(pe);
	cJSON *g = exec_get_wait(id, eid, "30s");
	assert_string_equal(jstr(g, "stdout"), "abcdef\ndone\n");
	assert_int_equal(jnum(g, "exitCode"), 0);
	cJSON_Delete(g);
	/* stdin of an execution that did not ask for it. */
	char *e2 = exec_start_id(id, "{\"command\":[\"sleep\",\"30\"]}");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdin", id, e2);
	expect_call("POST", p, "x", 409, "CONFLICT", NULL);
	free(p);

	/* Signals: by name, to the process group; TERM marks it cancelled. */
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/signal", id, e2);
	expect_call("POST", p, "{\"signal\":\"SIGBOGUS\"}", 400, "INVALID_ARGUMENT", "SIGBOGUS");
	expect_call("POST", p, "{\"signal\":5}", 400, "INVALID_ARGUMENT", "signal");
	expect_call("POST", p, "{\"signal\":\"SIGTERM\"}", 204, NULL, NULL);
	g = exec_get_wait(id, e2, "10s");
	assert_string_equal(jstr(g, "status"), "cancelled");
	assert_string_equal(jstr(g, "signal"), "SIGTERM");
	assert_int_equal(jnum(g, "exitCode"), 143);
	cJSON_Delete(g);
	free(p);

	/* Processes: a background process outlives its command, and can be killed. */
	free(sh_ok(id, "sleep 77 >/dev/null 2>&1 & echo started"));
	p = e2e_printf("/v1/sandboxes/%s/processes", id);
	int pid = 0;
	/* The shell may end before its child has exec'd sleep: look again for a while. */
	for (int i = 0; i < 100 && !pid; i++) {
		if (i)
			usleep(20000);
		e2e_http(&r, "GET", p, NULL);
		expect(&r, 200, NULL, NULL);
		const cJSON *it;
		cJSON_ArrayForEach(it, jget(r.json, "processes"))
		{
			assert_true(jnum(it, "pid") > 1);
			if (!strcmp(jstr(it, "cmd"), "sleep 77"))
				pid = jnum(it, "pid");
		}
		e2e_resp_free(&r);
	}
	assert_true(pid > 1);
	char *k = e2e_printf("/v1/sandboxes/%s/processes/%d?signal=KILL", id, pid);
	expect_call("DELETE", k, NULL, 204, NULL, NULL);
	free(k);
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		e2e_http(&r, "GET", p, NULL);
		gone = !strstr(r.body, "sleep 77");
		e2e_resp_free(&r);
		if (!gone)
			usleep(20000);
	}
	assert_true(gone);
	k = e2e_printf("/v1/sandboxes/%s/processes/1", id);
	expect_call("DELETE", k, NULL, 400, "INVALID_ARGUMENT", NULL);
	free(k);
	k = e2e_printf("/v1/sandboxes/%s/processes/99999", id);
	expect_call("DELETE", k, NULL, 404, "NOT_FOUND", NULL);
	free(k);
	free(p);
	free(eid);
	free(e2);
	sandbox_del(id);
}

/* ---- concurrency ------------------------------------------------------------------------- */

typedef struct job {
	const char *method;
	char path[256];
	const char *body;
	long status;
	char estatus[32];
	double secs;
	size_t bytes;
	char *data;
} job;

static void *job_main(void *p)
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

static void test_concurrent_sleepers(void **state)
{
	enum { N = 32 };
	char *id = sandbox_new(NULL);
	job jobs[N];
	pthread_t th[N];
	double t0 = now_s();
	for (int i = 0; i < N; i++) {
		jobs[i] = (job){.method = "POST", .body = "{\"command\":[\"sleep\",\"1\"]}"};
		snprintf(jobs[i].path, sizeof(jobs[i].path), "/v1/sandboxes/%s/executions?wait=30s",
			 id);
		pthread_create(&th[i], NULL, job_main, &jobs[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	double total = now_s() - t0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(jobs[i].status, 201);
		assert_string_equal(jobs[i].estatus, "completed");
		free(jobs[i].data);
	}
	print_message("32 clients x `sleep 1` with ?wait: %.2f s\n", total);
	assert_true(total < 5.0);
	sandbox_del(id);
}

/* One client's back-to-back one-shots; the first that fails stops it. */
typedef struct runner {
	int n;
	long bad;
	char why[256];
} runner;

static void *runner_main(void *p)
{
	runner *w = p;
	for (int i = 0; i < w->n && !w->bad; i++) {
		e2e_resp r;
		e2e_req q = {.method = "POST",
			 .path = "/v1/run",
			 .body = "{\"image\":\"busybox\",\"command\":[\"true\"]}"};
		q.len = strlen(q.body);
		long st = e2e_http_q(&r, &q);
		if (st != 200 || !r.json || jnum(r.json, "exitCode") != 0) {
			w->bad = st;
			snprintf(w->why, sizeof(w->why), "%.*s", (int)(r.len < 200 ? r.len : 200),
				 r.body ? r.body : "");
		}
		e2e_resp_free(&r);
	}
	return NULL;
}

/* Eight clients creating at once, while the daemon's syncer makes the spares they take
 * (network namespaces, cgroups, layers, record dirs): every one succeeds. A take racing
 * the make of a spare cgroup once left a half-renamed cgroup behind and the create
 * failed with "already exists" (runtime/sandbox.c, cgroup_create_or_take). */
static void test_parallel_creates_take_spares(void **state)
{
	enum { N = 8 };
	runner w[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		w[i] = (runner){.n = 40};
		pthread_create(&th[i], NULL, runner_main, &w[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++)
		if (w[i].bad)
			fail_msg("client %d: status %ld: %s", i, w[i].bad, w[i].why);
}

/* Stop the tracee PID at its next system call's exit that returns a message from
 * recvmsg(2): 1 when it is stopped there, 0 at another stop (resumed), -1 when it is
 * gone. ENTRY keeps the number of the call it entered last. */
static int at_recvmsg_exit(pid_t pid, int st, long *entry)
{
	if (!WIFSTOPPED(st))
		return -1;
	struct __ptrace_syscall_info si;
	if (WSTOPSIG(st) == (SIGTRAP | 0x80) &&
	    ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) > 0) {
		if (si.op == PTRACE_SYSCALL_INFO_ENTRY)
			*entry = (long)si.entry.nr;
		else if (si.op == PTRACE_SYSCALL_INFO_EXIT && *entry == __NR_recvmsg &&
			 !si.exit.is_error && si.exit.rval >= 1)
			return 1;
	}
	/* A syscall stop or the seize's interrupt: on to the next; a signal: delivered. */
	int sig =
	    WSTOPSIG(st) == (SIGTRAP | 0x80) || st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
	ptrace(PTRACE_SYSCALL, pid, 0, sig);
	return 0;
}

/* A spare killed after it took in what the take handed it closes its end of the socket
 * as an exec of init does. The create must see that no init runs, drop it (reaped, not
 * left a zombie) and launch from nothing: it once recorded the dead pid as the sandbox's
 * init (runtime/launch.c, spare_go), and test_creates_take_spare_init, which kills both
 * spares just before its creates, failed on that now and then. Killed before it reads
 * them, it resets the socket instead, which the take always caught. Here both spares are
 * traced, a request to PATH with BODY is sent, and the spare it takes is killed as its
 * recvmsg returns. Returns the dead spare's pid; the answer is in J. */
static pid_t kill_spare_during_take(job *j, const char *path, const char *body)
{
	pid_t spids[8];
	int n = 0;
	for (int i = 0; i < 200 && (n = spare_init_pids(spids, 8)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	long entry[2] = {-1, -1};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ptrace(PTRACE_SEIZE, spids[i], 0, PTRACE_O_TRACESYSGOOD), 0);
		assert_int_equal(ptrace(PTRACE_INTERRUPT, spids[i], 0, 0), 0);
	}
	*j = (job){.method = "POST", .body = body};
	snprintf(j->path, sizeof(j->path), "%s", path);
	pthread_t th;
	pthread_create(&th, NULL, job_main, j);
	pid_t taken = 0;
	for (int i = 0; i < 10000 && !taken; i++) {
		bool stopped = false;
		for (int k = 0; k < 2 && !taken; k++) {
			int st;
			if (waitpid(spids[k], &st, WNOHANG | __WALL) != spids[k])
				continue;
			stopped = true;
			if (at_recvmsg_exit(spids[k], st, &entry[k]) == 1)
				taken = spids[k];
		}
		if (!stopped)
			usleep(1000);
	}
	int st = 0;
	if (taken) {
		kill(taken, SIGKILL);
		while (waitpid(taken, &st, __WALL) == taken && !WIFSIGNALED(st))
			; /* its exit stop, then its death: the daemon reaps it after that */
	}
	for (int k = 0; k < 2; k++)
		if (spids[k] != taken) {
			ptrace(PTRACE_INTERRUPT, spids[k], 0, 0);
			int ost;
			while (waitpid(spids[k], &ost, __WALL) == spids[k] && WIFSTOPPED(ost) &&
			       ptrace(PTRACE_DETACH, spids[k], 0, 0) < 0)
				ptrace(PTRACE_INTERRUPT, spids[k], 0, 0);
		}
	pthread_join(th, NULL);
	assert_true(taken != 0);
	assert_true(WIFSIGNALED(st));
	return taken;
}

static void test_spare_killed_during_take(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no spare inits */
	job j;
	pid_t taken = kill_spare_during_take(&j, "/v1/sandboxes", "{\"image\":\"busybox\"}");
	assert_int_equal(j.status, 201);
	cJSON *got = cJSON_Parse(j.data);
	char *id = strdup(jstr(got, "id"));
	cJSON_Delete(got);
	free(j.data);
	assert_int_not_equal(record_init_pid(id), taken);
	char *out = sh_ok(id, "cat /proc/1/comm");
	assert_string_equal(out, "sandlot-init\n");
	free(out);
	assert_reaped(taken);
	sandbox_del(id);
}

/* The same for a one-shot, whose layer is mounted volatile: the failed take had left
 * overlayfs' volatile marker in its work dir, and the launch from nothing after it was
 * refused (500, "incompat feature volatile") until the marker was cleared first
 * (runtime/sandbox.c). The command runs as init's child in a sandbox made from nothing. */
static void test_spare_killed_during_run_take(void **state)
{
	if (access("/sys/fs/cgroup/memory", F_OK) != 0)
		skip(); /* cgroup v2: no spare inits */
	job j;
	pid_t taken = kill_spare_during_take(
	    &j, "/v1/run", "{\"image\":\"busybox\",\"command\":\"cat /proc/1/comm\"}");
	cJSON *got = cJSON_Parse(j.data);
	if (j.status != 200 || !got)
		fail_msg("POST /v1/run after a failed take: %ld %s", j.status, j.data);
	assert_int_equal(jnum(got, "exitCode"), 0);
	assert_string_equal(jstr(got, "stdout"), "sandlot-init\n");
	cJSON_Delete(got);
	free(j.data);
	assert_reaped(taken);
}

static void test_health_during_long_polls(void **state)
{
	enum { N = 64 };
	char *id = sandbox_new(NULL);
	char *eid = exec_start_id(id, "{\"command\":[\"sleep\",\"60\"]}");
	job *jobs = calloc(N, sizeof(job));
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		jobs[i] = (job){.method = "GET"};
		snprintf(jobs[i].path, sizeof(jobs[i].path),
			 "/v1/sandboxes/%s/executions/%s?wait=50s", id, eid);
		pthread_create(&th[i], NULL, job_main, &jobs[i]);
	}
	usleep(500000); /* let every long-poll reach the server */
	double worst = 0;
	for (int k = 0; k < 5; k++) {
		e2e_resp r;
		double t0 = now_s();
		e2e_http(&r, "GET", "/v1/health", NULL);
		double dt = now_s() - t0;
		expect(&r, 200, NULL, NULL);
		e2e_resp_free(&r);
		worst = dt > worst ? dt : worst;
	}
	/* Other work goes on too. */
	cJSON *e = run_wait(id, "{\"command\":\"echo ok\"}");
	assert_string_equal(jstr(e, "stdout"), "ok\n");
	cJSON_Delete(e);
	print_message("/v1/health with 64 long-polls pending: worst of 5 %.3f s\n", worst);
	assert_true(worst < 1.0);
	/* Ending the command answers every poll at once. */
	double t0 = now_s();
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/signal", id, eid);
	expect_call("POST", p, "{\"signal\":\"KILL\"}", 204, NULL, NULL);
	free(p);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	assert_true(now_s() - t0 < 10);
	for (int i = 0; i < N; i++) {
		assert_int_equal(jobs[i].status, 200);
		assert_string_equal(jobs[i].estatus, "cancelled");
		free(jobs[i].data);
	}
	free(jobs);
	free(eid);
	sandbox_del(id);
}

static void test_follow_long_stream(void **state)
{
	char *id = sandbox_new(NULL);
	char *eid = exec_start_id(id, "{\"command\":\"i=0; while [ $i -lt 3000 ]; do echo line-$i-"
				      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); "
				      "[ $((i % 300)) = 0 ] && sleep 0.1; done; echo end\"}");
	job f = {.method = "GET"};
	snprintf(f.path, sizeof(f.path), "/v1/sandboxes/%s/executions/%s/stdout?follow=1", id, eid);
	pthread_t th;
	pthread_create(&th, NULL, job_main, &f);
	/* Others work meanwhile. */
	for (int i = 0; i < 8; i++) {
		cJSON *e = run_wait(id, "{\"command\":\"echo side\"}");
		assert_string_equal(jstr(e, "stdout"), "side\n");
		cJSON_Delete(e);
	}
	pthread_join(th, NULL);
	assert_int_equal(f.status, 200);
	/* The follower got everything, in order, and ended only after the command. */
	cJSON *g = exec_get_wait(id, eid, NULL);
	assert_string_equal(jstr(g, "status"), "completed");
	cJSON_Delete(g);
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, eid);
	long st;
	char *all = get_raw(p, &st);
	free(p);
	assert_int_equal(f.bytes, strlen(all));
	assert_string_equal(f.data, all);
	char *line = f.data;
	for (int i = 0; i < 3000; i++) {
		char want[32];
		snprintf(want, sizeof(want), "line-%d-", i);
		if (strncmp(line, want, strlen(want)))
			fail_msg("line %d of the followed stream: %.40s", i, line);
		line = strchr(line, '\n') + 1;
	}
	assert_string_equal(line, "end\n");
	free(all);
	free(f.data);
	free(eid);
	sandbox_del(id);
}

/* ---- restart ----------------------------------------------------------------------------- */

/* The snapshot differs from BEFORE only by the daemon's pid (OLD gone, NEW there). */
static void assert_only_daemon_changed(const e2e_snapshot *before, pid_t old, pid_t neu)
{
	char *diff = NULL;
	char gone[64], came[64];
	snprintf(gone, sizeof(gone), "- process %d ", old);
	snprintf(came, sizeof(came), "+ process %d ", neu);
	for (int attempt = 0; attempt < 40; attempt++) {
		free(diff);
		/* Inits the killed daemon left are our orphans now (we are a subreaper). */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		e2e_snapshot *now = e2e_snapshot_take();
		diff = e2e_snapshot_diff(before, now);
		e2e_snapshot_free(now);
		bool other = false;
		/* Besides its process, a daemon's spare cgroups are its own (they carry its
		 * pid: runtime/sandbox.c). */
		for (char *l = diff; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
			size_t len = strcspn(l, "\n");
			char *line = strndup(l, len);
			if (strncmp(l, gone, strlen(gone)) && strncmp(l, came, strlen(came)) &&
			    *l != '\n' && !strstr(line, "/sandlot/.spare-"))
				other = true;
			free(line);
		}
		if (!other) {
			free(diff);
			return;
		}
		usleep(50000);
	}
	fail_msg("the host changed beyond the daemon's restart:\n%s", diff);
}

/* What a crash mid-create (or mid-fill) leaves in the store: a layer whose id has no
 * record, a spare half built a while ago. A daemon's start removes them
 * (runtime/storage.c, store_layers_collect), and nothing with a record. */
static void test_start_collects_layers_without_records(void **state)
{
	char *keep = sandbox_new(NULL);
	const char *store = getenv("SANDLOT_STATE_DIR");
	char *orphan = e2e_printf("%s/store/sandboxes/sbx_zzzzzzzzzzzzzzzzzzzz", store);
	char *half = e2e_printf("%s/store/sandboxes/.building-crashed", store);
	char *fresh = e2e_printf("%s/store/sandboxes/.building-in-progress", store);
	char *kept = e2e_printf("%s/store/sandboxes/%s", store, keep);
	char *cmd = e2e_printf("btrfs -q subvolume create %s && btrfs -q subvolume create %s && "
			       "btrfs -q subvolume create %s && touch -d '-2 min' %s",
			       orphan, half, fresh, half);
	assert_int_equal(system(cmd), 0);
	pid_t old = D.pid;
	kill(D.pid, SIGKILL);
	assert_int_equal(waitpid(D.pid, NULL, 0), D.pid);
	e2e_daemon_start(&D, D.sock, true, NULL);
	int gone = access(orphan, F_OK), half_gone = access(half, F_OK);
	int fresh_there = access(fresh, F_OK), kept_there = access(kept, F_OK);
	char *rm = e2e_printf("btrfs -q subvolume delete %s >/dev/null 2>&1", fresh);
	if (system(rm) != 0)
		print_message("could not delete %s\n", fresh);
	free(rm);
	assert_int_equal(gone, -1);
	assert_int_equal(half_gone, -1);
	assert_int_equal(fresh_there, 0); /* a fill may be making it right now */
	assert_int_equal(kept_there, 0);
	char *out = sh_ok(keep, "echo still here");
	assert_string_equal(out, "still here\n");
	free(out);
	sandbox_del(keep);
	free(cmd);
	free(orphan);
	free(half);
	free(fresh);
	free(kept);
	assert_only_daemon_changed(*state, old, D.pid);
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

static void test_restart_keeps_everything(void **state)
{
	char *id = sandbox_new(NULL);
	free(sh_ok(id, "echo kept > /root/file; echo tmp > /tmp/file"));
	char *counter = exec_start_id(
	    id, "{\"command\":\"i=0; while true; do echo $i; i=$((i+1)); sleep 0.1; done\"}");
	char *quitter = exec_start_id(id, "{\"command\":\"sleep 1; echo bye; exit 3\"}");
	usleep(500000);
	cJSON *g = exec_get_wait(id, counter, NULL);
	int pid = jnum(g, "pid");
	cJSON_Delete(g);
	long st;
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, counter);
	char *out = get_raw(p, &st);
	free(p);
	int before = 0;
	for (char *c = out; *c; c++)
		before += *c == '\n';
	free(out);

	/* kill -9 mid-flight; the quitter ends while no daemon runs. */
	pid_t old = D.pid;
	kill(D.pid, SIGKILL);
	assert_int_equal(waitpid(D.pid, NULL, 0), D.pid);
	sleep(2);
	e2e_daemon_start(&D, D.sock, true, NULL);
	/* Its spare inits ended with it (EOF on their sockets); the new daemon removed their
	 * run dirs. */
	unsigned long gone[8];
	assert_int_equal(spare_init_dirs_of(old, gone, 8), 0);

	g = exec_get_wait(id, counter, NULL);
	assert_string_equal(jstr(g, "status"), "running");
	assert_int_equal(jnum(g, "pid"), pid);
	cJSON_Delete(g);
	g = exec_get_wait(id, quitter, NULL);
	assert_string_equal(jstr(g, "status"), "failed");
	assert_int_equal(jnum(g, "exitCode"), 3);
	cJSON_Delete(g);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, quitter);
	out = get_raw(p, &st);
	assert_string_equal(out, "bye\n");
	free(out);
	free(p);
	out = sh_ok(id, "cat /root/file /tmp/file");
	assert_string_equal(out, "kept\ntmp\n");
	free(out);

	/* The counter went on through it all: no gap, no duplicate. */
	usleep(500000);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/signal", id, counter);
	expect_call("POST", p, "{\"signal\":\"SIGKILL\"}", 204, NULL, NULL);
	free(p);
	g = exec_get_wait(id, counter, "10s");
	assert_string_equal(jstr(g, "status"), "cancelled");
	cJSON_Delete(g);
	p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, counter);
	out = get_raw(p, &st);
	free(p);
	int n = 0;
	for (char *l = out; *l; l = strchr(l, '\n') + 1, n++)
		if (atoi(l) != n)
			fail_msg("counter line %d reads %.12s", n, l);
	print_message("counter: %d lines before the kill, %d in all\n", before, n);
	assert_true(before >= 1);
	assert_true(n >= before + 10); /* it counted on while no daemon ran (2 s) */
	free(out);
	sandbox_del(id);
	free(counter);
	free(quitter);
	assert_only_daemon_changed(*state, old, D.pid);
	/* The fixture compares against a snapshot with the new daemon in it. */
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

/* ---- files ------------------------------------------------------------------------------- */

static void test_files(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\",\"workingDirectory\":\"/home\"}");
	e2e_resp r;
	/* Written by a command (in /tmp, a tmpfs, too), read through the API. */
	free(sh_ok(id, "mkdir -p /home/d && echo from-cmd > /home/d/a.txt && "
		       "printf 'tmp\\000bytes' > /tmp/t.bin"));
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=/home/d/a.txt", id);
	long st;
	char *data = get_raw(p, &st);
	assert_int_equal(st, 200);
	assert_string_equal(data, "from-cmd\n");
	free(data);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=d/a.txt", id); /* relative: workingDirectory */
	data = get_raw(p, &st);
	assert_string_equal(data, "from-cmd\n");
	free(data);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/t.bin", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(r.len, 9);
	assert_memory_equal(r.body, "tmp\0bytes", 9);
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/nope", id);
	expect_call("GET", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);

	/* Written through the API (streamed, parents made), read by a command. */
	size_t big = 3u << 20;
	unsigned char *blob = malloc(big);
	for (size_t i = 0; i < big; i++)
		blob[i] = (unsigned char)(i * 7 + (i >> 13));
	p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/up/deep/blob.bin&mode=0600", id);
	e2e_req q = {.method = "PUT", .path = p, .body = blob, .len = big, .chunked = true};
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", p, NULL);
	assert_int_equal(r.len, big);
	assert_memory_equal(r.body, blob, big);
	e2e_resp_free(&r);
	free(p);
	free(blob);
	char *out = sh_ok(id, "stat -c '%a %s %U' /tmp/up/deep/blob.bin; ls -A /tmp/up/deep");
	assert_string_equal(out, "600 3145728 root\nblob.bin\n");
	free(out);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/home/new.txt", id);
	q = (e2e_req){.method = "PUT", .path = p, .body = "v1", .len = 2};
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	q.body = "version2";
	q.len = 8;
	e2e_http_q(&r, &q); /* replaces */
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	out = sh_ok(id, "cat /home/new.txt; stat -c ' %a' /home/new.txt");
	assert_string_equal(out, "version2 644\n");
	free(out);

	/* Batch: base64 contents, modes, relative paths. */
	p = e2e_printf("/v1/sandboxes/%s/files", id);
	e2e_http(&r, "POST", p,
	     "{\"files\":[{\"path\":\"b/one.txt\",\"content\":\"b25lCg==\"},"
	     "{\"path\":\"/opt/two.sh\",\"content\":\"ZWNobyB0d28K\",\"mode\":\"0755\"}]}");
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "filesWritten"), 2);
	e2e_resp_free(&r);
	expect_call("POST", p, "{\"files\":[{\"path\":\"x\",\"content\":\"***\"}]}", 400,
		    "INVALID_ARGUMENT", "files[0].content");
	expect_call("POST", p, "{\"files\":[{\"content\":\"\"}]}", 400, "INVALID_ARGUMENT",
		    "files[0].path");
	free(p);
	out = sh_ok(id, "cat /home/b/one.txt; /opt/two.sh");
	assert_string_equal(out, "one\ntwo\n");
	free(out);

	/* fs/: mkdir -p, stat, list, move, chmod (with owner), delete. */
	p = e2e_printf("/v1/sandboxes/%s/fs/mkdir", id);
	expect_call("POST", p, "{\"path\":\"/srv/a/b\"}", 204, NULL, NULL);
	expect_call("POST", p, "{\"path\":\"/srv/a/b\"}", 204, NULL, NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/stat?path=/srv/a", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "type"), "dir");
	assert_string_equal(jstr(r.json, "name"), "a");
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/stat?path=/srv/none", id);
	expect_call("GET", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/move", id);
	expect_call("POST", p, "{\"from\":\"/home/b/one.txt\",\"to\":\"/srv/a/b/moved.txt\"}", 204,
		    NULL, NULL);
	expect_call("POST", p, "{\"from\":\"/home/b/one.txt\"}", 400, "INVALID_ARGUMENT", "to");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/chmod", id);
	expect_call("POST", p,
		    "{\"path\":\"/srv/a/b/moved.txt\",\"mode\":\"0640\",\"owner\":\"nobody\"}", 204,
		    NULL, NULL);
	expect_call("POST", p, "{\"path\":\"/srv/a/b/moved.txt\",\"mode\":\"rwx\"}", 400,
		    "INVALID_ARGUMENT", "mode");
	expect_call("POST", p, "{\"path\":\"/srv/a/b/moved.txt\"}", 400, "INVALID_ARGUMENT",
		    "mode");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/list?path=/srv/a/b", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *ents = jget(r.json, "entries");
	assert_int_equal(cJSON_GetArraySize(ents), 1);
	const cJSON *f0 = cJSON_GetArrayItem(ents, 0);
	assert_string_equal(jstr(f0, "name"), "moved.txt");
	assert_string_equal(jstr(f0, "type"), "file");
	assert_int_equal(jnum(f0, "size"), 4);
	assert_int_equal(jnum(f0, "mode"), 0640);
	e2e_resp_free(&r);
	free(p);
	out = sh_ok(id, "stat -c '%a %U' /srv/a/b/moved.txt");
	assert_string_equal(out, "640 nobody\n");
	free(out);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/srv/a", id);
	e2e_http(&r, "DELETE", p, NULL);
	assert_true(r.status >= 400); /* not empty, not recursive */
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/srv/a&recursive=1", id);
	expect_call("DELETE", p, NULL, 204, NULL, NULL);
	free(p);
	out = sh_ok(id, "ls -A /srv");
	assert_string_equal(out, "");
	free(out);
	sandbox_del(id);
}

/* Symlinks planted inside the sandbox never reach a host file, whatever the call. */
static void test_hostile_paths(void **state)
{
	char *canary = e2e_printf("%s/canary.txt", e2e_root());
	char secret[64];
	unsigned char rnd[8];
	assert_int_equal(getrandom(rnd, sizeof(rnd), 0), (ssize_t)sizeof(rnd));
	snprintf(secret, sizeof(secret), "CANARY-%02x%02x%02x%02x%02x%02x%02x%02x\n", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	FILE *f = fopen(canary, "w");
	fputs(secret, f);
	fclose(f);
	chmod(canary, 0600);
	char *shadow = e2e_read_file("/etc/shadow");
	char *id = sandbox_new(NULL);
	char *dir = strdup(canary);
	*strrchr(dir, '/') = '\0';
	char *plant = e2e_printf(
	    "mkdir -p /h && cd /h && ln -s %s abs && ln -s ../../../../../../../../..%s rel && "
	    "ln -s /h/abs chain1 && ln -s chain1 chain2 && ln -s /etc/shadow shadow && "
	    "ln -s %s dirlink && ln -s / rootlink && ln -s ../../.. up",
	    canary, canary, dir);
	free(sh_ok(id, plant));
	free(plant);

	/* Paths ending in '+' get the canary's host path appended. */
	const char *reads[] = {"/h/abs",
			       "/h/rel",
			       "/h/chain2",
			       "/h/shadow",
			       "/h/dirlink/canary.txt",
			       "/h/rootlink/../../..+",
			       "/h/up+",
			       "../../../..+",
			       "+"};
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		size_t rl = strlen(reads[i]);
		char *path = reads[i][rl - 1] == '+'
				 ? e2e_printf("%.*s%s", (int)rl - 1, reads[i], canary)
				 : strdup(reads[i]);
		char *u = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, path);
		e2e_resp r;
		e2e_http(&r, "GET", u, NULL);
		if (strstr(r.body, "CANARY") || (shadow && r.len && !strcmp(r.body, shadow)))
			fail_msg("GET %s returned a host file", path);
		assert_true(r.status == 404 || r.status == 200 || r.status == 400);
		e2e_resp_free(&r);
		free(u);
		u = e2e_printf("/v1/sandboxes/%s/fs/list?path=%s", id, path);
		e2e_http(&r, "GET", u, NULL);
		const cJSON *ent;
		cJSON_ArrayForEach(ent, jget(r.json, "entries"))
		{
			if (!strcmp(jstr(ent, "name"), "canary.txt"))
				fail_msg("fs/list %s listed the host directory", path);
		}
		e2e_resp_free(&r);
		free(u);
		free(path);
	}
	/* Writes, chmod, move and delete through the links. */
	const char *targets[] = {"/h/abs", "/h/chain2", "/h/dirlink/canary.txt", "/h/rel"};
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char *u = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, targets[i]);
		e2e_resp r;
		e2e_req q = {.method = "PUT", .path = u, .body = "pwned\n", .len = 6};
		e2e_http_q(&r, &q);
		e2e_resp_free(&r);
		free(u);
		u = e2e_printf("/v1/sandboxes/%s/fs/chmod", id);
		char *b = e2e_printf("{\"path\":\"%s\",\"mode\":\"0777\"}", targets[i]);
		e2e_http(&r, "POST", u, b);
		e2e_resp_free(&r);
		free(b);
		free(u);
	}
	char *u = e2e_printf("/v1/sandboxes/%s/fs/move", id);
	e2e_resp r;
	char *b = e2e_printf("{\"from\":\"/h/dirlink/canary.txt\",\"to\":\"/stolen\"}");
	e2e_http(&r, "POST", u, b);
	e2e_resp_free(&r);
	free(b);
	free(u);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/dirlink/canary.txt", id);
	e2e_http(&r, "DELETE", u, NULL);
	e2e_resp_free(&r);
	free(u);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/dirlink&recursive=1", id);
	e2e_http(&r, "DELETE", u, NULL); /* removes the link, not the host directory */
	e2e_resp_free(&r);
	free(u);

	/* A symlink swapped back and forth while the API reads it. */
	char *swap = e2e_printf("{\"command\":\"cd /h; while true; do ln -sfn %s race; "
			     "echo innocent > race.f; mv -f race.f race; done\"}",
			     canary);
	char *loop = exec_start_id(id, swap);
	free(swap);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/race", id);
	int innocent = 0;
	for (int i = 0; i < 300; i++) {
		e2e_http(&r, "GET", u, NULL);
		if (strstr(r.body, "CANARY"))
			fail_msg("the race read the canary (attempt %d)", i);
		innocent += r.status == 200 && !strcmp(r.body, "innocent\n");
		e2e_resp_free(&r);
	}
	free(u);
	print_message("symlink race: %d of 300 reads saw the sandbox's own file\n", innocent);
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/signal", id, loop);
	expect_call("POST", p, "{\"signal\":\"KILL\"}", 204, NULL, NULL);
	free(p);
	free(loop);

	/* The canary is intact: same bytes, same mode, same place. */
	char *now = e2e_read_file(canary);
	assert_non_null(now);
	assert_string_equal(now, secret);
	struct stat st;
	assert_int_equal(stat(canary, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, 0);
	free(now);
	sandbox_del(id);
	unlink(canary);
	free(canary);
	free(dir);
	free(shadow);
}

/* ---- WebSocket attach ------------------------------------------------------------------ */

typedef struct ws {
	int fd;
	unsigned char buf[1 << 16];
	size_t len;
} ws;

/* The client half of the opening handshake on connected FD, for HOST and PATH; the
 * HTTP status, with the status line in STATUS_LINE and Sec-WebSocket-Accept checked. */
static int ws_handshake(ws *w, int fd, const char *host, const char *path, char *status_line,
			size_t sl)
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
static int ws_connect(ws *w, const char *path, char *status_line, size_t sl)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", D.sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return ws_handshake(w, fd, "sandlot", path, status_line, sl);
}

static void ws_send(ws *w, int op, const void *data, size_t len)
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
static bool ws_until(ws *w, char *out, size_t cap, const char *needle, int *close, int ms)
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

static void test_attach(void **state)
{
	char *id = sandbox_new(NULL);
	char *eid = exec_start_id(id, "{\"command\":[\"sh\"],\"pty\":{\"cols\":80,\"rows\":24}}");
	char *path = e2e_printf("/v1/sandboxes/%s/executions/%s/attach", id, eid);
	ws w;
	char line[128];
	assert_int_equal(ws_connect(&w, path, line, sizeof(line)), 101);
	/* One client at a time on a pty. */
	ws w2;
	assert_int_equal(ws_connect(&w2, path, line, sizeof(line)), 409);
	close(w2.fd);
	static char out[1 << 16];
	int closed = 0;
	out[0] = '\0';
	ws_send(&w, 2, "stty size\n", 10);
	assert_true(ws_until(&w, out, sizeof(out), "24 80", &closed, 10000));
	const char *rs = "{\"type\":\"resize\",\"cols\":100,\"rows\":40}";
	ws_send(&w, 1, rs, strlen(rs));
	ws_send(&w, 2, "stty size; echo $((6*7))x\n", 26);
	assert_true(ws_until(&w, out, sizeof(out), "42x", &closed, 10000));
	assert_non_null(strstr(out, "40 100"));
	ws_send(&w, 2, "exit 5\n", 7);
	ws_until(&w, out, sizeof(out), NULL, &closed, 10000);
	assert_int_equal(closed, 1000);
	close(w.fd);
	cJSON *g = exec_get_wait(id, eid, "10s");
	assert_int_equal(jnum(g, "exitCode"), 5);
	cJSON_Delete(g);
	/* Ended: 409; not a WebSocket request: 400. */
	assert_int_equal(ws_connect(&w, path, line, sizeof(line)), 409);
	close(w.fd);
	expect_call("GET", path, NULL, 400, "INVALID_ARGUMENT", "WebSocket");
	free(path);
	free(eid);

	/* A stdin execution: input through the FIFO, output from the logs, eof closes. */
	eid =
	    exec_start_id(id, "{\"command\":[\"sh\",\"-c\",\"cat; echo end >&2\"],\"stdin\":true}");
	path = e2e_printf("/v1/sandboxes/%s/executions/%s/attach", id, eid);
	assert_int_equal(ws_connect(&w, path, line, sizeof(line)), 101);
	out[0] = '\0';
	ws_send(&w, 2, "hello ws\n", 9);
	assert_true(ws_until(&w, out, sizeof(out), "hello ws\n", &closed, 10000));
	ws_send(&w, 1, "{\"type\":\"eof\"}", 14);
	closed = 0;
	ws_until(&w, out, sizeof(out), NULL, &closed, 10000);
	assert_int_equal(closed, 1000);
	assert_non_null(strstr(out, "end\n"));
	close(w.fd);
	g = exec_get_wait(id, eid, "10s");
	assert_int_equal(jnum(g, "exitCode"), 0);
	cJSON_Delete(g);
	free(path);
	free(eid);
	sandbox_del(id);
}

/* ---- images, run ------------------------------------------------------------------------- */

static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc(*len + 1);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void test_images(void **state)
{
	char *tar = e2e_build_path("images/busybox.tar");
	size_t len;
	char *blob = read_whole(tar, &len);
	free(tar);
	e2e_resp r;
	e2e_req q = {.method = "POST",
		 .path = "/v1/images?name=apitest&user=nobody&workdir=/tmp",
		 .body = blob,
		 .len = len,
		 .chunked = true};
	e2e_http_q(&r, &q);
	expect(&r, 201, NULL, NULL);
	assert_string_equal(jstr(r.json, "name"), "apitest");
	assert_string_equal(jstr(r.json, "user"), "nobody");
	assert_int_equal(strncmp(jstr(r.json, "digest"), "sha256:", 7), 0);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images", NULL);
	expect(&r, 200, NULL, NULL);
	assert_non_null(strstr(r.body, "\"apitest\""));
	e2e_resp_free(&r);
	/* Bad input: no name, a bad name, not an archive. */
	q.path = "/v1/images";
	e2e_http_q(&r, &q);
	expect(&r, 400, "INVALID_ARGUMENT", "?name");
	e2e_resp_free(&r);
	q = (e2e_req){.method = "POST", .path = "/v1/images?name=Bad/Name", .body = "x", .len = 1};
	e2e_http_q(&r, &q);
	expect(&r, 400, "INVALID_ARGUMENT", NULL);
	e2e_resp_free(&r);
	q = (e2e_req){
	    .method = "POST", .path = "/v1/images?name=garbage", .body = "not a tar", .len = 9};
	e2e_http_q(&r, &q);
	expect(&r, 400, "INVALID_ARGUMENT", NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images", NULL);
	assert_null(strstr(r.body, "\"garbage\""));
	e2e_resp_free(&r);
	/* In use: 409 until the sandbox is gone. */
	char *id = sandbox_new("{\"image\":\"apitest\"}");
	char *out = sh_ok(id, "id -un; pwd");
	assert_string_equal(out, "nobody\n/tmp\n");
	free(out);
	expect_call("DELETE", "/v1/images/apitest", NULL, 409, "CONFLICT", "apitest");
	sandbox_del(id);
	expect_call("DELETE", "/v1/images/apitest", NULL, 204, NULL, NULL);
	expect_call("DELETE", "/v1/images/apitest", NULL, 404, "NOT_FOUND", NULL);
	free(blob);
}

static void test_run_one_shot(void **state)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	int before = jnum(r.json, "total");
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/run",
	     "{\"image\":\"busybox\",\"command\":\"echo $FOO; cat /work/in.txt; echo warn >&2; "
	     "exit 4\",\"env\":{\"FOO\":\"bar\"},\"files\":[{\"path\":\"/work/in.txt\","
	     "\"content\":\"aGVsbG8K\"}],\"resources\":{\"memory\":\"64Mi\"},\"timeout\":\"30s\"}");
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "exitCode"), 4);
	assert_string_equal(jstr(r.json, "status"), "failed");
	assert_string_equal(jstr(r.json, "stdout"), "bar\nhello\n");
	assert_string_equal(jstr(r.json, "stderr"), "warn\n");
	assert_true(jnum(r.json, "durationMs") >= 0);
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/run", "{\"command\":[\"sleep\",\"30\"],\"timeout\":\"200ms\"}");
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "exitCode"), 124);
	assert_string_equal(jstr(r.json, "status"), "timeout");
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/run", "{\"command\":[\"no-such-thing\"]}");
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "exitCode"), 127);
	e2e_resp_free(&r);
	expect_call("POST", "/v1/run", "{\"command\":\"true\",\"image\":\"nope\"}", 404,
		    "NOT_FOUND", NULL);
	expect_call("POST", "/v1/run", "{\"command\":\"true\",\"name\":\"x\"}", 400,
		    "INVALID_ARGUMENT", "name");
	expect_call("POST", "/v1/run",
		    "{\"command\":\"true\",\"files\":[{\"path\":\"a\","
		    "\"content\":\"!!\"}]}",
		    400, "INVALID_ARGUMENT", "files[0].content");
	/* Every run's sandbox is gone (only tombstones remain). */
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	assert_int_equal(jnum(r.json, "total"), before);
	e2e_resp_free(&r);
}

/* ---- tombstones ----------------------------------------------------------------------------- */

static e2e_daemon TOMB; /* test_tombstones_collected's daemon, with a bound of 3 */

static char *record_file(const char *id)
{
	return e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
}

/* Its releaser is done with it (the record names none). */
static void wait_released(const char *id)
{
	char *p = record_file(id);
	for (int i = 0; i < 500; i++) {
		char *text = e2e_read_file(p);
		cJSON *rec = text ? cJSON_Parse(text) : NULL;
		const char *st = rec ? jstr(rec, "status") : NULL;
		bool done = st && !strcmp(st, "terminated") && jnum(rec, "releaser_pid") == 0;
		cJSON_Delete(rec);
		free(text);
		if (done)
			break;
		usleep(10000);
	}
	free(p);
}

static long get_status(const e2e_daemon *d, const char *id)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_req q = {.method = "GET", .path = p, .d = d};
	long st = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	free(p);
	return st;
}

/* A daemon removes tombstones older than 24 h at its start, and keeps at most
 * SANDLOT_TOMBSTONES_MAX of the rest, newest first, as its releases go. */
static void test_tombstones_collected(void **state)
{
	char *old = sandbox_new(NULL);
	char *keep = strdup(old);
	sandbox_del(old);
	wait_released(keep);
	/* Terminated 25 h ago. */
	char *p = record_file(keep);
	char *text = e2e_read_file(p);
	assert_non_null(text);
	cJSON *rec = cJSON_Parse(text);
	assert_non_null(rec);
	double t = cJSON_GetObjectItemCaseSensitive(rec, "terminated_ms")->valuedouble;
	cJSON_ReplaceItemInObject(rec, "terminated_ms", cJSON_CreateNumber(t - 25 * 3600e3));
	char *aged = cJSON_PrintUnformatted(rec);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(aged, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(get_status(NULL, keep), 200);

	setenv("SANDLOT_TOMBSTONES_MAX", "3", 1);
	char *sock = e2e_printf("%s/tomb.sock", e2e_root());
	e2e_daemon_start(&TOMB, sock, false, NULL);
	unsetenv("SANDLOT_TOMBSTONES_MAX");
	/* Its first sweep. */
	for (int i = 0; i < 300 && access(p, F_OK) == 0; i++)
		usleep(10000);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(get_status(&TOMB, keep), 404);
	char *ids[8];
	for (int i = 0; i < 8; i++) {
		e2e_resp r;
		e2e_req q = {.method = "POST", .path = "/v1/sandboxes", .body = "{\"image\":\"busybox\"}",
			 .len = 20, .d = &TOMB};
		e2e_http_q(&r, &q);
		expect(&r, 201, NULL, NULL);
		ids[i] = strdup(jstr(r.json, "id"));
		e2e_resp_free(&r);
		char *dp = e2e_printf("/v1/sandboxes/%s", ids[i]);
		q = (e2e_req){.method = "DELETE", .path = dp, .d = &TOMB};
		e2e_http_q(&r, &q);
		expect(&r, 204, NULL, NULL);
		e2e_resp_free(&r);
		free(dp);
		wait_released(ids[i]);
	}
	/* The newest three at least; the first ones gone. */
	for (int i = 5; i < 8; i++)
		assert_int_equal(get_status(&TOMB, ids[i]), 200);
	assert_int_equal(get_status(&TOMB, ids[0]), 404);
	assert_int_equal(get_status(NULL, ids[0]), 404);
	e2e_daemon_stop(&TOMB);
	for (int i = 0; i < 8; i++)
		free(ids[i]);
	free(sock);
	free(aged);
	cJSON_Delete(rec);
	free(text);
	free(p);
	free(keep);
}

static int tombstones_teardown(void **state)
{
	unsetenv("SANDLOT_TOMBSTONES_MAX");
	e2e_daemon_halt(&TOMB); /* if the test failed before it stopped it */
	return e2e_test_teardown(state);
}

/* ---- caps and stopping --------------------------------------------------------------------- */

static void *long_poll(void *p)
{
	job *j = p;
	e2e_resp r;
	e2e_req q = {.method = "GET", .path = j->path, .d = (const e2e_daemon *)j->data};
	j->status = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	return NULL;
}

static void test_caps_and_clean_stop(void **state)
{
	/* A second daemon on the same state, with small caps. */
	char *sock = e2e_printf("%s/small.sock", e2e_root());
	const char *extra[] = {"--max-body", "64Ki", "--max-upload", "1Mi", NULL};
	e2e_daemon_start(&SMALL, sock, false, extra);
	char *id = sandbox_new(NULL);
	size_t big = 2u << 20;
	char *blob = malloc(big);
	memset(blob, 'z', big);
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/cap/big.bin", id);
	e2e_req q = {.method = "PUT", .path = p, .body = blob, .len = big, .d = &SMALL};
	e2e_http_q(&r, &q); /* Content-Length: refused up front */
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	q.chunked = true; /* counted while streaming */
	e2e_http_q(&r, &q);
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	q = (e2e_req){
	    .method = "PUT", .path = p, .body = blob, .len = 1000000, .d = &SMALL, .chunked = true};
	e2e_http_q(&r, &q); /* under the cap */
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	/* Nothing half-written is left next to the file. */
	char *out = sh_ok(id, "ls -A /tmp/cap; wc -c < /tmp/cap/big.bin");
	assert_string_equal(out, "big.bin\n1000000\n");
	free(out);
	q = (e2e_req){.method = "POST",
		  .path = "/v1/images?name=toobig",
		  .body = blob,
		  .len = big,
		  .d = &SMALL};
	e2e_http_q(&r, &q);
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	memset(blob, ' ', 100000);
	blob[0] = '{';
	blob[99999] = '}';
	p = e2e_printf("/v1/sandboxes/%s/executions", id);
	q = (e2e_req){.method = "POST", .path = p, .body = blob, .len = 100000, .d = &SMALL};
	e2e_http_q(&r, &q);
	expect(&r, 413, "PAYLOAD_TOO_LARGE", NULL);
	e2e_resp_free(&r);
	free(p);
	free(blob);

	/* SIGTERM with a long-poll pending: it stops promptly and cleanly. */
	char *eid = exec_start_id(id, "{\"command\":[\"sleep\",\"60\"]}");
	job j = {.data = (char *)&SMALL};
	snprintf(j.path, sizeof(j.path), "/v1/sandboxes/%s/executions/%s?wait=60s", id, eid);
	pthread_t th;
	pthread_create(&th, NULL, long_poll, &j);
	usleep(300000);
	double t0 = now_s();
	e2e_daemon_stop(&SMALL);
	pthread_join(th, NULL);
	assert_true(now_s() - t0 < 3);
	/* The command did not notice. */
	cJSON *g = exec_get_wait(id, eid, NULL);
	assert_string_equal(jstr(g, "status"), "running");
	cJSON_Delete(g);
	free(eid);
	free(sock);
	sandbox_del(id);
}

/* ---- the pool and the releaser ---------------------------------------------------------- */

/* Ids of the records whose status is "pooled" (the state dir, as the daemon leaves it). */
static int pooled_ids(char ids[][32], int max)
{
	char *dir = e2e_printf("%s/sandboxes", getenv("SANDLOT_STATE_DIR"));
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "sbx_", 4))
			continue;
		char *rp = e2e_printf("%s/%s/sandbox.json", dir, e->d_name);
		char *text = e2e_read_file(rp);
		cJSON *o = text ? cJSON_Parse(text) : NULL;
		if (o && !strcmp(jstr(o, "status"), "pooled") && n < max)
			snprintf(ids[n++], 32, "%s", e->d_name);
		cJSON_Delete(o);
		free(text);
		free(rp);
	}
	closedir(d);
	free(dir);
	return n;
}

/* Poll P's /v1/health until its first pool has READY sandboxes (10 s). */
static void wait_pool_ready(const e2e_daemon *P, int ready)
{
	for (int i = 0; i < 200; i++) {
		e2e_resp r;
		e2e_req q = {.method = "GET", .path = "/v1/health", .d = P};
		e2e_http_q(&r, &q);
		expect(&r, 200, NULL, NULL);
		const cJSON *pool = cJSON_GetArrayItem(jget(r.json, "pool"), 0);
		assert_non_null(pool);
		int k = (int)jnum(pool, "ready");
		e2e_resp_free(&r);
		if (k == ready)
			return;
		usleep(50000);
	}
	fail_msg("the pool did not reach %d ready sandboxes in 10 s", ready);
}

static bool in_ids(char ids[][32], int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return true;
	return false;
}

/* serve --pool: a create that asks only for what can be set later is served from the
 * pool with everything it asked for; pooled sandboxes are invisible to every call; the
 * pool refills; a kill -9 leaves pooled sandboxes that the next daemon removes. */
static void test_pool(void **state)
{
	e2e_daemon P;
	char *sock = e2e_printf("%s/pool.sock", e2e_root());
	const char *extra[] = {"--pool", "busybox=2", NULL};
	e2e_daemon_start(&P, sock, false, extra);
	wait_pool_ready(&P, 2);
	char before[8][32];
	assert_int_equal(pooled_ids(before, 8), 2);

	/* Its image cannot be deleted from under it. */
	e2e_resp r;
	e2e_req iq = {.method = "DELETE", .path = "/v1/images/busybox", .d = &P};
	e2e_http_q(&r, &iq);
	expect(&r, 409, "CONFLICT", "pool");
	e2e_resp_free(&r);

	/* Invisible: get, delete, exec, list, the CLI. */
	for (int i = 0; i < 2; i++) {
		char *p = e2e_printf("/v1/sandboxes/%s", before[i]);
		e2e_req q = {.method = "GET", .path = p, .d = &P};
		e2e_http_q(&r, &q);
		expect(&r, 404, "NOT_FOUND", NULL);
		e2e_resp_free(&r);
		q.method = "DELETE";
		e2e_http_q(&r, &q);
		expect(&r, 404, "NOT_FOUND", NULL);
		e2e_resp_free(&r);
		free(p);
		p = e2e_printf("/v1/sandboxes/%s/executions?wait=5s", before[i]);
		q = (e2e_req){.method = "POST", .path = p, .body = "{\"command\":[\"true\"]}",
			  .len = 20, .d = &P};
		e2e_http_q(&r, &q);
		expect(&r, 404, "NOT_FOUND", NULL);
		e2e_resp_free(&r);
		free(p);
	}
	e2e_req lq = {.method = "GET", .path = "/v1/sandboxes", .d = &P};
	e2e_http_q(&r, &lq);
	expect(&r, 200, NULL, NULL);
	assert_false(e2e_contains(r.body, before[0]) || e2e_contains(r.body, before[1]));
	e2e_resp_free(&r);
	char *ls = e2e_sandlot_ok("ls", NULL);
	assert_false(e2e_contains(ls, before[0]) || e2e_contains(ls, before[1]));
	free(ls);

	/* A create the pool can serve: it gets one of them, set up as asked. */
	const char *body = "{\"image\":\"busybox\",\"env\":{\"POOLED\":\"yes\"},"
			   "\"labels\":{\"k\":\"v\"},\"user\":\"nobody\","
			   "\"workingDirectory\":\"/tmp\"}";
	e2e_req cq = {.method = "POST", .path = "/v1/sandboxes", .body = body, .len = strlen(body),
		  .d = &P};
	e2e_http_q(&r, &cq);
	expect(&r, 201, NULL, NULL);
	char id[32];
	snprintf(id, sizeof(id), "%s", jstr(r.json, "id"));
	assert_true(in_ids(before, 2, id));
	assert_string_equal(jstr(r.json, "status"), "running");
	assert_string_equal(jstr(jget(r.json, "env"), "POOLED"), "yes");
	assert_string_equal(jstr(jget(r.json, "labels"), "k"), "v");
	assert_string_equal(jstr(r.json, "user"), "nobody");
	e2e_resp_free(&r);
	char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", id);
	const char *cmd = "{\"command\":[\"sh\",\"-c\",\"echo $POOLED; id -un; pwd; hostname\"]}";
	e2e_req eq = {.method = "POST", .path = p, .body = cmd, .len = strlen(cmd), .d = &P};
	e2e_http_q(&r, &eq);
	expect(&r, 201, NULL, NULL);
	char *want = e2e_printf("yes\nnobody\n/tmp\n%s\n", id);
	assert_string_equal(jstr(r.json, "stdout"), want);
	free(want);
	e2e_resp_free(&r);
	free(p);

	/* What is fixed at start (a name is the hostname) is made cold, and works. */
	const char *named = "{\"image\":\"busybox\",\"name\":\"pool-cold\"}";
	cq.body = named;
	cq.len = strlen(named);
	e2e_http_q(&r, &cq);
	expect(&r, 201, NULL, NULL);
	char cold[32];
	snprintf(cold, sizeof(cold), "%s", jstr(r.json, "id"));
	assert_false(in_ids(before, 2, cold));
	e2e_resp_free(&r);

	/* It refills with new sandboxes. */
	wait_pool_ready(&P, 2);
	char after[8][32];
	assert_int_equal(pooled_ids(after, 8), 2);
	const char *kept = strcmp(before[0], id) ? before[0] : before[1];
	assert_true(in_ids(after, 2, kept));
	assert_false(in_ids(after, 2, id));

	/* DELETE answers at once with the tombstone; the release finishes behind it. */
	char *dp = e2e_printf("/v1/sandboxes/%s", id);
	e2e_req dq = {.method = "DELETE", .path = dp, .d = &P};
	e2e_http_q(&r, &dq);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	dq.method = "GET";
	e2e_http_q(&r, &dq);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "terminated");
	e2e_resp_free(&r);
	free(dp);

	/* kill -9: the pool is left behind; the next daemon (without a pool) removes it,
	 * and a sandbox the killed one made for a caller stays. */
	kill(P.pid, SIGKILL);
	waitpid(P.pid, NULL, 0);
	char left[8][32];
	assert_int_equal(pooled_ids(left, 8), 2);
	e2e_daemon_start(&P, sock, false, NULL);
	assert_int_equal(pooled_ids(left, 8), 0);
	for (int i = 0; i < 2; i++) {
		char *rp = e2e_printf("%s/sandboxes/%s", getenv("SANDLOT_STATE_DIR"), after[i]);
		assert_int_equal(access(rp, F_OK), -1);
		free(rp);
	}
	char *gp = e2e_printf("/v1/sandboxes/%s", cold);
	e2e_req gq = {.method = "GET", .path = gp, .d = &P};
	e2e_http_q(&r, &gq);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	gq.method = "DELETE";
	e2e_http_q(&r, &gq);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(gp);
	/* A clean stop finishes every release (the teardown's leak check proves it). */
	e2e_daemon_stop(&P);
	free(sock);
}

/* A release whose releaser died (a daemon killed between the DELETE's answer and the
 * end of the release) keeps its uid range claimed and is finished by the next sweep. */
static void test_orphaned_release(void **state)
{
	char *id = sandbox_new(NULL);
	char *cg = e2e_printf("/sys/fs/cgroup/pids/sandlot/%s", id);
	if (access(cg, F_OK) != 0) { /* cgroup v2 host */
		free(cg);
		cg = e2e_printf("/sys/fs/cgroup/sandlot/%s", id);
	}
	assert_int_equal(access(cg, F_OK), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char sid[32];
		sl_err err = {0};
		_exit(sandbox_destroy_begin(&CTX, id, "deleted", sid, &err) == 0 ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sl_sandbox sb;
	sl_err err = {0};
	assert_int_equal(sandbox_get(&CTX, id, &sb, &err), 0);
	assert_int_equal(sb.status, SL_ST_TERMINATED);
	assert_int_equal(sb.releaser_pid, pid);
	sandbox_free(&sb);
	/* Half done: its processes are gone, its cgroup is not. */
	assert_int_equal(access(cg, F_OK), 0);
	assert_true(sandbox_finish_orphans(&CTX, &err) >= 1);
	assert_int_equal(access(cg, F_OK), -1);
	assert_int_equal(sandbox_get(&CTX, id, &sb, &err), 0);
	assert_int_equal(sb.releaser_pid, 0);
	sandbox_free(&sb);
	free(cg);
	free(id);
}

/* A non-loopback --listen is refused unless asked for. */
static void test_listen_refusals(void **state)
{
	e2e_result r;
	char *sock = e2e_printf("%s/refuse.sock", e2e_root());
	e2e_sandlot(&r, NULL, 0, "serve", "--socket", sock, "--listen", "0.0.0.0:0", NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "--allow-remote"));
	e2e_result_free(&r);
	/* --allow-remote sends the key off the host: only over TLS. */
	e2e_sandlot(&r, NULL, 0, "serve", "--socket", sock, "--listen", "0.0.0.0:0",
		    "--allow-remote", NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "--tls-cert"));
	e2e_result_free(&r);
	e2e_sandlot(&r, NULL, 0, "serve", "--socket", D.sock, NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "another sandlot serve"));
	e2e_result_free(&r);
	assert_int_equal(access(sock, F_OK), -1);
	free(sock);
}

/* GET /v1/health over T's TCP port with the key, verifying the server against CA (NULL:
 * plain HTTP); the status, or 0 when no HTTP answer came. */
static long health_over(const e2e_daemon *t, const char *ca)
{
	char *auth = e2e_printf("Authorization: Bearer %s", KEY);
	e2e_req q = {.method = "GET", .path = "/v1/health", .d = t, .tcp = true, .ca = ca,
		     .auth = auth, .timeout_ms = 10000};
	e2e_resp r;
	long st = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	free(auth);
	return st;
}

/* --tls-cert/--tls-key: the TCP listener speaks HTTPS only (hardening fix 9: the key is
 * never sent in clear when the API leaves loopback). */
static void test_tls_listener(void **state)
{
	char *cert = e2e_printf("%s/tls-cert.pem", e2e_root());
	char *key = e2e_printf("%s/tls-key.pem", e2e_root());
	char *cmd = e2e_printf("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
			       "/CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout %s "
			       "-out %s >/dev/null 2>&1",
			       key, cert);
	assert_int_equal(system(cmd), 0);
	e2e_daemon t;
	char *sock = e2e_printf("%s/tls.sock", e2e_root());
	const char *extra[] = {"--tls-cert", cert, "--tls-key", key, NULL};
	e2e_daemon_start(&t, sock, true, extra);
	char *out = e2e_read_file(t.out);
	assert_non_null(strstr(out, "https://127.0.0.1:"));
	free(out);
	assert_int_equal(health_over(&t, cert), 200);
	assert_int_equal(health_over(&t, NULL), 0); /* no plain HTTP there */
	e2e_daemon_stop(&t);
	unlink(cert);
	unlink(key);
	free(cmd);
	free(sock);
	free(cert);
	free(key);
}

/* ---- nothing unauthenticated is read ---- */

/* The daemon's resident memory, KiB. */
static long daemon_rss_kib(pid_t pid)
{
	char *p = e2e_printf("/proc/%d/status", (int)pid);
	char *st = e2e_read_file(p);
	assert_non_null(st);
	const char *v = strstr(st, "VmRSS:");
	assert_non_null(v);
	long kib = atol(v + 6);
	free(st);
	free(p);
	return kib;
}

#define HUGE_BODY (1ll << 30)

typedef struct unauth_upload {
	const char *path, *sandbox;
	pthread_t t;
	long status;
	long long sent;
} unauth_upload;

static size_t send_zeros(char *buf, size_t len, void *ud)
{
	unauth_upload *u = ud;
	size_t want = len;
	if (u->sent + (long long)want > HUGE_BODY)
		want = (size_t)(HUGE_BODY - u->sent);
	memset(buf, 0, want);
	u->sent += (long long)want;
	return want;
}

/* POST a 1 GiB body of zeros to the E2B sandbox plane with a wrong access token, no
 * Expect: 100-continue (the body follows the headers at once, as an attacker sends it).
 * Not a /v1 answer: kept out of the spec check's captures. */
static void *unauth_upload_main(void *arg)
{
	unauth_upload *u = arg;
	char *sid = e2e_printf("E2b-Sandbox-Id: %s", u->sandbox);
	const char *headers[] = {sid, "X-Access-Token: 00000000000000000000000000000000",
				 "Content-Type: application/octet-stream", NULL};
	e2e_req q = {.method = "POST", .path = u->path, .tcp = true, .headers = headers,
		     .stream = send_zeros, .stream_ud = u, .stream_len = HUGE_BODY,
		     .timeout_ms = 60000, .no_capture = true};
	e2e_resp r;
	/* A send error once the daemon stops reading is expected: the status is kept. */
	e2e_http_q(&r, &q);
	u->status = r.status;
	e2e_resp_free(&r);
	free(sid);
	return NULL;
}

/* Hardening fix 1: the E2B sandbox plane (its own per-sandbox tokens) checked them only
 * after reading the body, which its RPC routes buffered (up to the 1 GiB upload cap).
 * Now every credential is checked from the headers: 8 parallel unauthenticated 1 GiB
 * uploads over TCP each get a 401 with most of their body unsent, and the daemon's
 * resident memory stays flat. */
static void test_unauthenticated_bodies_are_not_read(void **state)
{
	char *id = sandbox_new(NULL);
	long before = daemon_rss_kib(D.pid);
	static const char *const paths[] = {"/process.Process/Start", "/files?path=/tmp/x",
					    "/filesystem.Filesystem/ListDir", "/execute"};
	unauth_upload up[8];
	for (int i = 0; i < 8; i++) {
		up[i] = (unauth_upload){.path = paths[i % 4], .sandbox = id};
		assert_int_equal(pthread_create(&up[i].t, NULL, unauth_upload_main, &up[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(up[i].t, NULL);
	long after = daemon_rss_kib(D.pid);
	print_message("unauthenticated 1 GiB uploads: daemon RSS %ld -> %ld KiB\n", before,
		      after);
	for (int i = 0; i < 8; i++) {
		if (up[i].status != 401)
			fail_msg("%s: status %ld, want 401", up[i].path, up[i].status);
		if (up[i].sent > (64ll << 20))
			fail_msg("%s: the client sent %lld bytes before its 401: the daemon read the "
				 "body",
				 up[i].path, up[i].sent);
	}
	assert_true(after - before < 64 * 1024);
	sandbox_del(id);
}

/* ---- the spec -------------------------------------------------------------------------- */

static void test_zz_spec(void **state)
{
	char *cmd = e2e_printf("/usr/bin/python3 tests/api/spec_check.py --spec api/openapi.yaml --sources api "
			    "--socket %s --captures %s 2>&1",
			    D.sock, CAPTURES);
	FILE *f = popen(cmd, "r");
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	int st = pclose(f);
	print_message("%s", buf);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("spec check failed:\n%s", buf);
	assert_null(strstr(buf, " 0 captured"));
	free(cmd);
}

/* A real WebSocket echo server in a sandbox (Python, default image), reached through
 * the preview URL: handshake, then a masked text frame echoed back. */
static const char ws_echo_py[] =
	"import socket, hashlib, base64\n"
	"s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', 9001)); s.listen(5)\n"
	"while True:\n"
	"    c, _ = s.accept(); d = b''\n"
	"    while b'\\r\\n\\r\\n' not in d: d += c.recv(4096)\n"
	"    k = [l.split(b':', 1)[1].strip() for l in d.split(b'\\r\\n')\n"
	"         if l.lower().startswith(b'sec-websocket-key')][0]\n"
	"    a = base64.b64encode(hashlib.sha1(k + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())\n"
	"    c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n'\n"
	"              b'Connection: Upgrade\\r\\nSec-WebSocket-Accept: ' + a + b'\\r\\n\\r\\n')\n"
	"    h = c.recv(2); n = h[1] & 127; m = c.recv(4); p = b''\n"
	"    while len(p) < n: p += c.recv(n - len(p))\n"
	"    p = bytes(b ^ m[i % 4] for i, b in enumerate(p))\n"
	"    c.sendall(bytes([0x80 | (h[0] & 15), len(p)]) + p); c.close()\n";

static void test_preview_websocket(void **state)
{
	char *tar = e2e_build_path("images/default.tar.zst");
	free(e2e_sandlot_ok("image", "import", "default", tar, NULL));
	free(tar);
	char *id = sandbox_new("{\"image\":\"default\"}");
	e2e_result er;
	assert_int_equal(e2e_sandlot(&er, ws_echo_py, strlen(ws_echo_py), "exec", "-i", id, "--",
				     "sh", "-c", "cat > /tmp/ws.py", NULL),
			 0);
	e2e_result_free(&er);
	free(sh_ok(id, "(python3 /tmp/ws.py >/dev/null 2>&1 &); sleep 0.5"));
	e2e_resp r = {0};
	char *p = e2e_printf("/v1/sandboxes/%s/ports/9001", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const char *url = jstr(r.json, "url");
	const char *colon = strrchr(url, ':');
	int pp = atoi(colon + 1);
	e2e_resp_free(&r);
	free(p);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(pp),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	char *host = e2e_printf("9001-%s.localhost:%d", id, pp);
	ws w;
	char line[128];
	assert_int_equal(ws_handshake(&w, fd, host, "/echo", line, sizeof(line)), 101);
	free(host);
	/* A masked frame out; the echo comes back unmasked with the same payload. */
	ws_send(&w, 2, "hello-ws", 8);
	char out[64] = "";
	int closed = 0;
	assert_true(ws_until(&w, out, sizeof(out), "hello-ws", &closed, 10000));
	close(fd);
	sandbox_del(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_health_and_auth),
	    E2E_TEST(test_records_synced_after_answer),
	    E2E_TEST(test_errors),
	    E2E_TEST(test_early_answers_read_the_body),
	    E2E_TEST(test_sandbox_crud),
	    E2E_TEST(test_create_failure_leaves_nothing),
	    E2E_TEST(test_dead_init_reads_failed),
	    E2E_TEST(test_deleted_init_dies_elsewhere),
	    E2E_TEST(test_creates_take_spare_netns),
	    E2E_TEST(test_creates_take_spare_cgroups),
	    E2E_TEST(test_creates_take_spare_init),
	    E2E_TEST(test_parallel_creates_take_spares),
	    E2E_TEST(test_spare_killed_during_take),
	    E2E_TEST(test_spare_killed_during_run_take),
	    E2E_TEST(test_executions),
	    E2E_TEST(test_output_bounded_by_log_space),
	    E2E_TEST(test_code_keeps_other_executions),
	    E2E_TEST(test_stdin_signal_processes),
	    E2E_TEST(test_concurrent_sleepers),
	    E2E_TEST(test_health_during_long_polls),
	    E2E_TEST(test_follow_long_stream),
	    E2E_TEST(test_start_collects_layers_without_records),
	    E2E_TEST(test_restart_keeps_everything),
	    E2E_TEST(test_files),
	    E2E_TEST(test_hostile_paths),
	    E2E_TEST(test_attach),
	    E2E_TEST(test_images),
	    E2E_TEST(test_run_one_shot),
	    cmocka_unit_test_setup_teardown(test_tombstones_collected, e2e_test_setup,
					    tombstones_teardown),
	    E2E_TEST(test_caps_and_clean_stop),
	    E2E_TEST(test_pool),
	    E2E_TEST(test_orphaned_release),
	    E2E_TEST(test_state_of_the_previous_version_loads),
	    E2E_TEST(test_listen_refusals),
	    E2E_TEST(test_tls_listener),
	    E2E_TEST(test_unauthenticated_bodies_are_not_read),
	    E2E_TEST(test_lifecycle_routes),
	    E2E_TEST(test_ports),
	    E2E_TEST(test_ports_refuse_other_users),
	    E2E_TEST(test_preview_websocket),
	    E2E_TEST(test_zz_spec),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* test_api_sandboxes.c — `sandlot serve`'s sandbox routes end to end: errors and refusals
 * across the API, answers from the head alone, CRUD and lifecycle, dead inits, images,
 * one-shot runs, ports and the preview proxy (other users refused, a WebSocket through). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
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

#include "api_common.h"

/* ---- errors, across the routes ----------------------------------------------------------- */

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
		    "{\"packages\":[{\"name\":\"--index-url=http://x\",\"manager\":\"pip\"}]}", 400,
		    "INVALID_ARGUMENT", "packages[0].name");
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

/* ---- lifecycle, snapshots, volumes, code and timeouts over HTTP -------------------------- */

/* A file written, the sandbox stopped and started: the file is still there. */
static void stop_start_keeps_files(const char *id)
{
	e2e_resp r = {0};
	free(sh_ok(id, "echo kept > /root/f"));
	const char *steps[][2] = {{"stop", "stopped"}, {"start", "running"}};
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
	e2e_daemon_kill(&D);
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
	e2e_http(&r, "POST", p,
		 "{\"code\":\"echo hi; echo '{\\\"n\\\": 2}'\",\"language\":\"bash\"}");
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
	e2e_daemon_kill(&D);
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

/* Wait up to 8 s for sandbox ID's status to read STATUS. Read from the record, not
 * with a GET of the sandbox: that is an API call, which makes it active. */
static bool status_becomes(const char *id, enum sl_status status)
{
	bool seen = false;
	for (int64_t t0 = e2e_now_ms(); !seen && e2e_now_ms() - t0 < 8000;) {
		usleep(200000);
		sl_sandbox sb;
		sl_err err = {0};
		if (sandbox_get(&CTX, id, &sb, &err) == 0) {
			seen = sb.status == status;
			sandbox_free(&sb);
		}
	}
	return seen;
}

/* timeout.onIdle: what an idle timeout does, as onLifetime says what the lifetime's end
 * does. Without it: stop (destroy when ephemeral), as before it existed. */
static void test_on_idle(void **state)
{
	e2e_resp r;
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"timeout\":{\"idle\":\"1s\",\"onIdle\":\"nap\"}}", 400,
		    "INVALID_ARGUMENT", "timeout.onIdle");
	expect_call("POST", "/v1/sandboxes", "{\"timeout\":{\"onIdle\":3}}", 400,
		    "INVALID_ARGUMENT", "timeout.onIdle");
	/* The default, shown. */
	char *keep = sandbox_new("{\"image\":\"busybox\",\"timeout\":{\"idle\":\"1h\"}}");
	char *p = e2e_printf("/v1/sandboxes/%s", keep);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(jget(r.json, "timeout"), "onIdle"), "stop");
	e2e_resp_free(&r);
	/* Set at create only, as onLifetime. */
	e2e_http(&r, "PATCH", p, "{\"timeout\":{\"onIdle\":\"pause\"}}");
	expect(&r, 400, "INVALID_ARGUMENT", "create only");
	e2e_resp_free(&r);
	free(p);
	sandbox_del(keep);

	/* pause: frozen with its memory, resumed by a call, paused again when idle again. */
	char *id = sandbox_new(
	    "{\"image\":\"busybox\",\"timeout\":{\"idle\":\"1s\",\"onIdle\":\"pause\"}}");
	p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", p, NULL);
	assert_string_equal(jstr(jget(r.json, "timeout"), "onIdle"), "pause");
	e2e_resp_free(&r);
	assert_true(status_becomes(id, SL_ST_PAUSED));
	char *rp = e2e_printf("/v1/sandboxes/%s/resume", id);
	e2e_http(&r, "POST", rp, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	assert_true(status_becomes(id, SL_ST_PAUSED));
	free(rp);
	free(p);
	sandbox_del(id);

	/* delete: a sandbox that is not ephemeral is destroyed all the same. */
	id = sandbox_new(
	    "{\"image\":\"busybox\",\"timeout\":{\"idle\":\"1s\",\"onIdle\":\"delete\"}}");
	assert_true(status_becomes(id, SL_ST_TERMINATED));
	p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", p, NULL);
	assert_string_equal(jstr(r.json, "reason"), "idle timeout");
	e2e_resp_free(&r);
	free(p);
	free(id);

	/* stop, given: files kept, status stopped. */
	id = sandbox_new(
	    "{\"image\":\"busybox\",\"timeout\":{\"idle\":\"1s\",\"onIdle\":\"stop\"}}");
	assert_true(status_becomes(id, SL_ST_STOPPED));
	sandbox_del(id);
	(void)state;
}

/* ---- ports: relay and preview proxy ------------------------------------------------------- */

/* Send RAW to 127.0.0.1:PORT and read what comes back until EOF or 5 s. */
static char *tcp_exchange(int port, const char *raw, size_t rawlen, bool half_close)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
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
	char *head =
	    e2e_printf("GET /index.html HTTP/1.0\r\nHost: 8080-%s.localhost:%d\r\n\r\n", id, pp);
	out = tcp_exchange(pp, head, strlen(head), false);
	assert_true(e2e_contains(out, "200 OK"));
	assert_true(e2e_contains(out, "hello-from-inside"));
	free(out);
	free(head);
	/* A browser loads the preview URL (Chromium resolves *.localhost itself). */
	char *page = e2e_printf("http://8080-%s.localhost:%d/", id, pp);
	char *profile = e2e_printf("%s/chromium-profile", e2e_root());
	char *udd = e2e_printf("--user-data-dir=%s", profile);
	char *cargv[] = {"/usr/bin/chromium",
			 "--headless",
			 "--no-sandbox",
			 "--disable-gpu",
			 "--disable-quic",
			 "--no-first-run",
			 "--disable-background-networking",
			 "--disable-component-update",
			 "--disable-sync",
			 udd,
			 "--dump-dom",
			 page,
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
	head =
	    e2e_printf("GET / HTTP/1.0\r\nHost: 8080-sbx_aaaaaaaaaaaaaaaaaaaa.localhost\r\n\r\n");
	out = tcp_exchange(pp, head, strlen(head), false);
	assert_true(e2e_contains(out, "502"));
	free(out);
	free(head);
	const char *bad_host = "GET / HTTP/1.0\r\nHost: example.com\r\n\r\n";
	out = tcp_exchange(pp, bad_host, strlen(bad_host), false);
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
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons(hp),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		closed = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0;
		close(fd);
	}
	assert_true(closed);
	sandbox_del(id);
}

/* A stop ends the sandbox's commands with SIGTERM and waits for them, up to its 10 s
 * grace: one that takes 300 ms to clean up finishes, and its files are there at the next
 * start. (Init no longer sits out a 100 ms poll when nothing runs; it must still never
 * leave before its commands have ended: init/init.c, ORPHAN_GRACE_MS.) */
static void test_stop_waits_for_commands(void **state)
{
	char *id = sandbox_new(NULL);
	char *eid = exec_start_id(id, "{\"command\":[\"sh\",\"-c\",\"trap 'sleep 0.3; echo bye > "
				      "/root/t; exit 0' TERM; echo up > /root/up; while :; do "
				      "sleep 0.05; done\"]}");
	char *out = NULL;
	for (int i = 0; i < 250 && !out; i++) {
		out = sh_ok(id, "cat /root/up 2>/dev/null || true");
		if (!strstr(out, "up")) {
			free(out);
			out = NULL;
			usleep(20000);
		}
	}
	assert_non_null(out);
	free(out);
	char *p = e2e_printf("/v1/sandboxes/%s/stop", id);
	expect_call("POST", p, NULL, 200, NULL, NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/start", id);
	expect_call("POST", p, NULL, 200, NULL, NULL);
	free(p);
	out = sh_ok(id, "cat /root/t");
	assert_string_equal(out, "bye\n");
	free(out);
	free(eid);
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
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
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
	e2e_http(
	    &r, "POST", "/v1/sandboxes",
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
/* "hibernate": true: the launch CRIU can dump (docs/hibernate.md), kept on the record and
 * shown; commands and files as on any sandbox; what it cannot take yet refused. */
static void test_hibernate_create(void **state)
{
	e2e_resp r;
	expect_call("POST", "/v1/sandboxes", "{\"hibernate\":\"yes\"}", 400, "INVALID_ARGUMENT",
		    "hibernate");
	/* With a network too (the launch takes it: docs/hibernate.md). */
	e2e_http(&r, "POST", "/v1/sandboxes",
		 "{\"image\":\"busybox\",\"hibernate\":true,\"network\":{\"enabled\":true}}");
	expect(&r, 201, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "hibernate")));
	assert_non_null(jstr(jget(r.json, "network"), "address"));
	char *id = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	char *fp = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/h.txt", id);
	e2e_req put = {.method = "PUT", .path = fp, .body = "hib", .len = 3};
	e2e_http_q(&r, &put);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(fp);
	char *out = sh_ok(id, "cat /tmp/h.txt; echo; cat /proc/1/comm");
	assert_string_equal(out, "hib\nsandlot-init\n");
	free(out);
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "hibernate")));
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	free(p);
	sandbox_del(id);
}

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

/* The status of sandbox ID in GET /v1/sandboxes (malloc'd; NULL if not listed). */
static char *listed_status(const char *id)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	char *st = NULL;
	const cJSON *sb;
	cJSON_ArrayForEach(sb, jget(r.json, "sandboxes"))
		if (!strcmp(jstr(sb, "id"), id))
			st = strdup(jstr(sb, "status"));
	e2e_resp_free(&r);
	return st;
}

/* An operation that ends the init on purpose (a hibernation's dump) holds the record's
 * lock until it has written what it made of it: meanwhile a read, single or listed, gives
 * the record as written, not "failed" (E2B's getInfo answered 404 in that window while a
 * client polled for "paused"); once the lock is free the dead init reads failed. */
static void test_dead_init_under_lock_reads_as_recorded(void **state)
{
	char *id = sandbox_new(NULL);
	char *dir = e2e_printf("%s/sandboxes/%s", getenv("SANDLOT_STATE_DIR"), id);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	pid_t pid = record_init_pid(id);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_reaped(pid);
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	char *st = listed_status(id);
	assert_non_null(st);
	assert_string_equal(st, "running");
	free(st);
	close(fd);
	e2e_http(&r, "GET", p, NULL);
	assert_string_equal(jstr(r.json, "status"), "failed");
	e2e_resp_free(&r);
	st = listed_status(id);
	assert_non_null(st);
	assert_string_equal(st, "failed");
	free(st);
	free(p);
	free(dir);
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

/* The names of "images" in R's answer, comma-separated, in order. */
static void image_names(const e2e_resp *r, char *buf, size_t len)
{
	const cJSON *it;
	buf[0] = '\0';
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r->json, "images"))
	{
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s", used ? "," : "", jstr(it, "name"));
	}
}

/* POST /v1/images/{name}/tags: more names for one image in its repository; GET lists the
 * repository; a tag is removed as a name is (409 while a sandbox uses the image, the
 * layer kept while another name holds it). Names with '/' and ':' go URL-encoded. */
static void test_image_tags(void **state)
{
	(void)state;
	char *tar = e2e_build_path("images/busybox.tar");
	size_t len;
	char *blob = read_whole(tar, &len);
	free(tar);
	e2e_resp r;
	char names[512], digest[80];
	e2e_req q = {.method = "POST",
		     .path = "/v1/images?name=tagtest:v1",
		     .body = blob,
		     .len = len,
		     .chunked = true};
	e2e_http_q(&r, &q);
	expect(&r, 201, NULL, NULL);
	snprintf(digest, sizeof(digest), "%s", jstr(r.json, "digest"));
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/images/tagtest:v1/tags", "{\"tags\":[\"prod\",\"latest\"]}");
	expect(&r, 201, NULL, NULL);
	image_names(&r, names, sizeof(names));
	assert_string_equal(names, "tagtest:prod,tagtest:latest");
	assert_string_equal(
	    jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "images"), 0), "digest"), digest);
	e2e_resp_free(&r);
	expect_call("POST", "/v1/images/tagtest:v1/tags", "{\"tags\":[\".x\"]}", 400,
		    "INVALID_ARGUMENT", "tag '.x' is invalid");
	expect_call("POST", "/v1/images/tagtest:v1/tags", "{\"tags\":[\"ok\",\"a:b\"]}", 400,
		    "INVALID_ARGUMENT", "tag 'a:b'");
	expect_call("POST", "/v1/images/tagtest:v1/tags", "{\"tags\":[]}", 400, "INVALID_ARGUMENT",
		    "tags");
	expect_call("POST", "/v1/images/tagtest:v1/tags", "{\"tag\":\"x\"}", 400,
		    "INVALID_ARGUMENT", NULL);
	expect_call("POST", "/v1/images/nope/tags", "{\"tags\":[\"x\"]}", 404, "NOT_FOUND", "nope");
	expect_call("GET", "/v1/images/tagtest:ok", NULL, 404, "NOT_FOUND", NULL);
	e2e_http(&r, "GET", "/v1/images/tagtest/tags", NULL);
	expect(&r, 200, NULL, NULL);
	image_names(&r, names, sizeof(names));
	assert_string_equal(names, "tagtest:latest,tagtest:prod,tagtest:v1");
	e2e_resp_free(&r);
	expect_call("GET", "/v1/images/tagtest-none/tags", NULL, 404, "NOT_FOUND", NULL);
	/* A repository with a registry port and a path, its name URL-encoded. */
	e2e_http(&r, "POST", "/v1/images/tagtest:v1/tags", "{\"tags\":[\"x\"]}");
	e2e_resp_free(&r);
	expect_call("POST", "/v1/images/tagtest%3Av1/tags", "{\"tags\":[\"y\"]}", 201, NULL,
		    "tagtest:y");
	q = (e2e_req){.method = "POST",
		      .path = "/v1/images?name=localhost:5000/team/tagtest:1",
		      .body = blob,
		      .len = len,
		      .chunked = true};
	e2e_http_q(&r, &q);
	expect(&r, 201, NULL, NULL);
	e2e_resp_free(&r);
	expect_call("POST", "/v1/images/localhost%3A5000%2Fteam%2Ftagtest%3A1/tags",
		    "{\"tags\":[\"2\"]}", 201, NULL, "localhost:5000/team/tagtest:2");
	e2e_http(&r, "GET", "/v1/images/localhost%3A5000%2Fteam%2Ftagtest/tags", NULL);
	image_names(&r, names, sizeof(names));
	assert_string_equal(names, "localhost:5000/team/tagtest:1,localhost:5000/team/tagtest:2");
	e2e_resp_free(&r);
	/* A sandbox of tagtest:prod: each name of its image is in use, as any name is. */
	char *id = sandbox_new("{\"image\":\"tagtest:prod\"}");
	char *out = sh_ok(id, "echo ok");
	free(out);
	expect_call("DELETE", "/v1/images/tagtest:latest", NULL, 409, "CONFLICT", "tagtest");
	sandbox_del(id);
	const char *drop[] = {"tagtest:prod",
			      "tagtest:v1",
			      "tagtest:x",
			      "tagtest:y",
			      "localhost%3A5000%2Fteam%2Ftagtest%3A1",
			      "localhost%3A5000%2Fteam%2Ftagtest%3A2"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		char *p = e2e_printf("/v1/images/%s", drop[i]);
		expect_call("DELETE", p, NULL, 204, NULL, NULL);
		free(p);
	}
	expect_call("DELETE", "/v1/images/tagtest:latest", NULL, 204, NULL, NULL);
	expect_call("GET", "/v1/images/tagtest/tags", NULL, 404, "NOT_FOUND", NULL);
	free(blob);
}

static void test_run_one_shot(void **state)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	int before = jnum(r.json, "total");
	e2e_resp_free(&r);
	e2e_http(
	    &r, "POST", "/v1/run",
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
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons(port),
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
	char *body =
	    e2e_printf("{\"ports\":{\"%d\":{\"public\":%s}}}", port, pub ? "true" : "false");
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
	char *unknown =
	    e2e_printf("GET / HTTP/1.0\r\nHost: 8080-sbx_aaaaaaaaaaaaaaaaaaaa.localhost\r\n\r\n");
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
		 "{\"image\":\"busybox\",\"ports\":{\"*\":{\"public\":true},\"81\":{\"public\":"
		 "false}}}");
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
	char *plain2 =
	    e2e_printf("GET /index.html HTTP/1.0\r\nHost: 8080-%s.localhost:%d\r\n\r\n", id, pp2);
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

/* ---- the preview proxy carries a WebSocket ----------------------------------------------- */

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
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(pp),
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

/* ---- requestHost: the Host header a request reaches the sandbox with ------------------ */

/* An HTTP server in a sandbox (Python, default image) answering each request with the
 * Host header it got. */
static const char host_echo_py[] =
    "import http.server\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        b = ('host=[%s]' % self.headers.get('Host')).encode()\n"
    "        self.send_response(200); self.send_header('Content-Length', str(len(b)))\n"
    "        self.end_headers(); self.wfile.write(b)\n"
    "    def log_message(self, *a): pass\n"
    "http.server.ThreadingHTTPServer(('127.0.0.1', 8080), H).serve_forever()\n";

/* What the server in the sandbox saw as Host, asked through 127.0.0.1:PORT with HOST. */
static void assert_host_seen(int port, const char *host, const char *want)
{
	char *head = e2e_printf("GET / HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\n\r\n", host);
	char *out = tcp_exchange(port, head, strlen(head), false);
	char *w = e2e_printf("host=[%s]", want);
	if (!e2e_contains(out, w))
		fail_msg("through port %d with Host %s: wanted %s, got: %s", port, host, w, out);
	free(w);
	free(out);
	free(head);
}

/* A create's requestHost (E2B's network.maskRequestHost) is the Host every request
 * through the preview proxy and the relay carries in, "${PORT}" the port; it is in the
 * record, so a daemon with nothing in memory (a restart) does the same, and a fork keeps
 * it. Without one a request keeps its own. A Host that is no header value is refused at
 * create. */
static void test_request_host(void **state)
{
	char *tar = e2e_build_path("images/default.tar.zst");
	free(e2e_sandlot_ok("image", "import", "default", tar, NULL));
	free(tar);
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"requestHost\":\"a b\"}", 400,
		    "INVALID_ARGUMENT", "requestHost");
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"requestHost\":\"a\\r\\nX-Evil: 1\"}", 400,
		    "INVALID_ARGUMENT", "requestHost");
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"requestHost\":8080}", 400,
		    "INVALID_ARGUMENT", "requestHost");
	char *id = sandbox_new(
	    "{\"image\":\"default\",\"requestHost\":\"custom-host.example.com:${PORT}\"}");
	char *plain = sandbox_new("{\"image\":\"default\"}");
	const char *both[] = {id, plain};
	for (int i = 0; i < 2; i++) {
		e2e_resp r = {0};
		char *p = e2e_printf("/v1/sandboxes/%s", both[i]);
		e2e_http(&r, "GET", p, NULL);
		expect(&r, 200, NULL, NULL);
		if (i == 0)
			assert_string_equal(jstr(r.json, "requestHost"),
					    "custom-host.example.com:${PORT}");
		else
			assert_true(cJSON_IsNull(jget(r.json, "requestHost")));
		e2e_resp_free(&r);
		free(p);
		e2e_result er;
		assert_int_equal(e2e_sandlot(&er, host_echo_py, strlen(host_echo_py), "exec", "-i",
					     both[i], "--", "sh", "-c", "cat > /tmp/h.py", NULL),
				 0);
		e2e_result_free(&er);
		free(sh_ok(both[i], "(python3 /tmp/h.py >/dev/null 2>&1 &); "
				    "for i in $(seq 50); do python3 -c 'import socket; "
				    "socket.create_connection((\"127.0.0.1\", 8080))' 2>/dev/null "
				    "&& break; sleep 0.1; done"));
	}
	int hp, pp;
	char token[80];
	port_endpoints(NULL, id, 8080, &hp, &pp, token);
	char *host = e2e_printf("8080-%s.localhost:%d", id, pp);
	assert_host_seen(pp, host, "custom-host.example.com:8080");
	assert_host_seen(hp, "127.0.0.1", "custom-host.example.com:8080");
	free(host);
	/* A second daemon on the same state, with nothing in memory. */
	e2e_daemon d2;
	char *sock2 = e2e_printf("%s/request-host.sock", e2e_root());
	e2e_daemon_start(&d2, sock2, false, NULL);
	int hp2, pp2;
	port_endpoints(&d2, id, 8080, &hp2, &pp2, token);
	host = e2e_printf("8080-%s.localhost:%d", id, pp2);
	assert_host_seen(pp2, host, "custom-host.example.com:8080");
	assert_host_seen(hp2, "127.0.0.1:1", "custom-host.example.com:8080");
	free(host);
	e2e_daemon_stop(&d2);
	free(sock2);
	/* A fork keeps it, with the source's other settings. */
	e2e_resp r = {0};
	char *fp = e2e_printf("/v1/sandboxes/%s/fork", id);
	e2e_http(&r, "POST", fp, "{\"count\":1}");
	expect(&r, 201, NULL, NULL);
	const cJSON *copy = cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0);
	assert_string_equal(jstr(copy, "requestHost"), "custom-host.example.com:${PORT}");
	sandbox_del(strdup(jstr(copy, "id")));
	e2e_resp_free(&r);
	free(fp);
	/* No requestHost: the request's own. */
	port_endpoints(NULL, plain, 8080, &hp, &pp, token);
	host = e2e_printf("8080-%s.localhost:%d", plain, pp);
	assert_host_seen(pp, host, host);
	assert_host_seen(hp, "example.org:1", "example.org:1");
	free(host);
	sandbox_del(plain);
	sandbox_del(id);
}

/* Hardening fix 5 (part): env and labels are capped at create and PATCH, with a 400 that
 * names the field and the limit. Before, 1 MiB of labels was accepted and the record could
 * then not be read back: GET and DELETE failed and the sweeps skipped it. */
static void test_record_fields_capped(void **state)
{
	size_t big = 300 * 1024;
	char *val = malloc(big + 1);
	memset(val, 'v', big);
	val[big] = '\0';
	char *body = e2e_printf("{\"image\":\"busybox\",\"env\":{\"BIG\":\"%s\"}}", val);
	expect_call("POST", "/v1/sandboxes", body, 400, "INVALID_ARGUMENT", "at most 262144");
	free(body);
	/* 257 labels: one over the count. */
	char *labels = strdup("{");
	for (int i = 0; i < 257; i++) {
		char *n = e2e_printf("%s%s\"k%d\":\"v\"", labels, i ? "," : "", i);
		free(labels);
		labels = n;
	}
	body = e2e_printf("{\"image\":\"busybox\",\"labels\":%s}}", labels);
	expect_call("POST", "/v1/sandboxes", body, 400, "INVALID_ARGUMENT", "labels");
	free(body);
	char *id = sandbox_new(NULL);
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	body = e2e_printf("{\"labels\":%s}}", labels);
	expect_call("PATCH", p, body, 400, "INVALID_ARGUMENT", "at most 256");
	free(body);
	/* Within the limits, all is kept. */
	expect_call("PATCH", p, "{\"labels\":{\"a\":\"b\"}}", 200, NULL, NULL);
	e2e_resp r;
	assert_int_equal(e2e_http(&r, "GET", p, NULL), 200);
	assert_string_equal(jstr(jget(r.json, "labels"), "a"), "b");
	e2e_resp_free(&r);
	sandbox_del(id);
	free(p);
	free(labels);
	free(val);
}

/* ---- a relay's listener and its accept thread ---------------------------------------------- */

/* One request over FD, a kept-alive HTTP/1.1 connection to a daemon's socket; the status,
 * the body (up to CAP bytes, NUL-terminated) in BODY. */
static long keep_alive_req(int fd, const char *method, const char *path, char *body, size_t cap)
{
	char *req = e2e_printf("%s %s HTTP/1.1\r\nHost: sandlot\r\nContent-Length: 0\r\n\r\n",
			       method, path);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	free(req);
	char buf[8192];
	size_t len = 0;
	char *end = NULL;
	while (!end) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	const char *cl = strcasestr(buf, "Content-Length:");
	assert_non_null(cl);
	size_t want = (size_t)atol(cl + 15), have = len - (size_t)(end + 4 - buf);
	assert_true(want < cap);
	memcpy(body, end + 4, have);
	while (have < want) {
		ssize_t n = recv(fd, body + have, want - have, 0);
		assert_true(n > 0);
		have += (size_t)n;
	}
	body[want] = '\0';
	return atol(buf + 9);
}

/* The relay's host port, from GET .../ports/PORT over FD. */
static int relay_open(int fd, const char *id, int port)
{
	char body[4096];
	char *p = e2e_printf("/v1/sandboxes/%s/ports/%d", id, port);
	assert_int_equal(keep_alive_req(fd, "GET", p, body, sizeof(body)), 200);
	free(p);
	const char *h = strstr(body, "127.0.0.1:");
	assert_non_null(h);
	return atoi(h + 10);
}

static int tcp_connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#define RELAY_DELAY_MS 5000
#define B_PORTS	       8

/* Hardening fix 9: the sweep closed a stopped sandbox's relay listener while its accept
 * thread was between two accept4 calls; a relay opened next could get the same fd number,
 * and the old thread then accepted on it, sending that relay's clients to the stopped
 * sandbox. The thread now closes its own listener. The window is the time a thread takes
 * to hand a connection over (about 50 µs); a delay point (SANDLOT_DELAY_POINT) widens it to
 * RELAY_DELAY_MS so the test hits it every run: sandbox A's relay takes a connection, A is
 * stopped (its listener swept), sandbox B's relays are opened over one kept-alive
 * connection (so their listeners take the lowest free numbers), and each of B's relays is
 * asked twice: every answer must be B's web server's. */
static void test_relay_listener_not_reused(void **state)
{
	char *a = sandbox_new(NULL), *b = sandbox_new(NULL);
	free(sh_ok(b, "mkdir -p /www && echo hello-from-b > /www/index.html && "
		      "for p in 8001 8002 8003 8004 8005 8006 8007 8008; do "
		      "busybox httpd -p $p -h /www; done"));
	char *sock = e2e_printf("%s/relay.sock", e2e_root());
	e2e_daemon d;
	char *delay = e2e_printf("relay-accepted:%d", RELAY_DELAY_MS);
	setenv("SANDLOT_DELAY_POINT", delay, 1);
	e2e_daemon_start(&d, sock, false, NULL);
	unsetenv("SANDLOT_DELAY_POINT");
	int api = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", sock);
	assert_int_equal(connect(api, (struct sockaddr *)&un, sizeof(un)), 0);

	/* A's relay takes one connection: its thread is now in the delay, between accepts. */
	int ha = relay_open(api, a, 8080);
	int64_t t0 = e2e_now_ms();
	int c = tcp_connect_to(ha);
	assert_true(c >= 0);
	char body[4096];
	char *p = e2e_printf("/v1/sandboxes/%s/stop", a);
	assert_int_equal(keep_alive_req(api, "POST", p, body, sizeof(body)), 200);
	free(p);
	/* The sweep (once a second) has shut A's listener down once it refuses. */
	int probe = -1;
	for (int i = 0; i < 300 && (probe = tcp_connect_to(ha)) >= 0; i++) {
		close(probe);
		usleep(10000);
	}
	assert_true(probe < 0);
	int hb[B_PORTS];
	for (int i = 0; i < B_PORTS; i++)
		hb[i] = relay_open(api, b, 8001 + i);
	int64_t opened = e2e_now_ms() - t0;
	print_message("B's relays open %lld ms after A's accept (its thread waits %d ms)\n",
		      (long long)opened, RELAY_DELAY_MS);
	if (opened >= RELAY_DELAY_MS - 500)
		fail_msg("too slow to prove anything: B's relays opened after %lld ms",
			 (long long)opened);
	usleep((useconds_t)(RELAY_DELAY_MS - opened + 200) * 1000);
	/* Twice each, all at once: the first goes to B's own thread (waiting first), which
	 * then sleeps; the second to whoever else accepts on that listener. */
	int wrong = 0;
	for (int round = 0; round < 2; round++) {
		int fds[B_PORTS];
		const char *get = "GET / HTTP/1.0\r\n\r\n";
		for (int i = 0; i < B_PORTS; i++) {
			fds[i] = tcp_connect_to(hb[i]);
			assert_true(fds[i] >= 0);
			assert_int_equal(send(fds[i], get, strlen(get), MSG_NOSIGNAL),
					 (ssize_t)strlen(get));
		}
		for (int i = 0; i < B_PORTS; i++) {
			char buf[4096];
			size_t len = 0;
			struct pollfd pf = {fds[i], POLLIN, 0};
			while (len < sizeof(buf) - 1 && poll(&pf, 1, RELAY_DELAY_MS + 5000) > 0) {
				ssize_t n = recv(fds[i], buf + len, sizeof(buf) - 1 - len, 0);
				if (n <= 0)
					break;
				len += (size_t)n;
			}
			buf[len] = '\0';
			if (!strstr(buf, "hello-from-b")) {
				print_message("relay of B's port %d, call %d: %zu bytes, not B's\n",
					      8001 + i, round + 1, len);
				wrong++;
			}
			close(fds[i]);
		}
	}
	close(c);
	close(api);
	e2e_daemon_stop(&d);
	assert_int_equal(wrong, 0);
	sandbox_del(a);
	sandbox_del(b);
	free(delay);
	free(sock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_errors),
	    E2E_TEST(test_early_answers_read_the_body),
	    E2E_TEST(test_sandbox_crud),
	    E2E_TEST(test_hibernate_create),
	    E2E_TEST(test_create_failure_leaves_nothing),
	    E2E_TEST(test_dead_init_reads_failed),
	    E2E_TEST(test_dead_init_under_lock_reads_as_recorded),
	    E2E_TEST(test_deleted_init_dies_elsewhere),
	    E2E_TEST(test_images),
	    E2E_TEST(test_image_tags),
	    E2E_TEST(test_run_one_shot),
	    E2E_TEST(test_lifecycle_routes),
	    E2E_TEST(test_stop_waits_for_commands),
	    E2E_TEST(test_on_idle),
	    E2E_TEST(test_record_fields_capped),
	    E2E_TEST(test_ports),
	    E2E_TEST(test_ports_refuse_other_users),
	    E2E_TEST(test_relay_listener_not_reused),
	    E2E_TEST(test_preview_websocket),
	    E2E_TEST(test_request_host),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

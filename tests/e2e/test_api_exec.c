/* test_api_exec.c — `sandlot serve`'s executions end to end: runs, output, stdin,
 * signals, long-polls and followed streams under concurrency, and WebSocket attach. */
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
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "executions")),
			 1); /* the snippet's: gone */
	e2e_resp_free(&r);
	free(p);
	free(bg);
	sandbox_del(id);
}

/* The python parent of a /code call in ID: 1 when it ran cold (init's child), the warm
 * runner's pid when the runner took it. */
static long code_ppid(const char *id)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/code", id);
	e2e_http(&r, "POST", p,
		 "{\"code\":\"import os\\nprint(os.getppid())\",\"language\":\"python\"}");
	expect(&r, 200, NULL, NULL);
	assert_true(cJSON_IsTrue(jget(r.json, "success")));
	long ppid = atol(jstr(r.json, "stdout"));
	e2e_resp_free(&r);
	free(p);
	return ppid;
}

/* A sandbox's first code call runs cold and its answer comes back before the warm
 * runner is started (after the answer, off the call's path); neither leaves an execution
 * record, and the calls after it are the runner's. */
static void test_code_first_call_then_runner(void **state)
{
	char *tar = e2e_build_path("images/default.tar.zst");
	free(e2e_sandlot_ok("image", "import", "default", tar, NULL));
	free(tar);
	char *id = sandbox_new("{\"image\":\"default\"}");
	assert_int_equal(code_ppid(id), 1);
	int64_t t0 = e2e_now_ms();
	long ppid;
	while ((ppid = code_ppid(id)) <= 1 && e2e_now_ms() - t0 < 10000)
		usleep(50 * 1000);
	assert_true(ppid > 1);
	assert_int_equal(code_ppid(id), ppid);
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "executions")), 0);
	e2e_resp_free(&r);
	free(p);
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

/* ---- WebSocket attach -------------------------------------------------------------------- */

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_executions),
	    E2E_TEST(test_output_bounded_by_log_space),
	    E2E_TEST(test_code_keeps_other_executions),
	    E2E_TEST(test_code_first_call_then_runner),
	    E2E_TEST(test_stdin_signal_processes),
	    E2E_TEST(test_concurrent_sleepers),
	    E2E_TEST(test_health_during_long_polls),
	    E2E_TEST(test_follow_long_stream),
	    E2E_TEST(test_attach),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

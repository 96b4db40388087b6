/* test_exec.c — end-to-end checks of durable executions (runtime/exec.c) on real
 * sandboxes: exit codes and logs, records that outlive their starter, timeouts enforced
 * by sandlot-init, stdin, cancel, OOM, many waiters, processes, pty, a dead init. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "exec.h"
#include "initctl.h"
#include "lookup.h"
#include "processes.h"
#include "state.h"
#include "view.h"

/* ---- helpers ---- */

static sl_ctx *ctx_new(void)
{
	e2e_runtime_env(); /* state and run dirs come from the harness */
	sl_ctx *ctx = calloc(1, sizeof(*ctx));
	sl_err err = {0};
	if (ctx_open(ctx, &err) < 0)
		fail_msg("ctx_open: %s", err.msg);
	return ctx;
}

static void ctx_free(sl_ctx *ctx)
{
	ctx_close(ctx);
	free(ctx);
}

/* Set by the HIB_TEST variants: sandboxes are created with --hibernate (the launch CRIU
 * can dump, runtime/launch_hib.c), and must behave as any other. */
static bool hib;

/* A fresh busybox sandbox (through the CLI, as a user would make it). */
static char *sandbox_new(const char *memory)
{
	if (memory)
		return e2e_sandlot_ok("create", "--image", "busybox", "--memory", memory,
				      hib ? "--hibernate" : NULL, NULL);
	return e2e_sandlot_ok("create", "--image", "busybox", hib ? "--hibernate" : NULL, NULL);
}

static void sandbox_rm(char *id)
{
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void get_sandbox(sl_ctx *ctx, const char *id, sl_sandbox *sb)
{
	sl_err err = {0};
	if (sandbox_get(ctx, id, sb, &err) < 0)
		fail_msg("sandbox_get %s: %s", id, err.msg);
}

static void start(sl_ctx *ctx, const char *id, const sl_exec_spec *spec, sl_exec *e)
{
	sl_sandbox sb;
	sl_err err = {0};
	get_sandbox(ctx, id, &sb);
	int r = exec_start(ctx, &sb, spec, e, &err);
	sandbox_free(&sb);
	if (r < 0)
		fail_msg("exec_start in %s: %s", id, err.msg);
	assert_int_equal(strncmp(e->id, "exe_", 4), 0);
	assert_string_equal(e->sandbox_id, id);
}

static void start_sh(sl_ctx *ctx, const char *id, const char *line, sl_exec *e)
{
	sl_exec_spec spec = {.shell = line};
	start(ctx, id, &spec, e);
}

static void wait_done(sl_ctx *ctx, const char *id, const char *eid, int timeout_ms, sl_exec *e)
{
	sl_err err = {0};
	if (exec_wait(ctx, id, eid, timeout_ms, e, &err) < 0)
		fail_msg("exec_wait %s: %s", eid, err.msg);
	if (e->status == SL_EXEC_RUNNING)
		fail_msg("execution %s still running after %d ms", eid, timeout_ms);
}

static char *read_log(sl_ctx *ctx, const char *id, const char *eid, const char *stream)
{
	int fd;
	sl_err err = {0};
	if (exec_open_log(ctx, id, eid, stream, &fd, &err) < 0)
		fail_msg("exec_open_log %s %s: %s", eid, stream, err.msg);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static void assert_log(sl_ctx *ctx, const char *id, const char *eid, const char *stream,
		       const char *want)
{
	char *got = read_log(ctx, id, eid, stream);
	assert_string_equal(got, want);
	free(got);
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- tests ---- */

static void test_exit_codes_and_separate_logs(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_exec e, w;

	start_sh(ctx, id, "echo out; echo err >&2; exit 3", &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_int_equal(w.exit_code, 3);
	assert_int_equal(w.signal, 0);
	assert_false(w.oom_killed);
	assert_true(w.finished_ms >= w.started_ms);
	assert_log(ctx, id, e.id, "stdout", "out\n");
	assert_log(ctx, id, e.id, "stderr", "err\n");

	cJSON *j = view_exec_json(&w);
	assert_string_equal(json_str(j, "id"), e.id);
	assert_string_equal(json_str(j, "sandboxId"), id);
	assert_string_equal(json_str(j, "status"), "failed");
	assert_int_equal(cJSON_GetObjectItem(j, "exitCode")->valueint, 3);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "signal")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "oomKilled")));
	const cJSON *cmd = cJSON_GetObjectItem(j, "command");
	assert_int_equal(cJSON_GetArraySize(cmd), 3);
	assert_string_equal(cJSON_GetArrayItem(cmd, 0)->valuestring, "/bin/sh");
	assert_string_equal(cJSON_GetArrayItem(cmd, 2)->valuestring,
			    "echo out; echo err >&2; exit 3");
	/* ISO 8601 UTC with milliseconds: 2024-01-02T03:04:05.678Z */
	const char *fin = json_str(j, "finishedAt");
	assert_non_null(fin);
	assert_int_equal(strlen(fin), 24);
	assert_int_equal(fin[23], 'Z');
	assert_int_equal(fin[19], '.');
	assert_true(cJSON_GetObjectItem(j, "durationMs")->valuedouble >= 0);
	cJSON_Delete(j);
	exec_free(&e);
	exec_free(&w);

	/* An argv command that succeeds; one killed by a signal. */
	char *argv_true[] = {"true", NULL};
	sl_exec_spec spec = {.argv = argv_true};
	start(ctx, id, &spec, &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	assert_int_equal(w.exit_code, 0);
	exec_free(&e);
	exec_free(&w);

	start_sh(ctx, id, "kill -9 $$", &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_int_equal(w.signal, SIGKILL);
	assert_int_equal(w.exit_code, 137);
	assert_false(w.oom_killed);
	j = view_exec_json(&w);
	assert_string_equal(json_str(j, "signal"), "SIGKILL");
	cJSON_Delete(j);
	exec_free(&e);
	exec_free(&w);

	/* While running: no exit code, no finish time. */
	start_sh(ctx, id, "sleep 30", &e);
	assert_int_equal(e.status, SL_EXEC_RUNNING);
	assert_true(e.pid > 1);
	j = view_exec_json(&e);
	assert_string_equal(json_str(j, "status"), "running");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "exitCode")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "finishedAt")));
	cJSON_Delete(j);

	/* The list has all four, oldest first. */
	sl_exec *list;
	size_t n;
	sl_err err = {0};
	assert_int_equal(exec_list(ctx, id, &list, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_string_equal(list[3].id, e.id);
	assert_int_equal(list[3].status, SL_EXEC_RUNNING);
	for (size_t i = 1; i < n; i++)
		assert_true(list[i - 1].started_ms <= list[i].started_ms);
	exec_free_list(list, n);
	exec_free(&e);

	/* Bad specs are refused without a record. */
	sl_exec_spec both = {.argv = argv_true, .shell = "true"};
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	assert_int_equal(exec_start(ctx, &sb, &both, &e, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	sl_exec_spec tty_stdin = {.shell = "true", .tty = true, .stdin_pipe = true};
	assert_int_equal(exec_start(ctx, &sb, &tty_stdin, &e, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	sandbox_free(&sb);
	assert_int_equal(exec_list(ctx, id, &list, &n, &err), 0);
	assert_int_equal(n, 4);
	exec_free_list(list, n);

	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_record_survives_its_starter(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_exec e, w;
	start_sh(ctx, id, "sleep 1; echo done; exit 7", &e);
	/* The starter goes away, as a daemon that is restarted does. */
	ctx_free(ctx);

	sl_ctx *ctx2 = ctx_new();
	sl_exec now;
	sl_err err = {0};
	assert_int_equal(exec_get(ctx2, id, e.id, &now, &err), 0);
	assert_int_equal(now.status, SL_EXEC_RUNNING);
	assert_int_equal(now.pid, e.pid);
	exec_free(&now);
	wait_done(ctx2, id, e.id, 15000, &w);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_int_equal(w.exit_code, 7);
	assert_true(w.finished_ms - w.started_ms >= 900);
	assert_log(ctx2, id, e.id, "stdout", "done\n");
	assert_log(ctx2, id, e.id, "stderr", "");
	/* Re-reading gives the same answer. */
	assert_int_equal(exec_get(ctx2, id, e.id, &now, &err), 0);
	assert_int_equal(now.exit_code, 7);
	assert_int_equal(now.finished_ms, w.finished_ms);
	exec_free(&now);
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx2);
}

static void test_timeout_enforced_by_init_without_starter(void **state)
{
	char *id = sandbox_new(NULL);
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	e2e_runtime_env();
	int64_t t0 = e2e_now_ms();
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* Start it and vanish: nobody on the host side is left to time it. */
		close(pp[0]);
		sl_ctx c;
		sl_sandbox sb;
		sl_exec e;
		sl_err err = {0};
		char *argv[] = {"sleep", "30", NULL};
		sl_exec_spec spec = {.argv = argv, .timeout_ms = 300};
		if (ctx_open(&c, &err) < 0 || sandbox_get(&c, id, &sb, &err) < 0 ||
		    exec_start(&c, &sb, &spec, &e, &err) < 0) {
			dprintf(pp[1], "ERR %s", err.msg);
			_exit(1);
		}
		dprintf(pp[1], "%s", e.id);
		_exit(0);
	}
	close(pp[1]);
	char eid[64] = "";
	ssize_t n = read(pp[0], eid, sizeof(eid) - 1);
	close(pp[0]);
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(n > 0);
	eid[n] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("starter failed: %s", eid);

	sl_ctx *ctx = ctx_new();
	sl_exec w;
	wait_done(ctx, id, eid, 10000, &w);
	int64_t elapsed = e2e_now_ms() - t0;
	assert_int_equal(w.status, SL_EXEC_TIMEOUT);
	assert_int_equal(w.signal, SIGKILL);
	assert_int_equal(w.exit_code, 137);
	assert_false(w.oom_killed);
	int64_t ran = w.finished_ms - w.started_ms;
	print_message("timeout 300 ms: killed after %lld ms (record), %lld ms since fork\n",
		      (long long)ran, (long long)elapsed);
	/* The record's start is stamped by the runtime around the spawn, init's deadline
	 * by init's own clock: allow a few ms either way. */
	assert_true(ran >= 280);
	assert_true(ran < 2000);
	assert_true(elapsed < 4000);
	cJSON *j = view_exec_json(&w);
	assert_string_equal(json_str(j, "status"), "timeout");
	cJSON_Delete(j);
	exec_free(&w);

	/* Its background children die with it: the whole group is killed. */
	sl_exec e;
	sl_exec_spec spec = {.shell = "sleep 60 & sleep 60", .timeout_ms = 200};
	start(ctx, id, &spec, &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_TIMEOUT);
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	sl_process *procs;
	size_t np = 0;
	sl_err err = {0};
	for (int i = 0; i < 50; i++) {
		assert_int_equal(sandbox_processes(ctx, &sb, &procs, &np, &err), 0);
		free(procs);
		if (np == 0)
			break;
		usleep(20000);
	}
	assert_int_equal(np, 0);
	sandbox_free(&sb);
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_stdin_pipe(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_err err = {0};
	sl_exec e, w;
	char *cat[] = {"cat", NULL};
	sl_exec_spec spec = {.argv = cat, .stdin_pipe = true};
	start(ctx, id, &spec, &e);
	assert_int_equal(exec_write_stdin(ctx, id, e.id, "ab", 2, &err), 0);
	assert_int_equal(exec_write_stdin(ctx, id, e.id, "c", 1, &err), 0);
	/* Between writes no writer is open, yet cat has not seen EOF: init holds it. */
	usleep(300000);
	assert_int_equal(exec_get(ctx, id, e.id, &w, &err), 0);
	assert_int_equal(w.status, SL_EXEC_RUNNING);
	exec_free(&w);
	assert_int_equal(exec_close_stdin(ctx, id, e.id, &err), 0);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	assert_int_equal(w.exit_code, 0);
	assert_log(ctx, id, e.id, "stdout", "abc");
	assert_int_equal(exec_write_stdin(ctx, id, e.id, "x", 1, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	exec_free(&w);
	exec_free(&e);

	/* More than a pipe holds: the writer waits for the reader. */
	size_t big = 1 << 20;
	char *data = malloc(big);
	memset(data, 'x', big);
	sl_exec_spec wc = {.shell = "wc -c", .stdin_pipe = true};
	start(ctx, id, &wc, &e);
	assert_int_equal(exec_write_stdin(ctx, id, e.id, data, big, &err), 0);
	free(data);
	assert_int_equal(exec_close_stdin(ctx, id, e.id, &err), 0);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	char *out = read_log(ctx, id, e.id, "stdout");
	assert_int_equal(strtoul(out, NULL, 10), big);
	free(out);
	exec_free(&w);
	exec_free(&e);

	/* A command that no longer reads stdin: the write is refused, not left hanging. */
	sl_exec_spec quit = {.shell = "exec 0<&-; sleep 30", .stdin_pipe = true};
	start(ctx, id, &quit, &e);
	usleep(200000);
	assert_int_equal(exec_write_stdin(ctx, id, e.id, "zz", 2, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_int_equal(exec_signal(ctx, id, e.id, SIGKILL, &err), 0);
	wait_done(ctx, id, e.id, 10000, &w);
	exec_free(&w);
	exec_free(&e);

	/* Without stdin_pipe, stdin is /dev/null and cannot be written. */
	start_sh(ctx, id, "cat; echo end", &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_log(ctx, id, e.id, "stdout", "end\n");
	assert_int_equal(exec_write_stdin(ctx, id, e.id, "x", 1, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	exec_free(&w);
	exec_free(&e);
	sandbox_rm(id);
	ctx_free(ctx);
}

static void expect_nostart(sl_ctx *ctx, const char *id, const sl_exec_spec *spec, int code,
			   const char *reason)
{
	sl_exec e, w;
	start(ctx, id, spec, &e);
	assert_int_equal(e.status, SL_EXEC_FAILED);
	assert_int_equal(e.exit_code, code);
	wait_done(ctx, id, e.id, 1000, &w);
	assert_int_equal(w.exit_code, code);
	char *err = read_log(ctx, id, e.id, "stderr");
	if (!e2e_contains(err, reason))
		fail_msg("stderr \"%s\" does not say \"%s\"", err, reason);
	free(err);
	exec_free(&e);
	exec_free(&w);
}

static void test_command_that_cannot_start(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	char *nosuch[] = {"nosuchcmd", NULL};
	char *passwd[] = {"/etc/passwd", NULL};
	char *pwd[] = {"pwd", NULL};
	expect_nostart(ctx, id, &(sl_exec_spec){.argv = nosuch}, 127,
		       "nosuchcmd: command not found");
	expect_nostart(ctx, id, &(sl_exec_spec){.argv = passwd}, 126, "Permission denied");
	expect_nostart(ctx, id, &(sl_exec_spec){.argv = pwd, .cwd = "/nonexistent"}, 126,
		       "working directory");
	expect_nostart(ctx, id, &(sl_exec_spec){.argv = pwd, .user = "nobody-here"}, 126,
		       "unknown user nobody-here");
	/* ... while good options work. */
	sl_exec e, w;
	start(ctx, id, &(sl_exec_spec){.argv = pwd, .cwd = "/tmp"}, &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	assert_log(ctx, id, e.id, "stdout", "/tmp\n");
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_signal_cancels(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_err err = {0};
	sl_exec e, w;
	start_sh(ctx, id, "sleep 30", &e);
	/* A wait that runs out is not an error: the record says running. */
	int64_t t0 = e2e_now_ms();
	assert_int_equal(exec_wait(ctx, id, e.id, 200, &w, &err), 0);
	assert_int_equal(w.status, SL_EXEC_RUNNING);
	assert_true(e2e_now_ms() - t0 >= 200);
	exec_free(&w);
	assert_int_equal(exec_signal(ctx, id, e.id, SIGTERM, &err), 0);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_CANCELLED);
	assert_int_equal(w.signal, SIGTERM);
	assert_int_equal(w.exit_code, 143);
	cJSON *j = view_exec_json(&w);
	assert_string_equal(json_str(j, "status"), "cancelled");
	assert_string_equal(json_str(j, "signal"), "SIGTERM");
	cJSON_Delete(j);
	/* Ended: a second signal is a conflict, not a silent success. */
	assert_int_equal(exec_signal(ctx, id, e.id, SIGKILL, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	exec_free(&e);
	exec_free(&w);

	/* Another signal is passed on without marking the execution cancelled. */
	start_sh(ctx, id,
		 "trap 'echo got USR1; exit 5' USR1; echo ready; while :; do sleep 0.05; done", &e);
	char *out = NULL;
	for (int i = 0; i < 250; i++) { /* the trap is set once "ready" is out */
		free(out);
		out = read_log(ctx, id, e.id, "stdout");
		if (*out)
			break;
		usleep(20000);
	}
	assert_string_equal(out, "ready\n");
	free(out);
	assert_int_equal(exec_signal(ctx, id, e.id, SIGUSR1, &err), 0);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_int_equal(w.exit_code, 5);
	assert_log(ctx, id, e.id, "stdout", "ready\ngot USR1\n");
	exec_free(&e);
	exec_free(&w);

	assert_int_equal(exec_signal_from_name("SIGTERM"), SIGTERM);
	assert_int_equal(exec_signal_from_name("kill"), SIGKILL);
	assert_int_equal(exec_signal_from_name("2"), SIGINT);
	assert_int_equal(exec_signal_from_name("SIGNOPE"), -1);
	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_oom_killed(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new("32Mi");
	sl_exec e, w;
	start_sh(ctx, id, "dd if=/dev/zero of=/dev/null bs=64M count=1", &e);
	wait_done(ctx, id, e.id, 30000, &w);
	assert_int_equal(w.signal, SIGKILL);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_true(w.oom_killed);
	cJSON *j = view_exec_json(&w);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "oomKilled")));
	cJSON_Delete(j);
	exec_free(&e);
	exec_free(&w);

	/* A later plain SIGKILL is not blamed on the OOM killer that fired before it. */
	start_sh(ctx, id, "kill -9 $$", &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.signal, SIGKILL);
	assert_false(w.oom_killed);
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx);
}

struct waiter {
	sl_ctx *ctx;
	const char *sid, *eid;
	int rc;
	sl_exec_status status;
	int exit_code;
	int64_t returned_ms;
};

/* Wall-clock ms, the clock of the records' times. */
static int64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	sl_exec e;
	sl_err err = {0};
	w->rc = exec_wait(w->ctx, w->sid, w->eid, 20000, &e, &err);
	w->returned_ms = real_ms();
	if (w->rc == 0) {
		w->status = e.status;
		w->exit_code = e.exit_code;
		exec_free(&e);
	}
	return NULL;
}

static int64_t cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static void test_many_waiters(void **state)
{
	enum { N = 16 };
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_exec e;
	start_sh(ctx, id, "sleep 1.5; exit 4", &e);
	struct waiter ws[N];
	pthread_t th[N];
	int64_t cpu0 = cpu_ms();
	for (int i = 0; i < N; i++) {
		ws[i] = (struct waiter){.ctx = ctx, .sid = id, .eid = e.id, .rc = -2};
		assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &ws[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	int64_t cpu = cpu_ms() - cpu0;
	sl_exec w;
	sl_err err = {0};
	assert_int_equal(exec_get(ctx, id, e.id, &w, &err), 0);
	int64_t latest = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(ws[i].rc, 0);
		assert_int_equal(ws[i].status, SL_EXEC_FAILED);
		assert_int_equal(ws[i].exit_code, 4);
		if (ws[i].returned_ms > latest)
			latest = ws[i].returned_ms;
	}
	print_message("%d waiters: last returned %lld ms after the exit, %lld ms CPU in all\n", N,
		      (long long)(latest - w.finished_ms), (long long)cpu);
	assert_true(latest - w.finished_ms < 1000);
	/* Waiting 1.5 s costs next to nothing: no polling loop. */
	assert_true(cpu < 300);
	exec_free(&w);
	exec_free(&e);
	sandbox_rm(id);
	ctx_free(ctx);
}

static bool find_process(sl_ctx *ctx, const sl_sandbox *sb, const char *cmd, sl_process *out)
{
	sl_process *list;
	size_t n;
	sl_err err = {0};
	if (sandbox_processes(ctx, sb, &list, &n, &err) < 0)
		fail_msg("sandbox_processes: %s", err.msg);
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		assert_true(list[i].pid > 1); /* init is not listed */
		assert_true(list[i].host_pid > 1);
		if (!found && !strcmp(list[i].cmdline, cmd)) {
			*out = list[i];
			found = true;
		}
	}
	free(list);
	return found;
}

static void test_processes_and_kill(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	sl_err err = {0};
	sl_exec e, w;
	/* The command ends at once; the sleep it started in the background lives on. */
	start_sh(ctx, id, "sleep 300 & echo $! > /tmp/bg.pid", &e);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	sl_process p = {0};
	for (int i = 0; i < 50 && !find_process(ctx, &sb, "sleep 300", &p); i++)
		usleep(20000);
	assert_string_equal(p.cmdline, "sleep 300");
	assert_string_equal(p.exec_id, e.id);
	assert_int_equal(p.pgid, e.pid);
	assert_true(p.pid != p.host_pid); /* its own pid namespace */

	/* The pid inside is the one the shell saw. */
	sl_exec c;
	start_sh(ctx, id, "cat /tmp/bg.pid", &c);
	wait_done(ctx, id, c.id, 10000, &w);
	char *seen = read_log(ctx, id, c.id, "stdout");
	assert_int_equal(atoi(seen), p.pid);
	free(seen);
	exec_free(&c);
	exec_free(&w);

	assert_int_equal(sandbox_kill_process(ctx, &sb, 1, SIGKILL, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(sandbox_kill_process(ctx, &sb, 99999, SIGKILL, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(sandbox_kill_process(ctx, &sb, p.pid, SIGKILL, &err), 0);
	/* Gone means gone from the list by pid: a dying process loses its command line
	 * before it stops existing (and then still takes signals). */
	bool alive = true;
	for (int i = 0; i < 100 && alive; i++) {
		sl_process *list;
		size_t n;
		assert_int_equal(sandbox_processes(ctx, &sb, &list, &n, &err), 0);
		alive = false;
		for (size_t k = 0; k < n; k++)
			alive |= list[k].pid == p.pid;
		free(list);
		if (alive)
			usleep(20000);
	}
	assert_false(alive);
	assert_int_equal(sandbox_kill_process(ctx, &sb, p.pid, SIGKILL, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	sandbox_free(&sb);
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_tty(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_exec e, w;
	sl_exec_spec spec = {
	    .shell = "stty size; tty; read x; echo got $x", .tty = true, .rows = 30, .cols = 100};
	start(ctx, id, &spec, &e);
	assert_true(e.master >= 0);
	assert_int_equal(write(e.master, "hey\n", 4), 4);
	char buf[4096];
	size_t len = 0;
	for (;;) {
		struct pollfd pf = {e.master, POLLIN, 0};
		if (poll(&pf, 1, 10000) <= 0)
			break;
		ssize_t n = read(e.master, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) /* EIO once the command and its pty are gone */
			break;
		len += n;
	}
	buf[len] = '\0';
	close(e.master);
	if (!e2e_contains(buf, "30 100") || !e2e_contains(buf, "/dev/pts/") ||
	    !e2e_contains(buf, "got hey"))
		fail_msg("pty output: %s", buf);
	wait_done(ctx, id, e.id, 10000, &w);
	assert_int_equal(w.status, SL_EXEC_COMPLETED);
	/* Not logged: the caller relays the pty. */
	assert_log(ctx, id, e.id, "stdout", "");
	exec_free(&e);
	exec_free(&w);
	sandbox_rm(id);
	ctx_free(ctx);
}

/* The host pid of the sandbox's init, from its record. */
static pid_t init_host_pid(sl_ctx *ctx, const char *id)
{
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	pid_t pid = sb.init_pid;
	sandbox_free(&sb);
	assert_true(pid > 1);
	return pid;
}

/* A PING on CONN and its PONG: 0, or -1 with init's side of CONN gone. */
static int ping(int conn)
{
	struct sl_msg_hdr rq = {SL_PROTO_MAGIC, SL_REQ_PING};
	struct sl_rep rep;
	int passed = -1;
	sl_err err = {0};
	if (initctl_send(conn, &rq, sizeof(rq), NULL, 0) < 0)
		return -1;
	if (initctl_recv(conn, &rep, &passed, 5000, &err) != 0)
		return -1;
	if (passed >= 0)
		close(passed);
	return rep.hdr.type == SL_REP_PONG ? 0 : -1;
}

/* A client that leaves with init's reply unread resets the connection: init's read
 * fails (ECONNRESET), and must close nothing but that connection. A failed recvmsg
 * leaves the control buffer as it was, holding the fd numbers of the last spawn, which
 * init has closed and reused (here, for another client's connection). */
static void test_init_survives_a_reset_connection(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_err err = {0};
	sl_exec e, w;
	for (int round = 0; round < 3; round++) {
		/* A spawn passes init four fds, all closed again once the command ends. */
		start_sh(ctx, id, "true", &e);
		wait_done(ctx, id, e.id, 10000, &w);
		assert_int_equal(w.status, SL_EXEC_COMPLETED);
		exec_free(&e);
		exec_free(&w);
		/* The next client's connection takes one of those numbers in init. */
		int kept = initctl_connect(ctx, id, &err);
		assert_true(kept >= 0);
		assert_int_equal(ping(kept), 0);
		/* One leaves with its PONG unread. */
		int gone = initctl_connect(ctx, id, &err);
		assert_true(gone >= 0);
		struct sl_msg_hdr rq = {SL_PROTO_MAGIC, SL_REQ_PING};
		assert_int_equal(initctl_send(gone, &rq, sizeof(rq), NULL, 0), 0);
		struct pollfd p = {gone, POLLIN, 0};
		assert_int_equal(poll(&p, 1, 5000), 1);
		close(gone);
		/* init has read the reset by the time a fresh client gets its answer. */
		int probe = initctl_connect(ctx, id, &err);
		assert_true(probe >= 0);
		assert_int_equal(ping(probe), 0);
		close(probe);
		/* The other connection is still init's. */
		assert_int_equal(ping(kept), 0);
		close(kept);
	}
	sandbox_rm(id);
	ctx_free(ctx);
}

static void test_dead_init_and_destroyed_sandbox(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_err err = {0};
	sl_exec e, w;
	start_sh(ctx, id, "sleep 30", &e);
	int64_t t0 = e2e_now_ms();
	assert_int_equal(kill(init_host_pid(ctx, id), SIGKILL), 0);
	/* The waiter wakes when init's copy of the exit record closes. */
	wait_done(ctx, id, e.id, 10000, &w);
	print_message("dead init noticed after %lld ms\n", (long long)(e2e_now_ms() - t0));
	assert_true(e2e_now_ms() - t0 < 3000);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	assert_int_equal(w.signal, SIGKILL);
	exec_free(&w);
	/* Settled for good: the same answer again. */
	assert_int_equal(exec_get(ctx, id, e.id, &w, &err), 0);
	assert_int_equal(w.status, SL_EXEC_FAILED);
	exec_free(&w);
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	assert_int_equal(exec_start(ctx, &sb, &(sl_exec_spec){.shell = "true"}, &w, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	sandbox_free(&sb);

	/* Destroyed: its run dir, executions included, is gone. */
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(exec_get(ctx, id, e.id, &w, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(exec_get(ctx, "sbx_aaaaaaaaaaaaaaaaaaaa", e.id, &w, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(exec_get(ctx, id, "../../etc", &w, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	exec_free(&e);
	free(id);
	ctx_free(ctx);
}

static void exit_record_path(sl_ctx *ctx, const char *id, const char *eid, char *p, size_t len)
{
	char run[PATH_MAX];
	state_run_dir(&ctx->cfg, id, run, sizeof(run));
	snprintf(p, len, "%s/execs/%s/exit", run, eid);
}

/* The exit record of execution EID, whole. */
static char *exit_record(sl_ctx *ctx, const char *id, const char *eid)
{
	char p[PATH_MAX + 64];
	exit_record_path(ctx, id, eid, p, sizeof(p));
	return e2e_read_file(p);
}

static void exit_record_set(sl_ctx *ctx, const char *id, const char *eid, const char *text)
{
	char p[PATH_MAX + 64];
	exit_record_path(ctx, id, eid, p, sizeof(p));
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The starter records the pid as a line of the exit record (exec.json is written once);
 * the lines count in any order, and an unknown one in the exit line's place is a garbled
 * record, not a result. */
static void test_pid_in_the_exit_record(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_err err = {0};
	sl_exec e, g;
	start_sh(ctx, id, "sleep 30", &e);
	assert_true(e.pid > 1);
	char want[32];
	snprintf(want, sizeof(want), "pid %d\n", (int)e.pid);
	char *rec = exit_record(ctx, id, e.id);
	assert_string_equal(rec, want);
	free(rec);
	assert_int_equal(exec_get(ctx, id, e.id, &g, &err), 0);
	assert_int_equal(g.status, SL_EXEC_RUNNING);
	assert_int_equal(g.pid, e.pid);
	exec_free(&g);
	/* The pid found there is the one a signal goes to. */
	assert_int_equal(exec_signal(ctx, id, e.id, SIGKILL, &err), 0);
	wait_done(ctx, id, e.id, 10000, &g);
	assert_int_equal(g.status, SL_EXEC_CANCELLED);
	assert_int_equal(g.signal, SIGKILL);
	assert_int_equal(g.pid, e.pid);
	exec_free(&g);
	rec = exit_record(ctx, id, e.id);
	assert_int_equal(strncmp(rec, want, strlen(want)), 0);
	assert_non_null(strstr(rec, "\nexit 9\n"));
	free(rec);

	/* A pid line after the exit line (the command ended before the starter wrote it). */
	exit_record_set(ctx, id, e.id, "exit 256\npid 42\n");
	assert_int_equal(exec_get(ctx, id, e.id, &g, &err), 0);
	assert_int_equal(g.exit_code, 1);
	assert_int_equal(g.pid, 42);
	exec_free(&g);
	/* Garbage where the exit line belongs: failed, exit code unknown. */
	exit_record_set(ctx, id, e.id, "pid 42\nbogus\nexit 0\n");
	assert_int_equal(exec_get(ctx, id, e.id, &g, &err), 0);
	assert_int_equal(g.status, SL_EXEC_FAILED);
	assert_int_equal(g.exit_code, -1);
	exec_free(&g);
	exec_free(&e);
	sandbox_rm(id);
	ctx_free(ctx);
}

/* A spawn flagged SL_SPAWN_LAST: init closes the connection after the command's EXITED;
 * without the flag the connection stays open for more requests. */
static void test_last_spawn_closes_the_connection(void **state)
{
	sl_ctx *ctx = ctx_new();
	char *id = sandbox_new(NULL);
	sl_sandbox sb;
	get_sandbox(ctx, id, &sb);
	for (int last = 0; last < 2; last++) {
		char *argv[] = {"true", NULL};
		initctl_spawn isp = {.argv = argv, .flags = last ? SL_SPAWN_LAST : 0};
		char *req = NULL;
		size_t len = 0;
		sl_err err = {0};
		assert_int_equal(initctl_build_spawn(&sb, &isp, &req, &len, &err), 0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int fds[3] = {null, null, null};
		int conn = initctl_connect(ctx, id, &err);
		assert_true(conn >= 0);
		assert_int_equal(initctl_send(conn, req, len, fds, 3), 0);
		close(null);
		free(req);
		struct sl_rep rep;
		int passed = -1;
		assert_int_equal(initctl_recv(conn, &rep, &passed, 5000, &err), 0);
		assert_int_equal(rep.hdr.type, SL_REP_STARTED);
		assert_int_equal(initctl_recv(conn, &rep, &passed, 5000, &err), 0);
		assert_int_equal(rep.hdr.type, SL_REP_EXITED);
		/* Closed by init (a read says end of file), or still open (nothing to read). */
		struct pollfd p = {conn, POLLIN, 0};
		int r = poll(&p, 1, last ? 5000 : 300);
		char b;
		if (last) {
			assert_int_equal(r, 1);
			assert_int_equal(recv(conn, &b, 1, MSG_DONTWAIT), 0);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(ping(conn), 0);
		}
		close(conn);
	}
	sandbox_free(&sb);
	sandbox_rm(id);
	ctx_free(ctx);
}

/* A sandbox launched to hibernate: its init's socket is an abstract name in its network
 * namespace, which the host reaches (ping above) and a process of the sandbox must not:
 * one in its pid and network namespaces connects, and init closes the connection. */
static void test_hibernate_init_refuses_the_sandbox(void **state)
{
	sl_ctx *ctx = ctx_new();
	hib = true;
	char *id = sandbox_new(NULL);
	hib = false;
	sl_sandbox sb;
	sl_err err = {0};
	get_sandbox(ctx, id, &sb);
	assert_true(sb.hibernate);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sandboxes/%s/init.sock", getenv("SANDLOT_RUN_DIR"), id);
	assert_int_equal(access(p, F_OK), -1); /* nothing on the host */
	int conn = initctl_connect(ctx, id, &err);
	if (conn < 0)
		fail_msg("initctl_connect: %s", err.msg);
	assert_int_equal(ping(conn), 0);
	close(conn);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char ns[64];
		snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)sb.init_pid);
		int net = open(ns, O_RDONLY);
		snprintf(ns, sizeof(ns), "/proc/%d/ns/pid", (int)sb.init_pid);
		int pid = open(ns, O_RDONLY);
		if (net < 0 || pid < 0 || setns(net, CLONE_NEWNET) < 0 ||
		    setns(pid, CLONE_NEWPID) < 0)
			_exit(2);
		pid_t in = fork(); /* in the sandbox's pid namespace */
		if (in == 0) {
			struct sockaddr_un a = {.sun_family = AF_UNIX};
			memcpy(a.sun_path + 1, SL_INIT_ABSTRACT, sizeof(SL_INIT_ABSTRACT) - 1);
			socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 +
					sizeof(SL_INIT_ABSTRACT) - 1;
			int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
			if (s < 0 || connect(s, (struct sockaddr *)&a, len) < 0)
				_exit(3); /* it listens: the connect itself succeeds */
			_exit(ping(s) == 0 ? 4 : 0);
		}
		int st;
		_exit(in > 0 && waitpid(in, &st, 0) == in && WIFEXITED(st) ? WEXITSTATUS(st) : 5);
	}
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	sandbox_free(&sb);
	sandbox_rm(id);
	ctx_free(ctx);
}

E2E_HIB_TEST(test_exit_codes_and_separate_logs, hib)
E2E_HIB_TEST(test_record_survives_its_starter, hib)
E2E_HIB_TEST(test_stdin_pipe, hib)
E2E_HIB_TEST(test_signal_cancels, hib)
E2E_HIB_TEST(test_processes_and_kill, hib)
E2E_HIB_TEST(test_tty, hib)
E2E_HIB_TEST(test_last_spawn_closes_the_connection, hib)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_exit_codes_and_separate_logs),
	    E2E_TEST(test_record_survives_its_starter),
	    E2E_TEST(test_timeout_enforced_by_init_without_starter),
	    E2E_TEST(test_stdin_pipe),
	    E2E_TEST(test_command_that_cannot_start),
	    E2E_TEST(test_signal_cancels),
	    E2E_TEST(test_oom_killed),
	    E2E_TEST(test_many_waiters),
	    E2E_TEST(test_processes_and_kill),
	    E2E_TEST(test_tty),
	    E2E_TEST(test_init_survives_a_reset_connection),
	    E2E_TEST(test_dead_init_and_destroyed_sandbox),
	    E2E_TEST(test_pid_in_the_exit_record),
	    E2E_TEST(test_last_spawn_closes_the_connection),
	    E2E_TEST(test_hibernate_init_refuses_the_sandbox),
	    E2E_TEST(test_exit_codes_and_separate_logs_hibernate),
	    E2E_TEST(test_record_survives_its_starter_hibernate),
	    E2E_TEST(test_stdin_pipe_hibernate),
	    E2E_TEST(test_signal_cancels_hibernate),
	    E2E_TEST(test_processes_and_kill_hibernate),
	    E2E_TEST(test_tty_hibernate),
	    E2E_TEST(test_last_spawn_closes_the_connection_hibernate),
	};
	return e2e_run_tests(tests);
}

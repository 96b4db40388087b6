/* test_hibernate.c — end-to-end checks of hibernate and resume (runtime/hibernate.c,
 * docs/hibernate.md) through the CLI, on sandboxes created with --hibernate: a process
 * with state only in memory goes on after a resume; nothing of the sandbox runs or is
 * charged while it is hibernated; a sandbox of the usual launch is refused and runs on; a
 * delete while hibernated leaves nothing (the per-test leak check). Skipped when the
 * criu binary is absent (scripts/setup builds it). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "hibernate.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool have_criu(void)
{
	if (access(hibernate_criu(), X_OK) == 0)
		return true;
	print_message("skipped: no criu at %s (scripts/setup builds it)\n", hibernate_criu());
	return false;
}

/* <state>/WHAT/ID (WHAT/ID/REST with REST). */
static char *path_of(const char *what, const char *id, const char *rest)
{
	char *p;
	assert_true(asprintf(&p, "%s/%s/%s%s", getenv("SANDLOT_STATE_DIR"), what, id, rest) > 0);
	return p;
}

static char *status_of(const char *id)
{
	char *out = e2e_sandlot_ok("ls", "-a", NULL);
	const char *line = strstr(out, id);
	assert_non_null(line);
	char st[32] = "";
	assert_int_equal(sscanf(line + strlen(id), " %*s %31s", st), 1);
	free(out);
	return strdup(st);
}

/* "TOKEN COUNT" the loop last wrote, read from the host's side of the sandbox's layer. */
static void read_counter(const char *id, char token[32], long *count)
{
	char *p = path_of("store/sandboxes", id, "/upper/c");
	char buf[128] = "";
	for (int i = 0; i < 100; i++) {
		FILE *f = fopen(p, "r");
		if (f) {
			bool ok = fgets(buf, sizeof(buf), f) &&
				  sscanf(buf, "%31s %ld", token, count) == 2;
			fclose(f);
			if (ok)
				break;
		}
		usleep(50000);
	}
	free(p);
	assert_true(*count > 0);
}

static char *hibernate_sandbox(void)
{
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", NULL);
	/* State only in memory: a token made at start, a count; written every 0.2 s. */
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "t=$RANDOM$RANDOM$RANDOM; (i=0; while true; do i=$((i+1)); "
			    "echo \"$t $i\" > /c.new; mv /c.new /c; sleep 0.2; done) "
			    "</dev/null >/dev/null 2>&1 &",
			    NULL));
	return id;
}

static void test_hibernate_and_resume(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n1, n2, n3;
	usleep(600000);
	read_counter(id, tok, &n1);
	double t0 = now_s();
	free(e2e_sandlot_ok("hibernate", id, NULL));
	double t1 = now_s();
	char *st = status_of(id);
	assert_string_equal(st, "hibernated");
	free(st);
	/* Nothing runs: the count stands still, and its cgroups (tasks, memory charge) are
	 * gone with its processes. */
	read_counter(id, tok2, &n2);
	usleep(700000);
	read_counter(id, tok2, &n3);
	assert_int_equal(n2, n3);
	assert_string_equal(tok, tok2);
	char *cg = NULL;
	assert_true(asprintf(&cg, "/sys/fs/cgroup/memory/sandlot/%s", id) > 0);
	assert_int_equal(access(cg, F_OK), -1);
	char *img = path_of("hibernate", id, "");
	assert_int_equal(access(img, F_OK), 0);
	/* Back: the same token, the count going on from where it stood. */
	double t2 = now_s();
	free(e2e_sandlot_ok("resume", id, NULL));
	double t3 = now_s();
	print_message("hibernate %.3f s, resume %.3f s (sandlot hibernate|resume, as processes)\n",
		      t1 - t0, t3 - t2);
	st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(access(img, F_OK), -1); /* images deleted */
	assert_int_equal(access(cg, F_OK), 0);	 /* back in its cgroups */
	usleep(1000000);
	read_counter(id, tok2, &n3);
	assert_string_equal(tok, tok2);
	assert_true(n3 > n2);
	char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/c", NULL);
	assert_non_null(strstr(out, tok));
	free(out);
	free(cg);
	free(img);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void test_hibernate_refused_for_the_usual_launch(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "hibernate", id, NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	char *out = e2e_sandlot_ok("exec", id, "--", "echo", "still", NULL);
	assert_string_equal(out, "still");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* The per-test leak check (e2e_test_teardown) sees any cgroup, mount, process or run
 * file left; the images are looked for here. */
static void test_delete_while_hibernated(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	usleep(400000);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	char *img = path_of("hibernate", id, "");
	assert_int_equal(access(img, F_OK), 0);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(access(img, F_OK), -1);
	free(img);
	free(id);
}

/* GET or POST PATH of sandbox ID on daemon D: the sandbox's status (the body's). */
static char *api_status(e2e_daemon *d, const char *method, const char *id, const char *verb)
{
	char *p = e2e_printf("/v1/sandboxes/%s%s%s", id, verb ? "/" : "", verb ? verb : "");
	e2e_req q = {.method = method, .path = p, .d = d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	if (r.status != 200)
		fail_msg("%s %s: %ld %s", method, p, r.status, r.body);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(r.json, "status");
	assert_true(cJSON_IsString(st));
	char *out = strdup(st->valuestring);
	e2e_resp_free(&r);
	free(p);
	return out;
}

/* A hibernated sandbox is a record and images on disk: daemons started (and stopped)
 * while it is hibernated see it hibernated, not crashed, and the API's resume brings it
 * back with its memory. */
static void test_hibernated_across_daemon_restarts(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n1, n2;
	usleep(600000);
	read_counter(id, tok, &n1);
	free(e2e_sandlot_ok("hibernate", id, NULL));
	read_counter(id, tok, &n1);
	char *sock = e2e_printf("%s/hib.sock", e2e_root());
	for (int i = 0; i < 2; i++) {
		e2e_daemon d;
		e2e_daemon_start(&d, sock, false, NULL);
		char *st = api_status(&d, "GET", id, NULL);
		assert_string_equal(st, "hibernated");
		free(st);
		if (i == 1) {
			st = api_status(&d, "POST", id, "resume");
			assert_string_equal(st, "running");
			free(st);
		}
		e2e_daemon_stop(&d);
	}
	usleep(1000000);
	read_counter(id, tok2, &n2);
	assert_string_equal(tok, tok2);
	assert_true(n2 > n1);
	free(sock);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* Sandbox ID's loop writes token TOK and its count goes up, half a second apart. */
static void counting_on(const char *id, const char *tok)
{
	char t1[32], t2[32];
	long n1, n2;
	read_counter(id, t1, &n1);
	usleep(500000);
	read_counter(id, t2, &n2);
	assert_string_equal(t1, tok);
	assert_string_equal(t2, tok);
	assert_true(n2 > n1);
}

/* The host uid the first task of sandbox ID's memory cgroup runs as. */
static uid_t task_uid(const char *id)
{
	char *p = e2e_printf("/sys/fs/cgroup/memory/sandlot/%s/tasks", id);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int pid = 0;
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	free(p);
	char *sp = e2e_printf("/proc/%d", pid);
	struct stat st;
	assert_int_equal(stat(sp, &st), 0);
	free(sp);
	return st.st_uid;
}

static bool exists_in(const char *id, const char *path)
{
	char *p = path_of("store/sandboxes", id, path);
	bool r = access(p, F_OK) == 0;
	free(p);
	return r;
}

/* The entries of <state>/hibernate (0 when it is absent). */
static int images_left(void)
{
	char *cmd =
	    e2e_printf("ls -A %s/hibernate 2>/dev/null | wc -l", getenv("SANDLOT_STATE_DIR"));
	FILE *pf = popen(cmd, "r");
	int left = -1;
	assert_int_equal(fscanf(pf, "%d", &left), 1);
	pclose(pf);
	free(cmd);
	return left;
}

/* A fork with memory: each copy runs the source's loop on, with its token and a count
 * from the fork's instant, under its own uid range and cgroup; the source runs on;
 * writes after the fork are each sandbox's own. */
static void test_fork_with_memory(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo before > /f", NULL));
	char tok[32], tok2[32];
	long n0, n1;
	usleep(600000);
	read_counter(id, tok, &n0);
	double t0 = now_s();
	char *out = e2e_sandlot_ok("fork", id, "-n", "2", "--memory", NULL);
	double t1 = now_s();
	print_message("fork --memory of 2 copies: %.3f s (sandlot fork, as a process)\n", t1 - t0);
	char fk[2][64];
	assert_int_equal(sscanf(out, "%63s %63s", fk[0], fk[1]), 2);
	free(out);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo src > /after", NULL));
	usleep(1000000);
	for (int i = 0; i < 2; i++) {
		read_counter(fk[i], tok2, &n1);
		assert_string_equal(tok, tok2);
		assert_true(n1 >= n0);
		counting_on(fk[i], tok); /* it runs */
		char *f = e2e_sandlot_ok("exec", fk[i], "--", "cat", "/f", NULL);
		assert_string_equal(f, "before");
		free(f);
		/* The loop is pid 2 or more inside, as in the source; its init is pid 1. */
		char *ps =
		    e2e_sandlot_ok("exec", fk[i], "--", "sh", "-c", "cat /proc/1/comm", NULL);
		assert_string_equal(ps, "sandlot-init");
		free(ps);
		char *hn = e2e_sandlot_ok("exec", fk[i], "--", "hostname", NULL);
		assert_string_equal(hn, fk[i]); /* its own, not the source's */
		free(hn);
		free(e2e_sandlot_ok("exec", fk[i], "--", "sh", "-c",
				    i ? "echo one > /mine1" : "echo zero > /mine0", NULL));
		assert_int_not_equal(task_uid(fk[i]), task_uid(id));
	}
	assert_int_not_equal(task_uid(fk[0]), task_uid(fk[1]));
	/* Private: the source's write after the fork, each copy's own. */
	assert_false(exists_in(fk[0], "/upper/after"));
	assert_false(exists_in(fk[1], "/upper/after"));
	assert_true(exists_in(fk[0], "/upper/mine0"));
	assert_false(exists_in(fk[1], "/upper/mine0"));
	assert_false(exists_in(id, "/upper/mine0"));
	assert_false(exists_in(id, "/upper/mine1"));
	counting_on(id, tok); /* the source runs on */
	char *st = status_of(fk[0]);
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(images_left(), 0); /* no dump left behind (the fork base's) */
	free(e2e_sandlot_ok("rm", "-f", fk[0], fk[1], id, NULL));
	free(id);
}

/* The lines of TEXT (freed). */
static size_t lines_of(char *text)
{
	size_t n = 0;
	for (const char *c = text; *c; c++)
		n += *c == '\n';
	free(text);
	return n;
}

/* Refused for a sandbox of the usual launch, saying why; no copy left, the source runs. */
static void test_fork_with_memory_refused(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	size_t before = lines_of(e2e_sandlot_ok("ls", "-a", NULL));
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "fork", id, "--memory", NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	assert_int_equal(lines_of(e2e_sandlot_ok("ls", "-a", NULL)), before);
	char *st = status_of(id);
	assert_string_equal(st, "running");
	free(st);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A criu that fails at STEP ("dump" or "restore") and runs the real one otherwise. */
static char *failing_criu(const char *step)
{
	char *path = e2e_printf("%s/criu-fails-%s", e2e_root(), step);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"#!/bin/sh\n[ \"$1\" = %s ] && { echo 'Error (test): refused' >&2; exit 1; }\n"
		"exec %s \"$@\"\n",
		step, hibernate_criu());
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

/* CRIU failing at the dump, then at the restore of the copies: the fork fails, no copy
 * and no images are left (nor cgroup, mount or process: the per-test leak check), and
 * the source runs on. */
static void test_fork_with_memory_failures(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32];
	long n0;
	usleep(600000);
	read_counter(id, tok, &n0);
	size_t before = lines_of(e2e_sandlot_ok("ls", "-a", NULL));
	const char *steps[] = {"dump", "restore"};
	for (int i = 0; i < 2; i++) {
		char *criu = failing_criu(steps[i]);
		setenv("SANDLOT_CRIU", criu, 1);
		e2e_result r;
		int rc = e2e_sandlot(&r, NULL, 0, "fork", id, "-n", "2", "--memory", NULL);
		unsetenv("SANDLOT_CRIU");
		assert_int_not_equal(rc, 0);
		print_message("%s: %s", steps[i], r.err);
		assert_non_null(strstr(r.err, "criu failed"));
		e2e_result_free(&r);
		assert_int_equal(lines_of(e2e_sandlot_ok("ls", "-a", NULL)), before);
		assert_int_equal(images_left(), 0);
		counting_on(id, tok);
		free(criu);
	}
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A checkpoint with memory: a rollback to it brings the files back and the processes as
 * they were at it (the loop's count goes back to the checkpoint's and on from there), as
 * often as asked; its dump goes with it. */
static void test_checkpoint_with_memory(void **state)
{
	if (!have_criu())
		skip();
	char *id = hibernate_sandbox();
	char tok[32], tok2[32];
	long n0, n1, n2;
	usleep(600000);
	read_counter(id, tok, &n0);
	double t0 = now_s();
	free(e2e_sandlot_ok("checkpoint", "create", id, "cp", "--memory", NULL));
	print_message("checkpoint create --memory: %.3f s (as a process)\n", now_s() - t0);
	char *ls = e2e_sandlot_ok("checkpoint", "ls", id, "--format", "json", NULL);
	assert_non_null(strstr(ls, "\"memory\":\ttrue") ? ls : strstr(ls, "\"memory\": true"));
	free(ls);
	assert_int_equal(images_left(), 1);
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c", "echo later > /later", NULL));
	for (int round = 0; round < 2; round++) {
		usleep(2000000); /* ten ticks past the checkpoint */
		read_counter(id, tok2, &n1);
		assert_true(n1 >= n0 + 8);
		double t1 = now_s();
		free(e2e_sandlot_ok("rollback", id, "cp", NULL));
		print_message("rollback to it: %.3f s (as a process)\n", now_s() - t1);
		usleep(400000);
		read_counter(id, tok2, &n2);
		print_message("round %d: count %ld at the checkpoint, %ld before the rollback, %ld "
			      "after\n",
			      round, n0, n1, n2);
		assert_string_equal(tok, tok2);
		assert_true(n2 < n1 - 4); /* back to the checkpoint's count */
		assert_true(n2 >= n0);
		assert_false(exists_in(id, "/upper/later"));
		counting_on(id, tok); /* and on from there */
		char *st = status_of(id);
		assert_string_equal(st, "running");
		free(st);
		char *out = e2e_sandlot_ok("exec", id, "--", "cat", "/proc/1/comm", NULL);
		assert_string_equal(out, "sandlot-init");
		free(out);
	}
	free(e2e_sandlot_ok("checkpoint", "rm", id, "cp", NULL));
	assert_int_equal(images_left(), 0);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
	/* A delete takes the dumps of its checkpoints with it. (A fresh sandbox: one whose
	 * processes CRIU restored cannot be dumped again here, docs/hibernate.md.) */
	id = hibernate_sandbox();
	free(e2e_sandlot_ok("checkpoint", "create", id, "cp2", "--memory", NULL));
	assert_int_equal(images_left(), 1);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	assert_int_equal(images_left(), 0);
	free(id);
	/* Refused for a sandbox of the usual launch, nothing made. */
	id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	e2e_result r;
	assert_int_not_equal(
	    e2e_sandlot(&r, NULL, 0, "checkpoint", "create", id, "cp", "--memory", NULL), 0);
	assert_non_null(strstr(r.err, "\"hibernate\": true"));
	e2e_result_free(&r);
	char *none = e2e_sandlot_ok("checkpoint", "ls", id, "--format", "json", NULL);
	assert_string_equal(none, "[]");
	free(none);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_hibernate_and_resume),
	    E2E_TEST(test_hibernate_refused_for_the_usual_launch),
	    E2E_TEST(test_delete_while_hibernated),
	    E2E_TEST(test_hibernated_across_daemon_restarts),
	    E2E_TEST(test_fork_with_memory),
	    E2E_TEST(test_fork_with_memory_refused),
	    E2E_TEST(test_fork_with_memory_failures),
	    E2E_TEST(test_checkpoint_with_memory),
	};
	return e2e_run_tests(tests);
}

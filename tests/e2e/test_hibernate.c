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

/* State only in memory: a token made at start, a count; written every 0.2 s. */
static void start_counter(const char *id)
{
	free(e2e_sandlot_ok("exec", id, "--", "sh", "-c",
			    "t=$RANDOM$RANDOM$RANDOM; (i=0; while true; do i=$((i+1)); "
			    "echo \"$t $i\" > /c.new; mv /c.new /c; sleep 0.2; done) "
			    "</dev/null >/dev/null 2>&1 &",
			    NULL));
}

static char *hibernate_sandbox(void)
{
	char *id = e2e_sandlot_ok("create", "--hibernate", "--image", "busybox", NULL);
	start_counter(id);
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

/* POST BODY to /v1/sandboxes on D: the new sandbox's id. */
static char *api_create(e2e_daemon *d, const char *body)
{
	e2e_req q = {
	    .method = "POST", .path = "/v1/sandboxes", .body = body, .len = strlen(body), .d = d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	if (r.status != 201)
		fail_msg("POST /v1/sandboxes %s: %ld %s", body, r.status, r.body);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(r.json, "id");
	assert_true(cJSON_IsString(id));
	char *out = strdup(id->valuestring);
	e2e_resp_free(&r);
	return out;
}

/* The status of ID comes to be WANT within 10 s (read from its record by the CLI: a GET
 * of the API would be a sign of life, which the idle timeout waits for the lack of). */
static void status_becomes(const char *id, const char *want)
{
	char *st = NULL;
	for (int i = 0; i < 50; i++) {
		free(st);
		st = status_of(id);
		if (!strcmp(st, want))
			break;
		usleep(200000);
	}
	assert_string_equal(st, want);
	free(st);
}

/* timeout.onIdle "hibernate" (docs/hibernate.md, "Hibernate as a policy"): the daemon's
 * idle sweep hibernates a sandbox created with "hibernate": true (its cgroups gone, its
 * count standing still); a call with ?autoResume=1 brings it back with its memory (same
 * token, the count going on), one without answers 409. A sandbox of the usual launch with
 * the same policy is paused by the freezer instead (sandbox_park's fallback), and the
 * daemon says why in its log. */
static void test_idle_hibernate_policy(void **state)
{
	if (!have_criu())
		skip();
	char *sock = e2e_printf("%s/hibp.sock", e2e_root());
	e2e_daemon d;
	e2e_daemon_start(&d, sock, false, NULL);
	char *id = api_create(&d, "{\"image\":\"busybox\",\"hibernate\":true,"
				  "\"timeout\":{\"idle\":\"3s\",\"onIdle\":\"hibernate\"}}");
	char *plain = api_create(&d, "{\"image\":\"busybox\","
				     "\"timeout\":{\"idle\":\"3s\",\"onIdle\":\"hibernate\"}}");
	start_counter(id);
	char tok[32], tok2[32];
	long n1, n2, n3;
	usleep(600000);
	read_counter(id, tok, &n1);
	status_becomes(id, "hibernated");
	read_counter(id, tok2, &n2);
	usleep(600000);
	read_counter(id, tok2, &n3);
	assert_int_equal(n2, n3);
	char *cg = NULL;
	assert_true(asprintf(&cg, "/sys/fs/cgroup/memory/sandlot/%s", id) > 0);
	assert_int_equal(access(cg, F_OK), -1);
	/* Without autoResume a call on it is refused, saying what it is. */
	const char *body = "{\"command\":[\"cat\",\"/c\"]}";
	char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", id);
	e2e_req q = {.method = "POST", .path = p, .body = body, .len = strlen(body), .d = &d};
	e2e_resp r;
	e2e_http_q(&r, &q);
	assert_int_equal(r.status, 409);
	assert_true(e2e_contains(r.body, "hibernated"));
	e2e_resp_free(&r);
	free(p);
	/* With it, the call resumes it: the same token, the count going on. */
	p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s&autoResume=1", id);
	q.path = p;
	e2e_http_q(&r, &q);
	if (r.status != 201)
		fail_msg("POST %s: %ld %s", p, r.status, r.body);
	assert_true(e2e_contains(r.body, tok));
	e2e_resp_free(&r);
	free(p);
	assert_int_equal(access(cg, F_OK), 0);
	usleep(800000);
	read_counter(id, tok2, &n3);
	assert_string_equal(tok, tok2);
	assert_true(n3 > n2);
	/* The usual launch: paused (frozen), with the reason in the daemon's log. */
	status_becomes(plain, "paused");
	char *lp = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *log = e2e_read_file(lp);
	free(lp);
	assert_non_null(log);
	char *line = e2e_printf("%s: idle timeout: not hibernated", plain);
	assert_true(e2e_contains(log, line));
	assert_true(e2e_contains(log, "\"hibernate\": true"));
	assert_true(e2e_contains(log, "paused instead"));
	free(line);
	free(log);
	e2e_daemon_stop(&d);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(e2e_sandlot_ok("rm", "-f", plain, NULL));
	free(cg);
	free(sock);
	free(plain);
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_hibernate_and_resume),
	    E2E_TEST(test_hibernate_refused_for_the_usual_launch),
	    E2E_TEST(test_delete_while_hibernated),
	    E2E_TEST(test_hibernated_across_daemon_restarts),
	    E2E_TEST(test_idle_hibernate_policy),
	};
	return e2e_run_tests(tests);
}

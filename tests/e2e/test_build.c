/* test_build.c — `sandlot image build` of Dockerfiles: multi-stage with COPY --from, the
 * image's config honoured at run, the step cache (a rebuild runs no RUN; a changed line
 * reruns from there), errors naming the line, and nothing half-made left behind. */
#include "common.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(const char *dir, const char *name, const char *text)
{
	char *p = e2e_printf("%s/%s", dir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	char *mk = e2e_printf("mkdir -p '%s'", p);
	if (system(mk) != 0)
		fail_msg("%s failed", mk);
	*slash = '/';
	FILE *f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("write %s", p);
	free(mk);
	free(p);
}

/* A fresh context directory under the test root. */
static char *context(const char *name)
{
	char *dir = e2e_printf("%s/ctx-%s", e2e_root(), name);
	char *cmd = e2e_printf("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
	free(cmd);
	return dir;
}

static int build(e2e_result *r, const char *name, const char *dir)
{
	return e2e_sandlot(r, NULL, 0, "image", "build", "-t", name, dir, NULL);
}

/* No image named build-tmp-*, no sandbox left, nothing in the build's tmp/. */
static void assert_nothing_half_made(void)
{
	char *ls = e2e_sandlot_ok("image", "ls", NULL);
	if (strstr(ls, "build-tmp"))
		fail_msg("a temporary image is listed:\n%s", ls);
	free(ls);
	char *sbx = e2e_sandlot_ok("ls", NULL);
	if (strstr(sbx, "sbx_"))
		fail_msg("a build sandbox is left:\n%s", sbx);
	free(sbx);
	char *cmd = e2e_printf("test -z \"$(ls -A %s/images/build/tmp 2>/dev/null)\"",
			       getenv("SANDLOT_STATE_DIR"));
	if (system(cmd) != 0)
		fail_msg("the build's scratch (images/build/tmp) is not empty");
	free(cmd);
}

static void test_multistage_and_config(void **state)
{
	char *dir = context("multi");
	put(dir, "hello.txt", "hello from the context\n");
	put(dir, "sub/a.txt", "a\n");
	put(dir, "secret.txt", "do not copy\n");
	put(dir, ".dockerignore", "# comment\nsecret.txt\n");
	put(dir, "Dockerfile",
	    "# a two-stage build\n"
	    "ARG BASE=busybox\n"
	    "FROM $BASE AS builder\n"
	    "ARG GREETING=default\n"
	    "WORKDIR /src\n"
	    "COPY hello.txt sub ./\n"
	    "RUN echo built-by-$GREETING > out.txt && \\\n"
	    "    cat hello.txt a.txt >> out.txt\n"
	    "\n"
	    "FROM busybox\n"
	    "ENV APP_MODE=prod \\\n"
	    "    PLACE=\"the app\"\n"
	    "LABEL org.example.name=multi version=\"1.0\"\n"
	    "EXPOSE 8080 53/udp\n"
	    "WORKDIR /app\n"
	    "COPY --from=builder /src/out.txt ./\n"
	    "COPY --chown=1000:1000 . /ctx/\n"
	    "USER 1000\n"
	    "CMD [\"sh\", \"-c\", \"echo mode=$APP_MODE place=$PLACE; pwd; id -u; cat "
	    "out.txt\"]\n");
	char *tag = e2e_printf("%s", "multi");
	e2e_result r;
	if (e2e_sandlot(&r, NULL, 0, "image", "build", "-t", tag, "--build-arg", "GREETING=arg",
			dir, NULL) != 0)
		fail_msg("build failed (%d): %s", r.status, r.err);
	if (!e2e_contains(r.err, "STEP 1/15: ARG BASE=busybox") ||
	    !e2e_contains(r.err, "  done sha256"))
		fail_msg("unexpected output:\n%s", r.err);
	assert_true(e2e_contains(r.out, "multi sha256:"));
	e2e_result_free(&r);

	/* The config: Cmd, Env, WorkingDir, User, honoured by run. */
	if (e2e_sandlot(&r, NULL, 0, "run", "--image", "multi", NULL) != 0)
		fail_msg("run failed (%d): %s %s", r.status, r.out, r.err);
	assert_true(e2e_contains(r.out, "mode=prod place=the app\n/app\n1000\n"));
	assert_true(e2e_contains(r.out, "built-by-arg\nhello from the context\na\n"));
	e2e_result_free(&r);
	/* The context under /ctx, owned by 1000, without what .dockerignore names. */
	if (e2e_sandlot(&r, NULL, 0, "run", "--image", "multi", "--", "sh", "-c",
			"stat -c '%u:%g %a %n' /ctx/hello.txt /ctx/sub/a.txt; ls -a /ctx",
			NULL) != 0)
		fail_msg("run failed (%d): %s %s", r.status, r.out, r.err);
	assert_true(e2e_contains(r.out, "1000:1000 644 /ctx/hello.txt"));
	assert_true(e2e_contains(r.out, "1000:1000 644 /ctx/sub/a.txt"));
	assert_false(e2e_contains(r.out, "secret.txt"));
	assert_true(e2e_contains(r.out, "Dockerfile"));
	e2e_result_free(&r);
	char *inspect = e2e_sandlot_ok("image", "inspect", "multi", NULL);
	assert_true(e2e_contains(inspect, "org.example.name"));
	assert_true(e2e_contains(inspect, "8080/tcp"));
	assert_true(e2e_contains(inspect, "53/udp"));
	assert_true(e2e_contains(inspect, "dockerfile"));
	free(inspect);
	assert_nothing_half_made();
	free(e2e_sandlot_ok("image", "rm", "multi", NULL));
	free(tag);
	free(dir);
}

/* How many lines of OUT hold NEEDLE. */
static int count(const char *out, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(out, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_cache(void **state)
{
	char *dir = context("cache");
	put(dir, "f.txt", "one\n");
	const char *df = "FROM busybox\n"
			 "RUN echo RAN-STEP-2 && echo two > /two\n"
			 "COPY f.txt /f.txt\n"
			 "RUN echo RAN-STEP-4 && cat /f.txt /two > /four\n"
			 "RUN echo RAN-STEP-5 && echo five > /five\n"
			 "CMD [\"cat\", \"/four\", \"/five\"]\n";
	put(dir, "Dockerfile", df);
	e2e_result r;
	if (build(&r, "cached", dir) != 0)
		fail_msg("build failed (%d): %s", r.status, r.err);
	assert_int_equal(count(r.err, "\n  RAN-STEP-"), 3);
	assert_int_equal(count(r.err, "  CACHED sha256"), 0);
	char *digest1 = strdup(r.out);
	e2e_result_free(&r);

	/* Unchanged: no RUN runs, every layer step says CACHED, the same image. */
	if (build(&r, "cached", dir) != 0)
		fail_msg("rebuild failed (%d): %s", r.status, r.err);
	assert_int_equal(count(r.err, "\n  RAN-STEP-"), 0);
	assert_int_equal(count(r.err, "  CACHED sha256"), 4);
	assert_int_equal(count(r.err, "  done sha256"), 0);
	assert_string_equal(r.out, digest1);
	e2e_result_free(&r);

	/* A changed input of step 3 reruns from step 3: step 2 stays cached. */
	put(dir, "f.txt", "ONE\n");
	if (build(&r, "cached", dir) != 0)
		fail_msg("build failed (%d): %s", r.status, r.err);
	assert_int_equal(count(r.err, "\n  RAN-STEP-2"), 0);
	assert_int_equal(count(r.err, "\n  RAN-STEP-4"), 1);
	assert_int_equal(count(r.err, "\n  RAN-STEP-5"), 1);
	assert_int_equal(count(r.err, "  CACHED sha256"), 1);
	e2e_result_free(&r);

	/* A changed line (step 5) reruns from there only. */
	put(dir, "Dockerfile",
	    "FROM busybox\n"
	    "RUN echo RAN-STEP-2 && echo two > /two\n"
	    "COPY f.txt /f.txt\n"
	    "RUN echo RAN-STEP-4 && cat /f.txt /two > /four\n"
	    "RUN echo RAN-STEP-5 && echo FIVE > /five\n"
	    "CMD [\"cat\", \"/four\", \"/five\"]\n");
	if (build(&r, "cached", dir) != 0)
		fail_msg("build failed (%d): %s", r.status, r.err);
	assert_int_equal(count(r.err, "\n  RAN-STEP-"), 1);
	assert_int_equal(count(r.err, "\n  RAN-STEP-5"), 1);
	assert_int_equal(count(r.err, "  CACHED sha256"), 3);
	e2e_result_free(&r);
	if (e2e_sandlot(&r, NULL, 0, "run", "--image", "cached", NULL) != 0)
		fail_msg("run failed (%d): %s", r.status, r.err);
	assert_string_equal(r.out, "ONE\ntwo\nFIVE\n");
	e2e_result_free(&r);

	/* A commit takes a layer the store holds from the store, not from its blob: with
	 * the first byte of every blob of the build cache changed (sizes kept), a changed
	 * step 5 still builds (before, each commit hashed those blobs again and failed on
	 * the digest). The blobs are put back afterwards. */
	const char *sd = getenv("SANDLOT_STATE_DIR");
	char *spoil = e2e_printf("cd %s/images/build && cp -a blobs blobs.keep && "
				 "for f in blobs/*; do printf X | dd of=\"$f\" bs=1 count=1 "
				 "conv=notrunc 2>/dev/null || exit 1; done",
				 sd);
	if (system(spoil) != 0)
		fail_msg("%s failed", spoil);
	put(dir, "Dockerfile",
	    "FROM busybox\n"
	    "RUN echo RAN-STEP-2 && echo two > /two\n"
	    "COPY f.txt /f.txt\n"
	    "RUN echo RAN-STEP-4 && cat /f.txt /two > /four\n"
	    "RUN echo RAN-STEP-5 && echo five-again > /five\n"
	    "CMD [\"cat\", \"/four\", \"/five\"]\n");
	int st = build(&r, "cached", dir);
	char *restore = e2e_printf("cd %s/images/build && rm -rf blobs && mv blobs.keep blobs", sd);
	if (system(restore) != 0)
		fail_msg("%s failed", restore);
	if (st != 0)
		fail_msg("build with the cache's blobs changed failed (%d): %s", r.status, r.err);
	assert_int_equal(count(r.err, "\n  RAN-STEP-"), 1);
	e2e_result_free(&r);
	if (e2e_sandlot(&r, NULL, 0, "run", "--image", "cached", NULL) != 0)
		fail_msg("run failed (%d): %s", r.status, r.err);
	assert_string_equal(r.out, "ONE\ntwo\nfive-again\n");
	e2e_result_free(&r);
	free(spoil);
	free(restore);
	assert_nothing_half_made();
	free(e2e_sandlot_ok("image", "rm", "cached", NULL));
	free(digest1);
	free(dir);
}

static void expect_failure(const char *name, const char *dockerfile, const char *needle)
{
	char *dir = context(name);
	put(dir, "Dockerfile", dockerfile);
	e2e_result r;
	int st = build(&r, name, dir);
	if (st != 125 || !e2e_contains(r.err, needle))
		fail_msg("build of %s: exit %d, wanted 125 and '%s' in:\n%s", name, st, needle,
			 r.err);
	e2e_result_free(&r);
	char *ls = e2e_sandlot_ok("image", "ls", NULL);
	if (strstr(ls, name))
		fail_msg("the failed build %s is listed:\n%s", name, ls);
	free(ls);
	assert_nothing_half_made();
	free(dir);
}

static void test_errors(void **state)
{
	expect_failure("syntax", "FROM busybox\nRUN true\nFROOM busybox\n",
		       "Dockerfile line 3: unknown instruction FROOM");
	expect_failure("unsupported", "FROM busybox\n\nHEALTHCHECK CMD true\n",
		       "Dockerfile line 3: HEALTHCHECK is not supported");
	expect_failure("failing-run", "FROM busybox\nRUN echo before\nRUN echo oops; exit 3\n",
		       "Dockerfile line 3: RUN echo oops; exit 3: exit code 3");
	expect_failure("no-image", "FROM nosuchimage:1.0\n",
		       "Dockerfile line 1: FROM nosuchimage:1.0: no local image");
	expect_failure("url", "FROM busybox\nADD https://example.com/x /x\n",
		       "URLs are not supported");
	expect_failure("missing-src", "FROM busybox\nCOPY nothere /x\n", "nothere");
	expect_failure("escape", "FROM busybox\nCOPY ../../../../etc/shadow /x\n", "shadow");
}

/* A RUN runs in a sandbox: its own user namespace (a shifted uid map), no network but lo,
 * the seccomp filter on; and a RUN's files land in the image. */
static void test_run_isolation(void **state)
{
	char *dir = context("iso");
	put(dir, "Dockerfile",
	    "FROM busybox\n"
	    "RUN echo \"uidmap:$(cat /proc/self/uid_map | tr -s ' ')\"; "
	    "echo \"ifaces:$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,)\"; "
	    "echo \"seccomp:$(grep Seccomp: /proc/self/status | tr -d '\\t ')\"; "
	    "id -u > /who\n");
	e2e_result r;
	if (build(&r, "iso", dir) != 0)
		fail_msg("build failed (%d): %s", r.status, r.err);
	if (!e2e_contains(r.err, "  ifaces:lo,\n") ||
	    !e2e_contains(r.err, "  seccomp:Seccomp:2\n") || e2e_contains(r.err, "uidmap: 0 0 ") ||
	    !e2e_contains(r.err, "uidmap: 0 "))
		fail_msg("the RUN was not isolated as a sandbox is:\n%s", r.err);
	e2e_result_free(&r);
	char *out = e2e_sandlot_ok("run", "--image", "iso", "--", "cat", "/who", NULL);
	assert_string_equal(out, "0");
	free(out);
	free(e2e_sandlot_ok("image", "rm", "iso", NULL));
	assert_nothing_half_made();
	free(dir);
}

/* A directory with only build.sh is still a recipe build. */
static void test_recipe_still_builds(void **state)
{
	char *dir = context("recipe");
	char *bb = e2e_build_path("images/busybox.tar");
	char *script = e2e_printf("#!/bin/sh\ncp '%s' \"$1\"\n", bb);
	put(dir, "build.sh", script);
	char *out = e2e_printf("%s/recipe-out.tar", e2e_root());
	char *res = e2e_sandlot_ok("image", "build", "--name", "recipe", "-o", out, dir, NULL);
	assert_true(e2e_contains(res, "recipe sha256:"));
	free(res);
	free(e2e_sandlot_ok("image", "rm", "recipe", NULL));
	free(out);
	free(script);
	free(bb);
	free(dir);
}

/* POST /v1/images/build: the context as a tar body, progress as JSON lines. */
static char *tar_of(const char *dir)
{
	char *file = e2e_printf("%s.tar", dir);
	char *cmd = e2e_printf("tar -C '%s' -cf '%s' .", dir, file);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
	free(cmd);
	return file;
}

static void post_build(e2e_resp *r, const char *query, const char *dir)
{
	char *file = tar_of(dir);
	size_t len;
	char *body = e2e_read_file_len(file, &len);
	char *path = e2e_printf("/v1/images/build?%s", query);
	e2e_http_q(
	    r, &(e2e_req){
		   .method = "POST", .path = path, .body = body, .len = len, .timeout_ms = 300000});
	free(path);
	free(body);
	free(file);
}

static void test_api(void **state)
{
	e2e_daemon d;
	char *sock = e2e_printf("%s/build.sock", e2e_root());
	char *captures = e2e_printf("%s/build-captures.jsonl", e2e_root());
	e2e_daemon_start(&d, sock, false, NULL);
	e2e_http_use(&d, captures);
	char *dir = context("api");
	put(dir, "greeting", "hello over the API\n");
	put(dir, "build/Dockerfile.app",
	    "FROM busybox\nCOPY greeting /g\nRUN cat /g\n"
	    "CMD [\"cat\", \"/g\"]\n");
	e2e_resp r;
	post_build(&r, "name=apibuilt&dockerfile=build/Dockerfile.app&network=false", dir);
	assert_int_equal(r.status, 200);
	if (!e2e_contains(r.body, "{\"stream\":\"STEP 1/4: FROM busybox\"}\n") ||
	    !e2e_contains(r.body, "{\"stream\":\"  hello over the API\"}\n") ||
	    !e2e_contains(r.body, "{\"image\":{\"name\":\"apibuilt\""))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	char *out = e2e_sandlot_ok("run", "--image", "apibuilt", NULL);
	assert_string_equal(out, "hello over the API");
	free(out);
	/* A failed build: the last line is the error, naming the line. */
	put(dir, "Dockerfile", "FROM busybox\nRUN exit 7\n");
	post_build(&r, "name=apifail", dir);
	assert_int_equal(r.status, 200);
	if (!e2e_contains(r.body,
			  "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"Dockerfile "
			  "line 2: RUN exit 7: exit code 7"))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	/* Bad parameters: refused before the body. */
	post_build(&r, "name=Bad/Name", dir);
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	post_build(&r, "dockerfile=Dockerfile", dir);
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images/apibuilt", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "format")->valuestring, "dockerfile");
	assert_string_equal(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "config"), "cmd"), 0)
		->valuestring,
	    "cat");
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images/build", NULL);
	assert_int_equal(r.status, 405);
	e2e_resp_free(&r);
	e2e_http(&r, "DELETE", "/v1/images/apibuilt", NULL);
	assert_int_equal(r.status, 204);
	e2e_resp_free(&r);
	assert_nothing_half_made();
	free(e2e_spec_check(sock, captures));
	e2e_daemon_stop(&d);
	free(dir);
	free(sock);
	free(captures);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ?startCmd/?readyCmd: the build checks them; every create starts the start command as an
 * execution and answers once the ready command passed, or removes the sandbox. The daemon
 * has SANDLOT_READY_TIMEOUT=3. */
static void test_api_start_cmd(void **state)
{
	e2e_daemon d;
	char *sock = e2e_printf("%s/start.sock", e2e_root());
	char *captures = e2e_printf("%s/start-captures.jsonl", e2e_root());
	setenv("SANDLOT_READY_TIMEOUT", "3", 1);
	e2e_daemon_start(&d, sock, false, NULL);
	unsetenv("SANDLOT_READY_TIMEOUT");
	e2e_http_use(&d, captures);
	char *dir = context("start");
	put(dir, "Dockerfile", "FROM busybox\nRUN echo built > /built\n");
	e2e_resp r;
	/* start: echo $$ > /tmp/pid; exec sleep 600
	 * ready: test -f /tmp/pid && test -z "$NOTREADY" && sleep 1 */
	post_build(&r,
		   "name=svc&startCmd=echo%20%24%24%20%3E%20%2Ftmp%2Fpid%3B%20exec%20sleep%20600"
		   "&readyCmd=test%20-f%20%2Ftmp%2Fpid%20%26%26%20test%20-z%20%22%24NOTREADY%22%20"
		   "%26%26%20sleep%201",
		   dir);
	assert_int_equal(r.status, 200);
	if (!e2e_contains(r.body, "start command: echo $$ > /tmp/pid") ||
	    !e2e_contains(r.body, "ready in ") ||
	    !e2e_contains(r.body, "{\"image\":{\"name\":\"svc\""))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images/svc", NULL);
	const cJSON *cfg = cJSON_GetObjectItem(r.json, "config");
	assert_string_equal(cJSON_GetObjectItem(cfg, "startCmd")->valuestring,
			    "echo $$ > /tmp/pid; exec sleep 600");
	assert_non_null(strstr(cJSON_GetObjectItem(cfg, "readyCmd")->valuestring, "sleep 1"));
	e2e_resp_free(&r);

	/* A create answers once ready (the ready command's 1 s sleep), the start command
	 * running as one of its executions. */
	double t0 = now_s();
	e2e_http(&r, "POST", "/v1/sandboxes", "{\"image\":\"svc\"}");
	double took = now_s() - t0;
	assert_int_equal(r.status, 201);
	if (took < 1.0)
		fail_msg("the create answered in %.2f s, before its ready command's 1 s", took);
	char *id = strdup(cJSON_GetObjectItem(r.json, "id")->valuestring);
	e2e_resp_free(&r);
	char *path = e2e_printf("/v1/sandboxes/%s/executions", id);
	e2e_http(&r, "GET", path, NULL);
	if (!e2e_contains(r.body, "exec sleep 600") || !e2e_contains(r.body, "\"running\""))
		fail_msg("the start command is not a running execution:\n%s", r.body);
	e2e_resp_free(&r);
	char *ps =
	    e2e_sandlot_ok("exec", id, "--", "sh", "-c", "cat /proc/$(cat /tmp/pid)/cmdline", NULL);
	assert_string_equal(ps, "sleep\000600");
	free(ps);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));

	/* A create whose ready command does not pass in time: 504, no sandbox left. */
	e2e_http(&r, "POST", "/v1/sandboxes", "{\"image\":\"svc\",\"env\":{\"NOTREADY\":\"1\"}}");
	assert_int_equal(r.status, 504);
	if (!e2e_contains(r.body, "the ready command did not succeed within 3 s"))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	char *sbx = e2e_sandlot_ok("ls", NULL);
	if (strstr(sbx, "sbx_"))
		fail_msg("a sandbox is left:\n%s", sbx);
	free(sbx);

	/* A build whose ready command never passes, and one whose start command fails. */
	post_build(&r, "name=notready&startCmd=sleep%20600&readyCmd=exit%201", dir);
	if (!e2e_contains(r.body,
			  "{\"error\":{\"code\":\"TIMEOUT\",\"message\":\"the image's "
			  "start and ready commands: the ready command did not succeed within 3 s"))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	/* One that never ends by itself: the deadline's kill is not reported as its result. */
	post_build(&r, "name=slowready&startCmd=sleep%20600&readyCmd=sleep%2030", dir);
	if (!e2e_contains(r.body, "within 3 s (its last run: still running at the deadline)"))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	post_build(&r, "name=badstart&startCmd=exit%205&readyCmd=sleep%2030", dir);
	if (!e2e_contains(r.body, "the start command failed: exit code 5"))
		fail_msg("unexpected answer:\n%s", r.body);
	e2e_resp_free(&r);
	post_build(&r, "name=x&startCmd=", dir);
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	char *ls = e2e_sandlot_ok("image", "ls", NULL);
	if (strstr(ls, "notready") || strstr(ls, "badstart"))
		fail_msg("a failed build left its image:\n%s", ls);
	free(ls);
	free(e2e_sandlot_ok("image", "rm", "svc", NULL));
	assert_nothing_half_made();
	free(e2e_spec_check(sock, captures));
	e2e_daemon_stop(&d);
	free(path);
	free(id);
	free(dir);
	free(sock);
	free(captures);
}

/* A RUN's output is shown as it comes, not when the RUN ends; the step ends when the
 * command exits, not when a process it left in the background does. */
static void test_run_output_is_live(void **state)
{
	char *dir = context("live");
	put(dir, "Dockerfile",
	    "FROM busybox\nRUN echo first-line; sleep 3; echo second-line; "
	    "(sleep 60 >/dev/null 2>&1 &); (sleep 60 &); echo last-line\n");
	char *bin = e2e_build_path("sandlot");
	char *cmd = e2e_printf("%s image build -t live '%s' 2>&1", bin, dir);
	double start = now_s(), first = 0, second = 0, end;
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char line[4096];
	bool last = false;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "  first-line") && !first)
			first = now_s();
		if (strstr(line, "  second-line") && !second)
			second = now_s();
		last |= strstr(line, "  last-line") != NULL;
	}
	end = now_s();
	assert_int_equal(pclose(f), 0);
	assert_true(first > 0 && second > 0 && last);
	/* The 3 s sleep sits between the two lines as they arrive. */
	if (second - first < 2.0)
		fail_msg("the RUN's output came at its end: first-line %.2f s, second-line "
			 "%.2f s after the start",
			 first - start, second - start);
	/* Not held up by the background sleep, which holds the output pipe. */
	if (end - start > 45.0)
		fail_msg("the build waited for the RUN's background process: %.1f s",
			 end - start);
	free(e2e_sandlot_ok("image", "rm", "live", NULL));
	assert_nothing_half_made();
	free(cmd);
	free(bin);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_multistage_and_config),
	    E2E_TEST(test_cache),
	    E2E_TEST(test_errors),
	    E2E_TEST(test_run_isolation),
	    E2E_TEST(test_recipe_still_builds),
	    E2E_TEST(test_api),
	    E2E_TEST(test_api_start_cmd),
	    E2E_TEST(test_run_output_is_live),
	};
	return e2e_run_tests(tests);
}

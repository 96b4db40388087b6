/* test_packages.c — packages at create (apt, pip, npm) from sources this test serves
 * itself: a wheel directory on the host, and an apt repository and npm registry in an
 * "internet" netns reached at 203.0.113.1 (TEST-NET-3, routed only into that netns). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define BASE_URL "http://203.0.113.1:8080"

static char netns[32], fx[512];
static bool have_net; /* sandboxes can have a network (the install phase needs it) */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	e2e_result r;
	int st = e2e_run(&r, NULL, 0, 30000, argv);
	if (st != 0)
		fprintf(stderr, "test_packages: `%s` failed (%d): %s\n", cmd, st, r.err);
	e2e_result_free(&r);
	return st;
}

/* The sources, served from an "internet" netns (tests/e2e/packages_internet.sh, which
 * compat suites' setup.sh can use too). */
static int internet(const char *verb)
{
	char *script = e2e_build_path("../tests/e2e/packages_internet.sh");
	int st = sh("sh %s %s %s %s", script, verb, fx, netns);
	free(script);
	return st;
}

static int group_setup(void **state)
{
	e2e_env_setup();
	char *tar = e2e_build_path("images/default.tar.zst");
	e2e_result r;
	int st = e2e_sandlot(&r, NULL, 0, "image", "import", "default", tar, NULL);
	free(tar);
	if (st != 0) {
		fprintf(stderr, "test_packages: import of the default image failed: %s\n", r.err);
		e2e_result_free(&r);
		return -1;
	}
	e2e_result_free(&r);
	snprintf(fx, sizeof(fx), "%s/fx", e2e_root());
	snprintf(netns, sizeof(netns), "slpkg-%d", (int)getpid());
	if (internet("up") != 0)
		return -1;
	char wheels[600];
	snprintf(wheels, sizeof(wheels), "%s/wheels", fx);
	setenv("SANDLOT_PIP_WHEELS", wheels, 1);
	setenv("SANDLOT_APT_MIRROR", "deb [trusted=yes] " BASE_URL "/apt ./", 1);
	setenv("SANDLOT_NPM_REGISTRY", BASE_URL "/npm/", 1);
	have_net = e2e_sandlot(&r, NULL, 0, "run", "--network", "--image", "busybox", "--", "true",
			       NULL) == 0;
	if (!have_net)
		fprintf(stderr,
			"test_packages: sandboxes have no network here (%s); the apt and "
			"npm tests are skipped\n",
			r.err);
	e2e_result_free(&r);
	return 0;
}

static int group_teardown(void **state)
{
	internet("down");
	/* The server was re-parented to us (a child subreaper): reap it. */
	for (int i = 0; i < 100 && waitpid(-1, NULL, WNOHANG) >= 0; i++)
		usleep(10000);
	return e2e_group_teardown(state);
}

/* Files in DIR whose names start with PREFIX and end with SUFFIX. */
static int count(const char *dir, const char *prefix, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name), sl = strlen(suffix);
		n += !strncmp(e->d_name, prefix, strlen(prefix)) && l >= sl &&
		     !strcmp(e->d_name + l - sl, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

static int cache_records(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/packages", getenv("SANDLOT_STATE_DIR"));
	return count(p, "", ".json");
}

static int cache_layers(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/store/snapshots", getenv("SANDLOT_STATE_DIR"));
	return count(p, "pkg_", "");
}

static int sandbox_dirs(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/sandboxes", getenv("SANDLOT_STATE_DIR"));
	return count(p, "sbx_", "");
}

static char *exec_ok(const char *id, const char *line)
{
	return e2e_sandlot_ok("exec", id, "--", "sh", "-c", line, NULL);
}

static void test_pip_from_a_wheel_directory_into_a_network_off_sandbox(void **state)
{
	char *id = e2e_sandlot_ok("create", "--package", "pip:sandlot-tiny@1.0", NULL);
	/* Installed for every user (commands run as `user`), importable anywhere. */
	char *out =
	    exec_ok(id, "cd /tmp && python3 -c 'import sandlot_tiny; print(sandlot_tiny.ANSWER)'");
	assert_string_equal(out, "42");
	free(out);
	out = exec_ok(id, "ls /sys/class/net");
	assert_string_equal(out, "lo");
	free(out);
	/* The wheel directory is not mounted in the sandbox itself. */
	out = exec_ok(id, "ls -A /mnt | wc -l");
	assert_string_equal(out, "0");
	free(out);
	char *in = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(in, "\"manager\":\t\"pip\""));
	assert_true(e2e_contains(in, "\"name\":\t\"sandlot-tiny\""));
	free(in);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void test_second_create_with_the_same_packages_is_a_cache_hit(void **state)
{
	int before = cache_records();
	int64_t t0 = e2e_now_ms();
	char *a = e2e_sandlot_ok("create", "--package", "pip:sandlot-tiny@==1.0", NULL);
	int64_t t1 = e2e_now_ms();
	char *b = e2e_sandlot_ok("create", "--package", "pip:sandlot-tiny@==1.0", NULL);
	int64_t t2 = e2e_now_ms();
	printf("packages: first create (install) %lld ms, second (cache hit) %lld ms\n",
	       (long long)(t1 - t0), (long long)(t2 - t1));
	assert_int_equal(cache_records(), before + 1);
	assert_true(t2 - t1 < t1 - t0);
	char *out = exec_ok(b, "python3 -c 'import sandlot_tiny; print(sandlot_tiny.ANSWER)'");
	assert_string_equal(out, "42");
	free(out);
	/* Each sandbox has its own copy: a change in one is not seen in the other. */
	free(e2e_sandlot_ok("exec", "-u", "root", a, "--", "sh", "-c",
			    "rm -r /usr/local/lib/python3*/dist-packages/sandlot_tiny", NULL));
	out = exec_ok(b, "python3 -c 'import sandlot_tiny; print(sandlot_tiny.ANSWER)'");
	assert_string_equal(out, "42");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", a, b, NULL));
	free(a);
	free(b);
}

static void test_concurrent_creates_build_once(void **state)
{
	int before = cache_records(), layers = cache_layers();
	pid_t kids[3];
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			e2e_result r;
			int st =
			    e2e_sandlot(&r, NULL, 0, "run", "--package", "pip:sandlot-tiny@~=1.0",
					"--", "python3", "-c", "import sandlot_tiny", NULL);
			_exit(st);
		}
	}
	for (int i = 0; i < 3; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(cache_records(), before + 1);
	assert_int_equal(cache_layers(), layers + 1);
}

static void test_install_failure_fails_the_create_and_leaves_nothing(void **state)
{
	int recs = cache_records(), layers = cache_layers(), sbx = sandbox_dirs();
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "create", "--package", "pip:sandlot-tiny",
				     "--package", "pip:no-such-package-anywhere", NULL),
			 125);
	/* The installer's own words. */
	assert_true(e2e_contains(r.err, "pip install failed"));
	assert_true(e2e_contains(r.err, "no-such-package-anywhere"));
	e2e_result_free(&r);
	assert_int_equal(cache_records(), recs);
	assert_int_equal(cache_layers(), layers);
	assert_int_equal(sandbox_dirs(), sbx);
	/* An image without the installer says so. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", "--package",
				     "pip:sandlot-tiny", NULL),
			 125);
	assert_true(e2e_contains(r.err, "no python3"));
	e2e_result_free(&r);
	assert_int_equal(sandbox_dirs(), sbx);
}

static void test_invalid_package_specs_are_refused(void **state)
{
	static const char *const bad[] = {
	    "pip:-e.",	    "pip:a;b",	"pip:x@1 || true", "apt:Foo",	   "apt:a$(id)",
	    "apt:bash@abc", "npm:../x", "npm:@/x",	   "npm:x@1 2",	   "gem:rails",
	    "pip",	    "pip:",	"npm:.hidden",	   "apt:-oFoo=bar"};
	int sbx = sandbox_dirs();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e2e_result r;
		int st = e2e_sandlot(&r, NULL, 0, "create", "--package", bad[i], NULL);
		if (st != 125 || !e2e_contains(r.err, "--package"))
			fail_msg("--package %s: status %d, %s", bad[i], st, r.err);
		e2e_result_free(&r);
	}
	assert_int_equal(sandbox_dirs(), sbx);
}

/* METHOD PATH (with JSON) to D; returns the HTTP status, the body in *body. */
static long api(const e2e_daemon *d, const char *method, const char *path, const char *json,
		char **body)
{
	e2e_resp r;
	e2e_req q = {
	    .method = method, .path = path, .body = json, .len = json ? strlen(json) : 0, .d = d};
	long code = e2e_http_q(&r, &q);
	*body = r.body;
	r.body = NULL;
	e2e_resp_free(&r);
	return code;
}

static void test_api_create_with_packages_from_serve_flags(void **state)
{
	char sock[600], wheels[600];
	snprintf(sock, sizeof(sock), "%s/pkg.sock", e2e_root());
	snprintf(wheels, sizeof(wheels), "%s/wheels", fx);
	/* A wheel directory that is not one is refused at start. */
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "serve", "--socket", sock, "--pip-wheels",
				     "/nonexistent/wheels", NULL),
			 125);
	assert_true(e2e_contains(r.err, "pip wheel directory"));
	e2e_result_free(&r);
	/* The flag, not the environment, gives the daemon its source. */
	char *env = getenv("SANDLOT_PIP_WHEELS") ? strdup(getenv("SANDLOT_PIP_WHEELS")) : NULL;
	unsetenv("SANDLOT_PIP_WHEELS");
	e2e_daemon d;
	e2e_daemon_start(&d, sock, false, (const char *const[]){"--pip-wheels", wheels, NULL});
	if (env)
		setenv("SANDLOT_PIP_WHEELS", env, 1);
	free(env);
	char *body;
	long code = api(&d, "POST", "/v1/sandboxes",
			"{\"packages\":[{\"name\":\"sandlot-tiny\",\"version\":\"1.0\","
			"\"manager\":\"pip\"},{\"name\":\"sandlot_tiny\",\"manager\":\"pip\"}]}",
			&body);
	if (code != 201)
		fail_msg("create: %ld %s", code, body);
	assert_true(e2e_contains(body, "\"packages\":[{\"name\":\"sandlot-tiny\""));
	char id[32] = "";
	const char *p = strstr(body, "\"id\":\"");
	assert_non_null(p);
	snprintf(id, sizeof(id), "%.24s", p + 6);
	free(body);
	char *o = exec_ok(id, "python3 -c 'import sandlot_tiny; print(sandlot_tiny.ANSWER)'");
	assert_string_equal(o, "42");
	free(o);
	/* A failed install: 400 with pip's words, no sandbox left. */
	int sbx = sandbox_dirs();
	code = api(&d, "POST", "/v1/sandboxes",
		   "{\"packages\":[{\"name\":\"sandlot-tiny\",\"version\":\"9.9\","
		   "\"manager\":\"pip\"}]}",
		   &body);
	assert_int_equal(code, 400);
	assert_true(e2e_contains(body, "INVALID_ARGUMENT"));
	assert_true(e2e_contains(body, "pip install failed"));
	assert_true(e2e_contains(body, "9.9"));
	free(body);
	assert_int_equal(sandbox_dirs(), sbx);
	char path[64];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	assert_int_equal(api(&d, "DELETE", path, NULL, &body), 204);
	free(body);
	e2e_daemon_halt(&d);
}

/* An image whose "python3" only records its arguments: busybox plus a script. */
static void import_fake_pip_image(const char *name)
{
	char *bb = e2e_build_path("images/busybox.tar");
	char tar[600];
	snprintf(tar, sizeof(tar), "%s/%s.tar", e2e_root(), name);
	assert_int_equal(
	    sh("python3 - %s %s <<'PY'\n"
	       "import io, shutil, sys, tarfile\n"
	       "shutil.copy(sys.argv[1], sys.argv[2])\n"
	       "data = b'#!/bin/sh\\nmkdir -p /usr/local && echo \"$*\" > /usr/local/fake-pip\\n'\n"
	       "with tarfile.open(sys.argv[2], 'a') as t:\n"
	       "    ti = tarfile.TarInfo('./usr/bin/python3'); ti.size = len(data); ti.mode = "
	       "0o755\n"
	       "    t.addfile(ti, io.BytesIO(data))\n"
	       "PY",
	       bb, tar),
	    0);
	free(bb);
	free(e2e_sandlot_ok("image", "import", name, tar, NULL));
}

static void test_cache_entries_of_a_removed_image_are_dropped(void **state)
{
	import_fake_pip_image("fakepip");
	int recs = cache_records(), layers = cache_layers();
	char *id =
	    e2e_sandlot_ok("create", "--image", "fakepip", "--package", "pip:anything@2", NULL);
	char *out = exec_ok(id, "cat /usr/local/fake-pip");
	assert_true(e2e_contains(out, "install --no-cache-dir --no-index --find-links /mnt "
				      "anything==2"));
	free(out);
	assert_int_equal(cache_records(), recs + 1);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
	free(e2e_sandlot_ok("image", "rm", "fakepip", NULL));
	/* The next install (of anything) finds the entry dead and drops it. */
	char *b = e2e_sandlot_ok("create", "--package", "pip:sandlot-tiny@>=1", NULL);
	assert_int_equal(cache_records(), recs + 1);
	assert_int_equal(cache_layers(), layers + 1);
	free(e2e_sandlot_ok("rm", "-f", b, NULL));
	free(b);
}

static void test_apt_from_a_local_repository(void **state)
{
	if (!have_net)
		skip();
	int64_t t0 = e2e_now_ms();
	char *id = e2e_sandlot_ok("create", "--package", "apt:sandlot-tiny@1.0", NULL);
	int64_t t1 = e2e_now_ms();
	char *again = e2e_sandlot_ok("create", "--package", "apt:sandlot-tiny@1.0", NULL);
	printf("packages: apt create (install) %lld ms, again (cache hit) %lld ms\n",
	       (long long)(t1 - t0), (long long)(e2e_now_ms() - t1));
	free(e2e_sandlot_ok("rm", "-f", again, NULL));
	free(again);
	char *out = exec_ok(id, "sandlot-tiny");
	assert_string_equal(out, "tiny deb");
	free(out);
	/* The sandbox itself has no network, and apt's lists are gone as in the image. */
	out = exec_ok(id, "ls /sys/class/net; ls /var/lib/apt/lists | grep -c 203.0.113 || true");
	assert_string_equal(out, "lo\n0");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

/* A mirror on a private address (closed to sandboxes by default) is opened to the
 * install sandbox alone: the install works, a network-on sandbox cannot reach it. */
static void test_apt_from_a_private_mirror(void **state)
{
	if (!have_net)
		skip();
	char *old = strdup(getenv("SANDLOT_APT_MIRROR"));
	setenv("SANDLOT_APT_MIRROR", "deb [trusted=yes] http://10.78.1.1:8080/apt ./", 1);
	e2e_result r;
	int st = e2e_sandlot(&r, NULL, 0, "create", "--package", "apt:sandlot-tiny@1.0", NULL);
	if (st != 0)
		fail_msg("create with a private apt mirror: %d %s", r.status, r.err);
	char *id = strndup(r.out, strcspn(r.out, "\n"));
	e2e_result_free(&r);
	char *out = exec_ok(id, "sandlot-tiny");
	assert_string_equal(out, "tiny deb");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
#define GET_PACKAGES(addr) "printf 'GET /apt/Packages HTTP/1.0\\r\\n\\r\\n' | nc -w 3 " addr " 8080"
	char *line = strdup(GET_PACKAGES("10.78.1.1"));
	st = e2e_sandlot(&r, NULL, 0, "run", "--network", "--image", "busybox", "--", "sh", "-c",
			 line, NULL);
	free(line);
	setenv("SANDLOT_APT_MIRROR", old, 1);
	free(old);
	assert_int_not_equal(st, 0);
	assert_false(e2e_contains(r.out, "sandlot-tiny"));
	e2e_result_free(&r);
	/* Control: the public address of the same server answers. */
	line = strdup(GET_PACKAGES("203.0.113.1"));
	st = e2e_sandlot(&r, NULL, 0, "run", "--network", "--image", "busybox", "--", "sh", "-c",
			 line, NULL);
	free(line);
	if (st != 0)
		fail_msg("control: %d %s %s", st, r.out, r.err);
	assert_true(e2e_contains(r.out, "sandlot-tiny"));
	e2e_result_free(&r);
}

static void test_npm_from_a_local_registry(void **state)
{
	if (!have_net)
		skip();
	int64_t t0 = e2e_now_ms();
	char *id = e2e_sandlot_ok("create", "--package", "npm:sandlot-tiny@1.0.0", NULL);
	int64_t t1 = e2e_now_ms();
	char *again = e2e_sandlot_ok("create", "--package", "npm:sandlot-tiny@1.0.0", NULL);
	printf("packages: npm create (install) %lld ms, again (cache hit) %lld ms\n",
	       (long long)(t1 - t0), (long long)(e2e_now_ms() - t1));
	free(e2e_sandlot_ok("rm", "-f", again, NULL));
	free(again);
	char *out = exec_ok(id, "sandlot-tiny; cd /tmp && node -e "
				"'console.log(require(\"sandlot-tiny\").answer)'");
	assert_string_equal(out, "tiny 42\n42");
	free(out);
	out = exec_ok(id, "ls /sys/class/net");
	assert_string_equal(out, "lo");
	free(out);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_pip_from_a_wheel_directory_into_a_network_off_sandbox),
	    E2E_TEST(test_second_create_with_the_same_packages_is_a_cache_hit),
	    E2E_TEST(test_concurrent_creates_build_once),
	    E2E_TEST(test_install_failure_fails_the_create_and_leaves_nothing),
	    E2E_TEST(test_invalid_package_specs_are_refused),
	    E2E_TEST(test_api_create_with_packages_from_serve_flags),
	    E2E_TEST(test_cache_entries_of_a_removed_image_are_dropped),
	    E2E_TEST(test_apt_from_a_local_repository),
	    E2E_TEST(test_apt_from_a_private_mirror),
	    E2E_TEST(test_npm_from_a_local_registry),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

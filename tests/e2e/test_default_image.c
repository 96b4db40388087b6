/* test_default_image.c — end-to-end checks of the `default` image (images/default/): the
 * tarball `make images` built, imported here and used by real sandboxes through the CLI. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "common.h"

/* One sandbox of the default image, shared by the tests that only read from it (made
 * by the group setup, so the per-test leak checks see it before and after). */
static char *shared_id;

static char *tarball_path(void)
{
	return e2e_build_path("images/default.tar.zst");
}

static int group_setup(void **state)
{
	e2e_env_setup();
	char *tar = tarball_path();
	if (access(tar, R_OK) != 0) {
		fprintf(stderr,
			"test_default_image: %s is missing; `make images` builds it (as root, from "
			"the Debian mirror your apt sources name)\n",
			tar);
		free(tar);
		return -1;
	}
	e2e_result r;
	int st = e2e_sandlot(&r, NULL, 0, "image", "import", "default", tar, NULL);
	free(tar);
	if (st != 0) {
		fprintf(stderr, "test_default_image: import failed (%d): %s\n", st, r.err);
		e2e_result_free(&r);
		return -1;
	}
	e2e_result_free(&r);
	st = e2e_sandlot(&r, NULL, 0, "create", "--image", "default", NULL);
	if (st == 0) {
		r.out[strcspn(r.out, "\n")] = '\0';
		shared_id = strdup(r.out);
	} else {
		fprintf(stderr, "test_default_image: create failed (%d): %s\n", st, r.err);
	}
	e2e_result_free(&r);
	return shared_id ? 0 : -1;
}

static int group_teardown(void **state)
{
	if (shared_id) {
		e2e_result r;
		e2e_sandlot(&r, NULL, 0, "rm", "-f", shared_id, NULL);
		e2e_result_free(&r);
		free(shared_id);
		shared_id = NULL;
		/* Its init was reparented to us (the harness makes the test a subreaper):
		 * reap it, so the teardown's leak sweep does not take it for a leftover. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	e2e_env_teardown();
	return 0;
}

/* Run ARGV (NULL-terminated) in the shared sandbox, feeding STDIN_DATA when given;
 * fail unless it exits 0. Returns stdout (caller frees). */
static char *exec_ok_in(const char *stdin_data, const char *arg, ...)
{
	char *argv[32] = {"exec"};
	int n = 1;
	if (stdin_data)
		argv[n++] = "-i";
	argv[n++] = shared_id;
	argv[n++] = "--";
	va_list ap;
	va_start(ap, arg);
	for (const char *a = arg; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	e2e_result r;
	int st = e2e_sandlotv(&r, stdin_data, stdin_data ? strlen(stdin_data) : 0, argv);
	if (st != 0)
		fail_msg("`%s` exited %d: %s%s", arg, st, r.out, r.err);
	char *out = strdup(r.out);
	e2e_result_free(&r);
	return out;
}
#define exec_ok(...) exec_ok_in(NULL, __VA_ARGS__, NULL)

static void test_python_and_node_print(void **state)
{
	char *out = exec_ok("python3", "-c", "print(1)");
	assert_string_equal(out, "1\n");
	free(out);
	out = exec_ok("node", "-e", "console.log(1)");
	assert_string_equal(out, "1\n");
	free(out);
	/* Debian 12's interpreters, not something else that happens to answer. */
	out = exec_ok("python3", "-c", "import sys; print(sys.version_info[:2])");
	assert_string_equal(out, "(3, 11)\n");
	free(out);
	out = exec_ok("node", "-p", "process.versions.node.split('.')[0]");
	assert_string_equal(out, "18\n");
	free(out);
}

static const char ts_program[] =
    "interface Point { x: number; y: number }\n"
    "function norm<T extends Point>(p: T): number { return Math.hypot(p.x, p.y); }\n"
    "const p: Point = { x: 3, y: 4 };\n"
    "const label: string = `norm=${norm(p) as number}`;\n"
    "console.log(label);\n";

static void test_typescript_runner(void **state)
{
	/* From stdin, and from a file whose local import is bundled. */
	char *out = exec_ok_in(ts_program, "ts-run", "-", NULL);
	assert_string_equal(out, "norm=5\n");
	free(out);
	free(exec_ok(
	    "sh", "-c",
	    "mkdir -p /tmp/tsp && cd /tmp/tsp && "
	    "printf 'export const twice = (n: number): number => n * 2;\\n' > lib.ts && "
	    "printf 'import { twice } from \"./lib\";\\nconst a: number[] = "
	    "process.argv.slice(2).map(Number);\\nconsole.log(a.map(twice).join(\",\"));\\n'"
	    " > main.ts"));
	out = exec_ok("ts-run", "/tmp/tsp/main.ts", "1", "21");
	assert_string_equal(out, "2,42\n");
	free(out);

	/* A syntax error fails with the file and line; a throw exits non-zero with a stack
	 * that points into the TypeScript source. */
	e2e_result r;
	const char *bad = "const ok: number = 1;\nconst x: number = ;\n";
	assert_int_not_equal(
	    e2e_sandlot(&r, bad, strlen(bad), "exec", "-i", shared_id, "--", "ts-run", "-", NULL),
	    0);
	assert_true(e2e_contains(r.err, "stdin.ts:2"));
	e2e_result_free(&r);
	const char *thrower =
	    "function f(): never {\n  throw new TypeError('bad thing');\n}\nf();\n";
	assert_int_equal(e2e_sandlot(&r, thrower, strlen(thrower), "exec", "-i", shared_id, "--",
				     "ts-run", "-", NULL),
			 1);
	assert_true(e2e_contains(r.err, "TypeError: bad thing"));
	assert_true(e2e_contains(r.err, "stdin.ts:2"));
	e2e_result_free(&r);
}

static void test_git_curl_procps(void **state)
{
	char *out = exec_ok("git", "--version");
	assert_true(!strncmp(out, "git version 2.", 14));
	free(out);
	out = exec_ok("curl", "--version");
	assert_true(!strncmp(out, "curl 7.", 7));
	assert_true(e2e_contains(out, "OpenSSL"));
	free(out);
	/* ps from procps sees the command itself; the CA bundle curl and pip use is there. */
	out = exec_ok("sh", "-c", "ps -o comm= -p $$; test -s /etc/ssl/certs/ca-certificates.crt");
	assert_string_equal(out, "sh\n");
	free(out);
	/* git works as the user without setup beyond an identity. */
	out = exec_ok("sh", "-c",
		      "cd /tmp && git init -q g && cd g && echo x > f && git add f && "
		      "git -c user.name=u -c user.email=u@e commit -qm m && git log --format=%s");
	assert_string_equal(out, "m\n");
	free(out);
}

static void test_runs_as_user_in_home(void **state)
{
	char *out = exec_ok("sh", "-c", "id -u; id -g; id -un; pwd; echo $HOME");
	assert_string_equal(out, "1000\n1000\nuser\n/home/user\n/home/user\n");
	free(out);
	out = exec_ok("getent", "passwd", "user");
	assert_string_equal(out, "user:x:1000:1000::/home/user:/bin/bash\n");
	free(out);
	/* The home is the user's, the rest of the tree is root's. */
	out = exec_ok("stat", "-c", "%u:%g %a", "/home/user", "/usr", "/etc/passwd");
	assert_string_equal(out, "1000:1000 755\n0:0 755\n0:0 644\n");
	free(out);
}

/* sandlot's sudo (docs/isolation.md, "sudo"): root of the sandbox's own user namespace
 * through init, with what a command the API starts as root has, nothing more. */
static void test_sudo_runs_as_root_with_env_and_exit_codes(void **state)
{
	char *out = exec_ok("sh", "-c",
			    "sudo whoami; sudo -u root id -u; sudo -u user id -un; sudo -u '#1000' "
			    "id -u; sudo true && echo ok");
	assert_string_equal(out, "root\n0\nuser\n1000\nok\n");
	free(out);
	/* env reset, -E keeps the caller's, VAR=value before the command. */
	out = exec_ok("env", "KEEPME=1", "sh", "-c",
		      "sudo env | grep -c KEEPME; sudo -E env | grep KEEPME; "
		      "sudo FOO=bar env | grep -E '^(FOO|HOME|USER|SUDO_USER)=' | sort; "
		      "echo in | sudo cat; cd /tmp && sudo pwd");
	assert_string_equal(out, "0\nKEEPME=1\nFOO=bar\nHOME=/root\nSUDO_USER=user\nUSER=root\nin\n/tmp\n");
	free(out);
	e2e_result r;
	const char *id = shared_id;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "sudo", "sh", "-c", "exit 7", NULL), 7);
	e2e_result_free(&r);
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "sudo", "no-such-cmd", NULL), 1);
	assert_true(e2e_contains(r.err, "no-such-cmd: command not found"));
	e2e_result_free(&r);
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "sudo", "-u", "nobody-x", "true", NULL), 1);
	assert_true(e2e_contains(r.err, "unknown user nobody-x"));
	e2e_result_free(&r);
	/* From a directory the target cannot enter (root's home), as sudo does: a warning,
	 * and the command runs in the target's home. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", "-u", "root", "-w", "/root", id, "--",
				     "sudo", "-u", "user", "pwd", NULL),
			 0);
	assert_string_equal(r.out, "/home/user\n");
	assert_true(e2e_contains(r.err, "unable to change directory to /root"));
	e2e_result_free(&r);
	/* A signal that ends the command is 128 + n, as a shell says it. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "sudo", "sh", "-c", "kill -TERM $$", NULL), 143);
	e2e_result_free(&r);
	/* Root's files are root's; the user cannot write there without sudo. */
	out = exec_ok("sh", "-c", "touch /etc/x 2>/dev/null || echo denied; sudo touch /etc/x && "
				  "stat -c %u /etc/x; sudo rm /etc/x");
	assert_string_equal(out, "denied\n0\n");
	free(out);
}

/* The same sandbox, not a bigger one: what a sudo'd command has equals what a command
 * the API starts as root has (capabilities, no_new_privs, seccomp, namespaces, cgroup). */
static void test_sudo_is_no_more_than_api_root(void **state)
{
	static const char probe[] =
	    "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; "
	    "for n in user pid mnt net uts ipc cgroup; do readlink /proc/self/ns/$n; done; "
	    "cat /proc/self/cgroup; cat /proc/self/uid_map";
	char *via_sudo = exec_ok("sudo", "sh", "-c", probe);
	char *via_api = NULL;
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", "-u", "root", shared_id, "--", "sh", "-c",
				     probe, NULL),
			 0);
	via_api = strdup(r.out);
	e2e_result_free(&r);
	assert_string_equal(via_sudo, via_api);
	assert_true(e2e_contains(via_sudo, "NoNewPrivs:\t1"));
	assert_true(e2e_contains(via_sudo, "Seccomp:\t2"));
	free(via_sudo);
	free(via_api);
	/* An image without sandlot's sudo has no socket to ask: busybox's init serves none. */
	char *bb = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", bb, "--", "sh", "-c",
				     "grep -c sandlot-sudo /proc/net/unix || true", NULL),
			 0);
	assert_string_equal(r.out, "0\n");
	e2e_result_free(&r);
	free(e2e_sandlot_ok("rm", "-f", bb, NULL));
	free(bb);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void test_no_image_means_default(void **state)
{
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "run", "--", "sh", "-c", "id -u; pwd", NULL), 0);
	assert_string_equal(r.out, "1000\n/home/user\n");
	e2e_result_free(&r);
	char *id = e2e_sandlot_ok("create", NULL);
	char *json = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(json, "\"image\":\t\"default\""));
	assert_true(e2e_contains(json, "\"user\":\t\"user\""));
	free(json);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void test_pip_and_venv(void **state)
{
	char *out = exec_ok("python3", "-m", "pip", "--version");
	assert_true(!strncmp(out, "pip ", 4));
	free(out);
	/* A venv with its own pip, made and used by the user. */
	out = exec_ok("sh", "-c",
		      "python3 -m venv /tmp/venv && /tmp/venv/bin/python -c "
		      "'import sys; print(sys.prefix)' && /tmp/venv/bin/pip --version >/dev/null "
		      "&& stat -c %u /tmp/venv/bin/python3");
	assert_string_equal(out, "/tmp/venv\n1000\n");
	free(out);
	/* pip may install for the user (no EXTERNALLY-MANAGED refusal); with no network it
	 * fails for want of an index, not for policy. */
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "exec", shared_id, "--", "python3", "-m", "pip", "install",
		    "--user", "--no-index", "nosuchpkg", NULL);
	assert_false(e2e_contains(r.err, "externally-managed"));
	assert_true(e2e_contains(r.err, "nosuchpkg"));
	e2e_result_free(&r);
}

static void test_tmp_writable_by_user(void **state)
{
	char *out =
	    exec_ok("sh", "-c",
		    "stat -c '%u %a' /tmp && echo hi > /tmp/by-user && stat -c %u /tmp/by-user"
		    " && cat /tmp/by-user && echo x > /home/user/f && cat /home/user/f");
	assert_string_equal(out, "0 1777\n1000\nhi\nx\n");
	free(out);
	/* ...and the rest of the tree is not. */
	e2e_result r;
	assert_int_not_equal(
	    e2e_sandlot(&r, NULL, 0, "exec", shared_id, "--", "sh", "-c", "echo x > /etc/f", NULL),
	    0);
	e2e_result_free(&r);
}

/* Lean: no manuals or package docs beyond licenses, no apt lists or downloaded .debs. */
static bool is_bloat(const char *p)
{
	static const char *const dirs[] = {"./usr/share/man/", "./usr/share/info/",
					   "./usr/share/doc/", "./var/lib/apt/lists/",
					   "./var/cache/apt/archives/"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n = strlen(dirs[i]);
		if (strncmp(p, dirs[i], n) != 0)
			continue;
		const char *base = strrchr(p, '/') + 1;
		return strcmp(base, "copyright") != 0 && strcmp(base, "lock") != 0;
	}
	return false;
}

/* The archive itself: what the build promises about every entry. */
static void test_tarball_entries(void **state)
{
	char *tar = tarball_path();
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	archive_read_support_filter_zstd(a);
	assert_int_equal(archive_read_open_filename(a, tar, 1 << 20), ARCHIVE_OK);
	struct archive_entry *e;
	size_t entries = 0, bloat = 0;
	int64_t bytes = 0;
	bool seen_mounts[7] = {0}, seen_meta = false, seen_tsrun = false, seen_sudo = false;
	static const char *const mounts[] = {"./proc/",	   "./sys/", "./dev/", "./dev/pts/",
					     "./dev/shm/", "./run/", "./tmp/"};
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		const char *p = archive_entry_pathname(e);
		mode_t type = archive_entry_filetype(e);
		entries++;
		bytes += archive_entry_size(e);
		bool home = !strcmp(p, "./home/user/") || !strncmp(p, "./home/user/", 12);
		if (home) {
			if (archive_entry_uid(e) != 1000 || archive_entry_gid(e) != 1000)
				fail_msg("%s is %jd:%jd, not 1000:1000", p,
					 (intmax_t)archive_entry_uid(e),
					 (intmax_t)archive_entry_gid(e));
		} else if (archive_entry_uid(e) != 0) {
			fail_msg("%s is owned by uid %jd, not root", p,
				 (intmax_t)archive_entry_uid(e));
		}
		if (type == AE_IFCHR || type == AE_IFBLK)
			fail_msg("%s is a device node", p);
		for (size_t i = 0; i < 7; i++)
			if (!strcmp(p, mounts[i])) {
				assert_int_equal(type, AE_IFDIR);
				seen_mounts[i] = true;
				if (!strcmp(p, "./tmp/"))
					assert_int_equal(archive_entry_perm(e), 01777);
			}
		if (!strcmp(p, "./etc/sandlot/image.json")) {
			char buf[256] = {0};
			archive_read_data(a, buf, sizeof(buf) - 1);
			assert_string_equal(
			    buf, "{\"user\":\"user\",\"workingDirectory\":\"/home/user\"}\n");
			seen_meta = true;
		}
		if (!strcmp(p, "./usr/local/bin/ts-run")) {
			assert_int_equal(archive_entry_perm(e), 0755);
			seen_tsrun = true;
		}
		/* sandlot's sudo, not setuid (nothing is under no_new_privs). */
		if (!strcmp(p, "./usr/lib/sandlot/sudo")) {
			assert_int_equal(archive_entry_perm(e), 0755);
			seen_sudo = true;
		}
		if (type == AE_IFREG && is_bloat(p)) {
			fprintf(stderr, "unexpected in a lean image: %s\n", p);
			bloat++;
		}
	}
	assert_int_equal(archive_read_free(a), ARCHIVE_OK);
	for (size_t i = 0; i < 7; i++)
		if (!seen_mounts[i])
			fail_msg("no mount point %s", mounts[i]);
	assert_true(seen_meta);
	assert_true(seen_tsrun);
	assert_true(seen_sudo);
	assert_int_equal(bloat, 0);
	struct stat st;
	assert_int_equal(stat(tar, &st), 0);
	printf("default image: %zu entries, %.0f MiB of files, %.1f MiB compressed\n", entries,
	       bytes / 1048576.0, st.st_size / 1048576.0);
	free(tar);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const long *)a < *(const long *)b ? -1 : *(const long *)a > *(const long *)b;
}

/* Median of N runs of CMD inside the sandbox, in microseconds, timed inside (so the CLI's
 * own cost is left out). */
static long inside_us(const char *cmd, int n)
{
	char line[512];
	snprintf(line, sizeof(line),
		 "for i in $(seq %d); do s=$(date +%%s%%N); %s >/dev/null; e=$(date +%%s%%N); "
		 "echo $(((e - s) / 1000)); done",
		 n, cmd);
	char *out = exec_ok("sh", "-c", line);
	long v[64];
	int k = 0;
	for (char *s = strtok(out, "\n"); s && k < 64; s = strtok(NULL, "\n"))
		v[k++] = atol(s);
	free(out);
	assert_int_equal(k, n);
	qsort(v, (size_t)k, sizeof(v[0]), cmp_int);
	return v[k / 2];
}

/* Cold interpreter starts, for the report; the bounds only catch something broken
 * (a missing .pyc cache, a node that compiles its own startup each time). */
static void test_cold_start_times(void **state)
{
	long sh_us = inside_us("true", 11);
	long py_us = inside_us("python3 -c pass", 11);
	long node_us = inside_us("node -e 0", 11);
	long ts_us = inside_us("sh -c 'echo \"console.log(1 as number)\" | ts-run -'", 7);
	int64_t t0 = e2e_now_ms();
	free(exec_ok("python3", "-c", "pass"));
	int64_t cli_py = e2e_now_ms() - t0;
	printf("default image cold starts (median, timed inside; `true` costs %.1f ms):\n"
	       "  python3 -c pass %.1f ms, node -e 0 %.1f ms, ts-run of console.log(1 as number) "
	       "%.1f ms; `sandlot exec python3 -c pass` from the host: %lld ms\n",
	       sh_us / 1000.0, py_us / 1000.0, node_us / 1000.0, ts_us / 1000.0, (long long)cli_py);
	assert_true(py_us < 1000 * 1000);
	assert_true(node_us < 3000 * 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_python_and_node_print),  E2E_TEST(test_typescript_runner),
	    E2E_TEST(test_git_curl_procps),	   E2E_TEST(test_runs_as_user_in_home),
	    E2E_TEST(test_no_image_means_default), E2E_TEST(test_pip_and_venv),
	    E2E_TEST(test_tmp_writable_by_user),   E2E_TEST(test_tarball_entries),
	    E2E_TEST(test_cold_start_times),
	    E2E_TEST(test_sudo_runs_as_root_with_env_and_exit_codes),
	    E2E_TEST(test_sudo_is_no_more_than_api_root),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

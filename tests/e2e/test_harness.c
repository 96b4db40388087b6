/* test_harness.c — the e2e harness tested on itself, without the CLI: the runner, the leak
 * snapshots (each must see a planted leak and go quiet once it is removed), teardown, probe. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch.h"

static char *take_diff(const e2e_snapshot *before)
{
	e2e_snapshot *after = e2e_snapshot_take();
	char *diff = e2e_snapshot_diff(before, after);

	e2e_snapshot_free(after);
	return diff;
}

static char *root_path(const char *name)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", e2e_root(), name) > 0);
	return p;
}

static void test_run_exit_status_and_signal(void **state)
{
	char *exit3[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
	char *killed[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
	char *missing[] = {"/nonexistent/program", NULL};
	e2e_result r;

	assert_int_equal(e2e_run(&r, NULL, 0, 10000, exit3), 3);
	assert_string_equal(r.out, "out\n");
	assert_string_equal(r.err, "err\n");
	assert_false(r.timed_out);
	e2e_result_free(&r);
	assert_int_equal(e2e_run(&r, NULL, 0, 10000, killed), 128 + SIGKILL);
	e2e_result_free(&r);
	assert_int_equal(e2e_run(&r, NULL, 0, 10000, missing), 127);
	assert_true(e2e_contains(r.err, "/nonexistent/program"));
	e2e_result_free(&r);
}

/* Both pipes full at once and 4 MiB through stdin: deadlocks unless I/O is poll-driven. */
static void test_run_big_io_does_not_deadlock(void **state)
{
	char *both[] = {"/bin/sh", "-c", "head -c 3000000 /dev/zero; head -c 2000000 /dev/zero >&2",
			NULL};
	char *cat[] = {"/bin/cat", NULL};
	size_t in_len = 4 << 20;
	_cleanup_free_ char *in = malloc(in_len);
	e2e_result r;

	assert_non_null(in);
	assert_int_equal(e2e_run(&r, NULL, 0, 30000, both), 0);
	assert_int_equal(r.out_len, 3000000);
	assert_int_equal(r.err_len, 2000000);
	e2e_result_free(&r);
	for (size_t i = 0; i < in_len; i++)
		in[i] = (char)('a' + i % 26);
	assert_int_equal(e2e_run(&r, in, in_len, 30000, cat), 0);
	assert_int_equal(r.out_len, in_len);
	assert_memory_equal(r.out, in, in_len);
	e2e_result_free(&r);
}

/* A child that ignores stdin must not SIGPIPE the test; empty stdin means EOF. */
static void test_run_stdin_edges(void **state)
{
	char *ignore[] = {"/bin/sh", "-c", "exec 0<&-; echo done", NULL};
	char *cat[] = {"/bin/cat", NULL};
	size_t in_len = 1 << 20;
	_cleanup_free_ char *in = calloc(1, in_len);
	e2e_result r;

	assert_int_equal(e2e_run(&r, in, in_len, 10000, ignore), 0);
	assert_string_equal(r.out, "done\n");
	e2e_result_free(&r);
	assert_int_equal(e2e_run(&r, "", 0, 10000, cat), 0);
	assert_int_equal(r.out_len, 0);
	e2e_result_free(&r);
}

static void test_run_timeout_kills_child(void **state)
{
	char *sleeper[] = {"/bin/sleep", "30", NULL};
	e2e_result r;
	int64_t start = e2e_now_ms();

	assert_int_equal(e2e_run(&r, NULL, 0, 300, sleeper), 128 + SIGKILL);
	assert_true(r.timed_out);
	assert_true(e2e_now_ms() - start < 5000);
	e2e_result_free(&r);
}

/* A daemonised grandchild keeping stdout open must not hang the runner; the subreaper
 * makes it ours, so the snapshot reports it until it is killed. */
static void test_run_leaked_grandchild_is_seen(void **state)
{
	char *daemon[] = {"/bin/sh", "-c", "sleep 30 & echo $!", NULL};
	e2e_result r;
	int64_t start = e2e_now_ms();

	assert_int_equal(e2e_run(&r, NULL, 0, 10000, daemon), 0);
	assert_true(e2e_now_ms() - start < 5000);
	pid_t pid = (pid_t)strtol(r.out, NULL, 10);
	e2e_result_free(&r);
	assert_true(pid > 0);

	_cleanup_free_ char *diff = take_diff(*state);
	char needle[64];
	snprintf(needle, sizeof(needle), "+ process %d sleep", pid);
	assert_true(e2e_contains(diff, needle));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid); /* adopted: we are its subreaper */
	/* the teardown's leak check now proves the snapshot is quiet again */
}

static void test_snapshot_sees_mount(void **state)
{
	_cleanup_free_ char *dir = root_path("harness-mnt");
	_cleanup_free_ char *diff = NULL;

	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mount("e2e-harness", dir, "tmpfs", 0, "size=64k"), 0);
	diff = take_diff(*state);
	assert_true(e2e_contains(diff, dir));
	assert_true(e2e_contains(diff, "tmpfs e2e-harness"));
	assert_int_equal(umount(dir), 0);
	assert_int_equal(rmdir(dir), 0);
	free(diff);
	diff = take_diff(*state);
	assert_null(diff);
}

static void test_snapshot_sees_cgroup(void **state)
{
	char dir[128];

	if (access("/sys/fs/cgroup/pids", F_OK) == 0)
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids/sandlot-harness-%d", getpid());
	else
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/sandlot-harness-%d", getpid());
	assert_int_equal(mkdir(dir, 0755), 0);
	_cleanup_free_ char *diff = take_diff(*state);
	assert_int_equal(rmdir(dir), 0);
	assert_true(e2e_contains(diff, dir));
}

static int attach_loop(const char *backing)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	_cleanup_close_ int file = open(backing, O_RDWR | O_CLOEXEC);
	char dev[64];

	assert_true(ctl >= 0 && file >= 0);
	int n = ioctl(ctl, LOOP_CTL_GET_FREE);
	assert_true(n >= 0);
	snprintf(dev, sizeof(dev), "/dev/loop%d", n);
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, LOOP_SET_FD, file), 0);
	return fd;
}

static void make_file(const char *path, off_t size)
{
	_cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
}

static void test_snapshot_sees_loop_device(void **state)
{
	_cleanup_free_ char *img = root_path("harness-loop.img");
	_cleanup_free_ char *diff = NULL;

	make_file(img, 1 << 20);
	_cleanup_close_ int fd = attach_loop(img);
	diff = take_diff(*state);
	assert_int_equal(ioctl(fd, LOOP_CLR_FD, 0), 0);
	assert_true(e2e_contains(diff, img));
	assert_true(e2e_contains(diff, "+ loop loop"));
	assert_int_equal(unlink(img), 0);
}

/* A bridge a live daemon holds is the daemon's (docs/network.md), not a leak: hidden
 * while a holder (pid and start time in <state>/net/holders/<pid>) lives, seen
 * otherwise. */
static void test_snapshot_held_bridge(void **state)
{
	const char *br = "slharness0";
	setenv("SANDLOT_NET_BRIDGE", br, 1);
	char *add[] = {"/bin/sh", "-c", "ip link add slharness0 type bridge", NULL};
	char *del[] = {"/bin/sh", "-c", "ip link del slharness0", NULL};
	e2e_result r;
	char *dir = e2e_printf("%s/net/holders", getenv("SANDLOT_STATE_DIR"));
	char *holder = e2e_printf("%s/%d", dir, (int)getpid());
	char *mk = e2e_printf("mkdir -p '%s'", dir);
	char *mkdir_p[] = {"/bin/sh", "-c", mk, NULL};
	assert_int_equal(e2e_run(&r, NULL, 0, 10000, mkdir_p), 0);
	e2e_result_free(&r);
	free(mk);
	/* Held by a live process (this one): not seen. */
	char *text = e2e_printf("%d %llu\n", (int)getpid(),
				(unsigned long long)proc_start_time(getpid()));
	FILE *f = fopen(holder, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(e2e_run(&r, NULL, 0, 10000, add), 0);
	e2e_result_free(&r);
	char *want = e2e_printf("+ netif %s", br);
	char *diff = take_diff(*state);
	assert_false(e2e_contains(diff, want));
	free(diff);
	/* A holder that is not alive (wrong start time) holds nothing: seen. */
	f = fopen(holder, "w");
	assert_non_null(f);
	fprintf(f, "%d 1\n", (int)getpid());
	fclose(f);
	diff = take_diff(*state);
	assert_true(e2e_contains(diff, want));
	free(diff);
	unlink(holder);
	rmdir(dir);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);
	assert_int_equal(e2e_run(&r, NULL, 0, 10000, del), 0);
	e2e_result_free(&r);
	unsetenv("SANDLOT_NET_BRIDGE");
	free(dir), free(holder), free(text), free(want);
}

static void test_snapshot_equal_is_null(void **state)
{
	e2e_snapshot *a = e2e_snapshot_take();
	e2e_snapshot *b = e2e_snapshot_take();
	char *diff = e2e_snapshot_diff(a, b);

	e2e_snapshot_free(a);
	e2e_snapshot_free(b);
	assert_null(diff);
}

/* The positive control: on the host as root every probe must get through, or a probe
 * that reports EPERM inside a sandbox proves nothing. */
static void test_probe_on_host(void **state)
{
	_cleanup_free_ char *probe = e2e_build_path("probe");
	_cleanup_free_ char *mnt = root_path("probe-mnt");
	char *argv[] = {probe, "--ptrace-target", "child", "--mount-dir", mnt, NULL};
	const char *must_pass[] = {"mount", "unshare",	       "keyctl",
				   "bpf",   "perf_event_open", "ptrace"};
	e2e_result r;

	if (access(probe, X_OK) != 0) {
		print_error("%s missing: run `make build/probe`\n", probe);
		fail();
	}
	assert_int_equal(e2e_run(&r, NULL, 0, 30000, argv), 0);
	for (size_t i = 0; i < sizeof(must_pass) / sizeof(must_pass[0]); i++) {
		_cleanup_free_ char *v = e2e_probe_field(r.out, must_pass[i]);
		if (!v || strcmp(v, "ok") != 0) {
			print_error("probe %s: %s\nfull output:\n%s%s", must_pass[i],
				    v ? v : "(no line)", r.out, r.err);
			fail();
		}
	}
	/* ENOEXEC (loader reached) or ENOSYS (kernel without modules): anything but EPERM. */
	_cleanup_free_ char *init_module = e2e_probe_field(r.out, "init_module");
	assert_non_null(init_module);
	assert_string_not_equal(init_module, "ok");
	assert_string_not_equal(init_module, "errno=EPERM");
	e2e_result_free(&r);
	assert_int_equal(access(mnt, F_OK), -1); /* the probe removed the dir it made */
}

/* Runs outside the group fixtures: plants what a crashed sandlot would leave (nested and
 * stacked mounts, a loop device, a symlink out of the root) and checks teardown clears it
 * without following the symlink. */
static void test_teardown_cleans_everything(void **state)
{
	char outside[128], keep[160];

	e2e_env_setup_opts(false);
	_cleanup_free_ char *root = strdup(e2e_root());
	_cleanup_free_ char *a = root_path("state/a");
	_cleanup_free_ char *b = root_path("state/a/b");
	_cleanup_free_ char *link = root_path("state/link-out");
	_cleanup_free_ char *img = root_path("state/store.img");
	snprintf(outside, sizeof(outside), "%s-outside", root);
	snprintf(keep, sizeof(keep), "%s/keep", outside);

	assert_int_equal(mkdir(outside, 0700), 0);
	make_file(keep, 1);
	_cleanup_free_ char *state_dir = root_path("state");
	assert_int_equal(mkdir(state_dir, 0700), 0);
	assert_int_equal(mkdir(a, 0700), 0);
	assert_int_equal(mount("e2e-a", a, "tmpfs", 0, "size=64k"), 0);
	assert_int_equal(mount("e2e-a2", a, "tmpfs", 0, "size=64k"), 0); /* stacked */
	assert_int_equal(mkdir(b, 0700), 0);
	assert_int_equal(mount("e2e-b", b, "tmpfs", 0, "size=64k"), 0);
	assert_int_equal(symlink(outside, link), 0);
	make_file(img, 1 << 20);
	int loop = attach_loop(img);
	close(loop); /* stays attached: no autoclear */

	e2e_env_teardown();
	assert_int_equal(access(root, F_OK), -1);
	assert_int_equal(access(keep, F_OK), 0);
	_cleanup_free_ char *mounts = e2e_read_file("/proc/self/mountinfo");
	assert_false(e2e_contains(mounts, root));
	assert_int_equal(unlink(keep), 0);
	assert_int_equal(rmdir(outside), 0);
}

int main(void)
{
	const struct CMUnitTest with_env[] = {
	    E2E_TEST(test_run_exit_status_and_signal),
	    E2E_TEST(test_run_big_io_does_not_deadlock),
	    E2E_TEST(test_run_stdin_edges),
	    E2E_TEST(test_run_timeout_kills_child),
	    E2E_TEST(test_run_leaked_grandchild_is_seen),
	    E2E_TEST(test_snapshot_sees_mount),
	    E2E_TEST(test_snapshot_sees_cgroup),
	    E2E_TEST(test_snapshot_sees_loop_device),
	    E2E_TEST(test_snapshot_held_bridge),
	    E2E_TEST(test_snapshot_equal_is_null),
	    E2E_TEST(test_probe_on_host),
	};
	const struct CMUnitTest alone[] = {
	    cmocka_unit_test(test_teardown_cleans_everything),
	};
	e2e_apply_filter();
	int failed = cmocka_run_group_tests_name("harness", with_env, e2e_group_setup_no_image,
						 e2e_group_teardown);

	return failed + cmocka_run_group_tests_name("harness teardown", alone, NULL, NULL);
}

/* test_seccomp.c — the profile compiler, the BPF cache and the installed filter:
 * filters are loaded in forked children, which report the first failed check. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "err.h"
#include "launch.h"
#include "log.h"
#include "seccomp.h"

#define KERNEL "6.18.44-fc"

/* One syscall a child makes under a filter: WANT_ERRNO 0 means it must succeed. */
struct check {
	const char *what;
	long nr;
	long a[5];
	int want_errno;
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 4096 > cap) {
			cap = cap * 2 + 4096;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void spew(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* REL, a file of the repository, found from the working directory (make runs tests
 * from the root) or from this file's path, into PATH. */
static const char *repo_file(const char *rel, char *path, size_t len)
{
	if (access(rel, R_OK) == 0)
		return rel;
	snprintf(path, len, "%s", __FILE__);
	char *slash = strrchr(path, '/');
	if (slash)
		snprintf(slash, len - (slash - path), "/../../%s", rel);
	return path;
}

/* The repository's profile. */
static const char *default_profile_path(void)
{
	static char path[4096];
	return repo_file("seccomp/default.json", path, sizeof(path));
}

static char *default_profile(size_t *len)
{
	char *json = slurp(default_profile_path(), len);
	assert_non_null(json);
	return json;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(p);
}

static char *tmpdir_new(void)
{
	char *dir = strdup("/tmp/sandlot-test-seccomp-XXXXXX");
	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void tmpdir_remove(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* The filtered child leaves by exit_group itself: under the sanitizers (make SAN=1) _exit
 * is a leak check, which needs syscalls the filters under test deny (exit status 1). */
static _Noreturn void child_exit(int code)
{
	syscall(SYS_exit_group, code);
	__builtin_unreachable();
}

/* Runs in the child: CHECK_EXIT + the index of the first check whose result is
 * wrong, 0 if none (exit codes below CHECK_EXIT mean the child died otherwise). */
#define CHECK_EXIT 10
static int run_checks(const struct check *checks, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct check *c = &checks[i];
		errno = 0;
		long ret = syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4]);
		int e = errno;
		if (c->nr == SYS_clone && ret == 0)
			child_exit(0); /* the clone child itself, should it exist */
		if (c->nr == SYS_clone && ret > 0)
			waitpid(ret, NULL, 0);
		bool ok = c->want_errno ? ret == -1 && e == c->want_errno : ret != -1;
		if (!ok)
			return CHECK_EXIT + i;
	}
	return 0;
}

/* Fork; the child installs the filter (BPF when non-NULL, else CTX via libseccomp)
 * and runs CHECKS; the parent fails the test naming the first check that went wrong. */
static void expect_in_child(const sl_bpf *bpf, scmp_filter_ctx ctx, const struct check *checks,
			    size_t n)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			child_exit(200);
		if (bpf) {
			sl_err err = {0};
			if (seccomp_bpf_install(bpf, &err) < 0)
				child_exit(201);
		} else if (seccomp_load(ctx) < 0) {
			child_exit(202);
		}
		child_exit(run_checks(checks, n));
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("filtered child killed by signal %d", WTERMSIG(status));
	int code = WEXITSTATUS(status);
	if (code >= 200)
		fail_msg("child could not install the filter (exit %d)", code);
	if (code >= CHECK_EXIT && (size_t)(code - CHECK_EXIT) < n)
		fail_msg("check \"%s\" gave the wrong result under the filter",
			 checks[code - CHECK_EXIT].what);
	if (code != 0)
		fail_msg("filtered child failed outside the checks (exit %d)", code);
}

static scmp_filter_ctx compile_ok(const char *json, uint64_t caps)
{
	scmp_filter_ctx ctx = NULL;
	sl_err err = {0};
	int rc = seccomp_profile_compile(json, strlen(json), caps, KERNEL, &ctx, &err);
	if (rc < 0)
		fail_msg("compile: %s", err.msg);
	assert_non_null(ctx);
	return ctx;
}

static void test_default_caps(void **state)
{
	uint64_t caps = seccomp_default_caps();
	assert_int_equal(__builtin_popcountll(caps), 11);
	assert_true(caps & (1ULL << CAP_SYS_CHROOT));
	assert_true(caps & (1ULL << CAP_NET_BIND_SERVICE));
	assert_false(caps & (1ULL << CAP_SYS_ADMIN));
	assert_false(caps & (1ULL << CAP_SYS_PTRACE));
}

static void test_default_profile_compiles(void **state)
{
	size_t len;
	_cleanup_free_ char *json = default_profile(&len);
	scmp_filter_ctx ctx = NULL;
	sl_err err = {0};
	assert_int_equal(
	    seccomp_profile_compile(json, len, seccomp_default_caps(), NULL, &ctx, &err), 0);
	assert_non_null(ctx);
	/* The 32-bit and x32 ABIs are left out of the filter (docs/seccomp.md). */
	assert_int_equal(seccomp_arch_exist(ctx, seccomp_arch_native()), 0);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X86), -EEXIST);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X32), -EEXIST);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_ARM), -EEXIST);
	seccomp_release(ctx);
	/* A profile that lists sub-architectures for the native arch still gets them. */
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		const char *subs = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"archMap\":["
				   "{\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":"
				   "[\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"]}],\"syscalls\":[]}";
		assert_int_equal(seccomp_profile_compile(subs, strlen(subs), seccomp_default_caps(),
							 NULL, &ctx, &err),
				 0);
		assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X86), 0);
		assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X32), 0);
		seccomp_release(ctx);
	}
	/* The sandbox set must not allow key management: keyctl is nowhere in the profile. */
	assert_null(strstr(json, "\"keyctl\""));
	assert_null(strstr(json, "\"add_key\""));
	assert_null(strstr(json, "\"request_key\""));
}

/* The hot path a sandbox start takes: cached BPF for the real profile, installed
 * with no_new_privs, then the forbidden calls fail with EPERM and ordinary ones work. */
static void test_default_profile_installed(void **state)
{
	char *dir = tmpdir_new();
	char cache[4200];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	sl_bpf bpf = {0};
	sl_err err = {0};
	if (seccomp_bpf_get(default_profile_path(), cache, seccomp_default_caps(), &bpf, &err) < 0)
		fail_msg("bpf_get: %s", err.msg);
	const struct check checks[] = {
	    {"getpid works", SYS_getpid, {0}, 0},
	    {"socket(AF_UNIX) works", SYS_socket, {AF_UNIX, SOCK_STREAM}, 0},
	    {"fork (clone without namespace flags) works", SYS_clone, {SIGCHLD}, 0},
	    {"keyctl is EPERM",
	     SYS_keyctl,
	     {KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING},
	     EPERM},
	    {"add_key is EPERM", SYS_add_key, {0}, EPERM},
	    {"unshare(CLONE_NEWUSER) is EPERM", SYS_unshare, {CLONE_NEWUSER}, EPERM},
	    {"clone(CLONE_NEWUSER) is EPERM (MASKED_EQ rule)",
	     SYS_clone,
	     {CLONE_NEWUSER | SIGCHLD},
	     EPERM},
	    {"clone3 is ENOSYS", SYS_clone3, {0}, ENOSYS},
	    {"mount is EPERM",
	     SYS_mount,
	     {(long)"none", (long)"/nonexistent-sandlot", (long)"tmpfs"},
	     EPERM},
	    {"setns is EPERM", SYS_setns, {-1, 0}, EPERM},
	    {"bpf is EPERM", SYS_bpf, {5}, EPERM},
	    {"perf_event_open is EPERM", SYS_perf_event_open, {0, 0, -1, -1}, EPERM},
	    {"init_module is EPERM", SYS_init_module, {0, 0, (long)""}, EPERM},
	    {"socket(AF_VSOCK) is EPERM", SYS_socket, {40, SOCK_STREAM}, EPERM},
	    {"personality query works", SYS_personality, {0xffffffff}, 0},
	    /* allowed, so the kernel answers: no such process, no such directory */
	    {"ptrace reaches the kernel", SYS_ptrace, {PTRACE_ATTACH, -1}, ESRCH},
	    {"chroot reaches the kernel (CAP_SYS_CHROOT)",
	     SYS_chroot,
	     {(long)"/nonexistent-sandlot"},
	     ENOENT},
	};
	expect_in_child(&bpf, NULL, checks, sizeof(checks) / sizeof(checks[0]));
	seccomp_bpf_free(&bpf);
	assert_null(bpf.insns);
	tmpdir_remove(dir);
}

static void test_sys_admin_allows_unshare(void **state)
{
	size_t len;
	_cleanup_free_ char *json = default_profile(&len);
	const struct check without[] = {
	    {"unshare(0) is EPERM without CAP_SYS_ADMIN", SYS_unshare, {0}, EPERM},
	};
	const struct check with[] = {
	    {"unshare(0) works with CAP_SYS_ADMIN", SYS_unshare, {0}, 0},
	    {"clone3 reaches the kernel with CAP_SYS_ADMIN", SYS_clone3, {0, 0}, EINVAL},
	    {"setns reaches the kernel with CAP_SYS_ADMIN", SYS_setns, {-1, 0}, EBADF},
	};
	scmp_filter_ctx ctx = compile_ok(json, seccomp_default_caps());
	expect_in_child(NULL, ctx, without, 1);
	seccomp_release(ctx);
	ctx = compile_ok(json, seccomp_default_caps() | 1ULL << CAP_SYS_ADMIN);
	expect_in_child(NULL, ctx, with, sizeof(with) / sizeof(with[0]));
	seccomp_release(ctx);
}

/* includes.caps needs every cap listed; excludes.caps drops the rule for any one. */
static void test_caps_include_exclude(void **state)
{
	const char *json = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
			   "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,"
			   " \"includes\":{\"caps\":[\"CAP_SYS_ADMIN\",\"CAP_NET_ADMIN\"]}},"
			   "{\"names\":[\"getpgrp\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":43,"
			   " \"excludes\":{\"caps\":[\"CAP_SYS_ADMIN\",\"CAP_BPF\"]}}]}";
	const struct check admin_only[] = {
	    {"getppid rule needs both caps", SYS_getppid, {0}, 0},
	    {"getpgrp rule excluded by one cap", SYS_getpgrp, {0}, 0},
	};
	const struct check both[] = {
	    {"getppid rule included with both caps", SYS_getppid, {0}, 42},
	    {"getpgrp rule still excluded", SYS_getpgrp, {0}, 0},
	};
	const struct check none[] = {
	    {"getppid rule not included without caps", SYS_getppid, {0}, 0},
	    {"getpgrp rule applies without caps", SYS_getpgrp, {0}, 43},
	};
	scmp_filter_ctx ctx = compile_ok(json, 1ULL << CAP_SYS_ADMIN);
	expect_in_child(NULL, ctx, admin_only, 2);
	seccomp_release(ctx);
	ctx = compile_ok(json, 1ULL << CAP_SYS_ADMIN | 1ULL << CAP_NET_ADMIN);
	expect_in_child(NULL, ctx, both, 2);
	seccomp_release(ctx);
	ctx = compile_ok(json, 0);
	expect_in_child(NULL, ctx, none, 2);
	seccomp_release(ctx);
}

static void test_arches_and_min_kernel(void **state)
{
	const char *go, *lib, *constant;
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		go = "amd64", lib = "x86_64", constant = "SCMP_ARCH_X86_64";
	} else if (seccomp_arch_native() == SCMP_ARCH_AARCH64) {
		go = "arm64", lib = "aarch64", constant = "SCMP_ARCH_AARCH64";
	} else {
		skip();
		return;
	}
	char json[2048];
	snprintf(json, sizeof(json),
		 "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
		 "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,"
		 " \"includes\":{\"arches\":[\"s390x\",\"%s\"]}},"
		 "{\"names\":[\"getpgrp\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":43,"
		 " \"includes\":{\"arches\":[\"s390x\"]}},"
		 "{\"names\":[\"getuid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":44,"
		 " \"excludes\":{\"arches\":[\"%s\"]}},"
		 "{\"names\":[\"getgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":45,"
		 " \"excludes\":{\"arches\":[\"ppc64le\"]}},"
		 "{\"names\":[\"geteuid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":46,"
		 " \"includes\":{\"arches\":[\"%s\"]}},"
		 "{\"names\":[\"getegid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":47,"
		 " \"includes\":{\"minKernel\":\"6.19\"}},"
		 "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":48,"
		 " \"includes\":{\"minKernel\":\"6.18\"}}]}",
		 go, lib, constant);
	const struct check checks[] = {
	    {"included for the Go spelling of the native arch", SYS_getppid, {0}, 42},
	    {"not included for another arch", SYS_getpgrp, {0}, 0},
	    {"excluded for libseccomp's spelling of the native arch", SYS_getuid, {0}, 0},
	    {"not excluded for another arch", SYS_getgid, {0}, 45},
	    {"included for the SCMP_ARCH_ spelling", SYS_geteuid, {0}, 46},
	    {"minKernel above the release drops the rule", SYS_getegid, {0}, 0},
	    {"minKernel at the release keeps the rule", SYS_getsid, {0}, 48},
	};
	scmp_filter_ctx ctx = compile_ok(json, 0);
	expect_in_child(NULL, ctx, checks, sizeof(checks) / sizeof(checks[0]));
	seccomp_release(ctx);
}

/* Conditions of one rule are ANDed; MASKED_EQ compares (arg & value) == valueTwo. */
static void test_args_masked_eq_and(void **state)
{
	const char *json =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":["
	    " {\"index\":0,\"value\":240,\"valueTwo\":48,\"op\":\"SCMP_CMP_MASKED_EQ\"},"
	    " {\"index\":1,\"value\":7,\"op\":\"SCMP_CMP_GT\"}]},"
	    "{\"names\":[\"getpgrp\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":["
	    " {\"index\":2,\"value\":4294967295,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	const struct check checks[] = {
	    {"both conditions hold", SYS_getppid, {0x35, 8}, 42},
	    {"masked bits differ", SYS_getppid, {0x45, 8}, 0},
	    {"second condition fails", SYS_getppid, {0x35, 7}, 0},
	    {"32-bit all-ones value matches", SYS_getpgrp, {0, 0, 0xffffffffL}, EPERM},
	    {"other value passes", SYS_getpgrp, {0, 0, 1}, 0},
	};
	scmp_filter_ctx ctx = compile_ok(json, 0);
	expect_in_child(NULL, ctx, checks, sizeof(checks) / sizeof(checks[0]));
	seccomp_release(ctx);
}

static int count_substr(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_unknown_names_one_warning(void **state)
{
	char *dir = tmpdir_new();
	char log[4200];
	snprintf(log, sizeof(log), "%s/log", dir);
	assert_int_equal(sl_log_open(log), 0);
	const char *json = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
			   "{\"names\":[\"getpid\",\"sandlot_nope_a\",\"sandlot_nope_b\"],"
			   " \"action\":\"SCMP_ACT_ALLOW\"},"
			   "{\"names\":[\"sandlot_nope_a\",\"sandlot_nope_c\",\"getppid\","
			   " \"exit_group\",\"exit\"],"
			   " \"action\":\"SCMP_ACT_ALLOW\"}]}";
	scmp_filter_ctx ctx = compile_ok(json, 0);
	_cleanup_free_ char *text = slurp(log, NULL);
	assert_non_null(text);
	assert_int_equal(count_substr(text, "unknown to libseccomp"), 1);
	assert_int_equal(count_substr(text, "\n"), 1);
	assert_non_null(strstr(text, "warn"));
	assert_non_null(strstr(text, "skipped 3 syscall name(s)"));
	assert_non_null(strstr(text, "sandlot_nope_a, sandlot_nope_b, sandlot_nope_c"));
	/* the known names of the same rules are still in the filter */
	const struct check checks[] = {
	    {"getpid allowed", SYS_getpid, {0}, 0},
	    {"getppid allowed", SYS_getppid, {0}, 0},
	    {"getuid denied", SYS_getuid, {0}, EPERM},
	};
	expect_in_child(NULL, ctx, checks, 3);
	seccomp_release(ctx);

	/* On a libseccomp that lacks names the real profile uses, still one line. */
	if (seccomp_syscall_resolve_name("statmount") == __NR_SCMP_ERROR) {
		size_t len;
		_cleanup_free_ char *prof = default_profile(&len);
		assert_int_equal(truncate(log, 0), 0);
		ctx = NULL;
		sl_err err = {0};
		assert_int_equal(
		    seccomp_profile_compile(prof, len, seccomp_default_caps(), KERNEL, &ctx, &err),
		    0);
		seccomp_release(ctx);
		_cleanup_free_ char *text2 = slurp(log, NULL);
		assert_int_equal(count_substr(text2, "\n"), 1);
		assert_non_null(strstr(text2, "statmount"));
	}
	tmpdir_remove(dir);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {"{\"defaultAction\":", "malformed JSON"},
	    {"[]", "top level"},
	    {"{}", "defaultAction: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_NOPE\"}", "defaultAction: unknown action"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":-1}", "defaultErrnoRet"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":{}}", "syscalls: not an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"archMap\":[{\"architecture\":1}]}",
	     "archMap[0]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":\"getpid\",\"action\":\"SCMP_ACT_ALLOW\"}]}",
	     "syscalls[0].names"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_FOO\"}]}",
	     "syscalls[1].action: unknown action \"SCMP_ACT_FOO\""},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	     "[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_FOO\"}]}]}",
	     "syscalls[0].args[0].op: unknown operator"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	     "[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},"
	     "{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
	     "syscalls[0].args[1].index"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	     "[{\"index\":0,\"value\":-3,\"op\":\"SCMP_CMP_EQ\"}]}]}",
	     "syscalls[0].args[0].value"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	     "[{\"index\":0,\"value\":1,\"valueTwo\":\"x\",\"op\":\"SCMP_CMP_EQ\"}]}]}",
	     "syscalls[0].args[0].valueTwo"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
	     "[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_GT\"},"
	     "{\"index\":0,\"value\":9,\"op\":\"SCMP_CMP_LT\"}]}]}",
	     "syscalls[0].args[1].index: argument 0 is already compared"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":\"1\"}]}",
	     "syscalls[0].errnoRet"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"errnoRet\":1}]}",
	     "syscalls[0].errnoRet: only"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\", 7],\"action\":\"SCMP_ACT_ALLOW\"}]}",
	     "syscalls[0].names[1]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\","
	     "\"includes\":{\"caps\":\"CAP_SYS_ADMIN\"}}]}",
	     "syscalls[0].includes.caps"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\","
	     "\"includes\":{\"minKernel\":4}}]}",
	     "syscalls[0].includes.minKernel"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\","
	     "\"excludes\":{\"arches\":[\"amd64\", 3]}}]}",
	     "syscalls[0].excludes.arches[1]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	     "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_KILL\"}]}",
	     "syscalls[1]: \"getpid\" already has a different action from syscalls[0]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[17]}",
	     "syscalls[0]: not an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		scmp_filter_ctx ctx = (scmp_filter_ctx)0x1;
		sl_err err = {0};
		int rc = seccomp_profile_compile(cases[i].json, strlen(cases[i].json), 0, KERNEL,
						 &ctx, &err);
		if (rc != -1 || err.kind != SL_INVALID || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: rc %d kind %d msg \"%s\", want SL_INVALID with \"%s\"",
				 i, rc, err.kind, err.msg, cases[i].want);
		assert_null(ctx);
	}
	/* Same rule repeated with one action, and a rule equal to the default: both fine. */
	scmp_filter_ctx ctx =
	    compile_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
		       "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
		       "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
		       "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}",
		       0);
	seccomp_release(ctx);
}

static int count_bpf_files(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".bpf"))
			n++;
		else if (e->d_name[0] != '.')
			fail_msg("unexpected file %s in the cache dir", e->d_name);
	}
	return n;
}

/* The single .bpf file in DIR (fails when there is not exactly one). */
static void only_bpf_file(const char *dir, char *path, size_t size)
{
	assert_int_equal(count_bpf_files(dir), 1);
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strstr(e->d_name, ".bpf"))
			snprintf(path, size, "%s/%s", dir, e->d_name);
	closedir(d);
}

static bool bpf_equal(const sl_bpf *a, const sl_bpf *b)
{
	return a->len == b->len && !memcmp(a->insns, b->insns, a->len * sizeof(*a->insns));
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* podman's default profile (containers-common's, tests/fixtures/seccomp): sandlot's own
 * compiler refuses it (setns: allowed by syscalls[1], denied without CAP_SYS_ADMIN by
 * syscalls[15]); as a runtime spec's profile it compiles as under runc, whose libseccomp
 * keeps the first unconditional action. */
static void test_podman_profile_as_runc(void **state)
{
	char path[4096];
	size_t len;
	_cleanup_free_ char *json = slurp(
	    repo_file("tests/fixtures/seccomp/containers-common-default.json", path, sizeof(path)),
	    &len);
	assert_non_null(json);
	scmp_filter_ctx ctx = NULL;
	sl_err err = {0};
	assert_int_equal(
	    seccomp_profile_compile(json, len, seccomp_default_caps(), KERNEL, &ctx, &err), -1);
	if (!strstr(err.msg, "syscalls[15]: \"setns\" already has a different action"))
		fail_msg("strict compile: %s", err.msg);
	if (seccomp_spec_profile_compile(json, len, seccomp_default_caps(), KERNEL, &ctx, &err) < 0)
		fail_msg("as runc: %s", err.msg);
	const struct check checks[] = {
	    {"getpid works", SYS_getpid, {0}, 0},
	    {"setns reaches the kernel (syscalls[1] first)", SYS_setns, {-1, 0}, EBADF},
	    {"bpf is EPERM without CAP_SYS_ADMIN (syscalls[15])", SYS_bpf, {5}, EPERM},
	    {"socket(AF_UNIX) works", SYS_socket, {AF_UNIX, SOCK_STREAM}, 0},
	    {"an audit socket is EINVAL without CAP_AUDIT_WRITE (syscalls[30])",
	     SYS_socket,
	     {16 /* AF_NETLINK */, SOCK_RAW, 9 /* NETLINK_AUDIT */},
	     EINVAL},
	    {"add_key, listed nowhere, is ENOSYS (defaultErrnoRet)", SYS_add_key, {0}, ENOSYS},
	};
	expect_in_child(NULL, ctx, checks, sizeof(checks) / sizeof(checks[0]));
	seccomp_release(ctx);
}

/* libseccomp's merging, which the spec compiler leaves rules to: the first unconditional
 * action stays, an unconditional rule replaces a conditional one before it, and one
 * argument compared twice is two rules (runc's OR). */
static void test_spec_rules_merged_as_runc(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13},"
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":2},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13,"
	    "\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":2},"
	    "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13,"
	    "\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},"
	    "{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	scmp_filter_ctx ctx = NULL;
	sl_err err = {0};
	assert_int_equal(seccomp_profile_compile(json, strlen(json), 0, KERNEL, &ctx, &err), -1);
	if (seccomp_spec_profile_compile(json, strlen(json), 0, KERNEL, &ctx, &err) < 0)
		fail_msg("as runc: %s", err.msg);
	const struct check checks[] = {
	    {"getppid: the first unconditional action", SYS_getppid, {0}, EACCES},
	    {"getpgid(1): replaced by the unconditional rule", SYS_getpgid, {1}, ENOENT},
	    {"getpgid(0): the unconditional rule", SYS_getpgid, {0}, ENOENT},
	    {"getsid(1): one comparison of two", SYS_getsid, {1}, EACCES},
	    {"getsid(2): the other", SYS_getsid, {2}, EACCES},
	    {"getsid(0): neither, allowed", SYS_getsid, {0}, 0},
	};
	expect_in_child(NULL, ctx, checks, sizeof(checks) / sizeof(checks[0]));
	seccomp_release(ctx);
}

static void test_cache(void **state)
{
	char *dir = tmpdir_new();
	char profile[4200], cache[4200], file[8400];
	snprintf(profile, sizeof(profile), "%s/profile.json", dir);
	snprintf(cache, sizeof(cache), "%s/state/seccomp", dir);
	size_t len;
	_cleanup_free_ char *json = default_profile(&len);
	spew(profile, json, len);
	uint64_t caps = seccomp_default_caps();
	sl_err err = {0};

	sl_bpf first = {0}, again = {0};
	double t0 = now_ms();
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &first, &err), 0);
	double compile_ms = now_ms() - t0;
	assert_true(first.len > 0);
	only_bpf_file(cache, file, sizeof(file));
	struct stat st;
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal((size_t)st.st_size, first.len * sizeof(struct sock_filter));
	assert_int_equal(stat(cache, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);

	/* Hit: same bytes, and far cheaper than the compile. */
	double hit_ms = 1e9;
	for (int i = 0; i < 5; i++) {
		t0 = now_ms();
		assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
		double dt = now_ms() - t0;
		hit_ms = dt < hit_ms ? dt : hit_ms;
		assert_true(bpf_equal(&first, &again));
		seccomp_bpf_free(&again);
	}
	print_message("seccomp: compile+store %.3f ms, cache hit %.3f ms\n", compile_ms, hit_ms);
	assert_true(hit_ms * 5 < compile_ms);

	/* Proof the hit reads the file: a doctored program of the right size comes back. */
	sl_bpf doctored = {malloc(first.len * sizeof(*first.insns)), first.len};
	memcpy(doctored.insns, first.insns, first.len * sizeof(*first.insns));
	doctored.insns[first.len - 1].k ^= 0x5a;
	spew(file, doctored.insns, doctored.len * sizeof(*doctored.insns));
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
	assert_true(bpf_equal(&doctored, &again));
	seccomp_bpf_free(&again);
	seccomp_bpf_free(&doctored);

	/* A file of a size no program has is ignored and rewritten. */
	_cleanup_free_ char *junk = malloc(first.len * sizeof(*first.insns) + 3);
	memset(junk, 0xab, first.len * sizeof(*first.insns) + 3);
	spew(file, junk, first.len * sizeof(*first.insns) + 3);
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
	assert_true(bpf_equal(&first, &again));
	seccomp_bpf_free(&again);
	size_t flen;
	_cleanup_free_ char *fbytes = slurp(file, &flen);
	assert_int_equal(flen, first.len * sizeof(*first.insns));
	assert_memory_equal(fbytes, first.insns, flen);
	assert_int_equal(count_bpf_files(cache), 1);

	/* Empty files and files others may write are not trusted either. */
	spew(file, "", 0);
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
	assert_true(bpf_equal(&first, &again));
	seccomp_bpf_free(&again);
	assert_int_equal(chmod(file, 0666), 0);
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
	seccomp_bpf_free(&again);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	/* A changed profile (even by one newline) or other caps is another key. */
	spew(profile, json, len);
	FILE *f = fopen(profile, "a");
	assert_non_null(f);
	fputc('\n', f);
	fclose(f);
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &again, &err), 0);
	assert_true(bpf_equal(&first, &again));
	seccomp_bpf_free(&again);
	assert_int_equal(count_bpf_files(cache), 2);
	assert_int_equal(
	    seccomp_bpf_get(profile, cache, caps | 1ULL << CAP_SYS_ADMIN, &again, &err), 0);
	assert_false(bpf_equal(&first, &again));
	seccomp_bpf_free(&again);
	assert_int_equal(count_bpf_files(cache), 3);
	seccomp_bpf_free(&first);
	tmpdir_remove(dir);
}

static void test_cache_errors(void **state)
{
	char *dir = tmpdir_new();
	char path[4200], cache[4200];
	sl_bpf bpf = {0};
	sl_err err = {0};
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	assert_int_equal(seccomp_bpf_get(path, dir, 0, &bpf, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_non_null(strstr(err.msg, "missing.json"));

	snprintf(path, sizeof(path), "%s/bad.json", dir);
	spew(path, "{\"defaultAction\":\"SCMP_ACT_NOPE\"}", 33);
	assert_int_equal(seccomp_bpf_get(path, dir, 0, &bpf, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "bad.json"));
	assert_non_null(strstr(err.msg, "defaultAction"));

	/* A cache dir that cannot exist does not stop the sandbox; it only costs time. */
	snprintf(path, sizeof(path), "%s/ok.json", dir);
	const char *ok = "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}";
	spew(path, ok, strlen(ok));
	snprintf(cache, sizeof(cache), "%s/ok.json/cache", dir);
	assert_int_equal(seccomp_bpf_get(path, cache, 0, &bpf, &err), 0);
	assert_true(bpf.len > 0);
	seccomp_bpf_free(&bpf);

	sl_bpf empty = {0};
	assert_int_equal(seccomp_bpf_install(&empty, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	tmpdir_remove(dir);
}

/* ---- the split profile: what the kernel would answer, computed ---- */

/* Classic BPF as the kernel runs a seccomp filter, over D: the instructions libseccomp
 * emits (any other fails the test). */
static uint32_t bpf_run(const sl_bpf *p, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	for (unsigned pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->insns[pc];
		uint32_t k = f->k;
		if (BPF_CLASS(f->code) == BPF_JMP && BPF_OP(f->code) != BPF_JA &&
		    BPF_OP(f->code) != BPF_JSET) {
			/* A conditional jump compares A with K or X, as its source bit says. */
			uint32_t v = BPF_SRC(f->code) == BPF_X ? x : k;
			bool t;
			switch (BPF_OP(f->code)) {
			case BPF_JEQ:
				t = a == v;
				break;
			case BPF_JGT:
				t = a > v;
				break;
			case BPF_JGE:
				t = a >= v;
				break;
			default:
				fail_msg("bpf_run: opcode 0x%x at %u", f->code, pc);
				return 0;
			}
			pc += t ? f->jt : f->jf;
			continue;
		}
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(k % 4 == 0 && k + 4 <= sizeof(*d));
			memcpy(&a, (const char *)d + k, 4);
			break;
		case BPF_LD | BPF_IMM:
			a = k;
			break;
		case BPF_LDX | BPF_IMM:
			x = k;
			break;
		case BPF_LD | BPF_MEM:
			assert_true(k < BPF_MEMWORDS);
			a = mem[k];
			break;
		case BPF_LDX | BPF_MEM:
			assert_true(k < BPF_MEMWORDS);
			x = mem[k];
			break;
		case BPF_ST:
			assert_true(k < BPF_MEMWORDS);
			mem[k] = a;
			break;
		case BPF_STX:
			assert_true(k < BPF_MEMWORDS);
			mem[k] = x;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= k;
			break;
		case BPF_ALU | BPF_OR | BPF_K:
			a |= k;
			break;
		case BPF_MISC | BPF_TAX:
			x = a;
			break;
		case BPF_MISC | BPF_TXA:
			a = x;
			break;
		case BPF_JMP | BPF_JA:
			pc += k;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (a & k) ? f->jt : f->jf;
			break;
		case BPF_RET | BPF_K:
			return k;
		case BPF_RET | BPF_A:
			return a;
		default:
			fail_msg("bpf_run: opcode 0x%x at %u", f->code, pc);
		}
	}
	fail_msg("bpf_run: ran off the end");
	return 0;
}

/* Filters stacked as the kernel stacks them (NEWEST installed last): each runs, and the
 * action of highest precedence wins, the newest's on a tie (seccomp_run_filters). */
static uint32_t bpf_run_stack(const sl_bpf *oldest, const sl_bpf *newest,
			      const struct seccomp_data *d)
{
	uint32_t r = bpf_run(newest, d), o = bpf_run(oldest, d);
	return (int32_t)(o & SECCOMP_RET_ACTION_FULL) < (int32_t)(r & SECCOMP_RET_ACTION_FULL) ? o
											       : r;
}

/* The two halves of the split, stacked, answer every call as the whole profile does:
 * every syscall number of this arch, x32's and numbers past the table, under other
 * arches, with arguments of every single bit set, all clear and all set. */
static void test_split_equals_profile(void **state)
{
	char *dir = tmpdir_new();
	char cache[4200];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	const char *profile = default_profile_path();
	uint64_t caps = seccomp_default_caps();
	sl_err err = {0};
	sl_bpf whole = {0}, ahead = {0}, last = {0};
	assert_int_equal(seccomp_bpf_get(profile, cache, caps, &whole, &err), 0);
	assert_int_equal(
	    seccomp_bpf_get_split(profile, cache, caps, launch_take_calls, &ahead, &last, &err), 0);
	assert_true(last.len < 32 && last.len < ahead.len / 10);

	/* The interpreter is right about the profile: getpid allowed, mount EPERM. */
	struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64, .nr = SYS_getpid};
	assert_int_equal(bpf_run(&whole, &d), SECCOMP_RET_ALLOW);
	d.nr = SYS_mount;
	assert_int_equal(bpf_run(&whole, &d), SECCOMP_RET_ERRNO | EPERM);
	/* ... and each half alone is not the profile: the first allows a take's calls. */
	assert_int_equal(bpf_run(&ahead, &d), SECCOMP_RET_ALLOW);
	assert_int_equal(bpf_run(&last, &d), SECCOMP_RET_ERRNO | EPERM);
	d.nr = SYS_getpid;
	assert_int_equal(bpf_run(&last, &d), SECCOMP_RET_ALLOW);

	static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
					  0};
	static const uint32_t bases[] = {0, 0x40000000};
	unsigned long checked = 0, differ = 0;
	for (size_t ai = 0; ai < sizeof(arches) / sizeof(arches[0]); ai++)
		for (size_t bi = 0; bi < 2; bi++)
			for (int nr = 0; nr < 1024; nr++)
				for (int pat = -2; pat < 6 * 64; pat++) {
					d = (struct seccomp_data){.arch = arches[ai],
								  .nr = (int)(bases[bi] + nr),
								  .instruction_pointer = 0x401000};
					if (pat == -1)
						memset(d.args, 0xff, sizeof(d.args));
					else if (pat >= 0)
						d.args[pat / 64] = 1ULL << (pat % 64);
					uint32_t want = bpf_run(&whole, &d);
					uint32_t got = bpf_run_stack(&ahead, &last, &d);
					if (want != got && differ++ < 5)
						print_message(
						    "arch %#x nr %d pattern %d: profile %#x, "
						    "split %#x\n",
						    arches[ai], d.nr, pat, want, got);
					checked++;
				}
	print_message("seccomp split: %lu calls checked, whole %u instructions, ahead %u, "
		      "last %u\n",
		      checked, whole.len, ahead.len, last.len);
	assert_int_equal(differ, 0);

	/* Cached: the same programs again, three files in all. */
	sl_bpf a2 = {0}, l2 = {0};
	assert_int_equal(
	    seccomp_bpf_get_split(profile, cache, caps, launch_take_calls, &a2, &l2, &err), 0);
	assert_true(bpf_equal(&ahead, &a2) && bpf_equal(&last, &l2));
	assert_int_equal(count_bpf_files(cache), 3);
	seccomp_bpf_free(&a2);
	seccomp_bpf_free(&l2);

	/* Refused where the halves would not add up to the profile: a rule of its own for a
	 * held call (with CAP_SYS_ADMIN, Docker's allows mount), or allow by default. */
	assert_int_equal(seccomp_bpf_get_split(profile, cache, caps | 1ULL << CAP_SYS_ADMIN,
					       launch_take_calls, &a2, &l2, &err),
			 -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "cannot split at \"mount\""));
	assert_null(a2.insns);
	assert_null(l2.insns);
	char allow[4200];
	snprintf(allow, sizeof(allow), "%s/allow.json", dir);
	spew(allow, "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}", 34);
	assert_int_equal(
	    seccomp_bpf_get_split(allow, cache, caps, launch_take_calls, &a2, &l2, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	seccomp_bpf_free(&whole);
	seccomp_bpf_free(&ahead);
	seccomp_bpf_free(&last);
	tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_caps),
	    cmocka_unit_test(test_default_profile_compiles),
	    cmocka_unit_test(test_default_profile_installed),
	    cmocka_unit_test(test_sys_admin_allows_unshare),
	    cmocka_unit_test(test_caps_include_exclude),
	    cmocka_unit_test(test_arches_and_min_kernel),
	    cmocka_unit_test(test_args_masked_eq_and),
	    cmocka_unit_test(test_unknown_names_one_warning),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_podman_profile_as_runc),
	    cmocka_unit_test(test_spec_rules_merged_as_runc),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_cache_errors),
	    cmocka_unit_test(test_split_equals_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

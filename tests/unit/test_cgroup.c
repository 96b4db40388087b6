/* test_cgroup.c — the cgroup driver on fake v1/v2 trees in a temp dir (exact file
 * contents), plus a real v1 lifecycle and fork bomb on this host when run as root. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"

static const char *const v1_ctrls[] = {"cpu", "cpuacct", "memory", "pids", "freezer"};

typedef struct fixture {
	char root[64];
} fixture;

static void put(const char *root, const char *rel, const char *content)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("create %s: %s", path, strerror(errno));
	fputs(content, f);
	fclose(f);
}

static void mkd(const char *root, const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (mkdir(path, 0755) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* The content of ROOT/REL, or "<missing>". */
static const char *get(const char *root, const char *rel)
{
	static char buf[4096];
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "r");
	if (!f)
		return "<missing>";
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static bool exists(const char *root, const char *rel)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup_tmp(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));
	snprintf(fx->root, sizeof(fx->root), "/tmp/sl-cgtest-XXXXXX");
	if (!mkdtemp(fx->root))
		return -1;
	*state = fx;
	return 0;
}

static int teardown_tmp(void **state)
{
	fixture *fx = *state;
	nftw(fx->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static void make_v2(const char *root)
{
	put(root, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put(root, "cgroup.subtree_control", "");
}

/* Like this host: one hierarchy per controller, plus a cgroup2 "unified" dir. */
static void make_v1(const char *root)
{
	for (size_t i = 0; i < 5; i++)
		mkd(root, v1_ctrls[i]);
	mkd(root, "blkio");
	mkd(root, "unified");
	put(root, "unified/cgroup.controllers", "hugetlb\n");
}

/* Three fake trees under the fixture: v1 (this host's layout), v2, and v1 with cpu
 * and cpuacct in one "cpu,cpuacct" hierarchy (no symlinks). */
static void make_trees(fixture *fx, char v1[128], char v2[128], char both[128])
{
	snprintf(v1, 128, "%s/v1", fx->root);
	snprintf(v2, 128, "%s/v2", fx->root);
	snprintf(both, 128, "%s/comb", fx->root);
	mkdir(v1, 0755);
	mkdir(v2, 0755);
	mkdir(both, 0755);
	make_v1(v1);
	make_v2(v2);
	mkd(both, "cpu,cpuacct");
	mkd(both, "memory");
	mkd(both, "pids");
	mkd(both, "freezer");
}

static sl_cgroup *open_ok(const char *root, int version)
{
	sl_cgroup *cg = NULL;
	sl_err err = {0};
	if (cgroup_open(root, &cg, &err) != 0)
		fail_msg("cgroup_open %s: %s", root, err.msg);
	assert_int_equal(cgroup_version(cg), version);
	return cg;
}

static const sl_limits std_limits = {
    .cpu_millicores = 500, .memory_bytes = 64ULL << 20, .pids_max = 64};

static void test_detect(void **state)
{
	fixture *fx = *state;
	char v1[128], v2[128], both[128];
	make_trees(fx, v1, v2, both);
	cgroup_close(open_ok(v1, 1));
	cgroup_close(open_ok(v2, 2));

	/* "cpu,cpuacct" with the usual symlinks, and without them */
	sl_cgroup *cg = open_ok(both, 1);
	char a[512], b[512];
	assert_int_equal(cgroup_path(cg, "cpu", "x", a, sizeof(a)), 0);
	assert_int_equal(cgroup_path(cg, "cpuacct", "x", b, sizeof(b)), 0);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "/cpu,cpuacct/x"));
	cgroup_close(cg);
	char link[256];
	snprintf(link, sizeof(link), "%s/cpu", both);
	assert_int_equal(symlink("cpu,cpuacct", link), 0);
	snprintf(link, sizeof(link), "%s/cpuacct", both);
	assert_int_equal(symlink("cpu,cpuacct", link), 0);
	cg = open_ok(both, 1);
	assert_int_equal(cgroup_path(cg, "cpuacct", "x", b, sizeof(b)), 0);
	assert_string_equal(a, b);
	cgroup_close(cg);

	/* a v1 tree without pids, a v2 tree without the pids controller */
	char path[256];
	snprintf(path, sizeof(path), "%s/pids", v1);
	assert_int_equal(rmdir(path), 0);
	sl_err err = {0};
	cg = NULL;
	assert_int_equal(cgroup_open(v1, &cg, &err), -1);
	assert_null(cg);
	assert_int_equal(err.kind, SL_NOTIMPL);
	assert_non_null(strstr(err.msg, "pids controller"));
	put(v2, "cgroup.controllers", "cpu memory\n");
	assert_int_equal(cgroup_open(v2, &cg, &err), -1);
	assert_int_equal(err.kind, SL_NOTIMPL);
	assert_non_null(strstr(err.msg, "the pids controller"));
	assert_int_equal(cgroup_open("/nonexistent-sl", &cg, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
}

/* The files a process writes "0" to, to join a cgroup: one per hierarchy. */
static void test_join_files(void **state)
{
	fixture *fx = *state;
	char v1[128], v2[128], both[128], buf[PATH_MAX];
	const char *files[8];
	size_t n = 0;
	sl_err err = {0};
	make_trees(fx, v1, v2, both);

	sl_cgroup *cg = open_ok(v2, 2);
	assert_int_equal(cgroup_join_files(cg, "sandlot/x", buf, sizeof(buf), files, 8, &n, &err),
			 0);
	assert_int_equal(n, 1);
	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s/sandlot/x/cgroup.procs", v2);
	assert_string_equal(files[0], want);
	cgroup_close(cg);

	cg = open_ok(v1, 1);
	assert_int_equal(cgroup_join_files(cg, "sandlot/x", buf, sizeof(buf), files, 8, &n, &err),
			 0);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < 5; i++) {
		snprintf(want, sizeof(want), "%s/%s/sandlot/x/tasks", v1, v1_ctrls[i]);
		bool found = false;
		for (size_t j = 0; j < n; j++)
			found |= !strcmp(files[j], want);
		if (!found)
			fail_msg("no %s among the join files", want);
	}
	/* too few slots, too small a buffer, a bad name: errors, not overruns */
	assert_int_equal(cgroup_join_files(cg, "sandlot/x", buf, sizeof(buf), files, 4, &n, &err),
			 -1);
	size_t one = strlen(files[0]) + 1; /* room for one path only */
	buf[one] = 'Z';
	assert_int_equal(cgroup_join_files(cg, "sandlot/x", buf, one, files, 8, &n, &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	assert_int_equal(buf[one], 'Z');
	assert_int_equal(cgroup_join_files(cg, "../x", buf, sizeof(buf), files, 8, &n, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	cgroup_close(cg);

	cg = open_ok(both, 1); /* cpu and cpuacct share a hierarchy: one file for both */
	assert_int_equal(cgroup_join_files(cg, "sandlot/x", buf, sizeof(buf), files, 8, &n, &err),
			 0);
	assert_int_equal(n, 4);
	cgroup_close(cg);
}

static void test_v2_create(void **state)
{
	fixture *fx = *state;
	make_v2(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 2);
	sl_err err = {0};
	if (cgroup_create(cg, "sandlot/sbx_abc", &std_limits, &err) != 0)
		fail_msg("create: %s", err.msg);
	assert_string_equal(get(fx->root, "cgroup.subtree_control"), "+cpu +memory +pids");
	assert_string_equal(get(fx->root, "sandlot/cgroup.subtree_control"), "+cpu +memory +pids");
	assert_string_equal(get(fx->root, "sandlot/sbx_abc/cpu.max"), "50000 100000");
	assert_string_equal(get(fx->root, "sandlot/sbx_abc/memory.max"), "67108864");
	assert_string_equal(get(fx->root, "sandlot/sbx_abc/memory.swap.max"), "0");
	assert_string_equal(get(fx->root, "sandlot/sbx_abc/pids.max"), "64");
	assert_false(exists(fx->root, "sandlot/sbx_abc/cgroup.subtree_control"));
	char p[512], want[512];
	assert_int_equal(cgroup_path(cg, NULL, "sandlot/sbx_abc", p, sizeof(p)), 0);
	snprintf(want, sizeof(want), "%s/sandlot/sbx_abc", fx->root);
	assert_string_equal(p, want);

	/* existing: conflict, and nothing touched */
	put(fx->root, "sandlot/sbx_abc/pids.max", "7");
	assert_int_equal(cgroup_create(cg, "sandlot/sbx_abc", &std_limits, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_string_equal(get(fx->root, "sandlot/sbx_abc/pids.max"), "7");

	/* a second sandbox under the same parent: already-enabled parents are left alone;
	 * unlimited fields stay at the kernel default (no file written) */
	put(fx->root, "sandlot/cgroup.subtree_control", "cpu memory pids\n");
	sl_limits mem_only = {.memory_bytes = 1ULL << 30};
	if (cgroup_create(cg, "sandlot/sbx_def", &mem_only, &err) != 0)
		fail_msg("create: %s", err.msg);
	assert_string_equal(get(fx->root, "sandlot/cgroup.subtree_control"), "cpu memory pids\n");
	assert_string_equal(get(fx->root, "sandlot/sbx_def/memory.max"), "1073741824");
	assert_string_equal(get(fx->root, "sandlot/sbx_def/memory.swap.max"), "0");
	assert_false(exists(fx->root, "sandlot/sbx_def/cpu.max"));
	assert_false(exists(fx->root, "sandlot/sbx_def/pids.max"));
	assert_int_equal(cgroup_create(cg, "sandlot/sbx_nil", NULL, &err), 0);
	assert_false(exists(fx->root, "sandlot/sbx_nil/memory.max"));
	cgroup_close(cg);
}

static void test_v2_update(void **state)
{
	fixture *fx = *state;
	make_v2(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 2);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "s/a", &std_limits, &err), 0);
	sl_limits l = {.cpu_millicores = 2000, .memory_bytes = 0, .pids_max = 10};
	assert_int_equal(cgroup_update(cg, "s/a", &l, &err), 0);
	assert_string_equal(get(fx->root, "s/a/cpu.max"), "200000 100000");
	assert_string_equal(get(fx->root, "s/a/memory.max"), "max");
	assert_string_equal(get(fx->root, "s/a/pids.max"), "10");
	l = (sl_limits){.cpu_millicores = 5}; /* below the kernel's 1 ms minimum quota */
	assert_int_equal(cgroup_update(cg, "s/a", &l, &err), 0);
	assert_string_equal(get(fx->root, "s/a/cpu.max"), "1000 100000");
	assert_string_equal(get(fx->root, "s/a/pids.max"), "max");
	l = (sl_limits){0};
	assert_int_equal(cgroup_update(cg, "s/a", &l, &err), 0);
	assert_string_equal(get(fx->root, "s/a/cpu.max"), "max 100000");
	assert_int_equal(cgroup_update(cg, "s/missing", &l, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	l.cpu_millicores = UINT64_MAX / 50;
	assert_int_equal(cgroup_update(cg, "s/a", &l, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	cgroup_close(cg);
}

static void test_v1_create(void **state)
{
	fixture *fx = *state;
	make_v1(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 1);
	sl_err err = {0};
	if (cgroup_create(cg, "sandlot/sbx_abc", &std_limits, &err) != 0)
		fail_msg("create: %s", err.msg);
	for (size_t i = 0; i < 5; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "%s/sandlot/sbx_abc", v1_ctrls[i]);
		assert_true(exists(fx->root, rel));
	}
	assert_false(exists(fx->root, "blkio/sandlot"));
	/* A new cgroup has the kernel's default period, the one we use: not written. */
	assert_false(exists(fx->root, "cpu/sandlot/sbx_abc/cpu.cfs_period_us"));
	assert_string_equal(get(fx->root, "cpu/sandlot/sbx_abc/cpu.cfs_quota_us"), "50000");
	assert_string_equal(get(fx->root, "memory/sandlot/sbx_abc/memory.limit_in_bytes"),
			    "67108864");
	assert_string_equal(get(fx->root, "memory/sandlot/sbx_abc/memory.memsw.limit_in_bytes"),
			    "67108864");
	assert_string_equal(get(fx->root, "memory/sandlot/sbx_abc/memory.swappiness"), "0");
	assert_string_equal(get(fx->root, "pids/sandlot/sbx_abc/pids.max"), "64");
	char p[512], want[512];
	assert_int_equal(cgroup_path(cg, "freezer", "sandlot/sbx_abc", p, sizeof(p)), 0);
	snprintf(want, sizeof(want), "%s/freezer/sandlot/sbx_abc", fx->root);
	assert_string_equal(p, want);
	errno = 0;
	assert_int_equal(cgroup_path(cg, "blkio", "sandlot/sbx_abc", p, sizeof(p)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cgroup_path(cg, "cpu", "sandlot/sbx_abc", p, 10), -1);
	assert_int_equal(errno, ERANGE);

	/* present in one hierarchy only is still a conflict, and nothing is made */
	mkd(fx->root, "pids/sandlot/sbx_half");
	assert_int_equal(cgroup_create(cg, "sandlot/sbx_half", &std_limits, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_false(exists(fx->root, "cpu/sandlot/sbx_half"));

	/* update: unlimited is -1 / max on v1 */
	sl_limits l = {.memory_bytes = 128ULL << 20};
	assert_int_equal(cgroup_update(cg, "sandlot/sbx_abc", &l, &err), 0);
	assert_string_equal(get(fx->root, "cpu/sandlot/sbx_abc/cpu.cfs_period_us"), "100000");
	assert_string_equal(get(fx->root, "cpu/sandlot/sbx_abc/cpu.cfs_quota_us"), "-1");
	assert_string_equal(get(fx->root, "memory/sandlot/sbx_abc/memory.limit_in_bytes"),
			    "134217728");
	assert_string_equal(get(fx->root, "memory/sandlot/sbx_abc/memory.memsw.limit_in_bytes"),
			    "134217728");
	assert_string_equal(get(fx->root, "pids/sandlot/sbx_abc/pids.max"), "max");
	cgroup_close(cg);
}

static void test_v1_rollback(void **state)
{
	fixture *fx = *state;
	make_v1(fx->root);
	/* the pids hierarchy has a file where the parent dir must go: mkdir fails there */
	put(fx->root, "pids/sandlot", "not a dir");
	sl_cgroup *cg = open_ok(fx->root, 1);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "sandlot/sbx_abc", &std_limits, &err), -1);
	assert_non_null(strstr(err.msg, "pids/sandlot"));
	for (size_t i = 0; i < 5; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "%s/sandlot", v1_ctrls[i]);
		if (strcmp(v1_ctrls[i], "pids") == 0)
			assert_string_equal(get(fx->root, rel), "not a dir");
		else if (exists(fx->root, rel))
			fail_msg("%s left behind after a failed create", rel);
	}
	cgroup_close(cg);
}

/* A spare's rename (spares.c, spare_cgroup_create_or_take): every hierarchy or none. */
static void test_v1_rename(void **state)
{
	fixture *fx = *state;
	make_v1(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 1);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "sandlot/.spare-1", &std_limits, &err), 0);
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-1", "sandlot/sbx_new", &err), 0);
	for (size_t i = 0; i < 5; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "%s/sandlot/sbx_new", v1_ctrls[i]);
		assert_true(exists(fx->root, rel));
		snprintf(rel, sizeof(rel), "%s/sandlot/.spare-1", v1_ctrls[i]);
		assert_false(exists(fx->root, rel));
	}
	assert_string_equal(get(fx->root, "pids/sandlot/sbx_new/pids.max"), "64");
	/* gone: not found */
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-1", "sandlot/sbx_x", &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	/* onto a cgroup that exists: a conflict, nothing moved */
	assert_int_equal(cgroup_create(cg, "sandlot/.spare-2", &std_limits, &err), 0);
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-2", "sandlot/sbx_new", &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_true(exists(fx->root, "cpu/sandlot/.spare-2"));
	assert_string_equal(get(fx->root, "pids/sandlot/sbx_new/pids.max"), "64");
	/* half made (in cpu and cpuacct only): renamed back where it was */
	mkd(fx->root, "cpu/sandlot/.spare-3");
	mkd(fx->root, "cpuacct/sandlot/.spare-3");
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-3", "sandlot/sbx_y", &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_true(exists(fx->root, "cpu/sandlot/.spare-3"));
	assert_true(exists(fx->root, "cpuacct/sandlot/.spare-3"));
	assert_false(exists(fx->root, "cpu/sandlot/sbx_y"));
	assert_false(exists(fx->root, "cpuacct/sandlot/sbx_y"));
	/* names are checked as for every call */
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-2", "../x", &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	cgroup_close(cg);
}

static void test_v2_rename_unsupported(void **state)
{
	fixture *fx = *state;
	make_v2(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 2);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "sandlot/.spare-1", &std_limits, &err), 0);
	assert_int_equal(cgroup_rename(cg, "sandlot/.spare-1", "sandlot/sbx_new", &err), -1);
	assert_int_equal(err.kind, SL_NOTIMPL);
	assert_true(exists(fx->root, "sandlot/.spare-1"));
	cgroup_close(cg);
}

static void test_names(void **state)
{
	fixture *fx = *state;
	make_v2(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 2);
	const char *bad[] = {"",     "../escape", "/abs", "a//b", "a/",	   "a/./b",
			     "a/..", "x y",	  "a\nb", ".",	  "sbx;rm"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_err err = {0};
		if (cgroup_create(cg, bad[i], &std_limits, &err) != -1)
			fail_msg("name \"%s\" accepted", bad[i]);
		assert_int_equal(err.kind, SL_INVALID);
		assert_int_equal(cgroup_destroy(cg, bad[i], &err), -1);
		char p[256];
		errno = 0;
		assert_int_equal(cgroup_path(cg, NULL, bad[i], p, sizeof(p)), -1);
		assert_int_equal(errno, EINVAL);
	}
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, NULL, &std_limits, &err), -1);
	assert_false(exists("/tmp", "escape"));
	char deep[128] = "a";
	for (int i = 0; i < 20; i++)
		strcat(deep, "/a");
	assert_int_equal(cgroup_create(cg, deep, NULL, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	cgroup_close(cg);
}

static void test_v1_usage_procs_attach(void **state)
{
	fixture *fx = *state;
	make_v1(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 1);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "s/u", &std_limits, &err), 0);
	put(fx->root, "cpuacct/s/u/cpuacct.usage", "123456789\n");
	put(fx->root, "memory/s/u/memory.usage_in_bytes", "1048576\n");
	put(fx->root, "memory/s/u/memory.max_usage_in_bytes", "2097152\n");
	put(fx->root, "memory/s/u/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	put(fx->root, "pids/s/u/pids.current", "4\n");
	sl_cgusage u;
	if (cgroup_usage(cg, "s/u", &u, &err) != 0)
		fail_msg("usage: %s", err.msg);
	assert_int_equal(u.cpu_usage_ns, 123456789);
	assert_int_equal(u.memory_bytes, 1048576);
	assert_int_equal(u.memory_peak_bytes, 2097152);
	assert_int_equal(u.pids_current, 4);
	assert_int_equal(u.oom_kills, 3);
	/* The API's three, without the peak and the OOM counter. */
	memset(&u, 0xff, sizeof(u));
	if (cgroup_usage_basic(cg, "s/u", &u, &err) != 0)
		fail_msg("basic usage: %s", err.msg);
	assert_int_equal(u.cpu_usage_ns, 123456789);
	assert_int_equal(u.memory_bytes, 1048576);
	assert_int_equal(u.pids_current, 4);
	assert_int_equal(u.memory_peak_bytes, 0);
	assert_int_equal(u.oom_kills, 0);
	put(fx->root, "pids/s/u/pids.current", "lots\n");
	assert_int_equal(cgroup_usage(cg, "s/u", &u, &err), -1);
	assert_non_null(strstr(err.msg, "pids.current"));
	assert_int_equal(cgroup_usage(cg, "s/none", &u, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);

	assert_int_equal(cgroup_attach(cg, "s/u", 4242, &err), 0);
	for (size_t i = 0; i < 5; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "%s/s/u/cgroup.procs", v1_ctrls[i]);
		assert_string_equal(get(fx->root, rel), "4242");
	}
	put(fx->root, "memory/s/u/cgroup.procs", "17\n5\n");
	put(fx->root, "pids/s/u/cgroup.procs", "5\n9\n");
	put(fx->root, "cpu/s/u/cgroup.procs", "");
	put(fx->root, "cpuacct/s/u/cgroup.procs", "");
	put(fx->root, "freezer/s/u/cgroup.procs", "9\n");
	pid_t *pids = NULL;
	size_t n = 0;
	if (cgroup_procs(cg, "s/u", &pids, &n, &err) != 0)
		fail_msg("procs: %s", err.msg);
	assert_int_equal(n, 3);
	assert_int_equal(pids[0], 5);
	assert_int_equal(pids[1], 9);
	assert_int_equal(pids[2], 17);
	free(pids);
	assert_int_equal(cgroup_procs(cg, "s/none", &pids, &n, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	cgroup_close(cg);
}

static void test_v2_usage_procs_attach(void **state)
{
	fixture *fx = *state;
	make_v2(fx->root);
	sl_cgroup *cg = open_ok(fx->root, 2);
	sl_err err = {0};
	assert_int_equal(cgroup_create(cg, "s/u", &std_limits, &err), 0);
	put(fx->root, "s/u/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
	put(fx->root, "s/u/memory.current", "3145728\n");
	put(fx->root, "s/u/memory.events",
	    "low 0\nhigh 0\nmax 9\noom 5\noom_kill 2\noom_group_kill 7\n");
	put(fx->root, "s/u/pids.current", "6\n");
	sl_cgusage u;
	if (cgroup_usage(cg, "s/u", &u, &err) != 0)
		fail_msg("usage: %s", err.msg);
	assert_int_equal(u.cpu_usage_ns, 1500000);
	assert_int_equal(u.memory_bytes, 3145728);
	assert_int_equal(u.memory_peak_bytes, 0); /* no memory.peak: older kernel */
	assert_int_equal(u.pids_current, 6);
	assert_int_equal(u.oom_kills, 2);
	put(fx->root, "s/u/memory.peak", "4194304\n");
	assert_int_equal(cgroup_usage(cg, "s/u", &u, &err), 0);
	assert_int_equal(u.memory_peak_bytes, 4194304);

	assert_int_equal(cgroup_attach(cg, "s/u", 31337, &err), 0);
	assert_string_equal(get(fx->root, "s/u/cgroup.procs"), "31337");
	put(fx->root, "s/u/cgroup.procs", "300\n20\n");
	pid_t *pids = NULL;
	size_t n = 0;
	assert_int_equal(cgroup_procs(cg, "s/u", &pids, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pids[0], 20);
	assert_int_equal(pids[1], 300);
	free(pids);
	put(fx->root, "s/u/cgroup.procs", "");
	assert_int_equal(cgroup_procs(cg, "s/u", &pids, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(pids);
	assert_int_equal(cgroup_attach(cg, "s/u", 0, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	cgroup_close(cg);
}

static void test_freeze_fake(void **state)
{
	fixture *fx = *state;
	char v1[128], v2[128];
	snprintf(v1, sizeof(v1), "%s/v1", fx->root);
	snprintf(v2, sizeof(v2), "%s/v2", fx->root);
	mkdir(v1, 0755);
	mkdir(v2, 0755);
	make_v1(v1);
	make_v2(v2);
	sl_err err = {0};

	sl_cgroup *cg = open_ok(v1, 1);
	assert_int_equal(cgroup_create(cg, "f", NULL, &err), 0);
	assert_int_equal(cgroup_freeze(cg, "f", true, &err), 0);
	assert_string_equal(get(v1, "freezer/f/freezer.state"), "FROZEN");
	assert_int_equal(cgroup_freeze(cg, "f", false, &err), 0);
	assert_string_equal(get(v1, "freezer/f/freezer.state"), "THAWED");
	assert_int_equal(cgroup_freeze(cg, "nope", true, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	cgroup_close(cg);

	cg = open_ok(v2, 2);
	assert_int_equal(cgroup_create(cg, "f", NULL, &err), 0);
	put(v2, "f/cgroup.events", "populated 1\nfrozen 1\n");
	assert_int_equal(cgroup_freeze(cg, "f", true, &err), 0);
	assert_string_equal(get(v2, "f/cgroup.freeze"), "1");
	/* the kernel never reports frozen: time out and undo */
	put(v2, "f/cgroup.events", "populated 1\nfrozen 0\n");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(cgroup_freeze(cg, "f", true, &err), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(err.kind, SL_TIMEOUT);
	assert_string_equal(get(v2, "f/cgroup.freeze"), "0");
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(secs > 1.5 && secs < 4.0);
	assert_int_equal(cgroup_freeze(cg, "f", false, &err), 0);
	cgroup_close(cg);
}

static void test_destroy_fake(void **state)
{
	fixture *fx = *state;
	char v1[128], v2[128];
	snprintf(v1, sizeof(v1), "%s/v1", fx->root);
	snprintf(v2, sizeof(v2), "%s/v2", fx->root);
	mkdir(v1, 0755);
	mkdir(v2, 0755);
	make_v1(v1);
	make_v2(v2);
	sl_err err = {0};
	char self[24];
	snprintf(self, sizeof(self), "%d\n", (int)getpid());

	sl_cgroup *cg = open_ok(v2, 2);
	assert_int_equal(cgroup_create(cg, "sandlot/a", &std_limits, &err), 0);
	assert_int_equal(cgroup_create(cg, "sandlot/b", &std_limits, &err), 0);
	mkd(v2, "sandlot/a/inner");
	put(v2, "sandlot/a/inner/cgroup.procs", self); /* a fake file: must not be signalled */
	put(v2, "sandlot/a/cgroup.procs", self);
	if (cgroup_destroy(cg, "sandlot/a", &err) != 0)
		fail_msg("destroy: %s", err.msg);
	assert_false(exists(v2, "sandlot/a"));
	assert_true(exists(v2, "sandlot/b"));
	assert_int_equal(cgroup_destroy(cg, "sandlot/a", &err), 0); /* idempotent */
	assert_int_equal(cgroup_destroy(cg, "sandlot/b", &err), 0);
	assert_int_equal(cgroup_destroy(cg, "sandlot", &err), 0);
	assert_false(exists(v2, "sandlot"));
	cgroup_close(cg);

	cg = open_ok(v1, 1);
	assert_int_equal(cgroup_create(cg, "sandlot/a", &std_limits, &err), 0);
	put(v1, "memory/sandlot/a/cgroup.procs", self);
	if (cgroup_destroy(cg, "sandlot/a", &err) != 0)
		fail_msg("destroy: %s", err.msg);
	for (size_t i = 0; i < 5; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "%s/sandlot/a", v1_ctrls[i]);
		assert_false(exists(v1, rel));
		snprintf(rel, sizeof(rel), "%s/sandlot", v1_ctrls[i]);
		assert_true(exists(v1, rel));
	}
	assert_int_equal(cgroup_destroy(cg, "sandlot/a", &err), 0);
	assert_int_equal(cgroup_destroy(cg, "never/was", &err), 0);
	cgroup_close(cg);
}

/* ---- real cgroup v1 on this host ---- */

typedef struct real_fixture {
	sl_cgroup *cg;
	char parent[64];
	char name[96];
	pid_t child;
} real_fixture;

static int setup_real(void **state)
{
	struct stat st;
	real_fixture *rf = calloc(1, sizeof(*rf));
	*state = rf;
	if (geteuid() != 0 || stat("/sys/fs/cgroup/memory", &st) != 0)
		return 0;
	sl_err err = {0};
	if (cgroup_open(NULL, &rf->cg, &err) != 0 || cgroup_version(rf->cg) != 1) {
		cgroup_close(rf->cg);
		rf->cg = NULL;
		return 0;
	}
	snprintf(rf->parent, sizeof(rf->parent), "sandlot-unit-%d", (int)getpid());
	snprintf(rf->name, sizeof(rf->name), "%s/t", rf->parent);
	/* orphans of a fork bomb come back to us to be reaped */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return 0;
}

static int teardown_real(void **state)
{
	real_fixture *rf = *state;
	if (rf->cg) {
		sl_err err = {0};
		if (cgroup_destroy(rf->cg, rf->name, &err) != 0 ||
		    cgroup_destroy(rf->cg, rf->parent, &err) != 0)
			fprintf(stderr, "teardown: %s\n", err.msg);
		cgroup_close(rf->cg);
	}
	if (rf->child > 0)
		kill(rf->child, SIGKILL);
	/* reap what the fork bomb left us, without hanging if something survived */
	for (int i = 0; i < 2000; i++) {
		pid_t r = waitpid(-1, NULL, WNOHANG);
		if (r < 0)
			break;
		if (r == 0)
			usleep(1000);
	}
	free(rf);
	return 0;
}

static const char *real_get(const sl_cgroup *cg, const char *ctrl, const char *name,
			    const char *file)
{
	char dir[512];
	if (cgroup_path(cg, ctrl, name, dir, sizeof(dir)) != 0)
		fail_msg("cgroup_path %s %s", ctrl, name);
	const char *v = get(dir, file);
	static char line[256];
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(v, "\n"), v);
	return line;
}

static void assert_gone(const sl_cgroup *cg, const char *name)
{
	for (size_t i = 0; i < 5; i++) {
		char dir[512];
		struct stat st;
		assert_int_equal(cgroup_path(cg, v1_ctrls[i], name, dir, sizeof(dir)), 0);
		if (stat(dir, &st) == 0)
			fail_msg("%s still exists after destroy", dir);
	}
}

static void read_byte(int fd)
{
	char c;
	ssize_t r;
	do
		r = read(fd, &c, 1);
	while (r < 0 && errno == EINTR);
	assert_int_equal(r, 1);
}

/* Child: wait for "go", touch 8 MiB, burn ~50 ms of CPU, say "done", sleep. */
static void child_main(int go, int done)
{
	char c;
	if (read(go, &c, 1) != 1)
		_exit(1);
	size_t sz = 8u << 20;
	volatile char *mem = malloc(sz);
	for (size_t i = 0; mem && i < sz; i += 4096)
		mem[i] = 1;
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000000L);
	if (write(done, "d", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static void test_real_v1_lifecycle(void **state)
{
	real_fixture *rf = *state;
	if (!rf->cg)
		skip();
	sl_cgroup *cg = rf->cg;
	sl_err err = {0};
	if (cgroup_create(cg, rf->name, &std_limits, &err) != 0)
		fail_msg("create %s: %s", rf->name, err.msg);
	assert_string_equal(real_get(cg, "cpu", rf->name, "cpu.cfs_quota_us"), "50000");
	assert_string_equal(real_get(cg, "cpu", rf->name, "cpu.cfs_period_us"), "100000");
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.limit_in_bytes"), "67108864");
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.memsw.limit_in_bytes"),
			    "67108864");
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.swappiness"), "0");
	assert_string_equal(real_get(cg, "pids", rf->name, "pids.max"), "64");
	assert_int_equal(cgroup_create(cg, rf->name, &std_limits, &err), -1);
	assert_int_equal(err.kind, SL_CONFLICT);

	int go[2], done[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(done, O_CLOEXEC), 0);
	rf->child = fork();
	assert_true(rf->child >= 0);
	if (rf->child == 0)
		child_main(go[0], done[1]);
	if (cgroup_attach(cg, rf->name, rf->child, &err) != 0)
		fail_msg("attach: %s", err.msg);
	assert_int_equal(cgroup_attach(cg, rf->name, 0x3ffffff0, &err), -1); /* no such pid */
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(write(go[1], "g", 1), 1);
	read_byte(done[0]);

	pid_t *pids = NULL;
	size_t n = 0;
	assert_int_equal(cgroup_procs(cg, rf->name, &pids, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], rf->child);
	free(pids);

	sl_cgusage u;
	if (cgroup_usage(cg, rf->name, &u, &err) != 0)
		fail_msg("usage: %s", err.msg);
	assert_true(u.cpu_usage_ns >= 40000000ULL);
	assert_true(u.memory_bytes >= (8ULL << 20));
	assert_true(u.memory_peak_bytes >= u.memory_bytes);
	assert_true(u.memory_peak_bytes <= (64ULL << 20));
	assert_int_equal(u.pids_current, 1);
	assert_int_equal(u.oom_kills, 0);

	if (cgroup_freeze(cg, rf->name, true, &err) != 0)
		fail_msg("freeze: %s", err.msg);
	assert_string_equal(real_get(cg, "freezer", rf->name, "freezer.state"), "FROZEN");
	if (cgroup_freeze(cg, rf->name, false, &err) != 0)
		fail_msg("thaw: %s", err.msg);
	assert_string_equal(real_get(cg, "freezer", rf->name, "freezer.state"), "THAWED");

	/* raising the memory limit must move memsw first, or the kernel says EINVAL */
	sl_limits up = {.cpu_millicores = 1500, .memory_bytes = 128ULL << 20, .pids_max = 100};
	if (cgroup_update(cg, rf->name, &up, &err) != 0)
		fail_msg("update up: %s", err.msg);
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.limit_in_bytes"), "134217728");
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.memsw.limit_in_bytes"),
			    "134217728");
	assert_string_equal(real_get(cg, "cpu", rf->name, "cpu.cfs_quota_us"), "150000");
	sl_limits down = {.memory_bytes = 32ULL << 20};
	if (cgroup_update(cg, rf->name, &down, &err) != 0)
		fail_msg("update down: %s", err.msg);
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.limit_in_bytes"), "33554432");
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.memsw.limit_in_bytes"),
			    "33554432");
	assert_string_equal(real_get(cg, "cpu", rf->name, "cpu.cfs_quota_us"), "-1");
	assert_string_equal(real_get(cg, "pids", rf->name, "pids.max"), "max");
	sl_limits bad = {.memory_bytes = 4096}; /* below current usage: the kernel refuses */
	assert_int_equal(cgroup_update(cg, rf->name, &bad, &err), -1);
	assert_non_null(strstr(err.msg, rf->name));

	/* destroy a frozen cgroup: the process dies, every controller dir goes */
	assert_int_equal(cgroup_freeze(cg, rf->name, true, &err), 0);
	if (cgroup_destroy(cg, rf->name, &err) != 0)
		fail_msg("destroy: %s", err.msg);
	int status;
	assert_int_equal(waitpid(rf->child, &status, 0), rf->child);
	rf->child = 0;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_gone(cg, rf->name);
	assert_int_equal(cgroup_destroy(cg, rf->name, &err), 0);
	assert_int_equal(cgroup_destroy(cg, rf->parent, &err), 0);
	assert_gone(cg, rf->parent);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

/* On cgroupfs itself (kernfs takes no rename flags): a spare keeps its limits under its
 * new name in every hierarchy, and a taken name is refused. */
static void test_real_v1_rename(void **state)
{
	real_fixture *rf = *state;
	if (!rf->cg)
		skip();
	sl_cgroup *cg = rf->cg;
	sl_err err = {0};
	char spare[128], other[128];
	snprintf(spare, sizeof(spare), "%s/.spare", rf->parent);
	snprintf(other, sizeof(other), "%s/.other", rf->parent);
	if (cgroup_create(cg, spare, &std_limits, &err) != 0)
		fail_msg("create %s: %s", spare, err.msg);
	int r = cgroup_rename(cg, spare, rf->name, &err);
	if (r != 0)
		fail_msg("rename: %s", err.msg);
	assert_string_equal(real_get(cg, "memory", rf->name, "memory.limit_in_bytes"), "67108864");
	assert_string_equal(real_get(cg, "pids", rf->name, "pids.max"), "64");
	static const char *const ctrls[] = {"cpu", "cpuacct", "memory", "pids", "freezer"};
	for (size_t i = 0; i < 5; i++) {
		char dir[512];
		assert_int_equal(cgroup_path(cg, ctrls[i], spare, dir, sizeof(dir)), 0);
		assert_int_equal(access(dir, F_OK), -1);
	}
	assert_int_equal(cgroup_create(cg, other, &std_limits, &err), 0);
	r = cgroup_rename(cg, other, rf->name, &err);
	sl_err e2 = {0};
	cgroup_destroy(cg, other, &e2);
	assert_int_equal(r, -1);
	assert_int_equal(err.kind, SL_CONFLICT);
}

static void test_real_v1_fork_bomb(void **state)
{
	real_fixture *rf = *state;
	if (!rf->cg)
		skip();
	sl_cgroup *cg = rf->cg;
	sl_err err = {0};
	sl_limits lim = {.cpu_millicores = 500, .memory_bytes = 64ULL << 20, .pids_max = 32};
	if (cgroup_create(cg, rf->name, &lim, &err) != 0)
		fail_msg("create: %s", err.msg);
	int go[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	rf->child = fork();
	assert_true(rf->child >= 0);
	if (rf->child == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (;;)
			fork();
	}
	assert_int_equal(cgroup_attach(cg, rf->name, rf->child, &err), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	/* let it fill pids.max */
	sl_cgusage u = {0};
	for (int i = 0; i < 200 && u.pids_current < 32; i++) {
		usleep(5000);
		assert_int_equal(cgroup_usage(cg, rf->name, &u, &err), 0);
	}
	assert_int_equal(u.pids_current, 32);
	if (cgroup_destroy(cg, rf->name, &err) != 0)
		fail_msg("destroy fork bomb: %s", err.msg);
	assert_gone(cg, rf->name);
	int status;
	assert_int_equal(waitpid(rf->child, &status, 0), rf->child);
	rf->child = 0;
	assert_true(WIFSIGNALED(status));
	assert_int_equal(cgroup_destroy(cg, rf->parent, &err), 0);
	assert_gone(cg, rf->parent);
	close(go[0]);
	close(go[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_detect, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_join_files, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v2_create, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v2_update, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v1_create, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v1_rollback, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v1_rename, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v2_rename_unsupported, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_names, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v1_usage_procs_attach, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_v2_usage_procs_attach, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_freeze_fake, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_destroy_fake, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_real_v1_lifecycle, setup_real, teardown_real),
	    cmocka_unit_test_setup_teardown(test_real_v1_rename, setup_real, teardown_real),
	    cmocka_unit_test_setup_teardown(test_real_v1_fork_bomb, setup_real, teardown_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

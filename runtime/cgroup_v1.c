/* cgroup_v1.c — the cgroup v1 backend: one directory per hierarchy (cpu, cpuacct, memory,
 * pids, freezer), limits in cfs quota / limit_in_bytes / pids.max, freezer.state. */
#include "cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

/* FRESH: a cgroup just made, whose period is still the kernel's default (100 ms, the
 * one we use): not written again, one open and write fewer per create. */
static int set_cpu(const sl_cgroup *cg, const char *dir, uint64_t millicores, bool fresh,
		   sl_err *err)
{
	char quota[32];
	if (millicores == 0) {
		snprintf(quota, sizeof(quota), "-1");
	} else {
		uint64_t us = millicores * (CG_CPU_PERIOD_US / 1000);
		snprintf(quota, sizeof(quota), "%" PRIu64,
			 us < CG_CPU_MIN_QUOTA_US ? CG_CPU_MIN_QUOTA_US : us);
	}
	char period[32];
	snprintf(period, sizeof(period), "%" PRIu64, CG_CPU_PERIOD_US);
	if (!fresh && cg_write(cg, dir, "cpu.cfs_period_us", period, err) < 0)
		return -1;
	return cg_write(cg, dir, "cpu.cfs_quota_us", quota, err);
}

/* memory.limit_in_bytes may never exceed memory.memsw.limit_in_bytes, so raising the
 * limit has to move memsw first and lowering it has to move it last. */
static int set_memory(const sl_cgroup *cg, const char *dir, uint64_t bytes, sl_err *err)
{
	char val[32];
	if (bytes == 0)
		snprintf(val, sizeof(val), "-1");
	else
		snprintf(val, sizeof(val), "%" PRIu64, bytes);
	bool memsw = cg_has(cg, dir, "memory.memsw.limit_in_bytes");
	sl_err first = {0};
	if (cg_write(cg, dir, "memory.limit_in_bytes", val, &first) < 0) {
		if (!memsw || first.errnum != EINVAL) {
			*err = first;
			return -1;
		}
		if (cg_write(cg, dir, "memory.memsw.limit_in_bytes", val, err) < 0 ||
		    cg_write(cg, dir, "memory.limit_in_bytes", val, err) < 0)
			return -1;
	}
	if (memsw && cg_write(cg, dir, "memory.memsw.limit_in_bytes", val, err) < 0)
		return -1;
	return 0;
}

static int set_pids(const sl_cgroup *cg, const char *dir, uint64_t max, sl_err *err)
{
	char val[32];
	if (max == 0)
		snprintf(val, sizeof(val), "max");
	else
		snprintf(val, sizeof(val), "%" PRIu64, max);
	return cg_write(cg, dir, "pids.max", val, err);
}

static int set_limits(sl_cgroup *cg, const char *name, const sl_limits *lim, bool reset, bool fresh,
		      sl_err *err)
{
	if (lim->cpu_millicores || reset) {
		char dir[PATH_MAX];
		if (cg_dir(cg, CG_CPU, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (set_cpu(cg, dir, lim->cpu_millicores, fresh, err) < 0)
			return sl_wrap(err, "cgroup %s: cpu limit", name);
	}
	if (lim->memory_bytes || reset) {
		char dir[PATH_MAX];
		if (cg_dir(cg, CG_MEMORY, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (set_memory(cg, dir, lim->memory_bytes, err) < 0)
			return sl_wrap(err, "cgroup %s: memory limit", name);
	}
	if (lim->pids_max || reset) {
		char dir[PATH_MAX];
		if (cg_dir(cg, CG_PIDS, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (set_pids(cg, dir, lim->pids_max, err) < 0)
			return sl_wrap(err, "cgroup %s: pids limit", name);
	}
	return 0;
}

static int v1_set_limits(sl_cgroup *cg, const char *name, const sl_limits *lim, bool reset,
			 sl_err *err)
{
	return set_limits(cg, name, lim, reset, false, err);
}

/* Swap off: memsw = limit (set with the memory limit) and no swapping from this cgroup's
 * own reclaim. */
static int swap_off(const sl_cgroup *cg, const char *name, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, CG_MEMORY, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (cg_has(cg, dir, "memory.swappiness") &&
	    cg_write(cg, dir, "memory.swappiness", "0", err) < 0)
		return sl_wrap(err, "cgroup %s: swap off", name);
	return 0;
}

/* A name taken in any hierarchy is a conflict (cg_mkpath), and what was made in the
 * others before it is removed again. */
static int v1_create(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err)
{
	cg_made made = {.n = 0};
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (cg_v1_first(cg, i) &&
		    cg_mkpath(cg, cg->v1_dir[i], name, NULL, &made, err) < 0) {
			cg_unmake(cg, &made);
			return -1;
		}
	}
	if (swap_off(cg, name, err) < 0 || set_limits(cg, name, lim, false, true, err) < 0) {
		cg_unmake(cg, &made);
		return -1;
	}
	cg_made_free(&made);
	return 0;
}

/* In each hierarchy in turn; a failure renames back what it had renamed. v1 renames a
 * cgroup within its parent only (cgroup1_rename), which is all a spare needs. */
static int v1_rename(sl_cgroup *cg, const char *from, const char *to, sl_err *err)
{
	int done = 0;
	for (; done < CG_V1_NCTRL; done++) {
		if (!cg_v1_first(cg, done))
			continue;
		char a[PATH_MAX], b[PATH_MAX];
		if (cg_dir(cg, done, from, a, sizeof(a), err) < 0 ||
		    cg_dir(cg, done, to, b, sizeof(b), err) < 0)
			break;
		/* kernfs takes no rename flags (EINVAL) and never renames over a cgroup (an
		 * existing TO is EEXIST there), so a plain rename is the no-replace one; a
		 * fake tree (tests) needs the flag. */
		int r = cg->fake ? (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b,
						RENAME_NOREPLACE)
				 : rename(a, b);
		if (r < 0) {
			sl_kind k = errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL;
			if (errno == EEXIST)
				k = SL_CONFLICT;
			sl_fail(err, k, errno, "cgroup %s: rename to %s in %s", from, to,
				cg_v1_names[done]);
			break;
		}
	}
	if (done == CG_V1_NCTRL)
		return 0;
	for (int i = 0; i < done; i++) {
		char a[PATH_MAX], b[PATH_MAX];
		if (cg_v1_first(cg, i) && cg_dir(cg, i, from, a, sizeof(a), NULL) == 0 &&
		    cg_dir(cg, i, to, b, sizeof(b), NULL) == 0)
			rename(b, a);
	}
	return -1;
}

static int v1_attach(sl_cgroup *cg, const char *name, pid_t pid, sl_err *err)
{
	char val[24];
	snprintf(val, sizeof(val), "%d", (int)pid);
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (!cg_v1_first(cg, i))
			continue;
		char dir[PATH_MAX];
		if (cg_dir(cg, i, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (cg_write(cg, dir, "cgroup.procs", val, err) < 0)
			return sl_wrap(err, "cgroup %s: attach pid %d to %s", name, (int)pid,
				       cg_v1_names[i]);
	}
	return 0;
}

static int v1_freeze(sl_cgroup *cg, const char *name, bool frozen, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, CG_FREEZER, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (!cg_dir_exists(dir))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	const char *want = frozen ? "FROZEN" : "THAWED";
	if (cg_write(cg, dir, "freezer.state", want, err) < 0)
		return sl_wrap(err, "cgroup %s: %s", name, frozen ? "freeze" : "thaw");
	struct timespec deadline;
	cg_deadline(&deadline, CG_FREEZE_MS);
	if (cg_wait_for(dir, "freezer.state", NULL, want, &deadline, err) < 0) {
		if (frozen) /* do not leave it half frozen */
			cg_write(cg, dir, "freezer.state", "THAWED", &(sl_err){0});
		return sl_wrap(err, "cgroup %s: %s", name, frozen ? "freeze" : "thaw");
	}
	return 0;
}

static int v1_usage(sl_cgroup *cg, const char *name, bool all, sl_cgusage *out, sl_err *err)
{
	char mem[PATH_MAX];
	if (cg_dir(cg, CG_MEMORY, name, mem, sizeof(mem), err) < 0)
		return -1;
	char acct[PATH_MAX];
	if (cg_dir(cg, CG_CPUACCT, name, acct, sizeof(acct), err) < 0)
		return -1;
	char pids[PATH_MAX];
	if (cg_dir(cg, CG_PIDS, name, pids, sizeof(pids), err) < 0)
		return -1;
	if (!cg_dir_exists(mem))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	bool found;
	if (cg_read_u64(acct, "cpuacct.usage", &out->cpu_usage_ns, err) < 0 ||
	    cg_read_u64(mem, "memory.usage_in_bytes", &out->memory_bytes, err) < 0 ||
	    cg_read_u64(pids, "pids.current", &out->pids_current, err) < 0 ||
	    (all &&
	     (cg_read_u64(mem, "memory.max_usage_in_bytes", &out->memory_peak_bytes, err) < 0 ||
	      cg_read_key(mem, "memory.oom_control", "oom_kill", &out->oom_kills, &found, err) < 0)))
		return sl_wrap(err, "cgroup %s: usage", name);
	return 0;
}

static int v1_procs(sl_cgroup *cg, const char *name, pid_t **pids, size_t *n, sl_err *err)
{
	/* the union over hierarchies: a half-done attach still shows up */
	_cleanup_free_ pid_t *all = NULL;
	size_t cnt = 0;
	bool any = false;
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (!cg_v1_first(cg, i))
			continue;
		char dir[PATH_MAX];
		if (cg_dir(cg, i, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (!cg_dir_exists(dir))
			continue;
		any = true;
		_cleanup_free_ pid_t *some = NULL;
		size_t k;
		if (cg_read_pids(dir, &some, &k, err) < 0)
			return sl_wrap(err, "cgroup %s: list processes", name);
		pid_t *grown = realloc(all, (cnt + k + 1) * sizeof(*all));
		if (!grown)
			return sl_sysfail(err, "cgroup %s: list processes", name);
		all = grown;
		for (size_t j = 0; j < k; j++) {
			size_t at = 0;
			while (at < cnt && all[at] < some[j])
				at++;
			if (at < cnt && all[at] == some[j])
				continue;
			memmove(all + at + 1, all + at, (cnt - at) * sizeof(*all));
			all[at] = some[j];
			cnt++;
		}
	}
	if (!any)
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	*pids = cnt ? steal_ptr(&all) : NULL;
	*n = cnt;
	return 0;
}

/* Freeze first so the pids we read can neither fork nor exit (and be reused) before the
 * SIGKILL lands; the kill takes effect on thaw. */
static int kill_frozen(const sl_cgroup *cg, const char *dir, sl_err *err)
{
	if (!cg_dir_exists(dir))
		return 0;
	struct timespec deadline;
	cg_deadline(&deadline, CG_FREEZE_MS / 2);
	sl_err ferr = {0};
	if (cg_write(cg, dir, "freezer.state", "FROZEN", &ferr) == 0)
		cg_wait_for(dir, "freezer.state", NULL, "FROZEN", &deadline, &ferr);
	size_t n;
	int rc = cg_kill_tree(cg, dir, &n, err);
	if (cg_write(cg, dir, "freezer.state", "THAWED", &ferr) < 0 && rc == 0)
		return (*err = ferr, -1);
	return rc;
}

static bool v1_try_rmdir_empty(sl_cgroup *cg, const char *name)
{
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (!cg_v1_first(cg, i))
			continue;
		char dir[PATH_MAX];
		sl_err e = { 0 };
		if (cg_dir(cg, i, name, dir, sizeof(dir), &e) < 0)
			return false;
		if (rmdir(dir) < 0 && errno != ENOENT)
			return false;
	}
	return true;
}

static int v1_destroy(sl_cgroup *cg, const char *name, sl_err *err)
{
	struct timespec deadline;
	cg_deadline(&deadline, CG_DESTROY_MS);
	char freezer[PATH_MAX];
	if (cg_dir(cg, CG_FREEZER, name, freezer, sizeof(freezer), err) < 0)
		return -1;
	/* Fast path: a sandbox whose init is gone has an empty cgroup (the pid
	 * namespace died with it), and a plain rmdir per hierarchy is enough. */
	if (!cg->fake && v1_try_rmdir_empty(cg, name))
		return 0;
	if (kill_frozen(cg, freezer, err) < 0)
		return sl_wrap(err, "cgroup %s: destroy", name);
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (!cg_v1_first(cg, i))
			continue;
		char dir[PATH_MAX];
		if (cg_dir(cg, i, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (cg_remove_tree(cg, dir, &deadline, err) < 0)
			return sl_wrap(err, "cgroup %s: destroy", name);
	}
	return 0;
}

const struct cg_backend cg_v1_backend = {
    .create = v1_create,
    .set_limits = v1_set_limits,
    .attach = v1_attach,
    .freeze = v1_freeze,
    .usage = v1_usage,
    .procs = v1_procs,
    .destroy = v1_destroy,
    .rename = v1_rename,
};

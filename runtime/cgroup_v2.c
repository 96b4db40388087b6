/* cgroup_v2.c — the cgroup v2 backend: one unified directory per cgroup, controllers
 * enabled down the path via cgroup.subtree_control, cpu.max / memory.max / pids.max. */
#include "cgroup_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

static const char *const needed[] = {"cpu", "memory", "pids"};
#define SUBTREE_ENABLE "+cpu +memory +pids"

static int set_limits(sl_cgroup *cg, const char *name, const sl_limits *lim, bool reset,
		      sl_err *err)
{
	char dir[PATH_MAX], val[48];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (lim->cpu_millicores || reset) {
		uint64_t us = lim->cpu_millicores * (CG_CPU_PERIOD_US / 1000);
		if (lim->cpu_millicores == 0)
			snprintf(val, sizeof(val), "max %" PRIu64, CG_CPU_PERIOD_US);
		else
			snprintf(val, sizeof(val), "%" PRIu64 " %" PRIu64,
				 us < CG_CPU_MIN_QUOTA_US ? CG_CPU_MIN_QUOTA_US : us,
				 CG_CPU_PERIOD_US);
		if (cg_write(cg, dir, "cpu.max", val, err) < 0)
			return sl_wrap(err, "cgroup %s: cpu limit", name);
	}
	if (lim->memory_bytes || reset) {
		if (lim->memory_bytes == 0)
			snprintf(val, sizeof(val), "max");
		else
			snprintf(val, sizeof(val), "%" PRIu64, lim->memory_bytes);
		if (cg_write(cg, dir, "memory.max", val, err) < 0)
			return sl_wrap(err, "cgroup %s: memory limit", name);
	}
	if (lim->pids_max || reset) {
		if (lim->pids_max == 0)
			snprintf(val, sizeof(val), "max");
		else
			snprintf(val, sizeof(val), "%" PRIu64, lim->pids_max);
		if (cg_write(cg, dir, "pids.max", val, err) < 0)
			return sl_wrap(err, "cgroup %s: pids limit", name);
	}
	return 0;
}

/* A child only gets cpu/memory/pids files if every ancestor delegates them. */
static int enable_controllers(sl_cgroup *cg, const char *parent, sl_err *err)
{
	_cleanup_free_ char *cur = NULL;
	sl_err rerr = {0};
	if (cg_read(parent, "cgroup.subtree_control", &cur, &rerr) < 0 &&
	    !(cg->fake && rerr.kind == SL_NOTFOUND))
		return (*err = rerr, -1);
	size_t have = 0;
	char *save = NULL;
	for (char *t = cur ? strtok_r(cur, " \n", &save) : NULL; t;
	     t = strtok_r(NULL, " \n", &save)) {
		if (*t == '+') /* fake trees read back what was written */
			t++;
		for (size_t i = 0; i < 3; i++)
			have += strcmp(t, needed[i]) == 0;
	}
	if (have >= 3)
		return 0;
	if (cg_write(cg, parent, "cgroup.subtree_control", SUBTREE_ENABLE, err) < 0)
		return sl_wrap(err,
			       "enable %s for child cgroups (a cgroup with processes of its "
			       "own cannot delegate them)",
			       SUBTREE_ENABLE);
	return 0;
}

static int v2_create(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (cg_dir_exists(dir))
		return sl_fail(err, SL_CONFLICT, 0, "cgroup %s: %s already exists", name, dir);
	cg_made made = {.n = 0};
	if (cg_mkpath(cg, cg->root, name, enable_controllers, &made, err) < 0) {
		cg_unmake(cg, &made);
		return sl_wrap(err, "cgroup %s", name);
	}
	/* swap off: no swap at all for this cgroup, whatever the memory limit */
	if ((cg_has(cg, dir, "memory.swap.max") &&
	     cg_write(cg, dir, "memory.swap.max", "0", err) < 0) ||
	    set_limits(cg, name, lim, false, err) < 0) {
		cg_unmake(cg, &made);
		return sl_wrap(err, "cgroup %s", name);
	}
	cg_made_free(&made);
	return 0;
}

static int v2_attach(sl_cgroup *cg, const char *name, pid_t pid, sl_err *err)
{
	char dir[PATH_MAX], val[24];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(val, sizeof(val), "%d", (int)pid);
	if (cg_write(cg, dir, "cgroup.procs", val, err) < 0)
		return sl_wrap(err, "cgroup %s: attach pid %d", name, (int)pid);
	return 0;
}

static int v2_freeze(sl_cgroup *cg, const char *name, bool frozen, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (!cg_dir_exists(dir))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	const char *what = frozen ? "freeze" : "thaw";
	if (cg_write(cg, dir, "cgroup.freeze", frozen ? "1" : "0", err) < 0)
		return sl_wrap(err, "cgroup %s: %s", name, what);
	struct timespec deadline;
	cg_deadline(&deadline, CG_FREEZE_MS);
	if (cg_wait_for(dir, "cgroup.events", "frozen", frozen ? "1" : "0", &deadline, err) < 0) {
		if (frozen) /* do not leave it half frozen */
			cg_write(cg, dir, "cgroup.freeze", "0", &(sl_err){0});
		return sl_wrap(err, "cgroup %s: %s", name, what);
	}
	return 0;
}

static int v2_usage(sl_cgroup *cg, const char *name, bool all, sl_cgusage *out, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (!cg_dir_exists(dir))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	uint64_t usec = 0;
	bool found;
	if (cg_read_key(dir, "cpu.stat", "usage_usec", &usec, &found, err) < 0 ||
	    cg_read_u64(dir, "memory.current", &out->memory_bytes, err) < 0 ||
	    cg_read_u64(dir, "pids.current", &out->pids_current, err) < 0 ||
	    (all && cg_read_key(dir, "memory.events", "oom_kill", &out->oom_kills, &found, err) < 0))
		return sl_wrap(err, "cgroup %s: usage", name);
	out->cpu_usage_ns = usec * 1000;
	if (!all)
		return 0;
	sl_err perr = {0};
	if (cg_read_u64(dir, "memory.peak", &out->memory_peak_bytes, &perr) < 0) {
		if (perr.kind != SL_NOTFOUND) /* before Linux 5.19 there is no memory.peak */
			return (*err = perr, sl_wrap(err, "cgroup %s: usage", name));
		out->memory_peak_bytes = 0;
	}
	return 0;
}

static int v2_procs(sl_cgroup *cg, const char *name, pid_t **pids, size_t *n, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (cg_read_pids(dir, pids, n, err) < 0)
		return sl_wrap(err, "cgroup %s: list processes", name);
	return 0;
}

/* cgroup.kill (5.14+) kills the whole subtree atomically, fork bombs included. Older
 * kernels: freeze so the pids hold still, SIGKILL them, thaw to let them die. */
static int kill_all(sl_cgroup *cg, const char *dir, sl_err *err)
{
	if (cg->fake)
		return 0;
	if (cg_has(cg, dir, "cgroup.kill"))
		return cg_write(cg, dir, "cgroup.kill", "1", err);
	struct timespec deadline;
	cg_deadline(&deadline, CG_FREEZE_MS / 2);
	sl_err ferr = {0};
	if (cg_write(cg, dir, "cgroup.freeze", "1", &ferr) == 0)
		cg_wait_for(dir, "cgroup.events", "frozen", "1", &deadline, &ferr);
	size_t n;
	int rc = cg_kill_tree(cg, dir, &n, err);
	if (cg_write(cg, dir, "cgroup.freeze", "0", &ferr) < 0 && rc == 0)
		return (*err = ferr, -1);
	return rc;
}

static int v2_destroy(sl_cgroup *cg, const char *name, sl_err *err)
{
	char dir[PATH_MAX];
	if (cg_dir(cg, 0, name, dir, sizeof(dir), err) < 0)
		return -1;
	if (!cg_dir_exists(dir))
		return 0;
	struct timespec deadline;
	cg_deadline(&deadline, CG_DESTROY_MS);
	if (kill_all(cg, dir, err) < 0 || cg_remove_tree(cg, dir, &deadline, err) < 0)
		return sl_wrap(err, "cgroup %s: destroy", name);
	return 0;
}

const struct cg_backend cg_v2_backend = {
    .create = v2_create,
    .set_limits = set_limits,
    .attach = v2_attach,
    .freeze = v2_freeze,
    .usage = v2_usage,
    .procs = v2_procs,
    .destroy = v2_destroy,
};

/* cgroup.h — sandbox cgroups: create with cpu/memory/pids limits, attach, freeze, read
 * usage, destroy; one interface over the cgroup v1 and v2 backends (detected at open). */
#ifndef SANDLOT_CGROUP_H
#define SANDLOT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

#include "err.h"

typedef struct sl_limits {
	uint64_t cpu_millicores; /* 0 = none */
	uint64_t memory_bytes;	 /* 0 = none */
	uint64_t pids_max;	 /* 0 = none */
} sl_limits;

typedef struct sl_cgusage {
	uint64_t cpu_usage_ns;
	uint64_t memory_bytes;
	uint64_t memory_peak_bytes; /* 0 when the kernel does not track it (v2 before 5.19) */
	uint64_t pids_current;
	uint64_t oom_kills;
} sl_cgusage;

/* The driver: cgroup version and the root path of each hierarchy. */
typedef struct sl_cgroup sl_cgroup;

/* Open the cgroup tree at ROOT (NULL = "/sys/fs/cgroup"). A cgroup2 mount (or a tree with
 * ROOT/cgroup.controllers) is v2; otherwise ROOT must hold v1 hierarchies for cpu, cpuacct,
 * memory, pids and freezer (separate or comma-joined like "cpu,cpuacct"). A ROOT that is
 * not on cgroupfs is a fake tree for tests: writes create files, nothing is signalled. */
int cgroup_open(const char *root, sl_cgroup **out, sl_err *err);
void cgroup_close(sl_cgroup *cg);
int cgroup_version(const sl_cgroup *cg); /* 1 or 2 */

/* NAME is a relative path of [A-Za-z0-9_.-] components ("sandlot/sbx_abc"); missing
 * parents are made. Limits of 0 keep the kernel default; swap is always turned off. An
 * existing NAME is SL_CONFLICT; a failure midway removes the directories it made. */
int cgroup_create(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err);
/* NAME's directories, where they exist, made mode 0700 (cgroups sandlot makes are; this
 * mends a parent an older version made world-readable). */
int cgroup_make_private(sl_cgroup *cg, const char *name, sl_err *err);
/* Rename FROM to TO, a new name beside it (same parent), in every hierarchy: v1 only
 * (SL_NOTIMPL on v2, whose kernel cannot). A missing FROM is SL_NOTFOUND, a taken TO
 * SL_CONFLICT; a failure midway renames back what it had renamed. */
int cgroup_rename(sl_cgroup *cg, const char *from, const char *to, sl_err *err);
/* Move PID (a whole process) into NAME in every controller. */
int cgroup_attach(sl_cgroup *cg, const char *name, pid_t pid, sl_err *err);
/* The files that put a one-thread process into NAME in every controller, one per
 * hierarchy (v1 `tasks`, v2 cgroup.procs): FILES[0..*N) (at most MAX) point into BUF,
 * where the paths are packed (one page for all rather than a page each: every page
 * first touched costs a fault). A process joins NAME by writing "0" (itself) to each:
 * launch.c's child does, while its parent waits in vfork. */
int cgroup_join_files(sl_cgroup *cg, const char *name, char *buf, size_t buflen,
		      const char **files, size_t max, size_t *n, sl_err *err);
/* Set every limit of NAME to LIM; here 0 means unlimited (an existing limit is lifted). */
int cgroup_update(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err);
/* Freeze or thaw NAME and wait (up to ~2 s, else SL_TIMEOUT and the change is undone)
 * until the kernel reports it done. */
int cgroup_freeze(sl_cgroup *cg, const char *name, bool frozen, sl_err *err);
int cgroup_usage(sl_cgroup *cg, const char *name, sl_cgusage *out, sl_err *err);
/* cpu_usage_ns, memory_bytes and pids_current only (the rest 0): what the API shows of a
 * sandbox, two files fewer to open on every create and read. */
int cgroup_usage_basic(sl_cgroup *cg, const char *name, sl_cgusage *out, sl_err *err);
/* Just the OOM-kill counter (one file read: the exec hot path asks for it). */
int cgroup_oom_kills(sl_cgroup *cg, const char *name, uint64_t *out, sl_err *err);
/* The processes in NAME (not its children), sorted; *PIDS is malloc'd (NULL when none). */
int cgroup_procs(sl_cgroup *cg, const char *name, pid_t **pids, size_t *n, sl_err *err);
/* Kill every process in NAME and its child cgroups, then remove them from every
 * controller. Copes with fork bombs (bounded ~5 s, then SL_TIMEOUT). A missing NAME is
 * success. Parents of NAME are left alone. */
int cgroup_destroy(sl_cgroup *cg, const char *name, sl_err *err);

/* The directory of NAME for CONTROLLER ("cpu", "cpuacct", "memory", "pids", "freezer";
 * ignored on v2, where NULL is fine). -1 with errno EINVAL (bad name or controller) or
 * ERANGE (BUF too small). For tests and diagnostics. */
int cgroup_path(const sl_cgroup *cg, const char *controller, const char *name, char *buf,
		size_t len);

#endif

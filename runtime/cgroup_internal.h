/* cgroup_internal.h — what cgroup.c shares with the v1 and v2 backends: the driver
 * struct, the backend table, and file/dir helpers that know about fake test trees. */
#ifndef SANDLOT_CGROUP_INTERNAL_H
#define SANDLOT_CGROUP_INTERNAL_H

#include <time.h>

#include "cgroup.h"

enum cg_v1_ctrl { CG_CPU, CG_CPUACCT, CG_MEMORY, CG_PIDS, CG_FREEZER, CG_V1_NCTRL };
extern const char *const cg_v1_names[CG_V1_NCTRL];

#define CG_CPU_PERIOD_US    UINT64_C(100000)
#define CG_CPU_MIN_QUOTA_US UINT64_C(1000) /* the kernel refuses quotas under 1 ms */
#define CG_FREEZE_MS	    2000
#define CG_DESTROY_MS	    5000
#define CG_MAX_DEPTH	    16

struct cg_backend {
	int (*create)(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err);
	/* RESET: 0 fields lift the limit instead of leaving it alone */
	int (*set_limits)(sl_cgroup *cg, const char *name, const sl_limits *lim, bool reset,
			  sl_err *err);
	int (*attach)(sl_cgroup *cg, const char *name, pid_t pid, sl_err *err);
	int (*freeze)(sl_cgroup *cg, const char *name, bool frozen, sl_err *err);
	/* ALL: also memory_peak_bytes and oom_kills (two more files) */
	int (*usage)(sl_cgroup *cg, const char *name, bool all, sl_cgusage *out, sl_err *err);
	int (*procs)(sl_cgroup *cg, const char *name, pid_t **pids, size_t *n, sl_err *err);
	int (*destroy)(sl_cgroup *cg, const char *name, sl_err *err);
	/* NULL where the kernel cannot rename a cgroup (v2) */
	int (*rename)(sl_cgroup *cg, const char *from, const char *to, sl_err *err);
};
extern const struct cg_backend cg_v1_backend, cg_v2_backend;

struct sl_cgroup {
	int version;
	/* Not on cgroupfs (unit tests): control files are created by writing them, every
	 * optional file counts as present, and no process is ever signalled. */
	bool fake;
	char *root;
	char *v1_dir[CG_V1_NCTRL]; /* v1: hierarchy root per controller; shared paths repeat */
	const struct cg_backend *ops;
};

/* Directories made by one create, removed again if it fails. */
typedef struct cg_made {
	char *dirs[CG_MAX_DEPTH * CG_V1_NCTRL];
	size_t n;
} cg_made;

/* v1: true for the first controller of each distinct hierarchy (visit each dir once). */
bool cg_v1_first(const sl_cgroup *cg, int ctrl);
/* NAME's directory in CTRL's hierarchy (v1) or under the root (v2, CTRL ignored). */
int cg_dir(const sl_cgroup *cg, int ctrl, const char *name, char *buf, size_t len, sl_err *err);

/* Write VAL to DIR/FILE in one write(2). */
int cg_write(const sl_cgroup *cg, const char *dir, const char *file, const char *val, sl_err *err);
/* Whole file as a NUL-terminated string in *OUT (malloc'd). */
int cg_read(const char *dir, const char *file, char **out, sl_err *err);
/* A file holding one number ("max" reads as UINT64_MAX). */
int cg_read_u64(const char *dir, const char *file, uint64_t *v, sl_err *err);
/* The value of "KEY <n>" in a flat keyed file (cpu.stat, memory.events, ...); *FOUND
 * says whether the key was there (*V is 0 if not). */
int cg_read_key(const char *dir, const char *file, const char *key, uint64_t *v, bool *found,
		sl_err *err);
/* A control file the kernel may or may not provide (memsw, swap.max, memory.peak). */
bool cg_has(const sl_cgroup *cg, const char *dir, const char *file);
bool cg_dir_exists(const char *dir);
/* The pids listed in DIR/cgroup.procs. */
int cg_read_pids(const char *dir, pid_t **pids, size_t *n, sl_err *err);

/* mkdir BASE/NAME component by component, calling BEFORE(parent) ahead of each mkdir.
 * NAME itself must be new (SL_CONFLICT); dirs made are appended to MADE. */
int cg_mkpath(sl_cgroup *cg, const char *base, const char *name,
	      int (*before)(sl_cgroup *cg, const char *parent, sl_err *err), cg_made *made,
	      sl_err *err);
/* Remove MADE's dirs, newest first (best effort), and free them. */
void cg_unmake(const sl_cgroup *cg, cg_made *made);
/* Free MADE's strings, keeping the dirs. */
void cg_made_free(cg_made *made);

/* Poll DIR/FILE until its content (or KEY's value, if KEY) equals WANT, or DEADLINE. */
int cg_wait_for(const char *dir, const char *file, const char *key, const char *want,
		const struct timespec *deadline, sl_err *err);
void cg_deadline(struct timespec *ts, long ms);
/* SIGKILL every process in DIR and its child cgroups (one pass); counts them in *N. */
int cg_kill_tree(const sl_cgroup *cg, const char *dir, size_t *n, sl_err *err);
/* Kill what is left in DIR and its children until they are empty, then rmdir them all
 * (children first). A missing DIR is success. */
int cg_remove_tree(const sl_cgroup *cg, const char *dir, const struct timespec *deadline,
		   sl_err *err);

#endif

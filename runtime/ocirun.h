/* ocirun.h — sandlot-oci's containers: runc's verbs (create, start, state, kill, delete,
 * exec, ps, pause, resume, update) over a state dir per container under --root. */
#ifndef SANDLOT_OCIRUN_H
#define SANDLOT_OCIRUN_H

#include <stdbool.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"

typedef struct oci_create_opts {
	const char *bundle, *pid_file, *console_socket;
	int preserve_fds;
} oci_create_opts;

typedef struct oci_exec_opts {
	const char *process_file, *pid_file, *console_socket;
	bool detach;
} oci_exec_opts;

/* ROOT is --root (the callers' state dir, e.g. /run/containerd/runc/<ns>), ID the
 * container's id. Each returns 0 or -1 with ERR set: SL_NOTFOUND for an unknown id,
 * SL_CONFLICT for a duplicate id or a verb the container's status does not allow,
 * SL_INVALID for a bad bundle. A failed prestart or createRuntime hook fails create (nothing
 * left); a failed poststart (start) or poststop (delete) hook only sets *WARN's msg. */
int ocirun_create(sl_ctx *ctx, const char *root, const char *id, const oci_create_opts *o,
		  sl_err *err);
int ocirun_start(sl_ctx *ctx, const char *root, const char *id, sl_err *warn, sl_err *err);
/* The runtime-spec state JSON (malloc'd). */
int ocirun_state(sl_ctx *ctx, const char *root, const char *id, char **json, sl_err *err);
int ocirun_kill(sl_ctx *ctx, const char *root, const char *id, int sig, bool all, sl_err *err);
int ocirun_delete(sl_ctx *ctx, const char *root, const char *id, bool force, sl_err *warn,
		  sl_err *err);
/* Detached: 0 once it runs (pid in the pid file); else its exit code in *STATUS. */
int ocirun_exec(sl_ctx *ctx, const char *root, const char *id, const oci_exec_opts *o, int *status,
		sl_err *err);
/* The host pids of the container's processes as a JSON array (malloc'd). */
int ocirun_ps(sl_ctx *ctx, const char *root, const char *id, char **json, sl_err *err);
int ocirun_pause(sl_ctx *ctx, const char *root, const char *id, bool paused, sl_err *err);
/* linux.resources JSON over the container's limits. */
int ocirun_update(sl_ctx *ctx, const char *root, const char *id, const char *json, size_t len,
		  sl_err *err);
/* runtime-spec features JSON (static). */
const char *ocirun_features(void);

#endif

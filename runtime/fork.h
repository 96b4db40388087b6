/* fork.h — copies of a live sandbox: N new sandboxes whose files are a copy-on-write
 * copy of the source's at one instant, with the source's settings (docs/forks.md). */
#ifndef SANDLOT_FORK_H
#define SANDLOT_FORK_H

#include <stdbool.h>
#include <stddef.h>

#include "sandbox.h"

#define SL_FORK_MAX 100 /* copies per call */

typedef struct sl_fork_opts {
	unsigned count;	  /* 1..SL_FORK_MAX */
	const char *name; /* NULL: unnamed; one copy: NAME, more: NAME-1 .. NAME-N */
	bool memory;	  /* processes and memory too (a source made with "hibernate": true) */
} sl_fork_opts;

/* Fork sandbox REF (running or paused: SL_CONFLICT otherwise). The source is frozen only
 * while its layer is snapshotted; the copies get its image, limits, env, labels, user,
 * working directory, network settings (not its address), volumes, secrets, public ports
 * and timeouts, and start from the image's entry; with O->memory, they run the source's
 * processes instead, restored with their memory from a CRIU dump taken at the instant
 * of the files (SL_CONFLICT for a source not made to hibernate). All or none: a copy that fails
 * discards the others. *OUT (free with sandbox_free_list) holds *N records. */
int sandbox_fork(sl_ctx *ctx, const char *ref, const sl_fork_opts *o, sl_sandbox **out, size_t *n,
		 sl_err *err);

#endif

/* release.h — freeing a destroyed sandbox's host resources off the caller's path. A
 * destroy is two steps (sandbox.h): begin (kill, tombstone: what the caller waits for) and
 * finish (the kernel's teardown, cgroups, network, layer, run dir, claims). Two callers
 * hand the finish to someone else: the CLI's `run`, which exits first, and the daemon,
 * which answers first. */
#ifndef SANDLOT_RELEASE_H
#define SANDLOT_RELEASE_H

#include "sandbox.h"

/* Destroy REF ("deleted") and exit the process with CODE as soon as the tombstone is
 * written: a detached child (its own process group, so a ^C of ours does not stop it)
 * finishes the release, and, when the last network went with it, keeps the host side up
 * for a moment before it takes it down (docs/network.md). Returns only when the release
 * could not be handed over: then it was done here (0), or failed (-1). */
int release_detached_exit(sl_ctx *ctx, const char *ref, int code, sl_err *err);

/* The daemon's releaser: one thread that finishes what release_queue began. */
typedef struct sl_releaser sl_releaser;

/* NULL with ERR when no thread could be started (callers then destroy inline). */
sl_releaser *releaser_start(sl_ctx *ctx, sl_err *err);
/* Destroy REF with REASON: begin here, finish on the releaser's thread (or here, when R is
 * NULL or its queue is full: a flood of deletes waits for its own releases). */
int release_queue(sl_releaser *r, sl_ctx *ctx, const char *ref, const char *reason,
		  sl_err *err);
/* Finish every queued release, then stop the thread and free R (NULL is fine). */
void releaser_stop(sl_releaser *r);

#endif

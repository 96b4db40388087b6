/* sandbox_internal.h — what the pool (pool.c) needs of sandbox.c beyond its public
 * calls: a destroy by id that may take a pooled sandbox, and the image rule of a create. */
#ifndef SANDLOT_SANDBOX_INTERNAL_H
#define SANDLOT_SANDBOX_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "image.h"

/* Destroy ID (pooled ones only when ALLOW_POOLED). RELEASER 0: free everything here;
 * else only begin (kill, tombstone), naming RELEASER as the process that frees the rest. */
int sandbox_destroy_id(sl_ctx *ctx, const char *id, const char *reason, bool allow_pooled,
		       pid_t releaser, sl_err *err);

#endif

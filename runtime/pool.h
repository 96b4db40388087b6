/* pool.h — the daemon's pool of ready sandboxes: which creates it serves, a take, a
 * discard. */
#ifndef SANDLOT_POOL_H
#define SANDLOT_POOL_H

#include <stdbool.h>

#include "ctx.h"
#include "err.h"
#include "record.h"
#include "sandbox.h"

/* The daemon's pool of ready sandboxes (api/pool.c keeps their ids). A create can be
 * served from the pool when it asks only for what can be set after the start: env,
 * labels, user, working directory, timeouts, ephemeral. */
bool sandbox_poolable(const sl_create_opts *o);
/* The image a create would use (its default rule included): name and digest. */
int sandbox_resolve_image(sl_ctx *ctx, const char *image, char name[128], char digest[72],
			  sl_err *err);
/* Give pooled sandbox ID the create's settings and make it an ordinary running one.
 * SL_NOTFOUND when it is no longer usable (its init died): the caller discards it. */
int sandbox_pool_take(sl_ctx *ctx, const char *id, const sl_create_opts *o, sl_sandbox *out,
		      sl_err *err);
/* Destroy a pooled sandbox, record and all (a pool being drained or shrunk). */
int sandbox_pool_discard(sl_ctx *ctx, const char *id, sl_err *err);

#endif

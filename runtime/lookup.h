/* lookup.h — finding sandboxes: by id or name, all of them, the one using a thing. */
#ifndef SANDLOT_LOOKUP_H
#define SANDLOT_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* Look up by id or name, with the status checked against the live init. */
int sandbox_get(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* As sandbox_get, for a call that goes on to talk to the sandbox's init: a "running"
 * record is taken on its word (no look at /proc for its init), since a dead init answers
 * nothing and the call then fails SL_CONFLICT ("not running") on its own. */
int sandbox_get_for_init(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Every sandbox, tombstones included, oldest first (pooled ones are the daemon's). */
int sandbox_list(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err);
/* The same without tombstones, which a daemon then does not read again. */
int sandbox_list_live(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err);

/* The id of a live (not terminated) sandbox for which uses(sb, arg) holds, in user
 * ("" when none): what refuses deleting an image, snapshot or volume in use. */
int sandbox_find_user(sl_ctx *ctx, bool (*uses)(const sl_sandbox *sb, const void *arg),
		      const void *arg, char user[32], sl_err *err);

/* As sandbox_get, under the sandbox's lock (*LK, which the caller closes): nothing else
 * changes the sandbox until then. */
int sandbox_get_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err);

/* Resolve an id or a name to an id (SL_NOTFOUND when neither names a sandbox). */
int sandbox_resolve_ref(sl_ctx *ctx, const char *ref, char *id, size_t len, sl_err *err);

#endif

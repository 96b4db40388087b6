/* claim.h — claims on uid ranges ("slots"), names ("names") and addresses ("leases"):
 * a file <state>/<kind>/<key> holding the owner's id, taken atomically. */
#ifndef SANDLOT_CLAIM_H
#define SANDLOT_CLAIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* <state>/<kind>/<key> */
void claim_path(const sl_ctx *ctx, const char *kind, const char *key, char *buf, size_t len);
/* The owner's id a claim file holds, NUL-terminated: its length, or <= 0 (errno set
 * when it could not be opened; 0 while its creator is still writing it). */
ssize_t claim_read(const char *path, char owner[40]);
/* 0: claimed for ID; 1: taken by a live owner; -1: error. WAIT: wait for an owner being
 * released (a name). */
int claim_take(const sl_ctx *ctx, const char *kind, const char *key, const char *id, bool wait,
	       sl_err *err);
/* A free 65536-wide uid range claimed for OWNER (slots/<n>), probed from the slot hash H
 * picks: its first host id in *BASE. SL_EXHAUSTED when every one is taken. */
int claim_uid_range(const sl_ctx *ctx, const char *owner, uint64_t h, uint32_t *base,
		    sl_err *err);
/* Claim KIND/KEY, held by FROM, held by TO now (atomically: never free between). */
int claim_transfer(const sl_ctx *ctx, const char *kind, const char *key, const char *from,
		   const char *to, sl_err *err);
/* Release ID's claim KIND/KEY (kept as a spare file for the next claim). */
void claim_drop(const sl_ctx *ctx, const char *kind, const char *key, const char *id);
/* Release every claim of SB: uid range, address, name. */
void claim_release_all(const sl_ctx *ctx, const sl_sandbox *sb);
/* The key of ID's claim of KIND (a slot number, an address, a name) in KEY, "" when it
 * holds none: a scan of the KIND dir, for a record that cannot say (a broken one). */
void claim_find(const sl_ctx *ctx, const char *kind, const char *id, char *key, size_t len);
/* Is claim PATH's owner gone (no record, or a released tombstone)? */
bool claim_stale(const sl_ctx *ctx, const char *path);

#endif

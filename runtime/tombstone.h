/* tombstone.h — destroyed sandboxes' records kept 24 h (and at most cfg.tombstones_max),
 * and the deadlines of live ones, read once a second by the daemon. */
#ifndef SANDLOT_TOMBSTONE_H
#define SANDLOT_TOMBSTONE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* How long a tombstone is kept. */
#define TOMBSTONE_MS (24LL * 3600 * 1000)

/* Tombstones past cfg.tombstones_max (the oldest first) or older than 24 h lose their
 * records; the count removed. A release (sandbox_destroy, _finish) runs one when due:
 * the state dir has grown by a tenth of the bound since the last one. */
int sandbox_collect_tombstones(sl_ctx *ctx, sl_err *err);

/* What the daemon's once-a-second deadline sweep and its health count need of a live
 * sandbox (not a tombstone, not pooled). */
typedef struct sl_deadline {
	char id[32];
	enum sl_status status;
	bool ephemeral;
	int64_t created_ms;
	uint64_t idle_ms;  /* 0: none */
	int64_t expires_ms; /* 0: none */
	enum sl_on_lifetime on_lifetime; /* what passing it does */
	enum sl_on_lifetime on_idle;	 /* what the idle timeout does (resolved) */
	pid_t init_pid;	    /* what "running" is checked against */
	uint64_t init_start;
	char boot_id[40];
	/* The stop policy (record.h): when set, what a stopped sandbox comes to. */
	bool stop_policy, archived;
	int64_t auto_archive_min, auto_delete_min, stopped_ms;
} sl_deadline;
/* Every live sandbox's deadlines. A record whose file is the one read before (same inode,
 * size and ctime) within the last 30 s is not parsed again: at N sandboxes a sweep is N
 * stats, not N JSON parses. A sandbox with an idle timeout gets its status refreshed
 * (an init that died reads "failed"). */
int sandbox_list_deadlines(sl_ctx *ctx, sl_deadline **out, size_t *n, sl_err *err);

/* ---- for the runtime's own modules ---- */

/* Remove ID's record if it is still a released tombstone (under its lock): removed? */
bool tombstone_collect_one(sl_ctx *ctx, const char *id);
/* After a release: a collection when one is due. Its failures are only logged. */
void tombstones_collect_if_due(sl_ctx *ctx);

#endif

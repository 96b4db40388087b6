/* snapshot.h — snapshots of a sandbox's files: a read-only btrfs snapshot of its
 * writable layer, on top of the same image. Names act as tags (the newest snapshot
 * with a name owns it). A sandbox created from a snapshot starts with equal files. */
#ifndef SANDLOT_SNAPSHOT_H
#define SANDLOT_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "ctx.h"
#include "record.h"

typedef struct sl_snapshot {
	char id[32]; /* snp_ + 20 base32 */
	char name[64];
	char sandbox_id[32];
	char image[128];
	char digest[72];
	uint32_t uid_base; /* the owner range its files were written under */
	int64_t created_ms;
	char owner[SL_OWNER_LEN]; /* the key that made it (owner.h): others get "not found" */
	/* Hidden from the snapshot calls (get, list, delete): a checkpoint belongs to the
	 * sandbox it names, its name unique among that sandbox's; a fork base lives only
	 * while its forks are made. */
	char checkpoint_of[32];
	bool fork_base;
	/* A checkpoint that holds its sandbox's processes too: CRIU's dump of them at the
	 * instant of its files, in <state>/hibernate/<id> (docs/forks.md). */
	bool memory;
} sl_snapshot;

/* Capture a sandbox's files consistently: a running sandbox is frozen for the instant
 * of the snapshot (btrfs flushes and snapshots atomically), then thawed. */
int snapshot_create(sl_ctx *ctx, const char *sandbox_ref, const char *name, sl_snapshot *out,
		    sl_err *err);
/* By id or name. */
int snapshot_get(sl_ctx *ctx, const char *ref, sl_snapshot *out, sl_err *err);
int snapshot_list(sl_ctx *ctx, sl_snapshot **out, size_t *n, sl_err *err);
/* Clean up after snapshot makers that died midway (a create or import killed between its
 * subvolume and its record): their subvolumes go, the sandboxes they froze are thawed.
 * The number of such snapshots. */
int snapshot_collect_unfinished(sl_ctx *ctx);
/* SL_CONFLICT while a live sandbox was created from it. */
int snapshot_delete(sl_ctx *ctx, const char *ref, sl_err *err);
/* The snapshot's whole tree (image + its files, flattened) as tar.zst on out_fd, with
 * owners as seen inside; snapshot_import makes a snapshot of such a stream (an image
 * named "snapshot-NAME" under an empty layer), so the two round-trip between hosts. */
int snapshot_export(sl_ctx *ctx, const char *ref, int out_fd, sl_err *err);
int snapshot_import(sl_ctx *ctx, const char *name, int in_fd, sl_snapshot *out, sl_err *err);
/* Make dst_id's writable layer a copy of the snapshot, owned by dst_base's range. */
int snapshot_clone_layer(sl_ctx *ctx, const sl_snapshot *s, const char *dst_id, uint32_t dst_base,
			 uint64_t disk_bytes, sl_err *err);

/* ---- checkpoints: named snapshots of one sandbox, for rolling it back ----
 * Each is a snapshot record with checkpoint_of set; the sandbox's destroy deletes them. */
#define SL_CHECKPOINTS_MAX 64 /* per sandbox */
/* MEMORY: the sandbox's processes too (running, created with "hibernate": true: SL_CONFLICT
 * otherwise), dumped by CRIU, left running, at the instant of the files; a rollback to
 * it restores them. */
int checkpoint_create(sl_ctx *ctx, const char *sandbox_ref, const char *name, bool memory,
		      sl_snapshot *out, sl_err *err);
/* SANDBOX_REF's checkpoints, oldest first. */
int checkpoint_list(sl_ctx *ctx, const char *sandbox_ref, sl_snapshot **out, size_t *n,
		    sl_err *err);
/* Checkpoint REF (its name, or its snp_ id) of sandbox SANDBOX_ID (an id, not a name):
 * SL_NOTFOUND when it has none such; SL_CONFLICT when REF is another sandbox's. */
int checkpoint_find(sl_ctx *ctx, const char *sandbox_id, const char *ref, sl_snapshot *out,
		    sl_err *err);
int checkpoint_delete(sl_ctx *ctx, const char *sandbox_ref, const char *ref, sl_err *err);
/* Delete every checkpoint of SANDBOX_ID (its destroy); what fails is logged. */
void checkpoint_delete_all(sl_ctx *ctx, const char *sandbox_id);

/* ---- processes with the files: checkpoints and forks with "memory" ---- */
/* What keeping SB's processes in a checkpoint or fork (WHAT) needs: created with
 * "hibernate": true, running, no network, volumes or secret files; SL_CONFLICT saying
 * which. */
int snapshot_memory_check(const sl_sandbox *sb, const char *what, sl_err *err);
/* Run under a sandbox's lock, its cgroup frozen, just before its layer is snapshotted as
 * S; its failure fails the capture (the sandbox thawed, no snapshot made). */
typedef int (*snapshot_hook)(sl_ctx *ctx, const sl_sandbox *sb, const sl_snapshot *s, sl_err *err);
/* A snapshot_hook: SB's processes dumped by CRIU, left running, into
 * <state>/hibernate/<S's id> (deleted with S, or by a collect of a half-made S). */
int snapshot_dump_at_freeze(sl_ctx *ctx, const sl_sandbox *sb, const sl_snapshot *s, sl_err *err);

/* ---- fork bases: the files of a sandbox at one instant, while forks are made of them ----
 * A hidden snapshot whose making marker stays held (*mfd) until snapshot_fork_base_drop:
 * a forker that dies leaves it to snapshot_collect_unfinished, which deletes it.
 * AT_FREEZE (or NULL): snapshot_dump_at_freeze for a fork with memory. */
int snapshot_fork_base(sl_ctx *ctx, const char *sandbox_ref, snapshot_hook at_freeze,
		       sl_snapshot *out, int *mfd, sl_err *err);
void snapshot_fork_base_drop(sl_ctx *ctx, const sl_snapshot *s, int mfd);

#endif

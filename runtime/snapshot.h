/* snapshot.h — snapshots of a sandbox's files: a read-only btrfs snapshot of its
 * writable layer, on top of the same image. Names act as tags (the newest snapshot
 * with a name owns it). A sandbox created from a snapshot starts with equal files. */
#ifndef SANDLOT_SNAPSHOT_H
#define SANDLOT_SNAPSHOT_H

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

#endif

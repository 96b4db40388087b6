/* storage.h — the writable layers of sandboxes: a btrfs volume on a sparse loop
 * file in the state dir, one subvolume per sandbox, its size capped by a qgroup. */
#ifndef SANDLOT_STORAGE_H
#define SANDLOT_STORAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "err.h"

/* Make sure <state>/store is mounted (creating and formatting <state>/store.img on
 * first use). Safe to call from several processes at once. */
int store_ensure(const sl_config *cfg, sl_err *err);
/* 0 when the state filesystem (which holds the store's sparse file) and, once mounted,
 * the store itself are above cfg->min_free with room for a disk of DISK_BYTES more (the
 * whole of it: the store's file is sparse, so a sandbox's writes take from the host);
 * SL_NOSPACE (507) naming which when not. */
int store_space_check(const sl_config *cfg, uint64_t disk_bytes, sl_err *err);
/* A subvolume <store>/sandboxes/<id> with upper/ (owned by owner:owner) and work/,
 * capped at disk_bytes (EDQUOT past it): a ready-made one of that size renamed when
 * there is one (store_layer_spares_fill). */
int store_layer_create(const sl_config *cfg, const char *id, uint64_t disk_bytes, uid_t owner,
		       sl_err *err);
/* Make the missing ready-made layers of DISK_BYTES (at most two) that store_layer_create
 * takes before it makes one: for a release, or a daemon's background thread. TAG names
 * the one being built (.building-<TAG>), so concurrent fillers never share one. */
void store_layer_spares_fill(const sl_config *cfg, uint64_t disk_bytes, const char *tag);
/* Delete what a crash left in the store: the layer of an id that KNOWN says has no
 * record (a create cut short before its first record reached the disk), and a spare
 * half built more than a minute ago. Returns how many. For a daemon's start. */
int store_layers_collect(const sl_config *cfg, bool (*known)(void *arg, const char *id),
			 void *arg);
/* Delete the sandbox's subvolume; a missing one is success. */
int store_layer_destroy(const sl_config *cfg, const char *id, sl_err *err);
int store_layer_path(const sl_config *cfg, const char *id, char *buf, size_t len);
/* The same from snapshot SNP_ID: a ready-made clone of it renamed when there is one of
 * that size (still owned by the snapshot's uid range, like a fresh one). */
int store_layer_clone_snapshot(const sl_config *cfg, const char *id, const char *snp_id,
			       uint64_t disk_bytes, sl_err *err);
/* Make the missing ready-made clones of SNP_ID of DISK_BYTES (at most two), for a
 * release of a sandbox made from it; TAG as for store_layer_spares_fill. */
void store_clone_spares_fill(const sl_config *cfg, const char *snp_id, uint64_t disk_bytes,
			     const char *tag);
/* Replace sandbox ID's writable layer (no process using it) by a clone of snapshot
 * SNP_ID of the same uid range, under the same limit; on failure the old one stays. */
int store_layer_replace(const sl_config *cfg, const char *id, const char *snp_id,
			uint64_t disk_bytes, sl_err *err);
/* Snapshots of sandbox layers: <store>/snapshots/<snp_id>, read-only. */
int store_snapshot_create(const sl_config *cfg, const char *sandbox_id, const char *snp_id,
			  sl_err *err);
/* An empty snapshot (upper/ and work/ owned by 0:0), for imported snapshots. */
int store_snapshot_create_empty(const sl_config *cfg, const char *snp_id, sl_err *err);
int store_snapshot_destroy(const sl_config *cfg, const char *snp_id, sl_err *err);
int store_snapshot_path(const sl_config *cfg, const char *snp_id, char *buf, size_t len);

#endif

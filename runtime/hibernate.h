/* hibernate.h — a sandbox's processes checkpointed to disk with CRIU and ended, and
 * restored (docs/hibernate.md). Only one created with "hibernate": true (launch_hib.c). */
#ifndef SANDLOT_HIBERNATE_H
#define SANDLOT_HIBERNATE_H

#include <stddef.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* The criu binary: $SANDLOT_CRIU, else the one scripts/setup builds. */
const char *hibernate_criu(void);
/* <state>/store/sandboxes/<id>/hibernate: a hibernated sandbox's images, in its layer
 * (its disk limit counts them). */
void hibernate_images_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len);
/* Remove them (a resume's end, a delete). */
void hibernate_images_delete(const sl_ctx *ctx, const char *id);
/* <state>/hibernate/<id>: the dump of a fork with memory (ID its fork base's) or of a
 * checkpoint with memory (ID the checkpoint's), outside any sandbox's layer. */
void hibernate_dump_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len);
/* Remove it. */
void hibernate_dump_delete(const sl_ctx *ctx, const char *id);
/* Dump every process of running sandbox REF (criu dump, under its record's lock) and
 * end them; its cgroups removed; status "hibernated". SL_HIBERNATE_REFUSED with CRIU's
 * reason (the sandbox running on as before) when it cannot be. */
int sandbox_hibernate(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Restore hibernated SB (its lock held by the caller): its cgroups made again, its
 * overlay mounted for criu restore --root, status "running", the images removed. */
int hibernate_resume_locked(sl_ctx *ctx, sl_sandbox *sb, sl_err *err);
/* For a fork with memory (fork.c): dump running SB into DIR (made 0700 here), leaving its
 * tasks running; its cgroup is FROZEN by the caller and stays so. SL_HIBERNATE_REFUSED
 * with CRIU's reason, DIR removed, when it cannot be. */
int hibernate_dump_copy(sl_ctx *ctx, const sl_sandbox *sb, const char *dir, sl_err *err);
/* Restore DIR (another sandbox's dump) as new sandbox SB's processes: the images' user
 * namespace maps moved to SB's uid range, its cgroups made, the tasks put in them, SB's
 * init_pid and init_start set. -1 with nothing of it running. DIR is left. */
int hibernate_restore_copy(sl_ctx *ctx, sl_sandbox *sb, const char *dir, sl_err *err);

/* At a daemon's start: a sandbox whose dump ended after the daemon that ran it (killed
 * meanwhile) becomes "hibernated" when CRIU finished it (its tasks are gone), and images
 * left beside tasks that run on (a dump refused or cut short) are removed. */
void hibernate_recover(sl_ctx *ctx);

#endif

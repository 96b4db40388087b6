/* volfs.h — the files of a named volume read and written from the host, with no sandbox
 * (E2B's volume content API). Sandboxes write volumes at will, so every path is resolved
 * beneath the volume's root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_XDEV): ".." is refused, and no symlink is ever followed (one is listed and
 * removed as itself). Ids are the ones sandboxes see (0-65535): the volume stores them so,
 * each sandbox's id-mapped mount shifts them into its range. */
#ifndef SANDLOT_VOLFS_H
#define SANDLOT_VOLFS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ctx.h"
#include "err.h"

typedef enum sl_volfs_type {
	SL_VOLFS_OTHER = 0,
	SL_VOLFS_FILE,
	SL_VOLFS_DIR,
	SL_VOLFS_SYMLINK,
} sl_volfs_type;

typedef struct sl_volfs_entry {
	char name[256];
	char path[PATH_MAX]; /* absolute in the volume, normalised ("/a/b") */
	sl_volfs_type type;
	uint64_t size;
	uint32_t mode; /* permission bits (07777) */
	uint32_t uid, gid;
	struct timespec atime, mtime, ctime;
	char target[PATH_MAX]; /* symlinks only */
} sl_volfs_entry;

/* Owner and mode for what a call makes or changes; -1 each: unchanged (a new file: 0:0,
 * 0644; a new directory 0755). */
typedef struct sl_volfs_attrs {
	int64_t uid, gid, mode;
} sl_volfs_attrs;

/* One call's view of a volume: its root directory. */
typedef struct sl_volfs {
	int root;
	char name[64];
} sl_volfs;

/* Open the volume NAME (the thread's key must see it; else SL_NOTFOUND). */
int volfs_open(sl_ctx *ctx, const char *name, sl_volfs *v, sl_err *err);
void volfs_close(sl_volfs *v);
#define _cleanup_volfs_ __attribute__((cleanup(volfs_close)))

int volfs_stat(const sl_volfs *v, const char *path, sl_volfs_entry *out, sl_err *err);
/* The entries under directory PATH, DEPTH levels down (1: its children), parents before
 * their children, each level in name order; FN's nonzero return stops the walk. At most
 * 16384 entries (SL_TOOLARGE beyond). */
typedef int (*volfs_entry_fn)(void *arg, const sl_volfs_entry *e, sl_err *err);
int volfs_list(const sl_volfs *v, const char *path, unsigned depth, volfs_entry_fn fn, void *arg,
	       sl_err *err);
/* PARENTS: make missing parents, and an existing directory is success (mkdir -p);
 * otherwise an existing PATH is SL_CONFLICT and a missing parent SL_NOTFOUND. */
int volfs_mkdir(const sl_volfs *v, const char *path, bool parents, const sl_volfs_attrs *a,
		sl_volfs_entry *out, sl_err *err);
/* A regular file for reading (a symlink is SL_INVALID, a directory SL_INVALID). */
int volfs_open_read(const sl_volfs *v, const char *path, int *fd, uint64_t *size, sl_err *err);
/* Create PATH for writing (its parent must exist); an existing file is truncated when
 * OVERWRITE, else SL_CONFLICT. The caller writes and closes *fd. */
int volfs_open_write(const sl_volfs *v, const char *path, bool overwrite, const sl_volfs_attrs *a,
		     int *fd, sl_err *err);
/* PATH and everything below it (a symlink is removed, not followed). The root is
 * SL_INVALID. */
int volfs_remove(const sl_volfs *v, const char *path, sl_err *err);
/* Change owner and mode of PATH (a symlink is SL_INVALID). */
int volfs_setattr(const sl_volfs *v, const char *path, const sl_volfs_attrs *a, sl_volfs_entry *out,
		  sl_err *err);

#endif

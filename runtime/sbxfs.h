/* sbxfs.h — the files of a running sandbox, as its own processes see them (mounts
 * inside included). Every path a user names is resolved inside the sandbox's root
 * (/proc/<init>/root + openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)), so "../",
 * absolute symlinks and symlink chains planted by sandbox code never reach a host file.
 * Files and directories made here belong to the sandbox's user (its mapped host uid). */
#ifndef SANDLOT_SBXFS_H
#define SANDLOT_SBXFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

typedef struct sl_fileinfo {
	char name[256];
	char path[4096]; /* as given, normalised, absolute inside the sandbox */
	char type[8];	 /* file dir symlink other */
	uint64_t size;
	uint32_t mode;	   /* permission bits (07777) */
	uint32_t uid, gid; /* as seen inside */
	int64_t mtime_ms;
	char target[4096]; /* symlinks only */
} sl_fileinfo;

cJSON *fileinfo_to_json(const sl_fileinfo *fi);

/* Open for reading (a regular file; SL_NOTFOUND if absent, SL_INVALID if a directory). */
int sbxfs_open_read(sl_ctx *ctx, const sl_sandbox *sb, const char *path, int *fd, uint64_t *size,
		    sl_err *err);
/* Create or truncate for writing; parents are made (mkdir -p) as the sandbox user; mode
 * applies to a new file (0644 if 0). The caller writes and closes fd. */
int sbxfs_open_write(sl_ctx *ctx, const sl_sandbox *sb, const char *path, uint32_t mode, int *fd,
		     sl_err *err);
int sbxfs_stat(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_fileinfo *out, sl_err *err);
/* One entry of a listing (valid during the call); a nonzero return stops the listing,
 * and is its result. */
typedef int (*sbxfs_entry_fn)(void *arg, const sl_fileinfo *fi, sl_err *err);
/* The entries of a directory, given to FN one at a time in name order (at most 16384,
 * SL_TOOLARGE beyond). Only their names are held meanwhile, so FN may list again. */
int sbxfs_list(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sbxfs_entry_fn fn, void *arg,
	       sl_err *err);
int sbxfs_mkdir(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_err *err); /* -p */
int sbxfs_remove(sl_ctx *ctx, const sl_sandbox *sb, const char *path, bool recursive, sl_err *err);
int sbxfs_move(sl_ctx *ctx, const sl_sandbox *sb, const char *from, const char *to, sl_err *err);
/* owner: NULL, or "user", "uid", "user:group" or "uid:gid" as known inside. */
int sbxfs_chmod(sl_ctx *ctx, const sl_sandbox *sb, const char *path, uint32_t mode,
		const char *owner, sl_err *err);

/* ---- additions (see docs/files.md) ---- */

/* Like sbxfs_stat, but a symlink as the last component is followed (inside the root). */
int sbxfs_stat_follow(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_fileinfo *out,
		      sl_err *err);
/* Make a symlink at path whose text is target (stored as given, never followed here);
 * parents are made. SL_CONFLICT if path exists. */
int sbxfs_symlink(sl_ctx *ctx, const sl_sandbox *sb, const char *target, const char *path,
		  sl_err *err);
/* Whole-file helpers over sbxfs_open_read/sbxfs_open_write. read: SL_TOOLARGE beyond
 * max bytes; *data is NUL-terminated (not counted in *len), caller frees. */
int sbxfs_read_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, size_t max, char **data,
		    size_t *len, sl_err *err);
int sbxfs_write_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, const void *data,
		     size_t len, uint32_t mode, sl_err *err);
/* The error for a failed read(2)/write(2)/close(2) on an fd from sbxfs_open_*:
 * ENOSPC/EDQUOT -> SL_EXHAUSTED "disk limit reached". op: "read" or "write". */
int sbxfs_io_fail(const sl_sandbox *sb, const char *op, const char *path, int errnum, sl_err *err);
/* write(2) all of DATA to FD (from sbxfs_open_write for PATH), errors as sbxfs_io_fail. */
int sbxfs_write_all(const sl_sandbox *sb, int fd, const char *path, const void *data, size_t len,
		    sl_err *err);
/* An inotify watch (MASK, on the inotify instance INO) of the directory PATH inside the
 * root (a symlink as the last component is followed, inside the root): its watch
 * descriptor, or -1 (SL_EXHAUSTED when the host's watch limit is reached). A directory on
 * a network filesystem (fs_network_kind: NFS, SMB, FUSE, ...), where inotify misses
 * changes made elsewhere, is SL_INVALID unless ALLOW_NETWORK. */
int sbxfs_watch_dir(sl_ctx *ctx, const sl_sandbox *sb, const char *path, int ino, uint32_t mask,
		    bool allow_network, sl_err *err);
/* Extended attributes in one namespace of user.* (NS, e.g. "e2b." for E2B's file
 * metadata): PATH's (a symlink as the last component is not followed, and has none) as
 * an object {KEY: value} for the attributes named "user." NS KEY, *out set even when
 * empty (caller frees). */
int sbxfs_xattrs_get(sl_ctx *ctx, const sl_sandbox *sb, const char *path, const char *ns,
		     cJSON **out, sl_err *err);
/* Replace the attributes "user." NS "*" of the file open at FD (from sbxfs_open_write for
 * PATH) with ATTRS, an object of strings: those not in ATTRS are removed (NULL: all).
 * SL_INVALID when the filesystem has no user attributes, SL_TOOLARGE past its room. */
int sbxfs_fd_xattrs_set(const sl_sandbox *sb, int fd, const char *path, const char *ns,
			const cJSON *attrs, sl_err *err);
/* Find a line of /etc/passwd (uid in field 3, gid in 4) or /etc/group (gid in 3), the
 * NUL-terminated BUF (cut into lines in place), by NAME, or by id WANT when NAME is NULL.
 * Malformed lines and ids from 65536 up are skipped. 0 found (*ID, and *GID from passwd
 * when GID is not NULL), 1 not found. */
int sbxfs_userdb_scan(char *buf, bool passwd, const char *name, uint32_t want, uint32_t *id,
		      uint32_t *gid);
/* The permission bits as text, "rwxr-xr-x" with s/S and t/T, NUL-terminated. */
void fileinfo_permissions(uint32_t mode, char out[10]);

#endif

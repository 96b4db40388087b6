/* fsutil.h — filesystem helpers shared by the image store, sandboxes and snapshots:
 * operations on trees that may hold hostile content (links planted by a workload). */
#ifndef SANDLOT_FSUTIL_H
#define SANDLOT_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* Delete PATH and everything below it. Never follows a symlink (a link is removed,
 * not its target) and never crosses into another mount: a mount point found inside
 * is left in place, the rest is still removed, and the call fails naming it.
 * Holds O(1) file descriptors whatever the depth. A missing PATH is success. */
int fs_remove_tree(const char *path, sl_err *err);

struct statx;
/* STX (from a statx that asked for no more than STATX_TYPE) is a mount's root. */
bool fs_stx_mount_root(const struct statx *stx);

/* The kind of network filesystem F_TYPE (a statfs f_type) names: "nfs", "cifs", "smb",
 * "smb2", "9p", "ceph", "afs", "coda", or "fuse" (its daemon may be anywhere); NULL for a
 * local one. Changes made on another machine raise no inotify event on these. */
const char *fs_network_kind(unsigned long f_type);

/* openat2(DIRFD, PATH) with FLAGS | O_CLOEXEC, MODE (for O_CREAT) and the RESOLVE_* flags
 * RESOLVE: the fd, or -1 with errno. EINTR is retried, and EAGAIN (a concurrent rename
 * could have let ".." escape; whoever writes the tree can cause it at will) a bounded
 * number of times, after which it is the caller's to report. */
int fs_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);
/* An O_PATH descriptor reopened with real access FLAGS through /proc/self/fd: this
 * process's own table, so it lands on exactly the inode resolved, whatever is renamed
 * meanwhile. The fd, or -1 with errno. */
int fs_reopen(int pathfd, int flags);

/* All LEN bytes of BUF to FD (at offset AT with AT >= 0, else at its position), retrying
 * short writes and EINTR: 0, or -1 with errno. */
int fs_write_all(int fd, const void *buf, size_t len, off_t at);

/* The regular files and directories of the tree at PATH made durable, not the rest of its
 * filesystem (as syncfs would): writeback of every file started first, then each file and
 * directory fsynced, so a journalling filesystem commits about once, not per file. START
 * only: writeback started, nothing waited for (a head start for a later full call).
 * Symlinks are not followed; their directory's fsync covers them. */
int fs_sync_tree(const char *path, bool start_only, sl_err *err);

#endif

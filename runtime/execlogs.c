/* execlogs.c — a sandbox's log space: the tmpfs under its run dir (<run>/<id>/execs)
 * that its executions' records and output live in, sized from its memory limit, mounted
 * at its first execution and unmounted before its run dir goes. */
#include "execlogs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "log.h"
#include "state.h"

void execlogs_dir(const sl_ctx *ctx, const char *sid, char *buf, size_t len)
{
	char run[PATH_MAX];
	state_run_dir(&ctx->cfg, sid, run, sizeof(run));
	snprintf(buf, len, "%s/execs", run);
}

/* Commands write their output straight into their logs, so the logs must be bounded by
 * something of the sandbox's own: on a tmpfs run dir every page of them was charged to
 * the sandbox's memory cgroup for good (300 MB of output left a 256Mi sandbox OOM-killing
 * every later command), and on a disk-backed one they filled the host's disk. The execs
 * dir is a tmpfs of its own, made at a sandbox's first execution (an idle sandbox has no
 * superblock more): a quarter of the sandbox's memory, 16 MiB to 1 GiB. Output past it
 * fails in the command with ENOSPC; a start that finds less than an eighth of it free
 * removes finished executions, oldest first, until a quarter is free. */
#define LOGS_MIN    (16ULL << 20)
#define LOGS_MAX    (1ULL << 30)
/* Odd on purpose: with the size, it tells our tmpfs from a run dir's own in one statfs. */
#define LOGS_INODES 65521

static uint64_t logs_bytes(const sl_sandbox *sb)
{
	uint64_t b = sb->limits.memory_bytes ? sb->limits.memory_bytes / 4 : LOGS_MAX;
	b = b < LOGS_MIN ? LOGS_MIN : b > LOGS_MAX ? LOGS_MAX : b;
	return b & ~4095ULL;
}

static bool is_mount_root(const char *p)
{
	struct statx stx;
	return statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &stx) == 0 &&
	       fs_stx_mount_root(&stx);
}

/* At least 1/PART of the space and of the inodes free. */
bool execlogs_has_room(const struct statfs *f, unsigned part)
{
	return f->f_bavail >= f->f_blocks / part && f->f_ffree >= f->f_files / part;
}

/* An exclusive flock on the sandbox's run dir: who mounts or prunes its log space. */
static int run_dir_lock(const sl_ctx *ctx, const char *sid, sl_err *err)
{
	char run[PATH_MAX];
	state_run_dir(&ctx->cfg, sid, run, sizeof(run));
	int fd = open(run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		sl_sysfail(err, "lock %s", run);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int execlogs_ready(const sl_ctx *ctx, const sl_sandbox *sb, char d[PATH_MAX], int *lkp, sl_err *err)
{
	execlogs_dir(ctx, sb->id, d, PATH_MAX);
	uint64_t bytes = logs_bytes(sb);
	struct statfs f;
	/* One statfs, most of the time: our tmpfs, of this size and inode count, with room. */
	bool ours = statfs(d, &f) == 0 && f.f_type == TMPFS_MAGIC && f.f_files == LOGS_INODES &&
		    (uint64_t)f.f_blocks * (uint64_t)f.f_bsize == bytes;
	if (ours && execlogs_has_room(&f, 8))
		return 0;
	_cleanup_close_ int lk = run_dir_lock(ctx, sb->id, err);
	if (lk < 0)
		return -1;
	if (!ours && is_mount_root(d)) {
		/* Mounted with another size (a build that sized it otherwise): prune only when
		 * it is short of room. */
		ours = statfs(d, &f) == 0;
		if (ours && execlogs_has_room(&f, 8))
			return 0;
	}
	if (!ours) {
		char opts[96];
		snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%d,mode=0700",
			 (unsigned long long)bytes, LOGS_INODES);
		if (mkdir(d, 0700) < 0 && errno != EEXIST)
			return sl_sysfail(err, "create %s", d);
		if (mount("sandlot-logs", d, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
			return sl_sysfail(err, "mount the log space of sandbox %s", sb->id);
		return 0;
	}
	*lkp = steal_fd(&lk);
	return 1;
}

void execlogs_unmount(const sl_ctx *ctx, const char *sid)
{
	char d[PATH_MAX];
	execlogs_dir(ctx, sid, d, sizeof(d));
	if (umount2(d, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
		sl_log(SL_LOG_WARN, "sandbox %s: unmount %s: %s", sid, d, strerror(errno));
}

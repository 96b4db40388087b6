/* fsutil.c — tree removal that is safe on hostile trees: *at() calls only, no symlink
 * ever followed, no mount crossed, and one open directory at a time whatever the depth. */
#include "fsutil.h"

#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

struct rm_child {
	char *name;
	bool dir;
};

/* One directory on the way down. Only the deepest level's fd is open: going back up
 * reopens ".." and checks it is still the directory we came from. */
struct rm_level {
	char *name; /* this directory's name in its parent; NULL for the top */
	dev_t dev;
	ino_t ino;
	char **dirs; /* subdirectories still to empty and remove */
	size_t ndirs, next;
};

struct rm_walk {
	const char *top;
	sl_err *err;
	bool failed;
};

/* Keep the first failure (it is usually the cause) but carry on removing the rest. */
__attribute__((format(printf, 4, 5))) static void rm_note(struct rm_walk *w, sl_kind kind,
							  int errnum, const char *fmt, ...)
{
	if (w->failed)
		return;
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sl_fail(w->err, kind, errnum, "remove %s: %s", w->top, msg);
	w->failed = true;
}

static void rm_level_free(struct rm_level *l)
{
	for (size_t i = l->next; i < l->ndirs; i++)
		free(l->dirs[i]);
	free(l->dirs);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

bool fs_stx_mount_root(const struct statx *stx)
{
	return (stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (stx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* A directory entry that is the root of a mount (bind mounts on the same device
 * included) must not be entered. */
static bool is_mount_root(int dirfd, const char *name, dev_t parent_dev)
{
	struct statx stx;
	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO,
		  &stx) < 0)
		return false;
	if (fs_stx_mount_root(&stx))
		return true;
	return makedev(stx.stx_dev_major, stx.stx_dev_minor) != parent_dev;
}

static int push_child(struct rm_child **v, size_t *n, size_t *cap, const char *name, bool dir)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct rm_child *nv = realloc(*v, ncap * sizeof(**v));
		if (!nv)
			return -1;
		*v = nv;
		*cap = ncap;
	}
	(*v)[*n].name = strdup(name);
	if (!(*v)[*n].name)
		return -1;
	(*v)[*n].dir = dir;
	(*n)++;
	return 0;
}

/* Read the whole directory first (unlinking while readdir runs is unspecified), then
 * unlink the non-directories and remember the subdirectories for the walk. */
static int rm_scan(struct rm_walk *w, int fd, struct rm_level *lvl)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return rm_note(w, SL_INTERNAL, errno, "dup directory fd"), -1;
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return rm_note(w, SL_INTERNAL, errno, "open directory"), -1;
	}
	_cleanup_free_ struct rm_child *kids = NULL;
	size_t nkids = 0, cap = 0;
	int rc = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				rc = -1, rm_note(w, SL_INTERNAL, errno, "read directory");
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bool dir = de->d_type == DT_DIR;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone already */
			dir = S_ISDIR(st.st_mode);
		}
		if (dir && is_mount_root(fd, de->d_name, lvl->dev)) {
			rm_note(w, SL_CONFLICT, 0,
				"%s is a mount point; left in place (unmount it, then retry)",
				de->d_name);
			continue;
		}
		if (push_child(&kids, &nkids, &cap, de->d_name, dir) < 0) {
			rc = -1, rm_note(w, SL_EXHAUSTED, ENOMEM, "list directory");
			break;
		}
	}
	if (rc == 0 && nkids) {
		lvl->dirs = calloc(nkids, sizeof(char *));
		if (!lvl->dirs)
			rc = -1, rm_note(w, SL_EXHAUSTED, ENOMEM, "list directory");
	}
	for (size_t i = 0; i < nkids; i++) {
		if (rc == 0 && kids[i].dir) {
			lvl->dirs[lvl->ndirs++] = kids[i].name;
			continue;
		}
		if (rc == 0 && unlinkat(fd, kids[i].name, 0) < 0 && errno != ENOENT)
			rm_note(w, SL_INTERNAL, errno, "unlink %s", kids[i].name);
		free(kids[i].name);
	}
	return rc;
}

static int rm_level_init(struct rm_walk *w, int fd, struct rm_level *lvl, char *name)
{
	struct stat st;
	lvl->name = name;
	if (fstat(fd, &st) < 0)
		return rm_note(w, SL_INTERNAL, errno, "stat directory"), -1;
	lvl->dev = st.st_dev;
	lvl->ino = st.st_ino;
	return 0;
}

static int rm_levels_grow(struct rm_walk *w, struct rm_level **stack, size_t *cap, size_t depth)
{
	if (depth < *cap)
		return 0;
	size_t ncap = *cap * 2;
	struct rm_level *ns = realloc(*stack, ncap * sizeof(**stack));
	if (!ns)
		return rm_note(w, SL_EXHAUSTED, ENOMEM, "grow walk stack"), -1;
	memset(ns + *cap, 0, (ncap - *cap) * sizeof(**stack));
	*stack = ns;
	*cap = ncap;
	return 0;
}

/* Go from the directory at stack[depth] into its next subdirectory. Returns 1 when it
 * descended, 0 when that subdirectory was skipped, -1 when the walk must stop. */
static int rm_descend(struct rm_walk *w, int *fd, struct rm_level *stack, size_t depth)
{
	struct rm_level *lvl = &stack[depth];
	char *name = lvl->dirs[lvl->next];
	lvl->dirs[lvl->next++] = NULL;
	int child = openat(*fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (child < 0) {
		int e = errno;
		/* Replaced by a link or file since the scan: remove that instead. */
		if (e == ELOOP || e == ENOTDIR)
			e = unlinkat(*fd, name, 0) < 0 ? errno : 0;
		if (e && e != ENOENT)
			rm_note(w, SL_INTERNAL, e, "open %s", name);
		free(name);
		return 0;
	}
	struct stat st;
	if (fstat(child, &st) < 0 || st.st_dev != lvl->dev) {
		rm_note(w, SL_CONFLICT, 0, "%s is a mount point; left in place", name);
		close(child);
		free(name);
		return 0;
	}
	close(*fd);
	*fd = child;
	struct rm_level *next = &stack[depth + 1];
	if (rm_level_init(w, child, next, name) < 0)
		return -1;
	rm_scan(w, child, next);
	return 1;
}

/* Leave the emptied directory at stack[depth] for its parent, and rmdir it. */
static int rm_ascend(struct rm_walk *w, int *fd, struct rm_level *stack, size_t depth)
{
	struct rm_level *parent = &stack[depth - 1];
	int pfd = openat(*fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (pfd < 0 || fstat(pfd, &st) < 0 || st.st_dev != parent->dev ||
	    st.st_ino != parent->ino) {
		int e = pfd < 0 ? errno : 0;
		if (pfd >= 0)
			close(pfd);
		/* The tree was moved under us; stop rather than delete the wrong thing. */
		w->failed = false;
		rm_note(w, SL_CONFLICT, e, "directory %s moved during removal", stack[depth].name);
		return -1;
	}
	close(*fd);
	*fd = pfd;
	if (unlinkat(pfd, stack[depth].name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rm_note(w, SL_INTERNAL, errno, "rmdir %s", stack[depth].name);
	rm_level_free(&stack[depth]);
	return 0;
}

/* Empty the directory open at *fd (the top). */
static int rm_contents(struct rm_walk *w, int *fd)
{
	size_t cap = 16, depth = 0;
	_cleanup_free_ struct rm_level *stack = calloc(cap, sizeof(*stack));
	if (!stack)
		return rm_note(w, SL_EXHAUSTED, ENOMEM, "walk stack"), -1;
	int rc = rm_level_init(w, *fd, &stack[0], NULL);
	if (rc == 0)
		rm_scan(w, *fd, &stack[0]);
	while (rc == 0) {
		struct rm_level *lvl = &stack[depth];
		if (lvl->next < lvl->ndirs) {
			if (rm_levels_grow(w, &stack, &cap, depth + 1) < 0) {
				rc = -1;
				break;
			}
			int r = rm_descend(w, fd, stack, depth);
			if (r < 0)
				rc = -1, depth++;
			else if (r > 0)
				depth++;
		} else if (depth > 0) {
			rc = rm_ascend(w, fd, stack, depth);
			if (rc == 0)
				depth--;
		} else {
			break;
		}
	}
	for (size_t i = 0; i <= depth && i < cap; i++)
		rm_level_free(&stack[i]);
	return rc;
}

int fs_remove_tree(const char *path, sl_err *err)
{
	struct rm_walk w = {.top = path, .err = err};
	struct statx stx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &stx) < 0) {
		if (errno == ENOENT)
			return 0;
		return sl_sysfail(err, "remove %s: stat", path);
	}
	if (!S_ISDIR(stx.stx_mode)) {
		if (unlink(path) < 0 && errno != ENOENT)
			return sl_sysfail(err, "remove %s: unlink", path);
		return 0;
	}
	if (fs_stx_mount_root(&stx))
		return sl_fail(err, SL_CONFLICT, 0,
			       "remove %s: it is a mount point; unmount it first", path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "remove %s: open", path);
	if (rm_contents(&w, &fd) < 0 || w.failed)
		return -1;
	if (rmdir(path) < 0 && errno != ENOENT)
		return sl_sysfail(err, "remove %s: rmdir", path);
	return 0;
}

#define OPENAT2_TRIES 128

int fs_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .mode = (flags & O_CREAT) ? mode : 0,
			       .resolve = resolve};
	for (int i = 0; i < OPENAT2_TRIES; i++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			return fd;
	}
	return -1;
}

int fs_reopen(int pathfd, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pathfd);
	int fd;
	while ((fd = open(p, flags | O_CLOEXEC | O_NOCTTY)) < 0 && errno == EINTR)
		;
	return fd;
}

int fs_write_all(int fd, const void *buf, size_t len, off_t at)
{
	size_t done = 0;
	while (done < len) {
		const char *p = (const char *)buf + done;
		ssize_t n = at >= 0 ? pwrite(fd, p, len - done, at + (off_t)done)
				    : write(fd, p, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* nftw's callback has no argument: the pass and its first failure, per thread. */
static __thread struct {
	bool wait;
	int err;
	char failed[PATH_MAX];
} sync_walk;

static int sync_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	bool dir = type == FTW_D || type == FTW_DP;
	if (type != FTW_F && !dir)
		return 0; /* symlinks (FTW_SL), and what could not be read: nothing to sync */
	if (type == FTW_F && !S_ISREG(st->st_mode))
		return 0;
	if (!dir && !sync_walk.wait) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0) {
			sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			close(fd);
		}
		return 0;
	}
	if (dir && !sync_walk.wait)
		return 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
				(dir ? O_DIRECTORY : 0));
	if (fd < 0 || fsync(fd) < 0) {
		sync_walk.err = errno;
		snprintf(sync_walk.failed, sizeof(sync_walk.failed), "%s", path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int fs_sync_tree(const char *path, bool start_only, sl_err *err)
{
	for (int pass = 0; pass < (start_only ? 1 : 2); pass++) {
		sync_walk.wait = pass == 1;
		sync_walk.err = 0;
		snprintf(sync_walk.failed, sizeof(sync_walk.failed), "%s", path);
		if (nftw(path, sync_one, 16, FTW_PHYS | FTW_MOUNT) != 0) {
			errno = sync_walk.err ? sync_walk.err : errno;
			return sl_sysfail(err, "sync %s", sync_walk.failed);
		}
	}
	return 0;
}

const char *fs_network_kind(unsigned long f_type)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} kinds[] = {
	    {NFS_SUPER_MAGIC, "nfs"},	{CIFS_SUPER_MAGIC, "cifs"}, {SMB_SUPER_MAGIC, "smb"},
	    {SMB2_SUPER_MAGIC, "smb2"}, {V9FS_MAGIC, "9p"},	    {CEPH_SUPER_MAGIC, "ceph"},
	    {AFS_SUPER_MAGIC, "afs"},	{CODA_SUPER_MAGIC, "coda"}, {FUSE_SUPER_MAGIC, "fuse"},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].magic == (f_type & 0xffffffffUL))
			return kinds[i].name;
	return NULL;
}

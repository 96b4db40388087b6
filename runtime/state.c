/* state.c — the durability primitives every record goes through: a crash at any
 * instant leaves the old or the new record, never a torn one. */
#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"

/* A rename is durable once its directory is synced. */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	_cleanup_close_ int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
}

/* flock through signals: 0, or -1 with errno. */
static int flock_wait(int fd, int op)
{
	while (flock(fd, op) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* An fd of PATH (opened as FD) locked exclusively, or -1 with the reason in ERR. */
static int locked(int fd, const char *path, sl_err *err)
{
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno,
			       "open %s to lock it", path);
	if (flock_wait(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		return sl_fail(err, SL_INTERNAL, e, "lock %s", path);
	}
	return fd;
}

/* NOW: fsync the file, put it in place, fsync the directory. SOON (records only): in
 * place now, state_sync later. NEVER: a record a crash may lose (or leave empty). */
enum durability { NOW, SOON, NEVER };

static int write_atomic(const char *path, const char *data, size_t len, enum durability when,
			sl_err *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)gettid()); /* threads race too */
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "create %s", tmp);
	if (fs_write_all(fd, data, len, -1) < 0) {
		unlink(tmp);
		return sl_sysfail(err, "write %s", tmp);
	}
	if (when == NEVER) {
		/* ext4 (auto_da_alloc) starts writeback of a file renamed over another
		 * one; a record that need not survive a power loss skips that cost
		 * (~0.25 ms here) by exchanging the two names and unlinking the old. */
		if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
			unlink(tmp);
			return 0;
		}
		if (rename(tmp, path) < 0) {
			int e = errno;
			unlink(tmp);
			return sl_fail(err, SL_INTERNAL, e, "save %s", path);
		}
		return 0;
	}
	if (fsync(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return sl_fail(err, SL_INTERNAL, e, "save %s", path);
	}
	sync_dir(path);
	return 0;
}

/* A record rewritten in a spare kept beside it (PATH.next) and swapped in with
 * RENAME_EXCHANGE, so that rewriting it makes no inode and frees no blocks. On this
 * host's root ext4, which has no journal, a new inode costs a scan of every inode freed
 * in the last minutes, and a rename over a file or an O_TRUNC makes ext4 write the new
 * data and free (and discard) the old blocks (docs/bench.md, session 12). The spare is
 * rewritten in place, never truncated to zero. Its writers are serialised by the caller;
 * the flock taken here waits out readers that still hold the inode from when it was the
 * record (state_read_record), and the name is checked to still hold the inode locked.
 * The first write, with no record yet, renames the spare into place, and the second
 * makes the spare that every later write reuses. */
static int write_spare(const char *path, const char *data, size_t len, enum durability when,
		       sl_err *err)
{
	char spare[PATH_MAX];
	if (snprintf(spare, sizeof(spare), "%s.next", path) >= (int)sizeof(spare))
		return sl_fail(err, SL_INTERNAL, 0, "path too long: %s", path);
	for (int tries = 0; tries < 64; tries++) {
		_cleanup_close_ int fd =
		    open(spare, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return sl_sysfail(err, "open %s", spare);
		if (flock_wait(fd, LOCK_EX) < 0)
			return sl_sysfail(err, "lock %s", spare);
		struct stat held, named;
		if (fstat(fd, &held) < 0)
			return sl_sysfail(err, "stat %s", spare);
		if (lstat(spare, &named) < 0 || held.st_ino != named.st_ino ||
		    held.st_dev != named.st_dev)
			continue; /* exchanged (or renamed) away while we waited: again */
		if (fs_write_all(fd, data, len, 0) < 0)
			return sl_sysfail(err, "write %s", spare);
		/* SOON: never shorter than the spare was, so that until the sync a crash
		 * finds the new version or the whole old one (with zeros after it) under
		 * the size, not a cut one: the rest is blanks, which JSON skips. */
		off_t size = (off_t)len;
		if (when == SOON && held.st_size > size) {
			size_t gap = (size_t)(held.st_size - size);
			_cleanup_free_ char *blanks = malloc(gap);
			if (!blanks)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "write %s", spare);
			memset(blanks, ' ', gap);
			if (fs_write_all(fd, blanks, gap, size) < 0)
				return sl_sysfail(err, "write %s", spare);
			size = held.st_size;
		}
		if (ftruncate(fd, size) < 0 || (when == NOW && fsync(fd) < 0))
			return sl_sysfail(err, "write %s", spare);
		/* No record yet (ENOENT), or a file system without exchange (EINVAL): the
		 * spare becomes the record, and the next write makes another. */
		if (syscall(SYS_renameat2, AT_FDCWD, spare, AT_FDCWD, path, RENAME_EXCHANGE) < 0 &&
		    rename(spare, path) < 0)
			return sl_fail(err, SL_INTERNAL, errno, "save %s", path);
		if (when == NOW)
			sync_dir(path);
		return 0;
	}
	return sl_fail(err, SL_INTERNAL, EAGAIN, "save %s: its spare kept being replaced", path);
}

int state_write_record(const char *path, const char *data, size_t len, bool durable, sl_err *err)
{
	return write_spare(path, data, len, durable ? NOW : NEVER, err);
}

int state_write_record_soon(const char *path, const char *data, size_t len, sl_err *err)
{
	return write_spare(path, data, len, SOON, err);
}

int state_write_atomic(const char *path, const char *data, size_t len, sl_err *err)
{
	return write_atomic(path, data, len, NOW, err);
}

int state_write_atomic_nosync(const char *path, const char *data, size_t len, sl_err *err)
{
	return write_atomic(path, data, len, NEVER, err);
}

int state_write_first(const char *path, const void *data, size_t len, sl_err *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.new.%d", path, (int)getpid());
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "create %s", tmp);
	if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0) {
		int e = errno;
		unlink(tmp);
		return sl_fail(err, SL_INTERNAL, e, "write %s", tmp);
	}
	int r = link(tmp, path);
	int e = errno;
	unlink(tmp);
	if (r < 0 && e != EEXIST)
		return sl_fail(err, SL_INTERNAL, e, "save %s", path);
	if (r == 0)
		sync_dir(path);
	return r < 0 ? 1 : 0;
}

int state_sync(const char *path, sl_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno, "sync %s",
			       path);
	if (fsync(fd) < 0)
		return sl_sysfail(err, "sync %s", path);
	sync_dir(path);
	return 0;
}

/* The whole of an open file of SIZE bytes (its fstat's), at most MAX. */
static int read_fd(int fd, size_t size, const char *path, size_t max, char **out, size_t *len,
		   sl_err *err)
{
	if (size > max)
		return sl_fail(err, SL_TOOLARGE, 0, "%s is larger than %zu bytes", path, max);
	_cleanup_free_ char *buf = malloc(size + 1);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", path);
	size_t off = 0;
	while (off < size) {
		ssize_t r = read(fd, buf + off, size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "read %s", path);
		if (r == 0)
			break;
		off += r;
	}
	buf[off] = '\0';
	if (len)
		*len = off;
	*out = steal_ptr(&buf);
	return 0;
}

static int open_read(const char *path, sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno, "read %s",
			       path);
	return fd;
}

int state_read_file(const char *path, size_t max, char **out, size_t *len, sl_err *err)
{
	_cleanup_close_ int fd = open_read(path, err);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sl_sysfail(err, "stat %s", path);
	return read_fd(fd, (size_t)st.st_size, path, max, out, len, err);
}

/* A record's inode may become its spare and be rewritten in place while a reader still
 * has it open (write_spare): a reader holds it shared, as writers hold the spare
 * exclusively, and reads it only if the name still holds it once locked. */
int state_read_record(const char *path, size_t max, char **out, size_t *len, sl_err *err)
{
	for (int tries = 0; tries < 64; tries++) {
		_cleanup_close_ int fd = open_read(path, err);
		if (fd < 0)
			return -1;
		if (flock_wait(fd, LOCK_SH) < 0)
			return sl_sysfail(err, "lock %s", path);
		struct stat held, named;
		if (fstat(fd, &held) < 0)
			return sl_sysfail(err, "stat %s", path);
		if (lstat(path, &named) == 0 && held.st_ino == named.st_ino &&
		    held.st_dev == named.st_dev)
			return read_fd(fd, (size_t)held.st_size, path, max, out, len, err);
	}
	return sl_fail(err, SL_INTERNAL, EAGAIN, "read %s: it kept being replaced", path);
}

int state_lock_dir(const char *path, sl_err *err)
{
	return locked(open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), path, err);
}

int state_lock(const char *path, sl_err *err)
{
	return locked(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), path, err);
}

int state_mkdirs(const char *path, mode_t mode, sl_err *err)
{
	/* Mostly it is all there already: one call. */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return sl_sysfail(err, "create %s", p);
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", p);
	return 0;
}

int state_restrict(const char *path, mode_t mode, sl_err *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : sl_sysfail(err, "stat %s", path);
	if (!S_ISDIR(st.st_mode))
		return sl_fail(err, SL_INTERNAL, ENOTDIR, "%s is not a directory", path);
	if ((st.st_mode & 07777 & ~mode) && chmod(path, mode) < 0)
		return sl_sysfail(err, "make %s mode %04o", path, (unsigned)mode);
	return 0;
}

int state_private_dir(const char *path, mode_t mode, sl_err *err)
{
	return state_mkdirs(path, mode, err) < 0 ? -1 : state_restrict(path, mode, err);
}

void state_sandbox_dir(const sl_config *cfg, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/sandboxes/%s", cfg->state_dir, id);
}

void state_api_socket_path(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/sandlot.sock", cfg->run_dir);
}

void state_api_key_path(const sl_config *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/api.key", cfg->state_dir);
}

void state_run_dir(const sl_config *cfg, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/sandboxes/%s", cfg->run_dir, id);
}

int state_list_dir(const char *dir, const char *prefix, const char *suffix, char ***names,
		   size_t *n, sl_err *err)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	*names = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : sl_sysfail(err, "list %s", dir);
	size_t cap = 0, pl = strlen(prefix), sl = strlen(suffix);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len <= sl || strncmp(e->d_name, prefix, pl) ||
		    strcmp(e->d_name + len - sl, suffix))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(*names, cap * sizeof(char *));
			if (!nn)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", dir);
			*names = nn;
		}
		(*names)[(*n)++] = strndup(e->d_name, len - sl);
	}
	return 0;
}

void state_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* volfs.c — a volume's files from the host (volfs.h): paths checked lexically, then
 * resolved beneath the volume's root by openat2 with no symlink followed. */
#include "volfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "volume.h"

#define LIST_MAX 16384
#define ID_MAX	 65535 /* ids inside a sandbox */
#define RESOLVE_FLAGS                                                                              \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

int volfs_open(sl_ctx *ctx, const char *name, sl_volfs *v, sl_err *err)
{
	v->root = -1;
	snprintf(v->name, sizeof(v->name), "%s", name);
	return volume_root_open(ctx, name, &v->root, err);
}

void volfs_close(sl_volfs *v)
{
	if (v->root >= 0)
		close(v->root);
	v->root = -1;
}

/* One mapping from errno to kinds, naming the volume and path the same way everywhere. */
static int vfail(sl_err *err, const sl_volfs *v, const char *op, const char *path, int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return sl_fail(err, SL_NOTFOUND, 0, "%s %s in volume %s: not found", op, path,
			       v->name);
	case ELOOP:
		return sl_fail(err, SL_INVALID, 0,
			       "%s %s in volume %s: a symlink is on the path (volume paths never "
			       "follow symlinks)",
			       op, path, v->name);
	case EXDEV:
		return sl_fail(err, SL_INVALID, 0, "%s %s in volume %s: the path leaves the volume",
			       op, path, v->name);
	case EEXIST:
		return sl_fail(err, SL_CONFLICT, 0, "%s %s in volume %s: it already exists", op,
			       path, v->name);
	case EISDIR:
		return sl_fail(err, SL_CONFLICT, 0, "%s %s in volume %s: it is a directory", op,
			       path, v->name);
	case ENOSPC:
	case EDQUOT:
		return sl_fail(err, SL_EXHAUSTED, e, "%s %s in volume %s", op, path, v->name);
	case ENAMETOOLONG:
	case EINVAL:
		return sl_fail(err, SL_INVALID, e, "%s %s in volume %s", op, path, v->name);
	case EAGAIN:
		return sl_fail(err, SL_CONFLICT, 0,
			       "%s %s in volume %s: the path kept changing while it was resolved; "
			       "retry",
			       op, path, v->name);
	case EACCES:
	case EPERM:
	case EBUSY:
	case ENOTEMPTY:
	case ETXTBSY:
	case ENXIO:
		return sl_fail(err, SL_CONFLICT, e, "%s %s in volume %s", op, path, v->name);
	default:
		return sl_fail(err, SL_INTERNAL, e, "%s %s in volume %s", op, path, v->name);
	}
}

/* ---- paths ---- */

/* "a//b/./c" or "/a/b/" -> "/a/b/c"; ".." is refused rather than resolved: a volume path
 * names a place in the volume, never a way out of one. */
static int path_norm(const sl_volfs *v, const char *in, char out[PATH_MAX], sl_err *err)
{
	if (!in || !*in)
		return sl_fail(err, SL_INVALID, 0, "path is empty");
	if (strnlen(in, PATH_MAX) >= PATH_MAX)
		return sl_fail(err, SL_INVALID, 0, "path is longer than %d bytes", PATH_MAX - 1);
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", in);
	size_t n = 0;
	out[0] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, ".."))
			return sl_fail(err, SL_INVALID, 0,
				       "path %s in volume %s: \"..\" is not allowed", in, v->name);
		size_t cl = strlen(c);
		if (n + 1 + cl >= PATH_MAX)
			return sl_fail(err, SL_INVALID, 0, "path is longer than %d bytes",
				       PATH_MAX - 1);
		out[n++] = '/';
		memcpy(out + n, c, cl + 1);
		n += cl;
	}
	if (n == 0)
		strcpy(out, "/");
	return 0;
}

/* "/a/b" -> "a/b" for openat2 beneath a directory; "/" -> ".". */
static const char *rel(const char *p)
{
	return p[1] ? p + 1 : ".";
}

static int resolve_at(int dirfd, const char *relpath, int flags, mode_t mode)
{
	return fs_openat2(dirfd, relpath, flags, mode, RESOLVE_FLAGS);
}

/* The directory holding P's last component (P is not "/"); *base points into P. */
static int open_parent(const sl_volfs *v, const char *p, const char **base, const char *op,
		       sl_err *err)
{
	const char *slash = strrchr(p, '/');
	char parent[PATH_MAX];
	size_t pl = slash == p ? 1 : (size_t)(slash - p);
	memcpy(parent, p, pl);
	parent[pl] = '\0';
	*base = slash + 1;
	int fd = resolve_at(v->root, rel(parent), O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return vfail(err, v, op, p, errno);
	return fd;
}

/* ---- entries ---- */

static void entry_fill(int dirfd, const char *name, const char *path, const struct stat *st,
		       sl_volfs_entry *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->type = S_ISREG(st->st_mode)	 ? SL_VOLFS_FILE
		  : S_ISDIR(st->st_mode) ? SL_VOLFS_DIR
		  : S_ISLNK(st->st_mode) ? SL_VOLFS_SYMLINK
					 : SL_VOLFS_OTHER;
	e->size = (uint64_t)st->st_size;
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->atime = st->st_atim;
	e->mtime = st->st_mtim;
	e->ctime = st->st_ctim;
	if (e->type == SL_VOLFS_SYMLINK) {
		ssize_t n = readlinkat(dirfd, name, e->target, sizeof(e->target) - 1);
		e->target[n > 0 ? n : 0] = '\0';
	}
}

static int stat_path(const sl_volfs *v, const char *p, const char *op, sl_volfs_entry *out,
		     sl_err *err)
{
	struct stat st;
	if (!strcmp(p, "/")) {
		if (fstat(v->root, &st) < 0)
			return vfail(err, v, op, p, errno);
		entry_fill(v->root, "", p, &st, out);
		return 0;
	}
	const char *base;
	_cleanup_close_ int pfd = open_parent(v, p, &base, op, err);
	if (pfd < 0)
		return -1;
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return vfail(err, v, op, p, errno);
	entry_fill(pfd, base, p, &st, out);
	return 0;
}

int volfs_stat(const sl_volfs *v, const char *path, sl_volfs_entry *out, sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0)
		return -1;
	return stat_path(v, p, "stat", out, err);
}

/* ---- owner and mode ---- */

static int attrs_check(const sl_volfs_attrs *a, sl_err *err)
{
	if (a->uid > ID_MAX || a->gid > ID_MAX || a->uid < -1 || a->gid < -1)
		return sl_fail(err, SL_INVALID, 0, "uid and gid: 0-%d (the ids inside a sandbox)",
			       ID_MAX);
	if (a->mode > 07777 || a->mode < -1)
		return sl_fail(err, SL_INVALID, 0, "mode: permission bits only (0-07777)");
	return 0;
}

/* FD may be O_PATH: owner through AT_EMPTY_PATH, mode through the fd's magic link (never
 * a symlink: those are refused before). DEF_MODE applies when A has none (-1: keep). */
static int attrs_apply(const sl_volfs *v, int fd, const char *path, const sl_volfs_attrs *a,
		       int64_t def_mode, sl_err *err)
{
	if ((a->uid >= 0 || a->gid >= 0) &&
	    fchownat(fd, "", (uid_t)a->uid, (gid_t)a->gid, AT_EMPTY_PATH) < 0)
		return vfail(err, v, "chown", path, errno);
	int64_t mode = a->mode >= 0 ? a->mode : def_mode;
	if (mode < 0)
		return 0;
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (chmod(p, (mode_t)mode) < 0)
		return vfail(err, v, "chmod", path, errno);
	return 0;
}

int volfs_setattr(const sl_volfs *v, const char *path, const sl_volfs_attrs *a, sl_volfs_entry *out,
		  sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0 || attrs_check(a, err) < 0)
		return -1;
	_cleanup_close_ int fd = resolve_at(v->root, rel(p), O_PATH, 0);
	if (fd < 0)
		return vfail(err, v, "change", p, errno);
	if (attrs_apply(v, fd, p, a, -1, err) < 0)
		return -1;
	return stat_path(v, p, "stat", out, err);
}

/* ---- directories ---- */

int volfs_mkdir(const sl_volfs *v, const char *path, bool parents, const sl_volfs_attrs *a,
		sl_volfs_entry *out, sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0 || attrs_check(a, err) < 0)
		return -1;
	/* One component at a time from the root, each step beneath the last. */
	_cleanup_close_ int dfd = dup(v->root);
	if (dfd < 0)
		return sl_sysfail(err, "volume %s: dup", v->name);
	char walk[PATH_MAX];
	snprintf(walk, sizeof(walk), "%s", p);
	bool made = false;
	for (char *save = NULL, *c = strtok_r(walk, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		bool last = c + strlen(c) == walk + strlen(p);
		made = false;
		if (last || parents) { /* without PARENTS a missing parent is "not found" */
			made = mkdirat(dfd, c, 0755) == 0;
			if (!made && (errno != EEXIST || (last && !parents)))
				return vfail(err, v, "mkdir", p, errno);
		}
		int next = resolve_at(dfd, c, O_PATH | O_DIRECTORY, 0);
		if (next < 0) /* ENOTDIR: a file is in the way */
			return vfail(err, v, "mkdir", p, errno == ENOTDIR ? EEXIST : errno);
		close(dfd);
		dfd = next;
		if (made && attrs_apply(v, dfd, p, a, 0755, err) < 0)
			return -1;
	}
	if (!made && !parents)
		return vfail(err, v, "mkdir", p, EEXIST); /* "/" */
	return stat_path(v, p, "stat", out, err);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct walk {
	const sl_volfs *v;
	volfs_entry_fn fn;
	void *arg;
	size_t count;
};

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in DFD (an O_PATH directory), sorted. */
static int read_names(struct walk *w, int dfd, const char *p, char ***out, size_t *n, sl_err *err)
{
	*out = NULL;
	*n = 0;
	int fd = fs_reopen(dfd, O_RDONLY | O_DIRECTORY);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return vfail(err, w->v, "list", p, errno);
	}
	size_t cap = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (w->count + *n >= LIST_MAX) {
			rc = sl_fail(err, SL_TOOLARGE, 0, "list %s in volume %s: over %d entries",
				     p, w->v->name, LIST_MAX);
			break;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			char **grown = realloc(*out, cap * sizeof(**out));
			if (!grown) {
				rc = sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", p);
				break;
			}
			*out = grown;
		}
		if (!((*out)[*n] = strdup(de->d_name))) {
			rc = sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", p);
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (rc < 0) {
		names_free(*out, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_name);
	return 0;
}

static int walk_dir(struct walk *w, int dfd, const char *p, unsigned depth, sl_err *err)
{
	char **names;
	size_t n;
	if (read_names(w, dfd, p, &names, &n, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char cp[PATH_MAX];
		struct stat st;
		if (snprintf(cp, sizeof(cp), "%s/%s", strcmp(p, "/") ? p : "", names[i]) >=
		    (int)sizeof(cp))
			continue;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		sl_volfs_entry e;
		entry_fill(dfd, names[i], cp, &st, &e);
		w->count++;
		if ((rc = w->fn(w->arg, &e, err)) != 0)
			break;
		if (depth > 1 && S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub =
			    resolve_at(dfd, names[i], O_PATH | O_DIRECTORY, 0);
			if (sub >= 0)
				rc = walk_dir(w, sub, cp, depth - 1, err);
		}
	}
	names_free(names, n);
	return rc;
}

int volfs_list(const sl_volfs *v, const char *path, unsigned depth, volfs_entry_fn fn, void *arg,
	       sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0)
		return -1;
	_cleanup_close_ int dfd = resolve_at(v->root, rel(p), O_PATH | O_DIRECTORY, 0);
	if (dfd < 0)
		return vfail(err, v, "list", p, errno);
	struct walk w = {.v = v, .fn = fn, .arg = arg};
	return walk_dir(&w, dfd, p, depth ? depth : 1, err);
}

/* ---- files ---- */

int volfs_open_read(const sl_volfs *v, const char *path, int *fd, uint64_t *size, sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0)
		return -1;
	_cleanup_close_ int pfd = resolve_at(v->root, rel(p), O_PATH, 0);
	struct stat st;
	if (pfd < 0 || fstat(pfd, &st) < 0)
		return vfail(err, v, "read", p, errno);
	if (S_ISDIR(st.st_mode))
		return vfail(err, v, "read", p, EISDIR);
	if (!S_ISREG(st.st_mode)) /* a FIFO would block the reader */
		return sl_fail(err, SL_INVALID, 0, "read %s in volume %s: not a regular file", p,
			       v->name);
	if ((*fd = fs_reopen(pfd, O_RDONLY)) < 0)
		return vfail(err, v, "read", p, errno);
	*size = (uint64_t)st.st_size;
	return 0;
}

int volfs_open_write(const sl_volfs *v, const char *path, bool overwrite, const sl_volfs_attrs *a,
		     int *fd, sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0 || attrs_check(a, err) < 0)
		return -1;
	if (!strcmp(p, "/"))
		return vfail(err, v, "write", p, EISDIR);
	const char *base;
	_cleanup_close_ int pfd = open_parent(v, p, &base, "write", err);
	if (pfd < 0)
		return -1;
	/* O_NONBLOCK: a FIFO planted at the path must not hang the daemon. */
	bool made = true;
	_cleanup_close_ int wfd =
	    resolve_at(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK, 0644);
	if (wfd < 0 && errno == EEXIST && overwrite) {
		made = false;
		wfd = resolve_at(pfd, base, O_WRONLY | O_NONBLOCK, 0);
	}
	if (wfd < 0)
		return vfail(err, v, "write", p, errno);
	struct stat st;
	if (fstat(wfd, &st) < 0)
		return vfail(err, v, "write", p, errno);
	if (!S_ISREG(st.st_mode))
		return sl_fail(err, SL_CONFLICT, 0, "write %s in volume %s: not a regular file", p,
			       v->name);
	if ((!made && ftruncate(wfd, 0) < 0) || fcntl(wfd, F_SETFL, 0) < 0)
		return vfail(err, v, "write", p, errno);
	if (attrs_apply(v, wfd, p, a, made ? 0644 : -1, err) < 0) {
		if (made)
			unlinkat(pfd, base, 0);
		return -1;
	}
	*fd = wfd;
	wfd = -1;
	return 0;
}

int volfs_remove(const sl_volfs *v, const char *path, sl_err *err)
{
	char p[PATH_MAX];
	if (path_norm(v, path, p, err) < 0)
		return -1;
	if (!strcmp(p, "/"))
		return sl_fail(err, SL_INVALID, 0,
			       "remove / in volume %s: the volume's root stays (delete the volume "
			       "instead)",
			       v->name);
	const char *base;
	_cleanup_close_ int pfd = open_parent(v, p, &base, "remove", err);
	struct stat st;
	if (pfd < 0)
		return -1;
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return vfail(err, v, "remove", p, errno);
	/* Through the parent's descriptor: fs_remove_tree never follows a link below it. */
	char via[PATH_MAX + 64];
	snprintf(via, sizeof(via), "/proc/self/fd/%d/%s", pfd, base);
	sl_err e2 = {0};
	if (fs_remove_tree(via, &e2) < 0)
		return sl_fail(err, e2.kind, e2.errnum, "remove %s in volume %s", p, v->name);
	return 0;
}

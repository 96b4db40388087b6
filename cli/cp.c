/* cp.c — `sandlot cp SRC DST`: files and trees between the host and a sandbox, with
 * docker cp habits. The sandbox side goes through runtime/sbxfs, so it resolves inside. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "sbxfs.h"

#define CP_BUF	 (128 * 1024)
#define CP_DEPTH 256 /* deeper trees are refused rather than recursed into */

struct cp {
	sl_ctx *ctx;
	sl_sandbox sb;
	bool follow; /* -L: follow a symlink named as SRC */
	char *buf;
	sl_err err;
};

/* Host-side failures, named by host path. */
static int host_fail(struct cp *c, const char *op, const char *path, int e)
{
	sl_kind k = e == ENOENT			  ? SL_NOTFOUND
		    : e == ENOSPC || e == EDQUOT  ? SL_EXHAUSTED
		    : e == EISDIR || e == ENOTDIR ? SL_INVALID
						  : SL_INTERNAL;
	return sl_fail(&c->err, k, e, "%s %s", op, path);
}

static char *join(const char *dir, const char *name)
{
	char *s = NULL;
	size_t n = strlen(dir);
	bool slash = n > 0 && dir[n - 1] == '/';
	if (asprintf(&s, "%s%s%s", dir, slash ? "" : "/", name) < 0)
		return NULL;
	return s;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Copy all of in to out; rerr/werr say which side failed (errno in *e). */
static int pump(struct cp *c, int in, int out, int *e, bool *write_side)
{
	for (;;) {
		ssize_t n = read(in, c->buf, CP_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return *e = errno, *write_side = false, -1;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, c->buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return *e = errno, *write_side = true, -1;
			off += w;
		}
	}
}

/* ---- host -> sandbox ---- */

static int in_entry(struct cp *c, int hdir, const char *name, const char *hpath, const char *dst,
		    int depth);

static int in_file(struct cp *c, int hdir, const char *name, const char *hpath,
		   const struct stat *st, const char *dst, int oflags)
{
	_cleanup_close_ int hfd = openat(hdir, name, O_RDONLY | O_CLOEXEC | oflags);
	if (hfd < 0)
		return host_fail(c, "read", hpath, errno);
	int sfd;
	if (sbxfs_open_write(c->ctx, &c->sb, dst, st->st_mode & 07777, &sfd, &c->err) < 0)
		return -1;
	int e = 0;
	bool wside = false;
	int r = pump(c, hfd, sfd, &e, &wside);
	if (close(sfd) < 0 && r == 0 && errno != EINTR)
		r = -1, e = errno, wside = true;
	if (r < 0)
		return wside ? sbxfs_io_fail(&c->sb, "write", dst, e, &c->err)
			     : host_fail(c, "read", hpath, e);
	/* An existing file keeps its mode in sbxfs_open_write; cp gives it the source's. */
	return sbxfs_chmod(c->ctx, &c->sb, dst, st->st_mode & 07777, NULL, &c->err);
}

static int in_dir(struct cp *c, int hdir, const char *name, const char *hpath,
		  const struct stat *st, const char *dst, int oflags, int depth)
{
	if (depth > CP_DEPTH)
		return sl_fail(&c->err, SL_INVALID, 0, "%s: more than %d levels deep", hpath,
			       CP_DEPTH);
	if (sbxfs_mkdir(c->ctx, &c->sb, dst, &c->err) < 0)
		return -1;
	int fd = openat(hdir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | oflags);
	if (fd < 0)
		return host_fail(c, "open", hpath, errno);
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return host_fail(c, "open", hpath, errno);
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				return host_fail(c, "read directory", hpath, errno);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		_cleanup_free_ char *hp = join(hpath, de->d_name);
		_cleanup_free_ char *sp = join(dst, de->d_name);
		if (!hp || !sp)
			return sl_fail(&c->err, SL_INTERNAL, ENOMEM, "copy %s", hpath);
		if (in_entry(c, dirfd(d), de->d_name, hp, sp, depth + 1) < 0)
			return -1;
	}
	return sbxfs_chmod(c->ctx, &c->sb, dst, st->st_mode & 07777, NULL, &c->err);
}

static int in_symlink(struct cp *c, int hdir, const char *name, const char *hpath, const char *dst)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(hdir, name, target, sizeof(target) - 1);
	if (n < 0)
		return host_fail(c, "read link", hpath, errno);
	target[n] = '\0';
	if (sbxfs_symlink(c->ctx, &c->sb, target, dst, &c->err) == 0)
		return 0;
	if (c->err.kind != SL_CONFLICT)
		return -1;
	/* Replace an existing file or link, as docker cp does; never a directory. */
	sl_fileinfo fi;
	sl_err e = {0};
	if (sbxfs_stat(c->ctx, &c->sb, dst, &fi, &e) < 0 || !strcmp(fi.type, "dir"))
		return -1;
	sl_err_clear(&c->err);
	if (sbxfs_remove(c->ctx, &c->sb, dst, false, &c->err) < 0)
		return -1;
	return sbxfs_symlink(c->ctx, &c->sb, target, dst, &c->err);
}

/* One host entry, never following a symlink below the top (and at the top only with
 * -L): links are copied as links, as docker cp does. */
static int in_entry(struct cp *c, int hdir, const char *name, const char *hpath, const char *dst,
		    int depth)
{
	bool follow = depth == 0 && c->follow;
	int oflags = follow ? 0 : O_NOFOLLOW;
	struct stat st;
	if (fstatat(hdir, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
		return host_fail(c, "stat", hpath, errno);
	if (S_ISREG(st.st_mode))
		return in_file(c, hdir, name, hpath, &st, dst, oflags);
	if (S_ISDIR(st.st_mode))
		return in_dir(c, hdir, name, hpath, &st, dst, oflags, depth);
	if (S_ISLNK(st.st_mode))
		return in_symlink(c, hdir, name, hpath, dst);
	fprintf(stderr, "sandlot: cp: skipping %s: not a file, directory or symlink\n", hpath);
	return 0;
}

/* ---- sandbox -> host ---- */

static int out_entry(struct cp *c, const sl_fileinfo *fi, int hdir, const char *name,
		     const char *hpath, int depth);

static int out_file(struct cp *c, const sl_fileinfo *fi, int hdir, const char *name,
		    const char *hpath)
{
	int sfd;
	if (sbxfs_open_read(c->ctx, &c->sb, fi->path, &sfd, NULL, &c->err) < 0)
		return -1;
	_cleanup_close_ int in = sfd;
	/* Never write through a link already at the destination: replace it instead. */
	int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC;
	_cleanup_close_ int hfd = openat(hdir, name, flags, 0600);
	if (hfd < 0 && errno == ELOOP && unlinkat(hdir, name, 0) == 0)
		hfd = openat(hdir, name, flags | O_EXCL, 0600);
	if (hfd < 0)
		return host_fail(c, "write", hpath, errno);
	int e = 0;
	bool wside = false;
	if (pump(c, in, hfd, &e, &wside) < 0)
		return wside ? host_fail(c, "write", hpath, e)
			     : sbxfs_io_fail(&c->sb, "read", fi->path, e, &c->err);
	/* Set-id bits are dropped: a file from a sandbox must not become a setuid-root
	 * program on the host. */
	if (fchmod(hfd, fi->mode & 0777) < 0)
		return host_fail(c, "chmod", hpath, errno);
	int fd = steal_fd(&hfd);
	if (close(fd) < 0 && errno != EINTR)
		return host_fail(c, "write", hpath, errno);
	return 0;
}

/* A directory being copied out: its host fd and path, its children's depth. */
struct out_level {
	struct cp *c;
	int dfd;
	const char *hpath;
	int depth;
};

static int out_child(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	struct out_level *lv = arg;
	_cleanup_free_ char *hp = join(lv->hpath, fi->name);
	return hp ? out_entry(lv->c, fi, lv->dfd, fi->name, hp, lv->depth)
		  : sl_fail(err, SL_INTERNAL, ENOMEM, "copy %s", fi->path);
}

static int out_dir(struct cp *c, const sl_fileinfo *fi, int hdir, const char *name,
		   const char *hpath, int depth)
{
	if (depth > CP_DEPTH)
		return sl_fail(&c->err, SL_INVALID, 0, "%s in sandbox %s: more than %d levels deep",
			       fi->path, c->sb.id, CP_DEPTH);
	if (mkdirat(hdir, name, 0700) < 0 && errno != EEXIST)
		return host_fail(c, "mkdir", hpath, errno);
	_cleanup_close_ int dfd =
	    openat(hdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return sl_fail(&c->err, SL_CONFLICT, 0,
				       "%s exists on the host and is not a directory", hpath);
		return host_fail(c, "open", hpath, errno);
	}
	/* The sandbox's /proc and /sys are its kernel's interface, which sbxfs does not
	 * read (and a sandbox cannot mount them elsewhere): copying "/" keeps them empty. */
	if (depth > 0 && (!strcmp(fi->path, "/proc") || !strcmp(fi->path, "/sys"))) {
		fprintf(stderr, "sandlot: cp: skipping the contents of %s (kernel interface)\n",
			fi->path);
		return 0;
	}
	struct out_level lv = {c, dfd, hpath, depth + 1};
	int r = sbxfs_list(c->ctx, &c->sb, fi->path, out_child, &lv, &c->err);
	if (r == 0 && fchmod(dfd, fi->mode & 01777) < 0)
		return host_fail(c, "chmod", hpath, errno);
	return r;
}

static int out_symlink(struct cp *c, const sl_fileinfo *fi, int hdir, const char *name,
		       const char *hpath)
{
	if (symlinkat(fi->target, hdir, name) == 0)
		return 0;
	struct stat st;
	if (errno != EEXIST || fstatat(hdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    S_ISDIR(st.st_mode) || unlinkat(hdir, name, 0) < 0 ||
	    symlinkat(fi->target, hdir, name) < 0)
		return host_fail(c, "symlink", hpath, errno);
	return 0;
}

static int out_entry(struct cp *c, const sl_fileinfo *fi, int hdir, const char *name,
		     const char *hpath, int depth)
{
	if (!strcmp(fi->type, "file"))
		return out_file(c, fi, hdir, name, hpath);
	if (!strcmp(fi->type, "dir"))
		return out_dir(c, fi, hdir, name, hpath, depth);
	if (!strcmp(fi->type, "symlink"))
		return out_symlink(c, fi, hdir, name, hpath);
	fprintf(stderr, "sandlot: cp: skipping %s: not a file, directory or symlink\n", fi->path);
	return 0;
}

/* ---- where things land ---- */

/* "ID:path" -> ref and path; a host path is anything starting with '/' or '.', or with
 * no ':' before its first '/' (write ./a:b for a host file named a:b). */
static bool split_spec(char *arg, char **ref, char **path)
{
	char *colon = strchr(arg, ':');
	char *slash = strchr(arg, '/');
	if (arg[0] == '/' || arg[0] == '.' || !colon || colon == arg || (slash && slash < colon)) {
		*ref = NULL;
		*path = arg;
		return false;
	}
	*colon = '\0';
	*ref = arg;
	*path = colon[1] ? colon + 1 : (char *)".";
	return true;
}

/* The last name of a host path, or NULL when the path means "the contents of"
 * (".", "/", "x/."). */
static char *host_base(const char *path)
{
	_cleanup_free_ char *s = strdup(path);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	char *b = strrchr(s, '/');
	b = b ? b + 1 : s;
	if (!*b || !strcmp(b, ".") || !strcmp(s, "/"))
		return NULL;
	if (!strcmp(b, "..")) {
		char *real = realpath(path, NULL);
		char *rb = real ? strrchr(real, '/') : NULL;
		char *r = rb && rb[1] ? strdup(rb + 1) : NULL;
		free(real);
		return r;
	}
	return strdup(b);
}

static int copy_in(struct cp *c, const char *src, const char *dst)
{
	struct stat st;
	if ((c->follow ? stat(src, &st) : lstat(src, &st)) < 0)
		return host_fail(c, "stat", src, errno);
	_cleanup_free_ char *base = host_base(src);
	bool contents = S_ISDIR(st.st_mode) && (!base || ends_with(src, "/."));
	sl_fileinfo di;
	sl_err e = {0};
	_cleanup_free_ char *target = NULL;
	if (sbxfs_stat_follow(c->ctx, &c->sb, dst, &di, &e) == 0) {
		if (!strcmp(di.type, "dir") && !contents)
			target = base ? join(dst, base) : NULL;
		else if (strcmp(di.type, "dir") && S_ISDIR(st.st_mode))
			return sl_fail(&c->err, SL_INVALID, 0,
				       "cannot copy directory %s onto %s in sandbox %s: not a "
				       "directory",
				       src, di.path, c->sb.id);
		else
			target = strdup(dst);
	} else if (e.kind == SL_NOTFOUND) {
		if (!S_ISDIR(st.st_mode) && ends_with(dst, "/"))
			return sl_fail(&c->err, SL_NOTFOUND, 0,
				       "directory %s does not exist in "
				       "sandbox %s",
				       dst, c->sb.id);
		target = strdup(dst);
	} else {
		c->err = e;
		return -1;
	}
	if (!target)
		return sl_fail(&c->err, SL_INTERNAL, ENOMEM, "copy %s", src);
	return in_entry(c, AT_FDCWD, src, src, target, 0);
}

static int copy_out(struct cp *c, const char *src, const char *dst)
{
	sl_fileinfo fi;
	if ((c->follow ? sbxfs_stat_follow : sbxfs_stat)(c->ctx, &c->sb, src, &fi, &c->err) < 0)
		return -1;
	bool isdir = !strcmp(fi.type, "dir");
	bool contents =
	    isdir && (!strcmp(fi.name, "/") || ends_with(src, "/.") || !strcmp(src, "."));
	struct stat st;
	_cleanup_free_ char *target = NULL;
	if (stat(dst, &st) == 0) {
		if (S_ISDIR(st.st_mode) && !contents)
			target = join(dst, fi.name);
		else if (!S_ISDIR(st.st_mode) && isdir)
			return sl_fail(&c->err, SL_INVALID, 0,
				       "cannot copy directory %s of sandbox %s onto file %s",
				       fi.path, c->sb.id, dst);
		else
			target = strdup(dst);
	} else if (errno == ENOENT) {
		if (!isdir && ends_with(dst, "/"))
			return sl_fail(&c->err, SL_NOTFOUND, 0, "directory %s does not exist", dst);
		target = strdup(dst);
	} else {
		return host_fail(c, "stat", dst, errno);
	}
	if (!target)
		return sl_fail(&c->err, SL_INTERNAL, ENOMEM, "copy %s", src);
	/* The destination's directory is the user's own: opened normally. */
	size_t n = strlen(target);
	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	char *slash = strrchr(target, '/');
	const char *name = slash ? slash + 1 : target;
	_cleanup_free_ char *dir =
	    slash ? strndup(target, slash == target ? 1 : slash - target) : strdup(".");
	if (!dir)
		return sl_fail(&c->err, SL_INTERNAL, ENOMEM, "copy %s", src);
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		/* "dst/." or "/": copy into that directory itself. */
		free(dir);
		dir = strdup(target);
		name = ".";
		if (!dir)
			return sl_fail(&c->err, SL_INTERNAL, ENOMEM, "copy %s", src);
	}
	_cleanup_close_ int hdir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hdir < 0)
		return host_fail(c, "open directory", dir, errno);
	return out_entry(c, &fi, hdir, name, target, 0);
}

int cmd_cp(sl_ctx *ctx, int argc, char **argv)
{
	struct cp c = {.ctx = ctx};
	int first = 1;
	for (; first < argc && argv[first][0] == '-' && argv[first][1]; first++) {
		if (!strcmp(argv[first], "-L") || !strcmp(argv[first], "--follow-link"))
			c.follow = true;
		else if (!strcmp(argv[first], "--"))
			break;
		else
			return cli_usage("cp: unknown option \"%s\"", argv[first]);
	}
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	if (argc - first != 2)
		return cli_usage("cp: give SRC and DST, one of them ID:PATH");
	char *sref, *spath, *dref, *dpath;
	bool s_in = split_spec(argv[first], &sref, &spath);
	bool d_in = split_spec(argv[first + 1], &dref, &dpath);
	if (s_in == d_in)
		return cli_usage(s_in ? "cp: copying between sandboxes is not supported; copy "
					"through the host"
				      : "cp: one of SRC and DST must be ID:PATH");
	if (!strcmp(spath, "-") || !strcmp(dpath, "-"))
		return cli_usage("cp: tar streams (\"-\") are not supported; give a path");
	if (sandbox_get(ctx, s_in ? sref : dref, &c.sb, &c.err) < 0)
		return cli_fail(&c.err);
	c.buf = malloc(CP_BUF);
	int r = c.buf ? (s_in ? copy_out(&c, spath, dpath) : copy_in(&c, spath, dpath))
		      : sl_fail(&c.err, SL_INTERNAL, ENOMEM, "cp: buffer");
	free(c.buf);
	sandbox_free(&c.sb);
	return r < 0 ? cli_fail(&c.err) : 0;
}

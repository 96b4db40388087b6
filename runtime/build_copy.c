/* build_copy.c — COPY, ADD and WORKDIR of a build: sources resolved inside the context
 * (never following a link out of it), hashed for the cache, then put in place. */
#include "build_copy.h"

#include "archive_extract.h"
#include "cleanup.h"
#include "fsutil.h"
#include "sbxfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BC_MAX_DEPTH 64

int bc_open_in(int rootfd, const char *path, int flags, sl_err *err)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve =
				   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	const char *p = path;
	while (*p == '/')
		p++;
	int fd = (int)syscall(SYS_openat2, rootfd, *p ? p : ".", &how, sizeof(how));
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INVALID, errno, "%.200s",
			       path);
	return fd;
}

/* ---- .dockerignore ---- */

void bc_ignore_free(bc_ignore *ig)
{
	for (size_t i = 0; i < ig->n; i++)
		free(ig->pat[i]);
	free(ig->pat);
	free(ig->neg);
	memset(ig, 0, sizeof(*ig));
}

int bc_ignore_load(bc_ignore *ig, int ctxfd, sl_err *err)
{
	memset(ig, 0, sizeof(*ig));
	sl_err e = {0};
	_cleanup_close_ int fd = bc_open_in(ctxfd, ".dockerignore", O_RDONLY, &e);
	if (fd < 0)
		return 0;
	_cleanup_fclose_ FILE *f = fdopen(fd, "r");
	if (!f)
		return sl_sysfail(err, "build: read .dockerignore");
	fd = -1;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *end = line + strlen(line);
		while (end > s &&
		       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		bool neg = *s == '!';
		if (neg)
			s++;
		while (*s == '/')
			s++;
		while (!strncmp(s, "./", 2))
			s += 2;
		size_t l = strlen(s);
		while (l > 1 && s[l - 1] == '/')
			s[--l] = '\0';
		if (!*s || ig->n == 4096)
			continue;
		char **p = realloc(ig->pat, (ig->n + 1) * sizeof(*p));
		bool *n = p ? realloc(ig->neg, (ig->n + 1) * sizeof(*n)) : NULL;
		if (p)
			ig->pat = p;
		if (n)
			ig->neg = n;
		if (!p || !n || !(ig->pat[ig->n] = strdup(s)))
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "build: .dockerignore");
		ig->neg[ig->n++] = neg;
	}
	return 0;
}

static bool pat_match(const char *pat, const char *rel)
{
	/* "**" crosses directories: matched without FNM_PATHNAME. */
	int flags = strstr(pat, "**") ? 0 : FNM_PATHNAME;
	if (!fnmatch(pat, rel, flags))
		return true;
	/* A pattern naming a directory covers what is under it. */
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", rel);
	for (char *s = strrchr(buf, '/'); s; s = strrchr(buf, '/')) {
		*s = '\0';
		if (!fnmatch(pat, buf, flags))
			return true;
	}
	return false;
}

bool bc_ignored(const bc_ignore *ig, const char *rel)
{
	bool out = false;
	for (size_t i = 0; ig && i < ig->n; i++)
		if (pat_match(ig->pat[i], rel))
			out = !ig->neg[i];
	return out;
}

/* ---- the walk: one per step, hashing (no sink) or putting files in place ---- */

struct sink {
	int (*mkdir)(struct sink *s, const char *path, uint32_t mode, const char *owner);
	int (*file)(struct sink *s, const char *path, int src, uint32_t mode, const char *owner);
	int (*symlink)(struct sink *s, const char *target, const char *path, const char *owner);
	bool (*is_dir)(struct sink *s, const char *path);
	sl_ctx *ctx;
	const sl_sandbox *sb;
	int tree; /* host sink */
	sl_err *err;
};

struct walker {
	const bc_plan *p;
	struct sink *sink; /* NULL: hash */
	struct sha256_ctx h;
	bool ignore;	 /* sources from the context: .dockerignore applies */
	bool keep_owner; /* an ADD's extracted archive */
	sl_err *err;
};

static void hash_str(struct walker *w, const char *s)
{
	sha256_update(&w->h, strlen(s) + 1, (const uint8_t *)s);
}

static void hash_num(struct walker *w, unsigned long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%llu", v);
	hash_str(w, b);
}

static int owner_of(struct walker *w, const struct stat *st, char *buf, size_t len)
{
	if (w->p->chown && !w->keep_owner)
		snprintf(buf, len, "%s", w->p->chown);
	else if (w->keep_owner)
		snprintf(buf, len, "%u:%u", st->st_uid, st->st_gid);
	else
		snprintf(buf, len, "0:0");
	return 0;
}

static uint32_t mode_of(struct walker *w, const struct stat *st)
{
	if (w->p->chmod)
		return (uint32_t)strtoul(w->p->chmod, NULL, 8) & 07777;
	return st->st_mode & 07777;
}

static int walk(struct walker *w, int fd, const char *rel, const char *dest, int depth);

static int walk_dir(struct walker *w, int fd, const char *rel, const char *dest, int depth)
{
	_cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sl_sysfail(w->err, "open %s", rel[0] ? rel : ".");
	DIR *d = fdopendir(dfd);
	if (!d)
		return sl_sysfail(w->err, "list %s", rel);
	dfd = -1;
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char **v = realloc(names, (n + 1) * sizeof(*v));
		if (!v || !(v[n] = strdup(e->d_name))) {
			free(v ? v : names);
			closedir(d);
			return sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "list %s", rel);
		}
		names = v;
		n++;
	}
	int rc = 0;
	/* Sorted: the same tree hashes the same. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (size_t i = 0; i < n && rc == 0; i++) {
		char crel[4096], cdest[4096];
		snprintf(crel, sizeof(crel), "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
		if (w->ignore && bc_ignored(w->p->ignore, crel))
			continue;
		snprintf(cdest, sizeof(cdest), "%s%s%s", dest,
			 dest[strlen(dest) - 1] == '/' ? "" : "/", names[i]);
		int cfd = openat(dirfd(d), names[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			rc = sl_sysfail(w->err, "open %s", crel);
		else {
			rc = walk(w, cfd, crel, cdest, depth + 1);
			close(cfd);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

/* The entry at FD (O_PATH, not followed), REL in its source, put at DEST. */
static int walk(struct walker *w, int fd, const char *rel, const char *dest, int depth)
{
	if (depth > BC_MAX_DEPTH)
		return sl_fail(w->err, SL_INVALID, 0, "%s: deeper than %d directories", rel,
			       BC_MAX_DEPTH);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sl_sysfail(w->err, "stat %s", rel);
	char owner[128];
	owner_of(w, &st, owner, sizeof(owner));
	uint32_t mode = mode_of(w, &st);
	if (!w->sink) {
		hash_str(w, dest);
		hash_num(w, st.st_mode & S_IFMT);
		hash_num(w, mode);
		hash_str(w, owner);
	}
	if (S_ISDIR(st.st_mode)) {
		if (w->sink && w->sink->mkdir(w->sink, dest, mode, owner) < 0)
			return -1;
		return walk_dir(w, fd, rel, dest, depth);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
		if (n < 0)
			return sl_sysfail(w->err, "read the link %s", rel);
		target[n] = '\0';
		if (!w->sink) {
			hash_str(w, target);
			return 0;
		}
		return w->sink->symlink(w->sink, target, dest, owner);
	}
	if (!S_ISREG(st.st_mode))
		return sl_fail(w->err, SL_INVALID, 0,
			       "%s is not a file, directory or symlink (devices, sockets and FIFOs "
			       "are not copied)",
			       rel);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	_cleanup_close_ int data = open(proc, O_RDONLY | O_CLOEXEC);
	if (data < 0)
		return sl_sysfail(w->err, "open %s", rel);
	if (w->sink)
		return w->sink->file(w->sink, dest, data, mode, owner);
	uint8_t buf[65536];
	for (;;) {
		ssize_t n = read(data, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(w->err, "read %s", rel);
		if (n == 0)
			break;
		sha256_update(&w->h, (size_t)n, buf);
	}
	return 0;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool is_tarball(const char *name)
{
	static const char *const ext[] = {".tar",    ".tar.gz", ".tgz",	    ".tar.bz2",	 ".tbz2",
					  ".tar.xz", ".txz",	".tar.zst", ".tar.zstd", NULL};
	size_t l = strlen(name);
	for (size_t i = 0; ext[i]; i++) {
		size_t e = strlen(ext[i]);
		if (l > e && !strcmp(name + l - e, ext[i]))
			return true;
	}
	return false;
}

/* The sources of SRC: the path itself, or the entries of its directory its last
 * component matches (a glob), each as a relative path in the source. */
static int expand_src(struct walker *w, const char *src, char ***out, size_t *n)
{
	char clean[4096];
	const char *s = src;
	while (*s == '/')
		s++;
	while (!strncmp(s, "./", 2))
		s += 2;
	snprintf(clean, sizeof(clean), "%s", *s ? s : ".");
	size_t l = strlen(clean);
	while (l > 1 && clean[l - 1] == '/')
		clean[--l] = '\0';
	*n = 0;
	*out = calloc(1, sizeof(char *));
	if (!*out)
		return sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "build");
	char *slash = strrchr(clean, '/');
	if (!has_glob(slash ? slash + 1 : clean)) {
		(*out)[0] = strdup(clean);
		*n = (*out)[0] ? 1 : 0;
		return *n ? 0 : sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "build");
	}
	char dir[4096], pat[4096];
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - clean) : 1, slash ? clean : ".");
	snprintf(pat, sizeof(pat), "%s", slash ? slash + 1 : clean);
	_cleanup_close_ int dfd = bc_open_in(w->p->ctxfd, dir, O_RDONLY | O_DIRECTORY, w->err);
	if (dfd < 0)
		return sl_wrap(w->err, "source");
	DIR *d = fdopendir(dfd);
	if (!d)
		return sl_sysfail(w->err, "list %s", dir);
	dfd = -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) && rc == 0) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fnmatch(pat, e->d_name, FNM_PERIOD))
			continue;
		char **v = realloc(*out, (*n + 2) * sizeof(*v));
		if (!v) {
			rc = sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "build");
			break;
		}
		*out = v;
		if (asprintf(&v[*n], "%s%s%s", slash ? dir : "", slash ? "/" : "", e->d_name) < 0) {
			rc = sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "build");
			break;
		}
		v[++*n] = NULL;
	}
	closedir(d);
	/* Sorted, for a stable hash. */
	for (size_t i = 1; rc == 0 && i < *n; i++)
		for (size_t j = i; j > 0 && strcmp((*out)[j - 1], (*out)[j]) > 0; j--) {
			char *t = (*out)[j];
			(*out)[j] = (*out)[j - 1];
			(*out)[j - 1] = t;
		}
	return rc;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* An ADD of a local archive: extracted (as any hostile archive) into the scratch dir,
 * then its tree put at DEST with its own owners. */
static int add_archive(struct walker *w, int fd, const char *rel, const char *dest)
{
	char proc[64], tree[4096];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	_cleanup_close_ int data = open(proc, O_RDONLY | O_CLOEXEC);
	if (data < 0)
		return sl_sysfail(w->err, "open %s", rel);
	uint64_t r;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return sl_sysfail(w->err, "random");
	snprintf(tree, sizeof(tree), "%s/add-%016llx", w->p->scratch, (unsigned long long)r);
	char hex[65];
	uint64_t bytes = 0;
	if (archive_extract_counted(data, tree, NULL, hex, &bytes, w->err) < 0)
		return sl_wrap(w->err, "ADD %s", rel);
	int rc = 0;
	_cleanup_close_ int tfd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		rc = sl_sysfail(w->err, "open %s", tree);
	bool ig = w->ignore, ko = w->keep_owner;
	w->ignore = false;
	w->keep_owner = !w->p->chown;
	if (rc == 0) {
		if (!w->sink)
			hash_str(w, hex);
		rc = walk(w, tfd, rel, dest, 0);
	}
	w->ignore = ig;
	w->keep_owner = ko;
	sl_err e;
	fs_remove_tree(tree, &e);
	return rc;
}

static int run_plan(struct walker *w)
{
	const bc_plan *p = w->p;
	char dest[4096];
	if (p->dest[0] == '/')
		snprintf(dest, sizeof(dest), "%s", p->dest);
	else
		snprintf(dest, sizeof(dest), "%s%s%s", p->workdir,
			 p->workdir[strlen(p->workdir) - 1] == '/' ? "" : "/", p->dest);
	if (p->kind == BC_MKDIR) {
		if (!w->sink) {
			hash_str(w, dest);
			return 0;
		}
		return w->sink->mkdir(w->sink, dest, 0755, "0:0");
	}
	const char *what = p->kind == BC_ADD ? "ADD" : "COPY";
	if (p->chmod) {
		char *end;
		unsigned long m = strtoul(p->chmod, &end, 8);
		if (*end || m > 07777 || !*p->chmod)
			return sl_fail(w->err, SL_INVALID, 0, "%s --chmod=%.20s: an octal mode",
				       what, p->chmod);
	}
	char ***all = calloc(p->nsrcs + 1, sizeof(*all));
	size_t *counts = calloc(p->nsrcs + 1, sizeof(*counts)), total = 0;
	int rc = all && counts ? 0 : sl_fail(w->err, SL_EXHAUSTED, ENOMEM, "build");
	for (size_t i = 0; rc == 0 && i < p->nsrcs; i++) {
		if (strstr(p->srcs[i], "://")) {
			rc = sl_fail(
			    w->err, SL_NOTIMPL, 0,
			    "%s %.200s: URLs are not supported (sandlot never downloads for "
			    "a build; fetch it in a RUN with --network)",
			    what, p->srcs[i]);
			break;
		}
		rc = expand_src(w, p->srcs[i], &all[i], &counts[i]);
		if (rc == 0 && counts[i] == 0)
			rc = sl_fail(w->err, SL_NOTFOUND, 0, "%s %.200s: no file matches", what,
				     p->srcs[i]);
		total += counts[i];
	}
	size_t dl = strlen(dest);
	bool dest_dir = dest[dl - 1] == '/' || total > 1 ||
			(w->sink && w->sink->is_dir && w->sink->is_dir(w->sink, dest));
	/* Directories a --chown copy makes on the way are the new owner's too (as buildah
	 * and BuildKit make them). */
	if (rc == 0 && w->sink && p->chown) {
		char up[4096];
		snprintf(up, sizeof(up), "%s", dest);
		if (!dest_dir && strrchr(up, '/'))
			*strrchr(up, '/') = '\0';
		for (char *c = strchr(up + 1, '/'); rc == 0; c = strchr(c + 1, '/')) {
			if (c)
				*c = '\0';
			if (up[0] && strcmp(up, "/") && !w->sink->is_dir(w->sink, up))
				rc = w->sink->mkdir(w->sink, up, 0755, p->chown);
			if (!c)
				break;
			*c = '/';
		}
	}
	for (size_t i = 0; rc == 0 && i < p->nsrcs; i++)
		for (size_t j = 0; rc == 0 && j < counts[i]; j++) {
			const char *rel = all[i][j];
			if (w->ignore && strcmp(rel, ".") && bc_ignored(p->ignore, rel)) {
				rc = sl_fail(w->err, SL_NOTFOUND, 0,
					     "%s %.200s: excluded by .dockerignore", what, rel);
				break;
			}
			int fd = bc_open_in(p->ctxfd, rel, O_PATH | O_NOFOLLOW, w->err);
			if (fd < 0) {
				rc = sl_wrap(w->err, "%s: no such source", what);
				break;
			}
			struct stat st;
			char target[4096];
			const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
			if (fstat(fd, &st) < 0)
				rc = sl_sysfail(w->err, "stat %s", rel);
			else if (S_ISDIR(st.st_mode))
				rc = walk(w, fd, strcmp(rel, ".") ? rel : "", dest, 0);
			else if (p->kind == BC_ADD && S_ISREG(st.st_mode) && is_tarball(base))
				rc = add_archive(w, fd, rel, dest);
			else {
				if (dest_dir)
					snprintf(target, sizeof(target), "%s%s%s", dest,
						 dest[dl - 1] == '/' ? "" : "/", base);
				else
					snprintf(target, sizeof(target), "%s", dest);
				rc = walk(w, fd, rel, target, 0);
			}
			close(fd);
		}
	for (size_t i = 0; all && i < p->nsrcs; i++)
		free_strv(all[i], counts[i]);
	free(all);
	free(counts);
	return rc;
}

int bc_plan_hash(const bc_plan *p, char hex[65], sl_err *err)
{
	struct walker w = {.p = p, .ignore = p->ignore != NULL, .err = err};
	sha256_init(&w.h);
	hash_num(&w, p->kind);
	if (run_plan(&w) < 0)
		return -1;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&w.h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

/* ---- the sandbox sink: the build sandbox's files through sbxfs ---- */

static int sb_mkdir(struct sink *s, const char *path, uint32_t mode, const char *owner)
{
	if (sbxfs_mkdir(s->ctx, s->sb, path, s->err) < 0 ||
	    sbxfs_chmod(s->ctx, s->sb, path, mode, owner, s->err) < 0)
		return sl_wrap(s->err, "%s", path);
	return 0;
}

static int sb_file(struct sink *s, const char *path, int src, uint32_t mode, const char *owner)
{
	int fd = -1;
	sl_err e = {0};
	sl_fileinfo fi;
	/* A symlink or directory in the way is replaced, as docker does. */
	if (sbxfs_stat(s->ctx, s->sb, path, &fi, &e) == 0 && strcmp(fi.type, "file") &&
	    sbxfs_remove(s->ctx, s->sb, path, true, s->err) < 0)
		return -1;
	if (sbxfs_open_write(s->ctx, s->sb, path, mode, &fd, s->err) < 0)
		return -1;
	uint8_t buf[65536];
	int rc = 0;
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sl_sysfail(s->err, "read the source of %s", path);
			break;
		}
		if (n == 0)
			break;
		if (sbxfs_write_all(s->sb, fd, path, buf, (size_t)n, s->err) < 0) {
			rc = -1;
			break;
		}
	}
	close(fd);
	if (rc == 0 && sbxfs_chmod(s->ctx, s->sb, path, mode, owner, s->err) < 0)
		rc = sl_wrap(s->err, "%s", path);
	return rc;
}

static int sb_symlink(struct sink *s, const char *target, const char *path, const char *owner)
{
	sl_err e = {0};
	sl_fileinfo fi;
	if (sbxfs_stat(s->ctx, s->sb, path, &fi, &e) == 0 &&
	    sbxfs_remove(s->ctx, s->sb, path, true, s->err) < 0)
		return -1;
	return sbxfs_symlink(s->ctx, s->sb, target, path, s->err);
}

static bool sb_is_dir(struct sink *s, const char *path)
{
	sl_fileinfo fi;
	sl_err e = {0};
	return sbxfs_stat_follow(s->ctx, s->sb, path, &fi, &e) == 0 && !strcmp(fi.type, "dir");
}

int bc_apply_sandbox(const bc_plan *p, sl_ctx *ctx, const sl_sandbox *sb, sl_err *err)
{
	struct sink s = {.mkdir = sb_mkdir,
			 .file = sb_file,
			 .symlink = sb_symlink,
			 .is_dir = sb_is_dir,
			 .ctx = ctx,
			 .sb = sb,
			 .err = err};
	struct walker w = {.p = p, .sink = &s, .ignore = p->ignore != NULL, .err = err};
	return run_plan(&w);
}

/* ---- the host sink: a tree that becomes a layer (FROM scratch) ---- */

static int numeric_owner(struct sink *s, const char *owner, uid_t *u, gid_t *g)
{
	char *end;
	unsigned long a = strtoul(owner, &end, 10), b = a;
	if (*end == ':')
		b = strtoul(end + 1, &end, 10);
	if (*end || a > 65535 || b > 65535)
		return sl_fail(s->err, SL_INVALID, 0,
			       "--chown=%.60s: a stage FROM scratch has no /etc/passwd; give "
			       "numeric ids",
			       owner);
	*u = (uid_t)a;
	*g = (gid_t)b;
	return 0;
}

/* The parent directories of PATH under the tree (0755, root's), and PATH's parent fd. */
static int host_parent(struct sink *s, const char *path, char *leaf, size_t leaflen)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	char *slash = strrchr(buf, '/');
	snprintf(leaf, leaflen, "%s", slash ? slash + 1 : buf);
	if (!slash)
		return fcntl(s->tree, F_DUPFD_CLOEXEC, 0);
	*slash = '\0';
	int dir = fcntl(s->tree, F_DUPFD_CLOEXEC, 0);
	for (char *c = strtok(buf, "/"); c && dir >= 0; c = strtok(NULL, "/")) {
		if (!strcmp(c, "..") || !strcmp(c, ".")) {
			close(dir);
			return sl_fail(s->err, SL_INVALID, 0, "%s: '.' or '..' in the path", path);
		}
		if (mkdirat(dir, c, 0755) < 0 && errno != EEXIST) {
			close(dir);
			return sl_sysfail(s->err, "create %s", c);
		}
		int next = openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		dir = next;
	}
	if (dir < 0)
		return sl_sysfail(s->err, "open the parent of %s", path);
	return dir;
}

static int host_mkdir(struct sink *s, const char *path, uint32_t mode, const char *owner)
{
	uid_t u;
	gid_t g;
	char leaf[256];
	if (numeric_owner(s, owner, &u, &g) < 0)
		return -1;
	_cleanup_close_ int dir = host_parent(s, path, leaf, sizeof(leaf));
	if (dir < 0)
		return -1;
	if (!*leaf)
		return 0; /* "/" */
	if (mkdirat(dir, leaf, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(s->err, "create %s", path);
	if (fchownat(dir, leaf, u, g, AT_SYMLINK_NOFOLLOW) < 0 || fchmodat(dir, leaf, mode, 0) < 0)
		return sl_sysfail(s->err, "set the owner and mode of %s", path);
	return 0;
}

static int host_file(struct sink *s, const char *path, int src, uint32_t mode, const char *owner)
{
	uid_t u;
	gid_t g;
	char leaf[256];
	if (numeric_owner(s, owner, &u, &g) < 0)
		return -1;
	_cleanup_close_ int dir = host_parent(s, path, leaf, sizeof(leaf));
	if (dir < 0)
		return -1;
	unlinkat(dir, leaf, 0);
	_cleanup_close_ int fd =
	    openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(s->err, "create %s", path);
	uint8_t buf[65536];
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(s->err, "read the source of %s", path);
		if (n == 0)
			break;
		if (write(fd, buf, (size_t)n) != n)
			return sl_sysfail(s->err, "write %s", path);
	}
	if (fchown(fd, u, g) < 0 || fchmod(fd, mode) < 0)
		return sl_sysfail(s->err, "set the owner and mode of %s", path);
	return 0;
}

static int host_symlink(struct sink *s, const char *target, const char *path, const char *owner)
{
	uid_t u;
	gid_t g;
	char leaf[256];
	if (numeric_owner(s, owner, &u, &g) < 0)
		return -1;
	_cleanup_close_ int dir = host_parent(s, path, leaf, sizeof(leaf));
	if (dir < 0)
		return -1;
	unlinkat(dir, leaf, 0);
	if (symlinkat(target, dir, leaf) < 0 || fchownat(dir, leaf, u, g, AT_SYMLINK_NOFOLLOW) < 0)
		return sl_sysfail(s->err, "create the link %s", path);
	return 0;
}

static bool host_is_dir(struct sink *s, const char *path)
{
	struct stat st;
	const char *p = path;
	while (*p == '/')
		p++;
	return *p && fstatat(s->tree, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int bc_apply_host(const bc_plan *p, const char *tree, sl_err *err)
{
	_cleanup_close_ int fd = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "open %s", tree);
	struct sink s = {.mkdir = host_mkdir,
			 .file = host_file,
			 .symlink = host_symlink,
			 .is_dir = host_is_dir,
			 .tree = fd,
			 .err = err};
	struct walker w = {.p = p, .sink = &s, .ignore = p->ignore != NULL, .err = err};
	return run_plan(&w);
}

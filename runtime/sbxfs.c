/* sbxfs.c — a running sandbox's files seen from the host, exactly as its processes see
 * them: every user path resolves beneath /proc/<init>/root with RESOLVE_IN_ROOT. */
#include "sbxfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "launch.h"

#define USERDB_MAX	(1 << 20) /* /etc/passwd and /etc/group: read at most 1 MiB */
#define LIST_MAX	16384 /* entries per sbxfs_list (their names are held, ~4 MiB at most) */
#define IDS_PER_SANDBOX 65536

/* One call's view of the sandbox: its root, and its user's host ids (looked up when
 * the call first creates something). */
struct sbx_root {
	const sl_sandbox *sb;
	int fd;
	bool have_ids;
	uid_t huid;
	gid_t hgid;
};

static void root_close(struct sbx_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
#define _cleanup_root_ __attribute__((cleanup(root_close)))

/* ---- errors ---- */

/* One mapping from errno to kinds, so every call names the path the same way. EACCES
 * and EPERM are CONFLICT: the host side acts as root, so they come from the file's own
 * state (immutable, /proc, sticky-directory link protection), not from the caller. */
static int path_fail(sl_err *err, const sl_sandbox *sb, const char *op, const char *path, int e)
{
	switch (e) {
	case ENOENT:
		return sl_fail(err, SL_NOTFOUND, e, "%s %s in sandbox %s", op, path, sb->id);
	case ENOSPC:
	case EDQUOT: {
		sl_fail(err, SL_EXHAUSTED, 0, "%s %s in sandbox %s: disk limit reached", op, path,
			sb->id);
		err->errnum = e;
		return -1;
	}
	case EISDIR:
		return sl_fail(err, SL_INVALID, 0, "%s %s in sandbox %s: it is a directory", op,
			       path, sb->id);
	case ENOTDIR:
		return sl_fail(err, SL_INVALID, e, "%s %s in sandbox %s", op, path, sb->id);
	case ELOOP:
		return sl_fail(err, SL_INVALID, 0,
			       "%s %s in sandbox %s: too many symbolic links, or a link through "
			       "/proc",
			       op, path, sb->id);
	case ENAMETOOLONG:
	case EINVAL:
		return sl_fail(err, SL_INVALID, e, "%s %s in sandbox %s", op, path, sb->id);
	case EACCES:
	case EPERM:
	case EROFS:
	case EBUSY:
	case EEXIST:
	case ENOTEMPTY:
	case ETXTBSY:
		return sl_fail(err, SL_CONFLICT, e, "%s %s in sandbox %s", op, path, sb->id);
	case EAGAIN:
		return sl_fail(err, SL_CONFLICT, 0,
			       "%s %s in sandbox %s: the path kept changing while it was "
			       "resolved; retry",
			       op, path, sb->id);
	default:
		return sl_fail(err, SL_INTERNAL, e, "%s %s in sandbox %s", op, path, sb->id);
	}
}

int sbxfs_io_fail(const sl_sandbox *sb, const char *op, const char *path, int errnum, sl_err *err)
{
	if (errnum == ENOSPC || errnum == EDQUOT || errnum == EFBIG)
		return path_fail(err, sb, op, path, ENOSPC);
	return sl_fail(err, SL_INTERNAL, errnum, "%s %s in sandbox %s", op, path, sb->id);
}

int sbxfs_write_all(const sl_sandbox *sb, int fd, const char *path, const void *data, size_t len,
		    sl_err *err)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbxfs_io_fail(sb, "write", path, errno, err);
		p += n, len -= (size_t)n;
	}
	return 0;
}

/* ---- paths ---- */

/* Absolute or relative to the sandbox's working directory -> "/a/b" with no ".", ".."
 * or empty components ("/.." stays "/"). Lexical, as docker cp and the providers do;
 * the kernel then resolves symlinks, inside the root. */
static int path_norm(const sl_sandbox *sb, const char *in, char out[PATH_MAX], sl_err *err)
{
	if (!in || !*in)
		return sl_fail(err, SL_INVALID, 0, "path is empty");
	size_t inlen = strnlen(in, PATH_MAX);
	if (inlen >= PATH_MAX)
		return sl_fail(err, SL_INVALID, 0, "path is longer than %d bytes", PATH_MAX - 1);
	char buf[2 * PATH_MAX];
	if (in[0] == '/')
		snprintf(buf, sizeof(buf), "%s", in);
	else
		snprintf(buf, sizeof(buf), "%s/%s", sb->workdir[0] ? sb->workdir : "/", in);
	size_t n = 0;
	out[0] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		size_t cl = strlen(c);
		if (n + 1 + cl >= PATH_MAX)
			return sl_fail(err, SL_INVALID, 0, "path %s is longer than %d bytes", in,
				       PATH_MAX - 1);
		out[n++] = '/';
		memcpy(out + n, c, cl + 1);
		n += cl;
	}
	if (n == 0)
		strcpy(out, "/");
	return 0;
}

/* "/a/b/c" -> parent "/a/b" and base "c" (pointing into path). Not for "/". */
static const char *path_split(const char *path, char parent[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	size_t pl = slash == path ? 1 : (size_t)(slash - path);
	memcpy(parent, path, pl);
	parent[pl] = '\0';
	return slash + 1;
}

/* ---- the root ---- */

static int not_running(const sl_sandbox *sb, sl_err *err)
{
	return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is not running (status %s)", sb->id,
		       sb->status != SL_ST_UNKNOWN ? sandbox_status_name(sb->status) : "unknown");
}

/* The sandbox's root as its init sees it. The start time is checked after the open
 * (only then: once is enough): if it is the init's, that init was alive when the open
 * ran, being older than it, and a pid cannot be reused while it is alive, so the fd is
 * that init's root. */
static int root_open(const sl_sandbox *sb, struct sbx_root *r, sl_err *err)
{
	r->sb = sb;
	r->fd = -1;
	r->have_ids = false;
	if (sb->init_pid <= 1 || !sb->init_start)
		return not_running(sb, err);
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int)sb->init_pid);
	r->fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return not_running(sb, err);
		return sl_sysfail(err, "sandbox %s: open its root (%s)", sb->id, p);
	}
	if (proc_start_time(sb->init_pid) != sb->init_start) {
		root_close(r);
		return not_running(sb, err);
	}
	return 0;
}

/* openat2 beneath the sandbox's root: absolute symlinks and ".." stop at its "/",
 * magic links (/proc/<pid>/root, /proc/<pid>/fd/N) are refused. -1 with errno. */
static int resolve(const struct sbx_root *r, const char *path, int flags, mode_t mode)
{
	return fs_openat2(r->fd, path, flags, mode, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/* The directory holding path's last component, resolved inside the root. */
static int open_parent(const struct sbx_root *r, const char *path, const char **base,
		       const char *op, sl_err *err)
{
	char parent[PATH_MAX];
	*base = path_split(path, parent);
	int fd = resolve(r, parent, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return path_fail(err, r->sb, op, path, errno); /* the path the caller named */
	return fd;
}

/* The sandbox's /proc and /sys answer to whoever reads them: as host root, that is
 * more than the sandbox itself may see or change. Contents go through commands. */
static bool on_kernel_fs(int fd)
{
	struct statfs s;
	return fstatfs(fd, &s) == 0 && (s.f_type == PROC_SUPER_MAGIC || s.f_type == SYSFS_MAGIC);
}

static int kernel_fs_fail(sl_err *err, const sl_sandbox *sb, const char *op, const char *path)
{
	return sl_fail(err, SL_CONFLICT, 0,
		       "%s %s in sandbox %s: it is a kernel interface file (/proc or /sys); use "
		       "a command inside the sandbox",
		       op, path, sb->id);
}

/* Open a regular file, symlinks followed inside the root. */
static int open_regular(const struct sbx_root *r, const char *path, int flags, const char *op,
			struct stat *st, sl_err *err)
{
	_cleanup_close_ int pfd = resolve(r, path, O_PATH, 0);
	if (pfd < 0)
		return path_fail(err, r->sb, op, path, errno);
	if (fstat(pfd, st) < 0)
		return path_fail(err, r->sb, op, path, errno);
	if (S_ISDIR(st->st_mode))
		return path_fail(err, r->sb, op, path, EISDIR);
	if (!S_ISREG(st->st_mode))
		return sl_fail(err, SL_INVALID, 0, "%s %s in sandbox %s: not a regular file", op,
			       path, r->sb->id);
	if (on_kernel_fs(pfd))
		return kernel_fs_fail(err, r->sb, op, path);
	int fd = fs_reopen(pfd, flags);
	if (fd < 0)
		return path_fail(err, r->sb, op, path, errno);
	return fd;
}

/* ---- the sandbox's users ---- */

static bool parse_id(const char *s, size_t len, uint32_t *id)
{
	if (len == 0 || len > 5)
		return false;
	uint32_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v >= IDS_PER_SANDBOX)
		return false;
	*id = v;
	return true;
}

int sbxfs_userdb_scan(char *buf, bool passwd, const char *name, uint32_t want, uint32_t *id,
		      uint32_t *gid)
{
	for (char *line = buf; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		const char *f[4];
		size_t fl[4], nf = 0;
		for (const char *p = line; nf < 4; nf++) {
			const char *colon = strchr(p, ':');
			f[nf] = p;
			fl[nf] = colon ? (size_t)(colon - p) : strlen(p);
			if (!colon) {
				nf++;
				break;
			}
			p = colon + 1;
		}
		uint32_t a, b = 0;
		bool ok = nf >= 3 && parse_id(f[2], fl[2], &a) &&
			  (!passwd || (nf >= 4 && parse_id(f[3], fl[3], &b)));
		bool match = name ? (fl[0] == strlen(name) && !strncmp(f[0], name, fl[0]))
				  : (ok && a == want);
		if (ok && match) {
			*id = a;
			if (gid)
				*gid = b;
			return 0;
		}
		line = next;
	}
	return 1;
}

/* Find an entry of the sandbox's /etc/passwd or /etc/group (sbxfs_userdb_scan): the file
 * is the sandbox's, hence hostile: bounded read. 0 found, 1 not found, -1 error. */
static int userdb_find(const struct sbx_root *r, bool passwd, const char *name, uint32_t want,
		       uint32_t *id, uint32_t *gid, sl_err *err)
{
	const char *file = passwd ? "/etc/passwd" : "/etc/group";
	struct stat st;
	sl_err e = {0};
	_cleanup_close_ int fd = open_regular(r, file, O_RDONLY, "read", &st, &e);
	if (fd < 0)
		return e.kind == SL_NOTFOUND ? 1 : (*err = e, -1);
	_cleanup_free_ char *buf = malloc(USERDB_MAX + 1);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", file);
	size_t len = 0;
	while (len < USERDB_MAX) {
		ssize_t n = read(fd, buf + len, USERDB_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbxfs_io_fail(r->sb, "read", file, errno, err);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return sbxfs_userdb_scan(buf, passwd, name, want, id, gid);
}

/* "name" or "id" of a user (gid_out: the passwd primary group, NULL if not wanted). */
static int lookup_user(const struct sbx_root *r, const char *spec, size_t len, uint32_t *uid,
		       uint32_t *gid, sl_err *err)
{
	char name[256];
	if (len == 0 || len >= sizeof(name))
		return sl_fail(err, SL_INVALID, 0, "user \"%.*s\" is not a user name or uid",
			       (int)len, spec);
	memcpy(name, spec, len);
	name[len] = '\0';
	if (name[0] >= '0' && name[0] <= '9') {
		if (!parse_id(name, len, uid))
			return sl_fail(err, SL_INVALID, 0, "uid %s is not in 0-65535", name);
		if (gid) {
			*gid = *uid;
			uint32_t u;
			if (userdb_find(r, true, NULL, *uid, &u, gid, err) < 0)
				return -1;
		}
		return 0;
	}
	uint32_t g;
	int f = userdb_find(r, true, name, 0, uid, &g, err);
	if (f < 0)
		return -1;
	if (f > 0)
		return sl_fail(err, SL_INVALID, 0, "user %s is not in sandbox %s's /etc/passwd",
			       name, r->sb->id);
	if (gid)
		*gid = g;
	return 0;
}

static int lookup_group(const struct sbx_root *r, const char *spec, uint32_t *gid, sl_err *err)
{
	if (spec[0] >= '0' && spec[0] <= '9') {
		if (!parse_id(spec, strlen(spec), gid))
			return sl_fail(err, SL_INVALID, 0, "gid %s is not in 0-65535", spec);
		return 0;
	}
	int f = userdb_find(r, false, spec, 0, gid, NULL, err);
	if (f < 0)
		return -1;
	if (f > 0)
		return sl_fail(err, SL_INVALID, 0, "group %s is not in sandbox %s's /etc/group",
			       spec, r->sb->id);
	return 0;
}

/* The host ids that new files get: the sandbox's user ("name", "uid" or "uid:gid", as
 * init resolves it), shifted into the sandbox's range. */
static int sandbox_user_ids(struct sbx_root *r, sl_err *err)
{
	if (r->have_ids)
		return 0;
	const char *spec = r->sb->user[0] ? r->sb->user : "root";
	const char *colon = strchr(spec, ':');
	uint32_t uid, gid;
	if (lookup_user(r, spec, colon ? (size_t)(colon - spec) : strlen(spec), &uid, &gid, err) <
	    0)
		return -1;
	if (colon && lookup_group(r, colon + 1, &gid, err) < 0)
		return -1;
	r->huid = r->sb->uid_base + uid;
	r->hgid = r->sb->uid_base + gid;
	r->have_ids = true;
	return 0;
}

/* ---- making things ---- */

/* New inodes are made with this thread's fsuid/fsgid switched to the sandbox user's
 * host ids. On the overlay that merely saves a chown; on an id-mapped mount (volumes)
 * it is required: host root's uid 0 has no mapping there, and creating as it fails
 * with EOVERFLOW. fsuid and capabilities are per thread, so other threads of the
 * daemon are unaffected. Leaving fsuid 0 drops the filesystem capabilities from the
 * effective set, so they are put back: the host side keeps acting as root. */
struct fsids {
	bool active;
	uid_t old_uid;
	gid_t old_gid;
	struct __user_cap_data_struct caps[2];
};

static void fsids_leave(struct fsids *f)
{
	if (!f->active)
		return;
	int e = errno;
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	syscall(SYS_setfsuid, f->old_uid);
	syscall(SYS_setfsgid, f->old_gid);
	syscall(SYS_capset, &h, f->caps);
	f->active = false;
	errno = e;
}
#define _cleanup_fsids_ __attribute__((cleanup(fsids_leave)))

static int fsids_enter(struct sbx_root *r, struct fsids *f, sl_err *err)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	if (sandbox_user_ids(r, err) < 0)
		return -1;
	if (syscall(SYS_capget, &h, f->caps) < 0)
		return sl_sysfail(err, "read this thread's capabilities");
	f->old_gid = (gid_t)syscall(SYS_setfsgid, r->hgid);
	f->old_uid = (uid_t)syscall(SYS_setfsuid, r->huid);
	f->active = true;
	/* setfsuid reports nothing on failure; asking with an invalid id reads it back. */
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != r->huid ||
	    (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != r->hgid) {
		fsids_leave(f);
		return sl_fail(err, SL_INTERNAL, EPERM, "act as the sandbox's user (host uid %u)",
			       (unsigned)r->huid);
	}
	if (syscall(SYS_capset, &h, f->caps) < 0) {
		int e = errno;
		fsids_leave(f);
		return sl_fail(err, SL_INTERNAL, e, "keep capabilities as the sandbox's user");
	}
	return 0;
}

/* A directory we just made: the sandbox user's, mode 0755 whatever our umask. */
static int adopt_dir(struct sbx_root *r, int pfd, const char *name, int *out, const char *path,
		     sl_err *err)
{
	_cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return path_fail(err, r->sb, "mkdir", path, errno);
	if (sandbox_user_ids(r, err) < 0)
		return -1;
	if (fchown(fd, r->huid, r->hgid) < 0 || fchmod(fd, 0755) < 0)
		return path_fail(err, r->sb, "mkdir", path, errno);
	*out = steal_fd(&fd);
	return 0;
}

/* mkdir -p inside the root; returns an fd of the directory. Existing components are
 * looked up from the root (so symlinks among them are followed, inside); from the
 * first one made on, the walk continues from the directory it just made. */
static int mkdir_p(struct sbx_root *r, const char *path, sl_err *err)
{
	int fd = resolve(r, path, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return path_fail(err, r->sb, "mkdir", path, errno);
	_cleanup_close_ int cur = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return sl_sysfail(err, "dup root fd");
	bool made = false;
	char prefix[PATH_MAX];
	size_t n = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t cl = strcspn(p, "/");
		prefix[n++] = '/';
		memcpy(prefix + n, p, cl);
		n += cl;
		prefix[n] = '\0';
		char comp[NAME_MAX + 1];
		if (cl > NAME_MAX)
			return path_fail(err, r->sb, "mkdir", prefix, ENAMETOOLONG);
		memcpy(comp, p, cl);
		comp[cl] = '\0';
		p += cl;
		int next = -1;
		if (!made) {
			next = resolve(r, prefix, O_PATH | O_DIRECTORY, 0);
			if (next < 0 && errno != ENOENT)
				return path_fail(err, r->sb, "mkdir", prefix, errno);
		}
		if (next < 0) {
			int made_r;
			{
				_cleanup_fsids_ struct fsids ids = {0};
				if (fsids_enter(r, &ids, err) < 0)
					return -1;
				made_r = mkdirat(cur, comp, 0755);
			}
			if (made_r < 0) {
				if (errno != EEXIST)
					return path_fail(err, r->sb, "mkdir", prefix, errno);
				/* Made by someone else meanwhile, or a dangling symlink. */
				next = resolve(r, prefix, O_PATH | O_DIRECTORY, 0);
				if (next < 0 && errno == ENOENT)
					return sl_fail(err, SL_INVALID, 0,
						       "mkdir %s in sandbox %s: it is a symlink to "
						       "a missing directory",
						       prefix, r->sb->id);
				if (next < 0)
					return path_fail(err, r->sb, "mkdir", prefix, errno);
			} else {
				if (adopt_dir(r, cur, comp, &next, prefix, err) < 0)
					return -1;
				made = true;
			}
		}
		close(cur);
		cur = next;
	}
	return steal_fd(&cur);
}

/* ---- file info ---- */

static uint32_t inside_id(const sl_sandbox *sb, uint32_t host)
{
	return host >= sb->uid_base && host - sb->uid_base < IDS_PER_SANDBOX ? host - sb->uid_base
									     : 65534;
}

static void info_fill(const sl_sandbox *sb, const char *path, const char *name,
		      const struct stat *st, sl_fileinfo *fi)
{
	memset(fi, 0, sizeof(*fi));
	snprintf(fi->name, sizeof(fi->name), "%s", name);
	snprintf(fi->path, sizeof(fi->path), "%s", path);
	const char *t = S_ISREG(st->st_mode)   ? "file"
			: S_ISDIR(st->st_mode) ? "dir"
			: S_ISLNK(st->st_mode) ? "symlink"
					       : "other";
	snprintf(fi->type, sizeof(fi->type), "%s", t);
	fi->size = (uint64_t)st->st_size;
	fi->mode = st->st_mode & 07777;
	fi->uid = inside_id(sb, st->st_uid);
	fi->gid = inside_id(sb, st->st_gid);
	fi->mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

static void info_target(int dirfd, const char *name, sl_fileinfo *fi)
{
	ssize_t n = readlinkat(dirfd, name, fi->target, sizeof(fi->target) - 1);
	fi->target[n > 0 ? n : 0] = '\0';
}

void fileinfo_permissions(uint32_t mode, char out[10])
{
	static const char rwx[] = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[2] = out[2] == 'x' ? 's' : 'S';
	if (mode & S_ISGID)
		out[5] = out[5] == 'x' ? 's' : 'S';
	if (mode & S_ISVTX)
		out[8] = out[8] == 'x' ? 't' : 'T';
	out[9] = '\0';
}

cJSON *fileinfo_to_json(const sl_fileinfo *fi)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	char perm[10], when[40];
	cJSON_AddStringToObject(o, "name", fi->name);
	cJSON_AddStringToObject(o, "path", fi->path);
	cJSON_AddStringToObject(o, "type", fi->type);
	cJSON_AddNumberToObject(o, "size", (double)fi->size);
	cJSON_AddNumberToObject(o, "mode", fi->mode);
	fileinfo_permissions(fi->mode, perm);
	cJSON_AddStringToObject(o, "permissions", perm);
	time_t s = (time_t)(fi->mtime_ms >= 0 ? fi->mtime_ms / 1000 : (fi->mtime_ms - 999) / 1000);
	int ms = (int)(fi->mtime_ms - (int64_t)s * 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	cJSON_AddStringToObject(o, "mtime", when);
	cJSON_AddNumberToObject(o, "uid", fi->uid);
	cJSON_AddNumberToObject(o, "gid", fi->gid);
	if (!strcmp(fi->type, "symlink"))
		cJSON_AddStringToObject(o, "target", fi->target);
	return o;
}

/* ---- the calls ---- */

int sbxfs_open_read(sl_ctx *ctx, const sl_sandbox *sb, const char *path, int *fd, uint64_t *size,
		    sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	struct stat st;
	int f = open_regular(&r, p, O_RDONLY, "read", &st, err);
	if (f < 0)
		return -1;
	*fd = f;
	if (size)
		*size = (uint64_t)st.st_size;
	return 0;
}

/* The last component exists (as a file, a directory or a symlink): follow it inside the
 * root. A dangling symlink is followed too, creating its target as a shell's `>` would. */
static int open_existing_for_write(struct sbx_root *r, const char *p, uint32_t mode, sl_err *err)
{
	struct stat st;
	sl_err e = {0};
	int fd = open_regular(r, p, O_WRONLY | O_TRUNC, "write", &st, &e);
	if (fd >= 0 || e.kind != SL_NOTFOUND) {
		if (fd < 0)
			*err = e;
		return fd;
	}
	/* O_NONBLOCK: a FIFO planted in the race window must not hang us. */
	_cleanup_close_ int f = -1;
	{
		_cleanup_fsids_ struct fsids ids = {0};
		if (fsids_enter(r, &ids, err) < 0)
			return -1;
		f = resolve(r, p, O_WRONLY | O_CREAT | O_NONBLOCK, 0600);
	}
	if (f < 0)
		return path_fail(err, r->sb, "write", p, errno);
	if (fstat(f, &st) < 0)
		return path_fail(err, r->sb, "write", p, errno);
	if (!S_ISREG(st.st_mode) || on_kernel_fs(f))
		return sl_fail(err, SL_INVALID, 0, "write %s in sandbox %s: not a regular file", p,
			       r->sb->id);
	/* The target was absent a moment ago: an empty file of the sandbox user's is the
	 * one just made, and gets the mode asked for. */
	if (st.st_size == 0 && st.st_uid == r->huid && fchmod(f, mode) < 0)
		return path_fail(err, r->sb, "write", p, errno);
	if (fcntl(f, F_SETFL, 0) < 0 || ftruncate(f, 0) < 0)
		return path_fail(err, r->sb, "write", p, errno);
	return steal_fd(&f);
}

int sbxfs_open_write(sl_ctx *ctx, const sl_sandbox *sb, const char *path, uint32_t mode, int *fd,
		     sl_err *err)
{
	char p[PATH_MAX], parent[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0)
		return -1;
	if (!strcmp(p, "/"))
		return path_fail(err, sb, "write", p, EISDIR);
	if (root_open(sb, &r, err) < 0)
		return -1;
	mode = mode ? mode & 07777 : 0644;
	const char *base = path_split(p, parent);
	_cleanup_close_ int pfd = mkdir_p(&r, parent, err);
	if (pfd < 0)
		return -1;
	_cleanup_close_ int f = -1;
	{
		_cleanup_fsids_ struct fsids ids = {0};
		if (fsids_enter(&r, &ids, err) < 0)
			return -1;
		f = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (f < 0 && errno != EEXIST)
		return path_fail(err, sb, "write", p, errno);
	if (f < 0) {
		int g = open_existing_for_write(&r, p, mode, err);
		if (g < 0)
			return -1;
		*fd = g;
		return 0;
	}
	/* chown before chmod: chown clears set-id bits. */
	int r_ids = sandbox_user_ids(&r, err);
	if (r_ids < 0 || fchown(f, r.huid, r.hgid) < 0 || fchmod(f, mode) < 0) {
		int e = errno;
		unlinkat(pfd, base, 0);
		return r_ids < 0 ? -1 : path_fail(err, sb, "write", p, e);
	}
	*fd = steal_fd(&f);
	return 0;
}

static int stat_at(const struct sbx_root *r, const char *p, bool follow, sl_fileinfo *out,
		   sl_err *err)
{
	struct stat st;
	if (!strcmp(p, "/") || follow) {
		_cleanup_close_ int fd = resolve(r, p, O_PATH, 0);
		if (fd < 0 || fstat(fd, &st) < 0)
			return path_fail(err, r->sb, "stat", p, errno);
		const char *slash = strrchr(p, '/');
		info_fill(r->sb, p, slash[1] ? slash + 1 : "/", &st, out);
		return 0;
	}
	const char *base;
	_cleanup_close_ int pfd = open_parent(r, p, &base, "stat", err);
	if (pfd < 0)
		return -1;
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return path_fail(err, r->sb, "stat", p, errno);
	info_fill(r->sb, p, base, &st, out);
	if (S_ISLNK(st.st_mode))
		info_target(pfd, base, out);
	return 0;
}

int sbxfs_stat(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_fileinfo *out, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	return stat_at(&r, p, false, out, err);
}

int sbxfs_stat_follow(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_fileinfo *out,
		      sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	return stat_at(&r, p, true, out, err);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct names {
	char **v;
	size_t n, cap;
} names;

static void names_free(names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

/* The names in the directory open at DFD (not . and ..), sorted; at most LIST_MAX. */
static int list_names(const struct sbx_root *r, int dfd, const char *p, names *ns, sl_err *err)
{
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0)
		return sl_sysfail(err, "dup directory fd");
	_cleanup_closedir_ DIR *d = fdopendir(dup);
	if (!d) {
		close(dup);
		return path_fail(err, r->sb, "list", p, errno);
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				return path_fail(err, r->sb, "list", p, errno);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (ns->n == LIST_MAX)
			return sl_fail(err, SL_TOOLARGE, 0,
				       "list %s in sandbox %s: more than %d entries", p, r->sb->id,
				       LIST_MAX);
		if (ns->n == ns->cap) {
			size_t nc = ns->cap ? ns->cap * 2 : 16;
			char **nv = realloc(ns->v, nc * sizeof(*nv));
			if (!nv)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", p);
			ns->v = nv;
			ns->cap = nc;
		}
		if (!(ns->v[ns->n] = strdup(de->d_name)))
			return sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", p);
		ns->n++;
	}
	if (ns->n)
		qsort(ns->v, ns->n, sizeof(*ns->v), cmp_name);
	return 0;
}

/* Entries of the directory open at dfd, each stat'ed as itself (links not followed) and
 * given to FN in name order. Only the names are held (a listing costs what it lists), and
 * one sl_fileinfo, on the heap: FN may list again, a level deeper. */
static int list_dir(const struct sbx_root *r, int dfd, const char *p, sbxfs_entry_fn fn, void *arg,
		    sl_err *err)
{
	names ns = {0};
	_cleanup_free_ sl_fileinfo *fi = malloc(sizeof(*fi));
	int rc =
	    fi ? list_names(r, dfd, p, &ns, err) : sl_fail(err, SL_INTERNAL, ENOMEM, "list %s", p);
	bool root = !strcmp(p, "/");
	for (size_t i = 0; rc == 0 && i < ns.n; i++) {
		struct stat st;
		if (fstatat(dfd, ns.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed since readdir */
		char ep[PATH_MAX + NAME_MAX + 2];
		snprintf(ep, sizeof(ep), "%s/%s", root ? "" : p, ns.v[i]);
		info_fill(r->sb, ep, ns.v[i], &st, fi);
		if (S_ISLNK(st.st_mode))
			info_target(dfd, ns.v[i], fi);
		rc = fn(arg, fi, err);
	}
	names_free(&ns);
	return rc;
}

int sbxfs_list(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sbxfs_entry_fn fn, void *arg,
	       sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	/* The directory named is followed if it is a symlink, as `ls link/` would. */
	_cleanup_close_ int dfd = resolve(&r, p, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return path_fail(err, sb, "list", p, errno);
	return list_dir(&r, dfd, p, fn, arg, err);
}

int sbxfs_watch_dir(sl_ctx *ctx, const sl_sandbox *sb, const char *path, int ino, uint32_t mask,
		    bool allow_network, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	_cleanup_close_ int dfd = resolve(&r, p, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return path_fail(err, sb, "open directory", p, errno);
	struct statfs sf;
	const char *kind = NULL;
	if (!allow_network && fstatfs(dfd, &sf) == 0 &&
	    (kind = fs_network_kind((unsigned long)sf.f_type)))
		return sl_fail(err, SL_INVALID, 0,
			       "sandbox %s: watch %s: it is on a network filesystem (%s), where "
			       "changes made elsewhere raise no event; allow network mounts to "
			       "watch it anyway",
			       sb->id, p, kind);
	/* inotify takes a path: the fd's, so what was resolved inside the root is watched. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", dfd);
	int wd = inotify_add_watch(ino, self, mask);
	if (wd < 0)
		return sl_fail(err, errno == ENOSPC ? SL_EXHAUSTED : SL_INTERNAL, errno,
			       "sandbox %s: watch %s", sb->id, p);
	return wd;
}

int sbxfs_mkdir(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	int fd = mkdir_p(&r, p, err);
	if (fd < 0) {
		/* mkdir -p on an existing file: say so plainly. */
		if (err->errnum == ENOTDIR) {
			struct stat st;
			_cleanup_close_ int f = resolve(&r, p, O_PATH, 0);
			if (f >= 0 && fstat(f, &st) == 0 && !S_ISDIR(st.st_mode))
				return sl_fail(err, SL_CONFLICT, 0,
					       "mkdir %s in sandbox %s: it exists and is not a "
					       "directory",
					       p, sb->id);
		}
		return -1;
	}
	close(fd);
	return 0;
}

/* A recursive remove of base under pfd. fs_remove_tree walks with *at() calls from the
 * path it is given; /proc/self/fd/N/base starts that walk at exactly our parent fd, so
 * nothing in the sandbox can steer it. Its messages name that path: put ours back. */
static int remove_tree(const struct sbx_root *r, int pfd, const char *base, const char *p,
		       sl_err *err)
{
	char fdpath[64 + NAME_MAX];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d/%s", pfd, base);
	if (fs_remove_tree(fdpath, err) == 0)
		return 0;
	char msg[sizeof(err->msg)];
	const char *rest = strstr(err->msg, fdpath);
	if (rest) {
		size_t pre = (size_t)(rest - err->msg);
		snprintf(msg, sizeof(msg), "%.*s%s in sandbox %s%s", (int)pre, err->msg, p,
			 r->sb->id, rest + strlen(fdpath));
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return -1;
}

int sbxfs_remove(sl_ctx *ctx, const sl_sandbox *sb, const char *path, bool recursive, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0)
		return -1;
	if (!strcmp(p, "/"))
		return sl_fail(err, SL_INVALID, 0,
			       "remove / in sandbox %s: the root cannot be removed", sb->id);
	if (root_open(sb, &r, err) < 0)
		return -1;
	const char *base;
	_cleanup_close_ int pfd = open_parent(&r, p, &base, "remove", err);
	if (pfd < 0)
		return -1;
	struct statx stx;
	if (statx(pfd, base, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &stx) < 0)
		return path_fail(err, sb, "remove", p, errno);
	if (!S_ISDIR(stx.stx_mode)) {
		if (unlinkat(pfd, base, 0) < 0)
			return path_fail(err, sb, "remove", p, errno);
		return 0;
	}
	if (fs_stx_mount_root(&stx))
		return sl_fail(err, SL_CONFLICT, 0,
			       "remove %s in sandbox %s: it is a mount point inside the sandbox", p,
			       sb->id);
	if (!recursive) {
		if (unlinkat(pfd, base, AT_REMOVEDIR) == 0)
			return 0;
		if (errno == ENOTEMPTY || errno == EEXIST)
			return sl_fail(err, SL_CONFLICT, 0,
				       "remove %s in sandbox %s: directory not empty (remove it "
				       "recursively)",
				       p, sb->id);
		return path_fail(err, sb, "remove", p, errno);
	}
	return remove_tree(&r, pfd, base, p, err);
}

int sbxfs_move(sl_ctx *ctx, const sl_sandbox *sb, const char *from, const char *to, sl_err *err)
{
	char f[PATH_MAX], t[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, from, f, err) < 0 || path_norm(sb, to, t, err) < 0)
		return -1;
	if (!strcmp(f, "/") || !strcmp(t, "/"))
		return sl_fail(err, SL_INVALID, 0,
			       "move %s to %s in sandbox %s: the root cannot be "
			       "moved or replaced",
			       f, t, sb->id);
	if (root_open(sb, &r, err) < 0)
		return -1;
	const char *fb, *tb;
	_cleanup_close_ int fp = open_parent(&r, f, &fb, "move", err);
	if (fp < 0)
		return -1;
	struct stat st;
	if (fstatat(fp, fb, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return path_fail(err, sb, "move", f, errno);
	_cleanup_close_ int tp = open_parent(&r, t, &tb, "move to", err);
	if (tp < 0)
		return -1;
	if (renameat(fp, fb, tp, tb) == 0)
		return 0;
	switch (errno) {
	case EINVAL:
		return sl_fail(err, SL_INVALID, 0,
			       "move %s to %s in sandbox %s: a directory cannot move into itself",
			       f, t, sb->id);
	case EXDEV:
		return sl_fail(err, SL_INVALID, 0,
			       "move %s to %s in sandbox %s: they are on different filesystems "
			       "(or the directory comes from the image); copy it instead",
			       f, t, sb->id);
	case ENOTEMPTY:
	case EEXIST:
		return sl_fail(err, SL_CONFLICT, 0,
			       "move %s to %s in sandbox %s: the destination is a non-empty "
			       "directory",
			       f, t, sb->id);
	default: {
		char what[PATH_MAX + 8];
		snprintf(what, sizeof(what), "%s to", f);
		return path_fail(err, sb, "move", what, errno);
	}
	}
}

/* owner: "user", "user:group", ":group", "uid" or "uid:gid" -> host ids (-1: keep). */
static int parse_owner(const struct sbx_root *r, const char *owner, uid_t *huid, gid_t *hgid,
		       sl_err *err)
{
	*huid = (uid_t)-1;
	*hgid = (gid_t)-1;
	const char *colon = strchr(owner, ':');
	size_t ul = colon ? (size_t)(colon - owner) : strlen(owner);
	uint32_t id;
	if (ul == 0 && (!colon || !colon[1]))
		return sl_fail(err, SL_INVALID, 0, "owner \"%s\": give user, user:group or :group",
			       owner);
	if (ul) {
		if (lookup_user(r, owner, ul, &id, NULL, err) < 0)
			return -1;
		*huid = r->sb->uid_base + id;
	}
	if (colon && colon[1]) {
		if (lookup_group(r, colon + 1, &id, err) < 0)
			return -1;
		*hgid = r->sb->uid_base + id;
	}
	return 0;
}

int sbxfs_chmod(sl_ctx *ctx, const sl_sandbox *sb, const char *path, uint32_t mode,
		const char *owner, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	uid_t u = (uid_t)-1;
	gid_t g = (gid_t)-1;
	if (owner && *owner && parse_owner(&r, owner, &u, &g, err) < 0)
		return -1;
	_cleanup_close_ int fd = resolve(&r, p, O_PATH, 0);
	if (fd < 0)
		return path_fail(err, sb, "chmod", p, errno);
	if (on_kernel_fs(fd))
		return kernel_fs_fail(err, sb, "chmod", p);
	/* Owner first: chown clears the set-id bits the mode may ask for. */
	if ((u != (uid_t)-1 || g != (gid_t)-1) && fchownat(fd, "", u, g, AT_EMPTY_PATH) < 0)
		return path_fail(err, sb, "chown", p, errno);
	/* An O_PATH fd cannot be fchmod()ed; its /proc/self/fd link names the same inode. */
	char fdpath[64];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (chmod(fdpath, mode & 07777) < 0)
		return path_fail(err, sb, "chmod", p, errno);
	return 0;
}

int sbxfs_symlink(sl_ctx *ctx, const sl_sandbox *sb, const char *target, const char *path,
		  sl_err *err)
{
	char p[PATH_MAX], parent[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	if (!target || !*target || strlen(target) >= PATH_MAX)
		return sl_fail(err, SL_INVALID, 0, "symlink target: give 1-%d bytes", PATH_MAX - 1);
	if (path_norm(sb, path, p, err) < 0)
		return -1;
	if (!strcmp(p, "/"))
		return path_fail(err, sb, "symlink", p, EEXIST);
	if (root_open(sb, &r, err) < 0)
		return -1;
	const char *base = path_split(p, parent);
	_cleanup_close_ int pfd = mkdir_p(&r, parent, err);
	if (pfd < 0)
		return -1;
	int made;
	{
		_cleanup_fsids_ struct fsids ids = {0};
		if (fsids_enter(&r, &ids, err) < 0)
			return -1;
		made = symlinkat(target, pfd, base);
	}
	if (made < 0)
		return path_fail(err, sb, "symlink", p, errno);
	if (fchownat(pfd, base, r.huid, r.hgid, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		unlinkat(pfd, base, 0);
		return path_fail(err, sb, "symlink", p, e);
	}
	return 0;
}

int sbxfs_read_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, size_t max, char **data,
		    size_t *len, sl_err *err)
{
	int fd;
	uint64_t size;
	*data = NULL;
	*len = 0;
	if (sbxfs_open_read(ctx, sb, path, &fd, &size, err) < 0)
		return -1;
	_cleanup_close_ int f = fd;
	if (size > max)
		return sl_fail(err, SL_TOOLARGE, 0, "read %s in sandbox %s: %llu bytes, over %zu",
			       path, sb->id, (unsigned long long)size, max);
	/* The size may change while we read: read at most max + 1 bytes, whatever fstat
	 * said, and refuse when that last byte arrives. */
	if (max > SIZE_MAX - 2)
		max = SIZE_MAX - 2;
	/* Room for the size fstat gave, the NUL, and the byte that proves EOF (so a file
	 * that did not grow is read without a realloc). */
	size_t cap = (size_t)size + 2, n = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", path);
	for (;;) {
		if (n == cap - 1) {
			size_t nc = cap < 4096 ? 4096 : cap * 2;
			if (nc > max + 2)
				nc = max + 2;
			char *nb = nc > cap ? realloc(buf, nc) : NULL;
			if (!nb)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", path);
			buf = nb;
			cap = nc;
		}
		ssize_t r = read(f, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sbxfs_io_fail(sb, "read", path, errno, err);
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max)
			return sl_fail(err, SL_TOOLARGE, 0, "read %s in sandbox %s: over %zu bytes",
				       path, sb->id, max);
	}
	buf[n] = '\0';
	*data = steal_ptr(&buf);
	*len = n;
	return 0;
}

int sbxfs_write_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, const void *data,
		     size_t len, uint32_t mode, sl_err *err)
{
	int fd;
	if (sbxfs_open_write(ctx, sb, path, mode, &fd, err) < 0)
		return -1;
	const char *p = data;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			return sbxfs_io_fail(sb, "write", path, e, err);
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 && errno != EINTR)
		return sbxfs_io_fail(sb, "write", path, errno, err);
	return 0;
}

/* ---- extended attributes: a namespace of user.* as an object of strings ---- */

#define XATTR_LIST_MAX_BYTES 65536 /* the kernel's own bound for a listing */

/* The names of the file open at FD whose name starts with "user." NS, as a list of
 * NUL-terminated names (*buf, *len), read through /proc/self/fd so an O_PATH fd works. */
static int xattr_names(const sl_sandbox *sb, int fd, const char *path, char **buf, ssize_t *len,
		       sl_err *err)
{
	char fp[64];
	snprintf(fp, sizeof(fp), "/proc/self/fd/%d", fd);
	*buf = malloc(XATTR_LIST_MAX_BYTES);
	if (!*buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list attributes of %s", path);
	*len = listxattr(fp, *buf, XATTR_LIST_MAX_BYTES);
	if (*len < 0 && (errno == ENOTSUP || errno == EPERM))
		*len = 0; /* no user attributes here (a special file, a filesystem without) */
	if (*len < 0)
		return path_fail(err, sb, "list attributes of", path, errno);
	return 0;
}

static bool xattr_in_ns(const char *name, const char *ns)
{
	return !strncmp(name, "user.", 5) && !strncmp(name + 5, ns, strlen(ns));
}

int sbxfs_xattrs_get(sl_ctx *ctx, const sl_sandbox *sb, const char *path, const char *ns,
		     cJSON **out, sl_err *err)
{
	char p[PATH_MAX];
	_cleanup_root_ struct sbx_root r = {.fd = -1};
	*out = NULL;
	if (path_norm(sb, path, p, err) < 0 || root_open(sb, &r, err) < 0)
		return -1;
	_cleanup_close_ int fd = resolve(&r, p, O_PATH | O_NOFOLLOW, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return path_fail(err, sb, "read attributes of", p, errno);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read attributes of %s", p);
	*out = o;
	/* A symlink has no user attributes, and its fd's magic link would be followed. */
	if (S_ISLNK(st.st_mode) || on_kernel_fs(fd))
		return 0;
	_cleanup_free_ char *xnames = NULL;
	ssize_t len;
	if (xattr_names(sb, fd, p, &xnames, &len, err) < 0)
		return -1;
	char fp[64], val[XATTR_SIZE_MAX + 1];
	snprintf(fp, sizeof(fp), "/proc/self/fd/%d", fd);
	for (char *n = xnames; n < xnames + len; n += strlen(n) + 1) {
		if (!xattr_in_ns(n, ns))
			continue;
		ssize_t vl = getxattr(fp, n, val, sizeof(val) - 1);
		if (vl < 0)
			continue; /* removed since the listing */
		val[vl] = '\0';
		cJSON_AddStringToObject(o, n + 5 + strlen(ns), val);
	}
	return 0;
}

int sbxfs_fd_xattrs_set(const sl_sandbox *sb, int fd, const char *path, const char *ns,
			const cJSON *attrs, sl_err *err)
{
	char fp[64], name[XATTR_NAME_MAX + 1];
	snprintf(fp, sizeof(fp), "/proc/self/fd/%d", fd);
	_cleanup_free_ char *xnames = NULL;
	ssize_t len;
	if (xattr_names(sb, fd, path, &xnames, &len, err) < 0)
		return -1;
	for (char *n = xnames; n < xnames + len; n += strlen(n) + 1)
		if (xattr_in_ns(n, ns) && removexattr(fp, n) < 0 && errno != ENODATA)
			return path_fail(err, sb, "clear attributes of", path, errno);
	const cJSON *a;
	cJSON_ArrayForEach(a, attrs)
	{
		if (!cJSON_IsString(a))
			return sl_fail(err, SL_INVALID, 0, "attribute %s of %s: not text",
				       a->string, path);
		if ((size_t)snprintf(name, sizeof(name), "user.%s%s", ns, a->string) >=
		    sizeof(name))
			return sl_fail(err, SL_INVALID, 0, "attribute %.64s… of %s: name too long",
				       a->string, path);
		if (setxattr(fp, name, a->valuestring, strlen(a->valuestring), 0) == 0)
			continue;
		if (errno == ENOTSUP)
			return sl_fail(err, SL_INVALID, 0,
				       "set attribute %s of %s in sandbox %s: the filesystem has "
				       "no user extended attributes",
				       a->string, path, sb->id);
		if (errno == E2BIG || errno == ERANGE || errno == ENOSPC)
			return sl_fail(err, SL_TOOLARGE, errno,
				       "set attribute %s of %s in sandbox %s: more than the "
				       "filesystem holds for one file",
				       a->string, path, sb->id);
		return path_fail(err, sb, "set attributes of", path, errno);
	}
	return 0;
}

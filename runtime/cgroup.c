/* cgroup.c — the cgroup driver: version detection, name checks, dispatch to the v1/v2
 * backends, and the file, directory and kill-loop helpers both backends share. */
#include "cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "cleanup.h"
#include "log.h"

const char *const cg_v1_names[CG_V1_NCTRL] = {"cpu", "cpuacct", "memory", "pids", "freezer"};

#define CG_NAME_MAX 200

static char *cg_join(const char *dir, const char *sub)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, sub) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

int cg_dir(const sl_cgroup *cg, int ctrl, const char *name, char *buf, size_t len, sl_err *err)
{
	const char *base = cg->version == 1 ? cg->v1_dir[ctrl] : cg->root;
	int n = snprintf(buf, len, "%s/%s", base, name);
	if (n < 0 || (size_t)n >= len)
		return sl_fail(err, SL_INVALID, ENAMETOOLONG, "cgroup %s under %s", name, base);
	return 0;
}

bool cg_v1_first(const sl_cgroup *cg, int ctrl)
{
	for (int j = 0; j < ctrl; j++)
		if (strcmp(cg->v1_dir[j], cg->v1_dir[ctrl]) == 0)
			return false;
	return true;
}

/* Names end up in paths under the root: only plain components, so none can climb out. */
static int check_name(const char *name, sl_err *err)
{
	if (!name || !*name)
		return sl_fail(err, SL_INVALID, 0, "cgroup name is empty");
	size_t len = strlen(name), depth = 1;
	if (len > CG_NAME_MAX)
		return sl_fail(err, SL_INVALID, 0, "cgroup name \"%.40s...\" is longer than %d",
			       name, CG_NAME_MAX);
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/") !=
	    len)
		return sl_fail(err, SL_INVALID, 0,
			       "cgroup name \"%s\" has characters other than A-Z a-z 0-9 _ . - /",
			       name);
	for (const char *c = name; *c; c = strchr(c, '/') ? strchr(c, '/') + 1 : c + strlen(c)) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (c[0] == '.' && (n == 1 || (n == 2 && c[1] == '.'))))
			return sl_fail(err, SL_INVALID, 0,
				       "cgroup name \"%s\" has an empty, \".\" or \"..\" component",
				       name);
		if (c[n] == '/' && c[n + 1] == '\0')
			return sl_fail(err, SL_INVALID, 0, "cgroup name \"%s\" ends with \"/\"",
				       name);
		if (c[n] == '/' && ++depth > CG_MAX_DEPTH)
			return sl_fail(err, SL_INVALID, 0,
				       "cgroup name \"%s\" is deeper than %d levels", name,
				       CG_MAX_DEPTH);
	}
	return 0;
}

static bool on_fs(const char *path, unsigned long magic)
{
	struct statfs sfs;
	return statfs(path, &sfs) == 0 && (unsigned long)sfs.f_type == magic;
}

bool cg_dir_exists(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A v1 hierarchy for CTRL: ROOT/CTRL, or a comma-joined mount dir such as "cpu,cpuacct". */
static int find_v1_dir(const char *root, const char *ctrl, char **out, sl_err *err)
{
	_cleanup_free_ char *direct = cg_join(root, ctrl);
	if (!direct)
		return sl_sysfail(err, "cgroup v1 at %s", root);
	/* ROOT is resolved already: a real dir under it needs no realpath (a readlink per
	 * component, five times per process start). A symlink (cpu -> cpu,cpuacct) does. */
	struct stat st;
	if (lstat(direct, &st) == 0 && S_ISDIR(st.st_mode)) {
		*out = steal_ptr(&direct);
		return 0;
	}
	if (cg_dir_exists(direct)) {
		*out = realpath(direct, NULL);
		return *out ? 0 : sl_sysfail(err, "cgroup v1: resolve %s", direct);
	}
	_cleanup_closedir_ DIR *d = opendir(root);
	if (!d)
		return sl_sysfail(err, "cgroup v1: list %s", root);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strchr(de->d_name, ','))
			continue;
		_cleanup_free_ char *names = strdup(de->d_name);
		if (!names)
			return sl_sysfail(err, "cgroup v1 at %s", root);
		char *save = NULL;
		for (char *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (strcmp(t, ctrl) != 0)
				continue;
			_cleanup_free_ char *p = cg_join(root, de->d_name);
			if (p && cg_dir_exists(p) && (*out = realpath(p, NULL)))
				return 0;
		}
	}
	return sl_fail(err, SL_NOTIMPL, 0,
		       "cgroup v1 at %s: no hierarchy for the %s controller (looked for %s/%s and "
		       "comma-joined names like %s/cpu,cpuacct); mount it or use cgroup v2",
		       root, ctrl, root, ctrl, root);
}

static int open_v1(sl_cgroup *cg, sl_err *err)
{
	int real = 0;
	for (int i = 0; i < CG_V1_NCTRL; i++) {
		if (find_v1_dir(cg->root, cg_v1_names[i], &cg->v1_dir[i], err) < 0)
			return -1;
		real += on_fs(cg->v1_dir[i], CGROUP_SUPER_MAGIC);
	}
	if (real != 0 && real != CG_V1_NCTRL)
		return sl_fail(err, SL_NOTIMPL, 0,
			       "cgroup v1 at %s: some controller dirs are cgroup mounts and some "
			       "are not; mount every one of cpu, cpuacct, memory, pids, freezer",
			       cg->root);
	cg->fake = real == 0;
	cg->version = 1;
	cg->ops = &cg_v1_backend;
	return 0;
}

static int open_v2(sl_cgroup *cg, sl_err *err)
{
	_cleanup_free_ char *ctl = NULL;
	if (cg_read(cg->root, "cgroup.controllers", &ctl, err) < 0)
		return sl_wrap(err, "cgroup v2 at %s", cg->root);
	static const char *const need[] = {"cpu", "memory", "pids"};
	for (size_t i = 0; i < 3; i++) {
		bool found = false;
		char *save = NULL;
		_cleanup_free_ char *copy = strdup(ctl);
		if (!copy)
			return sl_sysfail(err, "cgroup v2 at %s", cg->root);
		for (char *t = strtok_r(copy, " \n", &save); t && !found;
		     t = strtok_r(NULL, " \n", &save))
			found = strcmp(t, need[i]) == 0;
		if (!found)
			return sl_fail(err, SL_NOTIMPL, 0,
				       "cgroup v2 at %s: the %s controller is not available here "
				       "(cgroup.controllers: \"%.*s\"); it must be enabled for "
				       "this cgroup by its parent",
				       cg->root, need[i], (int)strcspn(ctl, "\n"), ctl);
	}
	cg->fake = !on_fs(cg->root, CGROUP2_SUPER_MAGIC);
	cg->version = 2;
	cg->ops = &cg_v2_backend;
	return 0;
}

int cgroup_open(const char *root, sl_cgroup **out, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (!root)
		root = "/sys/fs/cgroup";
	if (!cg_dir_exists(root))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup root %s is not a directory", root);
	sl_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg || !(cg->root = realpath(root, NULL))) {
		cgroup_close(cg);
		return sl_sysfail(err, "cgroup root %s", root);
	}
	_cleanup_free_ char *probe = cg_join(cg->root, "cgroup.controllers");
	struct stat st;
	bool v2 = on_fs(cg->root, CGROUP2_SUPER_MAGIC) || (probe && stat(probe, &st) == 0);
	if ((v2 ? open_v2(cg, err) : open_v1(cg, err)) < 0) {
		cgroup_close(cg);
		return -1;
	}
	*out = cg;
	return 0;
}

void cgroup_close(sl_cgroup *cg)
{
	if (!cg)
		return;
	for (int i = 0; i < CG_V1_NCTRL; i++)
		free(cg->v1_dir[i]);
	free(cg->root);
	free(cg);
}

int cgroup_version(const sl_cgroup *cg)
{
	return cg->version;
}

int cgroup_create(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	static const sl_limits none = {0};
	if (check_name(name, err) < 0)
		return -1;
	if (lim && lim->cpu_millicores > UINT64_MAX / 100)
		return sl_fail(err, SL_INVALID, 0, "cgroup %s: cpu limit %" PRIu64 "m is too large",
			       name, lim->cpu_millicores);
	return cg->ops->create(cg, name, lim ? lim : &none, err);
}

int cgroup_attach(sl_cgroup *cg, const char *name, pid_t pid, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (check_name(name, err) < 0)
		return -1;
	if (pid <= 0)
		return sl_fail(err, SL_INVALID, 0, "cgroup %s: cannot attach pid %d", name,
			       (int)pid);
	return cg->ops->attach(cg, name, pid, err);
}

int cgroup_join_files(sl_cgroup *cg, const char *name, char *buf, size_t buflen, const char **files,
		      size_t max, size_t *n, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch;
	if (check_name(name, err) < 0)
		return -1;
	*n = 0;
	size_t used = 0;
	/* v1: `tasks`, which moves only the writing thread (the whole of a one-thread
	 * child). A cgroup.procs write takes the global threadgroup rwsem for writing,
	 * and that waits for an RCU grace period whenever no other writer came just
	 * before: 7-15 ms per launch here, against ~0.03 ms for each `tasks` write. */
	const char *file = cg->version == 1 ? "tasks" : "cgroup.procs";
	for (int i = 0; i < (cg->version == 1 ? CG_V1_NCTRL : 1); i++) {
		if (cg->version == 1 && !cg_v1_first(cg, i))
			continue; /* a hierarchy shared with an earlier controller */
		char dir[PATH_MAX];
		int len;
		if (*n >= max || cg_dir(cg, i, name, dir, sizeof(dir), err) < 0 ||
		    (len = snprintf(buf + used, buflen - used, "%s/%s", dir, file)) < 0 ||
		    (size_t)len >= buflen - used)
			return err->kind
				   ? -1
				   : sl_fail(err, SL_INTERNAL, ERANGE,
					     "cgroup %s: too many hierarchies or too long a path",
					     name);
		files[(*n)++] = buf + used;
		used += (size_t)len + 1;
	}
	return 0;
}

int cgroup_update(sl_cgroup *cg, const char *name, const sl_limits *lim, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (check_name(name, err) < 0)
		return -1;
	if (lim->cpu_millicores > UINT64_MAX / 100)
		return sl_fail(err, SL_INVALID, 0, "cgroup %s: cpu limit %" PRIu64 "m is too large",
			       name, lim->cpu_millicores);
	char buf[PATH_MAX];
	if (cgroup_path(cg, "memory", name, buf, sizeof(buf)) < 0 || !cg_dir_exists(buf))
		return sl_fail(err, SL_NOTFOUND, 0, "cgroup %s: not found", name);
	return cg->ops->set_limits(cg, name, lim, true, err);
}

int cgroup_freeze(sl_cgroup *cg, const char *name, bool frozen, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (check_name(name, err) < 0)
		return -1;
	return cg->ops->freeze(cg, name, frozen, err);
}

static int usage(sl_cgroup *cg, const char *name, bool all, sl_cgusage *out, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (check_name(name, err) < 0)
		return -1;
	memset(out, 0, sizeof(*out));
	return cg->ops->usage(cg, name, all, out, err);
}

int cgroup_usage(sl_cgroup *cg, const char *name, sl_cgusage *out, sl_err *err)
{
	return usage(cg, name, true, out, err);
}

int cgroup_usage_basic(sl_cgroup *cg, const char *name, sl_cgusage *out, sl_err *err)
{
	return usage(cg, name, false, out, err);
}

int cgroup_procs(sl_cgroup *cg, const char *name, pid_t **pids, size_t *n, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	*pids = NULL;
	*n = 0;
	if (check_name(name, err) < 0)
		return -1;
	return cg->ops->procs(cg, name, pids, n, err);
}

int cgroup_rename(sl_cgroup *cg, const char *from, const char *to, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch;
	if (check_name(from, err) < 0 || check_name(to, err) < 0)
		return -1;
	if (!cg->ops->rename)
		return sl_fail(err, SL_NOTIMPL, 0, "cgroup %s: cgroup v2 cannot rename", from);
	return cg->ops->rename(cg, from, to, err);
}

int cgroup_destroy(sl_cgroup *cg, const char *name, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch; /* the helpers read back errnum and kind */
	if (check_name(name, err) < 0)
		return -1;
	return cg->ops->destroy(cg, name, err);
}

int cgroup_oom_kills(sl_cgroup *cg, const char *name, uint64_t *out, sl_err *err)
{
	char dir[PATH_MAX];
	bool found = false;
	*out = 0;
	if (cgroup_path(cg, "memory", name, dir, sizeof(dir)) < 0)
		return sl_sysfail(err, "cgroup %s: memory path", name);
	const char *file = cg->version == 1 ? "memory.oom_control" : "memory.events";
	return cg_read_key(dir, file, "oom_kill", out, &found, err);
}

int cgroup_path(const sl_cgroup *cg, const char *controller, const char *name, char *buf,
		size_t len)
{
	int i = 0;
	if (check_name(name, NULL) < 0) {
		errno = EINVAL;
		return -1;
	}
	while (cg->version == 1 && i < CG_V1_NCTRL &&
	       (!controller || strcmp(controller, cg_v1_names[i]) != 0))
		i++;
	if (i == CG_V1_NCTRL) {
		errno = EINVAL;
		return -1;
	}
	if (cg_dir(cg, i, name, buf, len, NULL) < 0) {
		errno = ERANGE;
		return -1;
	}
	return 0;
}

/* ---- files ---- */

/* The kernel answers a bad value with EINVAL and a vanished pid with ESRCH. */
static sl_kind write_kind(int e)
{
	if (e == EINVAL)
		return SL_INVALID;
	return e == ESRCH ? SL_NOTFOUND : SL_INTERNAL;
}

int cg_write(const sl_cgroup *cg, const char *dir, const char *file, const char *val, sl_err *err)
{
	_cleanup_free_ char *path = cg_join(dir, file);
	if (!path)
		return sl_sysfail(err, "write %s/%s", dir, file);
	/* cgroupfs never creates files; a fake tree has to, or nothing could be asserted */
	int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (cg->fake ? O_CREAT | O_TRUNC : 0);
	_cleanup_close_ int fd = -1;
	do
		fd = open(path, flags, 0644);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno,
			       "open %s to write \"%s\"", path, val);
	size_t len = strlen(val);
	ssize_t w;
	do
		w = write(fd, val, len);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return sl_fail(err, write_kind(errno), errno, "write \"%s\" to %s", val, path);
	if ((size_t)w != len)
		return sl_fail(err, SL_INTERNAL, EIO,
			       "write \"%s\" to %s: short write (%zd of %zu)", val, path, w, len);
	return 0;
}

/* ONE_SHOW: FILE is a one-value file (no seq_start on the kernel side: it is printed
 * whole by one show), so a read that does not fill the buffer has all of it and the
 * read that would say EOF is saved. Not for cgroup.procs, which is printed in pieces. */
static int cg_read_impl(const char *dir, const char *file, bool one_show, char **out, sl_err *err)
{
	_cleanup_free_ char *path = cg_join(dir, file);
	if (!path)
		return sl_sysfail(err, "read %s/%s", dir, file);
	_cleanup_close_ int fd = -1;
	do
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno, "open %s",
			       path);
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return sl_sysfail(err, "read %s", path);
	for (;;) {
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return sl_sysfail(err, "read %s", path);
			buf = nb;
			cap *= 2;
		}
		size_t want = cap - len - 1;
		ssize_t r = read(fd, buf + len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sl_sysfail(err, "read %s", path);
		if (r == 0)
			break;
		len += (size_t)r;
		if (one_show && (size_t)r < want)
			break;
	}
	buf[len] = '\0';
	*out = steal_ptr(&buf);
	return 0;
}

int cg_read(const char *dir, const char *file, char **out, sl_err *err)
{
	return cg_read_impl(dir, file, false, out, err);
}

static int parse_u64(const char *s, uint64_t *v)
{
	if (strncmp(s, "max", 3) == 0 && (s[3] == '\0' || s[3] == '\n')) {
		*v = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || (*end != '\0' && *end != '\n'))
		return -1;
	*v = x;
	return 0;
}

int cg_read_u64(const char *dir, const char *file, uint64_t *v, sl_err *err)
{
	_cleanup_free_ char *s = NULL;
	if (cg_read_impl(dir, file, true, &s, err) < 0)
		return -1;
	if (parse_u64(s, v) < 0)
		return sl_fail(err, SL_INTERNAL, 0, "%s/%s: \"%.40s\" is not a number", dir, file,
			       s);
	return 0;
}

int cg_read_key(const char *dir, const char *file, const char *key, uint64_t *v, bool *found,
		sl_err *err)
{
	_cleanup_free_ char *s = NULL;
	if (cg_read_impl(dir, file, true, &s, err) < 0)
		return -1;
	size_t klen = strlen(key);
	*v = 0;
	*found = false;
	for (char *line = s; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
			continue;
		if (parse_u64(line + klen + 1, v) < 0)
			return sl_fail(err, SL_INTERNAL, 0, "%s/%s: bad value for %s", dir, file,
				       key);
		*found = true;
		return 0;
	}
	return 0;
}

bool cg_has(const sl_cgroup *cg, const char *dir, const char *file)
{
	if (cg->fake)
		return true;
	_cleanup_free_ char *path = cg_join(dir, file);
	return path && access(path, F_OK) == 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

int cg_read_pids(const char *dir, pid_t **pids, size_t *n, sl_err *err)
{
	_cleanup_free_ char *s = NULL;
	*pids = NULL;
	*n = 0;
	if (cg_read(dir, "cgroup.procs", &s, err) < 0)
		return -1;
	size_t cap = 0, cnt = 0;
	_cleanup_free_ pid_t *v = NULL;
	for (char *p = s; *p;) {
		char *end;
		long x = strtol(p, &end, 10);
		if (end == p || x <= 0 || x > INT_MAX || (*end != '\n' && *end != '\0'))
			return sl_fail(err, SL_INTERNAL, 0, "%s/cgroup.procs: bad line \"%.20s\"",
				       dir, p);
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			pid_t *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				return sl_sysfail(err, "%s/cgroup.procs", dir);
			v = nv;
		}
		v[cnt++] = (pid_t)x;
		p = *end ? end + 1 : end;
	}
	if (v)
		qsort(v, cnt, sizeof(*v), cmp_pid);
	*pids = steal_ptr(&v);
	*n = cnt;
	return 0;
}

/* ---- directories ---- */

/* Cgroups sandlot makes are root's alone: their names are sandbox ids, which no other
 * local user needs to list (and the files show each sandbox's use). */
#define CG_DIR_MODE 0700

int cgroup_make_private(sl_cgroup *cg, const char *name, sl_err *err)
{
	sl_err scratch;
	if (!err)
		err = &scratch;
	if (check_name(name, err) < 0)
		return -1;
	for (int i = 0; i < (cg->version == 1 ? CG_V1_NCTRL : 1); i++) {
		if (cg->version == 1 && !cg_v1_first(cg, i))
			continue;
		char dir[PATH_MAX];
		struct stat st;
		if (cg_dir(cg, i, name, dir, sizeof(dir), err) < 0)
			return -1;
		if (stat(dir, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return sl_sysfail(err, "cgroup %s: stat %s", name, dir);
		}
		if ((st.st_mode & 077) && chmod(dir, CG_DIR_MODE) < 0)
			return sl_sysfail(err, "cgroup %s: make %s private (mode 0700)", name, dir);
	}
	return 0;
}

int cg_mkpath(sl_cgroup *cg, const char *base, const char *name,
	      int (*before)(sl_cgroup *cg, const char *parent, sl_err *err), cg_made *made,
	      sl_err *err)
{
	_cleanup_free_ char *path = cg_join(base, name);
	if (!path)
		return sl_sysfail(err, "cgroup %s", name);
	/* Mostly the parents are there: one mkdir. A missing parent (ENOENT), or a
	 * BEFORE that has to see each parent, takes the walk below. */
	if (!before) {
		if (mkdir(path, CG_DIR_MODE) == 0) {
			if (!(made->dirs[made->n] = strdup(path)))
				return sl_sysfail(err, "cgroup %s", name);
			made->n++;
			return 0;
		}
		if (errno == EEXIST)
			return sl_fail(err, SL_CONFLICT, 0, "cgroup %s: %s already exists", name,
				       path);
	}
	char *rel = path + strlen(base) + 1;
	for (char *c = rel;; c++) {
		bool last = *c == '\0';
		if (*c != '/' && !last)
			continue;
		*c = '\0';
		char *slash = strrchr(path, '/');
		*slash = '\0'; /* PATH is now the parent */
		int rc = before ? before(cg, path, err) : 0;
		*slash = '/';
		if (rc < 0)
			return -1;
		if (mkdir(path, CG_DIR_MODE) == 0) {
			if (!(made->dirs[made->n] = strdup(path)))
				return sl_sysfail(err, "cgroup %s", name);
			made->n++;
		} else if (errno == EEXIST && last) {
			return sl_fail(err, SL_CONFLICT, 0, "cgroup %s: %s already exists", name,
				       path);
		} else if (errno != EEXIST || !cg_dir_exists(path)) {
			return sl_fail(err, SL_INTERNAL, errno == EEXIST ? ENOTDIR : errno,
				       "cgroup %s: mkdir %s", name, path);
		}
		if (last)
			return 0;
		*c = '/';
	}
}

/* Fake trees hold plain files that rmdir would trip over; cgroupfs dirs never need this. */
static void unlink_fake_files(const sl_cgroup *cg, const char *dir)
{
	if (!cg->fake)
		return;
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_type != DT_DIR)
			unlinkat(dirfd(d), de->d_name, 0);
}

void cg_unmake(const sl_cgroup *cg, cg_made *made)
{
	while (made->n > 0) {
		char *dir = made->dirs[--made->n];
		unlink_fake_files(cg, dir);
		if (rmdir(dir) < 0 && errno != ENOENT)
			sl_log(SL_LOG_WARN, "cgroup rollback: rmdir %s: %s", dir, strerror(errno));
		free(dir);
	}
}

void cg_made_free(cg_made *made)
{
	while (made->n > 0)
		free(made->dirs[--made->n]);
}

/* ---- waiting and killing ---- */

void cg_deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static bool cg_expired(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static void cg_nap(void)
{
	struct timespec ts = {0, 500 * 1000};
	nanosleep(&ts, NULL);
}

static bool value_is(const char *dir, const char *file, const char *key, const char *want,
		     sl_err *err)
{
	if (key) {
		uint64_t v;
		bool found;
		return cg_read_key(dir, file, key, &v, &found, err) == 0 && found &&
		       v == strtoull(want, NULL, 10);
	}
	_cleanup_free_ char *s = NULL;
	if (cg_read(dir, file, &s, err) < 0)
		return false;
	s[strcspn(s, "\n")] = '\0';
	return strcmp(s, want) == 0;
}

int cg_wait_for(const char *dir, const char *file, const char *key, const char *want,
		const struct timespec *deadline, sl_err *err)
{
	sl_err rerr = {0};
	while (!value_is(dir, file, key, want, &rerr)) {
		if (rerr.kind != SL_OK) {
			*err = rerr;
			return -1;
		}
		if (cg_expired(deadline))
			return sl_fail(err, SL_TIMEOUT, 0, "%s/%s: still not %s%s%s after %d ms",
				       dir, file, key ? key : "", key ? " " : "", want,
				       CG_FREEZE_MS);
		cg_nap();
	}
	return 0;
}

static int kill_tree(const sl_cgroup *cg, const char *dir, size_t *n, int depth, sl_err *err)
{
	if (cg->fake)
		return 0; /* a fake cgroup.procs lists no members: never signal its pids */
	_cleanup_free_ pid_t *pids = NULL;
	size_t cnt;
	sl_err rerr = {0};
	if (cg_read_pids(dir, &pids, &cnt, &rerr) < 0) {
		if (rerr.kind == SL_NOTFOUND)
			return 0; /* removed under us: nothing left to kill */
		*err = rerr;
		return -1;
	}
	for (size_t i = 0; i < cnt; i++)
		if (kill(pids[i], SIGKILL) < 0 && errno != ESRCH)
			return sl_sysfail(err, "kill pid %d in %s", (int)pids[i], dir);
	*n += cnt;
	if (depth > 64)
		return 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub = cg_join(dir, de->d_name);
		if (!sub || kill_tree(cg, sub, n, depth + 1, err) < 0)
			return sub ? -1 : sl_sysfail(err, "kill %s", dir);
	}
	return 0;
}

int cg_kill_tree(const sl_cgroup *cg, const char *dir, size_t *n, sl_err *err)
{
	*n = 0;
	return kill_tree(cg, dir, n, 0, err);
}

static int remove_tree(const sl_cgroup *cg, const char *dir, const struct timespec *deadline,
		       int depth, sl_err *err)
{
	for (;;) {
		_cleanup_closedir_ DIR *d = opendir(dir);
		if (!d && errno == ENOENT)
			return 0;
		if (!d)
			return sl_sysfail(err, "remove cgroup %s", dir);
		struct dirent *de;
		while (depth < 64 && (de = readdir(d))) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			_cleanup_free_ char *sub = cg_join(dir, de->d_name);
			if (!sub)
				return sl_sysfail(err, "remove cgroup %s", dir);
			if (remove_tree(cg, sub, deadline, depth + 1, err) < 0)
				return -1;
		}
		size_t n = 0;
		if (cg_kill_tree(cg, dir, &n, err) < 0)
			return -1;
		unlink_fake_files(cg, dir);
		if (n == 0 && rmdir(dir) == 0)
			return 0;
		if (n == 0 && errno == ENOENT)
			return 0;
		if (n == 0 && errno != EBUSY && errno != ENOTEMPTY)
			return sl_sysfail(err, "rmdir %s", dir);
		if (cg_expired(deadline))
			return sl_fail(err, SL_TIMEOUT, n ? 0 : errno,
				       "remove cgroup %s: still busy after %d ms (%zu processes "
				       "left)",
				       dir, CG_DESTROY_MS, n);
		cg_nap();
	}
}

int cg_remove_tree(const sl_cgroup *cg, const char *dir, const struct timespec *deadline,
		   sl_err *err)
{
	return remove_tree(cg, dir, deadline, 0, err);
}

/* launch_oci.c — a runtime-spec container's init and exec'd processes, made with
 * launch.c's steps (launch_internal.h): the namespaces as host root, the rootfs an
 * id-mapped mount (an overlay from a snapshotter remade from id-mapped layers), the spec's
 * mounts, sandlot's masks and the spec's, pivot_root, then the user namespace, the
 * capability set, no_new_privs and seccomp last. The init waits on exec.fifo for `start`. */
#include "launch_oci.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "launch_internal.h"

extern char **environ;

/* The super options of the overlay mounted at PATH, from the mount table: "" when PATH is
 * not an overlay's mount point. */
static int overlay_options(const char *path, char *opts, size_t len, sl_err *err)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return sl_sysfail(err, "read the mount table");
	char line[8192];
	opts[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], fstype[64], super[4096];
		/* id parent maj:min root mountpoint options [optional...] - fstype source super */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(dash + 3, "%63s %*s %4095s", fstype, super) != 2)
			continue;
		if (!strcmp(mp, path) && !strcmp(fstype, "overlay"))
			snprintf(opts, len, "%s", super); /* the last one mounted there wins */
	}
	return 0;
}

/* VALUE of KEY= in comma-separated OPTS, into BUF. */
static bool opt_value(const char *opts, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = opts; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(buf, len, "%.*s", (int)(n - kl - 1), p + kl + 1);
			return true;
		}
		p += n + (p[n] == ',');
	}
	return false;
}

/* The options of the overlay OPTS besides its layers, set on the new one FS as they were:
 * podman mounts with `volatile` (mountinfo: `fsync=volatile`), and the kernel refuses a
 * work dir a volatile mount used ("incompat feature 'volatile'", EINVAL) to a mount
 * without it; `userxattr`, `metacopy`, `redirect_dir`, `index` likewise name how the
 * layers on disk were written. The failing one is named in WHY. */
static int overlay_carry_options(int fs, const char *opts, char *why, size_t len)
{
	static const char *const layers[] = {"rw", "ro", "lowerdir", "upperdir", "workdir"};
	for (const char *p = opts; *p;) {
		size_t n = strcspn(p, ","), kl = strcspn(p, "=,");
		char key[64], val[256];
		bool skip = kl >= sizeof(key) || n - kl > sizeof(val);
		for (size_t i = 0; !skip && i < sizeof(layers) / sizeof(layers[0]); i++)
			skip = strlen(layers[i]) == kl && !strncmp(p, layers[i], kl);
		if (!skip) {
			snprintf(key, sizeof(key), "%.*s", (int)kl, p);
			snprintf(val, sizeof(val), "%.*s", (int)(n > kl ? n - kl - 1 : 0),
				 p + kl + 1);
			if ((n > kl ? fsconfig(fs, FSCONFIG_SET_STRING, key, val, 0)
				    : fsconfig(fs, FSCONFIG_SET_FLAG, key, NULL, 0)) < 0) {
				snprintf(why, len, "option %.*s", (int)n, p);
				return -1;
			}
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

/* A work dir of our own beside the engine's WORK, made afresh: the engine's own is its
 * live mount's, and a mount the kernel finds the mark of a volatile one in
 * (work/incompat/volatile, podman's `run --rm`) is refused with EINVAL; the kernel leaves
 * removing that mark to user space, and an old one of ours may carry it. */
static int overlay_own_workdir(const char *work, char *mine, size_t len, sl_err *err)
{
	if ((size_t)snprintf(mine, len, "%s.sandlot-oci", work) >= len)
		return sl_fail(err, SL_INVALID, 0, "overlay work dir %s: path too long", work);
	if (fs_remove_tree(mine, err) < 0)
		return -1;
	if (mkdir(mine, 0700) < 0)
		return sl_sysfail(err, "overlay work dir %s", mine);
	return 0;
}

/* An overlay (containerd's snapshotter hands one over, mounted) cannot be id-mapped
 * whole: the kernel refuses an id-mapped mount of a merged overlay. Made again from its
 * layers, each lower one id-mapped read-only, the upper one as it is, as a detached mount. */
static int overlay_remount(const char *path, const char *opts, int userns, uint32_t base,
			   sl_err *err)
{
	char lower[8192], upper[PATH_MAX], work[PATH_MAX], mywork[PATH_MAX], spec[16384] = "";
	if (!opt_value(opts, "lowerdir", lower, sizeof(lower)) ||
	    !opt_value(opts, "upperdir", upper, sizeof(upper)) ||
	    !opt_value(opts, "workdir", work, sizeof(work)))
		return sl_fail(err, SL_INVALID, 0,
			       "rootfs %s: an overlay without lowerdir, "
			       "upperdir and workdir is not supported",
			       path);
	if (overlay_own_workdir(work, mywork, sizeof(mywork), err) < 0)
		return -1;
	int fds[128], n = 0, ret = -1;
	for (char *l = strtok(lower, ":"); l; l = strtok(NULL, ":")) {
		if (n == 128 || (fds[n] = launch_idmapped_tree(l, userns, true, err)) < 0)
			goto out;
		size_t sl = strlen(spec);
		snprintf(spec + sl, sizeof(spec) - sl, "%s/proc/self/fd/%d", n ? ":" : "", fds[n]);
		n++;
	}
	/* The upper layer is the container's own (empty when it starts): it stays a plain
	 * path, its root given to the container's root, so files the container makes there
	 * are its ids on disk, as a sandbox's writable layer is (launch.c). Host root mounts
	 * it: its work dir and copy-ups need no id in the range. */
	struct stat st;
	if (stat(upper, &st) < 0 || (st.st_uid == 0 && chown(upper, base, base) < 0)) {
		sl_sysfail(err, "rootfs %s: upper layer %s", path, upper);
		goto out;
	}
	int fs = fsopen("overlay", FSOPEN_CLOEXEC);
	char why[256] = "";
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", spec, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", mywork, 0) < 0 ||
	    overlay_carry_options(fs, opts, why, sizeof(why)) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (ret = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV)) < 0) {
		int e = errno;
		ssize_t r;
		if (!why[0] && fs >= 0 && (r = read(fs, why, sizeof(why) - 1)) > 0)
			why[r] = '\0';
		sl_fail(err, SL_INTERNAL, e, "rootfs %s: overlay of id-mapped layers%s%s", path,
			why[0] ? ": " : "", why);
		ret = -1;
	}
	if (fs >= 0)
		close(fs);
out:
	while (n > 0)
		close(fds[--n]);
	return ret;
}

/* The container's root as a detached mount: root.path id-mapped into USERNS (or a plain
 * clone without one), its overlay remade from its layers when it is one. */
static int root_tree(const sl_oci_launch *l, sl_err *err)
{
	const oci_spec *s = l->spec;
	char path[PATH_MAX], real[PATH_MAX];
	if (s->root_path[0] == '/')
		snprintf(path, sizeof(path), "%s", s->root_path);
	else
		snprintf(path, sizeof(path), "%s/%s", l->bundle, s->root_path);
	if (!realpath(path, real))
		return sl_fail(err, SL_INVALID, errno, "root.path %s", path);
	if (l->userns < 0) {
		int fd = open_tree(AT_FDCWD, real, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		return fd < 0 ? sl_sysfail(err, "open rootfs %s", real) : fd;
	}
	char opts[8192];
	struct statfs sf;
	if (statfs(real, &sf) == 0 && sf.f_type == OVERLAYFS_SUPER_MAGIC) {
		if (overlay_options(real, opts, sizeof(opts), err) < 0)
			return -1;
		if (opts[0])
			return overlay_remount(real, opts, l->userns, l->uid_base, err);
	}
	return launch_idmapped_tree(real, l->userns, s->root_readonly, err);
}

/* uid=/gid= options of a file system mounted as host root, shifted into the container's
 * range (and its root's when absent), so its files are the container's. */
static void shift_ids(const char *data, uint32_t base, char *out, size_t len)
{
	size_t o = 0;
	bool uid = false, gid = false;
	out[0] = '\0';
	for (const char *p = data; *p;) {
		size_t n = strcspn(p, ",");
		unsigned long v;
		if ((!strncmp(p, "uid=", 4) || !strncmp(p, "gid=", 4)) &&
		    sscanf(p + 4, "%lu", &v) == 1) {
			uid |= p[0] == 'u';
			gid |= p[0] == 'g';
			o += snprintf(out + o, len - o, "%s%cid=%lu", o ? "," : "", p[0], v + base);
		} else {
			o += snprintf(out + o, len - o, "%s%.*s", o ? "," : "", (int)n, p);
		}
		if (o >= len)
			o = len - 1;
		p += n + (p[n] == ',');
	}
	if (!uid && base)
		o += snprintf(out + o, len - o, "%suid=%u", o ? "," : "", base);
	if (!gid && base && o < len)
		snprintf(out + o, len - o, "%sgid=%u", o ? "," : "", base);
}

static int mount_point_make(int errfd, int rootfd, const char *dest, bool file);

/* The mount point of DEST under ROOTFD: its parents made, itself a directory or (a bind of
 * a file) a file. Made as the container's root (fs ids BASE): host root has no id on an
 * id-mapped root (EOVERFLOW), and what it makes there is the container's anyway. */
static int mount_point(int errfd, int rootfd, const char *dest, bool file, uint32_t base)
{
	setfsgid(base);
	setfsuid(base);
	int fd = mount_point_make(errfd, rootfd, dest, file);
	/* Back to 0: the file-system capabilities come back from the permitted set. */
	setfsuid(0);
	setfsgid(0);
	return fd;
}

static int mount_point_make(int errfd, int rootfd, const char *dest, bool file)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", dest);
	char *slash = strrchr(parent, '/');
	const char *name = slash + 1;
	*slash = '\0';
	_cleanup_close_ int dir = launch_make_target(errfd, rootfd, parent);
	if (!*name)
		return fcntl(dir, F_DUPFD_CLOEXEC, 3);
	int fd = launch_open_mountpoint(dir, name, !file);
	if (fd < 0)
		child_fail(errfd, errno, "mount point %s", dest);
	return fd;
}

/* A spec's `cgroup` mount: no host cgroup tree, the container's own cgroup read-only (a
 * bind of its directory on v2; on v1 a tmpfs of one directory per controller, each a bind
 * of the container's cgroup in it), so what it reads of its limits is its own. */
static void cgroup_mount(const sl_oci_launch *l, int errfd, int rootfd, const oci_mount *m)
{
	static const unsigned long ro =
	    MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char at[64], sub[PATH_MAX], data[128];
	if (!l->ncg)
		return;
	_cleanup_close_ int fd = mount_point(errfd, rootfd, m->dest, false, l->uid_base);
	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	bool v2 = l->ncg == 1 && !l->cg_names[0][0];
	shift_ids("mode=755,size=64k", l->uid_base, data, sizeof(data));
	if (v2 ? mount(l->cg_dirs[0], at, NULL, MS_BIND, NULL) < 0
	       : mount("cgroup", at, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, data) < 0)
		child_fail(errfd, errno, "cgroup mount on %s", m->dest);
	/* Opened again by name: the new mount, not the directory under it. */
	_cleanup_close_ int mnt = mount_point(errfd, rootfd, m->dest, false, l->uid_base);
	snprintf(at, sizeof(at), "/proc/self/fd/%d", mnt);
	for (size_t i = 0; !v2 && i < l->ncg; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", at, l->cg_names[i]);
		if ((mkdirat(mnt, l->cg_names[i], 0755) < 0 && errno != EEXIST) ||
		    mount(l->cg_dirs[i], sub, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, sub, NULL, ro, NULL) < 0)
			child_fail(errfd, errno, "cgroup %s on %s/%s", l->cg_dirs[i], m->dest,
				   l->cg_names[i]);
	}
	if (mount(NULL, at, NULL, ro, NULL) < 0)
		child_fail(errfd, errno, "make %s read-only", m->dest);
}

static void spec_mount(const sl_oci_launch *l, int errfd, int rootfd, const oci_mount *m)
{
	char at[64], data[1024];
	const char *t = m->type;
	if (!strcmp(t, "cgroup") || !strcmp(t, "cgroup2")) {
		cgroup_mount(l, errfd, rootfd, m);
		return;
	}
	struct stat st;
	bool file = m->bind && stat(m->source, &st) == 0 && !S_ISDIR(st.st_mode);
	_cleanup_close_ int fd = mount_point(errfd, rootfd, m->dest, file, l->uid_base);
	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	unsigned long fl = m->flags;
	if (m->bind) {
		if (mount(m->source, at, NULL, MS_BIND | (m->recursive ? MS_REC : 0), NULL) < 0)
			child_fail(errfd, errno, "bind %s on %s", m->source, m->dest);
		/* Opened again by name: the new mount, not the directory under it. */
		_cleanup_close_ int mnt = mount_point(errfd, rootfd, m->dest, file, l->uid_base);
		snprintf(at, sizeof(at), "/proc/self/fd/%d", mnt);
		if (fl && mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | fl, NULL) < 0)
			child_fail(errfd, errno, "remount %s", m->dest);
	} else {
		if (!strcmp(t, "proc") || !strcmp(t, "sysfs") || !strcmp(t, "mqueue"))
			snprintf(data, sizeof(data), "%s", m->data);
		else
			shift_ids(m->data, l->uid_base, data, sizeof(data));
		if (!strcmp(t, "sysfs"))
			fl |= MS_RDONLY; /* the host's devices stay read-only */
		if (mount(m->source ? m->source : t, at, t, fl, data[0] ? data : NULL) < 0)
			child_fail(errfd, errno, "mount %s on %s", t, m->dest);
		if (!strcmp(m->dest, "/dev") && !strcmp(t, "tmpfs")) {
			_cleanup_close_ int dev =
			    openat(rootfd, "dev", O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (dev < 0)
				child_fail(errfd, errno, "open /dev");
			launch_make_dev(errfd, dev, l->uid_base, false);
		}
	}
	if (m->propagation) {
		_cleanup_close_ int mnt = mount_point(errfd, rootfd, m->dest, file, l->uid_base);
		snprintf(at, sizeof(at), "/proc/self/fd/%d", mnt);
		if (mount(NULL, at, NULL, m->propagation, NULL) < 0)
			child_fail(errfd, errno, "propagation of %s", m->dest);
	}
}

static void write_sysctls(int errfd, int rootfd, char *const *kv)
{
	for (size_t i = 0; kv && kv[i]; i += 2) {
		char p[PATH_MAX];
		int n = snprintf(p, sizeof(p), "proc/sys/%s", kv[i]);
		for (int k = 9; k < n; k++)
			if (p[k] == '.')
				p[k] = '/';
		int fd = openat(rootfd, p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		size_t len = strlen(kv[i + 1]);
		if (fd < 0 || write(fd, kv[i + 1], len) != (ssize_t)len)
			child_fail(errfd, errno, "sysctl %s", kv[i]);
		close(fd);
	}
}

/* The pty's master sent over the --console-socket (SOCK, connected), its slave made the
 * process's controlling terminal and stdio. */
static void console_setup(int errfd, int sock)
{
	int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || unlockpt(master) < 0)
		child_fail(errfd, errno, "open a pty (/dev/ptmx)");
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (slave < 0)
		child_fail(errfd, errno, "open the pty's peer");
	char cbuf[CMSG_SPACE(sizeof(int))] = {0}, name[] = "/dev/ptmx";
	struct iovec iov = {name, sizeof(name) - 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &master, sizeof(int));
	if (sendmsg(sock, &msg, 0) < 0)
		child_fail(errfd, errno, "send the pty to the console socket");
	close(master);
	close(sock);
	if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, 0) < 0 ||
	    dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
		child_fail(errfd, errno, "make the pty the terminal");
	if (slave > 2)
		close(slave);
}

static int console_connect(const char *path, sl_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return sl_fail(err, SL_INVALID, 0, "console socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		sl_sysfail(err, "connect to console socket %s", path);
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* Root of USERNS (when one), the rlimits, the capability set with no_new_privs, then the
 * process's user: the end of both children before the exec. */
static void become(int errfd, const sl_oci_launch *l, const oci_process *p, int userns)
{
	if (userns >= 0 && setns(userns, CLONE_NEWUSER) < 0)
		child_fail(errfd, errno, "enter the container's user namespace");
	if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		child_fail(errfd, errno, "become the container's root");
	for (size_t i = 0; i < p->nrlimits; i++) {
		struct rlimit r = {p->rlimits[i].soft, p->rlimits[i].hard};
		if (setrlimit(p->rlimits[i].resource, &r) < 0)
			child_fail(errfd, errno, "set rlimit %d", p->rlimits[i].resource);
	}
	/* The process's ids first, keeping the permitted set across the change of uid, then
	 * the capabilities it keeps: those the setgroups/setresuid need may not be among them. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(p->ngids, p->gids) < 0 ||
	    setresgid(p->gid, p->gid, p->gid) < 0 || setresuid(p->uid, p->uid, p->uid) < 0)
		child_fail(errfd, errno, "become uid %u gid %u", p->uid, p->gid);
	launch_drop_privileges(errfd, l->caps & p->caps);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		child_fail(errfd, errno, "clear keepcaps");
}

/* The last steps, shared: seccomp and the exec of P's args with P's environment. */
static void __attribute__((noreturn)) exec_process(const sl_oci_launch *l, const oci_process *p)
{
	if (chdir(p->cwd) < 0) {
		fprintf(stderr, "sandlot-oci: chdir %s: %s\n", p->cwd, strerror(errno));
		_exit(126);
	}
	environ = p->env;
	sl_err err = {0};
	if (l->filter && seccomp_bpf_install(l->filter, &err) < 0) {
		fprintf(stderr, "sandlot-oci: %s\n", err.msg);
		_exit(126);
	}
	execvp(p->args[0], p->args);
	int e = errno;
	fprintf(stderr, "sandlot-oci: exec %s: %s\n", p->args[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

static const int ns_flags[OCI_NS_COUNT] = {
    [OCI_NS_PID] = CLONE_NEWPID,       [OCI_NS_NET] = CLONE_NEWNET, [OCI_NS_MNT] = CLONE_NEWNS,
    [OCI_NS_IPC] = CLONE_NEWIPC,       [OCI_NS_UTS] = CLONE_NEWUTS, [OCI_NS_USER] = CLONE_NEWUSER,
    [OCI_NS_CGROUP] = CLONE_NEWCGROUP,
};

struct init_fds {
	int err, root, fifo, console, ns[OCI_NS_COUNT];
};

/* The runtime's child, a copy of the host's sandlot-oci until it execs, made not dumpable
 * before it enters the container's namespaces (as runc's nsexec does): no process in the
 * container may open its /proc/<pid>/exe (the host binary, CVE-2019-5736), its fds, mem
 * or environ, nor ptrace it. The exec of the container's program makes it dumpable again
 * (its own binary). */
static void not_dumpable(int errfd)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		child_fail(errfd, errno, "make the runtime's child not dumpable");
}

static void __attribute__((noreturn)) init_main(const sl_oci_launch *l, struct init_fds *f)
{
	const oci_spec *s = l->spec;
	char root[PATH_MAX], empty[PATH_MAX];
	int unshare_flags = CLONE_NEWNS;
	not_dumpable(f->err);
	for (int k = 0; k < OCI_NS_COUNT; k++)
		if (k != OCI_NS_PID && k != OCI_NS_USER && k != OCI_NS_CGROUP && f->ns[k] < 0 &&
		    k != OCI_NS_MNT)
			unshare_flags |= ns_flags[k];
	if (unshare(unshare_flags) < 0)
		child_fail(f->err, errno, "new namespaces");
	for (int k = OCI_NS_IPC; k <= OCI_NS_UTS; k++)
		if (f->ns[k] >= 0 && setns(f->ns[k], ns_flags[k]) < 0)
			child_fail(f->err, errno, "join the %s namespace %s",
				   k == OCI_NS_IPC ? "ipc" : "uts", s->ns_path[k]);
	child_enter(f->err, l->join, l->njoin, f->ns[OCI_NS_NET], true);
	snprintf(root, sizeof(root), "%s/rootfs", l->dir);
	snprintf(empty, sizeof(empty), "%s/empty", l->dir);
	if (move_mount(f->root, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		child_fail(f->err, errno, "attach the root file system on %s", root);
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		child_fail(f->err, errno, "open %s", root);
	for (size_t i = 0; i < s->nmounts; i++)
		spec_mount(l, f->err, rootfd, &s->mounts[i]);
	write_sysctls(f->err, rootfd, s->sysctl);
	launch_mask_paths(f->err, root, empty, launch_masked_paths, launch_readonly_paths, false);
	launch_mask_paths(f->err, root, empty, (const char *const *)s->masked,
			  (const char *const *)s->readonly, false);
	if (s->root_readonly && mount(NULL, root, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		child_fail(f->err, errno, "make the root read-only");
	launch_pivot_into(f->err, root);
	if (s->hostname && f->ns[OCI_NS_UTS] < 0 &&
	    sethostname(s->hostname, strlen(s->hostname)) < 0)
		child_fail(f->err, errno, "set hostname");
	if (f->ns[OCI_NS_CGROUP] >= 0 ? setns(f->ns[OCI_NS_CGROUP], CLONE_NEWCGROUP) < 0
				      : unshare(CLONE_NEWCGROUP) < 0)
		child_fail(f->err, errno, "cgroup namespace");
	become(f->err, l, &s->proc, l->userns);
	if (f->console >= 0)
		console_setup(f->err, f->console);
	if (l->preserve_fds >= 0)
		syscall(SYS_close_range, 3 + l->preserve_fds, ~0U, CLOSE_RANGE_CLOEXEC);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fifo);
	char ready = '\0';
	if (write(f->err, &ready, 1) != 1)
		_exit(1);
	close(f->err);
	/* Blocks until `start` opens the other end. */
	int w = open(path, O_WRONLY | O_CLOEXEC);
	if (w < 0 || write(w, "0", 1) != 1)
		_exit(1);
	close(w);
	close(f->fifo);
	exec_process(l, &s->proc);
}

/* The child's message (an error), or 0 once it is ready; -1 when it died silently. */
static int wait_ready(int fd, pid_t pid, const char *what, sl_err *err)
{
	char msg[800];
	ssize_t n;
	while ((n = read(fd, msg, sizeof(msg) - 1)) < 0 && errno == EINTR)
		;
	if (n == 1 && msg[0] == '\0')
		return 0;
	if (n > 0) {
		msg[n] = '\0';
		sl_fail(err, SL_INTERNAL, 0, "%s: %s", what, msg);
	} else {
		sl_fail(err, SL_INTERNAL, 0, "%s: the child ended before it was ready", what);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return -1;
}

static void close_fds(struct init_fds *f)
{
	int *all[] = {&f->err, &f->root, &f->fifo, &f->console};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (*all[i] >= 0)
			close(*all[i]);
	for (int k = 0; k < OCI_NS_COUNT; k++)
		if (f->ns[k] >= 0)
			close(f->ns[k]);
}

static int open_ns(const char *path, int flag, sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sl_fail(err, SL_INVALID, errno, "namespace path %s", path);
	if (flag == CLONE_NEWPID && setns(fd, CLONE_NEWPID) < 0) {
		close(fd);
		return sl_fail(err, SL_INVALID, errno, "join the pid namespace %s", path);
	}
	return fd;
}

int launch_oci_init(const sl_oci_launch *l, pid_t *pid, sl_err *err)
{
	const oci_spec *s = l->spec;
	struct init_fds f = {.err = -1, .root = -1, .fifo = -1, .console = -1};
	for (int k = 0; k < OCI_NS_COUNT; k++)
		f.ns[k] = -1;
	int ep[2] = {-1, -1}, ret = -1;
	char p[PATH_MAX];
	if (launch_mkdir_in(l->dir, "rootfs", 0700, err) < 0 ||
	    launch_mkdir_in(l->dir, "empty", 0555, err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/exec.fifo", l->dir);
	/* The init opens it as the container's root. */
	if (mkfifo(p, 0600) < 0 || chown(p, l->uid_base, l->uid_base) < 0)
		return sl_sysfail(err, "create %s", p);
	if ((f.fifo = open(p, O_PATH | O_CLOEXEC)) < 0) {
		sl_sysfail(err, "open %s", p);
		goto out;
	}
	for (int k = 0; k < OCI_NS_COUNT; k++)
		if (k != OCI_NS_USER && s->ns_path[k] && s->ns_path[k][0] &&
		    (f.ns[k] = open_ns(s->ns_path[k], ns_flags[k], err)) < 0)
			goto out;
	if (f.ns[OCI_NS_PID] < 0 && unshare(CLONE_NEWPID) < 0) {
		sl_sysfail(err, "new pid namespace");
		goto out;
	}
	if ((f.root = root_tree(l, err)) < 0)
		goto out;
	if (s->proc.terminal && l->console && (f.console = console_connect(l->console, err)) < 0)
		goto out;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		sl_sysfail(err, "pipe");
		goto out;
	}
	f.err = ep[1];
	pid_t child = fork();
	if (child < 0) {
		sl_sysfail(err, "fork the container's init");
		goto out;
	}
	if (child == 0) {
		close(ep[0]);
		init_main(l, &f);
	}
	close(steal_fd(&f.err));
	if (wait_ready(ep[0], child, "start the container's init", err) == 0) {
		*pid = child;
		ret = 0;
	}
out:
	if (ep[0] >= 0)
		close(ep[0]);
	close_fds(&f);
	if (ret < 0)
		unlink(p);
	return ret;
}

int launch_oci_exec(const sl_oci_launch *l, const oci_process *proc, pid_t target, pid_t *pid,
		    sl_err *err)
{
	static const struct {
		const char *name;
		int flag;
	} order[] = {{"ipc", CLONE_NEWIPC},
		     {"uts", CLONE_NEWUTS},
		     {"net", CLONE_NEWNET},
		     {"cgroup", CLONE_NEWCGROUP},
		     {"mnt", CLONE_NEWNS}};
	int fds[5], n = 0, ep[2] = {-1, -1}, ret = -1, console = -1;
	char p[64];
	_cleanup_close_ int userns = -1, pidns = -1;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)target);
	if ((pidns = open(p, O_RDONLY | O_CLOEXEC)) < 0 || setns(pidns, CLONE_NEWPID) < 0)
		return sl_fail(err, SL_NOTFOUND, errno, "join the container's pid namespace");
	for (; n < 5; n++) {
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)target, order[n].name);
		if ((fds[n] = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
			sl_sysfail(err, "open %s", p);
			goto out;
		}
	}
	if (l->userns >= 0) {
		snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)target);
		if ((userns = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
			sl_sysfail(err, "open %s", p);
			goto out;
		}
	}
	if (proc->terminal && l->console && (console = console_connect(l->console, err)) < 0)
		goto out;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		sl_sysfail(err, "pipe");
		goto out;
	}
	pid_t child = fork();
	if (child < 0) {
		sl_sysfail(err, "fork");
		goto out;
	}
	if (child == 0) {
		close(ep[0]);
		not_dumpable(ep[1]);
		child_enter(ep[1], l->join, l->njoin, fds[2], false);
		for (int i = 0; i < 5; i++)
			if (setns(fds[i], order[i].flag) < 0)
				child_fail(ep[1], errno, "join the container's %s namespace",
					   order[i].name);
		become(ep[1], l, proc, userns);
		if (console >= 0)
			console_setup(ep[1], console);
		char ready = '\0';
		if (write(ep[1], &ready, 1) != 1)
			_exit(1);
		close(ep[1]);
		exec_process(l, proc);
	}
	close(steal_fd(&ep[1]));
	if (wait_ready(ep[0], child, "exec in the container", err) == 0) {
		*pid = child;
		ret = 0;
	}
out:
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (int i = 0; i < 2; i++)
		if (ep[i] >= 0)
			close(ep[i]);
	if (console >= 0)
		close(console);
	return ret;
}

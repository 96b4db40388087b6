/* launch.c — the privileged half of starting a sandbox, and a launch from nothing (from a
 * spare: launch_spare.c; the staging namespace: launch_stage.c). The child is cloned into
 * new mount/pid/uts/ipc/net namespaces as host root, builds the root filesystem there,
 * and only then joins the sandbox's user namespace, so the namespaces it lives in are
 * owned by the initial user namespace and its root can never remount or reconfigure
 * them. Every path under the rootfs is opened without following symlinks. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "cleanup.h"
#include "launch_internal.h"
#include "log.h"

/* What container runtimes hide or freeze in /proc and /sys. */
const char *const launch_masked_paths[] = {
	"proc/acpi",	  "proc/asound",	"proc/kcore",	"proc/keys",  "proc/latency_stats",
	"proc/timer_list", "proc/timer_stats", "proc/sched_debug", "proc/scsi", "sys/firmware",
	"sys/devices/virtual/powercap", "proc/interrupts", NULL,
};
const char *const launch_readonly_paths[] = {
	"proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger", NULL,
};

uint64_t proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	/* After ")": state is field 3 (a zombie counts as gone); starttime is 22. */
	if (!p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

uint64_t proc_self_start_time(void)
{
	/* One word holds both halves, so a thread never pairs one pid with another's
	 * time: pid in the top 22 bits (pid_max is at most 2^22), the time below. */
	static _Atomic uint64_t cached;
	uint64_t c = atomic_load_explicit(&cached, memory_order_relaxed);
	pid_t self = getpid();
	if (c && (pid_t)(c >> 42) == self)
		return c & ((UINT64_C(1) << 42) - 1);
	uint64_t t = proc_start_time(self);
	if (t < (UINT64_C(1) << 42))
		atomic_store_explicit(&cached, (uint64_t)self << 42 | t, memory_order_relaxed);
	return t;
}

void __attribute__((noreturn, format(printf, 3, 4)))
child_fail(int errfd, int e, const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (e && n >= 0 && n < (int)sizeof(buf))
		n += snprintf(buf + n, sizeof(buf) - n, ": %s", strerror(e));
	if (n > (int)sizeof(buf))
		n = sizeof(buf);
	ssize_t w = write(errfd, buf, n);
	(void)w;
	_exit(1);
}

/* Open (creating if absent) a directory directly under dirfd, refusing symlinks: the
 * rootfs is the sandbox's to shape, and a planted "proc -> /etc" must not redirect
 * a mount onto the host. */
int launch_open_mountpoint(int dirfd, const char *name, int is_dir)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
					   RESOLVE_NO_MAGICLINKS };
	int fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd < 0 && errno == ENOENT) {
		if (is_dir)
			mkdirat(dirfd, name, 0755);
		else
			close(openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
		fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	}
	return fd;
}

static int mount_at_fd(int fd, const char *src, const char *type, unsigned long flags,
		       const char *data)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return mount(src, p, type, flags, data);
}

static void mount_in(int errfd, int rootfd, const char *name, const char *type, unsigned long flags,
		     const char *data)
{
	_cleanup_close_ int fd = launch_open_mountpoint(rootfd, name, 1);
	if (fd < 0)
		child_fail(errfd, errno, "mount point /%s in the image", name);
	if (mount_at_fd(fd, type, type, flags, data) < 0)
		child_fail(errfd, errno, "mount %s on /%s", type, name);
}

void launch_make_dev(int errfd, int devfd, uint32_t base, bool host_nodes)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = { { "null", 1, 3 },	 { "zero", 1, 5 },    { "full", 1, 7 },
		      { "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 } };
	for (size_t i = 0; host_nodes && i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		/* In a user namespace of its own already, no mknod: an empty file with the
		 * host's node bound on it, as rootless runtimes do (docs/hibernate.md). */
		char src[32];
		snprintf(src, sizeof(src), "/dev/%s", nodes[i].name);
		_cleanup_close_ int t = -1;
		int e = openat(devfd, nodes[i].name,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (e >= 0)
			close(e);
		if (e < 0 ||
		    (t = openat(devfd, nodes[i].name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		    mount_at_fd(t, src, NULL, MS_BIND, NULL) < 0)
			child_fail(errfd, errno, "bind /dev/%s", nodes[i].name);
	}
	for (size_t i = 0; !host_nodes && i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		if (mknodat(devfd, nodes[i].name, S_IFCHR | 0666,
			    makedev(nodes[i].maj, nodes[i].min)) < 0 ||
		    fchmodat(devfd, nodes[i].name, 0666, 0) < 0 ||
		    fchownat(devfd, nodes[i].name, base, base, AT_SYMLINK_NOFOLLOW) < 0)
			child_fail(errfd, errno, "create /dev/%s", nodes[i].name);
	}
	static const char *const links[][2] = { { "ptmx", "pts/ptmx" }, { "fd", "/proc/self/fd" },
						{ "stdin", "/proc/self/fd/0" },
						{ "stdout", "/proc/self/fd/1" },
						{ "stderr", "/proc/self/fd/2" },
						{ "core", "/proc/kcore" } };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i][1], devfd, links[i][0]) < 0)
			child_fail(errfd, errno, "create /dev/%s", links[i][0]);
	char opts[128];
	/* /dev/shm is a directory of the /dev tmpfs, not a tmpfs of its own: one
	 * superblock fewer per sandbox (see mask_paths). */
	if (mkdirat(devfd, "pts", 0755) < 0 || mkdirat(devfd, "shm", 01777) < 0 ||
	    fchmodat(devfd, "shm", 01777, 0) < 0 ||
	    fchownat(devfd, "shm", base, base, AT_SYMLINK_NOFOLLOW) < 0)
		child_fail(errfd, errno, "create /dev/pts and /dev/shm");
	_cleanup_close_ int pts = openat(devfd, "pts", O_PATH | O_CLOEXEC | O_NOFOLLOW);
	snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620,gid=%u", base + 5);
	if (pts < 0 || mount_at_fd(pts, "devpts", "devpts", MS_NOSUID | MS_NOEXEC, opts) < 0)
		child_fail(errfd, errno, "mount devpts on /dev/pts");
}

/* /proc and /sys are fresh mounts we just made: their paths hold no planted links.
 * A masked directory gets a read-only bind of EMPTY (an empty host directory in the run
 * dir), not a tmpfs as runc does: the view is the same, but each tmpfs is a superblock,
 * and every superblock on the host adds a shrinker slot to every memory cgroup's
 * shrinker map, so with N sandboxes each one pays for all of them (docs/bench.md). */
void launch_mask_paths(int errfd, const char *root, const char *empty,
		       const char *const *masked, const char *const *readonly, bool sys_masked)
{
	char p[PATH_MAX], devnull[PATH_MAX];
	snprintf(devnull, sizeof(devnull), "%s/dev/null", root);
	for (int i = 0; masked && masked[i]; i++) {
		const char *m = masked[i] + (masked[i][0] == '/');
		if (sys_masked && !strncmp(m, "sys/", 4))
			continue;
		snprintf(p, sizeof(p), "%s/%s", root, m);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		bool dir = S_ISDIR(st.st_mode);
		/* No EMPTY (a launch to hibernate): a tiny read-only tmpfs, which CRIU dumps
		 * and restores itself, where a bind of a host directory would be external. */
		if (dir && !empty) {
			if (mount("tmpfs", p, "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=4k,nr_inodes=2,mode=555") < 0)
				child_fail(errfd, errno, "mask /%s", m);
			continue;
		}
		int r = mount(dir ? empty : devnull, p, NULL, MS_BIND, NULL);
		if (r == 0 && dir)
			r = mount(NULL, p, NULL,
				  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  NULL);
		if (r < 0)
			child_fail(errfd, errno, "mask /%s", m);
	}
	for (int i = 0; readonly && readonly[i]; i++) {
		const char *m = readonly[i] + (readonly[i][0] == '/');
		snprintf(p, sizeof(p), "%s/%s", root, m);
		if (access(p, F_OK) < 0)
			continue;
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
			  NULL) < 0)
			child_fail(errfd, errno, "make /%s read-only", m);
	}
}

/* This thread's network namespace as a sandbox gets it: lo up, and ports below 1024
 * open to every user, as Docker's defaults have it. The namespace belongs to the host's
 * user namespace, where the sandbox's root has no CAP_NET_BIND_SERVICE. (Docker's other
 * default, ping_group_range, cannot cover the sandboxes: it stops at gid 2^31 - 1, below
 * most of their host ids.) -1 with errno set, the step in *what. Safe in
 * the launch's child: no malloc, no lock. */
int launch_netns_lo_up(const char **what)
{
	*what = "bring lo up";
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	memcpy(ifr.ifr_name, "lo", 3);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	return ioctl(s, SIOCSIFFLAGS, &ifr);
}

/* PROC: a procfs mount's root, or AT_FDCWD for the host's /proc. Every live network
 * namespace that was looked up there leaves a dentry of the same name under
 * /proc/sys/net in that mount's dcache, all in one hash chain: through the host's /proc
 * the lookup compares against every sandbox's (proc_sys_compare, ~3 ms a create with
 * 1000 sandboxes); through the sandbox's own, new /proc there is nothing to compare. */
static int netns_ports(int proc, const char **what)
{
	*what = "let the sandbox's users bind ports below 1024";
	const char *p = proc == AT_FDCWD ? "/proc/sys/net/ipv4/ip_unprivileged_port_start"
					 : "sys/net/ipv4/ip_unprivileged_port_start";
	_cleanup_close_ int fd = openat(proc, p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 && write(fd, "0", 1) == 1 ? 0 : -1;
}

/* /proc/sys/kernel/random/boot_id is the host's, the same across a sandbox's stops and
 * starts. Each launch gets its own, as a machine's boot does, so a workload can tell a
 * cold boot (stop/start, E2B's filesystem-only pause) from a freeze: a random UUID in
 * a file of the /dev tmpfs, bound read-only over it, then unlinked from /dev. */
static void launch_boot_id(int errfd, int devfd, const char *dir, uint32_t base)
{
	unsigned char b[16];
	char text[40], src[PATH_MAX], dst[PATH_MAX];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		child_fail(errfd, errno, "make a boot id");
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4, variant 1, as the kernel's */
	b[8] = (b[8] & 0x3f) | 0x80;
	int n = snprintf(text, sizeof(text),
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			 b[12], b[13], b[14], b[15]);
	_cleanup_close_ int fd =
	    openat(devfd, ".boot_id", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fchown(fd, base, base) < 0)
		child_fail(errfd, errno, "write the boot id");
	snprintf(src, sizeof(src), "%s/dev/.boot_id", dir);
	snprintf(dst, sizeof(dst), "%s/proc/sys/kernel/random/boot_id", dir);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, dst, NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(errfd, errno, "bind the boot id on /proc/sys/kernel/random/boot_id");
	if (unlinkat(devfd, ".boot_id", 0) < 0)
		child_fail(errfd, errno, "unlink /dev/.boot_id");
}

/* The kernel's file systems of a sandbox under DIR (DIRFD, a path of ours or a fresh
 * overlay's root): /proc (and through it the new network namespace's sysctl when
 * NEW_NET), a read-only /sys, the /dev tmpfs with its nodes owned by host uid BASE, and
 * the masks over /proc and /sys (EMPTY: the empty directory they bind), and the
 * sandbox's own boot id. */
void launch_kernel_fs(int errfd, int dirfd, const char *dir, const char *empty, uint32_t base,
		      bool new_net, bool proc_mounted, bool sys_shared, bool host_nodes)
{
	char opts[128];
	const char *what;
	if (!proc_mounted)
		mount_in(errfd, dirfd, "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (new_net) {
		/* A procfs of our own now: nothing of the image's is on this path. */
		_cleanup_close_ int proc =
		    openat(dirfd, "proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (proc < 0 || netns_ports(proc, &what) < 0)
			child_fail(errfd, errno, "%s", what);
	}
	if (!sys_shared)
		mount_in(errfd, dirfd, "sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			 NULL);
	/* 4 MiB for /dev itself and 64 MiB for /dev/shm, which lives in it. */
	snprintf(opts, sizeof(opts), "mode=755,size=69632k,nr_inodes=64k,uid=%u,gid=%u", base,
		 base);
	mount_in(errfd, dirfd, "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, opts);
	_cleanup_close_ int devfd = openat(dirfd, "dev", O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (devfd < 0)
		child_fail(errfd, errno, "open /dev");
	launch_make_dev(errfd, devfd, base, host_nodes);
	launch_mask_paths(errfd, dir, empty, launch_masked_paths, launch_readonly_paths, sys_shared);
	/* Not with HOST_NODES (a launch to hibernate): CRIU cannot restore a bind of an
	 * unlinked file; such a sandbox sees the host's boot id. */
	if (!host_nodes)
		launch_boot_id(errfd, devfd, dir, base);
}

/* No malloc from here on: in a multi-threaded daemon the clone()d child may hold a
 * copy of a lock another thread had taken. Raw capset instead of libcap. */
void launch_drop_privileges(int errfd, uint64_t keep)
{
	int last = CAP_LAST_CAP;
	char buf[16];
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			last = atoi(buf);
		}
		close(fd);
	}
	for (int c = 0; c <= last && c < 64; c++)
		if (!(keep & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			child_fail(errfd, errno, "drop capability %d from the bounding set", c);
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { 0 }; /* inheritable stays empty */
	data[0].permitted = data[0].effective = (uint32_t)keep;
	data[1].permitted = data[1].effective = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		child_fail(errfd, errno, "set capabilities");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		child_fail(errfd, errno, "clear ambient capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(errfd, errno, "set no_new_privs");
}

/* Replace /etc/NAME in the rootfs with text, never following a link the image or
 * the sandbox planted (a link is replaced, not written through). */
static void write_etc(int errfd, int rootfd, const char *name, const char *text, uint32_t base)
{
	_cleanup_close_ int etc = launch_open_mountpoint(rootfd, "etc", 1);
	if (etc < 0)
		child_fail(errfd, errno, "open /etc in the image");
	int fd = openat(etc, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO) &&
	    unlinkat(etc, name, 0) == 0)
		fd = openat(etc, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	struct stat st;
	size_t len = strlen(text);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    write(fd, text, len) != (ssize_t)len || fchown(fd, base, base) < 0 ||
	    fchmod(fd, 0644) < 0)
		child_fail(errfd, errno, "write /etc/%s", name);
	close(fd);
}

/* mkdir -p of an absolute path under the rootfs, one component at a time, never
 * following a symlink the image or a snapshot planted; returns an O_PATH fd. */
int launch_make_target(int errfd, int rootfd, const char *path)
{
	char comp[256];
	int dir = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	const char *p = path;
	while (dir >= 0 && *p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n >= sizeof(comp) || (n == 2 && !strncmp(p, "..", 2)) || (n == 1 && *p == '.'))
			child_fail(errfd, EINVAL, "volume mount path %s", path);
		memcpy(comp, p, n);
		comp[n] = '\0';
		int next = launch_open_mountpoint(dir, comp, 1);
		close(dir);
		if (next < 0)
			child_fail(errfd, errno, "volume mount path %s", path);
		dir = next;
		p += n;
	}
	return dir;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Close every inherited fd but stdio and F's. In a threaded daemon the clone copied
 * whatever other threads had open at that instant, flock()ed lock files included: a
 * copy keeps the lock's open file description alive, so a thread that held the
 * network lock and closed its fd would leave it held by this child, which waits for
 * its parent, which waits for that lock. */
void launch_close_inherited(const sl_launch *l, const struct child_fds *f)
{
	int keep[10 + SL_MAX_VOLUMES], n = 0;
	int own[] = {f->err,  f->userns, f->lower,  f->root,  f->listen,
		     f->init, f->log,	 f->client, f->netns, f->stage};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (own[i] > 2)
			keep[n++] = own[i];
	for (size_t i = 0; i < l->nmounts && i < SL_MAX_VOLUMES; i++)
		if (f->mounts[i] > 2)
			keep[n++] = f->mounts[i];
	qsort(keep, n, sizeof(int), cmp_int);
	unsigned lo = 3;
	for (int i = 0; i < n; i++) {
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0u, 0);
}

/* Into the sandbox's cgroups (JOIN, NJOIN: their cgroup.procs files) and network
 * namespace (NETNS, or the clone's new one when -1, which gets lo up), with every mount
 * of ours a slave of the host's when SLAVE (a copy of the host's mount namespace; not
 * when the child is still in the host's, to enter the staging one). */
void child_enter(int errfd, const char *const *join, size_t njoin, int netns, bool slave)
{
	/* Sharing the parent's memory, we join our cgroups ourselves, first, so what the
	 * mounts allocate is the sandbox's. */
	for (size_t i = 0; i < njoin; i++) {
		int fd = open(join[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || write(fd, "0", 1) != 1)
			child_fail(errfd, errno, "join %s", join[i]);
		close(fd);
	}
	/* A network made beforehand (sl_launch.netns), before /sys shows its devices. */
	if (netns >= 0 && setns(netns, CLONE_NEWNET) < 0)
		child_fail(errfd, errno, "enter the sandbox's network namespace");
	/* The clone's new one: lo now, its sysctl once the sandbox's /proc is mounted. */
	const char *what;
	if (netns < 0 && launch_netns_lo_up(&what) < 0)
		child_fail(errfd, errno, "%s", what);
	if (slave && mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		child_fail(errfd, errno, "make mounts private");
}

/* An overlay of LOWERDIR (a path) and the sandbox's writable layer, as a detached mount
 * (fsopen/fsmount): an fd, or -1 with errno set and the kernel's complaint, if it gave one,
 * in WHY. No allocation: the launch's child calls it too. */
int launch_overlay_mount(const sl_launch *l, const char *lowerdir, char *why, size_t whylen)
{
	why[0] = '\0';
	int fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	int fd = -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lowerdir, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", l->upper, 0) == 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", l->work, 0) == 0 &&
	    (!l->volatile_upper || fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) == 0) &&
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		fd = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
	int e = errno;
	if (fd < 0) {
		ssize_t n = read(fs, why, whylen - 1);
		why[n > 0 ? n : 0] = '\0';
	}
	close(fs);
	errno = e;
	return fd;
}

/* The detached id-mapped image layer (f->lower) attached at DIR, in this child's mount
 * namespace. The overlay holds a clone of it, so it is only kept out of the launching
 * process: there, its last close would dissolve it, and freeing a detached mount tree
 * waits for an expedited RCU grace period (as an unmount does) on the create's path.
 * Attached here, it goes with this namespace's other mounts. */
void child_keep_lower(const struct child_fds *f, const char *dir)
{
	if (move_mount(f->lower, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		child_fail(f->err, errno, "attach the id-mapped image layer");
}

/* The sandbox's overlay at ROOT (<run_dir>/rootfs), of the image layer attached at
 * <run_dir>/lower (the pair detached with the host's tree at the pivot); an O_PATH fd of
 * the root. The layer is attached before the overlay is made: overlayfs before Linux 6.15
 * takes no layer outside the mounter's namespace. */
static int child_root(const sl_launch *l, const struct child_fds *f, char root[PATH_MAX])
{
	char lower[PATH_MAX], why[256];
	snprintf(root, PATH_MAX, "%s/rootfs", l->run_dir);
	snprintf(lower, sizeof(lower), "%s/lower", l->run_dir);
	child_keep_lower(f, lower);
	_cleanup_close_ int ovl = launch_overlay_mount(l, lower, why, sizeof(why));
	if (ovl < 0)
		child_fail(f->err, errno, "overlay of %s%s%s", l->upper, why[0] ? ": " : "", why);
	if (move_mount(ovl, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		child_fail(f->err, errno, "attach the root file system on %s", root);
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		child_fail(f->err, errno, "open %s", root);
	return rootfd;
}

/* DIR, a mount, made this mount namespace's root, and the root it had (the host's tree)
 * detached. The detach waits for an expedited RCU grace period in the kernel
 * (namespace_unlock): 0.1-3 ms here, 0.3 ms median. */
void launch_pivot_into(int errfd, const char *dir)
{
	if (chdir(dir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		child_fail(errfd, errno, "pivot_root into %s", dir);
}

/* Volumes and /etc files in the sandbox's root (ROOTFD, the process's root by now),
 * then on as the sandbox's root with its capabilities and seccomp FILTER (the whole
 * profile, or a spare's last part of it) into sandlot-init. */
void __attribute__((noreturn))
child_finish(const sl_launch *l, struct child_fds *f, int rootfd, const sl_bpf *filter)
{
	for (size_t i = 0; i < l->nmounts; i++) {
		_cleanup_close_ int target = launch_make_target(f->err, rootfd, l->mounts[i].target);
		if (move_mount(f->mounts[i], "", target, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			child_fail(f->err, errno, "mount volume on %s", l->mounts[i].target);
	}
	/* (A launch to hibernate is the sandbox's root already: its uid 0 is uid_base.) */
	uint32_t owner = l->hibernate ? 0 : l->uid_base;
	if (l->etc_hosts)
		write_etc(f->err, rootfd, "hosts", l->etc_hosts, owner);
	if (l->etc_resolv)
		write_etc(f->err, rootfd, "resolv.conf", l->etc_resolv, owner);
	if (sethostname(l->hostname, strlen(l->hostname)) < 0)
		child_fail(f->err, errno, "set hostname");
	/* In our cgroups now: they are the root of the cgroup namespace. */
	if (unshare(CLONE_NEWCGROUP) < 0)
		child_fail(f->err, errno, "new cgroup namespace");
	/* Become root of the sandbox's own user namespace (host uid l->uid_base). */
	/* Raw syscalls: glibc's set*id wrappers signal the parent's other threads
	 * (which this child does not have) and would wait forever. */
	/* (No F->userns: a launch to hibernate was cloned into it, and is its root already.) */
	if (f->userns >= 0 &&
	    (setns(f->userns, CLONE_NEWUSER) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 ||
	     syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0))
		child_fail(f->err, errno, "enter the sandbox user namespace");
	launch_drop_privileges(f->err, seccomp_default_caps());
	int lfd = fcntl(f->listen, F_DUPFD_CLOEXEC, 100);
	int logfd = f->log >= 0 ? fcntl(f->log, F_DUPFD_CLOEXEC, 100) : -2; /* -2: none */
	int cfd = f->client >= 0 ? fcntl(f->client, F_DUPFD_CLOEXEC, 100) : -1;
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (lfd < 0 || logfd == -1 || nul < 0 || (f->client >= 0 && cfd < 0) || dup2(nul, 0) < 0 ||
	    dup2(nul, 1) < 0 || dup2(nul, 2) < 0 || dup2(lfd, SL_INIT_LISTEN_FD) < 0 ||
	    (logfd >= 0 && dup2(logfd, SL_INIT_LOG_FD) < 0) ||
	    (cfd >= 0 && dup2(cfd, SL_INIT_CLIENT_FD) < 0))
		child_fail(f->err, errno, "set up init's descriptors");
	/* Nothing but 0-4 (and 5, a first client) crosses into init. */
	syscall(SYS_close_range, cfd >= 0 ? SL_INIT_CLIENT_FD + 1 : SL_INIT_LOG_FD + 1, ~0U,
		CLOSE_RANGE_CLOEXEC);
	sl_err err = { 0 };
	if (seccomp_bpf_install(filter, &err) < 0)
		child_fail(f->err, 0, "%s", err.msg);
	char *argv[] = { "sandlot-init", NULL };
	char *envp[4] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" };
	char **e = envp + 1;
	if (l->default_user_env)
		*e++ = (char *)l->default_user_env;
	if (l->volatile_upper)
		*e++ = SL_INIT_BRIEF;
	syscall(SYS_execveat, f->init, "", argv, envp, AT_EMPTY_PATH);
	child_fail(f->err, errno, "execute sandlot-init");
}

static void __attribute__((noreturn)) child_main(const sl_launch *l, struct child_fds *f)
{
	char root[PATH_MAX];
	launch_close_inherited(l, f);
	/* The sandbox runs at normal priority whoever launched it (the daemon's pool
	 * filler runs niced, so it does not slow down requests). */
	if (getpriority(PRIO_PROCESS, 0) != 0)
		setpriority(PRIO_PROCESS, 0, 0);
	child_enter(f->err, l->join, l->njoin, f->netns, f->stage < 0);
	if (f->stage >= 0) {
		_cleanup_close_ int rootfd = child_root_staged(l, f);
		child_finish(l, f, rootfd, l->seccomp);
	}
	_cleanup_close_ int rootfd = child_root(l, f, root);
	char empty[PATH_MAX];
	snprintf(empty, sizeof(empty), "%s/empty", l->run_dir);
	launch_kernel_fs(f->err, rootfd, root, empty, l->uid_base, !l->netns_ready, false, false,
			 false);
	launch_pivot_into(f->err, root);
	child_finish(l, f, rootfd, l->seccomp);
}

struct userns_helper {
	pid_t pid;
	int hold;     /* write end of a pipe the helper waits on */
	int pipe[2];  /* read by the helper, which shares our memory */
	char stack[16384] __attribute__((aligned(16)));
};

/* Not instrumented (make SAN=1): it runs on a stack inside its caller's frame and
 * exits without unwinding, so its redzones would stay poisoned in that frame. */
__attribute__((no_sanitize_address)) static int userns_helper_fn(void *arg)
{
	char c;
	const int *p = arg;
	/* Raw syscalls only: this child shares our memory (CLONE_VM). */
	/* Keep only our end: write ends of concurrent launches' pipes held here
	 * would make their helpers (and so those launches) wait on us. */
	if (p[0] > 0)
		syscall(SYS_close_range, 0, p[0] - 1, 0);
	syscall(SYS_close_range, p[0] + 1, ~0U, 0);
	syscall(SYS_read, p[0], &c, 1);
	syscall(SYS_exit, 0);
	return 0;
}

/* A user namespace mapping 0..65535 to base..base+65535, held by an fd. Its helper
 * process shares our memory (no page-table copy); userns_helper_release lets it exit
 * and userns_helper_reap, at the end of the launch, waits for it. */
static int make_userns(uint32_t base, struct userns_helper *h, sl_err *err)
{
	int *p = h->pipe;
	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	pid_t pid = clone(userns_helper_fn, h->stack + sizeof(h->stack),
			  CLONE_NEWUSER | CLONE_VM | SIGCHLD, p);
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return sl_sysfail(err, "create a user namespace");
	}
	h->pid = pid;
	h->hold = p[1];
	char path[64], map[64];
	int nsfd = -1, n = snprintf(map, sizeof(map), "0 %u 65536\n", base);
	const char *files[] = { "uid_map", "gid_map" };
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, n) != n)
			goto fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd >= 0) {
		close(p[0]);
		return nsfd;
	}
fail:
	sl_sysfail(err, "set up user namespace (%s)", path);
	close(p[0]);
	return -1;
}

static void userns_helper_release(struct userns_helper *h);
static void userns_helper_reap(struct userns_helper *h);

int launch_userns_open(uint32_t base, sl_err *err)
{
	struct userns_helper helper __attribute__((cleanup(userns_helper_reap)));
	helper.pid = 0;
	helper.hold = -1;
	return make_userns(base, &helper, err);
}

static void userns_helper_release(struct userns_helper *h)
{
	if (h->hold >= 0)
		close(h->hold);
	h->hold = -1;
}

/* Its exit (~80 us here, most of it the kernel's) ran beside the launch's child. */
static void userns_helper_reap(struct userns_helper *h)
{
	userns_helper_release(h);
	if (h->pid <= 0)
		return;
	while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	h->pid = 0;
}

/* A detached mount of dir whose ids are shifted into the sandbox's range: shared
 * image files show their real owners inside, and volumes keep one ownership. */
int launch_idmapped_tree(const char *dir, int userns, bool readonly, sl_err *err)
{
	int fd = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "open %s", dir);
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV |
					       MOUNT_ATTR_NOSUID |
					       (readonly ? MOUNT_ATTR_RDONLY : 0),
				   .userns_fd = userns };
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
		close(fd);
		return sl_sysfail(err, "id-map %s", dir);
	}
	return fd;
}

/* A spare's root file system, made here: an overlay of LOWER, the detached id-mapped
 * image layer named through our fd (the spare, whose root is no longer the host's, gets
 * it whole). Needs overlayfs to take a detached layer (Linux 6.15+): see
 * detached_layers. */
static int overlay_tree(const sl_launch *l, int lower, sl_err *err)
{
	char p[64], why[256];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", lower);
	int fd = launch_overlay_mount(l, p, why, sizeof(why));
	return fd < 0 ? sl_fail(err, SL_INTERNAL, errno, "sandbox %s: overlay of %s%s%s", l->id,
				l->upper, why[0] ? ": " : "", why)
		      : fd;
}

static int listen_socket(const char *path, sl_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return sl_fail(err, SL_INVALID, 0, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		sl_sysfail(err, "listen on %s", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int launch_mkdir_in(const char *dir, const char *name, mode_t mode, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", p);
	return 0;
}

struct shared_arg {
	const sl_launch *l;
	struct child_fds *f;
};

static int shared_main(void *p)
{
	struct shared_arg *a = p;
	child_main(a->l, a->f);
}

/* Launch stacks are kept for the next launch (a daemon makes many): pages once
 * touched are not faulted in again, and a first touch costs ~10-17 us on a VM
 * (docs/bench.md). A few are kept, for launches on several threads at once. A spare
 * init's stack comes from here too and goes back after its take: an munmap there was
 * 44 us of the create (the daemon's other CPU's TLB flushed). */
#define LAUNCH_GUARD 4096
static pthread_mutex_t stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static char *stacks[4];
static size_t nstacks;

char *launch_stack_get(void)
{
	char *s = NULL;
	pthread_mutex_lock(&stacks_lock);
	if (nstacks)
		s = stacks[--nstacks];
	pthread_mutex_unlock(&stacks_lock);
	if (s)
		return s;
	s = mmap(NULL, LAUNCH_STACK, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	mprotect(s, LAUNCH_GUARD, PROT_NONE);
	return s;
}

void launch_stack_put(char *s)
{
	/* Under ASan (make SAN=1) the child's frames poisoned their redzones in the shadow
	 * memory it shares with us, and left them so when it exec'd: clean them off, or the
	 * next child on this stack trips on them. */
	asan_unpoison(s, LAUNCH_STACK);
	pthread_mutex_lock(&stacks_lock);
	if (nstacks < sizeof(stacks) / sizeof(stacks[0])) {
		stacks[nstacks++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&stacks_lock);
	if (s)
		munmap(s, LAUNCH_STACK);
}

/* The child as a vfork (CLONE_VM | CLONE_VFORK): it runs on its own stack in our
 * memory while this thread waits until it execs init or exits; other threads of a
 * daemon go on. It runs with every signal blocked, so no handler of ours can run in
 * it (init sets its own mask). It calls only what is safe there: no set*id wrappers
 * (raw syscalls), nothing that takes a lock this thread could hold. */
static pid_t clone_shared(const sl_launch *l, struct child_fds *f, int flags)
{
	char *stack = launch_stack_get();
	if (!stack)
		return -1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	struct shared_arg a = { l, f };
	pid_t pid = clone(shared_main, stack + LAUNCH_STACK, flags | CLONE_VM | CLONE_VFORK, &a);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* vfork: the child has exec'd or exited, and its stack is free again. */
	launch_stack_put(stack);
	errno = e;
	return pid;
}

int launch_volume_fds(const sl_launch *l, int userns, int *fds, sl_err *err)
{
	if (l->nmounts > SL_MAX_VOLUMES)
		return sl_fail(err, SL_INVALID, 0, "at most %d volumes", SL_MAX_VOLUMES);
	for (size_t n = 0; n < l->nmounts; n++) {
		const sl_mount *m = &l->mounts[n];
		fds[n] = m->source ? launch_idmapped_tree(m->source, userns, m->readonly, err)
				   : fcntl(m->tree_fd, F_DUPFD_CLOEXEC, 3);
		if (fds[n] < 0 && !m->source)
			sl_sysfail(err, "sandbox %s: mount on %s", l->id, m->target);
		if (fds[n] < 0) {
			for (size_t i = 0; i < n; i++)
				close(fds[i]);
			return -1;
		}
	}
	return 0;
}

int launch_new_netns(sl_err *err)
{
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return sl_sysfail(err, "open this thread's network namespace");
	if (unshare(CLONE_NEWNET) < 0)
		return sl_sysfail(err, "new network namespace");
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int e = errno;
	const char *what = "open the new network namespace";
	if (fd >= 0 && (launch_netns_lo_up(&what) < 0 || netns_ports(AT_FDCWD, &what) < 0)) {
		e = errno;
		close(steal_fd(&fd));
	}
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* this thread would go on in the sandbox's namespace */
	if (fd < 0)
		return sl_fail(err, SL_INTERNAL, e, "new network namespace: %s", what);
	return fd;
}

/* Over 120 lines: one launch's steps in their order, each undone on failure below it. */
int launch_sandbox(const sl_launch *l, pid_t *init_pid, sl_err *err)
{
	char sock[PATH_MAX], logp[PATH_MAX];
	if (l->hibernate)
		return launch_hib_sandbox(l, init_pid, err);
	if (l->spare && (l->nmounts || (l->netns && !l->netns_ready))) {
		launch_spare_drop(l->spare);
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: a spare init takes no volumes, "
				"and only a network made ready", l->id);
	}
	/* A launch from nothing enters a copy of the staging mount namespace, if there can be
	 * one, with an overlay made here; else a copy of ours, where it makes its own. */
	_cleanup_close_ int stage = !l->spare && l->stage_dir ? stage_ns_open(l->stage_dir) : -1;
	/* A spare's run dir has them (launch_spare_make); the staging root too. */
	if (!l->spare && stage < 0 &&
	    (launch_mkdir_in(l->run_dir, "rootfs", 0700, err) < 0 ||
	     launch_mkdir_in(l->run_dir, "lower", 0700, err) < 0 ||
	     launch_mkdir_in(l->run_dir, "empty", 0555, err) < 0))
		return -1;
	snprintf(sock, sizeof(sock), "%s/init.sock", l->run_dir);
	snprintf(logp, sizeof(logp), "%s/init.log", l->run_dir);
	/* Not zeroed as a whole: its 16 KB stack would be four pages faulted in for nothing. */
	struct userns_helper helper __attribute__((cleanup(userns_helper_reap)));
	helper.pid = 0;
	helper.hold = -1;
	_cleanup_close_ int userns = make_userns(l->uid_base, &helper, err);
	if (userns < 0)
		return -1;
	int lower_fd = launch_idmapped_tree(l->image_layer, userns, true, err);
	/* The namespace lives on through our fd: let its helper go (reaped on return). */
	userns_helper_release(&helper);
	_cleanup_close_ int lower = lower_fd;
	if (lower < 0)
		return -1;
	/* A spare is handed its overlay, and so is a child in the staging namespace; one
	 * from nothing in a copy of ours makes its own (child_root). */
	bool here = l->spare || stage >= 0;
	_cleanup_close_ int rootmnt = here ? overlay_tree(l, lower, err) : -1;
	if (here && rootmnt < 0)
		return -1;
	_cleanup_close_ int lsock = listen_socket(sock, err);
	if (lsock < 0)
		return -1;
	_cleanup_close_ int initfd = open(l->init_path, O_RDONLY | O_CLOEXEC);
	if (initfd < 0)
		return sl_sysfail(err, "open %s", l->init_path);
	_cleanup_close_ int logfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0)
		return sl_sysfail(err, "open %s", logp);
	struct child_fds f = {.err = -1,
			      .userns = userns,
			      .lower = lower,
			      .root = rootmnt,
			      .listen = lsock,
			      .init = initfd,
			      .log = logfd,
			      .client = l->client ? *l->client : -1,
			      .netns = l->netns ? *l->netns : -1,
			      .stage = stage};
	if (l->spare) {
		/* Its namespaces are made: what it is handed is all it needs. */
		pid_t spid = l->spare->pid;
		if (launch_spare_go(l, &f, err) < 0) {
			unlink(sock);
			return -1;
		}
		*init_pid = spid;
		return 0;
	}
	int vol_fds[SL_MAX_VOLUMES];
	if (launch_volume_fds(l, userns, vol_fds, err) < 0)
		return -1;
	size_t nvol = l->nmounts;
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		for (size_t i = 0; i < nvol; i++)
			close(vol_fds[i]);
		return sl_sysfail(err, "pipe");
	}
	f.err = ep[1];
	for (size_t i = 0; i < nvol; i++)
		f.mounts[i] = vol_fds[i];
	int ns = (stage < 0 ? CLONE_NEWNS : 0) | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
	if (!l->netns)
		ns |= CLONE_NEWNET;
	pid_t pid = clone_shared(l, &f, ns | SIGCHLD);
	int clone_errno = errno;
	close(ep[1]);
	for (size_t i = 0; i < nvol; i++)
		close(vol_fds[i]);
	_cleanup_close_ int errfd = ep[0];
	char msg[800];
	ssize_t n;
	if (pid < 0)
		return sl_fail(err, SL_INTERNAL, clone_errno, "clone the sandbox's init");
	while ((n = read(errfd, msg, sizeof(msg) - 1)) < 0 && errno == EINTR)
		;
	if (n > 0) {
		msg[n] = '\0';
		sl_fail(err, SL_INTERNAL, 0, "start sandbox %s: %s", l->id, msg);
		goto kill_child;
	}
	if (!launch_runs_file(pid, initfd)) { /* killed before its exec (a vfork returns then too) */
		sl_fail(err, SL_INTERNAL, 0, "start sandbox %s: its child ended before it ran init",
			l->id);
		goto kill_child;
	}
	*init_pid = pid;
	return 0;
kill_child:
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	unlink(sock);
	return -1;
}


/* launch_spare.c — pid 1 made ahead (sl_launch_spare): a sandbox's init launched in its
 * own namespaces with its /proc, /sys and /dev staged, waiting for a take to hand it the
 * sandbox's root, layers and sockets; the take itself (launch_spare_go). */
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

/* The fds a take hands its spare, in this order; then a first client's, if the take's
 * byte has TAKE_CLIENT, and the sandbox's network namespace's, if it has TAKE_NETNS. */
enum {
	SPARE_LOWER,
	SPARE_ROOT,
	SPARE_LISTEN,
	SPARE_INIT,
	SPARE_LOG,
	SPARE_USERNS,
	SPARE_MUST,
	SPARE_NFDS = SPARE_MUST + 2
};
enum { TAKE_BYTE = 0x40, TAKE_CLIENT = 1, TAKE_NETNS = 2 };

/* The staged /dev made the sandbox's: its tmpfs root, nodes and /dev/shm owned by its
 * root (host uid BASE), and ptys made in its tty group. */
static void spare_own_dev(int errfd, const char *dev, uint32_t base)
{
	static const char *const owned[] = { ".", "null", "zero", "full", "random",
					     "urandom", "tty", "shm" };
	_cleanup_close_ int devfd = open(dev, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (devfd < 0)
		child_fail(errfd, errno, "open the staged /dev");
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (fchownat(devfd, owned[i], base, base, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
			child_fail(errfd, errno, "own /dev/%s", owned[i]);
	char pts[PATH_MAX + 8], opts[128];
	snprintf(pts, sizeof(pts), "%s/pts", dev);
	snprintf(opts, sizeof(opts), "ptmxmode=0666,mode=0620,gid=%u", base + 5);
	if (mount(NULL, pts, NULL, MS_REMOUNT | MS_NOSUID | MS_NOEXEC, opts) < 0)
		child_fail(errfd, errno, "set the tty group of /dev/pts");
}

/* Into a copy of the staging mount namespace STAGE (stage_ns_open): one mount, the
 * staging root, made this process's root and working directory. */
static void stage_enter(int errfd, int stage)
{
	if (setns(stage, CLONE_NEWNS) < 0 || unshare(CLONE_NEWNS) < 0 || chdir("/") < 0)
		child_fail(errfd, errno, "enter a copy of the staging mount namespace");
}

/* The kernel's file systems on the staging root's /proc, /sys and /dev (kernel_fs), its
 * own empty directories: mounted by name, /proc first (kernel_fs mounts the rest through
 * /proc/self/fd). /sys is the staging namespace's own, read-only and masked already
 * (stage_helper_fn), unless OWN_SYS (a sandbox with a network, whose sysfs must show its
 * devices) or the namespace has none (made by an older build): then a sysfs of its own
 * is mounted over it. */
static void stage_kernel_fs(int errfd, uint32_t base, bool new_net, bool own_sys)
{
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(errfd, errno, "mount proc");
	_cleanup_close_ int dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		child_fail(errfd, errno, "open the staging root");
	struct statfs sfs;
	bool shared = !own_sys && statfs("/sys", &sfs) == 0 && sfs.f_type == SYSFS_MAGIC;
	launch_kernel_fs(errfd, dirfd, "", "/empty", base, new_net, true, shared, false);
}

/* The spare's root while it waits: STAGE (<its run dir>/stage), empty directories
 * proc, sys, dev, newroot and lower, bound on itself with the sandbox's kernel file systems
 * mounted in it, made the root of the spare's mount namespace and then read-only. The
 * host's tree is detached here, ahead of any create, and so is the wait that detach
 * costs (pivot_into). EMPTY: what masks bind. */
static void spare_stage(int errfd, const char *stage, const char *empty)
{
	if (mount(stage, stage, NULL, MS_BIND, NULL) < 0)
		child_fail(errfd, errno, "bind %s", stage);
	_cleanup_close_ int dirfd = open(stage, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dirfd < 0)
		child_fail(errfd, errno, "open %s", stage);
	launch_kernel_fs(errfd, dirfd, stage, empty, 0, true, false, false, false);
	launch_pivot_into(errfd, stage);
	if (mount(NULL, "/", NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(errfd, errno, "make the staging root read-only");
}

/* A network made ready for the sandbox (NETNS: veth, address, route; net_prepare) entered at
 * the take, and a sysfs of its own mounted over the staged one, read-only and masked as
 * launch_kernel_fs masks it: /sys shows the namespace of the one that mounted it. The
 * spare's own namespace, empty, goes with its last reference. */
static void spare_enter_net(int errfd, int netns)
{
	if (setns(netns, CLONE_NEWNET) < 0)
		child_fail(errfd, errno, "enter the sandbox's network namespace");
	if (mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(errfd, errno, "mount the sysfs of the sandbox's network");
	const char *sys[8];
	size_t n = 0;
	for (size_t i = 0; launch_masked_paths[i] && n < 7; i++)
		if (!strncmp(launch_masked_paths[i], "sys/", 4))
			sys[n++] = launch_masked_paths[i];
	sys[n] = NULL;
	/* The staging root's empty directory, if it has one; else a tiny tmpfs each. */
	launch_mask_paths(errfd, "", access("/empty", F_OK) == 0 ? "/empty" : NULL, sys, NULL,
			  false);
}

/* The take's root: the overlay (F->root, a detached mount) attached at /newroot, the
 * image layer at /lower, the staged /proc, /sys and /dev moved into the overlay, and it moved onto
 * "/" and chrooted into, as switch_root does. No unmount, so no RCU wait, on this path. Beneath it
 * stays only the stage's empty, read-only directories, and out of reach: ".." at the root of a
 * mount stacked on the namespace's root dentry stays there (choose_mountpoint), so even a chroot
 * escape by the sandbox's root (it has CAP_SYS_CHROOT) ends on the overlay. */
static int spare_root(const struct child_fds *f)
{
	int errfd = f->err;
	child_keep_lower(f, "/lower");
	if (move_mount(f->root, "", AT_FDCWD, "/newroot", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		child_fail(errfd, errno, "attach the root file system");
	int rootfd = open("/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (rootfd < 0)
		child_fail(errfd, errno, "open the root file system");
	static const char *const staged[] = {"proc", "sys", "dev"};
	for (size_t i = 0; i < sizeof(staged) / sizeof(staged[0]); i++) {
		_cleanup_close_ int from =
		    openat(AT_FDCWD, staged[i], O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		_cleanup_close_ int to = launch_open_mountpoint(rootfd, staged[i], 1);
		if (from < 0 || to < 0 ||
		    move_mount(from, "", to, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			child_fail(errfd, errno, "move the staged /%s into the root", staged[i]);
	}
	if (chdir("/newroot") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0)
		child_fail(errfd, errno, "make the root file system the root");
	return rootfd;
}

/* A launch from nothing in a copy of the staging mount namespace (stage_ns_open; F->stage)
 * rather than of the host's: the kernel's file systems staged at its /proc, /sys and /dev
 * as a spare stages them, then the root made as a spare's take makes it (spare_root: the
 * overlay, F->root, made by the parent). The host's mount table is neither copied nor,
 * after a pivot_root that visits every task on the host, detached again with an
 * expedited RCU grace period: this namespace never had it (docs/isolation.md). */
int child_root_staged(const sl_launch *l, const struct child_fds *f)
{
	stage_enter(f->err, f->stage);
	stage_kernel_fs(f->err, l->uid_base, !l->netns_ready, l->network);
	return spare_root(f);
}

/* Every call the take makes (spare_main after its recvmsg, spare_own_dev, spare_root,
 * child_finish) that the profile may deny must be here: the spare's filter is already in
 * place, and test_creates_take_spare_init fails on a take that hits it. */
const char *const launch_take_calls[] = {"mount",   "move_mount", "sethostname",
					 "unshare", "setns",	  NULL};

/* The spare's child. Until its take it shares the daemon's memory (a clone with
 * CLONE_VM, not a vfork: the daemon goes on) and so, like the launch's child, makes raw
 * system calls only, on its own stack. It keeps one fd of the daemon's, its socket:
 * EOF there (the daemon gone, or dropping it) ends it. */
static int spare_main(void *arg)
{
	sl_launch_spare *sp = arg;
	int c = sp->child_sock, ns = sp->stage;
	/* All but the socket and the staging namespace's fd (if any) closed. */
	int keep[2] = {c < ns ? c : ns, c < ns ? ns : c}, lo = 3;
	for (int i = ns >= 0 ? 0 : 1; i < 2; i++) {
		if (keep[i] > lo)
			syscall(SYS_close_range, (unsigned)lo, (unsigned)keep[i] - 1, 0);
		lo = keep[i] + 1;
	}
	syscall(SYS_close_range, (unsigned)lo, ~0U, 0);
	/* The cgroups are joined by their host paths, before the staging namespace. */
	child_enter(c, sp->join, sp->njoin, -1, ns < 0);
	if (ns >= 0) {
		stage_enter(c, ns);
		close(ns);
		stage_kernel_fs(c, 0, true, false);
	} else {
		char stage[PATH_MAX + 8], empty[PATH_MAX + 8];
		snprintf(stage, sizeof(stage), "%s/stage", sp->dir);
		snprintf(empty, sizeof(empty), "%s/empty", sp->dir);
		spare_stage(c, stage, empty);
	}
	/* The profile, less what the take still does (launch_take_calls): its ~150 us
	 * install is then off the create's path, and the take's filter is a few
	 * instructions. Privileged until the take, it needs no PR_SET_NO_NEW_PRIVS. */
	sl_err err = {0};
	if (sp->seccomp_ahead && seccomp_bpf_install(sp->seccomp_ahead, &err) < 0)
		child_fail(c, 0, "%s", err.msg);
	if (write(c, "R", 1) != 1)
		_exit(1);

	char byte;
	struct iovec iov = { &byte, 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * SPARE_NFDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n;
	while ((n = recvmsg(c, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *cm = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
		_exit(0); /* dropped, or the daemon is gone */
	size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int fds[SPARE_NFDS];
	memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
	bool client = byte & TAKE_CLIENT, net = byte & TAKE_NETNS;
	if ((byte & ~(TAKE_CLIENT | TAKE_NETNS)) != TAKE_BYTE ||
	    nfds != (size_t)SPARE_MUST + client + net)
		child_fail(c, EINVAL, "a take handed %zu fds", nfds);
	const sl_launch *l = sp->l;
	struct child_fds f = {.err = c,
			      .userns = fds[SPARE_USERNS],
			      .lower = fds[SPARE_LOWER],
			      .root = fds[SPARE_ROOT],
			      .listen = fds[SPARE_LISTEN],
			      .init = fds[SPARE_INIT],
			      .log = fds[SPARE_LOG],
			      .client = client ? fds[SPARE_MUST] : -1,
			      .netns = net ? fds[SPARE_MUST + client] : -1,
			      .stage = -1};
	launch_close_inherited(l, &f);
	if (getpriority(PRIO_PROCESS, 0) != 0)
		setpriority(PRIO_PROCESS, 0, 0);
	if (f.netns >= 0) {
		spare_enter_net(c, f.netns);
		close(f.netns);
	}
	spare_own_dev(c, "/dev", l->uid_base);
	_cleanup_close_ int rootfd = spare_root(&f);
	child_finish(l, &f, rootfd, sp->seccomp_ahead ? sp->seccomp_last : l->seccomp);
}

/* Whether overlayfs takes a detached mount as a layer (Linux 6.15+), as a spare's take
 * needs (overlay_tree): probed once, in DIR (a directory of ours, left as it was), with a
 * detached clone of an empty directory over a fresh upper and work. */
bool launch_detached_layers(const char *dir)
{
	static _Atomic int known; /* 0 not yet, 1 yes, -1 no */
	int k = atomic_load(&known);
	if (k)
		return k > 0;
	char lo[PATH_MAX + 16], up[PATH_MAX + 16], wk[PATH_MAX + 16], wkw[PATH_MAX + 24];
	snprintf(lo, sizeof(lo), "%s/probe-lower", dir);
	snprintf(up, sizeof(up), "%s/probe-upper", dir);
	snprintf(wk, sizeof(wk), "%s/probe-work", dir);
	snprintf(wkw, sizeof(wkw), "%s/work", wk);
	bool ok = false;
	if (mkdir(lo, 0700) == 0 && mkdir(up, 0700) == 0 && mkdir(wk, 0700) == 0) {
		_cleanup_close_ int l =
		    open_tree(AT_FDCWD, lo, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		sl_launch probe = {.upper = up, .work = wk};
		char p[64], why[256];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", l);
		int fd = l >= 0 ? launch_overlay_mount(&probe, p, why, sizeof(why)) : -1;
		ok = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	rmdir(wkw);
	rmdir(wk);
	rmdir(up);
	rmdir(lo);
	atomic_store(&known, ok ? 1 : -1);
	return ok;
}

int launch_spare_make(sl_launch_spare *sp, sl_err *err)
{
	static const char *const dirs[] = {"stage/proc", "stage/sys", "stage/dev", "stage/newroot",
					   "stage/lower"};
	char stage[PATH_MAX + 8];
	sp->pid = 0;
	sp->sock = -1;
	sp->l = NULL;
	sp->stage = -1;
	snprintf(stage, sizeof(stage), "%s/stage", sp->dir);
	if (mkdir(sp->dir, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", sp->dir);
	if (!launch_detached_layers(sp->dir))
		return sl_fail(err, SL_NOTIMPL, 0,
			       "spare inits need overlayfs to take a detached layer (Linux 6.15 or "
			       "later): creates launch from nothing");
	/* Made in a copy of the staging namespace (no stage of its own, no pivot_root, no
	 * detach of the host's tree), or else in a stage of its run dir. */
	_cleanup_close_ int ns = sp->stage_dir[0] ? stage_ns_open(sp->stage_dir) : -1;
	sp->stage = ns;
	if (ns < 0) {
		if (mkdir(stage, 0555) < 0 && errno != EEXIST)
			return sl_sysfail(err, "create %s", stage);
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
			if (launch_mkdir_in(sp->dir, dirs[i], 0555, err) < 0)
				return -1;
		if (launch_mkdir_in(sp->dir, "empty", 0555, err) < 0)
			return -1;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sl_sysfail(err, "socketpair");
	sp->stack = launch_stack_get();
	if (!sp->stack) {
		close(sv[0]);
		close(sv[1]);
		return sl_sysfail(err, "stack of a spare init");
	}
	sp->child_sock = sv[1];
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(spare_main, sp->stack + LAUNCH_STACK,
			  CLONE_VM | (ns < 0 ? CLONE_NEWNS : 0) | CLONE_NEWPID | CLONE_NEWUTS |
			      CLONE_NEWIPC | CLONE_NEWNET | SIGCHLD,
			  sp);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	sp->sock = sv[0];
	if (pid < 0) {
		launch_spare_drop(sp);
		return sl_fail(err, SL_INTERNAL, e, "clone a spare init");
	}
	sp->pid = pid;
	char msg[800];
	ssize_t n;
	while ((n = read(sp->sock, msg, sizeof(msg) - 1)) < 0 && errno == EINTR)
		;
	if (n == 1 && msg[0] == 'R')
		return 0;
	msg[n > 0 ? n : 0] = '\0';
	sl_fail(err, SL_INTERNAL, n < 0 ? errno : 0, "spare init: %s",
		n > 0 ? msg : "ended before it was ready");
	launch_spare_drop(sp);
	return -1;
}

void launch_spare_drop(sl_launch_spare *sp)
{
	if (sp->sock >= 0)
		close(steal_fd(&sp->sock)); /* EOF: it exits */
	if (sp->pid > 0) {
		kill(sp->pid, SIGKILL);
		while (waitpid(sp->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		sp->pid = 0;
	}
	/* Not before it is gone: it ran on this stack, in our memory. */
	if (sp->stack)
		launch_stack_put(sp->stack);
	sp->stack = NULL;
}

/* Whether PID runs the file INIT (an open fd) now. An exec switches a process's memory
 * (and so its /proc/<pid>/exe) before it closes its close-on-exec fds; an exit drops its
 * memory (exe: ENOENT) before it closes its fds. So, once its end of a close-on-exec
 * socket is closed, this tells an exec of init from a death. */
bool launch_runs_file(pid_t pid, int init)
{
	char path[64];
	struct stat want, got;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return fstat(init, &want) == 0 && stat(path, &got) == 0 && got.st_dev == want.st_dev &&
	       got.st_ino == want.st_ino;
}

/* The take: hand the spare its fds and wait until it has exec'd init (EOF on the
 * socket, whose end it holds closes on exec) or failed (its message). A spare killed
 * once it was handed them closes its end too: EOF with no init running is a failure. */
int launch_spare_go(const sl_launch *l, const struct child_fds *f, sl_err *err)
{
	sl_launch_spare *sp = l->spare;
	int fds[SPARE_NFDS] = {
	    [SPARE_LOWER] = f->lower, [SPARE_ROOT] = f->root, [SPARE_LISTEN] = f->listen,
	    [SPARE_INIT] = f->init,   [SPARE_LOG] = f->log,   [SPARE_USERNS] = f->userns};
	size_t nfds = SPARE_MUST;
	char byte = TAKE_BYTE;
	if (f->client >= 0) {
		fds[nfds++] = f->client;
		byte |= TAKE_CLIENT;
	}
	if (f->netns >= 0) {
		fds[nfds++] = f->netns;
		byte |= TAKE_NETNS;
	}
	union {
		char buf[CMSG_SPACE(sizeof(int) * SPARE_NFDS)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	sp->l = l;
	ssize_t n;
	while ((n = sendmsg(sp->sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		sl_sysfail(err, "hand sandbox %s to its spare init", l->id);
		launch_spare_drop(sp);
		return -1;
	}
	char text[800];
	while ((n = read(sp->sock, text, sizeof(text) - 1)) < 0 && errno == EINTR)
		;
	if (n != 0 || !launch_runs_file(sp->pid, f->init)) {
		int e = n < 0 ? errno : 0;
		text[n > 0 ? n : 0] = '\0';
		if (n <= 0)
			snprintf(text, sizeof(text), "%s",
				 n ? "no answer from its spare init"
				   : "its spare init ended before it ran init");
		sl_fail(err, SL_INTERNAL, e, "start sandbox %s: %s", l->id, text);
		launch_spare_drop(sp);
		return -1;
	}
	/* Init runs in its own memory now: the stack is ours again, and the pid init's
	 * (no longer the spare's to drop). */
	close(steal_fd(&sp->sock));
	launch_stack_put(sp->stack);
	sp->stack = NULL;
	sp->pid = 0;
	return 0;
}


/* launch_stage.c — the staging mount namespace: one made per run dir, kept bound under
 * <run>/stage, whose copies a launch from nothing starts in (so the launcher's own mount
 * table is never copied). */
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

static int stage_ns_try(const char *ns)
{
	int fd = open(ns, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNS) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct stage_helper {
	const char *root;
	int ready[2], hold[2];
};

/* Its mount namespace made the staging one: ROOT bound on itself, made the root, the host's
 * tree detached, and the rest read-only. It waits until the parent has bound the namespace
 * (or gone). Shares our memory (CLONE_VM): system calls only. */
static int stage_helper_fn(void *arg)
{
	struct stage_helper *h = arg;
	char c = 'R';
	/* Our copy of the write end would keep the wait below from ever seeing EOF. */
	syscall(SYS_close, h->hold[1]);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(h->root, h->root, NULL, MS_BIND, NULL) < 0 || chdir(h->root) < 0 ||
	    syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		c = 'E';
	/* One sysfs for every sandbox without a network: mounted in a network namespace of
	 * its own (which it keeps alive), so its /sys/class/net shows a lo as theirs does;
	 * read-only, masked as kernel_fs masks a sandbox's. A sysfs per sandbox was a
	 * superblock each, and mounting one looks through every sysfs superblock on the host
	 * for one to share. */
	const char *what;
	if (c == 'R' && (unshare(CLONE_NEWNET) < 0 || launch_netns_lo_up(&what) < 0 ||
			 mount("sysfs", "/sys", "sysfs",
			       MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
		c = 'E';
	for (int i = 0; c == 'R' && launch_masked_paths[i]; i++) {
		char p[128];
		struct stat st;
		if (strncmp(launch_masked_paths[i], "sys/", 4))
			continue;
		snprintf(p, sizeof(p), "/%s", launch_masked_paths[i]);
		if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (mount("/empty", p, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, p, NULL,
			  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			c = 'E';
	}
	if (c == 'R' &&
	    mount(NULL, "/", NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		c = 'E';
	syscall(SYS_write, h->ready[1], &c, 1);
	syscall(SYS_read, h->hold[0], &c, 1);
	syscall(SYS_exit, 0);
	return 0;
}

/* DIR (<run>/stage) a private mount of its own: a mount namespace's file cannot be bound
 * where the bind would propagate (EINVAL), and /run is often shared. */
static int stage_dir_private(const char *dir)
{
	struct statx stx;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, 0, &stx) < 0)
		return -1;
	if (!(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
	    mount(dir, dir, NULL, MS_BIND, NULL) < 0)
		return -1;
	return mount(NULL, dir, NULL, MS_PRIVATE, NULL);
}

static void stage_ns_make(const char *dir, const char *ns)
{
	static const char *const dirs[] = {"root",	   "root/proc",	 "root/sys",  "root/dev",
					   "root/newroot", "root/lower", "root/empty"};
	char root[PATH_MAX];
	sl_err err = {0};
	if (!launch_detached_layers(dir)) {
		/* Not probed again by every launch (a CLI's is a process of its own) until
		 * another kernel runs. */
		struct utsname u;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/unsupported", dir);
		_cleanup_close_ int fd =
		    open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0 && uname(&u) == 0 && write(fd, u.release, strlen(u.release)) < 0)
			sl_log(SL_LOG_WARN, "%s: %s", p, strerror(errno));
		return;
	}
	if (stage_dir_private(dir) < 0)
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (launch_mkdir_in(dir, dirs[i], i ? 0555 : 0700, &err) < 0)
			return;
	_cleanup_close_ int file = open(ns, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (file < 0)
		return;
	snprintf(root, sizeof(root), "%s/root", dir);
	struct stage_helper h = {.root = root, .ready = {-1, -1}, .hold = {-1, -1}};
	char *stack = launch_stack_get();
	if (!stack || pipe2(h.ready, O_CLOEXEC) < 0 || pipe2(h.hold, O_CLOEXEC) < 0)
		goto out;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid =
	    clone(stage_helper_fn, stack + LAUNCH_STACK, CLONE_VM | CLONE_NEWNS | SIGCHLD, &h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto out;
	char c = 0, path[64];
	while (read(h.ready[0], &c, 1) < 0 && errno == EINTR)
		;
	/* Its network namespace first, kept on DIR/net: the sysfs holds only a passive
	 * reference, and with the namespace gone its /sys/class/net would be empty. */
	char net[PATH_MAX];
	snprintf(net, sizeof(net), "%s/net", dir);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	umount2(net, UMOUNT_NOFOLLOW); /* a namespace made before, if any */
	int netfile = c == 'R' ? open(net, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	if (netfile >= 0)
		close(netfile);
	if (c == 'R' && (netfile < 0 || mount(path, net, NULL, MS_BIND, NULL) < 0)) {
		sl_log(SL_LOG_WARN, "staging network namespace on %s: %s", net, strerror(errno));
		c = 'E';
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (c == 'R' && mount(path, ns, NULL, MS_BIND, NULL) < 0) {
		sl_log(SL_LOG_WARN, "staging mount namespace on %s: %s", ns, strerror(errno));
		umount2(net, 0);
	}
	close(h.hold[1]);
	h.hold[1] = -1;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
out:
	for (int i = 0; i < 2; i++) {
		if (h.ready[i] >= 0)
			close(h.ready[i]);
		if (h.hold[i] >= 0)
			close(h.hold[i]);
	}
	if (stack)
		launch_stack_put(stack);
}

/* This kernel's overlayfs takes no detached layer (stage_ns_make). */
static bool stage_unsupported(const char *dir)
{
	char p[PATH_MAX], text[sizeof(((struct utsname *)0)->release)];
	struct utsname u;
	snprintf(p, sizeof(p), "%s/unsupported", dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (n < 0 || uname(&u) < 0)
		return false;
	text[n] = '\0';
	return strcmp(text, u.release) == 0;
}

int stage_ns_open(const char *dir)
{
	char ns[PATH_MAX], lock[PATH_MAX];
	snprintf(ns, sizeof(ns), "%s/ns", dir);
	int fd = stage_ns_try(ns);
	if (fd >= 0 || stage_unsupported(dir))
		return fd;
	snprintf(lock, sizeof(lock), "%s/lock", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	_cleanup_close_ int lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		return -1;
	fd = stage_ns_try(ns);
	if (fd < 0) {
		stage_ns_make(dir, ns);
		fd = stage_ns_try(ns);
	}
	return fd;
}


/* launch_hib.c — a launch CRIU can dump, for sandboxes created with "hibernate": true
 * (docs/hibernate.md). Where launch.c builds the root as host root and only then joins
 * the sandbox's user namespace, this child is cloned into a new user namespace together
 * with the others, so that namespace owns its mount, pid, uts, ipc and network
 * namespaces, as CRIU needs to dump and restore them. It makes its root with pivot_root
 * (no staging namespace, no spare), mounts /proc before the host's tree is detached,
 * and hands init no file of the host: init's control socket is an abstract name in the
 * sandbox's network namespace (SL_INIT_ABSTRACT), and init keeps no log. The price in
 * isolation is docs/isolation.md's, "Sandboxes made to hibernate". */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch_internal.h"
#include "proto.h"

struct hib_arg {
	const sl_launch *l;
	const struct child_fds *f;
	int sync; /* read end: the parent has written our uid and gid maps */
};

/* init's listener: SL_INIT_ABSTRACT in this (the sandbox's) network namespace. */
static int hib_listen(int errfd)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, SL_INIT_ABSTRACT, sizeof(SL_INIT_ABSTRACT) - 1);
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(SL_INIT_ABSTRACT) - 1;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, 64) < 0)
		child_fail(errfd, errno, "init's control socket in the sandbox");
	return fd;
}

/* sandlot-init's binary (INIT, an O_PATH fd of the host's file in our namespace) bound read-only
 * into the sandbox: CRIU dumps a mapping by its file, which must be on a mount of the dumped tree.
 */
#define HIB_INIT_PATH "dev/.sandlot-init"
static void hib_bind_init(int errfd, int init)
{
	char src[64];
	snprintf(src, sizeof(src), "/proc/self/fd/%d", init);
	int t = open(HIB_INIT_PATH, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
	if (t < 0)
		child_fail(errfd, errno, "create /%s", HIB_INIT_PATH);
	close(t);
	if (mount(src, HIB_INIT_PATH, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, HIB_INIT_PATH, NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		child_fail(errfd, errno, "bind sandlot-init on /%s", HIB_INIT_PATH);
}

/* The child, sharing our memory (CLONE_VM) but not our fd table; all signals blocked.
 * Until its setresuid it is still host uid 0 (a user namespace changes no credential),
 * which is what lets it join the cgroups and walk the run dir (0700, root's). */
static int hib_main(void *p)
{
	const struct hib_arg *a = p;
	const sl_launch *l = a->l;
	struct child_fds f = *a->f;
	char c, root[PATH_MAX];
	if (read(a->sync, &c, 1) != 1)
		child_fail(f.err, errno, "wait for the user namespace's maps");
	launch_close_inherited(l, &f);
	if (getpriority(PRIO_PROCESS, 0) != 0)
		setpriority(PRIO_PROCESS, 0, 0);
	child_enter(f.err, l->join, l->njoin, -1, false);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(f.err, errno, "make mounts private");
	snprintf(root, sizeof(root), "%s/rootfs", l->run_dir);
	/* init's binary, opened here, while we may walk the host's tree: a bind takes a
	 * mount of our namespace. */
	_cleanup_close_ int initpath = open(l->init_path, O_PATH | O_CLOEXEC);
	if (initpath < 0)
		child_fail(f.err, errno, "open %s", l->init_path);
	if (move_mount(f.root, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		child_fail(f.err, errno, "attach the root file system on %s", root);
	if (chdir(root) < 0)
		child_fail(f.err, errno, "enter %s", root);
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, 0, 0, 0) < 0 ||
	    syscall(SYS_setresuid, 0, 0, 0) < 0)
		child_fail(f.err, errno, "become the sandbox's root");
	_cleanup_close_ int rootfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		child_fail(f.err, errno, "open the root file system");
	/* /proc before the host's tree goes: a proc mount in a user namespace needs a
	 * fully visible one beside it. */
	/* The masked directories get read-only tmpfs (EMPTY NULL): CRIU restores those
	 * itself, where a bind of the run dir's empty/ is a host path the restored sandbox's
	 * root may not walk. */
	launch_kernel_fs(f.err, rootfd, ".", NULL, 0, true, false, false, true);
	hib_bind_init(f.err, initpath);
	launch_pivot_into(f.err, ".");
	/* Run from that bind, so its mapping is of a file CRIU finds in the sandbox. */
	f.init = open("/" HIB_INIT_PATH, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (f.init < 0)
		child_fail(f.err, errno, "open /%s", HIB_INIT_PATH);
	f.listen = hib_listen(f.err);
	f.userns = -1;
	child_finish(l, &f, rootfd, l->seccomp);
}

/* "PID STARTTIME" of init in <run_dir>/init.ns: how the host finds the network namespace
 * its control socket is in (initctl.c). */
int launch_hib_record(const char *run_dir, pid_t pid, sl_err *err)
{
	char p[PATH_MAX], tmp[PATH_MAX], text[64];
	snprintf(p, sizeof(p), "%s/init.ns", run_dir);
	snprintf(tmp, sizeof(tmp), "%s/.init.ns.tmp", run_dir);
	int n = snprintf(text, sizeof(text), "%d %llu\n", (int)pid,
			 (unsigned long long)proc_start_time(pid));
	_cleanup_close_ int fd =
	    open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || rename(tmp, p) < 0)
		return sl_sysfail(err, "write %s", p);
	return 0;
}

static int write_maps(pid_t pid, uint32_t base, sl_err *err)
{
	char path[64], map[64];
	int n = snprintf(map, sizeof(map), "0 %u 65536\n", base);
	const char *files[] = {"uid_map", "gid_map"};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, n) != n)
			return sl_sysfail(err, "write %s", path);
	}
	return 0;
}

/* The network of the child PID's new namespace (L->net_setup), if it is to have one. */
static int hib_network(const sl_launch *l, pid_t pid, sl_err *err)
{
	char p[64];
	if (!l->net_setup)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)pid);
	_cleanup_close_ int ns = open(p, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return sl_sysfail(err, "open %s", p);
	return l->net_setup(l->net_arg, ns, err);
}

static int hib_clone(const sl_launch *l, struct child_fds *fp, pid_t *init_pid, sl_err *err);

/* The root, init's binary and the volumes made; then the child (hib_clone). */
int launch_hib_sandbox(const sl_launch *l, pid_t *init_pid, sl_err *err)
{
	char why[256], p[64];
	if (l->spare || l->netns)
		return sl_fail(err, SL_INTERNAL, 0,
			       "sandbox %s: a launch to hibernate takes no spare and makes its own "
			       "network namespace",
			       l->id);
	if (launch_mkdir_in(l->run_dir, "rootfs", 0700, err) < 0)
		return -1;
	_cleanup_close_ int userns = launch_userns_open(l->uid_base, err);
	if (userns < 0)
		return -1;
	_cleanup_close_ int lower = launch_idmapped_tree(l->image_layer, userns, true, err);
	if (lower < 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", lower);
	_cleanup_close_ int rootmnt = launch_overlay_mount(l, p, why, sizeof(why));
	if (rootmnt < 0)
		return sl_fail(err, SL_INTERNAL, errno, "sandbox %s: overlay of %s%s%s", l->id,
			       l->upper, why[0] ? ": " : "", why);
	_cleanup_close_ int initfd = open(l->init_path, O_RDONLY | O_CLOEXEC);
	if (initfd < 0)
		return sl_sysfail(err, "open %s", l->init_path);
	/* Volumes id-mapped into a namespace of the same map as the child's. */
	struct child_fds f = {.err = -1,
			      .userns = -1,
			      .lower = -1,
			      .root = rootmnt,
			      .listen = -1,
			      .init = initfd,
			      .log = -1,
			      .client = l->client ? *l->client : -1,
			      .netns = -1,
			      .stage = -1};
	if (launch_volume_fds(l, userns, f.mounts, err) < 0)
		return -1;
	int r = hib_clone(l, &f, init_pid, err);
	for (size_t i = 0; i < l->nmounts; i++)
		close(f.mounts[i]);
	return r;
}

/* Over 60 lines: the clone, its maps, its network, and its wait for init; undone on
 * failure. */
static int hib_clone(const sl_launch *l, struct child_fds *fp, pid_t *init_pid, sl_err *err)
{
	struct child_fds f = *fp;
	int ep[2], sp[2];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	if (pipe2(sp, O_CLOEXEC) < 0) {
		close(ep[0]);
		close(ep[1]);
		return sl_sysfail(err, "pipe");
	}
	_cleanup_close_ int errfd = ep[0], syncw = sp[1];
	f.err = ep[1];
	struct hib_arg a = {l, &f, sp[0]};
	char *stack = launch_stack_get();
	if (!stack) {
		close(ep[1]);
		close(sp[0]);
		return sl_sysfail(err, "a stack for the launch");
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(hib_main, stack + LAUNCH_STACK,
			  CLONE_VM | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS |
			      CLONE_NEWIPC | CLONE_NEWNET | SIGCHLD,
			  &a);
	int clone_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(ep[1]);
	close(sp[0]);
	if (pid < 0) {
		launch_stack_put(stack);
		return sl_fail(err, SL_INTERNAL, clone_errno, "clone the sandbox's init");
	}
	char msg[800];
	ssize_t n = 0;
	if (write_maps(pid, l->uid_base, err) < 0 || hib_network(l, pid, err) < 0 ||
	    write(syncw, "g", 1) != 1) {
		if (!err->msg[0])
			sl_sysfail(err, "wake the sandbox's init");
		goto kill_child;
	}
	/* Its copy of the pipe's write end closes as it execs init (or exits): until then
	 * it runs on STACK, in our memory. */
	while ((n = read(errfd, msg, sizeof(msg) - 1)) < 0 && errno == EINTR)
		;
	if (n > 0) {
		msg[n] = '\0';
		sl_fail(err, SL_INTERNAL, 0, "start sandbox %s: %s", l->id, msg);
		goto kill_child;
	}
	if (!launch_runs_file(pid, f.init)) {
		sl_fail(err, SL_INTERNAL, 0, "start sandbox %s: its child ended before it ran init",
			l->id);
		goto kill_child;
	}
	launch_stack_put(stack);
	if (launch_hib_record(l->run_dir, pid, err) < 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	*init_pid = pid;
	return 0;
kill_child:
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	launch_stack_put(stack);
	return -1;
}

/* init.c — sandlot-init, pid 1 of every sandbox: holds the namespaces, reaps every
 * process, and spawns commands on request over the control socket it inherits.
 * Built static (musl): it must stay tiny, since every idle sandbox runs one. Once a
 * workload runs, this process is as (un)trusted as the sandbox's root: the host side
 * validates all it says. */
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define MAX_CONNS     128
#define MAX_CHILDREN  4096
#define STOP_GRACE_MS 10000
/* What a stop gives the sandbox's other processes (orphans, daemons: init's children but
 * not commands it runs) once its commands are gone, before init leaves and the kernel
 * kills what is left. */
#define ORPHAN_GRACE_MS 100
/* sudo's share (docs/isolation.md, "sudo"): connections and live commands the sandbox's
 * own clients may hold, so they can never take the slots the host's side needs. */
#define MAX_SUDO_CONNS	  16
#define MAX_SUDO_CHILDREN 64
#define FIRST_CONN	  3 /* pfds: [0] signals, [1] listener, [2] sudo's listener */

extern char **environ;

struct child {
	pid_t pid;
	int conn; /* index in conns, -1 when the client went away */
	int exit_fd;
	int hold_fd;	  /* SL_SPAWN_HOLD_FD: kept open until STDIN_EOF or the exit */
	int64_t deadline; /* monotonic ms of the timeout, 0 for none */
	int timed_out;
	int last; /* SL_SPAWN_LAST: close the connection after the exit */
	int sudo; /* started by a sandbox's own client (sudo), counted against its share */
};

static struct pollfd pfds[FIRST_CONN + MAX_CONNS]; /* then clients, from FIRST_CONN */
static char conn_sudo[FIRST_CONN + MAX_CONNS];	   /* the client came through sudo's socket */
static int nsudo_conns, nsudo_children;
static struct child children[MAX_CHILDREN];
static int nchildren;
static int log_fd = -1;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logf_(const char *fmt, ...)
{
	if (log_fd < 0)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(log_fd, buf, n) < 0)
		log_fd = -1;
}

static void send_rep(int fd, uint32_t type, int32_t pid, int32_t status, int pass_fd,
		     const char *msg)
{
	struct sl_rep rep = {.hdr = {SL_PROTO_MAGIC, type}, .pid = pid, .status = status};
	if (msg)
		snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	struct iovec iov = {&rep, sizeof(rep)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pass_fd >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	while (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR)
		;
}

/* The last lookup: commands mostly run as one user, and reading /etc/passwd and
 * /etc/group (plus musl's nscd probe) is ten system calls. It holds while both files
 * are the same inodes with the same size and change time: the sandbox may edit them. */
static struct {
	int valid;
	char spec[64];
	struct stat pw, gr;
	uid_t uid;
	gid_t gid;
	char home[PATH_MAX];
	gid_t groups[64];
	int ngroups;
} user_cache;

static int same_file(const char *path, const struct stat *was, struct stat *now)
{
	if (stat(path, now) < 0)
		memset(now, 0, sizeof(*now));
	return now->st_ino == was->st_ino && now->st_dev == was->st_dev &&
	       now->st_size == was->st_size && now->st_ctim.tv_sec == was->st_ctim.tv_sec &&
	       now->st_ctim.tv_nsec == was->st_ctim.tv_nsec;
}

static int resolve_user_uncached(const char *spec, uid_t *uid, gid_t *gid, char *home,
				 size_t homelen, gid_t *groups, int *ngroups);

/* "name", "uid" or "uid:gid" -> ids, home and supplementary groups; -1 when unknown.
 * Runs in init before the fork: the vfork child below must not touch libc state. */
static int resolve_user(const char *spec, uid_t *uid, gid_t *gid, char *home, size_t homelen,
			gid_t *groups, int *ngroups)
{
	struct stat pw, gr;
	int fresh = same_file("/etc/passwd", &user_cache.pw, &pw) &
		    same_file("/etc/group", &user_cache.gr, &gr);
	if (user_cache.valid && fresh && !strcmp(spec, user_cache.spec) &&
	    *ngroups >= user_cache.ngroups) {
		*uid = user_cache.uid;
		*gid = user_cache.gid;
		snprintf(home, homelen, "%s", user_cache.home);
		memcpy(groups, user_cache.groups, user_cache.ngroups * sizeof(gid_t));
		*ngroups = user_cache.ngroups;
		return 0;
	}
	user_cache.valid = 0;
	if (resolve_user_uncached(spec, uid, gid, home, homelen, groups, ngroups) < 0)
		return -1;
	if (strlen(spec) < sizeof(user_cache.spec) && strlen(home) < sizeof(user_cache.home) &&
	    *ngroups <= 64) {
		snprintf(user_cache.spec, sizeof(user_cache.spec), "%s", spec);
		user_cache.pw = pw;
		user_cache.gr = gr;
		user_cache.uid = *uid;
		user_cache.gid = *gid;
		snprintf(user_cache.home, sizeof(user_cache.home), "%s", home);
		memcpy(user_cache.groups, groups, *ngroups * sizeof(gid_t));
		user_cache.ngroups = *ngroups;
		user_cache.valid = 1;
	}
	return 0;
}

static int resolve_user_uncached(const char *spec, uid_t *uid, gid_t *gid, char *home,
				 size_t homelen, gid_t *groups, int *ngroups)
{
	char *end;
	const char *name = NULL;
	struct passwd *pw = NULL;
	snprintf(home, homelen, "/");
	if (!*spec)
		spec = "root";
	if (spec[0] >= '0' && spec[0] <= '9') {
		unsigned long u = strtoul(spec, &end, 10);
		if (u > 65535 || (*end && *end != ':'))
			return -1;
		*uid = u;
		*gid = u;
		pw = getpwuid(*uid);
		if (pw)
			*gid = pw->pw_gid;
		if (*end == ':') {
			unsigned long g = strtoul(end + 1, &end, 10);
			if (g > 65535 || *end)
				return -1;
			*gid = g;
		}
	} else {
		pw = getpwnam(spec);
		if (!pw || pw->pw_uid > 65535 || pw->pw_gid > 65535)
			return -1;
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	}
	if (pw) {
		name = pw->pw_name;
		snprintf(home, homelen, "%s", pw->pw_dir);
	}
	int cap = *ngroups;
	*ngroups = 1;
	groups[0] = *gid;
	if (name) {
		int n = cap;
		if (getgrouplist(name, *gid, groups, &n) >= 0)
			*ngroups = n;
		else
			groups[0] = *gid;
	}
	return 0;
}

static int env_has(char **env, const char *key)
{
	size_t k = strlen(key);
	for (; *env; env++)
		if (!strncmp(*env, key, k) && (*env)[k] == '=')
			return 1;
	return 0;
}

static const char *env_get(char **env, const char *key)
{
	size_t k = strlen(key);
	for (; *env; env++)
		if (!strncmp(*env, key, k) && (*env)[k] == '=')
			return *env + k + 1;
	return NULL;
}

/* Everything the child needs, computed by init before vfork: the child only makes
 * system calls (raw ones: musl's set*id wrappers synchronise threads through libc
 * state the vfork child shares with us). */
struct child_plan {
	const int *fds;
	int tty_slave;
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int ngroups;
	const char *cwd;
	char **argv, **envp;
	const char *path; /* PATH to search when argv[0] has no '/' */
	/* Written by the child before it gives up; the parent reads them after vfork
	 * returns (the child shares our memory until it execs or exits). */
	volatile int stage, err;
};

/* Runs in the vfork child: become the command. On failure it records the stage and
 * errno in the plan and exits 127. */
static void __attribute__((noreturn)) child_exec(struct child_plan *cp)
{
	sigset_t all;
	sigfillset(&all);
	/* Init sets no handlers and blocks what its signalfd reads; dispositions were
	 * reset to default when init started, so unblocking is all that is left. */
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &all, NULL, _NSIG / 8);
	syscall(SYS_setsid);
	int stage = 0;
	if (cp->tty_slave >= 0) {
		syscall(SYS_ioctl, cp->tty_slave, TIOCSCTTY, 0);
		for (int i = 0; i < 3; i++)
			syscall(SYS_dup2, cp->tty_slave, i);
	} else {
		/* fds may collide with 0..2: lift them first (when one is below 3). */
		int hi[3];
		int low = cp->fds[0] < 3 || cp->fds[1] < 3 || cp->fds[2] < 3;
		for (int i = 0; i < 3; i++)
			hi[i] =
			    low ? syscall(SYS_fcntl, cp->fds[i], F_DUPFD_CLOEXEC, 10) : cp->fds[i];
		for (int i = 0; i < 3; i++)
			if (hi[i] < 0 || syscall(SYS_dup2, hi[i], i) < 0)
				goto fail;
	}
	stage = 2;
	if (syscall(SYS_setgroups, cp->ngroups, cp->groups) < 0 ||
	    syscall(SYS_setresgid, cp->gid, cp->gid, cp->gid) < 0 ||
	    syscall(SYS_setresuid, cp->uid, cp->uid, cp->uid) < 0)
		goto fail;
	stage = 3;
	if (syscall(SYS_chdir, cp->cwd) < 0)
		goto fail;
	stage = 4;
	const char *file = cp->argv[0];
	if (strchr(file, '/')) {
		syscall(SYS_execve, file, cp->argv, cp->envp);
		goto fail;
	}
	/* execvp's search, on our stack: the first EACCES is what we report if nothing
	 * else runs, as execvp does. */
	char buf[PATH_MAX];
	size_t fl = strlen(file);
	int seen_eacces = 0;
	for (const char *p = cp->path, *z;; p = z + 1) {
		z = strchr(p, ':');
		if (!z)
			z = p + strlen(p);
		size_t dl = (size_t)(z - p);
		if (dl + 1 + fl + 1 <= sizeof(buf)) {
			/* An empty entry is the working directory, as for execvp. */
			size_t at = 0;
			if (dl) {
				memcpy(buf, p, dl);
				buf[dl] = '/';
				at = dl + 1;
			}
			memcpy(buf + at, file, fl + 1);
			syscall(SYS_execve, buf, cp->argv, cp->envp);
			if (errno == EACCES)
				seen_eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR)
				goto fail;
		}
		if (!*z)
			break;
	}
	if (seen_eacces)
		errno = EACCES;
fail:
	cp->err = errno;
	cp->stage = stage;
	syscall(SYS_exit, 127);
	__builtin_unreachable();
}

static struct child *child_add(pid_t pid, int conn, int exit_fd, int hold_fd, int64_t deadline)
{
	if (nchildren >= MAX_CHILDREN)
		return NULL;
	struct child *c = &children[nchildren++];
	*c = (struct child){
	    .pid = pid, .conn = conn, .exit_fd = exit_fd, .hold_fd = hold_fd, .deadline = deadline};
	return c;
}

static struct child *child_find(pid_t pid)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i].pid == pid)
			return &children[i];
	return NULL;
}

static void spawn(int ci, const char *buf, size_t len, int *fds, int nfds)
{
	int cfd = pfds[ci].fd;
	const struct sl_req_spawn *rq = (const void *)buf;
	if (conn_sudo[ci] && nsudo_children >= MAX_SUDO_CHILDREN) {
		send_rep(cfd, SL_REP_ERROR, -1, EAGAIN, -1, "too many commands run with sudo");
		return;
	}
	int tty = !!(rq->flags & SL_SPAWN_TTY);
	int has_exit = !!(rq->flags & SL_SPAWN_HAS_EXIT);
	int has_hold = !!(rq->flags & SL_SPAWN_HOLD_FD);
	int want_fds = (tty ? 0 : 3) + has_exit + has_hold;
	size_t nstr = 2 + (size_t)rq->argc + rq->envc;
	if (nfds != want_fds || rq->argc < 1 || rq->argc > 65536 || rq->envc > 65536 ||
	    rq->timeout_ms > SL_SPAWN_TIMEOUT_MAX) {
		send_rep(cfd, SL_REP_ERROR, -1, EINVAL, -1, "malformed spawn request");
		return;
	}
	/* Split and bound the strings: every one must end inside the message. */
	char **strs = calloc(nstr + 2, sizeof(char *));
	if (!strs) {
		send_rep(cfd, SL_REP_ERROR, -1, ENOMEM, -1, "out of memory");
		return;
	}
	const char *p = buf + sizeof(*rq), *end = buf + len;
	for (size_t i = 0; i < nstr; i++) {
		const char *z = memchr(p, '\0', end - p);
		if (!z) {
			free(strs);
			send_rep(cfd, SL_REP_ERROR, -1, EINVAL, -1, "truncated spawn request");
			return;
		}
		strs[i] = (char *)p;
		p = z + 1;
	}
	const char *user = strs[0], *cwd = strs[1];
	char **argv = strs + 2;
	char **env = argv + rq->argc + 1; /* leave a NULL after argv */
	memmove(env, argv + rq->argc, rq->envc * sizeof(char *));
	argv[rq->argc] = NULL;
	env[rq->envc] = NULL;

	int master = -1, slave = -1;
	if (tty) {
		master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		int unlock = 0;
		if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0 ||
		    (slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY)) < 0) {
			int e = errno;
			if (master >= 0)
				close(master);
			free(strs);
			send_rep(cfd, SL_REP_ERROR, -1, e, -1, "cannot allocate a pty");
			return;
		}
		struct winsize ws = {.ws_row = rq->rows ? rq->rows : 24,
				     .ws_col = rq->cols ? rq->cols : 80};
		ioctl(master, TIOCSWINSZ, &ws);
	}
	struct child_plan cp = {.fds = fds, .tty_slave = slave, .cwd = cwd, .argv = argv,
				.ngroups = sizeof(cp.groups) / sizeof(cp.groups[0])};
	char home[PATH_MAX], homebuf[PATH_MAX + 6];
	char **envp = env;
	int pid = -1, stage = 1, e = ESRCH;
	if (resolve_user(user, &cp.uid, &cp.gid, home, sizeof(home), cp.groups, &cp.ngroups) < 0)
		goto failed;
	/* HOME from the user's passwd entry unless the caller set one. */
	if (!env_has(env, "HOME")) {
		snprintf(homebuf, sizeof(homebuf), "HOME=%s", home);
		envp = calloc(rq->envc + 2, sizeof(char *));
		if (!envp) {
			stage = -1, e = ENOMEM;
			goto failed;
		}
		memcpy(envp, env, rq->envc * sizeof(char *));
		envp[rq->envc] = homebuf;
	}
	cp.envp = envp;
	if (!*cwd)
		cp.cwd = home;
	cp.path = env_get(envp, "PATH");
	if (!cp.path)
		cp.path = "/usr/local/bin:/bin:/usr/bin";
	/* vfork: the child borrows our memory until it execs, so no page tables are
	 * copied, and we learn how exec went from cp when we resume. */
	pid = vfork();
	if (pid == 0)
		child_exec(&cp);
	stage = pid < 0 ? -1 : cp.stage;
	e = errno;
	if (pid > 0 && cp.err) {
		e = cp.err;
		/* The child exits 127; reap it without reporting an exit. */
		child_add(pid, -1, -1, -1, 0);
	}
failed:
	if (envp != env)
		free(envp);
	if (slave >= 0)
		close(slave);
	free(strs);
	if (pid < 0 || cp.err) {
		/* stage -1: the sandbox could not start anything (the caller's error);
		 * 0-4: this command could not start (recorded as its result). */
		static const char *stages[] = {"set up stdio", "look up user", "switch user",
					       "change directory", "execute"};
		char msg[160];
		if (stage < 0)
			snprintf(msg, sizeof(msg), "fork: %s", strerror(e));
		else
			snprintf(msg, sizeof(msg), "%s: %s", stages[stage < 5 ? stage : 4],
				 strerror(e));
		if (master >= 0)
			close(master);
		send_rep(cfd, SL_REP_ERROR, stage, e, -1, msg);
		return;
	}
	int exit_fd = -1, hold_fd = -1;
	if (has_exit)
		exit_fd = fcntl(fds[tty ? 0 : 3], F_DUPFD_CLOEXEC, 10);
	if (has_hold)
		hold_fd = fcntl(fds[want_fds - 1], F_DUPFD_CLOEXEC, 10);
	/* The clock starts when the command does, not when a client looks. */
	int64_t deadline = rq->timeout_ms ? mono_ms() + (int64_t)rq->timeout_ms : 0;
	struct child *c = child_add(pid, ci, exit_fd, hold_fd, deadline);
	if (!c) {
		kill(pid, SIGKILL);
		if (exit_fd >= 0)
			close(exit_fd);
		if (hold_fd >= 0)
			close(hold_fd);
		if (master >= 0)
			close(master);
		send_rep(cfd, SL_REP_ERROR, -1, EAGAIN, -1, "too many commands");
		return;
	}
	c->last = !!(rq->flags & SL_SPAWN_LAST);
	c->sudo = conn_sudo[ci];
	nsudo_children += c->sudo;
	send_rep(cfd, SL_REP_STARTED, pid, 0, master, NULL);
	if (master >= 0)
		close(master);
}

static void handle_signal_req(int cfd, const struct sl_req_signal *rq)
{
	if (rq->pid <= 1 || rq->sig < 1 || rq->sig >= NSIG) {
		send_rep(cfd, SL_REP_ERROR, rq->pid, EINVAL, -1, "bad signal request");
		return;
	}
	int r = kill(rq->group ? -rq->pid : rq->pid, rq->sig);
	/* A group whose leader already exited: fall back to the pid itself. */
	if (r < 0 && rq->group)
		r = kill(rq->pid, rq->sig);
	send_rep(cfd, r < 0 ? SL_REP_ERROR : SL_REP_PONG, rq->pid, r < 0 ? errno : 0, -1, NULL);
}

static void handle_stdin_eof(int cfd, const struct sl_req_pid *rq)
{
	struct child *c = rq->pid > 1 ? child_find(rq->pid) : NULL;
	if (!c) {
		send_rep(cfd, SL_REP_ERROR, rq->pid, ESRCH, -1, "no such command");
		return;
	}
	if (c->hold_fd >= 0)
		close(c->hold_fd);
	c->hold_fd = -1;
	send_rep(cfd, SL_REP_PONG, rq->pid, 0, -1, NULL);
}

/* SIGKILL the process groups whose timeout ran out; returns the ms until the next
 * deadline, or -1 when none is set. */
static int enforce_deadlines(void)
{
	int64_t now = mono_ms(), next = -1;
	for (int i = 0; i < nchildren; i++) {
		struct child *c = &children[i];
		if (!c->deadline)
			continue;
		if (c->deadline <= now) {
			/* Every child was made a session (and group) leader by setsid(). */
			kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
			c->timed_out = 1;
			c->deadline = 0;
			logf_("init: pid %d: timeout, killed its process group", (int)c->pid);
		} else if (next < 0 || c->deadline - now < next) {
			next = c->deadline - now;
		}
	}
	return next > INT_MAX ? INT_MAX : (int)next;
}

static void conn_close(int ci, int *npfds)
{
	close(pfds[ci].fd);
	nsudo_conns -= conn_sudo[ci];
	int last = *npfds - 1;
	for (int i = 0; i < nchildren; i++) {
		struct child *c = &children[i];
		/* sudo gone before its command ended (killed, say): the command goes with it,
		 * as with a terminal's hangup, rather than run on as root unwatched. */
		if (c->conn == ci && c->sudo) {
			kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
		}
		if (children[i].conn == ci)
			children[i].conn = -1;
		else if (children[i].conn == last)
			children[i].conn = ci;
	}
	pfds[ci] = pfds[last];
	conn_sudo[ci] = conn_sudo[last];
	(*npfds)--;
}

static void conn_read(int ci, int *npfds)
{
	static char buf[SL_PROTO_MAX];
	union {
		char b[CMSG_SPACE(SL_SPAWN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n = recvmsg(pfds[ci].fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0)
		mh.msg_controllen = 0; /* untouched by the failed call: not fds of ours */
	int fds[SL_SPAWN_MAX_FDS], nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < SL_SPAWN_MAX_FDS)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if (n <= 0) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		conn_close(ci, npfds);
		return;
	}
	const struct sl_msg_hdr *h = (const void *)buf;
	int cfd = pfds[ci].fd;
	if ((size_t)n < sizeof(*h) || h->magic != SL_PROTO_MAGIC || (mh.msg_flags & MSG_TRUNC)) {
		send_rep(cfd, SL_REP_ERROR, 0, EPROTO, -1, "bad message");
	} else if (h->type == SL_REQ_SPAWN && (size_t)n >= sizeof(struct sl_req_spawn)) {
		spawn(ci, buf, n, fds, nfds);
	} else if (h->type == SL_REQ_SIGNAL && (size_t)n >= sizeof(struct sl_req_signal)) {
		handle_signal_req(cfd, (const void *)buf);
	} else if (h->type == SL_REQ_STDIN_EOF && (size_t)n >= sizeof(struct sl_req_pid)) {
		handle_stdin_eof(cfd, (const void *)buf);
	} else if (h->type == SL_REQ_PING) {
		send_rep(cfd, SL_REP_PONG, getpid(), nchildren, -1, NULL);
	} else {
		send_rep(cfd, SL_REP_ERROR, 0, EPROTO, -1, "unknown message");
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

static void conn_close(int ci, int *npfds);

/* Whether init has any child left, live or not yet reaped (every process of the sandbox's
 * pid namespace is init's child or a descendant of one). */
static int any_child(void)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void reap(int *npfds)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (int i = 0; i < nchildren; i++) {
			struct child *c = &children[i];
			if (c->pid != pid)
				continue;
			if (c->exit_fd >= 0) {
				/* One write: a reader sees the whole line or nothing. */
				/* No fsync: the run dir is volatile (tmpfs on a normal
				 * host) and the record is there for daemon restarts, not
				 * for power loss, which ends the command too. */
				dprintf(c->exit_fd, "exit %d%s\n", st,
					c->timed_out ? " timeout" : "");
				close(c->exit_fd);
			}
			if (c->hold_fd >= 0)
				close(c->hold_fd);
			int close_ci = c->last ? c->conn : -1;
			if (c->conn >= 0)
				send_rep(pfds[c->conn].fd, SL_REP_EXITED, pid, st, -1, NULL);
			nsudo_children -= c->sudo;
			children[i] = children[--nchildren];
			if (close_ci >= 0)
				conn_close(close_ci, npfds);
			break;
		}
	}
}

/* The sandbox's default user, looked up while we wait for the first command: the first
 * lookup also sets up musl's heap and stdio (about ten page faults and 0.7 ms of CPU on
 * the reference host), which the first command of a create would otherwise wait for. */
static void warm_up(void)
{
	const char *user = getenv("SANDLOT_DEFAULT_USER");
	uid_t uid;
	gid_t gid, groups[64];
	char home[PATH_MAX];
	int ngroups = 64;
	resolve_user(user && *user ? user : "root", &uid, &gid, home, sizeof(home), groups,
		     &ngroups);
}

/* PATH's first SIZE - 1 bytes into BUF, NUL-terminated: their length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	ssize_t n = 0;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return n < 0 ? -1 : (ssize_t)len;
}

/* The signals we were started with ignored (an exec keeps only those from the caller's
 * dispositions), from /proc: four system calls instead of one per signal. All when
 * /proc cannot say. */
static uint64_t ignored_signals(void)
{
	char buf[2048];
	if (read_small("/proc/self/status", buf, sizeof(buf)) <= 0)
		return ~0ull;
	const char *p = strstr(buf, "\nSigIgn:");
	char *end;
	if (!p)
		return ~0ull;
	unsigned long long v = strtoull(p + 9, &end, 16);
	return end == p + 9 ? ~0ull : v;
}

/* sudo's socket (docs/isolation.md, "sudo"): the same protocol, for the sandbox's own
 * processes, in images that ship sandlot's sudo (SUDO_MARK, root's to make). An abstract
 * name, so it is reachable only from the sandbox's network namespace, and by anything
 * in it: E2B's passwordless sudo. It gives root of the sandbox's user namespace, with
 * the capabilities, seccomp filter, cgroup and limits every command has; a default user
 * could already ask the API for that. -1 when there is none. */
#define SUDO_MARK   "/usr/lib/sandlot/sudo"
#define SUDO_SOCKET "sandlot-sudo"
static int sudo_listen(void)
{
	if (access(SUDO_MARK, F_OK) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, SUDO_SOCKET, sizeof(SUDO_SOCKET) - 1);
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(SUDO_SOCKET) - 1;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, 16) < 0) {
		logf_("init: sudo's socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Our listener is an abstract name (SL_INIT_ABSTRACT: a sandbox launched to be
 * hibernated) rather than a host file only host root can reach: anything in the sandbox's
 * network namespace could connect to it. */
static int listen_abstract;

/* Whether a peer of the abstract listener is the host: a process outside our pid
 * namespace, which SO_PEERCRED gives as pid 0 (every process of the sandbox has a pid
 * here), and so a uid our user namespace does not map (the overflow uid). */
static int peer_is_host(int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid == 0;
}

static void accept_conn(int lfd, int sudo, int *npfds)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	if (!sudo && listen_abstract && !peer_is_host(c)) {
		logf_("init: refused a connection from inside the sandbox");
		close(c);
		return;
	}
	if (*npfds >= FIRST_CONN + MAX_CONNS || (sudo && nsudo_conns >= MAX_SUDO_CONNS)) {
		close(c);
		return;
	}
	conn_sudo[*npfds] = (char)sudo;
	nsudo_conns += sudo;
	pfds[(*npfds)++] = (struct pollfd){c, POLLIN, 0};
}

/* Off the stack exec made (docs/bench.md, "Issue 44: an idle init's page tables"). An idle
 * sandbox's init costs the host mostly kernel objects, and its page tables are the part
 * we choose: a page of them for each 2 MiB region it has anything in, one for each
 * 1 GiB, one for each 512 GiB. exec puts the stack alone at the top of the address
 * space, far from the vdso and every mmap: 8-12 KiB of page tables for a few KiB of
 * stack. So init moves to a stack mapped beside the vdso and unmaps the old one. What
 * is still read there moves too: the argument and environment strings (the kernel is
 * told with PR_SET_MM_MAP, which needs no privilege, so /proc/PID/cmdline and environ
 * stay right), environ's array and the program's name. musl also keeps its pointer to
 * the auxiliary vector there, read at two first uses, the vdso's lookup and malloc's
 * secret, both made before the move, and by getauxval, which init must never call. When
 * anything fails, init stays where it is; a one-shot's init (SL_INIT_BRIEF) stays too. */
#if defined(__x86_64__) || defined(__aarch64__)
#define INIT_STACK_SIZE (256 * 1024)

static uintptr_t exec_stack_lo, exec_stack_hi;

/* /proc/self/stat's fields 3.. as numbers (V[n] is field n; 0 where none). */
static int self_stat(unsigned long long *v, int nv)
{
	char buf[1024];
	if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return -1;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++; /* past the name */
	for (int f = 3; f < nv; f++) {
		p += strspn(p, " ");
		if (!*p)
			break;
		v[f] = strtoull(p, NULL, 10); /* field 3, the state, is a letter: 0 */
		p += strcspn(p, " ");
	}
	return 0;
}

/* The bounds of the mapping holding ADDR, from /proc/self/maps. */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	char buf[4096];
	if (read_small("/proc/self/maps", buf, sizeof(buf)) <= 0)
		return -1;
	for (char *line = buf; *line;) {
		char *end;
		unsigned long long a = strtoull(line, &end, 16), b = 0;
		if (*end == '-')
			b = strtoull(end + 1, &end, 16);
		if (a <= addr && addr < b) {
			*lo = (uintptr_t)a;
			*hi = (uintptr_t)b;
			return 0;
		}
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return -1;
}

/* Map the new stack, copy what the old one holds that is still read, tell the kernel:
 * the new stack's top, or NULL (nothing changed). */
static void *stack_beside_vdso(void)
{
	unsigned long long v[53] = {0};
	uintptr_t lo, hi;
	if (self_stat(v, 53) < 0 || mapping_of((uintptr_t)v[28], &lo, &hi) < 0)
		return NULL;
	uintptr_t strs = (uintptr_t)v[48], strs_end = (uintptr_t)v[51]; /* argv's .. env's end */
	size_t nenv = 0;
	for (char **e = environ; e && *e; e++)
		nenv++;
	if (strs < lo || strs_end > hi || strs > strs_end ||
	    strs_end - strs + (nenv + 1) * sizeof(char *) > INIT_STACK_SIZE / 4)
		return NULL;
	long page = sysconf(_SC_PAGESIZE);
	char *base = mmap(NULL, INIT_STACK_SIZE + page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	char *copy = base + page + INIT_STACK_SIZE - (strs_end - strs);
	memcpy(copy, (char *)strs, strs_end - strs);
	ptrdiff_t d = copy - (char *)strs;
	char **env = (char **)(((uintptr_t)copy - (nenv + 1) * sizeof(char *)) & ~(uintptr_t)15);
	for (size_t i = 0; i < nenv; i++) {
		uintptr_t s = (uintptr_t)environ[i];
		env[i] = s >= strs && s < strs_end ? environ[i] + d : environ[i];
	}
	env[nenv] = NULL;
	struct prctl_mm_map m = {
	    .start_code = v[26],
	    .end_code = v[27],
	    .start_data = v[45],
	    .end_data = v[46],
	    .start_brk = v[47],
	    .brk = (uint64_t)syscall(SYS_brk, 0),
	    .start_stack = (uint64_t)(uintptr_t)env,
	    .arg_start = v[48] + d,
	    .arg_end = v[49] + d,
	    .env_start = v[50] + d,
	    .env_end = v[51] + d,
	    .exe_fd = (uint32_t)-1,
	};
	/* The guard below the stack; and the kernel told, or nothing is moved. */
	if (mprotect(base, page, PROT_NONE) < 0 ||
	    prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof(m), 0) < 0) {
		munmap(base, INIT_STACK_SIZE + page);
		return NULL;
	}
	environ = env;
	if ((uintptr_t)program_invocation_name >= strs &&
	    (uintptr_t)program_invocation_name < strs_end)
		program_invocation_name += d;
	if ((uintptr_t)program_invocation_short_name >= strs &&
	    (uintptr_t)program_invocation_short_name < strs_end)
		program_invocation_short_name += d;
	exec_stack_lo = lo;
	exec_stack_hi = hi;
	return env;
}

static int serve(void);

static _Noreturn void serve_on_new_stack(void)
{
	munmap((void *)exec_stack_lo, exec_stack_hi - exec_stack_lo);
	exit(serve());
}

int main(void)
{
	/* Not dumpable: the workload cannot ptrace us or read our memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* musl's first uses that read the old stack's auxiliary vector, made now. */
	mono_ms();
	void *volatile first = malloc(1); /* volatile: the compiler drops a bare pair */
	free(first);
	int brief = 0;
	for (char **e = environ; e && *e; e++)
		brief |= !strcmp(*e, SL_INIT_BRIEF);
	void *top = brief ? NULL : stack_beside_vdso();
	if (top) {
#if defined(__x86_64__)
		__asm__ volatile("mov %0, %%rsp\n\tcall *%1\n\tud2"
				 :
				 : "r"(top), "r"(serve_on_new_stack)
				 : "memory");
#else
		__asm__ volatile("mov sp, %0\n\tblr %1\n\tbrk #0"
				 :
				 : "r"(top), "r"(serve_on_new_stack)
				 : "memory");
#endif
	}
	return serve();
}
#else
static int serve(void);
int main(void)
{
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* as above */
	return serve();
}
#endif

static int serve(void)
{
	/* Started from an fd, our comm would read "3"; name ourselves. */
	prctl(PR_SET_NAME, "sandlot-init", 0, 0, 0);
	setsid();
	if (fcntl(SL_INIT_LOG_FD, F_GETFD) >= 0) {
		log_fd = SL_INIT_LOG_FD;
		fcntl(log_fd, F_SETFD, FD_CLOEXEC);
	}
	if (fcntl(SL_INIT_LISTEN_FD, F_SETFD, FD_CLOEXEC) < 0) {
		logf_("init: no control socket: %s", strerror(errno));
		return 1;
	}
	struct sockaddr_un self;
	socklen_t slen = sizeof(self);
	listen_abstract = getsockname(SL_INIT_LISTEN_FD, (struct sockaddr *)&self, &slen) == 0 &&
			  slen > offsetof(struct sockaddr_un, sun_path) && self.sun_path[0] == '\0';
	/* A first client, handed over already connected: its requests are waiting. Looked
	 * for before anything here opens an fd (which could take the number). */
	int first_client = fcntl(SL_INIT_CLIENT_FD, F_SETFD, FD_CLOEXEC) == 0;
	/* Default dispositions from the start (whoever started us may have ignored
	 * some, and an ignored signal survives exec): the spawn path then only has to
	 * unblock. Init itself sets no handler; what it needs arrives by signalfd. */
	uint64_t ign = ignored_signals();
	for (int s = 1; s < _NSIG && s <= 64; s++)
		if (ign & (1ull << (s - 1)))
			signal(s, SIG_DFL);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	/* Exactly these (the launch may hand us a mask with everything blocked). */
	sigprocmask(SIG_SETMASK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		logf_("init: signalfd: %s", strerror(errno));
		return 1;
	}
	pfds[0] = (struct pollfd){sfd, POLLIN, 0};
	pfds[1] = (struct pollfd){SL_INIT_LISTEN_FD, POLLIN, 0};
	pfds[2] = (struct pollfd){sudo_listen(), POLLIN, 0}; /* fd -1: poll skips it */
	int npfds = FIRST_CONN, stopping = 0;
	if (first_client)
		pfds[npfds++] = (struct pollfd){SL_INIT_CLIENT_FD, POLLIN, 0};
	int64_t stop_at = 0, orphans_at = 0;
	/* Not when a first client waits: it asks for this very lookup now. */
	if (!first_client)
		warm_up();
	for (;;) {
		/* Stopping: done when the commands are gone and either no process is left or
		 * the others had their grace; or at the stop's own deadline. Checked before
		 * any wait, so a sandbox with nothing running stops at once (it used to wait
		 * out a 100 ms poll first). */
		if (stopping) {
			reap(&npfds);
			int64_t now = mono_ms();
			if (now >= stop_at || (nchildren == 0 && (!any_child() || now >= orphans_at)))
				return 0;
		}
		int wait = enforce_deadlines();
		if (stopping) { /* look again within 100 ms, or when the orphans' grace ends */
			int64_t cap = nchildren ? 100 : orphans_at - mono_ms();
			cap = cap < 0 ? 0 : cap > 100 ? 100 : cap;
			if (wait < 0 || wait > cap)
				wait = (int)cap;
		}
		int r = poll(pfds, npfds, wait);
		if (r < 0 && errno != EINTR)
			return 1;
		if (r <= 0)
			continue;
		if (pfds[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					reap(&npfds);
				else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
					/* Stop: ask everyone to end, then leave (the kernel
					 * kills what is left of the pid namespace). */
					kill(-1, SIGTERM);
					if (!stopping) {
						stop_at = mono_ms() + STOP_GRACE_MS;
						orphans_at = mono_ms() + ORPHAN_GRACE_MS;
					}
					stopping = 1;
				}
			}
		}
		if (pfds[1].revents & POLLIN)
			accept_conn(SL_INIT_LISTEN_FD, 0, &npfds);
		if (pfds[2].revents & POLLIN)
			accept_conn(pfds[2].fd, 1, &npfds);
		for (int i = npfds - 1; i >= FIRST_CONN; i--)
			if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))
				conn_read(i, &npfds);
	}
}

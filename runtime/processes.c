/* processes.c — a sandbox's processes as /proc shows them (background ones included),
 * each matched to the execution whose session or group it is in, and a kill of one. */
#include "processes.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "exec.h"
#include "fsutil.h"
#include "launch.h"

/* The last value of a "Key:\tv1\tv2..." line of /proc/<pid>/status: the value as seen
 * in the innermost pid namespace. Returns the number of values, 0 if absent. */
static int status_last(const char *status, const char *key, long *out)
{
	size_t kl = strlen(key);
	for (const char *l = status; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) != 0 || l[kl] != ':')
			continue;
		int k = 0;
		const char *p = l + kl + 1;
		for (;;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			*out = v;
			k++;
			p = end;
		}
		return k;
	}
	return 0;
}

static int read_small(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n;
	while ((n = read(fd, buf, len - 1)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

/* pid, pgid and session inside the sandbox of host pid H; false when H is gone or is
 * not in a nested pid namespace. */
static bool proc_ids(pid_t h, long *pid, long *pgid, long *sid)
{
	char p[64], st[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)h);
	if (read_small(p, st, sizeof(st)) <= 0)
		return false;
	return status_last(st, "NSpid", pid) >= 2 && status_last(st, "NSpgid", pgid) >= 2 &&
	       status_last(st, "NSsid", sid) >= 2;
}

static void proc_cmdline(pid_t h, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)h);
	int n = read_small(p, buf, len);
	if (n <= 0) {
		/* Kernel threads and zombies have none: show [comm] as ps does. */
		char comm[64];
		snprintf(p, sizeof(p), "/proc/%d/comm", (int)h);
		int c = read_small(p, comm, sizeof(comm));
		if (c > 0 && comm[c - 1] == '\n')
			comm[c - 1] = '\0';
		snprintf(buf, len, "[%s]", c > 0 ? comm : "?");
		return;
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\0' || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = '\0';
}

/* The sandbox's execution whose command leads SESSION (or GROUP): exec_start makes each
 * command a session leader, so its background children keep its session id. pid numbers
 * are reused, so among several records with that pid the latest started is the one. */
static void match_exec(const sl_exec *execs, size_t n, long session, long group, char *out,
		       size_t len)
{
	const sl_exec *best = NULL;
	for (int pass = 0; pass < 2 && !best; pass++) {
		long want = pass == 0 ? session : group;
		for (size_t i = 0; i < n; i++)
			if (execs[i].pid == want &&
			    (!best || execs[i].started_ms > best->started_ms))
				best = &execs[i];
	}
	snprintf(out, len, "%s", best ? best->id : "");
}

static int cmp_inner_pid(const void *a, const void *b)
{
	const sl_process *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The host pids of SB's processes (its cgroup's, sorted; *PIDS malloc'd). */
static int host_pids(sl_ctx *ctx, const sl_sandbox *sb, pid_t **pids, size_t *np, sl_err *err)
{
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	return cgroup_procs(ctx->cg, cg, pids, np, err) < 0 ? sl_wrap(err, "sandbox %s", sb->id)
							    : 0;
}

int sandbox_processes(sl_ctx *ctx, const sl_sandbox *sb, sl_process **out, size_t *n, sl_err *err)
{
	*out = NULL;
	*n = 0;
	_cleanup_free_ pid_t *pids = NULL;
	size_t np = 0;
	if (host_pids(ctx, sb, &pids, &np, err) < 0)
		return -1;
	sl_exec *execs = NULL;
	size_t ne = 0;
	sl_err e2 = {0};
	if (exec_list(ctx, sb->id, &execs, &ne, &e2) < 0)
		ne = 0; /* processes without their executions are still worth listing */
	sl_process *list = calloc(np ? np : 1, sizeof(*list));
	if (!list) {
		exec_free_list(execs, ne);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list processes");
	}
	size_t k = 0;
	for (size_t i = 0; i < np; i++) {
		long pid, pgid, sid;
		/* init (pid 1) is the sandbox itself, not a process a caller may manage. */
		if (!proc_ids(pids[i], &pid, &pgid, &sid) || pid <= 1)
			continue;
		sl_process *p = &list[k++];
		p->host_pid = pids[i];
		p->pid = pid;
		p->pgid = pgid;
		proc_cmdline(pids[i], p->cmdline, sizeof(p->cmdline));
		match_exec(execs, ne, sid, pgid, p->exec_id, sizeof(p->exec_id));
	}
	exec_free_list(execs, ne);
	qsort(list, k, sizeof(*list), cmp_inner_pid);
	*out = list;
	*n = k;
	return 0;
}

/* The pid inside its own namespace of the process a pidfd refers to (its fdinfo speaks
 * for that very process, whatever happened to the number since). */
static long pidfd_inner_pid(int pidfd)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", pidfd);
	long v = -1;
	if (read_small(p, buf, sizeof(buf)) <= 0 || status_last(buf, "NSpid", &v) < 2)
		return -1;
	return v;
}

int sandbox_kill_process(sl_ctx *ctx, const sl_sandbox *sb, pid_t pid, int sig, sl_err *err)
{
	if (pid == 1)
		return sl_fail(err, SL_INVALID, 0,
			       "pid 1 is the sandbox's init; stop or delete the sandbox instead");
	if (pid < 1)
		return sl_fail(err, SL_INVALID, 0, "pid %d: no such process", (int)pid);
	if (sig < 1 || sig >= NSIG)
		return sl_fail(err, SL_INVALID, 0, "signal %d: no such signal", sig);
	_cleanup_free_ pid_t *pids = NULL;
	size_t np = 0;
	if (host_pids(ctx, sb, &pids, &np, err) < 0)
		return -1;
	pid_t host = 0;
	for (size_t i = 0; i < np && !host; i++) {
		long in, pg, sd;
		if (proc_ids(pids[i], &in, &pg, &sd) && in == pid)
			host = pids[i];
	}
	if (!host)
		return sl_fail(err, SL_NOTFOUND, 0, "process %d not found in sandbox %s", (int)pid,
			       sb->id);
	/* A pidfd pins the process: if the number was reused after the scan, the fdinfo
	 * check below sees the newcomer's pid and we refuse. */
	_cleanup_close_ int pfd = syscall(SYS_pidfd_open, host, 0);
	/* A zombie (exited, not yet reaped by init) is gone for the caller too. */
	if (pfd < 0 || pidfd_inner_pid(pfd) != pid || proc_start_time(host) == 0)
		return sl_fail(err, SL_NOTFOUND, 0,
			       "process %d not found in sandbox %s (it exited)", (int)pid, sb->id);
	if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) < 0) {
		if (errno == ESRCH)
			return sl_fail(err, SL_NOTFOUND, 0, "process %d in sandbox %s exited",
				       (int)pid, sb->id);
		return sl_sysfail(err, "signal process %d in sandbox %s", (int)pid, sb->id);
	}
	return 0;
}

/* proc.c — commands in a running sandbox: the spawn request sent to its init, the
 * start and exit read back, signals, and the OOM verdict. */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "cleanup.h"
#include "clock.h"
#include "initctl.h"

void proc_init(sl_proc *p, const char *sid)
{
	memset(p, 0, sizeof(*p));
	p->conn = p->master = -1;
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", sid);
}

/* The spawn request and its fds, on FD: a connection to init (or its peer to be). */
int proc_send_spawn(const sl_ctx *ctx, int fd, const sl_sandbox *sb, const sl_spawn *sp,
		    sl_err *err)
{
	if (!sp->argv || !sp->argv[0])
		return sl_fail(err, SL_INVALID, 0, "command: empty");
	initctl_spawn isp = { .cfg = &ctx->cfg,
			      .argv = sp->argv,
			      .env = sp->env,
			      .user = sp->user,
			      .cwd = sp->cwd,
			      .flags = (sp->tty ? SL_SPAWN_TTY : 0) |
				       (sp->exit_fd >= 0 ? SL_SPAWN_HAS_EXIT : 0),
			      .rows = sp->rows,
			      .cols = sp->cols,
			      .timeout_ms = sp->timeout_ms };
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (initctl_build_spawn(sb, &isp, &buf, &len, err) < 0)
		return -1;
	int fds[4], nfds = 0;
	if (!sp->tty)
		for (int i = 0; i < 3; i++)
			fds[nfds++] = sp->fds[i];
	if (sp->exit_fd >= 0)
		fds[nfds++] = sp->exit_fd;
	int r = initctl_send(fd, buf, len, fds, nfds);
	int e = errno;
	explicit_bzero(buf, len); /* the sandbox's secrets in clear, if it has any */
	if (r < 0)
		return sl_fail(err, SL_INTERNAL, e, "send command to sandbox %s", sb->id);
	return 0;
}

/* ---- commands ---- */

int proc_started(sl_proc *p, const char *cmd, sl_err *err)
{
	struct sl_rep rep;
	int passed = -1;
	int r = initctl_recv(p->conn, &rep, &passed, 30000, err);
	if (r == 1)
		return sl_fail(err, SL_TIMEOUT, 0, "sandbox %s did not start the command in 30 s",
			       p->sandbox_id);
	if (r < 0)
		return -1;
	if (rep.hdr.type == SL_REP_ERROR) {
		if (passed >= 0)
			close(passed);
		/* rep.pid carries the stage that failed; 4 = exec itself. */
		if (rep.pid == 4 && rep.status == ENOENT)
			return sl_fail(err, SL_NOTFOUND, 0, "%s: command not found", cmd);
		return sl_fail(err, SL_INVALID, 0, "%s: %s", cmd, rep.msg);
	}
	if (rep.hdr.type != SL_REP_STARTED || rep.pid <= 1) {
		if (passed >= 0)
			close(passed);
		return sl_fail(err, SL_INTERNAL, 0, "unexpected reply from sandbox %s",
			       p->sandbox_id);
	}
	p->pid = rep.pid;
	p->master = passed;
	return 0;
}

int sandbox_spawn(sl_ctx *ctx, const sl_sandbox *sb, const sl_spawn *sp, sl_proc *p, sl_err *err)
{
	proc_init(p, sb->id);
	if (sb->status == SL_ST_PAUSED)
		return sl_fail(err, SL_CONFLICT, 0,
			       "sandbox %s is paused; resume it first (the API also takes "
			       "?autoResume=1)",
			       sb->id);
	if (sb->status != SL_ST_RUNNING)
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is %s, not running", sb->id,
			       sandbox_status_name(sb->status));
	if (initctl_sock_path(ctx, sb->id, p->init_sock, sizeof(p->init_sock), err) < 0)
		return sl_wrap_obj(err, "sandbox", sb->id, "start a command");
	_cleanup_close_ int fd = initctl_connect_path(p->init_sock, sb->id, err);
	if (fd < 0)
		return sl_wrap_obj(err, "sandbox", sb->id, "start a command");
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	sl_err e2 = { 0 };
	cgroup_oom_kills(ctx->cg, cg, &p->oom_before, &e2);
	if (proc_send_spawn(ctx, fd, sb, sp, err) < 0)
		return sl_wrap_obj(err, "sandbox", sb->id, "start a command");
	p->conn = steal_fd(&fd);
	if (proc_started(p, sp->argv[0], err) < 0) {
		proc_close(p);
		return sl_wrap_obj(err, "sandbox", sb->id, "start a command");
	}
	return 0;
}

int proc_wait(sl_proc *p, int timeout_ms, int *wstatus, sl_err *err)
{
	int64_t deadline = timeout_ms < 0 ? 0 : sl_now_ms() + timeout_ms;
	for (;;) {
		int left = -1;
		if (timeout_ms >= 0) {
			int64_t l = deadline - sl_now_ms();
			left = l < 0 ? 0 : (int)l;
		}
		struct sl_rep rep;
		int passed = -1;
		int r = initctl_recv(p->conn, &rep, &passed, left, err);
		if (passed >= 0)
			close(passed);
		if (r < 0)
			return sl_wrap_obj(err, "sandbox", p->sandbox_id, "wait for the command");
		if (r != 0)
			return r;
		if (rep.hdr.type == SL_REP_EXITED && rep.pid == p->pid) {
			*wstatus = rep.status;
			return 0;
		}
	}
}

int proc_signal(sl_proc *p, int sig, bool group, sl_err *err)
{
	struct sl_req_signal rq = { .hdr = { SL_PROTO_MAGIC, SL_REQ_SIGNAL },
				    .pid = p->pid,
				    .sig = sig,
				    .group = group };
	/* A separate connection, so the reply cannot mix with the exit report. */
	_cleanup_close_ int fd = initctl_connect_path(p->init_sock, p->sandbox_id, err);
	if (fd < 0)
		return sl_wrap_obj(err, "sandbox", p->sandbox_id, "signal a command");
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq))
		return sl_sysfail(err, "sandbox %s: send a signal request to its init",
				  p->sandbox_id);
	struct sl_rep rep;
	int passed = -1;
	int r = initctl_recv(fd, &rep, &passed, 5000, err);
	if (passed >= 0)
		close(passed);
	if (r != 0)
		return r < 0 ? sl_wrap_obj(err, "sandbox", p->sandbox_id, "signal a command")
			     : sl_fail(err, SL_TIMEOUT, 0, "sandbox %s: signal: its init did not answer",
				       p->sandbox_id);
	if (rep.hdr.type == SL_REP_ERROR && rep.status != ESRCH)
		return sl_fail(err, SL_INTERNAL, rep.status, "signal %d to pid %d", sig, p->pid);
	return 0;
}

bool proc_oom_killed(sl_ctx *ctx, sl_proc *p)
{
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", p->sandbox_id);
	uint64_t n = 0;
	sl_err e = { 0 };
	return cgroup_oom_kills(ctx->cg, cg, &n, &e) == 0 && n > p->oom_before;
}

void proc_close(sl_proc *p)
{
	if (p->conn >= 0)
		close(p->conn);
	if (p->master >= 0)
		close(p->master);
	p->conn = p->master = -1;
}

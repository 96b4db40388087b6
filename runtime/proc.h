/* proc.h — commands in a running sandbox, through its init: spawn, wait, signal. */
#ifndef SANDLOT_PROC_H
#define SANDLOT_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

typedef struct sl_spawn {
	char *const *argv;
	const char *const *env; /* extra "K=V" on top of the sandbox's; may be NULL */
	const char *user;	/* NULL: the sandbox's */
	const char *cwd;	/* NULL: the sandbox's */
	int fds[3];		/* stdin, stdout, stderr (ignored with tty) */
	int exit_fd;		/* -1, or a file init writes the exit status to */
	bool tty;
	unsigned short rows, cols;
	uint64_t timeout_ms; /* enforced by init (holds if the caller dies); 0: none */
} sl_spawn;

typedef struct sl_proc {
	int conn;   /* control connection to init */
	pid_t pid;  /* pid inside the sandbox */
	int master; /* pty master when tty, else -1 */
	uint64_t oom_before;
	char sandbox_id[32];
	char init_sock[108]; /* init's listening socket, for requests beside conn */
} sl_proc;

/* Start a command. A command that cannot start fails with SL_NOTFOUND (not found:
 * exit 127) or SL_INVALID (cannot execute: 126), the message saying why. */
int sandbox_spawn(sl_ctx *ctx, const sl_sandbox *sb, const sl_spawn *sp, sl_proc *p,
		  sl_err *err);
/* The start of a command sent but not yet answered (sl_create_opts.first): its pid,
 * or the same errors as sandbox_spawn (CMD names the command in them). */
int proc_started(sl_proc *p, const char *cmd, sl_err *err);
/* Wait up to timeout_ms (-1: forever) for the exit. Returns 0 with *wstatus set,
 * 1 on timeout, -1 on error. */
int proc_wait(sl_proc *p, int timeout_ms, int *wstatus, sl_err *err);
int proc_signal(sl_proc *p, int sig, bool group, sl_err *err);
/* Did the sandbox's OOM killer fire since the command started? */
bool proc_oom_killed(sl_ctx *ctx, sl_proc *p);
void proc_close(sl_proc *p);

/* ---- for the runtime's own modules ---- */

/* P empty (no connection) for sandbox SID. */
void proc_init(sl_proc *p, const char *sid);
/* The spawn request and its fds, on FD: a connection to init (or its peer to be). */
int proc_send_spawn(const sl_ctx *ctx, int fd, const sl_sandbox *sb, const sl_spawn *sp,
		    sl_err *err);

#endif

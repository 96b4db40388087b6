/* exec.h — durable executions: a command started in a sandbox whose record, output
 * and exit outlive the process that started it (CLI or daemon). Everything lives in
 * <run>/sandboxes/<sid>/execs/<eid>/: exec.json (the request and start facts),
 * stdout and stderr (append-only logs written by the command itself), exit (written
 * by sandlot-init when the command ends, even with no daemon running), and stdin (a
 * FIFO, when stdin was asked for). */
#ifndef SANDLOT_EXEC_H
#define SANDLOT_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "ctx.h"
#include "record.h"

typedef enum sl_exec_status {
	SL_EXEC_RUNNING,
	SL_EXEC_COMPLETED, /* exit 0 */
	SL_EXEC_FAILED,	   /* non-zero exit, signal, OOM, or could not start */
	SL_EXEC_TIMEOUT,   /* killed by its timeout */
	SL_EXEC_CANCELLED, /* killed by a signal request (SIGKILL/SIGTERM via the API) */
} sl_exec_status;
/* "running", "completed", "failed", "timeout", "cancelled": the JSON's words. */
const char *exec_status_name(sl_exec_status s);

typedef struct sl_exec_spec {
	char *const *argv;	/* argv; or NULL and `shell` set */
	const char *shell;	/* a shell line, run as /bin/sh -c LINE */
	const char *const *env; /* "K=V" on top of the sandbox's */
	const char *user, *cwd; /* NULL: the sandbox's */
	uint64_t timeout_ms;	/* 0: none. Enforced by sandlot-init (survives daemon restarts) */
	bool stdin_pipe;	/* keep stdin open for exec_write_stdin until exec_close_stdin */
	bool tty;		/* pty; the master fd is returned in sl_exec.master (not durable) */
	unsigned short rows, cols;
	/* > 0: the caller will wait for the end; exec_start keeps init's connection and
	 * returns the finished execution if it ends within this many ms (else running, as
	 * without it). Saves the caller's exec_wait for short commands. */
	int wait_ms;
} sl_exec_spec;

typedef struct sl_exec {
	char id[32]; /* exe_ + 20 base32 */
	char sandbox_id[32];
	pid_t pid; /* inside the sandbox */
	sl_exec_status status;
	int exit_code; /* valid when not running: the exit status, 128+n when signal n
			* ended it, 127/126 when it could not start, -1 unknown */
	int signal;    /* 0 or the terminating signal */
	bool oom_killed;
	bool lost; /* init died before it ended (its sandbox was destroyed or its init
		    * died): the kernel killed it, nobody saw it end */
	int64_t started_ms, finished_ms; /* unix ms; finished 0 while running */
	int64_t started_us;		 /* unix µs of the start, 0 if not recorded */
	cJSON *command;			 /* the argv as a JSON array of strings */
	int master; /* pty master (exec_start with tty only), else -1; caller closes
		     * (exec_free does not) */
	/* Set by exec_start only, for a command that ended before it returned: its stdout
	 * ([0]) or stderr ([1]) log was empty then, so the caller need not open it. */
	bool log_empty[2];
} sl_exec;

/* Start. On success the command runs and its record exists. A command that cannot start
 * (not found, not executable, bad user or cwd) still leaves a record with status
 * failed, exit code 127/126 and the reason in stderr, and returns 0: that is a result,
 * like a shell's. Returns -1 only when the sandbox itself cannot take it (not running:
 * SL_CONFLICT; bad spec: SL_INVALID). */
int exec_start(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec_spec *spec, sl_exec *out,
	       sl_err *err);
/* Read the record (refreshing status from the exit file). SL_NOTFOUND if absent. */
int exec_get(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, sl_exec *out, sl_err *err);
/* Block until the execution ends or timeout_ms passes (-1: forever); then fill out as
 * exec_get does. Uses inotify on the exec dir: many waiters cost no CPU. */
int exec_wait(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, int timeout_ms,
	      sl_exec *out, sl_err *err);
/* All executions of a sandbox, oldest first. */
int exec_list(sl_ctx *ctx, const char *sandbox_id, sl_exec **out, size_t *n, sl_err *err);
/* How many exec_list would return, without reading them (a sandbox's details show the
 * count: reading every record made a GET cost ~25 us per execution ever run). */
int exec_count(sl_ctx *ctx, const char *sandbox_id, size_t *n, sl_err *err);
void exec_free(sl_exec *e);
/* A sandbox's log space (execlogs.h) mounted if it is not yet (a start does, or the pool
 * ahead of one), with room made for one more start: finished executions removed. */
int exec_logs_ready(sl_ctx *ctx, const sl_sandbox *sb, sl_err *err);
void exec_free_list(sl_exec *list, size_t n);
/* Watch execution EXEC_ID's directory for MASK (its logs grow, its exit is written) on
 * one of ctx's reused inotify instances (dirwatch.h: closing one would wait ~2-15 ms).
 * On failure W->fd is -1, and the caller polls instead. End with exec_watch_end. */
void exec_watch(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, uint32_t mask,
		sl_dirwatch *w);
void exec_watch_end(sl_ctx *ctx, sl_dirwatch *w);
/* Open a log for reading ("stdout" or "stderr"); the file only grows. */
int exec_open_log(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, const char *stream,
		  int *fd, sl_err *err);
/* Append to the command's stdin (stdin_pipe only), without blocking forever: returns
 * SL_CONFLICT if stdin was not kept open or is closed. */
int exec_write_stdin(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, const void *buf,
		     size_t len, sl_err *err);
int exec_close_stdin(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, sl_err *err);
/* Send a signal to the command's process group. SIGKILL/SIGTERM mark it cancelled.
 * SL_CONFLICT when it has already ended. */
int exec_signal(sl_ctx *ctx, const char *sandbox_id, const char *exec_id, int sig, sl_err *err);
/* "SIGTERM", "TERM", "term" or "15" -> 15; -1 when unknown. */
int exec_signal_from_name(const char *name);
/* 9 -> "SIGKILL". */
void exec_signal_name(int sig, char *buf, size_t len);
/* Resize the pty (tty executions, with the master held by the caller). */
int exec_resize(int master, unsigned short rows, unsigned short cols, sl_err *err);

#endif

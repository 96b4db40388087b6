/* processes.h — a sandbox's processes, and a kill of one by its pid inside. */
#ifndef SANDLOT_PROCESSES_H
#define SANDLOT_PROCESSES_H

#include <sys/types.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* Every process in the sandbox but its init (pid 1): host pid, pid inside, command line,
 * and the execution it belongs to when known (it is in the session, or else the process
 * group, that exec_start's command leads), sorted by pid inside. */
typedef struct sl_process {
	pid_t host_pid, pid, pgid;
	char cmdline[512];
	char exec_id[32]; /* "" when not known */
} sl_process;
int sandbox_processes(sl_ctx *ctx, const sl_sandbox *sb, sl_process **out, size_t *n, sl_err *err);
/* Signal one process by its pid inside the sandbox (never init, pid 1: SL_INVALID);
 * SL_NOTFOUND when no such process is in the sandbox. */
int sandbox_kill_process(sl_ctx *ctx, const sl_sandbox *sb, pid_t pid, int sig, sl_err *err);

#endif

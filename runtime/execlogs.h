/* execlogs.h — a sandbox's log space: the tmpfs its executions' records and output live
 * in (a quarter of its memory, 16 MiB to 1 GiB). */
#ifndef SANDLOT_EXECLOGS_H
#define SANDLOT_EXECLOGS_H

#include <limits.h>
#include <stddef.h>
#include <sys/statfs.h>

#include "ctx.h"
#include "err.h"
#include "record.h"

/* <run>/<sid>/execs: the log space, one directory per execution. */
void execlogs_dir(const sl_ctx *ctx, const char *sid, char *buf, size_t len);
/* Mount SB's log space if it is not yet. 0: ready; 1: mounted but short of room: *LK
 * holds the run dir's lock for the caller to remove finished executions under (until a
 * quarter is free: execlogs_has_room(f, 4)); -1 on error. D gets the directory. */
int execlogs_ready(const sl_ctx *ctx, const sl_sandbox *sb, char d[PATH_MAX], int *lk,
		   sl_err *err);
/* At least 1/PART of the space and of the inodes free. */
bool execlogs_has_room(const struct statfs *f, unsigned part);
/* Unmount it: before the run dir is removed. */
void execlogs_unmount(const sl_ctx *ctx, const char *sid);

#endif

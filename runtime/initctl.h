/* initctl.h — the host side of sandlot-init's control protocol (init/proto.h):
 * connect, send a request with fds, read a bounded reply, build spawn requests. */
#ifndef SANDLOT_INITCTL_H
#define SANDLOT_INITCTL_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "err.h"
#include "ctx.h"
#include "record.h"

typedef struct initctl_spawn {
	/* The store the sandbox's secrets (sb->secret_env) are opened from; NULL: a
	 * sandbox with secrets is refused. */
	const sl_config *cfg;
	char *const *argv;
	const char *const *env; /* extra "K=V" on top of the sandbox's */
	const char *user, *cwd; /* NULL: the sandbox's */
	uint32_t flags;		/* SL_SPAWN_* */
	unsigned short rows, cols;
	uint64_t timeout_ms; /* enforced by init; 0: none */
} initctl_spawn;

/* A connection to the sandbox's init (SL_CONFLICT when it does not answer). */
int initctl_connect(const sl_ctx *ctx, const char *sid, sl_err *err);
/* The same by the socket's path (initctl_sock_path); sid names it in errors. */
int initctl_connect_path(const char *path, const char *sid, sl_err *err);
int initctl_sock_path(const sl_ctx *ctx, const char *sid, char *buf, size_t len, sl_err *err);
/* One request with up to SL_SPAWN_MAX_FDS fds, whole or not at all: -1 with errno. */
int initctl_send(int fd, const void *req, size_t len, const int *fds, int nfds);
/* One reply and at most one passed fd, bounded in size and time: 1 on timeout. init is
 * as trusted as the workload, so everything is checked. */
int initctl_recv(int fd, struct sl_rep *rep, int *passed, int timeout_ms, sl_err *err);
/* Send req with fds on a fresh connection and read one reply (plus a passed fd). */
int initctl_call(const sl_ctx *ctx, const char *sid, const void *req, size_t len, const int *fds,
		 int nfds, int timeout_ms, struct sl_rep *rep, int *passed, sl_err *err);
/* The same, keeping the connection open in *conn (when not NULL) for later replies
 * (init sends SL_REP_EXITED on it when the command ends). */
int initctl_call_keep(const sl_ctx *ctx, const char *sid, const void *req, size_t len,
		      const int *fds, int nfds, int timeout_ms, struct sl_rep *rep, int *passed,
		      int *conn, sl_err *err);
/* The spawn request bytes: header, user, cwd, argv, environment (with the sandbox's
 * secrets in clear: the caller wipes *out, explicit_bzero, before it frees it). */
int initctl_build_spawn(const sl_sandbox *sb, const initctl_spawn *sp, char **out, size_t *outlen,
			sl_err *err);

#endif

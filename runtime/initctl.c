/* initctl.c — the host side of sandlot-init's control protocol, shared by the CLI's
 * foreground commands (sandbox_spawn) and durable executions (exec_start). */
#include "initctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch.h"
#include "secret.h"
#include "state.h"


int initctl_sock_path(const sl_ctx *ctx, const char *sid, char *buf, size_t len, sl_err *err)
{
	char run[PATH_MAX];
	state_run_dir(&ctx->cfg, sid, run, sizeof(run));
	if (snprintf(buf, len, "%s/init.sock", run) >= (int)len)
		return sl_fail(err, SL_INTERNAL, 0, "run dir path too long: %s", run);
	return 0;
}

/* A sandbox launched to hibernate (launch_hib.c) has no init.sock: its init listens on
 * SL_INIT_ABSTRACT in the sandbox's network namespace, whose init <dir>/init.ns names
 * ("PID STARTTIME", checked against the pid's start time so a reused pid is no match).
 * The socket is made there by this thread, which then returns to ours, as connect.c does
 * for ports. -1 with errno set (ENOENT: no such file, the sandbox is not one of those). */
static int connect_abstract(const char *sock_path)
{
	char p[PATH_MAX], text[64];
	const char *slash = strrchr(sock_path, '/');
	int dirlen = slash ? (int)(slash - sock_path) : 0;
	snprintf(p, sizeof(p), "%.*s/init.ns", dirlen, sock_path);
	_cleanup_close_ int file = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = file < 0 ? -1 : read(file, text, sizeof(text) - 1);
	int pid;
	unsigned long long start;
	if (n <= 0 || (text[n] = '\0', sscanf(text, "%d %llu", &pid, &start) != 2) || pid <= 0) {
		errno = n < 0 ? errno : ECONNREFUSED;
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
	_cleanup_close_ int ns = open(p, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns < 0 || self < 0 || proc_start_time(pid) != start) {
		errno = ECONNREFUSED;
		return -1;
	}
	if (setns(ns, CLONE_NEWNET) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int e = errno;
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* this thread would go on in the sandbox's namespace */
	if (fd < 0) {
		errno = e;
		return -1;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path + 1, SL_INIT_ABSTRACT, sizeof(SL_INIT_ABSTRACT) - 1);
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(SL_INIT_ABSTRACT) - 1;
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int initctl_connect_path(const char *path, const char *sid, sl_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path))
		return sl_fail(err, SL_INTERNAL, 0, "socket path too long: %s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sl_sysfail(err, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		if (e == ENOENT && (fd = connect_abstract(path)) >= 0)
			return fd;
		e = e == ENOENT && errno != ENOENT ? errno : e;
		return sl_fail(err, SL_CONFLICT, e,
			       "sandbox %s is not running (its init does not answer)", sid);
	}
	return fd;
}

int initctl_connect(const sl_ctx *ctx, const char *sid, sl_err *err)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (initctl_sock_path(ctx, sid, path, sizeof(path), err) < 0)
		return -1;
	return initctl_connect_path(path, sid, err);
}

int initctl_send(int fd, const void *req, size_t len, const int *fds, int nfds)
{
	union {
		char b[CMSG_SPACE(SL_SPAWN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	if (nfds > SL_SPAWN_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	struct iovec iov = {(void *)req, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds) {
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	ssize_t n;
	while ((n = sendmsg(fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n >= 0 && n != (ssize_t)len)
		errno = EMSGSIZE;
	return n == (ssize_t)len ? 0 : -1;
}

/* One reply (and at most one passed fd), bounded in size and time: 1 on timeout. init
 * is as trusted as the workload, so everything is checked. */
int initctl_recv(int fd, struct sl_rep *rep, int *passed, int timeout_ms, sl_err *err)
{
	struct pollfd p = {fd, POLLIN, 0};
	int r;
	while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return 1;
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {rep, sizeof(*rep)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n;
	while ((n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 && errno == EINTR)
		;
	int e = errno;
	/* A failed recvmsg leaves the control buffer as it was: uninitialised stack, often
	 * an earlier reply's SCM_RIGHTS, whose fd number we must not close again. */
	if (n < 0)
		mh.msg_controllen = 0;
	*passed = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int pfd;
			memcpy(&pfd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*passed < 0)
				*passed = pfd;
			else
				close(pfd);
		}
	}
	if (n == 0 || (n < 0 && e == ECONNRESET)) {
		if (*passed >= 0)
			close(steal_fd(passed));
		return sl_fail(err, SL_CONFLICT, 0, "the sandbox stopped (its init went away)");
	}
	if (n < 0)
		return sl_fail(err, SL_INTERNAL, e, "read from the sandbox's init");
	if (n != sizeof(*rep) || rep->hdr.magic != SL_PROTO_MAGIC || (mh.msg_flags & MSG_CTRUNC)) {
		if (*passed >= 0)
			close(steal_fd(passed));
		return sl_fail(err, SL_INTERNAL, 0, "malformed reply from the sandbox's init");
	}
	rep->msg[sizeof(rep->msg) - 1] = '\0';
	return 0;
}

/* Send REQ with FDS on a fresh connection and read one reply (plus a passed fd). */
int initctl_call(const sl_ctx *ctx, const char *sid, const void *req, size_t len,
		     const int *fds, int nfds, int timeout_ms, struct sl_rep *rep, int *passed,
		     sl_err *err)
{
	return initctl_call_keep(ctx, sid, req, len, fds, nfds, timeout_ms, rep, passed, NULL,
				 err);
}

int initctl_call_keep(const sl_ctx *ctx, const char *sid, const void *req, size_t len,
		      const int *fds, int nfds, int timeout_ms, struct sl_rep *rep, int *passed,
		      int *conn, sl_err *err)
{
	_cleanup_close_ int fd = initctl_connect(ctx, sid, err);
	if (fd < 0)
		return -1;
	if (initctl_send(fd, req, len, fds, nfds) < 0)
		return sl_fail(err, SL_CONFLICT, errno, "sandbox %s: send to its init", sid);
	int r = initctl_recv(fd, rep, passed, timeout_ms, err);
	if (r == 1)
		return sl_fail(err, SL_TIMEOUT, 0, "sandbox %s: its init did not answer in %d ms",
			       sid, timeout_ms);
	if (r == 0 && conn)
		*conn = steal_fd(&fd);
	return r;
}


typedef struct strv {
	char **v;
	size_t n, cap;
} strv;

/* Wiped: the environment may hold secrets in clear. */
static void strv_free(strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		secret_wipe(s->v[i], strlen(s->v[i]));
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int strv_add(strv *s, char *owned)
{
	if (!owned)
		return -1;
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		char **nv = realloc(s->v, nc * sizeof(char *));
		if (!nv) {
			free(owned);
			return -1;
		}
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = owned;
	return 0;
}

/* The sandbox's secret env (names in its record) opened from CFG's store: added last,
 * so a secret wins over an env of the same name. */
static int secrets_env(const sl_sandbox *sb, const sl_config *cfg, strv *env, sl_err *err)
{
	const cJSON *it;
	if (cJSON_GetArraySize(sb->secret_env) > 0 && !cfg)
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: its secrets: no store", sb->id);
	cJSON_ArrayForEach(it, sb->secret_env)
	{
		char *value = NULL, *kv = NULL;
		size_t len = 0;
		if (!cJSON_IsString(it) ||
		    secret_reveal(cfg, sb->owner, it->valuestring, &value, &len, err) < 0)
			return sl_wrap(err, "sandbox %s: env %.140s", sb->id, it->string);
		int n = asprintf(&kv, "%s=%s", it->string, value);
		secret_wipe(value, len);
		if (n < 0 || strv_add(env, kv) < 0)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "build environment");
	}
	return 0;
}

/* The command's environment: defaults, the sandbox's env, then the call's, then its
 * secrets; a later KEY wins. */
static int spawn_env(const sl_sandbox *sb, const sl_config *cfg, const char *const *extra,
		     bool tty, strv *env, sl_err *err)
{
	char host[128];
	snprintf(host, sizeof(host), "HOSTNAME=%s", sb->name[0] ? sb->name : sb->id);
	int r = strv_add(env, strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
				     "/sbin:/bin"));
	r |= strv_add(env, strdup(host));
	if (tty)
		r |= strv_add(env, strdup("TERM=xterm"));
	const cJSON *it;
	cJSON_ArrayForEach(it, sb->env)
	{
		char *s;
		if (cJSON_IsString(it))
			r |= strv_add(
			    env, asprintf(&s, "%s=%s", it->string, it->valuestring) < 0 ? NULL : s);
	}
	for (const char *const *e = extra; e && *e; e++)
		r |= strv_add(env, strdup(*e));
	if (r)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "build environment");
	if (secrets_env(sb, cfg, env, err) < 0)
		return -1;
	size_t w = 0;
	for (size_t i = 0; i < env->n; i++) {
		size_t kl = strcspn(env->v[i], "=");
		bool later = false;
		for (size_t j = i + 1; j < env->n && !later; j++)
			later = !strncmp(env->v[i], env->v[j], kl) && env->v[j][kl] == '=';
		if (later)
			secret_wipe(env->v[i], strlen(env->v[i]));
		else
			env->v[w++] = env->v[i];
	}
	env->n = w;
	return 0;
}

static int buf_add(char **buf, size_t *len, size_t *cap, const void *data, size_t n, sl_err *err)
{
	if (*len + n > SL_PROTO_MAX)
		return sl_fail(err, SL_TOOLARGE, 0, "command, environment and user exceed %d bytes",
			       SL_PROTO_MAX);
	if (*len + n > *cap) {
		/* Not realloc: the old block is wiped before it is freed (secrets). */
		size_t nc = (*len + n) * 2;
		char *b = malloc(nc);
		if (!b)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "build spawn request");
		if (*buf)
			memcpy(b, *buf, *len);
		secret_wipe(*buf, *len);
		*buf = b;
		*cap = nc;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	return 0;
}

int initctl_build_spawn(const sl_sandbox *sb, const initctl_spawn *sp, char **out, size_t *outlen,
			sl_err *err)
{
	strv env = {0};
	char *const *argv = sp->argv;
	uint32_t flags = sp->flags;
	if (spawn_env(sb, sp->cfg, sp->env, flags & SL_SPAWN_TTY, &env, err) < 0) {
		strv_free(&env);
		return -1;
	}
	size_t argc = 0;
	while (argv[argc])
		argc++;
	struct sl_req_spawn rq = {.hdr = {SL_PROTO_MAGIC, SL_REQ_SPAWN},
				  .flags = flags,
				  .rows = sp->rows,
				  .cols = sp->cols,
				  .argc = argc,
				  .envc = env.n,
				  .timeout_ms = sp->timeout_ms};
	char *buf = NULL;
	size_t len = 0, cap = 0;
	const char *user = sp->user ? sp->user : sb->user;
	const char *cwd = sp->cwd ? sp->cwd : sb->workdir;
	int r = buf_add(&buf, &len, &cap, &rq, sizeof(rq), err);
	if (r == 0)
		r = buf_add(&buf, &len, &cap, user, strlen(user) + 1, err);
	if (r == 0)
		r = buf_add(&buf, &len, &cap, cwd, strlen(cwd) + 1, err);
	for (size_t i = 0; r == 0 && i < argc; i++)
		r = buf_add(&buf, &len, &cap, argv[i], strlen(argv[i]) + 1, err);
	for (size_t i = 0; r == 0 && i < env.n; i++)
		r = buf_add(&buf, &len, &cap, env.v[i], strlen(env.v[i]) + 1, err);
	strv_free(&env);
	if (r < 0) {
		secret_wipe(buf, len);
		return -1;
	}
	*out = buf;
	*outlen = len;
	return 0;
}


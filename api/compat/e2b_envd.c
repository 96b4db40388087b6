/* e2b_envd.c — E2B's in-sandbox daemon (envd) served by the host: the Connect RPCs of
 * process.Process (over durable executions) and filesystem.Filesystem (over sbxfs),
 * in Connect's JSON codec with server-streaming envelopes (/files is e2b_files.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "cleanup.h"
#include "clock.h"
#include "e2b.h"
#include "sbxfs.h"
#include "state.h"

static bool e2b_exec_is_context(const sl_exec *e);

#define READ_BLOCK    (32 * 1024)
#define KEEPALIVE_MS  50000
#define WAIT_SLICE_MS 250

/* ---- Connect: errors, unary replies, envelopes ---- */

static const char *connect_code(sl_kind k)
{
	switch (k) {
	case SL_INVALID:
		return "invalid_argument";
	case SL_NOTFOUND:
		return "not_found";
	case SL_CONFLICT:
		return "failed_precondition";
	case SL_TOOLARGE:
	case SL_EXHAUSTED:
	case SL_NOSPACE:
		return "resource_exhausted";
	case SL_NOTIMPL:
		return "unimplemented";
	case SL_TIMEOUT:
		return "deadline_exceeded";
	case SL_UNAUTH:
		return "unauthenticated";
	default:
		return "internal";
	}
}

static cJSON *connect_error_json(const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "code", code);
	cJSON_AddStringToObject(o, "message", msg);
	return o;
}

static enum MHD_Result rpc_fail_code(api_req *r, unsigned status, const char *code, const char *msg)
{
	return api_reply_json(r, status, connect_error_json(code, msg));
}

static enum MHD_Result rpc_fail(api_req *r, const sl_err *err)
{
	return rpc_fail_code(r, api_err_status(err), connect_code(err->kind), err->msg);
}

/* One envelope: flag, big-endian length, the message. Appends to *buf. */
static int envelope_add(char **buf, size_t *len, uint8_t flag, cJSON *msg)
{
	char *s = cJSON_PrintUnformatted(msg);
	cJSON_Delete(msg);
	if (!s)
		return -1;
	size_t n = strlen(s);
	char *b = realloc(*buf, *len + 5 + n);
	if (!b) {
		free(s);
		return -1;
	}
	b[*len] = (char)flag;
	b[*len + 1] = (char)(n >> 24);
	b[*len + 2] = (char)(n >> 16);
	b[*len + 3] = (char)(n >> 8);
	b[*len + 4] = (char)n;
	memcpy(b + *len + 5, s, n);
	free(s);
	*buf = b;
	*len += 5 + n;
	return 0;
}

cJSON *e2b_rpc_message_parse(const char *body, size_t n, bool streaming, sl_err *err)
{
	const char *p = body;
	if (streaming) {
		if (n < 5 || p[0] != 0)
			return sl_fail(err, SL_INVALID, 0, "expected one uncompressed envelope"),
			       NULL;
		size_t len = ((size_t)(uint8_t)p[1] << 24) | ((size_t)(uint8_t)p[2] << 16) |
			     ((size_t)(uint8_t)p[3] << 8) | (uint8_t)p[4];
		if (len > n - 5)
			return sl_fail(err, SL_INVALID, 0, "the envelope is cut short"), NULL;
		p += 5;
		n = len;
	}
	if (!n)
		return cJSON_CreateObject();
	cJSON *o = api_json_parse(p, n, err);
	if (o && !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		sl_fail(err, SL_INVALID, 0, "the message must be a JSON object");
		return NULL;
	}
	return o;
}

/* The request message: a bare JSON body (unary), or one envelope (streaming). */
static cJSON *rpc_message(api_req *r, bool *streaming, sl_err *err)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	*streaming = ct && !strncasecmp(ct, "application/connect+json", 24);
	return e2b_rpc_message_parse(r->body ? r->body : "", r->body_len, *streaming, err);
}

/* camelCase or the proto's snake_case name. */
static const cJSON *field(const cJSON *o, const char *camel, const char *snake)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, camel);
	return v || !snake ? v : cJSON_GetObjectItemCaseSensitive(o, snake);
}

static const char *str_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *b64(const void *data, size_t len)
{
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
	if (!out)
		return NULL;
	base64_encode_raw(out, len, data);
	out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
	return out;
}

/* A streamed body of envelopes produced by NEXT on demand. */
typedef struct rpc_stream rpc_stream;
struct rpc_stream {
	api_server *srv;
	int conn;
	char *pend;
	size_t pend_len, pend_pos;
	bool done;
	int64_t last_sent;
	/* Append the next envelopes to pend; 1 when something was added, 0 when it should
	 * wait, -1 to cut the stream (the client left). Sets done after the end-stream. */
	int (*next)(rpc_stream *st);
	void (*release)(rpc_stream *st);
};

static void rpc_stream_free(void *cls)
{
	rpc_stream *st = cls;
	if (st->release)
		st->release(st);
	free(st->pend);
	free(st);
}

static ssize_t rpc_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	rpc_stream *st = cls;
	for (;;) {
		if (st->pend_pos < st->pend_len) {
			size_t n = st->pend_len - st->pend_pos;
			if (n > max)
				n = max;
			memcpy(buf, st->pend + st->pend_pos, n);
			st->pend_pos += n;
			if (st->pend_pos == st->pend_len)
				st->pend_pos = st->pend_len = 0;
			st->last_sent = sl_mono_ms();
			return (ssize_t)n;
		}
		if (st->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&st->srv->stopping))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		int got = st->next(st);
		if (got < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static int stream_emit(rpc_stream *st, uint8_t flag, cJSON *msg)
{
	return envelope_add(&st->pend, &st->pend_len, flag, msg);
}

/* Wait on FDS (plus the client's socket) up to MS; -1 when the client hung up. */
static int stream_wait(rpc_stream *st, struct pollfd *fds, int nfds, int ms)
{
	struct pollfd p[4];
	p[0] = (struct pollfd){st->conn, POLLRDHUP, 0};
	for (int i = 0; i < nfds && i < 3; i++)
		p[i + 1] = fds[i];
	int n = poll(p, (nfds_t)(nfds + 1), ms);
	if (n > 0 && st->conn >= 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return -1;
	for (int i = 0; i < nfds && i < 3; i++)
		fds[i].revents = p[i + 1].revents;
	return 0;
}

static void stream_keepalive(rpc_stream *st, cJSON *(*make)(void))
{
	if (sl_mono_ms() - st->last_sent >= KEEPALIVE_MS) {
		stream_emit(st, 0, make());
		st->last_sent = sl_mono_ms();
	}
}

static enum MHD_Result stream_start(api_req *r, rpc_stream *st)
{
	st->srv = r->srv;
	st->last_sent = sl_mono_ms();
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	st->conn = ci ? ci->connect_fd : -1;
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, 64 * 1024, rpc_stream_read, st, rpc_stream_free);
	if (!resp) {
		rpc_stream_free(st);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/connect+json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
}

/* A stream that fails before its first event: one end-stream envelope with the error. */
static enum MHD_Result stream_error(api_req *r, const char *code, const char *msg)
{
	rpc_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return MHD_NO;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "error", connect_error_json(code, msg));
	stream_emit(st, 2, o);
	st->done = true;
	return stream_start(r, st);
}

/* ---- processes ---- */

/* The newest execution with pid PID (the SDK's handle is the pid inside). */
static int exec_by_pid(api_server *s, const char *sid, long pid, sl_exec *out, sl_err *err)
{
	sl_exec *list;
	size_t n;
	if (exec_list(s->ctx, sid, &list, &n, err) < 0)
		return -1;
	int found = -1;
	for (size_t i = n; i-- > 0;)
		if (list[i].pid == pid && !e2b_exec_is_context(&list[i])) {
			found = (int)i;
			break;
		}
	if (found < 0) {
		exec_free_list(list, n);
		return sl_fail(err, SL_NOTFOUND, 0, "process with pid %ld not found", pid);
	}
	*out = list[found];
	list[found].command = NULL;
	exec_free_list(list, n);
	return 0;
}

/* Is this execution one of the façade's own (a code-interpreter context)? Hidden from
 * Process.List. */
static bool e2b_exec_is_context(const sl_exec *e)
{
	const cJSON *last = NULL, *it;
	cJSON_ArrayForEach(it, e->command)
	{
		last = it;
	}
	return cJSON_IsString(last) && !strcmp(last->valuestring, E2B_CONTEXT_MARK);
}

static long pid_of(const cJSON *msg)
{
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(msg, "process");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sel, "pid");
	/* In range before the conversion: a double long cannot hold is undefined behaviour. */
	if (cJSON_IsNumber(pid))
		return pid->valuedouble >= 0 && pid->valuedouble <= INT32_MAX
			   ? (long)pid->valuedouble
			   : -1;
	if (cJSON_IsString(pid))
		return strtol(pid->valuestring, NULL, 10);
	return -1;
}

/* The pty master the server holds for a tty execution (attach.c's list), dup'd. */
static int pty_master(api_server *s, const char *sid, const char *eid)
{
	int fd = -1;
	pthread_mutex_lock(&s->lock);
	for (api_pty *p = s->ptys; p; p = p->next)
		if (!strcmp(p->sandbox_id, sid) && !strcmp(p->exec_id, eid)) {
			fd = fcntl(p->master, F_DUPFD_CLOEXEC, 3);
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return fd;
}

typedef struct proc_stream {
	rpc_stream st;
	char sid[32], eid[32];
	long pid;
	int fd[2]; /* stdout, stderr logs */
	uint64_t off[2];
	int master;	 /* pty output, or -1 */
	sl_dirwatch ino; /* on the execution's directory; fd -1: we poll */
	bool started, ended;
} proc_stream;

static void proc_release(rpc_stream *st)
{
	proc_stream *ps = (proc_stream *)st;
	for (int i = 0; i < 2; i++)
		if (ps->fd[i] >= 0)
			close(ps->fd[i]);
	if (ps->master >= 0)
		close(ps->master);
	exec_watch_end(st->srv->ctx, &ps->ino);
}

static cJSON *event(const char *kind, cJSON *body)
{
	cJSON *o = cJSON_CreateObject(), *ev = cJSON_AddObjectToObject(o, "event");
	cJSON_AddItemToObject(ev, kind, body);
	return o;
}

static cJSON *keepalive_event(void)
{
	return event("keepalive", cJSON_CreateObject());
}

static cJSON *end_event(const sl_exec *e)
{
	cJSON *end = cJSON_CreateObject();
	char status[64];
	if (e->signal) {
		const char *name = e->signal == SIGKILL	  ? "killed"
				   : e->signal == SIGTERM ? "terminated"
				   : e->signal == SIGINT  ? "interrupt"
							  : NULL;
		if (name)
			snprintf(status, sizeof(status), "signal: %s", name);
		else
			snprintf(status, sizeof(status), "signal: %d", e->signal);
		cJSON_AddNumberToObject(end, "exitCode", -1);
		cJSON_AddBoolToObject(end, "exited", false);
		cJSON_AddStringToObject(end, "status", status);
		cJSON_AddStringToObject(end, "error", status);
	} else {
		snprintf(status, sizeof(status), "exit status %d", e->exit_code);
		cJSON_AddNumberToObject(end, "exitCode", e->exit_code);
		cJSON_AddBoolToObject(end, "exited", true);
		cJSON_AddStringToObject(end, "status", status);
		if (e->exit_code)
			cJSON_AddStringToObject(end, "error", status);
	}
	return event("end", end);
}

/* Up to a block of new output from FD (a log at *OFF, or the pty) as a data event. */
static int proc_read(proc_stream *ps, int fd, uint64_t *off, const char *kind)
{
	char buf[READ_BLOCK];
	ssize_t n;
	do
		n = off ? pread(fd, buf, sizeof(buf), (off_t)*off) : read(fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	if (off)
		*off += (uint64_t)n;
	char *text = b64(buf, (size_t)n);
	if (!text)
		return -1;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, kind, text);
	free(text);
	stream_emit(&ps->st, 0, event("data", d));
	return 1;
}

static int proc_next(rpc_stream *st)
{
	proc_stream *ps = (proc_stream *)st;
	if (!ps->started) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddNumberToObject(s, "pid", (double)ps->pid);
		stream_emit(st, 0, event("start", s));
		ps->started = true;
		return 1;
	}
	int got = 0;
	for (int i = 0; i < 2 && !got; i++)
		if (ps->fd[i] >= 0)
			got = proc_read(ps, ps->fd[i], &ps->off[i], i ? "stderr" : "stdout");
	if (!got && ps->master >= 0)
		got = proc_read(ps, ps->master, NULL, "pty");
	if (got)
		return got;
	sl_exec e;
	sl_err err = {0};
	if (ps->ended || exec_get(st->srv->ctx, ps->sid, ps->eid, &e, &err) < 0) {
		/* Gone with its sandbox: E2B's proxy would cut the stream too. */
		if (!ps->ended)
			return -1;
	} else if (e.status != SL_EXEC_RUNNING) {
		/* Killed with its sandbox (its init died first): cut, with no end event, as
		 * E2B's proxy drops the stream when the sandbox dies; the SDK then finds the
		 * sandbox gone (502 on /health) and throws a TimeoutError. */
		if (e.lost) {
			exec_free(&e);
			return -1;
		}
		/* One more pass reads what it wrote before the exit; then the end. */
		if (!ps->ended) {
			ps->ended = true;
			exec_free(&e);
			return 0;
		}
	} else {
		exec_free(&e);
		struct pollfd p[2] = {{ps->ino.fd, POLLIN, 0}, {ps->master, POLLIN, 0}};
		int np = ps->master >= 0 ? 2 : 1;
		if (stream_wait(st, p, np, WAIT_SLICE_MS) < 0)
			return -1;
		if (p[0].revents & POLLIN)
			dirwatch_drain(&ps->ino);
		stream_keepalive(st, keepalive_event);
		return 0;
	}
	if (exec_get(st->srv->ctx, ps->sid, ps->eid, &e, &err) < 0)
		return -1;
	stream_emit(st, 0, end_event(&e));
	exec_free(&e);
	stream_emit(st, 2, cJSON_CreateObject());
	st->done = true;
	return 1;
}

/* Stream execution EID from the given log offsets (Start: 0; Connect: now). */
static enum MHD_Result proc_stream_start(api_req *r, const sl_exec *e, bool from_now, int master)
{
	proc_stream *ps = calloc(1, sizeof(*ps));
	if (!ps) {
		if (master >= 0)
			close(master);
		return MHD_NO;
	}
	ps->st.next = proc_next;
	ps->st.release = proc_release;
	snprintf(ps->sid, sizeof(ps->sid), "%s", e->sandbox_id);
	snprintf(ps->eid, sizeof(ps->eid), "%s", e->id);
	ps->pid = e->pid;
	ps->master = master;
	ps->fd[0] = ps->fd[1] = ps->ino.fd = -1;
	static const char *const logs[] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		sl_err err = {0};
		struct stat st;
		if (exec_open_log(r->srv->ctx, ps->sid, ps->eid, logs[i], &ps->fd[i], &err) == 0 &&
		    from_now && fstat(ps->fd[i], &st) == 0)
			ps->off[i] = (uint64_t)st.st_size;
	}
	exec_watch(r->srv->ctx, ps->sid, ps->eid,
		   IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_ATTRIB, &ps->ino);
	return stream_start(r, &ps->st);
}

static enum MHD_Result process_start(api_req *r, const sl_sandbox *sb, const cJSON *msg)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(msg, "process");
	const char *cmd = str_field(p, "cmd");
	if (!cJSON_IsObject(p) || !cmd)
		return stream_error(r, "invalid_argument", "process.cmd: required");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(p, "args");
	const cJSON *envs = cJSON_GetObjectItemCaseSensitive(p, "envs");
	size_t na = cJSON_IsArray(args) ? (size_t)cJSON_GetArraySize(args) : 0;
	size_t ne = cJSON_IsObject(envs) ? (size_t)cJSON_GetArraySize(envs) : 0;
	_cleanup_free_ char **argv = calloc(na + 2, sizeof(char *));
	char **env = calloc(ne + 1, sizeof(char *));
	if (!argv || !env) {
		free(env);
		return MHD_NO;
	}
	argv[0] = (char *)cmd;
	size_t k = 1;
	const cJSON *it;
	cJSON_ArrayForEach(it, args)
	{
		if (cJSON_IsString(it))
			argv[k++] = it->valuestring;
	}
	k = 0;
	cJSON_ArrayForEach(it, envs)
	{
		if (!cJSON_IsString(it))
			continue;
		if (asprintf(&env[k], "%s=%s", it->string, it->valuestring) >= 0)
			k++;
		else
			env[k] = NULL; /* undefined after a failure */
	}
	char user[64], cwd[300];
	e2b_request_user(r, user);
	const char *c = str_field(p, "cwd");
	if (c && *c)
		snprintf(cwd, sizeof(cwd), "%s", c);
	else
		e2b_user_home(sb, user, cwd, sizeof(cwd));
	sl_exec_spec spec = {.argv = argv,
			     .env = (const char *const *)env,
			     .user = user[0] ? user : NULL,
			     .cwd = cwd};
	const cJSON *stdin_f = cJSON_GetObjectItemCaseSensitive(msg, "stdin");
	spec.stdin_pipe = !cJSON_IsFalse(stdin_f);
	const cJSON *pty = cJSON_GetObjectItemCaseSensitive(msg, "pty");
	if (cJSON_IsObject(pty)) {
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(pty, "size");
		const cJSON *cols = cJSON_GetObjectItemCaseSensitive(size, "cols");
		const cJSON *rows = cJSON_GetObjectItemCaseSensitive(size, "rows");
		spec.tty = true;
		spec.stdin_pipe = false;
		spec.cols = cJSON_IsNumber(cols) && cols->valuedouble >= 1 ? cols->valueint : 80;
		spec.rows = cJSON_IsNumber(rows) && rows->valuedouble >= 1 ? rows->valueint : 24;
	}
	/* Reference envd kills the process when the call's deadline passes. */
	const char *tmo =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Connect-Timeout-Ms");
	if (tmo)
		spec.timeout_ms = strtoull(tmo, NULL, 10);
	sl_exec e;
	sl_err err = {0};
	int rc = exec_start(r->srv->ctx, sb, &spec, &e, &err);
	api_strv_free(env);
	if (rc < 0)
		return stream_error(r, connect_code(err.kind), err.msg);
	atomic_fetch_add(&r->srv->executions_started, 1);
	int master = -1;
	if (e.master >= 0) {
		/* Every stream of this pty (Start's, each Connect's, /v1's attach) reads the one
		 * master: non-blocking, so a stream whose client left is never parked in read(2),
		 * deaf to the hangup, taking the output meant for the stream that replaced it. */
		fcntl(e.master, F_SETFL, fcntl(e.master, F_GETFL) | O_NONBLOCK);
		master = fcntl(e.master, F_DUPFD_CLOEXEC, 3);
		api_pty_add(r->srv, e.sandbox_id, e.id, e.master);
		e.master = -1;
	}
	enum MHD_Result ret = proc_stream_start(r, &e, false, master);
	exec_free(&e);
	return ret;
}

static enum MHD_Result process_connect(api_req *r, const sl_sandbox *sb, const cJSON *msg)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_by_pid(r->srv, sb->id, pid_of(msg), &e, &err) < 0)
		return stream_error(r, "not_found", err.msg);
	enum MHD_Result ret = proc_stream_start(r, &e, true, pty_master(r->srv, sb->id, e.id));
	exec_free(&e);
	return ret;
}

static enum MHD_Result process_list(api_req *r, const sl_sandbox *sb)
{
	sl_exec *list;
	size_t n;
	sl_err err = {0};
	if (exec_list(r->srv->ctx, sb->id, &list, &n, &err) < 0)
		return rpc_fail(r, &err);
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "processes");
	for (size_t i = 0; i < n; i++) {
		if (list[i].status != SL_EXEC_RUNNING || e2b_exec_is_context(&list[i]))
			continue;
		cJSON *p = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(p, "config");
		cJSON_AddNumberToObject(p, "pid", list[i].pid);
		cJSON *args = cJSON_AddArrayToObject(cfg, "args");
		const cJSON *it;
		bool first = true;
		cJSON_ArrayForEach(it, list[i].command)
		{
			if (first)
				cJSON_AddStringToObject(cfg, "cmd", it->valuestring);
			else
				cJSON_AddItemToArray(args, cJSON_CreateString(it->valuestring));
			first = false;
		}
		cJSON_AddObjectToObject(cfg, "envs");
		cJSON_AddItemToArray(arr, p);
	}
	exec_free_list(list, n);
	return api_reply_json(r, 200, o);
}

static enum MHD_Result process_signal(api_req *r, const sl_sandbox *sb, const cJSON *msg)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_by_pid(r->srv, sb->id, pid_of(msg), &e, &err) < 0)
		return rpc_fail(r, &err);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(msg, "signal");
	int sig = SIGKILL;
	if (cJSON_IsString(s) && !strcmp(s->valuestring, "SIGNAL_SIGTERM"))
		sig = SIGTERM;
	else if (cJSON_IsNumber(s) && s->valueint == 15)
		sig = SIGTERM;
	int rc = exec_signal(r->srv->ctx, sb->id, e.id, sig, &err);
	exec_free(&e);
	if (rc < 0) {
		if (err.kind == SL_CONFLICT)
			err.kind = SL_NOTFOUND; /* it already ended */
		return rpc_fail(r, &err);
	}
	return api_reply_json(r, 200, cJSON_CreateObject());
}

static enum MHD_Result process_input(api_req *r, const sl_sandbox *sb, const cJSON *msg,
				     bool close_it)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_by_pid(r->srv, sb->id, pid_of(msg), &e, &err) < 0)
		return rpc_fail(r, &err);
	char eid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	exec_free(&e);
	if (close_it) {
		if (exec_close_stdin(r->srv->ctx, sb->id, eid, &err) < 0)
			return rpc_fail(r, &err);
		return api_reply_json(r, 200, cJSON_CreateObject());
	}
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(msg, "input");
	const char *data = str_field(in, "stdin"), *pty = str_field(in, "pty");
	unsigned char *bytes = NULL;
	size_t len = 0;
	if (api_base64_decode("input", data ? data : pty ? pty : "", &bytes, &len, &err) < 0)
		return rpc_fail(r, &err);
	int rc = 0;
	if (pty) {
		int m = pty_master(r->srv, sb->id, eid);
		if (m < 0)
			rc = sl_fail(&err, SL_NOTFOUND, 0, "process has no pty");
		for (size_t off = 0; rc == 0 && off < len;) {
			ssize_t n = write(m, bytes + off, len - off);
			if (n < 0 && errno == EINTR)
				continue;
			/* The master is non-blocking: wait for room. */
			if (n < 0 && errno == EAGAIN) {
				struct pollfd pf = {m, POLLOUT, 0};
				if (poll(&pf, 1, 5000) > 0)
					continue;
				rc = sl_fail(&err, SL_TIMEOUT, 0, "the pty takes no input");
				break;
			}
			if (n < 0)
				rc = sl_sysfail(&err, "write to the pty");
			else
				off += (size_t)n;
		}
		if (m >= 0)
			close(m);
	} else if (len) {
		rc = exec_write_stdin(r->srv->ctx, sb->id, eid, bytes, len, &err);
	}
	free(bytes);
	if (rc < 0)
		return rpc_fail(r, &err);
	return api_reply_json(r, 200, cJSON_CreateObject());
}

static enum MHD_Result process_update(api_req *r, const sl_sandbox *sb, const cJSON *msg)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_by_pid(r->srv, sb->id, pid_of(msg), &e, &err) < 0)
		return rpc_fail(r, &err);
	int m = pty_master(r->srv, sb->id, e.id);
	exec_free(&e);
	const cJSON *size = field(cJSON_GetObjectItemCaseSensitive(msg, "pty"), "size", NULL);
	const cJSON *cols = cJSON_GetObjectItemCaseSensitive(size, "cols");
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(size, "rows");
	int rc = 0;
	if (m < 0)
		rc = sl_fail(&err, SL_NOTFOUND, 0, "process has no pty");
	else if (cJSON_IsNumber(cols) && cJSON_IsNumber(rows))
		rc = exec_resize(m, (unsigned short)rows->valueint, (unsigned short)cols->valueint,
				 &err);
	if (m >= 0)
		close(m);
	if (rc < 0)
		return rpc_fail(r, &err);
	return api_reply_json(r, 200, cJSON_CreateObject());
}

/* ---- filesystem ---- */

static void owner_name(const sl_sandbox *sb, uint32_t id, char *buf, size_t len)
{
	if (id == 0)
		snprintf(buf, len, "root");
	else if (id == 1000 && sb->user[0] && strcmp(sb->user, "root"))
		snprintf(buf, len, "%s", sb->user);
	else
		snprintf(buf, len, "%u", id);
}

/* envd gives a symlink's target as an absolute path: a relative one is taken from the
 * link's directory, "." and ".." resolved as text (nothing is followed). */
static void symlink_target(cJSON *o, const sl_fileinfo *fi)
{
	char joined[2 * PATH_MAX], out[2 * PATH_MAX];
	if (fi->target[0] == '/') {
		snprintf(joined, sizeof(joined), "%s", fi->target);
	} else {
		int dl = (int)(strrchr(fi->path, '/') - fi->path);
		snprintf(joined, sizeof(joined), "%.*s/%s", dl, fi->path, fi->target);
	}
	size_t n = 0;
	char *save = NULL;
	for (char *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			while (n > 0 && out[--n] != '/')
				;
			continue;
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "/%s", c);
	}
	if (!n)
		out[n++] = '/';
	out[n] = '\0';
	cJSON_AddStringToObject(o, "symlinkTarget", out);
}

/* A directory's size as E2B's filesystem gives it: ext4 with 4 KiB blocks, where a
 * directory is whole blocks, at least one. st_size of a directory is each filesystem's
 * own word (btrfs, the writable layer's: the bytes of its names, 0 when empty), so E2B's
 * is given rather than one code written for E2B reads as "no directory" (size > 0
 * checks); /v1 keeps what the filesystem says. Files are as they are. */
#define E2B_FS_BLOCK 4096u
static uint64_t entry_size(const sl_fileinfo *fi)
{
	if (strcmp(fi->type, "dir"))
		return fi->size;
	uint64_t blocks = (fi->size + E2B_FS_BLOCK - 1) / E2B_FS_BLOCK;
	return (blocks ? blocks : 1) * E2B_FS_BLOCK;
}

static cJSON *entry_json(sl_ctx *ctx, const sl_sandbox *sb, const sl_fileinfo *fi)
{
	cJSON *o = cJSON_CreateObject();
	char t[64], perm[16];
	cJSON_AddStringToObject(o, "name", fi->name);
	const char *type = !strcmp(fi->type, "dir")	  ? "FILE_TYPE_DIRECTORY"
			   : !strcmp(fi->type, "symlink") ? "FILE_TYPE_SYMLINK"
			   : !strcmp(fi->type, "file")	  ? "FILE_TYPE_FILE"
							  : "FILE_TYPE_UNSPECIFIED";
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddStringToObject(o, "path", fi->path);
	snprintf(t, sizeof(t), "%llu", (unsigned long long)entry_size(fi));
	cJSON_AddStringToObject(o, "size", t);
	cJSON_AddNumberToObject(o, "mode", fi->mode);
	perm[0] = !strcmp(fi->type, "dir") ? 'd' : !strcmp(fi->type, "symlink") ? 'l' : '-';
	fileinfo_permissions(fi->mode, perm + 1);
	cJSON_AddStringToObject(o, "permissions", perm);
	owner_name(sb, fi->uid, t, sizeof(t));
	cJSON_AddStringToObject(o, "owner", t);
	owner_name(sb, fi->gid, t, sizeof(t));
	cJSON_AddStringToObject(o, "group", t);
	sl_iso_time(fi->mtime_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "modifiedTime", t);
	if (!strcmp(fi->type, "symlink"))
		symlink_target(o, fi);
	else
		e2b_entry_metadata(ctx, sb, fi->path, o);
	return o;
}

static enum MHD_Result reply_entry(api_req *r, const sl_sandbox *sb, const char *path)
{
	sl_fileinfo fi;
	sl_err err = {0};
	if (sbxfs_stat(r->srv->ctx, sb, path, &fi, &err) < 0)
		return rpc_fail(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "entry", entry_json(r->srv->ctx, sb, &fi));
	return api_reply_json(r, 200, o);
}

/* A ListDir under way: its answer (text as it grows), how deep it may still go. */
struct list_walk {
	const sl_sandbox *sb;
	sl_ctx *ctx;
	api_json_list out;
	int depth;
	bool full; /* the answer reached API_JSON_LIST_MAX: the call fails */
};

static int list_into(struct list_walk *w, const char *dir, int depth, sl_err *err);

static int list_entry(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	struct list_walk *w = arg;
	if (api_json_list_add(&w->out, entry_json(w->ctx, w->sb, fi), err) < 0) {
		w->full = true;
		return -1;
	}
	if (w->depth <= 1 || strcmp(fi->type, "dir"))
		return 0;
	sl_err sub = {0};
	if (list_into(w, fi->path, w->depth - 1, &sub) < 0 && w->full) {
		*err = sub;
		return -1;
	}
	return 0; /* unreadable: skip */
}

/* Entries below DIR down to DEPTH levels, depth-first; each level holds names only. */
static int list_into(struct list_walk *w, const char *dir, int depth, sl_err *err)
{
	int saved = w->depth;
	w->depth = depth;
	int rc = sbxfs_list(w->ctx, w->sb, dir, list_entry, w, err);
	w->depth = saved;
	return rc;
}

static enum MHD_Result fs_unary(api_req *r, const sl_sandbox *sb, const char *m, const cJSON *msg)
{
	char user[64];
	sl_err err = {0};
	e2b_request_user(r, user);
	if (!strcmp(m, "Move")) {
		_cleanup_free_ char *from = e2b_path(sb, user, str_field(msg, "source"), &err);
		_cleanup_free_ char *to =
		    from ? e2b_path(sb, user, str_field(msg, "destination"), &err) : NULL;
		if (!to || sbxfs_move(r->srv->ctx, sb, from, to, &err) < 0)
			return rpc_fail(r, &err);
		return reply_entry(r, sb, to);
	}
	_cleanup_free_ char *path = e2b_path(sb, user, str_field(msg, "path"), &err);
	if (!path)
		return rpc_fail(r, &err);
	if (!strcmp(m, "Stat"))
		return reply_entry(r, sb, path);
	if (!strcmp(m, "MakeDir")) {
		sl_fileinfo fi;
		if (sbxfs_stat(r->srv->ctx, sb, path, &fi, &err) == 0)
			return rpc_fail_code(
			    r, 409, !strcmp(fi.type, "dir") ? "already_exists" : "invalid_argument",
			    "path already exists");
		if (sbxfs_mkdir(r->srv->ctx, sb, path, &err) < 0)
			return rpc_fail(r, &err);
		return reply_entry(r, sb, path);
	}
	if (!strcmp(m, "Remove")) {
		/* envd removes as os.RemoveAll does: nothing there is no error. */
		if (sbxfs_remove(r->srv->ctx, sb, path, true, &err) < 0 && err.kind != SL_NOTFOUND)
			return rpc_fail(r, &err);
		return api_reply_json(r, 200, cJSON_CreateObject());
	}
	/* ListDir */
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(msg, "depth");
	int depth = cJSON_IsNumber(d) && d->valueint > 0 ? d->valueint : 1;
	sl_fileinfo fi;
	if (sbxfs_stat_follow(r->srv->ctx, sb, path, &fi, &err) < 0)
		return rpc_fail(r, &err);
	if (strcmp(fi.type, "dir"))
		return rpc_fail_code(r, 400, "invalid_argument", "path is not a directory");
	struct list_walk w = {.sb = sb, .ctx = r->srv->ctx};
	if (list_into(&w, path, depth > 64 ? 64 : depth, &err) < 0) {
		api_json_list_free(&w.out);
		return rpc_fail(r, &err);
	}
	return api_reply_json_list(r, 200, &w.out, "{\"entries\":", "}");
}

/* WatchDir: inotify on the directory (and with recursive, every directory below it,
 * including ones made later), each opened inside the sandbox's root. Event names are
 * relative to the watched directory, as envd gives them. */
#define WATCH_DIRS_MAX 4096
#define WATCH_MASK                                                                                 \
	(IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |             \
	 IN_DELETE_SELF | IN_ONLYDIR)

typedef struct watch_dir {
	int wd;
	char *rel; /* "" for the watched directory itself */
} watch_dir;

typedef struct watch_stream {
	rpc_stream st;
	int ino;
	sl_sandbox sb;
	char *root; /* the watched directory, absolute inside the sandbox */
	bool recursive, started;
	bool include_entry; /* envd 0.6.3: each event carries the entry's info */
	bool allow_network; /* envd 0.6.4: network filesystems may be watched */
	watch_dir *dirs;
	size_t ndirs;
	int64_t last_check;
} watch_stream;

static void watch_release(rpc_stream *st)
{
	watch_stream *ws = (watch_stream *)st;
	if (ws->ino >= 0)
		close(ws->ino);
	for (size_t i = 0; i < ws->ndirs; i++)
		free(ws->dirs[i].rel);
	free(ws->dirs);
	free(ws->root);
	sandbox_free(&ws->sb);
}

static int watch_add(watch_stream *ws, api_server *s, const char *rel, sl_err *err);

/* A directory whose children are being watched, as the listing goes. */
struct watch_level {
	watch_stream *ws;
	api_server *s;
	const char *rel;
	bool failed; /* a child's watch failed (not the listing) */
};

static int watch_child(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	struct watch_level *lv = arg;
	if (strcmp(fi->type, "dir"))
		return 0;
	_cleanup_free_ char *child = NULL;
	int rc = asprintf(&child, "%s%s%s", lv->rel, *lv->rel ? "/" : "", fi->name) < 0
		     ? sl_fail(err, SL_INTERNAL, ENOMEM, "watch")
		     : watch_add(lv->ws, lv->s, child, err);
	lv->failed = rc < 0;
	return rc;
}

/* Watch ROOT/REL (and with recursive, what is below it). */
static int watch_add(watch_stream *ws, api_server *s, const char *rel, sl_err *err)
{
	if (ws->ndirs >= WATCH_DIRS_MAX)
		return sl_fail(err, SL_EXHAUSTED, 0, "more than %d directories to watch",
			       WATCH_DIRS_MAX);
	_cleanup_free_ char *path = NULL;
	if (asprintf(&path, "%s%s%s", ws->root, *rel ? "/" : "", rel) < 0)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "watch");
	int wd =
	    sbxfs_watch_dir(s->ctx, &ws->sb, path, ws->ino, WATCH_MASK, ws->allow_network, err);
	if (wd < 0)
		return -1;
	watch_dir *v = realloc(ws->dirs, (ws->ndirs + 1) * sizeof(*v));
	if (!v)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "watch");
	ws->dirs = v;
	v[ws->ndirs].wd = wd;
	v[ws->ndirs].rel = strdup(rel);
	ws->ndirs++;
	if (!ws->recursive)
		return 0;
	struct watch_level lv = {ws, s, rel, 0};
	sl_err sub = {0};
	if (sbxfs_list(s->ctx, &ws->sb, path, watch_child, &lv, &sub) < 0 && lv.failed) {
		*err = sub;
		return -1;
	}
	return 0; /* a directory gone meanwhile is not watched */
}

static const char *watch_rel(const watch_stream *ws, int wd)
{
	for (size_t i = 0; i < ws->ndirs; i++)
		if (ws->dirs[i].wd == wd)
			return ws->dirs[i].rel;
	return NULL;
}

static cJSON *fs_event(const char *kind, cJSON *body)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, kind, body);
	return o;
}

static cJSON *watch_keepalive(void)
{
	return fs_event("keepalive", cJSON_CreateObject());
}

static const char *watch_type(uint32_t mask)
{
	if (mask & IN_CREATE)
		return "EVENT_TYPE_CREATE";
	if (mask & (IN_MOVED_TO | IN_MOVED_FROM))
		return "EVENT_TYPE_RENAME";
	if (mask & IN_MODIFY)
		return "EVENT_TYPE_WRITE";
	if (mask & IN_DELETE)
		return "EVENT_TYPE_REMOVE";
	if (mask & IN_ATTRIB)
		return "EVENT_TYPE_CHMOD";
	return NULL;
}

/* The entry an event names, as Stat gives it, when it is still there (envd's is best
 * effort too: none for a remove, or a rename away). */
static void watch_entry(watch_stream *ws, api_server *s, const char *name, cJSON *f)
{
	_cleanup_free_ char *path = NULL;
	sl_fileinfo fi;
	sl_err err = {0};
	if (asprintf(&path, "%s/%s", ws->root, name) >= 0 &&
	    sbxfs_stat(s->ctx, &ws->sb, path, &fi, &err) == 0)
		cJSON_AddItemToObject(f, "entry", entry_json(s->ctx, &ws->sb, &fi));
}

/* The stream ends (end-stream, no error) when the watched directory goes away. */
static int watch_end(rpc_stream *st)
{
	stream_emit(st, 2, cJSON_CreateObject());
	st->done = true;
	return 1;
}

static int watch_next(rpc_stream *st)
{
	watch_stream *ws = (watch_stream *)st;
	if (!ws->started) {
		stream_emit(st, 0, fs_event("start", cJSON_CreateObject()));
		ws->started = true;
		return 1;
	}
	struct pollfd p = {ws->ino, POLLIN, 0};
	if (stream_wait(st, &p, 1, 1000) < 0)
		return -1;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = (p.revents & POLLIN) ? read(ws->ino, buf, sizeof(buf)) : 0;
	int got = 0;
	for (char *q = buf; n > 0 && q < buf + n;) {
		struct inotify_event *ev = (struct inotify_event *)q;
		q += sizeof(*ev) + ev->len;
		const char *rel = watch_rel(ws, ev->wd);
		if ((ev->mask & (IN_IGNORED | IN_DELETE_SELF)) && rel && !*rel)
			return watch_end(st);
		const char *type = watch_type(ev->mask);
		if (!type || !ev->len || !rel)
			continue;
		_cleanup_free_ char *name = NULL;
		if (asprintf(&name, "%s%s%s", rel, *rel ? "/" : "", ev->name) < 0)
			return -1;
		if (ws->recursive && (ev->mask & IN_ISDIR) &&
		    (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
			sl_err err = {0};
			watch_add(ws, st->srv, name, &err); /* best effort: it may be gone */
		}
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "name", name);
		cJSON_AddStringToObject(f, "type", type);
		if (ws->include_entry)
			watch_entry(ws, st->srv, name, f);
		stream_emit(st, 0, fs_event("filesystem", f));
		got = 1;
	}
	if (sl_mono_ms() - ws->last_check > 2000) {
		ws->last_check = sl_mono_ms();
		sl_sandbox now;
		sl_err err = {0};
		bool alive = sandbox_get(st->srv->ctx, ws->sb.id, &now, &err) == 0 &&
			     (now.status == SL_ST_RUNNING || now.status == SL_ST_PAUSED);
		if (err.kind == SL_OK)
			sandbox_free(&now);
		if (!alive)
			return -1;
	}
	if (!got)
		stream_keepalive(st, watch_keepalive);
	return got;
}

static enum MHD_Result fs_watch(api_req *r, const sl_sandbox *sb, const cJSON *msg)
{
	char user[64];
	sl_err err = {0};
	e2b_request_user(r, user);
	char *path = e2b_path(sb, user, str_field(msg, "path"), &err);
	if (!path)
		return stream_error(r, connect_code(err.kind), err.msg);
	watch_stream *ws = calloc(1, sizeof(*ws));
	if (!ws || sandbox_get(r->srv->ctx, sb->id, &ws->sb, &err) < 0) {
		free(ws);
		free(path);
		return err.kind ? stream_error(r, connect_code(err.kind), err.msg) : MHD_NO;
	}
	ws->st.next = watch_next;
	ws->st.release = watch_release;
	ws->root = path;
	ws->recursive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "recursive"));
	ws->include_entry = cJSON_IsTrue(field(msg, "includeEntry", "include_entry"));
	ws->allow_network = cJSON_IsTrue(field(msg, "allowNetworkMounts", "allow_network_mounts"));
	ws->last_check = sl_mono_ms();
	ws->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ws->ino < 0)
		sl_sysfail(&err, "inotify");
	else
		watch_add(ws, r->srv, "", &err);
	if (err.kind) {
		rpc_stream_free(ws);
		return stream_error(r, connect_code(err.kind), err.msg);
	}
	return stream_start(r, &ws->st);
}

/* ---- dispatch ---- */

enum MHD_Result e2b_rpc(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	bool streaming;
	sl_err err = {0};
	if (e2b_plane_sandbox(r, false, &sb, &ret) < 0)
		return ret;
	cJSON *msg = rpc_message(r, &streaming, &err);
	const char *m = r->param[0];
	bool proc = !strncmp(r->url, "/process.", 9);
	if (!msg)
		ret = streaming ? stream_error(r, "invalid_argument", err.msg) : rpc_fail(r, &err);
	else if (proc && !strcmp(m, "Start"))
		ret = process_start(r, &sb, msg);
	else if (proc && !strcmp(m, "Connect"))
		ret = process_connect(r, &sb, msg);
	else if (proc && !strcmp(m, "List"))
		ret = process_list(r, &sb);
	else if (proc && !strcmp(m, "SendSignal"))
		ret = process_signal(r, &sb, msg);
	else if (proc && !strcmp(m, "SendInput"))
		ret = process_input(r, &sb, msg, false);
	else if (proc && !strcmp(m, "CloseStdin"))
		ret = process_input(r, &sb, msg, true);
	else if (proc && !strcmp(m, "Update"))
		ret = process_update(r, &sb, msg);
	else if (!proc && !strcmp(m, "WatchDir"))
		ret = fs_watch(r, &sb, msg);
	else if (!proc && (!strcmp(m, "Stat") || !strcmp(m, "ListDir") || !strcmp(m, "MakeDir") ||
			   !strcmp(m, "Move") || !strcmp(m, "Remove")))
		ret = fs_unary(r, &sb, m, msg);
	else if (streaming)
		ret = stream_error(r, "unimplemented", "not served by sandlot's envd");
	else
		ret = rpc_fail_code(r, 501, "unimplemented", "not served by sandlot's envd");
	cJSON_Delete(msg);
	sandbox_free(&sb);
	return ret;
}

/* attach.c — GET .../attach: a WebSocket (RFC 6455) onto a running execution: binary
 * frames carry stdin in and output out (the pty, or the stdout/stderr logs), a text
 * frame {"type":"resize"} resizes the pty. Also keeps the pty masters it needs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "clock.h"
#include "state.h"
#include "http.h"

#define WS_GUID	       "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_MAX_MESSAGE (1u << 20)
#define WS_POLL_MS     250

/* ---- the pty table ---- */

void api_pty_add(api_server *s, const char *sandbox_id, const char *exec_id, int master)
{
	api_pty *p = calloc(1, sizeof(*p));
	if (!p) {
		close(master);
		return;
	}
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", sandbox_id);
	snprintf(p->exec_id, sizeof(p->exec_id), "%s", exec_id);
	p->master = master;
	pthread_mutex_lock(&s->lock);
	p->next = s->ptys;
	s->ptys = p;
	pthread_mutex_unlock(&s->lock);
}

/* 1: taken (*master set), 0: no pty for it, -1: someone else is attached. */
static int pty_take(api_server *s, const char *sandbox_id, const char *exec_id, int *master)
{
	int r = 0;
	pthread_mutex_lock(&s->lock);
	for (api_pty *p = s->ptys; p; p = p->next) {
		if (strcmp(p->sandbox_id, sandbox_id) || strcmp(p->exec_id, exec_id))
			continue;
		if (p->attached) {
			r = -1;
		} else {
			p->attached = true;
			*master = p->master;
			r = 1;
		}
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void pty_release(api_server *s, int master)
{
	pthread_mutex_lock(&s->lock);
	for (api_pty *p = s->ptys; p; p = p->next)
		if (p->master == master)
			p->attached = false;
	pthread_mutex_unlock(&s->lock);
}

void api_pty_sweep(api_server *s, bool all)
{
	pthread_mutex_lock(&s->lock);
	for (api_pty **pp = &s->ptys; *pp;) {
		api_pty *p = *pp;
		bool drop = all;
		if (!drop && !p->attached) {
			sl_exec e;
			sl_err err = {0};
			if (exec_get(s->ctx, p->sandbox_id, p->exec_id, &e, &err) < 0) {
				drop = err.kind == SL_NOTFOUND;
			} else {
				drop = e.status != SL_EXEC_RUNNING;
				exec_free(&e);
			}
		}
		if (drop) {
			close(p->master);
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- frames ---- */

typedef struct ws_session {
	api_server *srv;
	char sandbox_id[32], exec_id[32];
	int master; /* pty master (pty mode), else -1 */
	int logs[2];
	uint64_t off[2];
	sl_dirwatch ino; /* on the execution's directory (no pty); fd -1: none */
	int sock;
	unsigned char *in;
	size_t in_len;
	unsigned char *msg; /* a fragmented message being assembled */
	size_t msg_len;
	int msg_op;
	bool closing;
} ws_session;

static int send_all(int sock, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = send(sock, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = {sock, POLLOUT, 0};
			if (poll(&pf, 1, 10000) <= 0)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		p += w, n -= w;
	}
	return 0;
}

int api_ws_send(int sock, int opcode, const void *data, size_t len)
{
	unsigned char h[10];
	size_t hl = 2;
	h[0] = 0x80 | opcode;
	if (len < 126) {
		h[1] = len;
	} else if (len < 65536) {
		h[1] = 126;
		h[2] = len >> 8, h[3] = len;
		hl = 4;
	} else {
		h[1] = 127;
		for (int i = 0; i < 8; i++)
			h[2 + i] = (uint64_t)len >> (56 - 8 * i);
		hl = 10;
	}
	if (send_all(sock, h, hl) < 0 || send_all(sock, data, len) < 0)
		return -1;
	return 0;
}

static int ws_send(ws_session *ws, int opcode, const void *data, size_t len)
{
	return api_ws_send(ws->sock, opcode, data, len);
}

static void ws_close(ws_session *ws, int code, const char *reason)
{
	if (ws->closing)
		return;
	unsigned char b[125];
	size_t rl = strnlen(reason, sizeof(b) - 2);
	b[0] = code >> 8, b[1] = code;
	memcpy(b + 2, reason, rl);
	ws_send(ws, 0x8, b, rl + 2);
	ws->closing = true;
}

/* Input for the command: into the pty, or the execution's stdin. */
static int deliver_input(ws_session *ws, const unsigned char *p, size_t n)
{
	if (ws->master >= 0) {
		while (n) {
			ssize_t w = write(ws->master, p, n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno == EAGAIN) {
				struct pollfd pf = {ws->master, POLLOUT, 0};
				if (poll(&pf, 1, 5000) <= 0)
					return -1;
				continue;
			}
			if (w <= 0)
				return -1;
			p += w, n -= w;
		}
		return 0;
	}
	sl_err err = {0};
	if (exec_write_stdin(ws->srv->ctx, ws->sandbox_id, ws->exec_id, p, n, &err) < 0) {
		ws_close(ws, 1008, err.msg);
		return -1;
	}
	return 0;
}

static void control_message(ws_session *ws, const unsigned char *p, size_t n)
{
	sl_err err = {0};
	cJSON *o = api_json_parse((const char *)p, n, &err);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (cJSON_IsString(type) && !strcmp(type->valuestring, "resize") && ws->master >= 0) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cols");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rows");
		if (cJSON_IsNumber(c) && cJSON_IsNumber(r) && c->valuedouble >= 1 &&
		    c->valuedouble <= 1000 && r->valuedouble >= 1 && r->valuedouble <= 1000)
			exec_resize(ws->master, (unsigned short)r->valuedouble,
				    (unsigned short)c->valuedouble, &err);
	} else if (cJSON_IsString(type) && !strcmp(type->valuestring, "eof") && ws->master < 0) {
		exec_close_stdin(ws->srv->ctx, ws->sandbox_id, ws->exec_id, &err);
	}
	cJSON_Delete(o);
}

static int message(ws_session *ws, int op, const unsigned char *p, size_t n)
{
	if (op == 0x2)
		return deliver_input(ws, p, n);
	if (op == 0x1)
		control_message(ws, p, n);
	return 0;
}

ssize_t api_ws_frame(unsigned char *in, size_t avail, uint64_t max, int *op, bool *fin,
		     unsigned char **payload, uint64_t *plen, int *bad)
{
	size_t hl = 2;
	if (avail < 2)
		return 0;
	bool masked = in[1] & 0x80;
	uint64_t len = in[1] & 0x7f;
	*fin = in[0] & 0x80;
	*op = in[0] & 0x0f;
	if (len == 126) {
		if (avail < 4)
			return 0;
		len = (uint64_t)in[2] << 8 | in[3];
		hl = 4;
	} else if (len == 127) {
		if (avail < 10)
			return 0;
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | in[2 + i];
		hl = 10;
	}
	if (!masked || len > max || (in[0] & 0x70)) {
		*bad = masked ? 1009 : 1002;
		return -1;
	}
	if (avail < hl + 4 + len)
		return 0;
	unsigned char *mask = in + hl, *pl = in + hl + 4;
	for (uint64_t i = 0; i < len; i++)
		pl[i] ^= mask[i & 3];
	*payload = pl;
	*plen = len;
	return (ssize_t)(hl + 4 + len);
}

/* Parse every whole frame in ws->in. Returns -1 when the session should end. */
static int parse_frames(ws_session *ws)
{
	size_t at = 0;
	int r = 0;
	while (r == 0 && ws->in_len - at >= 2) {
		int op, bad;
		bool fin;
		unsigned char *pl;
		uint64_t len;
		ssize_t used = api_ws_frame(ws->in + at, ws->in_len - at, WS_MAX_MESSAGE, &op, &fin,
					    &pl, &len, &bad);
		if (used < 0) {
			ws_close(ws, bad, bad == 1009 ? "frame too large" : "unmasked frame");
			return -1;
		}
		if (used == 0)
			break;
		at += used;
		if (op == 0x8) {
			ws_close(ws, len >= 2 ? (pl[0] << 8 | pl[1]) : 1000, "");
			return -1;
		}
		if (op == 0x9) {
			ws_send(ws, 0xA, pl, len);
			continue;
		}
		if (op == 0xA)
			continue;
		if (op != 0x0 && op != 0x1 && op != 0x2) {
			ws_close(ws, 1002, "unknown opcode");
			return -1;
		}
		if (op != 0x0 && fin && !ws->msg_len) {
			r = message(ws, op, pl, len);
			continue;
		}
		/* Fragments: assemble (bounded) until FIN. */
		if (op != 0x0)
			ws->msg_op = op;
		if (ws->msg_len + len > WS_MAX_MESSAGE) {
			ws_close(ws, 1009, "message too large");
			return -1;
		}
		unsigned char *m = realloc(ws->msg, ws->msg_len + len + 1);
		if (!m)
			return -1;
		ws->msg = m;
		memcpy(ws->msg + ws->msg_len, pl, len);
		ws->msg_len += len;
		if (fin) {
			r = message(ws, ws->msg_op, ws->msg, ws->msg_len);
			ws->msg_len = 0;
		}
	}
	memmove(ws->in, ws->in + at, ws->in_len - at);
	ws->in_len -= at;
	return r;
}

/* ---- the session ---- */

/* Send whatever the logs gained since last time. */
static int pump_logs(ws_session *ws)
{
	char buf[32768];
	for (int i = 0; i < 2; i++) {
		for (;;) {
			ssize_t n = pread(ws->logs[i], buf, sizeof(buf), (off_t)ws->off[i]);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			ws->off[i] += n;
			if (ws_send(ws, 0x2, buf, n) < 0)
				return -1;
		}
	}
	return 0;
}

/* Send what the pty has; -1 when it is gone (every process on it ended). */
static int pump_pty(ws_session *ws)
{
	char buf[32768];
	for (;;) {
		ssize_t n = read(ws->master, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		if (ws_send(ws, 0x2, buf, n) < 0)
			return -1;
	}
}

static bool exec_ended(ws_session *ws)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_get(ws->srv->ctx, ws->sandbox_id, ws->exec_id, &e, &err) < 0)
		return true;
	bool ended = e.status != SL_EXEC_RUNNING;
	exec_free(&e);
	return ended;
}

static void session_loop(ws_session *ws)
{
	int64_t next_check = 0;
	size_t cap = WS_MAX_MESSAGE + 16;
	for (;;) {
		if (atomic_load(&ws->srv->stopping)) {
			ws_close(ws, 1001, "the server is stopping");
			return;
		}
		if (parse_frames(ws) < 0 || ws->closing)
			return;
		bool ended = false;
		if (sl_mono_ms() >= next_check) {
			ended = exec_ended(ws);
			next_check = sl_mono_ms() + 500;
		}
		if (ws->master >= 0) {
			if (pump_pty(ws) < 0)
				ended = true;
		} else if (pump_logs(ws) < 0) {
			return;
		}
		if (ended) {
			if (ws->master < 0)
				pump_logs(ws);
			ws_close(ws, 1000, "the command ended");
			return;
		}
		struct pollfd p[2] = {{ws->sock, POLLIN | POLLRDHUP, 0},
				      {ws->master >= 0 ? ws->master : ws->ino.fd, POLLIN, 0}};
		int n = poll(p, p[1].fd >= 0 ? 2 : 1,
			     ws->master < 0 && ws->ino.fd < 0 ? 50 : WS_POLL_MS);
		if (n < 0 && errno != EINTR)
			return;
		if (n > 0 && ws->master < 0 && (p[1].revents & POLLIN))
			dirwatch_drain(&ws->ino);
		if (n > 0 && (p[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
			if (ws->in_len == cap)
				return;
			ssize_t got = recv(ws->sock, ws->in + ws->in_len, cap - ws->in_len, 0);
			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
				return; /* the client went away */
			if (got > 0)
				ws->in_len += got;
		}
	}
}

static void session_free(api_req *r)
{
	ws_session *ws = r->upload;
	if (!ws)
		return;
	for (int i = 0; i < 2; i++)
		if (ws->logs[i] >= 0)
			close(ws->logs[i]);
	exec_watch_end(ws->srv->ctx, &ws->ino);
	if (ws->master >= 0)
		pty_release(ws->srv, ws->master);
	free(ws->in);
	free(ws->msg);
	free(ws);
	r->upload = NULL;
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
			size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	api_req *r = con_cls;
	ws_session *ws = r->upload;
	ws->sock = sock;
	ws->in = malloc(WS_MAX_MESSAGE + 16);
	if (ws->in && extra_len <= WS_MAX_MESSAGE) {
		memcpy(ws->in, extra, extra_len);
		ws->in_len = extra_len;
		if (ws->master >= 0)
			fcntl(ws->master, F_SETFL, fcntl(ws->master, F_GETFL) | O_NONBLOCK);
		session_loop(ws);
	}
	/* The request (and this session with it) is freed when MHD closes the connection. */
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

static bool header_has(api_req *r, const char *name, const char *token)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
	return v && strcasestr(v, token);
}

bool api_ws_requested(api_req *r)
{
	return header_has(r, "Upgrade", "websocket");
}

int api_ws_check(api_req *r, sl_err *err)
{
	const char *key =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	const char *ver =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Version");
	if (!header_has(r, "Upgrade", "websocket") || !header_has(r, "Connection", "upgrade") ||
	    !key || strlen(key) != 24 || !ver || strcmp(ver, "13"))
		return sl_fail(err, SL_INVALID, 0,
			       "send Connection: Upgrade, Upgrade: websocket, "
			       "Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key");
	return 0;
}

enum MHD_Result api_ws_accept(api_req *r, MHD_UpgradeHandler handler)
{
	const char *key =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	struct sha1_ctx sha;
	uint8_t digest[SHA1_DIGEST_SIZE];
	char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
	sha1_init(&sha);
	sha1_update(&sha, strlen(key), (const uint8_t *)key);
	sha1_update(&sha, strlen(WS_GUID), (const uint8_t *)WS_GUID);
	sha1_digest(&sha, SHA1_DIGEST_SIZE, digest);
	base64_encode_raw(accept, SHA1_DIGEST_SIZE, digest);
	accept[sizeof(accept) - 1] = '\0';
	struct MHD_Response *resp = MHD_create_response_for_upgrade(handler, NULL);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Upgrade", "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	api_conn_long_lived(r, true);
	return api_reply(r, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

enum MHD_Result api_exec_attach(api_req *r)
{
	sl_err err = {0};
	if (api_ws_check(r, &err) < 0)
		return api_fail(r, SL_INVALID, "attach is a WebSocket: %s", err.msg);
	sl_sandbox sb;
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	ws_session *ws = calloc(1, sizeof(*ws));
	if (!ws) {
		sandbox_free(&sb);
		return api_fail(r, SL_INTERNAL, "out of memory");
	}
	ws->srv = r->srv;
	ws->master = ws->ino.fd = -1;
	ws->logs[0] = ws->logs[1] = -1;
	snprintf(ws->sandbox_id, sizeof(ws->sandbox_id), "%s", sb.id);
	snprintf(ws->exec_id, sizeof(ws->exec_id), "%s", r->param[1]);
	sandbox_free(&sb);
	r->upload = ws;
	r->upload_free = session_free;
	sl_exec e;
	if (exec_get(r->srv->ctx, ws->sandbox_id, ws->exec_id, &e, &err) < 0)
		return api_reply_error(r, &err);
	bool running = e.status == SL_EXEC_RUNNING;
	exec_free(&e);
	if (!running)
		return api_fail(r, SL_CONFLICT, "execution %s has ended; read its output instead",
				ws->exec_id);
	int t = pty_take(r->srv, ws->sandbox_id, ws->exec_id, &ws->master);
	if (t < 0)
		return api_fail(r, SL_CONFLICT, "execution %s already has a client attached",
				ws->exec_id);
	if (t == 0) {
		/* No pty: stream the logs from their start, stdin through the FIFO. */
		for (int i = 0; i < 2; i++)
			if (exec_open_log(r->srv->ctx, ws->sandbox_id, ws->exec_id,
					  i ? "stderr" : "stdout", &ws->logs[i], &err) < 0)
				return api_reply_error(r, &err);
		exec_watch(r->srv->ctx, ws->sandbox_id, ws->exec_id,
			   IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO, &ws->ino);
	}
	return api_ws_accept(r, on_upgraded);
}

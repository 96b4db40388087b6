/* daytona_events.c — the SDK's socket.io channel (/api/socket.io/, Engine.IO v4 over a
 * WebSocket): open, CONNECT with the API key as token, heartbeats. No events are pushed
 * (the SDK polls GET /sandbox/{id} every second while it waits), but the channel must
 * connect: when it fails, the SDK's reconnect timers (up to 10 tries, backing off to
 * 30 s) keep a Node process alive for about three minutes after the user's code ends. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "daytona.h"

#define PING_MS	    25000
#define CONNECT_MS  10000
#define EIO_MAX_MSG (1u << 20)
/* Before its CONNECT carries the key, a client gets 4 KiB (the CONNECT is far smaller)
 * and CONNECT_MS (or --conn-timeout when shorter): an unauthenticated upgrade costs its
 * connection's place under the caps (api/conns.c) for that long, and no more memory. */
#define EIO_PREAUTH_MSG 4096

typedef struct eio {
	api_server *srv;
	bool keyed; /* the token must be the API key (the TCP listener) */
	int sock;
	char sid[32];
	bool connected, done;
	unsigned char *in;
	size_t len, cap;
} eio;

static void send_text(eio *e, const char *s)
{
	if (api_ws_send(e->sock, 0x1, s, strlen(s)) < 0)
		e->done = true;
}

/* One Engine.IO packet (a text message). */
static void packet(eio *e, const char *p, size_t n)
{
	char buf[256];
	if (n >= 1 && p[0] == '2') { /* ping from the client: pong */
		send_text(e, "3");
	} else if (n >= 2 && !memcmp(p, "41", 2)) { /* socket.io DISCONNECT */
		e->done = true;
	} else if (n >= 2 && !memcmp(p, "40", 2) && !e->connected) { /* socket.io CONNECT */
		sl_err err = {0};
		cJSON *auth = n > 2 ? api_json_parse(p + 2, n - 2, &err) : NULL;
		const cJSON *tok = cJSON_GetObjectItemCaseSensitive(auth, "token");
		char owner[SL_OWNER_LEN];
		bool ok = !e->keyed ||
			  (cJSON_IsString(tok) && api_key_identify(&e->srv->ctx->cfg, e->srv->key,
								   tok->valuestring, owner) == 0);
		cJSON_Delete(auth);
		if (!ok) {
			send_text(e, "44{\"message\":\"invalid token: use sandlot's API key\"}");
			e->done = true;
			return;
		}
		snprintf(buf, sizeof(buf), "40{\"sid\":\"%s\"}", e->sid);
		send_text(e, buf);
		e->connected = true;
	}
	/* "3" (pong) and events ("42[...]") need no answer. */
}

/* Handle every whole frame in e->in. */
static void frames(eio *e)
{
	size_t at = 0;
	while (!e->done) {
		int op, bad;
		bool fin;
		unsigned char *pl;
		uint64_t n;
		ssize_t used = api_ws_frame(e->in + at, e->len - at,
					    e->connected ? EIO_MAX_MSG : EIO_PREAUTH_MSG, &op, &fin,
					    &pl, &n, &bad);
		if (used == 0)
			break;
		if (used < 0 || op == 0x8) {
			unsigned char c[2] = {(used < 0 ? bad : 1000) >> 8,
					      (used < 0 ? bad : 1000) & 0xff};
			api_ws_send(e->sock, 0x8, c, 2);
			e->done = true;
			break;
		}
		at += used;
		if (op == 0x9)
			api_ws_send(e->sock, 0xA, pl, n);
		else if (op == 0x1 && fin) /* the client never fragments its short packets */
			packet(e, (const char *)pl, n);
	}
	memmove(e->in, e->in + at, e->len - at);
	e->len -= at;
}

/* Connected (the key checked): room for the largest message. */
static int grow(eio *e)
{
	unsigned char *b = realloc(e->in, EIO_MAX_MSG + 16);
	if (!b)
		return -1;
	e->in = b;
	e->cap = EIO_MAX_MSG + 16;
	return 0;
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
			size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	api_req *r = con_cls;
	eio e = {.srv = r->srv, .keyed = r->keyed, .sock = sock, .cap = EIO_PREAUTH_MSG + 16};
	e.in = malloc(e.cap);
	sl_new_id("", e.sid, sizeof(e.sid));
	unsigned t = r->srv->opt.conn_timeout;
	int64_t connect_ms = t && t * 1000ll < CONNECT_MS ? t * 1000ll : CONNECT_MS;
	if (e.in && extra_len <= e.cap) {
		memcpy(e.in, extra, extra_len);
		e.len = extra_len;
		char open[200];
		snprintf(
		    open, sizeof(open),
		    "0{\"sid\":\"%s\",\"upgrades\":[],\"pingInterval\":%d,\"pingTimeout\":20000,"
		    "\"maxPayload\":%u}",
		    e.sid, PING_MS, EIO_MAX_MSG);
		send_text(&e, open);
		int64_t start = sl_mono_ms(), next_ping = start + PING_MS;
		while (!e.done && !atomic_load(&r->srv->stopping)) {
			frames(&e);
			if (e.done || (!e.connected && sl_mono_ms() - start > connect_ms))
				break;
			if (e.connected && e.cap < EIO_MAX_MSG + 16 && grow(&e) < 0)
				break;
			if (sl_mono_ms() >= next_ping) {
				send_text(&e, "2");
				next_ping = sl_mono_ms() + PING_MS;
			}
			struct pollfd p = {sock, POLLIN | POLLRDHUP, 0};
			int n = poll(&p, 1, 1000);
			if (n < 0 && errno != EINTR)
				break;
			if (n <= 0)
				continue;
			if (e.len == e.cap)
				break;
			ssize_t got = recv(sock, e.in + e.len, e.cap - e.len, 0);
			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
				break;
			if (got > 0)
				e.len += got;
		}
	}
	free(e.in);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

enum MHD_Result dt_events(api_req *r)
{
	sl_err err = {0};
	if (api_ws_check(r, &err) < 0)
		return dt_fail(r, SL_INVALID, NULL,
			       "socket.io here speaks Engine.IO v4 over WebSocket only: %s",
			       err.msg);
	return api_ws_accept(r, on_upgraded);
}

/* ports.c — getHost(port): a loopback TCP relay per (sandbox, port) into the sandbox's
 * own network namespace (so it works with the sandbox's network off), and the preview
 * proxy that routes http://{port}-{id}.localhost:{previewPort}/ by the Host header,
 * WebSocket upgrades included (after the first request it only relays bytes). Both
 * listen on loopback only and need no API key, but a connection gets in only from root
 * or a `--allow-uid` user (runtime/peer.c names the client socket's owner), to a port
 * made public, or (preview) with the sandbox's preview token. An HTTP request goes in
 * with the sandbox's request host for its Host, when it has one (E2B's maskRequestHost). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "connect.h"
#include "crash.h"
#include "launch.h"
#include "log.h"
#include "peer.h"
#include "state.h"
#include "compat/e2b.h"
#include "http.h"
#include "ports_parse.h"

#define HEAD_MAX 16384

struct api_relay {
	struct api_relay *next;
	api_server *srv;
	char sandbox_id[32];
	uint16_t port, host_port;
	int fd;
	bool closed;
};

/* Copy both ways until both sides are done. */
static void splice_both(int a, int b)
{
	char buf[65536];
	bool a_open = true, b_open = true;
	while (a_open || b_open) {
		struct pollfd p[2] = { { a, a_open ? POLLIN : 0, 0 }, { b, b_open ? POLLIN : 0, 0 } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int from = i ? b : a, to = i ? a : b;
			ssize_t n = read(from, buf, sizeof(buf));
			if (n <= 0) {
				shutdown(to, SHUT_WR);
				if (i)
					b_open = false;
				else
					a_open = false;
				continue;
			}
			for (ssize_t off = 0; off < n;) {
				ssize_t w = send(to, buf + off, n - off, MSG_NOSIGNAL);
				if (w <= 0)
					return;
				off += w;
			}
		}
	}
}

struct conn {
	api_server *srv;
	int fd;
	char id[32];
	uint16_t port;
	api_client who; /* its uid (runtime/peer.c), found when it was accepted */
	api_conn *place; /* in srv->port_caps */
};

/* Is the client root or a --allow-uid user? Unknown owners are not. */
static bool peer_allowed(const struct conn *c)
{
	return c->who.by_uid && peer_uid_allowed(&c->srv->opt.allow_uids, c->who.uid);
}

static void conn_end(struct conn *c)
{
	api_caps_drop(&c->srv->port_caps, c->place);
	close(c->fd);
	free(c);
}

/* A request head read from FD into HEAD (HEAD_MAX + 1 bytes; *LEN of them read, NUL
 * after): where its blank line starts, or NULL when it did not come whole within 10 s (or
 * --conn-timeout when shorter), however it trickled. */
static char *read_head(api_server *s, int fd, char *head, size_t *len)
{
	char *eoh = NULL;
	unsigned limit_s =
	    s->opt.conn_timeout && s->opt.conn_timeout < 10 ? s->opt.conn_timeout : 10;
	int64_t deadline = sl_mono_ms() + limit_s * 1000ll;
	*len = 0;
	head[0] = '\0';
	while (!eoh && *len < HEAD_MAX) {
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = deadline - sl_mono_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = read(fd, head + *len, HEAD_MAX - *len);
		if (n <= 0)
			break;
		*len += n;
		head[*len] = '\0';
		eoh = strstr(head, "\r\n\r\n");
	}
	return eoh;
}

static int send_all(int fd, const char *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Does the client's first data look like an HTTP/1 request line ("GET ", "POST ")? */
static bool speaks_http(int fd)
{
	char peek[8];
	ssize_t n = recv(fd, peek, sizeof(peek), MSG_PEEK);
	ssize_t i = 0;
	while (i < n && peek[i] >= 'A' && peek[i] <= 'Z')
		i++;
	return i >= 3 && i < n && peek[i] == ' ';
}

/* The declared body length of a request head (0 when none), or -1 when it is chunked. */
static long long head_body_length(const char *head)
{
	const char *te = strcasestr(head, "\r\nTransfer-Encoding:");
	if (te)
		return -1;
	const char *cl = strcasestr(head, "\r\nContent-Length:");
	return cl ? strtoll(cl + 17, NULL, 10) : 0;
}

/* The rest of one relayed HTTP request: BODY bytes more of the client's, and the server's
 * answer. The client's next request (a reused connection: a server may ignore our
 * "Connection: close") ends the connection instead of passing unchecked; the browser
 * sends it again on a new one, through relay_first_head. */
static void relay_one_request(int client, int in, long long body)
{
	char buf[65536];
	bool client_open = true;
	for (;;) {
		struct pollfd p[2] = {{client, client_open ? POLLIN : 0, 0}, {in, POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(in, buf, sizeof(buf));
			if (n <= 0 || send_all(client, buf, n) < 0)
				return;
		}
		if (!client_open || !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (body <= 0)
			return;
		ssize_t n = read(client, buf, body < (long long)sizeof(buf) ? (size_t)body : sizeof(buf));
		if (n <= 0) {
			client_open = false;
			shutdown(in, SHUT_WR);
			continue;
		}
		body -= n;
		if (send_all(in, buf, n) < 0)
			return;
	}
}

/* Cookies ignore ports: a browser sends a relayed port on 127.0.0.1 or sandlot.localhost
 * the cookies of every other port of that host, the dashboard's among them. So what a
 * client sends first is looked at, whoever speaks first (what the server sends before is
 * passed on): an HTTP/1 request head goes through the preview proxy's parser, which cuts
 * sandlot's cookies out and asks for "Connection: close", and the connection then carries
 * that one request (relay_one_request); a head that does not parse ends the connection.
 * Any other protocol, a WebSocket after its upgrade, or a chunked upload is relayed as
 * it is. The head goes in with the sandbox's request host (MASK, "" none) for its Host,
 * made for PORT. 0: relay the rest as it is; 1: done; -1: the connection ends. */
static int relay_first_head(api_server *s, int client, int in, const char *mask, unsigned port)
{
	char buf[16384];
	for (;;) {
		struct pollfd p[2] = {{client, POLLIN, 0}, {in, POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			break;
		ssize_t n = read(in, buf, sizeof(buf));
		if (n <= 0 || send_all(client, buf, n) < 0)
			return -1;
	}
	if (!speaks_http(client))
		return 0;
	_cleanup_free_ char *head = malloc(HEAD_MAX + 1);
	size_t len = 0;
	if (!head)
		return -1;
	char *eoh = read_head(s, client, head, &len);
	preview_req pr = {0};
	/* A head too long, too slow or malformed is not passed on whole: it may carry a
	 * cookie (a sandbox's page can set cookies on this host, and pad the head with them). */
	if (!eoh || preview_head_parse(head, eoh + 4 - head, &pr) < 0 ||
	    preview_head_set_host(&pr, mask, port) < 0) {
		preview_req_free(&pr);
		return -1;
	}
	size_t extra = head + len - eoh - 4;
	long long body = head_body_length(pr.head);
	int r = send_all(in, pr.head, pr.head_len) < 0 || send_all(in, eoh + 4, extra) < 0 ? -1 : 0;
	if (r == 0 && !pr.upgrade && body >= 0) {
		relay_one_request(client, in, body - (long long)extra);
		r = 1;
	}
	preview_req_free(&pr);
	return r;
}

static void *relay_conn(void *arg)
{
	struct conn *c = arg;
	sl_sandbox sb;
	sl_err err = { 0 };
	int in = -1;
	char mask[sizeof(sb.request_host)] = "";
	/* Anyone else is closed on at once: nothing reaches the sandbox. */
	if (sandbox_get(c->srv->ctx, c->id, &sb, &err) == 0) {
		if (sandbox_port_public(&sb, c->port) || peer_allowed(c))
			in = sandbox_connect_port(&sb, c->port);
		memcpy(mask, sb.request_host, sizeof(mask));
		sandbox_free(&sb);
	}
	if (in >= 0) {
		if (relay_first_head(c->srv, c->fd, in, mask, c->port) == 0)
			splice_both(c->fd, in);
		close(in);
	}
	conn_end(c);
	return NULL;
}

/* A thread for the connection FD, within the caps per uid and in all of the relays and
 * the preview proxy together (over one, FD is closed at once; PLAIN: with a 429). */
static void spawn_conn(api_server *s, int fd, const char *id, uint16_t port, bool plain,
		       void *(*fn)(void *))
{
	struct conn *c = calloc(1, sizeof(*c));
	pthread_t t;
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->port = port;
	snprintf(c->id, sizeof(c->id), "%s", id ? id : "");
	api_client_of(fd, &c->who);
	bool client_cap;
	c->place = api_caps_take(&s->port_caps, &c->who, fd, &client_cap);
	if (!c->place) {
		api_caps_refuse(&s->port_caps, fd, &c->who, client_cap, plain);
		free(c);
		return;
	}
	if (pthread_create(&t, NULL, fn, c) != 0) {
		conn_end(c);
		return;
	}
	pthread_detach(t);
}

static void *relay_accept(void *arg)
{
	struct api_relay *r = arg;
	api_server *s = r->srv;
	for (;;) {
		int fd = accept4(r->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* shut down by api_ports_sweep */
		}
		spawn_conn(s, fd, r->sandbox_id, r->port, false, relay_conn);
		sl_delay_point("relay-accepted"); /* test_relay_listener_not_reused */
	}
	/* This thread closes the listener, not the sweep: closed under a thread still in (or
	 * about to call) accept4, its number could be reused by any open meanwhile, and this
	 * loop would then accept on somebody else's socket. */
	pthread_mutex_lock(&s->lock);
	close(r->fd);
	r->fd = -1;
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A loopback listener on a kernel-chosen (or given) port. */
static int loopback_listener(uint16_t want, uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(want),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

void api_preview_url(api_server *s, const char *id, unsigned port, char *buf, size_t len)
{
	snprintf(buf, len, "http://%u-%s.localhost:%u/", port, id, s->preview_port);
}

enum MHD_Result api_ports_get(api_req *r)
{
	sl_err err = { 0 };
	_cleanup_sandbox_ sl_sandbox sb = {0};
	char *end;
	unsigned long port = strtoul(r->param[1], &end, 10);
	if (*end || port < 1 || port > 65535)
		return api_fail(r, SL_INVALID, "port: \"%s\" is not a port number (1-65535)",
				r->param[1]);
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	bool running = sb.status == SL_ST_RUNNING, public_port = sandbox_port_public(&sb, port);
	char token[65];
	int tr = sandbox_preview_token(r->srv->ctx, &sb, token, &err);
	if (tr < 0)
		return api_reply_error(r, &err);
	if (!running)
		return api_fail(r, SL_CONFLICT, "sandbox %s is not running; start it first", sb.id);
	api_server *s = r->srv;
	pthread_mutex_lock(&s->lock);
	struct api_relay *rel = s->relays;
	while (rel && (rel->closed || rel->port != port || strcmp(rel->sandbox_id, sb.id)))
		rel = rel->next;
	if (!rel) {
		rel = calloc(1, sizeof(*rel));
		uint16_t hp = 0;
		int fd = rel ? loopback_listener(0, &hp) : -1;
		pthread_t t;
		if (fd >= 0) {
			rel->srv = s;
			rel->fd = fd;
			rel->port = port;
			rel->host_port = hp;
			snprintf(rel->sandbox_id, sizeof(rel->sandbox_id), "%s", sb.id);
			if (pthread_create(&t, NULL, relay_accept, rel) == 0) {
				pthread_detach(t);
				rel->next = s->relays;
				s->relays = rel;
			} else {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0) {
			free(rel);
			rel = NULL;
		}
	}
	uint16_t hp = rel ? rel->host_port : 0;
	pthread_mutex_unlock(&s->lock);
	if (!hp)
		return api_fail(r, SL_INTERNAL, "cannot open a loopback relay for port %lu", port);
	cJSON *o = cJSON_CreateObject();
	char buf[160];
	snprintf(buf, sizeof(buf), "127.0.0.1:%u", hp);
	cJSON_AddStringToObject(o, "host", buf);
	api_preview_url(s, sb.id, port, buf, sizeof(buf));
	cJSON_AddStringToObject(o, "url", buf);
	cJSON_AddNumberToObject(o, "port", (double)port);
	cJSON_AddStringToObject(o, "token", token);
	cJSON_AddBoolToObject(o, "public", public_port);
	return api_reply_json(r, 200, o);
}

/* Close the relays of sandboxes that are no longer running (called every second). */
/* Free the relays whose accept thread has left (it closes the listener and sets fd -1
 * under the lock, its last touch of the relay). Under s->lock. How many are left. */
static size_t relays_collect(api_server *s)
{
	size_t left = 0;
	for (struct api_relay **p = &s->relays; *p;) {
		struct api_relay *r = *p;
		if (r->closed && r->fd < 0) {
			*p = r->next;
			free(r);
			continue;
		}
		left++;
		p = &r->next;
	}
	return left;
}

void api_ports_sweep(api_server *s, bool all)
{
	pthread_mutex_lock(&s->lock);
	relays_collect(s);
	for (struct api_relay *r = s->relays; r; r = r->next) {
		if (r->closed)
			continue;
		sl_sandbox sb;
		sl_err err = { 0 };
		bool running = !all && sandbox_get(s->ctx, r->sandbox_id, &sb, &err) == 0 &&
			       sb.status == SL_ST_RUNNING;
		if (!all && err.kind == SL_OK)
			sandbox_free(&sb);
		if (!running) {
			/* Wakes its accept thread, which closes it (relay_accept). */
			shutdown(r->fd, SHUT_RDWR);
			r->closed = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void api_ports_stop(api_server *s)
{
	api_ports_sweep(s, true);
	/* Their accept threads (detached) leave at once; wait for that, 2 s at most. */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&s->lock);
		size_t left = relays_collect(s);
		pthread_mutex_unlock(&s->lock);
		if (!left)
			break;
		usleep(10000);
	}
	/* A relayed connection still open (its sandbox lives on past the daemon) keeps its
	 * place: the caps are freed only when none is left. */
	api_caps_fini_idle(&s->port_caps);
}

/* ---- the preview proxy ---- */

static void reply_plain(int fd, const char *status, const char *extra, const char *msg)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
			 "%sContent-Length: %zu\r\n\r\n%s",
			 status, extra, strlen(msg), msg);
	if (n > 0 && (size_t)n < sizeof(buf) && send(fd, buf, n, MSG_NOSIGNAL) < 0)
		return;
}

#define PREVIEW_401                                                                              \
	"{\"error\":{\"code\":\"UNAUTHENTICATED\",\"message\":\"this preview needs the sandbox's "   \
	"preview token (the token of GET /v1/sandboxes/{id}/ports/{port}) in "                     \
	"X-Sandlot-Preview-Token, or ?sandlot_token= once (a cookie then), unless the port is "    \
	"public\"}}"

/* Does a credential of R open sandbox SB? Which one, in *query (a ?sandlot_token= visit,
 * answered with a cookie). Constant-time comparisons. */
static bool preview_cred_ok(api_server *s, const preview_req *r, const sl_sandbox *sb,
			    char token[65], bool *query)
{
	char e2b[65];
	e2b_token(s, "traffic", sb->id, e2b);
	bool ok = false;
	*query = false;
	token[0] = '\0';
	for (int i = 0; i < r->ncred; i++) {
		bool m = r->cred[i].src == PREVIEW_E2B
				 ? api_key_equal(r->cred[i].value, e2b)
				 : sb->preview_token[0] && api_key_equal(r->cred[i].value, sb->preview_token);
		if (m && r->cred[i].src == PREVIEW_QUERY) {
			*query = true;
			memcpy(token, sb->preview_token, 65);
		}
		ok |= m;
	}
	return ok;
}

/* A valid ?sandlot_token=: the cookie (this host only: no Domain), and the same target
 * without the token, so it stays out of the sandbox's logs and the address bar. */
static void reply_cookie(int fd, const char *target, const char *token)
{
	char extra[600];
	snprintf(extra, sizeof(extra),
		 "Location: %s\r\nSet-Cookie: " PREVIEW_COOKIE_NAME
		 "=%s; Path=/; HttpOnly; SameSite=Lax\r\nCache-Control: no-store\r\n",
		 strlen(target) < 400 ? target : "/", token);
	reply_plain(fd, "303 See Other", extra, "{}");
}

static void *preview_conn(void *arg)
{
	struct conn *c = arg;
	api_server *s = c->srv;
	char *head = malloc(HEAD_MAX + 1);
	size_t len = 0;
	char *eoh = head ? read_head(s, c->fd, head, &len) : NULL;
	preview_req pr = { 0 };
	bool parsed = eoh && preview_head_parse(head, eoh + 4 - head, &pr) == 0;
	sl_sandbox sb;
	sl_err err = { 0 };
	bool found = parsed && pr.port && sandbox_get(s->ctx, pr.id, &sb, &err) == 0;
	bool allowed = parsed && pr.port && peer_allowed(c), query = false;
	char token[65] = "";
	bool ok = found && (allowed || sandbox_port_public(&sb, pr.port) ||
			    preview_cred_ok(s, &pr, &sb, token, &query));
	int in = ok && !query ? sandbox_connect_port(&sb, pr.port) : -1;
	/* Its Host is the sandbox's request host when it has one (E2B's maskRequestHost). */
	if (in >= 0 && preview_head_set_host(&pr, sb.request_host, pr.port) < 0) {
		close(in);
		in = -1;
	}
	if (found)
		sandbox_free(&sb);
	if (!parsed)
		reply_plain(c->fd, "400 Bad Request", "",
			    "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"no complete "
			    "request head\"}}");
	else if (!pr.port)
		reply_plain(c->fd, "404 Not Found", "",
			    "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"preview hosts look "
			    "like PORT-SANDBOXID.localhost\"}}");
	else if (!ok && !(allowed && !found)) /* nobody learns which sandboxes exist */
		reply_plain(c->fd, "401 Unauthorized", "", PREVIEW_401);
	else if (query)
		reply_cookie(c->fd, pr.target, token);
	else if (in < 0)
		reply_plain(c->fd, "502 Bad Gateway", "",
			    "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"nothing answers on "
			    "that port in that sandbox (or it is not running)\"}}");
	else if (send(in, pr.head, pr.head_len, MSG_NOSIGNAL) == (ssize_t)pr.head_len &&
		 (eoh + 4 == head + len ||
		  send(in, eoh + 4, head + len - eoh - 4, MSG_NOSIGNAL) == head + len - eoh - 4))
		splice_both(c->fd, in);
	if (in >= 0)
		close(in);
	preview_req_free(&pr);
	free(head);
	conn_end(c);
	return NULL;
}

static void *preview_accept(void *arg)
{
	api_server *s = arg;
	for (;;) {
		int fd = accept4(s->preview_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		spawn_conn(s, fd, NULL, 0, true, preview_conn);
	}
	return NULL;
}

int api_preview_start(api_server *s, uint16_t want, sl_err *err)
{
	s->preview_fd = loopback_listener(want, &s->preview_port);
	if (s->preview_fd < 0)
		return sl_sysfail(err, "preview proxy: listen on 127.0.0.1:%u", want);
	pthread_t t;
	if (pthread_create(&t, NULL, preview_accept, s) != 0) {
		close(s->preview_fd);
		return sl_fail(err, SL_INTERNAL, 0, "preview proxy: thread");
	}
	pthread_detach(t);
	return 0;
}

/* server.c — `sandlot serve`: the listeners (unix socket, loopback TCP), one
 * libmicrohttpd daemon each, request bodies, auth, dispatch, and the main loop. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "hibernate.h"
#include "http.h"
#include "log.h"
#include "net.h"
#include "reap.h"
#include "resolver.h"
#include "state.h"

/* How far a body is read (and dropped) so the client still gets its error: past the cap
 * for a 413, in all for an answer found from the head alone (api_req.deferred). Beyond
 * this the answer goes out at once (announced lengths) or the connection is cut. */
#define DISCARD_SLACK (16ull << 20)

typedef struct api_listener {
	api_server *srv;
	bool need_key;
	int fd;
	const char *tls_key, *tls_cert; /* PEM text: TLS on this listener (the TCP one) */
	struct MHD_Daemon *mhd;
	char where[160];
	api_caps caps; /* its connections: the cap in all, per client, head deadlines */
	pthread_t accepter;
	bool accepting;
} api_listener;

/* ---- listeners ---- */

static int unix_listener(const char *path, int *out, sl_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path))
		return sl_fail(err, SL_INVALID, 0, "--socket %s: longer than %zu bytes", path,
			       sizeof(sa.sun_path) - 1);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (state_mkdirs(dir, 0711, err) < 0)
			return -1;
	}
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sl_sysfail(err, "socket");
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return sl_fail(err, SL_CONFLICT, 0, "%s exists and is not a socket", path);
		/* A socket file nobody answers on is left over from a daemon that died. */
		_cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return sl_fail(err, SL_CONFLICT, 0,
				       "another sandlot serve is listening on %s", path);
		unlink(path);
	}
	/* Bind with 0660 from the start: no moment where others could connect. */
	mode_t old = umask(0117);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (r < 0)
		return sl_fail(err, SL_INTERNAL, e, "bind %s", path);
	if (chmod(path, 0660) < 0 || listen(fd, 1024) < 0) {
		e = errno;
		unlink(path);
		return sl_fail(err, SL_INTERNAL, e, "listen on %s", path);
	}
	*out = steal_fd(&fd);
	return 0;
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* "127.0.0.1:8080", "[::1]:8080", "localhost:8080", ":8080" (loopback). */
static int tcp_listener(const char *spec, bool allow_remote, bool tls, int *out, char *where,
			size_t wlen, sl_err *err)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	if (!colon || !colon[1])
		return sl_fail(err, SL_INVALID, 0, "--listen %s: expected HOST:PORT", spec);
	size_t hl = colon - spec;
	if (hl >= sizeof(host))
		return sl_fail(err, SL_INVALID, 0, "--listen %s: host too long", spec);
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (!host[0] || !strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port > 65535)
		return sl_fail(err, SL_INVALID, 0, "--listen %s: \"%s\" is not a port", spec,
			       colon + 1);
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%lu", port);
	int gr = getaddrinfo(host, portstr, &hints, &ai);
	if (gr != 0)
		return sl_fail(err, SL_INVALID, 0, "--listen %s: \"%s\" is not an IP address (%s)",
			       spec, host, gai_strerror(gr));
	if (!is_loopback(ai->ai_addr) && !allow_remote) {
		freeaddrinfo(ai);
		return sl_fail(err, SL_INVALID, 0,
			       "--listen %s: not a loopback address; the API controls sandboxes, "
			       "so pass --allow-remote to expose it (clients still need the key)",
			       spec);
	}
	_cleanup_close_ int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	int r = fd < 0 ? -1 : setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (r == 0)
		r = bind(fd, ai->ai_addr, ai->ai_addrlen);
	int e = errno;
	freeaddrinfo(ai);
	if (r < 0 || listen(fd, 1024) < 0)
		return sl_fail(err, SL_INTERNAL, r < 0 ? e : errno, "listen on %s", spec);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "?";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		int p;
		if (ss.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr,
				  sizeof(addr));
			p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
			snprintf(where, wlen, "%s://[%s]:%d", tls ? "https" : "http", addr, p);
		} else {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr,
				  sizeof(addr));
			p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
			snprintf(where, wlen, "%s://%s:%d", tls ? "https" : "http", addr, p);
		}
	}
	*out = steal_fd(&fd);
	return 0;
}

/* ---- requests ---- */

/* The key in the headers, if any: the admin's or an issued one (hardening fix 10). A
 * known key becomes the owner the request acts for (r->owner, "" the admin). */
static bool authorized(api_req *r)
{
	const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *given = NULL;
	if (auth && !strncasecmp(auth, "Bearer ", 7)) {
		given = auth + 7;
		while (*given == ' ')
			given++;
	}
	if (!given)
		given = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-API-Key");
	if (!given) {
		/* The dashboard's session cookie, from its own page only (ui.c). */
		int c = api_ui_cookie_auth(r);
		r->ui_refused = c < 0;
		return c > 0;
	}
	return api_key_identify(&r->srv->ctx->cfg, r->srv->key, given, r->owner) == 0;
}

static enum MHD_Result reply_unauthorized(api_req *r)
{
	if (r->ui_refused)
		return api_ui_reply_forbidden(r);
	struct MHD_Response *resp = api_error_response(
	    "UNAUTHENTICATED",
	    "this listener needs the API key: send \"Authorization: Bearer KEY\" or "
	    "\"X-API-Key: KEY\" (the admin's: `sandlot key`; others: `sandlot key create NAME`)",
	    NULL);
	if (resp)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	return api_reply(r, 401, resp);
}

static enum MHD_Result reply_no_route(api_req *r, bool path_known, const char *allow)
{
	char msg[512];
	if (path_known) {
		snprintf(msg, sizeof(msg), "%s answers %s, not %s", r->url, allow, r->method);
		struct MHD_Response *resp = api_error_response("METHOD_NOT_ALLOWED", msg, NULL);
		if (resp)
			MHD_add_response_header(resp, "Allow", allow);
		return api_reply(r, 405, resp);
	}
	/* "route":"unknown" tells a missing route from a missing sandbox (tests rely on it). */
	snprintf(msg, sizeof(msg), "no route %s %s (see api/openapi.yaml)", r->method, r->url);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "route", "unknown");
	return api_reply(r, 404, api_error_response("NOT_FOUND", msg, extra));
}

static api_req *req_new(api_listener *l, struct MHD_Connection *c, const char *url,
			const char *method)
{
	api_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->srv = l->srv;
	r->conn = c;
	snprintf(r->method, sizeof(r->method), "%s", method);
	r->url = strdup(url);
	if (!r->url) {
		free(r);
		return NULL;
	}
	return r;
}

static void req_free(api_req *r)
{
	if (!r)
		return;
	if (r->upload_free)
		r->upload_free(r);
	for (int i = 0; i < r->nparam; i++)
		free(r->param[i]);
	if (r->deferred)
		MHD_destroy_response(r->deferred);
	cJSON_Delete(r->json);
	free(r->body);
	free(r->url);
	free(r);
}

/* Whether a body follows the head, and is short enough to read before an early answer.
 * A client that sent "Expect: 100-continue" waits for our word and sends nothing. */
static bool body_to_read_first(api_req *r)
{
	struct MHD_Connection *c = r->conn;
	const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
	if (expect && !strcasecmp(expect, "100-continue"))
		return false;
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
	if (te && strcasecmp(te, "identity"))
		return true;
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
	return n > 0 && n <= DISCARD_SLACK;
}

static enum MHD_Result req_begin_route(api_listener *l, api_req *r);

/* The first call for a request: headers are in, no body yet. */
static enum MHD_Result req_begin(api_listener *l, api_req *r)
{
	r->deferring = body_to_read_first(r);
	enum MHD_Result ret = req_begin_route(l, r);
	r->deferring = false;
	return ret;
}

static enum MHD_Result req_begin_route(api_listener *l, api_req *r)
{
	bool known;
	char allow[64];
	r->keyed = l->need_key;
	for (const api_facade *const *f = api_facades; *f && !r->facade; f++)
		if ((*f)->claims(r))
			r->facade = *f;
	if (r->facade) {
		const api_facade *f = r->facade;
		r->route = api_route_match_in(f, r, r->method, r->url, &known, allow, sizeof(allow));
		if (l->need_key && !(r->route && (r->route->flags & API_ROUTE_OWN_AUTH)) &&
		    !authorized(r))
			return f->unauthorized ? f->unauthorized(r) : reply_unauthorized(r);
		owner_act_as(r->owner);
		if (!r->route)
			return f->no_route ? f->no_route(r, known, allow)
					   : reply_no_route(r, known, allow);
		/* Nothing unauthenticated costs a body read (hardening fix 1): a refusal is
		 * queued before the body, whose rest is then left unread. */
		enum MHD_Result ret;
		if ((r->route->flags & API_ROUTE_OWN_AUTH) && f->gate && f->gate(r, &ret) < 0)
			return ret;
	} else {
		if (l->need_key && !authorized(r))
			return reply_unauthorized(r);
		owner_act_as(r->owner);
		r->route = api_route_match(r, r->method, r->url, &known, allow, sizeof(allow));
		if (!r->route)
			return reply_no_route(r, known, allow);
	}
	if (r->nparam > 0 && !strncmp(r->route->pattern, "/v1/sandboxes/{id}", 18))
		api_touch(r->srv, r->param[0]);
	r->cap = r->route->body == API_BODY_RAW ? r->srv->opt.max_upload : r->srv->opt.max_json;
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
	if (cl && strtoull(cl, NULL, 10) > r->cap)
		return api_fail(r, SL_TOOLARGE,
				"the body (%s bytes) is over this route's cap of %llu bytes", cl,
				(unsigned long long)r->cap);
	if (r->route->body == API_BODY_RAW && r->route->begin) {
		sl_err err = {0};
		if (r->route->begin(r, &err) < 0)
			return api_reply_error(r, &err);
	}
	return MHD_YES;
}

int api_body_append(api_req *r, const char *data, size_t n, sl_err *err)
{
	if (r->body_len + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		while (cap < r->body_len + n + 1)
			cap *= 2;
		/* Not realloc: the old buffer is wiped first, since a body may hold a secret
		 * (POST /v1/secrets wipes the last one, api/secrets.c). */
		char *b = malloc(cap);
		if (!b)
			return sl_fail(err, SL_INTERNAL, ENOMEM, "read the request body");
		if (r->body) {
			memcpy(b, r->body, r->body_len);
			explicit_bzero(r->body, r->body_cap);
			free(r->body);
		}
		r->body = b;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

static enum MHD_Result req_data(api_req *r, const char *data, size_t n)
{
	r->received += n;
	if (r->queued)
		return MHD_YES;
	if (r->deferred)
		return r->received > DISCARD_SLACK ? MHD_NO : MHD_YES;
	if (r->received > r->cap && !r->pending.kind)
		sl_fail(&r->pending, SL_TOOLARGE, 0,
			"the body is over this route's cap of %llu bytes",
			(unsigned long long)r->cap);
	if (r->pending.kind)
		return r->received > r->cap + DISCARD_SLACK ? MHD_NO : MHD_YES;
	if (r->route->body == API_BODY_JSON)
		api_body_append(r, data, n, &r->pending);
	else if (r->route->body == API_BODY_RAW && r->route->chunk)
		r->route->chunk(r, data, n, &r->pending);
	return MHD_YES;
}

/* ---- connections: caps, timeouts, the head deadline ---- */

static void conn_set_timeout(api_req *r, unsigned seconds)
{
	if (r->srv->opt.conn_timeout)
		MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

void api_conn_long_lived(api_req *r, bool upgrade)
{
	r->long_lived = true;
	conn_set_timeout(r, 0);
	if (upgrade)
		api_caps_upgraded(r->caps, r->place);
}

/* The first call for a request: its head is in, the head deadline stops. */
static void conn_head_in(api_listener *l, api_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	r->caps = &l->caps;
	r->place = ci ? ci->socket_context : NULL;
	api_caps_wait_head(r->caps, r->place, false);
}

/* A request answered: a next one on the connection has its head deadline, and a
 * long-lived stream's connection gets its idle timeout back. */
static void conn_request_done(api_req *r)
{
	api_caps_wait_head(r->caps, r->place, true);
	if (r->long_lived)
		conn_set_timeout(r, r->srv->opt.conn_timeout);
}

/* A connection closed with bytes of its client still unread (a 401 or 413 answered
 * before the body, as fix 1 wants): closing it so makes the kernel send a reset, which
 * can reach the client before it reads the answer, and the client sees no answer at all
 * (one upload in eight, now and then, under load). So, as nginx and Apache do: the answer
 * is sent, our side is shut, and what the client still sends is read and dropped until it
 * closes, for at most 2 s and 64 MiB (bounded, and counted against the connection's cap
 * until then). A connection with nothing unread closes at once, as before. */
static void linger_drain(int fd)
{
	int unread = 0;
	if (fd < 0 || ioctl(fd, FIONREAD, &unread) < 0 || unread <= 0)
		return;
	shutdown(fd, SHUT_WR);
	char buf[16384];
	int64_t end = sl_mono_ms() + 2000;
	long long total = 0;
	for (;;) {
		int64_t left = end - sl_mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || total > (64ll << 20) || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
		total += n > 0 ? n : 0;
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	api_listener *l = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = ci ? api_caps_start(&l->caps, ci->connect_fd) : NULL;
	} else {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			linger_drain(ci->connect_fd);
		api_caps_drop(&l->caps, *socket_context);
		*socket_context = NULL;
	}
}

/* A connection counts against its client's cap and the listener's before libmicrohttpd
 * gives it a thread; over a cap it is refused at once. */
static void listener_admit(api_listener *l, int fd, const struct sockaddr *sa, socklen_t sl)
{
	api_client who;
	bool client_cap;
	api_client_of(fd, &who);
	api_conn *k = api_caps_take(&l->caps, &who, fd, &client_cap);
	if (!k) {
		api_caps_refuse(&l->caps, fd, &who, client_cap, !l->tls_cert);
		return;
	}
	api_caps_wait_head(&l->caps, k, true);
	if (MHD_add_connection(l->mhd, fd, sa, sl) != MHD_YES)
		api_caps_forget(&l->caps, k); /* libmicrohttpd closed FD */
}

static void *listener_accept(void *arg)
{
	api_listener *l = arg;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd >= 0) {
			listener_admit(l, fd, (struct sockaddr *)&ss, sl);
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			   errno == ENOMEM) {
			poll(NULL, 0, 100); /* out of fds: the clients wait in the backlog */
		} else if (errno != EINTR && errno != ECONNABORTED) {
			break; /* shut down by api_serve */
		}
	}
	return NULL;
}

static enum MHD_Result req_end(api_req *r)
{
	if (r->queued)
		return MHD_YES;
	if (r->deferred)
		return api_reply(r, r->deferred_status, steal_ptr(&r->deferred));
	if (r->pending.kind)
		return api_reply_error(r, &r->pending);
	if (r->route->body == API_BODY_JSON && r->body_len) {
		sl_err err = {0};
		r->json = api_json_parse(r->body, r->body_len, &err);
		if (!r->json)
			return api_reply_error(r, &err);
	}
	/* A handler may take long (a create, a long-poll of up to 5 minutes): no idle timeout
	 * while it works, nor after it for a long-lived stream. */
	conn_set_timeout(r, 0);
	enum MHD_Result ret = r->route->handle(r);
	if (!r->long_lived)
		conn_set_timeout(r, r->srv->opt.conn_timeout);
	if (!r->queued && ret == MHD_YES)
		ret = api_fail(r, SL_INTERNAL, "the handler for %s %s gave no answer", r->method,
			       r->url);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	api_listener *l = cls;
	api_req *r = *con_cls;
	enum MHD_Result ret;
	if (!r) {
		r = req_new(l, c, url, method);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		conn_head_in(l, r);
		ret = req_begin(l, r);
	} else {
		/* Every runtime lookup of the request's steps sees what its key may see. */
		owner_act_as(r->owner);
		if (*upload_size) {
			ret = req_data(r, upload, *upload_size);
			*upload_size = 0;
		} else {
			ret = req_end(r);
		}
	}
	owner_act_as(NULL); /* the thread's other work (streams, upgrades) is the daemon's */
	return ret;
}

/* Requests answered since the heap was last trimmed (serve_until_stopped). */
static atomic_ulong answered;

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	atomic_fetch_add(&answered, 1);
	api_req *r = *con_cls;
	if (r && r->after) {
		r->after(r, r->after_arg);
		r->after = NULL;
	}
	if (r)
		conn_request_done(r);
	req_free(r);
	*con_cls = NULL;
}

/* What libmicrohttpd says when its TCP options fail on a unix socket: it cannot tell one
 * from a TCP connection we hand it (MHD_add_connection), and said so three times a
 * response, ~300 bytes of log per request of the local API. */
static bool mhd_noise(const char *msg)
{
	static const char *const noise[] = {"Setting TCP_CORK option", "Setting TCP_NODELAY option",
					    "Failed to push the data from buffers to the network"};
	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
		if (!strncmp(msg, noise[i], strlen(noise[i])))
			return true;
	return false;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	if (mhd_noise(buf))
		return;
	sl_log(SL_LOG_WARN, "http: %s", buf);
}

static int listener_start(api_listener *l, sl_err *err)
{
	/* Our own accept (listener_accept) counts a connection before it costs a thread. */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_ALLOW_UPGRADE | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
			 MHD_USE_NO_LISTEN_SOCKET;
	bool tls = l->tls_cert != NULL;
	const api_options *o = &l->srv->opt;
	if (api_caps_init(&l->caps, l->need_key ? "the TCP listener" : "the unix socket",
			  o->max_conns, o->max_conns_client) < 0)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "connection caps of %s", l->where);
	/* The logger goes first so that MHD's messages about the other options reach it. The
	 * TLS options close the list when there are none (a NULL key ends it there). */
	l->mhd = MHD_start_daemon(
	    flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, on_request, l,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, l, MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, l, MHD_OPTION_CONNECTION_LIMIT,
	    l->caps.max + 16, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
	    MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout,
	    tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, l->tls_key, MHD_OPTION_HTTPS_MEM_CERT,
	    l->tls_cert, MHD_OPTION_END);
	if (!l->mhd)
		return sl_fail(err, SL_INTERNAL, errno, "start the HTTP server on %s", l->where);
	int e = pthread_create(&l->accepter, NULL, listener_accept, l);
	if (e != 0)
		return sl_fail(err, SL_INTERNAL, e, "accept thread of %s", l->where);
	l->accepting = true;
	return 0;
}

/* The PEM files of --tls-cert and --tls-key, read whole (both or neither). The key is
 * sent in every request over TCP: off loopback it must not travel in clear, so
 * --allow-remote needs them. */
static int tls_load(const api_options *o, char **cert, char **key, sl_err *err)
{
	if (!o->tls_cert != !o->tls_key)
		return sl_fail(err, SL_INVALID, 0, "--tls-cert and --tls-key go together");
	if (o->allow_remote && !o->tls_cert)
		return sl_fail(err, SL_INVALID, 0,
			       "--allow-remote sends the API key over the network: it needs TLS "
			       "(--tls-cert FILE --tls-key FILE, PEM)");
	if (!o->tls_cert)
		return 0;
	if (!o->listen)
		return sl_fail(err, SL_INVALID, 0, "--tls-cert: TLS is for --listen (TCP)");
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return sl_fail(err, SL_NOTIMPL, 0,
			       "this libmicrohttpd was built without TLS (GnuTLS)");
	size_t len;
	if (state_read_file(o->tls_cert, 1 << 20, cert, &len, err) < 0)
		return sl_wrap(err, "--tls-cert");
	if (state_read_file(o->tls_key, 1 << 20, key, &len, err) < 0)
		return sl_wrap(err, "--tls-key");
	return 0;
}

/* ---- the main loop ---- */

/* A stop that hangs (a request stuck in the runtime) must not keep the daemon alive:
 * it holds no state the files do not, so leaving without the last goodbyes is safe. */
static void *stop_watchdog(void *arg)
{
	sleep(10);
	sl_log(SL_LOG_WARN, "serve: stopping took over 10 s (a request is stuck); exiting now");
	fprintf(stderr, "sandlot: stopping took over 10 s; exiting now\n");
	_exit(1);
	return NULL;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The main thread's loop: the sweeps (and a reap) once a second, a reap at each SIGCHLD
 * (every create and delete), until SIGTERM or SIGINT (SET, blocked in every thread). */
static void serve_until_stopped(api_server *srv, api_listener *ls, int nl, const sigset_t *set)
{
	int64_t sweep_at = sl_mono_ms() + 1000;
	unsigned long seen = 0;
	for (;;) {
		siginfo_t si;
		int64_t left = sweep_at - sl_mono_ms();
		left = left < 0 ? 0 : left;
		struct timespec ts = {left / 1000, left % 1000 * 1000000};
		int sig = sigtimedwait(set, &si, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGCHLD)
			inits_reap_dead();
		if (sl_mono_ms() < sweep_at)
			continue;
		inits_reap_dead();
		api_pty_sweep(srv, false);
		api_enforce_deadlines(srv);
		api_ports_sweep(srv, false);
		for (int i = 0; i < nl && srv->opt.conn_timeout; i++)
			api_caps_cut_slow(&ls[i].caps, srv->opt.conn_timeout * 1000ll);
		/* A second without a request after some: the free memory of every arena
		 * (a thread per connection spreads them over up to 8 per core) goes back
		 * to the kernel, so an idle daemon's size is what it holds (+19% after a
		 * burst of 20 clients without this: docs/reliability.md). */
		unsigned long now = atomic_load(&answered);
		if (now && now == seen) {
			malloc_trim(0);
			atomic_fetch_sub(&answered, now);
			now = 0;
		}
		seen = now;
		sweep_at = sl_mono_ms() + 1000;
	}
}

int api_serve(sl_ctx *ctx, const api_options *o, sl_err *err)
{
	api_server srv = {.ctx = ctx, .opt = *o, .preview_fd = -1};
	pthread_mutex_init(&srv.lock, NULL);
	if (!srv.opt.max_json)
		srv.opt.max_json = API_DEFAULT_MAX_JSON;
	if (!srv.opt.max_upload)
		srv.opt.max_upload = API_DEFAULT_MAX_UPLOAD;
	if (!srv.opt.max_conns)
		srv.opt.max_conns = API_DEFAULT_MAX_CONNS;
	char sock[PATH_MAX];
	if (o->socket_path)
		snprintf(sock, sizeof(sock), "%s", o->socket_path);
	else
		state_api_socket_path(&ctx->cfg, sock, sizeof(sock));
	if (api_key_load(&ctx->cfg, srv.key, err) < 0)
		return -1;
	raise_fd_limit();

	api_listener ls[2] = {{.srv = &srv, .fd = -1}, {.srv = &srv, .fd = -1}};
	int nl = 1;
	_cleanup_free_ char *tls_cert = NULL, *tls_key = NULL;
	if (tls_load(o, &tls_cert, &tls_key, err) < 0)
		return -1;
	if (o->listen) {
		ls[1].need_key = true;
		ls[1].tls_cert = tls_cert;
		ls[1].tls_key = tls_key;
		if (tcp_listener(o->listen, o->allow_remote, tls_cert != NULL, &ls[1].fd,
				 ls[1].where, sizeof(ls[1].where), err) < 0)
			return -1;
		const char *port = strrchr(ls[1].where, ':');
		srv.tcp_port = port ? (uint16_t)atoi(port + 1) : 0;
		nl = 2;
	}
	if (unix_listener(sock, &ls[0].fd, err) < 0) {
		if (ls[1].fd >= 0)
			close(ls[1].fd);
		return -1;
	}
	snprintf(ls[0].where, sizeof(ls[0].where), "unix:%s", sock);
	/* After the refusals above, which return without a stop to free them. */
	if (api_caps_init(&srv.port_caps, "the port relays and the preview proxy",
			  srv.opt.max_conns, srv.opt.max_conns_client) < 0) {
		for (int i = 0; i < 2; i++)
			if (ls[i].fd >= 0)
				close(ls[i].fd);
		unlink(sock);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "connection caps of the port relays");
	}

	/* Signals are taken by this thread only (sigtimedwait); every server thread
	 * inherits the mask. A client gone mid-write must not kill the daemon. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* The network's host side, once made, stays until we stop (net.h). */
	int r = net_hold(&ctx->cfg, err);
	/* Without it sandboxes use the host's name servers and domain rules are refused. */
	api_resolver *resolver = NULL;
	sl_err rerr = {0};
	if (r == 0 && api_resolver_start(ctx, &resolver, &rerr) < 0) {
		if (rerr.kind == SL_INVALID) /* the operator's --dns: say so, do not start */
			r = sl_fail(err, SL_INVALID, 0, "%s", rerr.msg);
		else
			sl_log(SL_LOG_WARN,
			       "serve: no resolver for sandboxes, domain rules refused: %s",
			       rerr.msg);
	}
	/* Before anyone asks: a dump its killed predecessor ran is finished or undone. */
	if (r == 0)
		hibernate_recover(ctx);
	if (r == 0)
		r = api_events_start(&srv, err);
	if (r == 0)
		r = api_preview_start(&srv,
				      o->preview_any	? 0
				      : o->preview_port ? o->preview_port
							: 7081,
				      err);
	if (r == 0)
		r = api_pool_start(&srv, o->pools, o->npools, err);
	int started = 0;
	for (; started < nl && r == 0; started++)
		r = listener_start(&ls[started], err);
	if (r == 0) {
		if (nl == 2)
			printf("sandlot: serving the API on %s (no key) and %s (API key required: "
			       "`sandlot key`)\n",
			       ls[0].where, ls[1].where);
		else
			printf("sandlot: serving the API on %s\n", ls[0].where);
		fflush(stdout);
		sl_log(SL_LOG_INFO, "serve: listening on %s%s%s", ls[0].where,
		       nl == 2 ? " and " : "", nl == 2 ? ls[1].where : "");
		api_enforce_deadlines(&srv);
		serve_until_stopped(&srv, ls, nl, &set);
		sl_log(SL_LOG_INFO, "serve: stopping");
	} else {
		started--;
	}
	atomic_store(&srv.stopping, true);
	pthread_t dog;
	if (pthread_create(&dog, NULL, stop_watchdog, NULL) == 0)
		pthread_detach(dog);
	for (int i = 0; i < nl; i++) {
		/* Stop accepting first so no new client gets in. */
		if (ls[i].accepting) {
			shutdown(ls[i].fd, SHUT_RDWR);
			pthread_join(ls[i].accepter, NULL);
		}
		if (ls[i].mhd)
			MHD_stop_daemon(ls[i].mhd);
		if (ls[i].fd >= 0)
			close(ls[i].fd);
		api_caps_fini(&ls[i].caps);
	}
	unlink(sock);
	/* After the listeners: no request can start what a façade runs on its own. */
	for (const api_facade *const *f = api_facades; *f; f++)
		if ((*f)->stop)
			(*f)->stop(&srv);
	/* After the listeners: no request can queue a release or take from the pool. */
	api_pool_stop(&srv);
	/* Every import, pull and /v1 build ended with its request; the E2B façade's template
	 * builds run on detached threads that use the server: wait for them (the watchdog
	 * bounds the wait; a build cut short says so in its status). */
	if (atomic_load(&srv.imports))
		sl_log(SL_LOG_INFO, "serve: waiting for %u template build(s) to end",
		       atomic_load(&srv.imports));
	while (atomic_load(&srv.imports))
		usleep(50 * 1000);
	api_resolver_stop(ctx, resolver);
	/* After the pool and the releases it finishes: the last detach is done. */
	net_unhold(&ctx->cfg);
	api_pty_sweep(&srv, true);
	if (srv.preview_fd >= 0) {
		shutdown(srv.preview_fd, SHUT_RDWR);
		close(srv.preview_fd);
	}
	api_ports_stop(&srv);  /* after the preview's listener: they share the caps */
	api_events_stop(&srv); /* after the listeners and the pool: nothing writes records */
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return r;
}

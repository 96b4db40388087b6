/* ports.c — getHost(port): a loopback TCP relay per (sandbox, port) into the sandbox's
 * own network namespace (so it works with the sandbox's network off), and the preview
 * proxy that routes http://{port}-{id}.localhost:{previewPort}/ by the Host header,
 * WebSocket upgrades included (after the first request it only relays bytes). Neither
 * needs the API key; both listen on loopback only. */
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

#include "../runtime/launch.h"
#include "../runtime/log.h"
#include "../runtime/state.h"
#include "http.h"

#define HEAD_MAX 16384

struct api_relay {
	struct api_relay *next;
	api_server *srv;
	char sandbox_id[32];
	uint16_t port, host_port;
	int fd;
	bool closed;
};

/* Connect to 127.0.0.1:port inside the sandbox: the socket is made in its network
 * namespace by this thread, which then returns to ours (a thread that could not
 * return exits with the connection, never serving anything else from there). */
static int connect_inside(api_server *s, const char *id, uint16_t port)
{
	sl_sandbox sb;
	sl_err err = { 0 };
	if (sandbox_get(s->ctx, id, &sb, &err) < 0)
		return -1;
	bool running = sb.status == SL_ST_RUNNING;
	pid_t init = sb.init_pid;
	uint64_t start = sb.init_start;
	sandbox_free(&sb);
	if (!running)
		return -1;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)init);
	int ns = open(p, O_RDONLY | O_CLOEXEC);
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int fd = -1;
	if (ns >= 0 && self >= 0 && proc_start_time(init) == start &&
	    setns(ns, CLONE_NEWNET) == 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (setns(self, CLONE_NEWNET) < 0) {
			sl_log(SL_LOG_ERROR, "ports: cannot return to the host netns");
			pthread_exit(NULL);
		}
	}
	if (ns >= 0)
		close(ns);
	if (self >= 0)
		close(self);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

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
};

static void *relay_conn(void *arg)
{
	struct conn *c = arg;
	int in = connect_inside(c->srv, c->id, c->port);
	if (in >= 0) {
		splice_both(c->fd, in);
		close(in);
	}
	close(c->fd);
	free(c);
	return NULL;
}

static void spawn_conn(api_server *s, int fd, const char *id, uint16_t port,
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
	if (pthread_create(&t, NULL, fn, c) != 0) {
		close(fd);
		free(c);
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
			break; /* closed by api_ports_sweep */
		}
		spawn_conn(s, fd, r->sandbox_id, r->port, relay_conn);
	}
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
	sl_sandbox sb;
	char *end;
	unsigned long port = strtoul(r->param[1], &end, 10);
	if (*end || port < 1 || port > 65535)
		return api_fail(r, SL_INVALID, "port: \"%s\" is not a port number (1-65535)",
				r->param[1]);
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	bool running = sb.status == SL_ST_RUNNING;
	char id[32];
	snprintf(id, sizeof(id), "%s", sb.id);
	sandbox_free(&sb);
	if (!running)
		return api_fail(r, SL_CONFLICT, "sandbox %s is not running; start it first", id);
	api_server *s = r->srv;
	pthread_mutex_lock(&s->lock);
	struct api_relay *rel = s->relays;
	while (rel && (rel->closed || rel->port != port || strcmp(rel->sandbox_id, id)))
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
			snprintf(rel->sandbox_id, sizeof(rel->sandbox_id), "%s", id);
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
	api_preview_url(s, id, port, buf, sizeof(buf));
	cJSON_AddStringToObject(o, "url", buf);
	cJSON_AddNumberToObject(o, "port", (double)port);
	return api_reply_json(r, 200, o);
}

/* Close the relays of sandboxes that are no longer running (called every second). */
void api_ports_sweep(api_server *s, bool all)
{
	pthread_mutex_lock(&s->lock);
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
			shutdown(r->fd, SHUT_RDWR);
			close(r->fd);
			r->closed = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- the preview proxy ---- */

static void reply_plain(int fd, const char *status, const char *msg)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 status, strlen(msg), msg);
	if (send(fd, buf, n, MSG_NOSIGNAL) < 0)
		return;
}

/* "8080-sbx_xxx.localhost[:N]" -> port and id. */
static bool parse_host(const char *h, size_t len, uint16_t *port, char *id, size_t idlen)
{
	char host[256];
	if (len >= sizeof(host))
		return false;
	memcpy(host, h, len);
	host[len] = '\0';
	char *colon = strchr(host, ':');
	if (colon)
		*colon = '\0';
	char *dash = strchr(host, '-'), *dot = strstr(host, ".localhost");
	if (!dash || !dot || dot < dash || strcmp(dot, ".localhost"))
		return false;
	char *end;
	unsigned long p = strtoul(host, &end, 10);
	if (end != dash || p < 1 || p > 65535 || (size_t)(dot - dash - 1) >= idlen)
		return false;
	*port = p;
	snprintf(id, idlen, "%.*s", (int)(dot - dash - 1), dash + 1);
	return strncmp(id, "sbx_", 4) == 0;
}

static void *preview_conn(void *arg)
{
	struct conn *c = arg;
	char *head = malloc(HEAD_MAX + 1);
	size_t len = 0;
	char *eoh = NULL;
	while (head && !eoh && len < HEAD_MAX) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0)
			break;
		ssize_t n = read(c->fd, head + len, HEAD_MAX - len);
		if (n <= 0)
			break;
		len += n;
		head[len] = '\0';
		eoh = strstr(head, "\r\n\r\n");
	}
	uint16_t port = 0;
	char id[32];
	bool ok = false;
	for (char *l = head ? strstr(head, "\r\n") : NULL; eoh && l && l < eoh;
	     l = strstr(l + 2, "\r\n")) {
		if (strncasecmp(l + 2, "Host:", 5))
			continue;
		char *v = l + 7;
		while (*v == ' ')
			v++;
		ok = parse_host(v, strcspn(v, "\r"), &port, id, sizeof(id));
		break;
	}
	int in = ok ? connect_inside(c->srv, id, port) : -1;
	if (!eoh)
		reply_plain(c->fd, "400 Bad Request",
			    "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"no complete "
			    "request head\"}}");
	else if (!ok)
		reply_plain(c->fd, "404 Not Found",
			    "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"preview hosts look "
			    "like PORT-SANDBOXID.localhost\"}}");
	else if (in < 0)
		reply_plain(c->fd, "502 Bad Gateway",
			    "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"nothing answers on "
			    "that port in that sandbox (or it is not running)\"}}");
	else if (send(in, head, len, MSG_NOSIGNAL) == (ssize_t)len)
		splice_both(c->fd, in);
	if (in >= 0)
		close(in);
	free(head);
	close(c->fd);
	free(c);
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
		spawn_conn(s, fd, NULL, 0, preview_conn);
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

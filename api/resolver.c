/* resolver.c — the daemon's DNS resolver for network-on sandboxes (docs/network.md,
 * "Domain rules"): it listens on the bridge's gateway address, port 53 (UDP and TCP),
 * tells the asking sandbox by its leased source address, refuses names its rules do not
 * allow, forwards the rest upstream (`serve --dns`, else the host's resolv.conf) and
 * admits the A records of allowed names to the sandbox's nftables set for their TTL. */
#include "resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "claim.h"
#include "cleanup.h"
#include "dnsmsg.h"
#include "log.h"
#include "net.h"
#include "netname.h"
#include "record.h"

#define UDP_WORKERS   4
#define TCP_MAX	      16   /* TCP connections served at once */
#define UPSTREAM_MS   2500 /* per upstream server and try */
#define CLIENT_MS     5000 /* a TCP client's whole query */
#define MAX_UPSTREAMS 8
/* An admitted address stays reachable at least this long (s): a TTL of 0 or 5 would let
 * a program that resolves, then connects a moment later, find it closed. */
#define MIN_TTL 60
#define MAX_TTL 86400

struct api_resolver {
	sl_ctx *ctx;
	uint32_t gateway;
	struct sockaddr_storage up[MAX_UPSTREAMS];
	socklen_t uplen[MAX_UPSTREAMS];
	size_t nup;
	int udp, tcp;
	atomic_bool stopping;
	atomic_int tcp_live;
	pthread_t workers[UDP_WORKERS + 1];
	size_t nworkers;
};

/* ---- upstream ---- */

static int add_upstream(api_resolver *r, const char *text)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	if (r->nup == MAX_UPSTREAMS)
		return 0;
	if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(53);
		r->uplen[r->nup] = sizeof(*a4);
	} else if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(53);
		r->uplen[r->nup] = sizeof(*a6);
	} else {
		return -1;
	}
	r->up[r->nup++] = ss;
	return 0;
}

/* cfg->net_dns (`serve --dns`, SANDLOT_NET_DNS), else every nameserver of the host's
 * resolv.conf: the daemon is on the host, so a loopback one (systemd-resolved) works. */
static int upstreams(api_resolver *r, sl_err *err)
{
	const char *dns = r->ctx->cfg.net_dns;
	if (dns[0]) {
		char buf[sizeof(r->ctx->cfg.net_dns)], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", dns);
		for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
			if (add_upstream(r, t) < 0)
				return sl_fail(err, SL_INVALID, 0,
					       "--dns: \"%s\" is not an IPv4 or IPv6 address", t);
		return 0;
	}
	_cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");
	char line[512], a[256];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "nameserver %255s", a) == 1)
			add_upstream(r, a);
	return 0;
}

static bool wait_fd(int fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;
	while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return n == 1;
}

/* Read exactly N bytes from a stream socket within MS; false on EOF, error or time. */
static bool read_full(int fd, uint8_t *buf, size_t n, int ms)
{
	for (size_t got = 0; got < n;) {
		if (!wait_fd(fd, POLLIN, ms))
			return false;
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		got += (size_t)k;
	}
	return true;
}

static bool write_full(int fd, const uint8_t *buf, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = send(fd, buf + done, n - done, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		done += (size_t)k;
	}
	return true;
}

/* One exchange with upstream I, over TCP or UDP: the answer's length, or 0. The query
 * carries ID; an answer must carry it too and the same question. */
static size_t exchange(const api_resolver *r, size_t i, bool tcp, const uint8_t *q, size_t qlen,
		       const dns_question *want, uint8_t *ans, size_t cap)
{
	_cleanup_close_ int fd = socket(
	    r->up[i].ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, (const struct sockaddr *)&r->up[i], r->uplen[i]) < 0 &&
	    errno != EINPROGRESS)
		return 0;
	if (tcp) {
		uint8_t len[2] = {(uint8_t)(qlen >> 8), (uint8_t)qlen};
		uint16_t n;
		if (!wait_fd(fd, POLLOUT, UPSTREAM_MS) || !write_full(fd, len, 2) ||
		    !write_full(fd, q, qlen) || !read_full(fd, len, 2, UPSTREAM_MS))
			return 0;
		n = (uint16_t)(len[0] << 8 | len[1]);
		if (n > cap || !read_full(fd, ans, n, UPSTREAM_MS))
			return 0;
		dns_question got;
		return dnsmsg_question(ans, n, true, &got) == 0 && got.id == want->id &&
			       got.type == want->type && !strcmp(got.name, want->name)
			   ? n
			   : 0;
	}
	if (send(fd, q, qlen, MSG_NOSIGNAL) != (ssize_t)qlen)
		return 0;
	int64_t left = UPSTREAM_MS;
	while (left > 0 && wait_fd(fd, POLLIN, (int)left)) {
		ssize_t n = recv(fd, ans, cap, 0);
		dns_question got;
		if (n > 0 && dnsmsg_question(ans, (size_t)n, true, &got) == 0 &&
		    got.id == want->id && got.type == want->type && !strcmp(got.name, want->name))
			return (size_t)n;
		left -= 100; /* a stray datagram: wait a little less */
	}
	return 0;
}

/* Q (the sandbox's query, question QS) forwarded with a fresh id; the answer with the
 * sandbox's id back, or 0 when no upstream answered. */
static size_t forward(const api_resolver *r, bool tcp, const uint8_t *q, size_t qlen,
		      const dns_question *qs, uint8_t *ans, size_t cap)
{
	uint8_t fwd[DNS_MAX_UDP];
	dns_question want = *qs;
	if (qlen > sizeof(fwd) || getrandom(&want.id, sizeof(want.id), 0) != sizeof(want.id))
		return 0;
	memcpy(fwd, q, qlen);
	fwd[0] = (uint8_t)(want.id >> 8);
	fwd[1] = (uint8_t)want.id;
	for (size_t i = 0; i < r->nup; i++) {
		size_t n = exchange(r, i, tcp, fwd, qlen, &want, ans, cap);
		if (n) {
			ans[0] = (uint8_t)(qs->id >> 8);
			ans[1] = (uint8_t)qs->id;
			return n;
		}
	}
	return 0;
}

/* ---- one query ---- */

/* The rules of the sandbox leased SRC (running or paused); false if there is none. */
static bool sandbox_of(const api_resolver *r, uint32_t src, sl_sandbox *sb)
{
	char ip[16], path[PATH_MAX], owner[40];
	ipv4_format(src, ip, sizeof(ip));
	claim_path(r->ctx, "leases", ip, path, sizeof(path));
	sl_err e = {0};
	if (claim_read(path, owner) <= 0 || record_load(r->ctx, owner, sb, &e) < 0)
		return false;
	if (strcmp(sb->net_addr, ip) ||
	    (sb->status != SL_ST_RUNNING && sb->status != SL_ST_PAUSED)) {
		sandbox_free(sb);
		return false;
	}
	return true;
}

/* The IPv4 addresses of an allowed name's answer into the sandbox's set, before the
 * sandbox sees the answer (it connects right after). */
static void admit(const api_resolver *r, const char *id, const uint8_t *ans, size_t n)
{
	dns_addr a[64];
	uint32_t addrs[64], ttls[64];
	int k = dnsmsg_answers_a(ans, n, a, 64);
	for (int i = 0; i < k; i++) {
		addrs[i] = a[i].addr;
		ttls[i] = a[i].ttl < MIN_TTL ? MIN_TTL : a[i].ttl > MAX_TTL ? MAX_TTL : a[i].ttl;
	}
	sl_err e = {0};
	if (k > 0 && net_names_admit(&r->ctx->cfg, id, addrs, ttls, (size_t)k, &e) < 0)
		sl_log(SL_LOG_WARN, "resolver: %s", e.msg);
}

/* The answer to query Q (QLEN bytes) from SRC into ANS: its length, 0 for none. */
static size_t answer(const api_resolver *r, uint32_t src, bool tcp, const uint8_t *q, size_t qlen,
		     uint8_t *ans, size_t cap)
{
	dns_question qs;
	if (dnsmsg_question(q, qlen, false, &qs) < 0)
		return 0; /* not a query we can read: no answer, as for noise */
	sl_sandbox sb;
	if (!sandbox_of(r, src, &sb))
		return dnsmsg_reply_empty(q, &qs, DNS_RCODE_REFUSED, ans, cap);
	netname_verdict v = netname_decide(sb.net_allow, sb.net_deny, qs.name);
	size_t n = 0;
	if (v == NETNAME_REFUSE)
		n = dnsmsg_reply_empty(q, &qs, DNS_RCODE_REFUSED, ans, cap);
	else if (!(n = forward(r, tcp, q, qlen, &qs, ans, cap)))
		n = dnsmsg_reply_empty(q, &qs, 2 /* SERVFAIL */, ans, cap);
	else if (v == NETNAME_ADMIT)
		admit(r, sb.id, ans, n);
	sandbox_free(&sb);
	return n;
}

/* ---- UDP and TCP ---- */

static void *udp_main(void *arg)
{
	api_resolver *r = arg;
	uint8_t q[DNS_MAX_UDP], ans[DNS_MAX_UDP];
	while (!atomic_load(&r->stopping)) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(r->udp, q, sizeof(q), 0, (struct sockaddr *)&from, &fl);
		if (n <= 0 || from.sin_family != AF_INET)
			continue; /* the receive timeout: look at stopping */
		size_t k =
		    answer(r, ntohl(from.sin_addr.s_addr), false, q, (size_t)n, ans, sizeof(ans));
		if (k)
			sendto(r->udp, ans, k, MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

typedef struct tcp_conn {
	api_resolver *r;
	int fd;
	uint32_t src;
} tcp_conn;

static void *tcp_client(void *arg)
{
	tcp_conn *c = arg;
	uint8_t len[2], q[DNS_MAX_UDP];
	uint8_t *ans = malloc(65535);
	/* Queries one after the other on one connection, as RFC 7766 allows. */
	while (ans && !atomic_load(&c->r->stopping) && read_full(c->fd, len, 2, CLIENT_MS)) {
		size_t n = (size_t)(len[0] << 8 | len[1]);
		if (n > sizeof(q) || !read_full(c->fd, q, n, CLIENT_MS))
			break;
		size_t k = answer(c->r, c->src, true, q, n, ans, 65535);
		uint8_t out[2] = {(uint8_t)(k >> 8), (uint8_t)k};
		if (!k || !write_full(c->fd, out, 2) || !write_full(c->fd, ans, k))
			break;
	}
	free(ans);
	close(c->fd);
	atomic_fetch_sub(&c->r->tcp_live, 1);
	free(c);
	return NULL;
}

static void *tcp_main(void *arg)
{
	api_resolver *r = arg;
	while (!atomic_load(&r->stopping)) {
		if (!wait_fd(r->tcp, POLLIN, 500))
			continue;
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		int fd = accept4(r->tcp, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		tcp_conn *c = malloc(sizeof(*c));
		pthread_t t;
		if (!c || from.sin_family != AF_INET || atomic_load(&r->tcp_live) >= TCP_MAX) {
			free(c);
			close(fd);
			continue;
		}
		*c = (tcp_conn){r, fd, ntohl(from.sin_addr.s_addr)};
		atomic_fetch_add(&r->tcp_live, 1);
		if (pthread_create(&t, NULL, tcp_client, c) != 0) {
			atomic_fetch_sub(&r->tcp_live, 1);
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

/* A socket of TYPE on the gateway, port 53: IP_FREEBIND, as the bridge (and with it the
 * gateway address) is made with the first sandbox network. */
static int gateway_socket(uint32_t gw, int type, sl_err *err)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa = {
	    .sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(gw)};
	struct timeval tv = {.tv_sec = 0, .tv_usec = 500000};
	char ip[16];
	ipv4_format(gw, ip, sizeof(ip));
	if (fd < 0 || setsockopt(fd, SOL_IP, IP_FREEBIND, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		sl_sysfail(err, "resolver: listen on %s:53/%s", ip,
			   type == SOCK_STREAM ? "tcp" : "udp");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int api_resolver_start(sl_ctx *ctx, api_resolver **out, sl_err *err)
{
	*out = NULL;
	api_resolver *r = calloc(1, sizeof(*r));
	if (!r)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "resolver");
	r->ctx = ctx;
	r->udp = r->tcp = -1;
	sl_cidr subnet;
	if (upstreams(r, err) < 0 || net_subnet(&ctx->cfg, &subnet, err) < 0) {
		free(r);
		return -1;
	}
	if (r->nup == 0) {
		free(r);
		return sl_fail(err, SL_NOTFOUND, 0,
			       "resolver: no upstream name server in /etc/resolv.conf (give "
			       "`serve --dns IP`)");
	}
	r->gateway = subnet_gateway(&subnet);
	if ((r->udp = gateway_socket(r->gateway, SOCK_DGRAM, err)) < 0 ||
	    (r->tcp = gateway_socket(r->gateway, SOCK_STREAM, err)) < 0)
		goto fail;
	for (int i = 0; i < UDP_WORKERS + 1; i++) {
		if (pthread_create(&r->workers[i], NULL, i < UDP_WORKERS ? udp_main : tcp_main,
				   r)) {
			sl_fail(err, SL_INTERNAL, 0, "resolver: cannot start a thread");
			goto fail;
		}
		r->nworkers++;
	}
	ctx->cfg.net_resolver = true;
	*out = r;
	return 0;
fail:
	*out = r;
	api_resolver_stop(ctx, r);
	*out = NULL;
	return -1;
}

void api_resolver_stop(sl_ctx *ctx, api_resolver *r)
{
	if (!r)
		return;
	ctx->cfg.net_resolver = false;
	atomic_store(&r->stopping, true);
	for (size_t i = 0; i < r->nworkers; i++)
		pthread_join(r->workers[i], NULL);
	/* TCP clients notice stopping within CLIENT_MS. */
	for (int i = 0; i < 100 && atomic_load(&r->tcp_live); i++)
		usleep(60 * 1000);
	if (r->udp >= 0)
		close(r->udp);
	if (r->tcp >= 0)
		close(r->tcp);
	if (!atomic_load(&r->tcp_live))
		free(r); /* else leaked on purpose: a client thread still points to it */
}

/* peer.c — the owner of the client end of a loopback TCP connection, from the kernel's
 * socket table (NETLINK_SOCK_DIAG, an exact lookup of the client's 4-tuple), and the
 * set of uids `sandlot serve --allow-uid` lets through. */
#include "peer.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"

/* The request for the client's socket: its source is our peer and its destination our
 * local address, so the lookup finds the client's socket, not the accepted one. */
static int diag_request(const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
			struct inet_diag_req_v2 *req, sl_err *err)
{
	memset(req, 0, sizeof(*req));
	req->sdiag_family = local->ss_family;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = ~0u;
	req->id.idiag_cookie[0] = req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (local->ss_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)local, *r = (const void *)remote;
		req->id.idiag_sport = r->sin_port;
		req->id.idiag_dport = l->sin_port;
		memcpy(req->id.idiag_src, &r->sin_addr, 4);
		memcpy(req->id.idiag_dst, &l->sin_addr, 4);
		return 0;
	}
	if (local->ss_family == AF_INET6) {
		const struct sockaddr_in6 *l = (const void *)local, *r = (const void *)remote;
		req->id.idiag_sport = r->sin6_port;
		req->id.idiag_dport = l->sin6_port;
		memcpy(req->id.idiag_src, &r->sin6_addr, 16);
		memcpy(req->id.idiag_dst, &l->sin6_addr, 16);
		return 0;
	}
	return sl_fail(err, SL_INVALID, 0, "peer: not a TCP/IP connection (family %d)",
		       local->ss_family);
}

int peer_uid(int fd, uid_t *uid, sl_err *err)
{
	struct sockaddr_storage local, remote;
	socklen_t ll = sizeof(local), rl = sizeof(remote);
	if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
	    getpeername(fd, (struct sockaddr *)&remote, &rl) < 0)
		return sl_sysfail(err, "peer: the connection's addresses");
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 req;
	} msg = {.nh = {.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST,
			.nlmsg_seq = 1}};
	if (diag_request(&local, &remote, &msg.req, err) < 0)
		return -1;
	_cleanup_close_ int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return sl_sysfail(err, "peer: netlink sock_diag socket");
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	ssize_t n;
	do
		n = sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(msg))
		return sl_sysfail(err, "peer: send the sock_diag request");
	/* One answer: the socket, or an error (ENOENT: no such socket). */
	union {
		struct nlmsghdr nh;
		char buf[8192];
	} rep;
	do
		n = recv(nl, &rep, sizeof(rep), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sl_sysfail(err, "peer: read the sock_diag answer");
	for (struct nlmsghdr *h = &rep.nh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			int code = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? -e->error : EPROTO;
			return sl_fail(err, code == ENOENT ? SL_NOTFOUND : SL_INTERNAL, code,
				       "peer: no client socket for the connection");
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			/* A socket its process closed (orphaned, or a time-wait mini socket)
			 * has no inode and reads uid 0: it is nobody's, not root's. */
			if (m->idiag_inode == 0)
				return sl_fail(err, SL_NOTFOUND, 0,
					       "peer: the client closed its socket");
			*uid = m->idiag_uid;
			return 0;
		}
	}
	return sl_fail(err, SL_NOTFOUND, 0, "peer: no client socket for the connection");
}

bool peer_uid_allowed(const peer_uids *set, uid_t uid)
{
	if (uid == 0)
		return true;
	for (size_t i = 0; set && i < set->n; i++)
		if (set->uid[i] == uid)
			return true;
	return false;
}

static int uid_of(const char *field, const char *s, uid_t *uid, sl_err *err)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*s >= '0' && *s <= '9') {
		if (*end || errno || v >= (uid_t)-1)
			return sl_fail(err, SL_INVALID, 0, "%s: \"%s\" is not a uid", field, s);
		*uid = (uid_t)v;
		return 0;
	}
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (!*s || getpwnam_r(s, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return sl_fail(err, SL_INVALID, 0, "%s: \"%s\" is neither a uid nor a user name",
			       field, s);
	*uid = res->pw_uid;
	return 0;
}

int peer_uids_parse(const char *field, const char *text, peer_uids *set, sl_err *err)
{
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "%s", field);
	char *save = NULL;
	bool any = false;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uid_t u;
		if (uid_of(field, t, &u, err) < 0)
			return -1;
		any = true;
		if (peer_uid_allowed(set, u) && u != 0)
			continue;
		if (set->n == PEER_MAX_UIDS)
			return sl_fail(err, SL_INVALID, 0, "%s: at most %d uids", field,
				       PEER_MAX_UIDS);
		set->uid[set->n++] = u;
	}
	if (!any)
		return sl_fail(err, SL_INVALID, 0, "%s: give a uid, a user name, or a comma list",
			       field);
	return 0;
}

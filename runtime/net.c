/* net.c — the host side of sandbox networking (built into sandlot-net.so): bridge and
 * veths with libnl-route, NAT and isolation in our own nftables table with libnftables.
 * Host changes are made under <state>/net/lock and undone after the last network. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <nftables/libnftables.h>

#include "cleanup.h"
#include "log.h"
#include "record.h"
#include "state.h"

static void nl_sock_freep(struct nl_sock **s)
{
	if (*s)
		nl_socket_free(*s);
}
static void link_putp(struct rtnl_link **l)
{
	if (*l)
		rtnl_link_put(*l);
}
#define _cleanup_nl_   __attribute__((cleanup(nl_sock_freep)))
#define _cleanup_link_ __attribute__((cleanup(link_putp)))

static int __attribute__((format(printf, 3, 4)))
nlfail(sl_err *err, int nlerr, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return sl_fail(err, SL_INTERNAL, 0, "%s: %s", what, nl_geterror(nlerr));
}

/* A host end's name: "slv" and the sandbox's address in hex. An address is leased to
 * one sandbox (or one spare network) at a time, and a spare's veth then needs no rename
 * when a create takes it (a rename waits for RCU, as an unregister does). */
static void net_veth_name(uint32_t addr, char buf[16])
{
	snprintf(buf, 16, "slv%08x", addr);
}

/* The name builds before 2026-12 gave it: "slv" + 12 of the id's random characters. */
static void net_veth_name_by_id(const char *id, char buf[16])
{
	snprintf(buf, 16, "slv%.12s", strncmp(id, "sbx_", 4) ? id : id + 4);
}

static struct nl_sock *route_sock(sl_err *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "netlink socket");
		return NULL;
	}
	int r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(sk);
		nlfail(err, r, "netlink connect");
		return NULL;
	}
	return sk;
}

/* A netlink socket bound to the network namespace NETNS (an fd): made after setns() on
 * this thread only, which then goes back to its own namespace. */
static struct nl_sock *route_sock_in(int netns, sl_err *err)
{
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		sl_sysfail(err, "open this thread's network namespace");
		return NULL;
	}
	if (setns(netns, CLONE_NEWNET) < 0) {
		sl_sysfail(err, "enter the sandbox's network namespace");
		return NULL;
	}
	struct nl_sock *sk = route_sock(err);
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* this thread would go on in a sandbox's namespace */
	return sk;
}

/* ---- small host files ---- */

static void net_dir(const sl_config *cfg, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/net%s%s", cfg->state_dir, name ? "/" : "", name ? name : "");
}

/* Serialises every host change of this state dir (CLI and daemon alike). */
static int lock_net(const sl_config *cfg, sl_err *err)
{
	char p[PATH_MAX];
	net_dir(cfg, NULL, p, sizeof(p));
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	net_dir(cfg, "lock", p, sizeof(p));
	return state_lock(p, err);
}

static int read_small(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_small(const char *path, const char *text, sl_err *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return sl_sysfail(err, "write %s", path);
	return 0;
}

/* ---- subnet ---- */

static int push_cidr(sl_cidr **v, size_t *n, size_t *cap, sl_cidr c)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		sl_cidr *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = c;
	return 0;
}

static bool nl_to_cidr(struct nl_addr *a, sl_cidr *c)
{
	if (!a || nl_addr_get_family(a) != AF_INET || nl_addr_get_len(a) != 4)
		return false;
	uint32_t be;
	memcpy(&be, nl_addr_get_binary_addr(a), 4);
	c->prefix = nl_addr_get_prefixlen(a);
	c->addr = ntohl(be) & cidr_mask(c->prefix);
	return true;
}

/* Every IPv4 route (all tables) and address on the host, except those of our bridge:
 * what a sandbox subnet must not overlap. */
static int host_nets(struct nl_sock *sk, int skip_ifindex, sl_cidr **out, size_t *n, sl_err *err)
{
	struct nl_cache *rc = NULL, *ac = NULL;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	int r = rtnl_route_alloc_cache(sk, AF_INET, 0, &rc);
	if (r < 0)
		return nlfail(err, r, "list host routes");
	r = rtnl_addr_alloc_cache(sk, &ac);
	if (r < 0) {
		nl_cache_free(rc);
		return nlfail(err, r, "list host addresses");
	}
	for (struct nl_object *o = nl_cache_get_first(rc); o; o = nl_cache_get_next(o)) {
		struct rtnl_route *rt = (struct rtnl_route *)o;
		sl_cidr c;
		struct rtnl_nexthop *nh = rtnl_route_nexthop_n(rt, 0);
		if (nh && skip_ifindex && rtnl_route_nh_get_ifindex(nh) == skip_ifindex)
			continue;
		if (nl_to_cidr(rtnl_route_get_dst(rt), &c) && c.prefix > 0)
			push_cidr(out, n, &cap, c);
	}
	for (struct nl_object *o = nl_cache_get_first(ac); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		sl_cidr c;
		if (skip_ifindex && rtnl_addr_get_ifindex(a) == skip_ifindex)
			continue;
		if (nl_to_cidr(rtnl_addr_get_local(a), &c)) {
			c.prefix = 32; /* the address itself; its route covers the prefix */
			memcpy(&c.addr, nl_addr_get_binary_addr(rtnl_addr_get_local(a)), 4);
			c.addr = ntohl(c.addr);
			push_cidr(out, n, &cap, c);
		}
	}
	nl_cache_free(rc);
	nl_cache_free(ac);
	return 0;
}

/* Fails naming the host route or address the subnet overlaps. */
static int check_collision(struct nl_sock *sk, int bridge_ifindex, const sl_cidr *subnet,
			   sl_err *err)
{
	_cleanup_free_ sl_cidr *used = NULL;
	size_t n = 0;
	if (host_nets(sk, bridge_ifindex, &used, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (cidr_overlaps(subnet, &used[i])) {
			char a[24], b[24];
			cidr_format(subnet, a, sizeof(a));
			cidr_format(&used[i], b, sizeof(b));
			return sl_fail(err, SL_CONFLICT, 0,
				       "sandbox subnet %s overlaps %s, which this host already "
				       "uses; set SANDLOT_NET_SUBNET to a free range",
				       a, b);
		}
	return 0;
}

int net_subnet(const sl_config *cfg, sl_cidr *subnet, sl_err *err)
{
	if (cfg->net_subnet[0]) {
		if (cidr_parse("SANDLOT_NET_SUBNET", cfg->net_subnet, subnet, err) < 0)
			return -1;
		if (subnet->prefix > 28)
			return sl_fail(err, SL_INVALID, 0,
				       "SANDLOT_NET_SUBNET=%s: use a /28 or wider range",
				       cfg->net_subnet);
		return 0;
	}
	char p[PATH_MAX], text[64];
	net_dir(cfg, "subnet", p, sizeof(p));
	sl_err e = {0};
	if (read_small(p, text, sizeof(text)) == 0 && cidr_parse(p, text, subnet, &e) == 0)
		return 0;
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	if (lk < 0)
		return -1;
	if (read_small(p, text, sizeof(text)) == 0 && cidr_parse(p, text, subnet, &e) == 0)
		return 0; /* chosen by another process meanwhile */
	_cleanup_nl_ struct nl_sock *sk = route_sock(err);
	_cleanup_free_ sl_cidr *used = NULL;
	size_t n = 0;
	if (!sk || host_nets(sk, 0, &used, &n, err) < 0)
		return -1;
	int i = subnet_pick(net_subnet_candidates, net_subnet_ncandidates, used, n);
	if (i < 0)
		return sl_fail(err, SL_CONFLICT, 0,
			       "every default sandbox subnet (10.213-10.220.0.0/16, "
			       "172.29-172.31.0.0/16) overlaps a host network; set "
			       "SANDLOT_NET_SUBNET");
	*subnet = net_subnet_candidates[i];
	cidr_format(subnet, text, sizeof(text));
	char dir[PATH_MAX];
	net_dir(cfg, NULL, dir, sizeof(dir));
	if (state_mkdirs(dir, 0700, err) < 0 || state_write_atomic(p, text, strlen(text), err) < 0)
		return -1;
	return 0;
}

/* ---- nftables ---- */

/* One context for the process, used only under the net lock (lock_net: an flock of
 * its own open file, so it excludes this process's other threads too). A context per
 * call cost 2-3 ms in the daemon (and its first command as much again). */
static struct nft_ctx *nft_shared;

static struct nft_ctx *nft_open(sl_err *err)
{
	if (nft_shared)
		return nft_shared;
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!nft) {
		sl_fail(err, SL_INTERNAL, 0, "nftables: cannot make a context");
		return NULL;
	}
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	nft_shared = nft;
	return nft;
}

/* Runs one batch (atomic: all of it or none). */
static int nft_run(struct nft_ctx *nft, const char *cmd, sl_err *err)
{
	nft_ctx_get_error_buffer(nft); /* a shared context: start from an empty buffer */
	if (nft_run_cmd_from_buffer(nft, cmd) == 0)
		return 0;
	const char *e = nft_ctx_get_error_buffer(nft);
	return sl_fail(err, SL_INTERNAL, 0, "nftables: %.*s", (int)strcspn(e ? e : "", "\n"),
		       e ? e : "failed");
}

static bool nft_ok(struct nft_ctx *nft, const char *cmd)
{
	nft_ctx_get_error_buffer(nft);
	bool ok = nft_run_cmd_from_buffer(nft, cmd) == 0;
	/* Reading the buffer rewinds it: the next failure's message starts clean. */
	nft_ctx_get_error_buffer(nft);
	return ok;
}

/* Does our table exist? "list tables" reads only the table list, not every sandbox's
 * chain and rules as "list table" would (that grows with the number of sandboxes). */
static bool table_exists(struct nft_ctx *nft, const char *br)
{
	char want[64];
	snprintf(want, sizeof(want), "table inet %s", br);
	nft_ctx_get_output_buffer(nft); /* only this listing's lines */
	if (!nft_ok(nft, "list tables"))
		return false;
	for (const char *p = nft_ctx_get_output_buffer(nft); p && *p;) {
		size_t n = strcspn(p, "\n");
		if (n == strlen(want) && !strncmp(p, want, n))
			return true;
		p += n + (p[n] == '\n');
	}
	return false;
}

/* A command whose object may already be gone: "No such file or directory" is success. */
static int nft_run_absent_ok(struct nft_ctx *nft, const char *cmd, sl_err *err)
{
	nft_ctx_get_error_buffer(nft);
	if (nft_run_cmd_from_buffer(nft, cmd) == 0)
		return 0;
	const char *e = nft_ctx_get_error_buffer(nft);
	if (e && strstr(e, "No such file or directory"))
		return 0;
	return sl_fail(err, SL_INTERNAL, 0, "nftables: %.*s", (int)strcspn(e ? e : "", "\n"),
		       e ? e : "failed");
}

/* Our table, in one transaction. Other tables are never touched; a packet must pass
 * every table's base chain at a hook, so ours only ever narrows what may pass. */
static int table_create(struct nft_ctx *nft, const char *br, const sl_cidr *subnet, sl_err *err)
{
	char cmd[4096], sub[24], gw[16];
	cidr_format(subnet, sub, sizeof(sub));
	ipv4_format(subnet_gateway(subnet), gw, sizeof(gw));
	snprintf(cmd, sizeof(cmd),
		 "table inet %1$s {\n"
		 " map egress { type ipv4_addr : verdict; }\n"
		 /* No host service answers a sandbox: not the gateway, not 0.0.0.0
		  * listeners, not the API or preview ports. */
		 " chain input { type filter hook input priority filter - 10; policy accept;\n"
		 "  iifname \"%1$s\" ct state established,related accept\n"
		 /* the daemon's resolver (api/resolver.c), when one runs */
		 "  iifname \"%1$s\" ip daddr %3$s meta l4proto { tcp, udp } th dport 53 accept\n"
		 "  iifname \"%1$s\" reject with icmpx type admin-prohibited\n }\n"
		 " chain forward { type filter hook forward priority filter - 10; policy accept;\n"
		 /* sandbox to sandbox through the host's routing */
		 "  iifname \"%1$s\" oifname \"%1$s\" reject with icmpx type admin-prohibited\n"
		 "  oifname \"%1$s\" ct state established,related accept\n"
		 "  oifname \"%1$s\" drop\n"
		 "  iifname \"%1$s\" ip daddr 169.254.0.0/16 reject with icmpx type "
		 "admin-prohibited\n"
		 /* each sandbox's own chain, by its leased source address */
		 "  iifname \"%1$s\" ip saddr vmap @egress\n"
		 "  iifname \"%1$s\" drop\n }\n"
		 " chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
		 "  ip saddr %2$s oifname != \"%1$s\" masquerade\n }\n"
		 "}\n",
		 br, sub, gw);
	return nft_run(nft, cmd, err);
}

/* Another table whose forward hook drops by policy (Docker's `ip filter FORWARD`)
 * would drop our sandboxes' traffic whatever we accept: say so in the log. */
static void warn_foreign_forward_drop(struct nft_ctx *nft, const char *br)
{
	unsigned flags = nft_ctx_output_get_flags(nft);
	nft_ctx_output_set_flags(nft, flags | NFT_CTX_OUTPUT_JSON);
	if (nft_ok(nft, "list chains")) {
		cJSON *j = cJSON_Parse(nft_ctx_get_output_buffer(nft));
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "nftables"))
		{
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "chain");
			const cJSON *hook = cJSON_GetObjectItemCaseSensitive(c, "hook");
			const cJSON *pol = cJSON_GetObjectItemCaseSensitive(c, "policy");
			const cJSON *tab = cJSON_GetObjectItemCaseSensitive(c, "table");
			const cJSON *fam = cJSON_GetObjectItemCaseSensitive(c, "family");
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
			if (cJSON_IsString(hook) && !strcmp(hook->valuestring, "forward") &&
			    cJSON_IsString(pol) && !strcmp(pol->valuestring, "drop") &&
			    cJSON_IsString(tab) && strcmp(tab->valuestring, br) &&
			    cJSON_IsString(fam) && cJSON_IsString(name))
				sl_log(SL_LOG_WARN,
				       "network: chain %s %s %s drops forwarded packets by "
				       "policy; sandboxes reach nothing outside unless it accepts "
				       "iifname \"%s\" and oifname \"%s\" ct state established "
				       "(sandlot does not change other tables)",
				       fam->valuestring, tab->valuestring, name->valuestring, br,
				       br);
		}
		cJSON_Delete(j);
	}
	nft_ctx_output_set_flags(nft, flags);
}

/* "{ a, b, ... }" of the cidrs (an anonymous set), into S at N. */
static size_t cidr_set(char *s, size_t cap, size_t n, const sl_cidr *v, size_t nv)
{
	char c[24];
	for (size_t i = 0; i < nv && n < cap; i++) {
		cidr_format(&v[i], c, sizeof(c));
		n += snprintf(s + n, cap - n, "%s%s", i ? ", " : "{ ", c);
	}
	return n < cap ? n + snprintf(s + n, cap - n, " }") : n;
}

/* Is ADDR reachable by the allow list (empty: everything)? */
static bool allowed(const sl_net_sandbox *ns, uint32_t addr)
{
	for (size_t i = 0; i < ns->nallow; i++)
		if (cidr_contains(&ns->allow[i], addr))
			return true;
	return ns->nallow == 0;
}

/* Between the deny rules and the allow list: private ranges closed, unless an allow
 * entry lies inside one (named explicitly: 0.0.0.0/0 opens none) or they are open to
 * all (the operator's, a package install's mirrors); the name servers on port 53. */
static size_t private_rules(char *s, size_t cap, size_t n, const char *br, const sl_net_sandbox *ns)
{
	char c[24];
	for (size_t i = 0; i < ns->nallow; i++)
		if (net_private_named(&ns->allow[i])) {
			cidr_format(&ns->allow[i], c, sizeof(c));
			n += snprintf(s + n, cap - n, "add rule inet %s %s ip daddr %s accept\n",
				      br, ns->id, c);
		}
	for (size_t i = 0; i < ns->ndns; i++) {
		sl_cidr d = {ns->dns[i], 32};
		if (!net_private_named(&d) || !allowed(ns, d.addr))
			continue; /* public: the allow list decides, as for any address */
		cidr_format(&d, c, sizeof(c));
		n += snprintf(s + n, cap - n,
			      "add rule inet %s %s ip daddr %s meta l4proto { tcp, udp } th dport "
			      "53 accept\n",
			      br, ns->id, c);
	}
	n += snprintf(s + n, cap - n, "add rule inet %s %s ip daddr ", br, ns->id);
	n = cidr_set(s, cap, n, net_private_ranges, net_private_nranges);
	if (ns->nopen) {
		n += snprintf(s + n, cap - n, " ip daddr != ");
		n = cidr_set(s, cap, n, ns->open, ns->nopen);
	}
	return n + snprintf(s + n, cap - n, " reject with icmpx type admin-prohibited\n");
}

/* Well-known public resolvers that answer DNS over HTTPS (and over QUIC) on 443: closed
 * to a sandbox with domain rules, which could otherwise resolve past the daemon's
 * resolver. Any other DoH server is just a web server to the rules (docs/network.md). */
static const char doh_resolvers[] =
    "{ 1.1.1.1, 1.0.0.1, 8.8.8.8, 8.8.4.4, 9.9.9.9, 149.112.112.112, 9.9.9.10, "
    "149.112.112.10, 9.9.9.11, 208.67.222.222, 208.67.220.220, 94.140.14.14, "
    "94.140.15.15, 185.228.168.9, 185.228.169.9, 76.76.2.0, 76.76.10.0, 76.76.19.19, "
    "45.90.28.0, 45.90.30.0, 194.242.2.2, 86.54.11.1, 86.54.11.100 }";

/* A sandbox with domain rules: DNS (53), DoT (853) to anything but the daemon's
 * resolver (which is the host, not forwarded, so never here), DoH to known resolvers. */
static size_t dns_lock_rules(char *s, size_t cap, size_t n, const char *br, const char *id)
{
	n += snprintf(s + n, cap - n,
		      "add rule inet %1$s %2$s meta l4proto { tcp, udp } th dport { 53, 853 } "
		      "reject with icmpx type admin-prohibited\n"
		      "add rule inet %1$s %2$s ip daddr %3$s meta l4proto { tcp, udp } th dport "
		      "443 reject with icmpx type admin-prohibited\n",
		      br, id, doh_resolvers);
	return n;
}

static int chain_script(const char *br, const sl_net_sandbox *ns, bool flush_names, char **out,
			sl_err *err)
{
	size_t cap = 3072 + (2 * ns->nallow + ns->ndeny + 2 * ns->ndns) * 160 + ns->nopen * 24;
	char *s = malloc(cap), addr[16], c[24];
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "egress rules of %s", ns->id);
	size_t n = 0;
	ipv4_format(ns->addr, addr, sizeof(addr));
	n += snprintf(s + n, cap - n, "add chain inet %s %s\nflush chain inet %s %s\n", br, ns->id,
		      br, ns->id);
	if (ns->names) {
		/* The addresses the resolver admitted, each for its record's TTL. A rule
		 * change forgets them: names no longer allowed must not stay reachable. */
		n += snprintf(s + n, cap - n,
			      "add set inet %1$s %2$s_names { type ipv4_addr; flags timeout; }\n",
			      br, ns->id);
		if (flush_names)
			n += snprintf(s + n, cap - n, "flush set inet %s %s_names\n", br, ns->id);
	}
	if (ns->dns_locked)
		n = dns_lock_rules(s, cap, n, br, ns->id);
	for (size_t i = 0; i < ns->ndeny; i++) {
		cidr_format(&ns->deny[i], c, sizeof(c));
		n += snprintf(s + n, cap - n,
			      "add rule inet %s %s ip daddr %s reject with icmpx type "
			      "admin-prohibited\n",
			      br, ns->id, c);
	}
	n = private_rules(s, cap, n, br, ns);
	for (size_t i = 0; i < ns->nallow; i++) {
		cidr_format(&ns->allow[i], c, sizeof(c));
		n += snprintf(s + n, cap - n, "add rule inet %s %s ip daddr %s accept\n", br,
			      ns->id, c);
	}
	if (ns->names)
		/* Then connections admitted before whose address has since timed out. */
		n += snprintf(s + n, cap - n,
			      "add rule inet %1$s %2$s ip daddr @%2$s_names accept\n"
			      "add rule inet %1$s %2$s ct state established,related accept\n",
			      br, ns->id);
	n += snprintf(s + n, cap - n, "add rule inet %s %s %s\n", br, ns->id,
		      ns->nallow || ns->names ? "reject with icmpx type admin-prohibited"
					      : "accept");
	n += snprintf(s + n, cap - n, "add element inet %s egress { %s : jump %s }\n", br, addr,
		      ns->id);
	if (ns->names_drop && !ns->names)
		/* After the flush above, nothing refers to it. */
		snprintf(s + n, cap - n, "delete set inet %s %s_names\n", br, ns->id);
	*out = s;
	return 0;
}

/* ---- host side ---- */

static int sysctl_write(const char *path, const char *v, sl_err *err)
{
	return write_small(path, v, err);
}

/* ip_forward: remember the value we found (once), so the last detach puts it back. The
 * record ("VALUE BOOT-ID") names the boot it was made in: one from an earlier boot is
 * stale (a reboot reset ip_forward and took the bridge), one of this boot stands even when
 * the bridge was deleted behind our back (ip_forward is then still ours). */
static int forward_on(const sl_config *cfg, sl_err *err)
{
	const char *f = "/proc/sys/net/ipv4/ip_forward";
	char cur[16] = "", rec[PATH_MAX], dir[PATH_MAX], boot[40], text[64];
	if (read_small(f, cur, sizeof(cur)) < 0)
		return sl_sysfail(err, "read %s", f);
	if (!strcmp(cur, "1"))
		return 0;
	net_dir(cfg, NULL, dir, sizeof(dir));
	net_dir(cfg, "ip_forward.old", rec, sizeof(rec));
	record_boot_id(boot, sizeof(boot));
	snprintf(text, sizeof(text), "%s %s", cur, boot);
	/* Not fsynced: only a reboot could lose it, and a reboot makes it stale. */
	if (access(rec, F_OK) < 0 && (state_mkdirs(dir, 0700, err) < 0 ||
				      state_write_atomic_nosync(rec, text, strlen(text), err) < 0))
		return -1;
	return sysctl_write(f, "1", err);
}

/* The ip_forward record's value into OLD ("0" or "1"), when it is of this boot. A record
 * without a boot id (written before records had one) counts as this boot's where
 * LEGACY_OK, as it did then while the bridge stood. */
static bool forward_record(const sl_config *cfg, bool legacy_ok, char *old, size_t len)
{
	char rec[PATH_MAX], text[64], boot[40];
	net_dir(cfg, "ip_forward.old", rec, sizeof(rec));
	if (read_small(rec, text, sizeof(text)) < 0)
		return false;
	record_boot_id(boot, sizeof(boot));
	char *sp = strchr(text, ' ');
	if (sp ? strcmp(sp + 1, boot) != 0 : !legacy_ok)
		return false;
	if (sp)
		*sp = '\0';
	snprintf(old, len, "%s", text);
	return true;
}

static void forward_restore(const sl_config *cfg)
{
	char rec[PATH_MAX], old[16];
	net_dir(cfg, "ip_forward.old", rec, sizeof(rec));
	if (!forward_record(cfg, true, old, sizeof(old))) {
		unlink(rec); /* stale, or not ours to read */
		return;
	}
	sl_err e = {0};
	if ((!strcmp(old, "0") || !strcmp(old, "1")) &&
	    sysctl_write("/proc/sys/net/ipv4/ip_forward", old, &e) < 0)
		sl_log(SL_LOG_WARN, "network: restore ip_forward: %s", e.msg);
	else
		unlink(rec);
}

static int link_up(struct nl_sock *sk, struct rtnl_link *l, sl_err *err)
{
	_cleanup_link_ struct rtnl_link *ch = rtnl_link_alloc();
	if (!ch)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "link");
	rtnl_link_set_flags(ch, IFF_UP);
	int r = rtnl_link_change(sk, l, ch, 0);
	return r < 0 ? nlfail(err, r, "bring %s up", rtnl_link_get_name(l)) : 0;
}

static int addr_add(struct nl_sock *sk, int ifindex, uint32_t addr, uint8_t prefix, sl_err *err)
{
	struct rtnl_addr *a = rtnl_addr_alloc();
	uint32_t be = htonl(addr);
	struct nl_addr *local = nl_addr_build(AF_INET, &be, 4);
	if (!a || !local) {
		rtnl_addr_put(a);
		nl_addr_put(local);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "address");
	}
	nl_addr_set_prefixlen(local, prefix);
	rtnl_addr_set_ifindex(a, ifindex);
	rtnl_addr_set_local(a, local);
	int r = rtnl_addr_add(sk, a, 0);
	nl_addr_put(local);
	rtnl_addr_put(a);
	return r < 0 ? nlfail(err, r, "add address") : 0;
}

/* The bridge's own (random) hardware address, set as its address: a bridge whose
 * address was never set takes its lowest port's and changes it as ports come and go.
 * A sandbox whose gateway's ARP entry names a port since removed (another sandbox's, a
 * spare network's) then reaches neither the gateway nor the internet until that entry
 * is probed again (seconds); test_net_names's daemon restart, which drops the spares,
 * hit it. */
static int addr_fix(struct nl_sock *sk, struct rtnl_link *l, sl_err *err)
{
	_cleanup_link_ struct rtnl_link *ch = rtnl_link_alloc();
	struct nl_addr *a = rtnl_link_get_addr(l);
	if (!ch || !a)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "bridge address");
	rtnl_link_set_addr(ch, a);
	int r = rtnl_link_change(sk, l, ch, 0);
	return r < 0 ? nlfail(err, r, "set the bridge's address") : 0;
}

/* The bridge (by ifindex) whose table this process last listed or made. Table and
 * bridge are made and removed together under the net lock, so while the bridge is that
 * one, an attach need not list the tables again (~5 ms in the daemon: libnftables
 * fetches the whole ruleset for it). net_attach lists again if its chain then fails. */
static int table_seen_on;

/* The bridge with the gateway address, our table, ip_forward: each made when absent. */
static int host_up(const sl_config *cfg, struct nl_sock *sk, struct nft_ctx *nft,
		   const sl_cidr *subnet, int *br_index, sl_err *err)
{
	const char *br = cfg->net_bridge;
	_cleanup_link_ struct rtnl_link *l = NULL;
	if (rtnl_link_get_kernel(sk, 0, br, &l) < 0) {
		if (check_collision(sk, 0, subnet, err) < 0)
			return -1;
		/* No bridge: no network is up (the last detach restored ip_forward before
		 * removing it), or the bridge was deleted behind our back. A record of an
		 * earlier boot is stale; one of this boot still holds the value to restore. */
		char rec[PATH_MAX], old[16];
		net_dir(cfg, "ip_forward.old", rec, sizeof(rec));
		if (!forward_record(cfg, false, old, sizeof(old)))
			unlink(rec);
		int r = rtnl_link_bridge_add(sk, br);
		if (r < 0)
			return nlfail(err, r, "create bridge %s", br);
		if ((r = rtnl_link_get_kernel(sk, 0, br, &l)) < 0)
			return nlfail(err, r, "find bridge %s", br);
		char p[PATH_MAX];
		sl_err e = {0};
		/* No IPv6 on the bridge: no link-local way from a sandbox to the host. */
		snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", br);
		if (access(p, F_OK) == 0 && sysctl_write(p, "1", &e) < 0)
			sl_log(SL_LOG_WARN, "network: %s", e.msg);
		if (addr_fix(sk, l, err) < 0 ||
		    addr_add(sk, rtnl_link_get_ifindex(l), subnet_gateway(subnet), subnet->prefix,
			     err) < 0 ||
		    link_up(sk, l, err) < 0)
			return sl_wrap(err, "bridge %s", br);
	}
	*br_index = rtnl_link_get_ifindex(l);
	if (table_seen_on != *br_index && !table_exists(nft, br)) {
		warn_foreign_forward_drop(nft, br);
		if (table_create(nft, br, subnet, err) < 0)
			return -1;
	}
	table_seen_on = *br_index;
	return forward_on(cfg, err);
}

static int bridge_ports(struct nl_sock *sk, int br_index)
{
	struct nl_cache *c = NULL;
	if (rtnl_link_alloc_cache(sk, AF_UNSPEC, &c) < 0)
		return -1;
	int n = 0;
	for (struct nl_object *o = nl_cache_get_first(c); o; o = nl_cache_get_next(o))
		if (rtnl_link_get_master((struct rtnl_link *)o) == br_index)
			n++;
	nl_cache_free(c);
	return n;
}

/* Is the host side ours to undo: no live daemon holds it and no veth is left on the
 * bridge? *L is then the bridge, or NULL if there is none. */
static bool host_idle(const sl_config *cfg, struct nl_sock *sk, struct rtnl_link **l)
{
	*l = NULL;
	if (net_held(cfg))
		return false;
	if (rtnl_link_get_kernel(sk, 0, cfg->net_bridge, l) < 0) {
		*l = NULL;
		return true;
	}
	if (bridge_ports(sk, rtnl_link_get_ifindex(*l)) == 0)
		return true;
	rtnl_link_put(*l);
	*l = NULL;
	return false;
}

/* Undo host_up (L: the bridge, or NULL): ip_forward first, then our table, the bridge
 * last: a crash in between leaves the bridge, and the next host_up then records
 * ip_forward afresh (see host_up). */
static void host_down(const sl_config *cfg, struct nl_sock *sk, struct nft_ctx *nft,
		      struct rtnl_link *l)
{
	forward_restore(cfg);
	sl_err e = {0};
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "delete table inet %s", cfg->net_bridge);
	table_seen_on = 0;
	if (nft && nft_run_absent_ok(nft, cmd, &e) < 0)
		sl_log(SL_LOG_WARN, "network: %s", e.msg);
	int r = l ? rtnl_link_delete(sk, l) : 0;
	if (r < 0)
		sl_log(SL_LOG_WARN, "network: delete bridge %s: %s", cfg->net_bridge,
		       nl_geterror(r));
}

static void host_down_if_idle(const sl_config *cfg, struct nl_sock *sk, struct nft_ctx *nft)
{
	_cleanup_link_ struct rtnl_link *l = NULL;
	if (host_idle(cfg, sk, &l))
		host_down(cfg, sk, nft, l);
}

/* Hairpin off, isolated on: a sandbox's frames reach the host's bridge device but no
 * other isolated port (no libnl call for IFLA_BRPORT_ISOLATED in Debian 12's 3.7). */
static int port_isolate(struct nl_sock *sk, int ifindex, sl_err *err)
{
	struct nl_msg *m = nlmsg_alloc_simple(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK);
	struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE, .ifi_index = ifindex};
	if (!m)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "netlink message");
	struct nlattr *pi;
	if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    !(pi = nla_nest_start(m, IFLA_PROTINFO | NLA_F_NESTED)) ||
	    nla_put_u8(m, IFLA_BRPORT_ISOLATED, 1) < 0 || nla_nest_end(m, pi) < 0) {
		nlmsg_free(m);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "netlink message");
	}
	int r = nl_send_auto(sk, m);
	nlmsg_free(m);
	if (r >= 0)
		r = nl_wait_for_ack(sk);
	return r < 0 ? nlfail(err, r, "isolate bridge port") : 0;
}

/* Inside the sandbox: eth0 addressed and up, default route via the gateway. */
static int configure_inside(int netns, const sl_net_sandbox *ns, sl_err *err)
{
	_cleanup_nl_ struct nl_sock *sk = route_sock_in(netns, err);
	_cleanup_link_ struct rtnl_link *eth = NULL;
	if (!sk)
		return -1;
	int r = rtnl_link_get_kernel(sk, 0, "eth0", &eth);
	if (r < 0)
		return nlfail(err, r, "find %s in the sandbox", "eth0");
	if (addr_add(sk, rtnl_link_get_ifindex(eth), ns->addr, ns->subnet.prefix, err) < 0 ||
	    link_up(sk, eth, err) < 0)
		return -1;
	struct rtnl_route *rt = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	uint32_t any = 0, gw = htonl(subnet_gateway(&ns->subnet));
	struct nl_addr *dst = nl_addr_build(AF_INET, &any, 4);
	struct nl_addr *via = nl_addr_build(AF_INET, &gw, 4);
	if (!rt || !nh || !dst || !via) {
		r = -NLE_NOMEM;
	} else {
		nl_addr_set_prefixlen(dst, 0);
		rtnl_route_set_family(rt, AF_INET);
		rtnl_route_set_table(rt, RT_TABLE_MAIN);
		rtnl_route_set_dst(rt, dst);
		rtnl_route_nh_set_gateway(nh, via);
		rtnl_route_nh_set_ifindex(nh, rtnl_link_get_ifindex(eth));
		rtnl_route_add_nexthop(rt, nh);
		nh = NULL; /* the route owns it now */
		r = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL);
	}
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(dst);
	nl_addr_put(via);
	if (rt)
		rtnl_route_put(rt);
	return r < 0 ? nlfail(err, r, "add the default route in the sandbox") : 0;
}

/* A veth pair: NAME here, its peer "eth0" in the namespace NETNS (an fd). libnl's
 * rtnl_link_veth_add takes a pid; a namespace nothing runs in yet has none. */
static int veth_add(struct nl_sock *sk, const char *name, int netns)
{
	_cleanup_link_ struct rtnl_link *l = rtnl_link_veth_alloc();
	if (!l)
		return -NLE_NOMEM;
	struct rtnl_link *peer = rtnl_link_veth_get_peer(l);
	rtnl_link_set_name(l, name);
	rtnl_link_set_name(peer, "eth0");
	rtnl_link_set_ns_fd(peer, netns);
	int r = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(peer);
	return r;
}

/* The veth (host end on the bridge, isolated; eth0 inside, addressed, routed) and, with
 * NFT, the sandbox's chain; on failure the veth is deleted again. */
static int veth_setup(const sl_config *cfg, struct nl_sock *sk, struct nft_ctx *nft, int br_index,
		      const sl_net_sandbox *ns, int netns, sl_err *err)
{
	char veth[16];
	net_veth_name(ns->addr, veth);
	int r = veth_add(sk, veth, netns);
	if (r < 0)
		return nlfail(err, r, "create veth %s", veth);
	_cleanup_link_ struct rtnl_link *l = NULL;
	_cleanup_free_ char *script = NULL;
	if ((r = rtnl_link_get_kernel(sk, 0, veth, &l)) < 0)
		nlfail(err, r, "find veth %s", veth);
	else if ((r = rtnl_link_enslave_ifindex(sk, br_index, rtnl_link_get_ifindex(l))) < 0)
		nlfail(err, r, "attach %s to the bridge", veth);
	else if (port_isolate(sk, rtnl_link_get_ifindex(l), err) < 0 || link_up(sk, l, err) < 0 ||
		 configure_inside(netns, ns, err) < 0 ||
		 (nft && (chain_script(cfg->net_bridge, ns, false, &script, err) < 0 ||
			  nft_run(nft, script, err) < 0)))
		r = -1;
	else
		return 0;
	if (l)
		rtnl_link_delete(sk, l);
	return -1;
}

/* Delete the link NAME if there is one: 0, or libnl's error. */
static int veth_delete(struct nl_sock *sk, const char *name)
{
	_cleanup_link_ struct rtnl_link *l = NULL;
	if (rtnl_link_get_kernel(sk, 0, name, &l) < 0)
		return 0;
	int r = rtnl_link_delete(sk, l);
	return r == -NLE_NODEV || r == -NLE_OBJ_NOTFOUND ? 0 : r;
}

/* The veth made into NETNS and the chain added (veth_setup). With PREPARED the veth was
 * made ahead (net_prepare) and only the chain is added, while it is a port of the
 * bridge as it is now; one whose bridge was made again since (or that is gone) is made
 * again in NETNS. */
static int attach_step(const sl_config *cfg, struct nl_sock *sk, struct nft_ctx *nft, int br_index,
		       const sl_net_sandbox *ns, int netns, bool prepared, sl_err *err)
{
	char veth[16];
	net_veth_name(ns->addr, veth);
	_cleanup_link_ struct rtnl_link *l = NULL;
	if (prepared && rtnl_link_get_kernel(sk, 0, veth, &l) == 0 &&
	    rtnl_link_get_master(l) == br_index) {
		_cleanup_free_ char *script = NULL;
		if (chain_script(cfg->net_bridge, ns, false, &script, err) < 0 ||
		    nft_run(nft, script, err) < 0)
			return -1;
		return 0;
	}
	if (prepared) {
		sl_log(SL_LOG_WARN, "network of %s: its spare veth %s is %s; made again", ns->id,
		       veth, l ? "off the bridge" : "gone");
		if (l)
			veth_delete(sk, veth);
	}
	return veth_setup(cfg, sk, nft, br_index, ns, netns, err);
}

int net_attach(const sl_config *cfg, const sl_net_sandbox *ns, int netns, bool prepared,
	       sl_err *err)
{
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	_cleanup_nl_ struct nl_sock *sk = lk >= 0 ? route_sock(err) : NULL;
	struct nft_ctx *nft = sk ? nft_open(err) : NULL;
	int br_index = 0;
	bool listed = table_seen_on == 0;
	if (nft && host_up(cfg, sk, nft, &ns->subnet, &br_index, err) == 0 &&
	    attach_step(cfg, sk, nft, br_index, ns, netns, prepared, err) == 0)
		return 0;
	if (nft && !listed && table_seen_on) {
		/* Our table may have been removed behind our back (nft flush ruleset):
		 * list, make it again if so, and retry once. */
		sl_err_clear(err);
		table_seen_on = 0;
		if (host_up(cfg, sk, nft, &ns->subnet, &br_index, err) == 0 &&
		    attach_step(cfg, sk, nft, br_index, ns, netns, prepared, err) == 0)
			return 0;
	}
	if (sk)
		host_down_if_idle(cfg, sk, nft);
	return sl_wrap(err, "network of %s", ns->id);
}

int net_prepare(const sl_config *cfg, const sl_net_sandbox *ns, int netns, sl_err *err)
{
	_cleanup_nl_ struct nl_sock *sk = route_sock(err);
	int br_index = 0, r = -1;
	if (sk) {
		_cleanup_unlock_ int lk = lock_net(cfg, err);
		struct nft_ctx *nft = lk >= 0 ? nft_open(err) : NULL;
		r = nft ? host_up(cfg, sk, nft, &ns->subnet, &br_index, err) : -1;
	}
	/* The veth is made with the lock let go: creates wait for that lock, and the veth
	 * changes nothing it guards (a bridge removed meanwhile fails the enslaving). */
	if (r == 0 && veth_setup(cfg, sk, NULL, br_index, ns, netns, err) == 0)
		return 0;
	return sl_wrap(err, "spare network %s", ns->id);
}

void net_unprepare(uint32_t addr)
{
	char veth[16];
	net_veth_name(addr, veth);
	sl_err e = {0};
	_cleanup_nl_ struct nl_sock *sk = route_sock(&e);
	if (sk)
		veth_delete(sk, veth);
}

int net_set_rules(const sl_config *cfg, const sl_net_sandbox *ns, sl_err *err)
{
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	_cleanup_free_ char *script = NULL;
	struct nft_ctx *nft = lk >= 0 ? nft_open(err) : NULL;
	if (!nft || chain_script(cfg->net_bridge, ns, true, &script, err) < 0 ||
	    nft_run(nft, script, err) < 0)
		return sl_wrap(err, "egress rules of %s", ns->id);
	return 0;
}

int net_names_admit(const sl_config *cfg, const char *id, const uint32_t *addrs,
		    const uint32_t *ttls, size_t n, sl_err *err)
{
	if (n == 0)
		return 0;
	size_t cap = 256 + n * 48, at = 0;
	_cleanup_free_ char *els = malloc(cap), *cmd = malloc(3 * cap);
	if (!els || !cmd)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "names of %s", id);
	char a[16];
	for (size_t i = 0; i < n && at < cap; i++) {
		ipv4_format(addrs[i], a, sizeof(a));
		at += snprintf(els + at, cap - at, "%s%s timeout %us", i ? ", " : "", a, ttls[i]);
	}
	/* Add (so it exists), delete, add: one transaction that also renews the timeout of
	 * an address already in the set, which a lone add leaves as it was. */
	snprintf(cmd, 3 * cap,
		 "add element inet %1$s %2$s_names { %3$s }\n"
		 "delete element inet %1$s %2$s_names { %3$s }\n"
		 "add element inet %1$s %2$s_names { %3$s }\n",
		 cfg->net_bridge, id, els);
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	struct nft_ctx *nft = lk >= 0 ? nft_open(err) : NULL;
	if (!nft || nft_run(nft, cmd, err) < 0)
		return sl_wrap(err, "names of %s", id);
	return 0;
}

int net_detach(const sl_config *cfg, const char *id, uint32_t addr, bool names, bool keep_host,
	       sl_err *err)
{
	char veth[16], old[16], cmd[384], a[16];
	net_veth_name(addr, veth);
	net_veth_name_by_id(id, old);
	ipv4_format(addr, a, sizeof(a));
	_cleanup_nl_ struct nl_sock *sk = route_sock(err);
	if (!sk)
		return -1;
	/* The veth goes before the net lock is taken: its unregistering waits for the
	 * kernel (RCU, under the rtnl lock: 14-20 ms here), and a create waiting for the
	 * lock meanwhile waited for it too. Nothing the lock guards needs it: the host side
	 * is checked for idleness below, after it is gone. */
	/* (A sandbox made by an older build has its veth named by its id.) */
	int r = veth_delete(sk, veth);
	if (r == 0)
		r = veth_delete(sk, old);
	if (r < 0)
		return nlfail(err, r, "delete veth %s", veth);
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	if (lk < 0)
		return -1;
	struct nft_ctx *nft = nft_open(err);
	if (!nft)
		return -1;
	_cleanup_link_ struct rtnl_link *br = NULL;
	bool idle = host_idle(cfg, sk, &br);
	if (idle && !keep_host) {
		/* The last network: its chain and element go with the table. */
		host_down(cfg, sk, nft, br);
		return 0;
	}
	/* No "list" first: it would read every sandbox's rules. Either may be gone
	 * already (a failed create, the table removed with the last network). The set of
	 * admitted addresses goes after the chain that refers to it, in the same batch, and
	 * only when the rules name domains: a batch the kernel refuses (deleting a set that
	 * is not there) took 4-16 ms here, a third of a network create's cycle back to
	 * back, and held the net lock the next create waits for (docs/network.md, "Costs"). */
	int n = snprintf(cmd, sizeof(cmd),
			 "delete element inet %1$s egress { %2$s }\ndelete chain inet %1$s %3$s\n",
			 cfg->net_bridge, a, id);
	if (names)
		snprintf(cmd + n, sizeof(cmd) - n, "delete set inet %s %s_names\n", cfg->net_bridge,
			 id);
	if (!nft_ok(nft, cmd)) {
		snprintf(cmd, sizeof(cmd), "delete chain inet %s %s", cfg->net_bridge, id);
		if (nft_run_absent_ok(nft, cmd, err) < 0)
			return sl_wrap(err, "network of %s", id);
		snprintf(cmd, sizeof(cmd), "delete set inet %s %s_names", cfg->net_bridge, id);
		if (names && nft_run_absent_ok(nft, cmd, err) < 0)
			return sl_wrap(err, "network of %s", id);
	}
	return idle;
}

int net_down_if_idle(const sl_config *cfg, sl_err *err)
{
	_cleanup_unlock_ int lk = lock_net(cfg, err);
	_cleanup_nl_ struct nl_sock *sk = lk >= 0 ? route_sock(err) : NULL;
	if (!sk)
		return -1;
	struct nft_ctx *nft = nft_open(err);
	host_down_if_idle(cfg, sk, nft);
	return 0;
}

/* sbxnet.c — a sandbox's network as its record has it: the allow/deny lists, the
 * address lease (<state>/leases), the spec net.h is handed, and its /etc files. */
#include "sbxnet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "claim.h"
#include "cleanup.h"
#include "log.h"
#include "netname.h"
#include "spares.h"
#include "state.h"

/* ---- network ---- */

/* One entry of a list: a CIDR (normalised, "10.0.0.0/8") or, with the daemon's resolver,
 * a domain name (lowercased). */
static int rule_text(const sl_config *cfg, const char *field, const char *s, char *text, size_t len,
		     sl_err *err)
{
	if (!netname_is_name(s)) {
		sl_cidr cidr;
		if (cidr_parse(field, s, &cidr, err) < 0)
			return -1;
		cidr_format(&cidr, text, len);
		return 0;
	}
	char name[SL_NAME_MAX + 1];
	if (strchr(s, ':') || strchr(s, '/'))
		return cidr_parse(field, s, &(sl_cidr){0}, err); /* IPv6, a bad CIDR */
	if (netname_parse(field, s, name, err) < 0)
		return -1;
	if (!cfg->net_resolver)
		return sl_fail(err, SL_INVALID, 0,
			       "%s: \"%s\": domain rules need the daemon's resolver: create the "
			       "sandbox through the API (`sandlot serve`), not the CLI alone "
			       "(docs/network.md, \"Domain rules\")",
			       field, name);
	snprintf(text, len, "%s", name);
	return 0;
}

/* The allow/deny lists of o, parsed and normalised into arrays. */
int sbxnet_lists(const sl_config *cfg, const sl_net_opts *o, cJSON **allow, cJSON **deny,
		 sl_err *err)
{
	const char *const *lists[2] = {o->allow, o->deny};
	const char *names[2] = {"network.allow", "network.deny"};
	cJSON *out[2] = {NULL, NULL};
	for (int k = 0; k < 2; k++) {
		if (!lists[k])
			continue;
		out[k] = cJSON_CreateArray();
		size_t i = 0;
		for (const char *const *c = lists[k]; *c; c++, i++) {
			char field[40], text[SL_NAME_MAX + 1];
			snprintf(field, sizeof(field), "%s[%zu]", names[k], i);
			if (i >= SL_NET_MAX_RULES) {
				sl_fail(err, SL_INVALID, 0, "%s: at most %d entries", names[k],
					SL_NET_MAX_RULES);
				goto fail;
			}
			if (rule_text(cfg, field, *c, text, sizeof(text), err) < 0)
				goto fail;
			/* Deny wins: with every address denied nothing is left to allow. */
			if (k == 1 && !strcmp(text, "0.0.0.0/0")) {
				sl_fail(err, SL_INVALID, 0,
					"%s: 0.0.0.0/0 blocks every destination, whatever allow "
					"says (deny wins): list what may be reached in "
					"network.allow, or turn the network off "
					"(\"enabled\": false)",
					field);
				goto fail;
			}
			cJSON_AddItemToArray(out[k], cJSON_CreateString(text));
		}
	}
	*allow = out[0];
	*deny = out[1];
	return 0;
fail:
	cJSON_Delete(out[0]);
	cJSON_Delete(out[1]);
	return -1;
}

int sbxnet_open_list(const sl_net_opts *o, cJSON **open, sl_err *err)
{
	*open = NULL;
	if (!o->open || !o->open[0])
		return 0;
	*open = cJSON_CreateArray();
	for (size_t i = 0; o->open[i]; i++) {
		sl_cidr c;
		char text[24];
		if (i >= SL_NET_MAX_RULES) {
			sl_fail(err, SL_INVALID, 0, "network: at most %d opened ranges",
				SL_NET_MAX_RULES);
			goto fail;
		}
		if (cidr_parse("network.open", o->open[i], &c, err) < 0)
			goto fail;
		cidr_format(&c, text, sizeof(text));
		cJSON_AddItemToArray(*open, cJSON_CreateString(text));
	}
	return 0;
fail:
	cJSON_Delete(*open);
	*open = NULL;
	return -1;
}

static size_t cidrs_from(const cJSON *arr, sl_cidr *out, size_t max)
{
	size_t n = 0;
	const cJSON *it;
	sl_err e = {0};
	cJSON_ArrayForEach(it, arr) if (n < max && cJSON_IsString(it) &&
					!netname_is_name(it->valuestring) &&
					cidr_parse("rule", it->valuestring, &out[n], &e) == 0) n++;
	return n;
}

/* The name servers a sandbox is given: SANDLOT_NET_DNS, else the host's own that a
 * sandbox can reach (not loopback). The host's search and options lines go to OTHER. */
static size_t nameservers(const sl_config *cfg, char ns[][64], size_t max, char *other, size_t olen)
{
	size_t n = 0, o = 0;
	if (other && olen)
		other[0] = '\0';
	if (cfg->net_dns[0]) {
		char buf[sizeof(cfg->net_dns)], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", cfg->net_dns);
		for (char *t = strtok_r(buf, ", ", &save); t && n < max;
		     t = strtok_r(NULL, ", ", &save))
			snprintf(ns[n++], 64, "%s", t);
		return n;
	}
	_cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");
	char line[512], a[256];
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "nameserver %255s", a) == 1) {
			if (strncmp(a, "127.", 4) && strcmp(a, "::1") && n < max)
				snprintf(ns[n++], 64, "%s", a);
		} else if (other && o < olen &&
			   (!strncmp(line, "search ", 7) || !strncmp(line, "options ", 8))) {
			o += snprintf(other + o, olen - o, "%s", line);
		}
	}
	return n;
}

int sbxnet_spec(const sl_config *cfg, const sl_sandbox *sb, sl_net_sandbox *ns, sbxnet_bufs *b,
		sl_err *err)
{
	memset(ns, 0, sizeof(*ns));
	ns->id = sb->id;
	if (!ipv4_parse(sb->net_addr, &ns->addr) ||
	    cidr_parse("subnet", sb->net_subnet, &ns->subnet, err) < 0)
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: bad network record", sb->id);
	ns->allow = b->allow;
	ns->nallow = cidrs_from(sb->net_allow, b->allow, SL_NET_MAX_RULES);
	ns->deny = b->deny;
	ns->ndeny = cidrs_from(sb->net_deny, b->deny, SL_NET_MAX_RULES);
	/* config_load and serve checked the operator's list; the record's are normalised. */
	int n = net_private_list_parse("SANDLOT_NET_ALLOW_PRIVATE", cfg->net_allow_private, b->open,
				       SL_NET_MAX_PRIVATE, err);
	if (n < 0)
		return -1;
	ns->open = b->open;
	ns->nopen = (size_t)n + cidrs_from(sb->net_open, b->open + n, SL_NET_MAX_RULES);
	ns->names = netname_any(sb->net_allow);
	ns->dns_locked = ns->names || netname_any(sb->net_deny);
	ns->dns = b->dns;
	if (cfg->net_resolver)
		return 0; /* it asks the daemon's resolver, on the gateway */
	char names[SL_NET_MAX_DNS][64];
	size_t nn = nameservers(cfg, names, SL_NET_MAX_DNS, NULL, 0);
	for (size_t i = 0; i < nn; i++)
		if (ipv4_parse(names[i], &b->dns[ns->ndns]))
			ns->ndns++;
	return 0;
}

/* The lowest free address of the subnet, claimed like a uid slot: <state>/leases/<ip>
 * holds the owner's id, so a lease outlives daemon restarts. Destroy removes its lease;
 * stale ones (a crash) are looked for only once the subnet seems full, so a create does
 * not read every other sandbox's record. */
int sbxnet_lease_take(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	/* A daemon's spare network: its lease, veth, address and route are made. */
	if (spare_net_take(ctx, sb) == 0)
		return 0;
	return sbxnet_lease_new(ctx, sb, err);
}

int sbxnet_lease_new(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	sl_cidr subnet;
	char dir[PATH_MAX];
	if (net_subnet(&ctx->cfg, &subnet, err) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/leases", ctx->cfg.state_dir);
	if (state_mkdirs(dir, 0700, err) < 0)
		return -1;
	for (int pass = 0; pass < 8; pass++) {
		bool sweep = pass > 0; /* the first pass trusts every claim file */
		_cleanup_free_ uint32_t *taken = NULL;
		size_t n = 0, cap = 0;
		_cleanup_closedir_ DIR *d = opendir(dir);
		if (!d)
			return sl_sysfail(err, "list %s", dir);
		struct dirent *e;
		while ((e = readdir(d))) {
			uint32_t a;
			char path[PATH_MAX];
			if (!ipv4_parse(e->d_name, &a) || !cidr_contains(&subnet, a))
				continue;
			claim_path(ctx, "leases", e->d_name, path, sizeof(path));
			if (sweep && claim_stale(ctx, path)) {
				unlink(path);
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				uint32_t *nt = realloc(taken, cap * sizeof(*nt));
				if (!nt)
					return sl_fail(err, SL_INTERNAL, ENOMEM, "leases");
				taken = nt;
			}
			taken[n++] = a;
		}
		for (int tries = 0; tries < 16; tries++) {
			uint32_t a;
			if (lease_pick(&subnet, taken, n, &a) < 0) {
				if (!sweep)
					break; /* look again, taking back stale leases */
				return sl_fail(err, SL_EXHAUSTED, 0,
					       "no free address left in the sandbox subnet");
			}
			char key[16];
			ipv4_format(a, key, sizeof(key));
			int r = claim_take(ctx, "leases", key, sb->id, false, err);
			if (r < 0)
				return -1;
			if (r == 0) {
				snprintf(sb->net_addr, sizeof(sb->net_addr), "%s", key);
				ipv4_format(subnet_gateway(&subnet), sb->net_gateway,
					    sizeof(sb->net_gateway));
				cidr_format(&subnet, sb->net_subnet, sizeof(sb->net_subnet));
				return 0;
			}
			/* lost a race for it: mark it and try the next */
			uint32_t *nt = realloc(taken, (n + 1) * sizeof(*nt));
			if (!nt)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "leases");
			taken = nt;
			taken[n++] = a;
		}
	}
	return sl_fail(err, SL_EXHAUSTED, 0, "could not claim an address (too many races)");
}

/* /etc/hosts and /etc/resolv.conf for a sandbox with a network (the name servers:
 * nameservers above, also what the egress chain lets through on port 53). */
void sbxnet_etc_files(const sl_ctx *ctx, const sl_sandbox *sb, char *hosts, size_t hlen,
		      char *resolv, size_t rlen)
{
	const char *name = sb->name[0] ? sb->name : sb->id;
	snprintf(hosts, hlen,
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n",
		 sb->net_addr, name);
	size_t n = snprintf(resolv, rlen, "# written by sandlot at start (docs/network.md)\n");
	char names[SL_NET_MAX_DNS][64], other[1024];
	size_t nn;
	if (ctx->cfg.net_resolver) { /* the daemon's resolver (api/resolver.c) */
		snprintf(names[0], sizeof(names[0]), "%s", sb->net_gateway);
		nn = 1;
		nameservers(&ctx->cfg, names + 1, 0, other, sizeof(other));
	} else {
		nn = nameservers(&ctx->cfg, names, SL_NET_MAX_DNS, other, sizeof(other));
	}
	for (size_t i = 0; i < nn && n < rlen; i++)
		n += snprintf(resolv + n, rlen - n, "nameserver %s\n", names[i]);
	if (n < rlen)
		snprintf(resolv + n, rlen - n, "%s", other);
}

int sbxnet_attach(sl_ctx *ctx, const sl_sandbox *sb, int netns, bool prepared, sl_err *err)
{
	sl_net_sandbox ns;
	sbxnet_bufs bufs;
	if (sbxnet_spec(&ctx->cfg, sb, &ns, &bufs, err) < 0)
		return -1;
	return net_attach(&ctx->cfg, &ns, netns, prepared, err);
}

void sbxnet_detach(sl_ctx *ctx, const sl_sandbox *sb)
{
	uint32_t addr;
	sl_err e = {0};
	spare_net_forget(ctx, sb->id); /* a create that failed before its launch */
	if (!sb->net_enabled || !ipv4_parse(sb->net_addr, &addr))
		return;
	int r = net_detach(&ctx->cfg, sb->id, addr, netname_any(sb->net_allow), ctx->net_linger, &e);
	if (r < 0)
		sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
	else if (r > 0)
		ctx->net_left_up = true;
}

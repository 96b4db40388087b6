/* sbxnet.h — a sandbox's network as its record has it: allow/deny lists, the address
 * lease, the spec handed to net.h, its /etc files. */
#ifndef SANDLOT_SBXNET_H
#define SANDLOT_SBXNET_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ctx.h"
#include "err.h"
#include "net.h"
#include "netaddr.h"
#include "record.h"

/* Network at create (issue 7). Off: a new netns with only lo. */
typedef struct sl_net_opts {
	bool enabled;
	const char *const *allow; /* CIDRs and domain names, NULL-terminated; NULL: whatever
				   * NAT reaches */
	const char *const *deny;  /* CIDRs and names refused even when allowed */
	/* Internal (package installs): private CIDRs opened to this sandbox alone (its
	 * mirrors), not checked against the closed ranges and not shown by the API. */
	const char *const *open;
} sl_net_opts;

/* The allow/deny lists of o, parsed and normalised ("10.0.0.0/8", "*.example.com") into
 * arrays (NULL: the list was not given). Domain names only when cfg->net_resolver. */
int sbxnet_lists(const sl_config *cfg, const sl_net_opts *o, cJSON **allow, cJSON **deny,
		 sl_err *err);
/* o->open as a normalised array (NULL when none). */
int sbxnet_open_list(const sl_net_opts *o, cJSON **open, sl_err *err);
/* The arrays an sl_net_sandbox points into. */
typedef struct sbxnet_bufs {
	sl_cidr allow[SL_NET_MAX_RULES], deny[SL_NET_MAX_RULES], open[SL_NET_MAX_OPEN];
	uint32_t dns[SL_NET_MAX_DNS];
} sbxnet_bufs;
/* What net.h needs: the record's lists, the operator's open private ranges
 * (SANDLOT_NET_ALLOW_PRIVATE) and the name servers the sandbox is given. */
int sbxnet_spec(const sl_config *cfg, const sl_sandbox *sb, sl_net_sandbox *ns, sbxnet_bufs *b,
		sl_err *err);
/* The lowest free address of the subnet, claimed for SB (net_addr, net_gateway,
 * net_subnet set). */
int sbxnet_lease_take(sl_ctx *ctx, sl_sandbox *sb, sl_err *err);
/* (In a daemon, sbxnet_lease_take takes a spare network's lease first: spares.h.) */
/* The same, always a new lease (a spare network's own). */
int sbxnet_lease_new(sl_ctx *ctx, sl_sandbox *sb, sl_err *err);
/* SB's veth, address, route and rules into the network namespace NETNS (an fd). */
/* PREPARED: NETNS is a spare network SB took (spares.h), its veth, address and route
 * made; only the rules are added (net.h, net_attach). */
int sbxnet_attach(sl_ctx *ctx, const sl_sandbox *sb, int netns, bool prepared, sl_err *err);
/* SB's veth and rules gone (the lease stays with the record); a failure is logged. */
void sbxnet_detach(sl_ctx *ctx, const sl_sandbox *sb);
/* /etc/hosts and /etc/resolv.conf for SB. */
void sbxnet_etc_files(const sl_ctx *ctx, const sl_sandbox *sb, char *hosts, size_t hlen,
		      char *resolv, size_t rlen);

#endif

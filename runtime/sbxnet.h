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
	const char *const *allow; /* CIDRs, NULL-terminated; NULL: whatever NAT reaches */
	const char *const *deny;  /* CIDRs refused even when allowed */
} sl_net_opts;

/* The allow/deny lists of o, parsed and normalised ("10.0.0.0/8") into arrays (NULL:
 * the list was not given). */
int sbxnet_lists(const sl_net_opts *o, cJSON **allow, cJSON **deny, sl_err *err);
/* What net.h needs from the record; allow/deny point into the caller's arrays. */
int sbxnet_spec(const sl_sandbox *sb, sl_net_sandbox *ns, sl_cidr *allow, sl_cidr *deny,
		sl_err *err);
/* The lowest free address of the subnet, claimed for SB (net_addr, net_gateway,
 * net_subnet set). */
int sbxnet_lease_take(sl_ctx *ctx, sl_sandbox *sb, sl_err *err);
/* /etc/hosts and /etc/resolv.conf for SB. */
void sbxnet_etc_files(const sl_ctx *ctx, const sl_sandbox *sb, char *hosts, size_t hlen,
		      char *resolv, size_t rlen);

#endif

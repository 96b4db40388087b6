/* net.h — sandbox networking on the host (issue 7): the bridge, NAT and firewall made
 * on first use and undone after the last network, a veth per sandbox moved into its
 * network namespace, and a per-sandbox nftables chain for its egress rules. The calls
 * live in sandlot-net.so (libnl-route, libnftables; loaded on first use, see dl.h). */
#ifndef SANDLOT_NET_H
#define SANDLOT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "err.h"
#include "netaddr.h"

#define SL_NET_MAX_RULES 64 /* allow and deny entries, each */
/* Private ranges opened: the operator's (SL_NET_MAX_PRIVATE) and a sandbox's own. */
#define SL_NET_MAX_OPEN (SL_NET_MAX_PRIVATE + SL_NET_MAX_RULES)
#define SL_NET_MAX_DNS	8 /* name servers a sandbox is given */

/* One sandbox's network as the host side needs it. */
typedef struct sl_net_sandbox {
	const char *id;
	uint32_t addr;	      /* the sandbox's address (a lease in subnet) */
	sl_cidr subnet;	      /* the bridge's; the gateway is its first host */
	const sl_cidr *allow; /* nallow == 0: every destination NAT reaches */
	size_t nallow;
	const sl_cidr *deny; /* refused even when allowed */
	size_t ndeny;
	/* Private ranges (netaddr.h, net_private_ranges) are closed unless an allow entry
	 * lies inside one, or they are in open (the operator's, the sandbox's mirrors);
	 * the name servers in dns are reachable on port 53 wherever they are. */
	const sl_cidr *open;
	size_t nopen;
	const uint32_t *dns;
	size_t ndns;
	/* Domain rules (docs/network.md, "Domain rules"). NAMES: the allow list has names,
	 * so the addresses the daemon's resolver admitted (the set <id>_names) are
	 * reachable beside the allowed CIDRs, and nothing else. DNS_LOCKED: some list has
	 * names, so DNS, DoT and DoH to anything but the daemon's resolver are refused.
	 * NAMES_DROP (a rule change, net_set_rules): the rules had names and have none now,
	 * so the set goes in the same batch. */
	bool names, dns_locked, names_drop;
} sl_net_sandbox;

/* The bridge subnet: SANDLOT_NET_SUBNET, else the one chosen before (kept in
 * <state>/net/subnet), else the first candidate no host route or address overlaps. */
int net_subnet(const sl_config *cfg, sl_cidr *subnet, sl_err *err);
/* Give the network namespace NETNS (an fd, launch_new_netns; nothing runs in it yet)
 * the sandbox's network: host side first if needed, then the veth (eth0 inside,
 * addressed, up, default route via the gateway) and its egress chain. */
int net_attach(const sl_config *cfg, const sl_net_sandbox *ns, int netns, bool prepared,
	       sl_err *err);
/* A spare network: NS's veth (named by NS->addr) made into the network namespace NETNS
 * (an fd; nothing runs in it) with its address and route, the host side up, and no
 * chain: nothing passes the forward chain from its address until net_attach with
 * PREPARED adds it (and makes the veth again if the bridge was made again since). */
int net_prepare(const sl_config *cfg, const sl_net_sandbox *ns, int netns, sl_err *err);
/* The veth of a spare network of ADDR deleted (whether or not it exists). */
void net_unprepare(uint32_t addr);
/* Replace the sandbox's egress rules (its chain must exist: it is running). */
int net_set_rules(const sl_config *cfg, const sl_net_sandbox *ns, sl_err *err);
/* Admit ADDRS (N of them, each for its TTL in seconds) to sandbox ID's set of resolved
 * names (its chain must exist); an address already there gets the new timeout. */
int net_names_admit(const sl_config *cfg, const char *id, const uint32_t *addrs,
		    const uint32_t *ttls, size_t n, sl_err *err);
/* Remove the sandbox's veth and chain (whatever of them exists), and its set of admitted
 * addresses when NAMES (its rules name domains: the set exists), then the host side
 * when no sandbox network is left — unless KEEP_HOST: then it returns 1 when it left
 * the host side up with no network on it (the caller takes it down later, with
 * net_down_if_idle), 0 when other networks are still on it. */
int net_detach(const sl_config *cfg, const char *id, uint32_t addr, bool names, bool keep_host,
	       sl_err *err);

/* The daemon's hold (nethold.c, in the binary): while a live `sandlot serve` holds it,
 * the host side stays up when the last sandbox network goes, so a lone network sandbox
 * made and deleted again and again does not make and delete the bridge each time (~50
 * ms a deletion here: the kernel waits for RCU). net_hold records the caller (pid and
 * start time) in <state>/net/holders/<pid>, one record per daemon; net_unhold removes
 * the caller's and takes the host side down if no sandbox network is left and no other
 * live daemon holds it. A holder that died holds nothing. */
int net_hold(const sl_config *cfg, sl_err *err);
bool net_held(const sl_config *cfg);
void net_unhold(const sl_config *cfg);
/* The host side down if no sandbox network is left and no live daemon holds it. */
int net_down_if_idle(const sl_config *cfg, sl_err *err);

#endif

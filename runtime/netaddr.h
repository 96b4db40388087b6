/* netaddr.h — the pure half of sandbox networking: IPv4 CIDRs (parse, format, overlap),
 * choosing a bridge subnet no host route uses, and picking the next free lease. */
#ifndef SANDLOT_NETADDR_H
#define SANDLOT_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct sl_cidr {
	uint32_t addr; /* host byte order, host bits cleared */
	uint8_t prefix;
} sl_cidr;

/* "10.1.0.0/16" or "10.1.2.3" (= /32). Host bits are cleared ("10.1.2.3/16" is
 * 10.1.0.0/16). IPv4 only; field names the input in the message. */
int cidr_parse(const char *field, const char *s, sl_cidr *out, sl_err *err);
/* "a.b.c.d/p" (at most 19 chars). */
void cidr_format(const sl_cidr *c, char *buf, size_t len);
/* "a.b.c.d" (at most 15 chars). */
void ipv4_format(uint32_t addr, char *buf, size_t len);
/* Parse a dotted quad; false if it is not one. */
bool ipv4_parse(const char *s, uint32_t *out);
uint32_t cidr_mask(uint8_t prefix);
bool cidr_contains(const sl_cidr *c, uint32_t addr);
bool cidr_overlaps(const sl_cidr *a, const sl_cidr *b);

/* cidr lies wholly inside within. */
bool cidr_inside(const sl_cidr *c, const sl_cidr *within);

/* The ranges closed to a network-on sandbox unless opened (docs/network.md, "Private
 * ranges"): RFC 1918, CGNAT, loopback, link-local. */
extern const sl_cidr net_private_ranges[];
extern const size_t net_private_nranges;
/* c lies inside one of the closed ranges: an allow rule naming it opens it. */
bool net_private_named(const sl_cidr *c);
#define SL_NET_MAX_PRIVATE 32 /* ranges in the operator's list */
/* The operator's --allow-private / SANDLOT_NET_ALLOW_PRIVATE list: CIDRs separated by
 * commas or spaces, each inside a closed range other than link-local (which stays
 * closed), at most MAX. Into OUT (NULL: only checked); how many, or -1. */
int net_private_list_parse(const char *field, const char *text, sl_cidr *out, size_t max,
			   sl_err *err);

/* The subnets tried, in order, when none is configured: private /16s rarely used. */
extern const sl_cidr net_subnet_candidates[];
extern const size_t net_subnet_ncandidates;
/* The first of cands[] that overlaps none of used[] (the host's routes and addresses),
 * or -1. A subnet of /31 or longer is never chosen (no room for sandboxes). */
int subnet_pick(const sl_cidr *cands, size_t ncands, const sl_cidr *used, size_t nused);

/* The gateway (the bridge's own address) of a subnet: its first host. */
uint32_t subnet_gateway(const sl_cidr *subnet);
/* The lowest address of subnet for a sandbox that is not in taken[] (the network,
 * gateway and broadcast addresses are never handed out). 0: found; -1: full. */
int lease_pick(const sl_cidr *subnet, const uint32_t *taken, size_t ntaken, uint32_t *out);

#endif

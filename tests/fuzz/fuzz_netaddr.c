/* fuzz_netaddr.c — the IPv4 CIDR parser of network allow/deny lists (runtime/netaddr.c),
 * and the subnet and lease choices made from parsed CIDRs. */
#include "fuzz.h"
#include "netaddr.h"

/* Input: one CIDR or address a line. What parses formats back and parses again equal;
 * the first CIDR is a sandbox subnet whose lease must avoid the others' addresses, and
 * a subnet picked from them all must overlap none of the CIDRs it was to avoid. */
#define MAX_LINES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	sl_cidr cidrs[MAX_LINES];
	uint32_t addrs[MAX_LINES];
	size_t n = 0;
	while (in.n && n < MAX_LINES) {
		char *s = fuzz_line(&in);
		sl_err err = {0};
		sl_cidr c, again;
		char buf[32];
		if (cidr_parse("network.allow[0]", s, &c, &err) == 0) {
			cidr_format(&c, buf, sizeof(buf));
			if (c.prefix > 32 || (c.addr & ~cidr_mask(c.prefix)) ||
			    cidr_parse("f", buf, &again, &err) < 0 || again.addr != c.addr ||
			    again.prefix != c.prefix || !cidr_contains(&c, c.addr))
				abort();
			cidrs[n] = c;
			addrs[n++] = c.addr | (uint32_t)size; /* some address in or near it */
		} else if (!err.msg[0]) {
			abort();
		}
		free(s);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (cidr_overlaps(&cidrs[i], &cidrs[j]) != cidr_overlaps(&cidrs[j], &cidrs[i]))
				abort();
	if (n == 0)
		return 0;
	uint32_t lease;
	if (lease_pick(&cidrs[0], addrs + 1, n - 1, &lease) == 0) {
		uint32_t bcast = cidrs[0].addr | ~cidr_mask(cidrs[0].prefix);
		if (!cidr_contains(&cidrs[0], lease) || lease == cidrs[0].addr ||
		    lease == subnet_gateway(&cidrs[0]) || lease == bcast)
			abort();
		for (size_t i = 1; i < n; i++)
			if (addrs[i] == lease)
				abort();
	}
	int pick = subnet_pick(cidrs, n, cidrs, n); /* each clashes with itself: -1 */
	if (pick >= 0 && cidrs[pick].prefix > 0)
		abort();
	pick = subnet_pick(net_subnet_candidates, net_subnet_ncandidates, cidrs, n);
	for (size_t i = 0; pick >= 0 && i < n; i++)
		if (cidrs[i].prefix > 0 && cidr_overlaps(&net_subnet_candidates[pick], &cidrs[i]))
			abort();
	return 0;
}

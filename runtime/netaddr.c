/* netaddr.c — IPv4 CIDR arithmetic for the network module; no syscalls, so the unit
 * tests cover it without root. */
#include "netaddr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t cidr_mask(uint8_t prefix)
{
	return prefix == 0 ? 0 : prefix >= 32 ? 0xffffffffu : ~((1u << (32 - prefix)) - 1);
}

bool ipv4_parse(const char *s, uint32_t *out)
{
	struct in_addr a;
	/* inet_pton accepts only the four-part dotted decimal form, no octal or hex. */
	if (!s || inet_pton(AF_INET, s, &a) != 1)
		return false;
	*out = ntohl(a.s_addr);
	return true;
}

void ipv4_format(uint32_t addr, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255,
		 addr & 255);
}

void cidr_format(const sl_cidr *c, char *buf, size_t len)
{
	char a[16];
	ipv4_format(c->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, c->prefix);
}

int cidr_parse(const char *field, const char *s, sl_cidr *out, sl_err *err)
{
	char ip[32];
	const char *slash = s ? strchr(s, '/') : NULL;
	size_t n = slash ? (size_t)(slash - s) : (s ? strlen(s) : 0);
	unsigned long prefix = 32;
	if (!s || n == 0 || n >= sizeof(ip))
		goto bad;
	memcpy(ip, s, n);
	ip[n] = '\0';
	if (slash) {
		char *end;
		if (slash[1] < '0' || slash[1] > '9' || strlen(slash + 1) > 2)
			goto bad;
		prefix = strtoul(slash + 1, &end, 10);
		if (*end || prefix > 32)
			goto bad;
	}
	uint32_t a;
	if (!ipv4_parse(ip, &a))
		goto bad;
	out->prefix = (uint8_t)prefix;
	out->addr = a & cidr_mask(out->prefix);
	return 0;
bad:
	return sl_fail(err, SL_INVALID, 0,
		       "%s: \"%s\" is not an IPv4 address or CIDR (like 203.0.113.0/24)", field,
		       s ? s : "");
}

bool cidr_contains(const sl_cidr *c, uint32_t addr)
{
	return (addr & cidr_mask(c->prefix)) == c->addr;
}

bool cidr_overlaps(const sl_cidr *a, const sl_cidr *b)
{
	uint8_t p = a->prefix < b->prefix ? a->prefix : b->prefix;
	uint32_t m = cidr_mask(p);
	return (a->addr & m) == (b->addr & m);
}

bool cidr_inside(const sl_cidr *c, const sl_cidr *within)
{
	return c->prefix >= within->prefix && cidr_contains(within, c->addr);
}

/* 169.254.0.0/16 must stay last: it alone cannot be opened (the forward chain refuses
 * it before any sandbox's rules; cloud metadata answers there). */
const sl_cidr net_private_ranges[] = {
    {0x0a000000, 8},  /* 10/8, RFC 1918 */
    {0xac100000, 12}, /* 172.16/12, RFC 1918 */
    {0xc0a80000, 16}, /* 192.168/16, RFC 1918 */
    {0x64400000, 10}, /* 100.64/10, CGNAT (RFC 6598) */
    {0x7f000000, 8},  /* 127/8, loopback */
    {0xa9fe0000, 16}, /* 169.254/16, link-local */
};
const size_t net_private_nranges = sizeof(net_private_ranges) / sizeof(sl_cidr);

bool net_private_named(const sl_cidr *c)
{
	for (size_t i = 0; i < net_private_nranges; i++)
		if (cidr_inside(c, &net_private_ranges[i]))
			return true;
	return false;
}

int net_private_list_parse(const char *field, const char *text, sl_cidr *out, size_t max,
			   sl_err *err)
{
	char buf[1024], *save = NULL;
	const sl_cidr *linklocal = &net_private_ranges[net_private_nranges - 1];
	if (strlen(text) >= sizeof(buf))
		return sl_fail(err, SL_INVALID, 0, "%s: longer than %zu characters", field,
			       sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", text);
	size_t n = 0;
	for (char *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
		sl_cidr c;
		char f[64];
		snprintf(f, sizeof(f), "%s[%zu]", field, n);
		if (cidr_parse(f, t, &c, err) < 0)
			return -1;
		if (cidr_overlaps(&c, linklocal))
			return sl_fail(err, SL_INVALID, 0,
				       "%s: \"%s\" overlaps link-local 169.254.0.0/16, which "
				       "stays closed to sandboxes",
				       f, t);
		if (!net_private_named(&c))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "%s: \"%s\" is not inside a private range (10.0.0.0/8, "
			    "172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 127.0.0.0/8); "
			    "other addresses are open already",
			    f, t);
		if (n == max)
			return sl_fail(err, SL_INVALID, 0, "%s: at most %zu ranges", field, max);
		if (out)
			out[n] = c;
		n++;
	}
	return (int)n;
}

/* 10.213-10.220 then 172.29-172.31: away from Docker's 172.17+, libvirt's
 * 192.168.122, and the 10.0-10.10 ranges home and cloud networks favour. */
const sl_cidr net_subnet_candidates[] = {
    {0x0ad50000, 16}, {0x0ad60000, 16}, {0x0ad70000, 16}, {0x0ad80000, 16},
    {0x0ad90000, 16}, {0x0ada0000, 16}, {0x0adb0000, 16}, {0x0adc0000, 16},
    {0xac1d0000, 16}, {0xac1e0000, 16}, {0xac1f0000, 16},
};
const size_t net_subnet_ncandidates = sizeof(net_subnet_candidates) / sizeof(sl_cidr);

int subnet_pick(const sl_cidr *cands, size_t ncands, const sl_cidr *used, size_t nused)
{
	for (size_t i = 0; i < ncands; i++) {
		if (cands[i].prefix > 30)
			continue;
		bool clash = false;
		for (size_t j = 0; j < nused && !clash; j++)
			clash = used[j].prefix > 0 && cidr_overlaps(&cands[i], &used[j]);
		if (!clash)
			return (int)i;
	}
	return -1;
}

uint32_t subnet_gateway(const sl_cidr *subnet)
{
	return subnet->addr + 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int lease_pick(const sl_cidr *subnet, const uint32_t *taken, size_t ntaken, uint32_t *out)
{
	if (subnet->prefix > 30)
		return -1;
	uint32_t first = subnet->addr + 2, last = (subnet->addr | ~cidr_mask(subnet->prefix)) - 1;
	uint32_t *t = NULL;
	if (ntaken) {
		t = malloc(ntaken * sizeof(*t));
		if (!t)
			return -1;
		memcpy(t, taken, ntaken * sizeof(*t));
		qsort(t, ntaken, sizeof(*t), cmp_u32);
	}
	/* Walk the sorted taken list alongside the candidates: the first gap wins. */
	uint32_t cand = first;
	for (size_t i = 0; i < ntaken && cand <= last; i++) {
		if (t[i] < cand)
			continue;
		if (t[i] > cand)
			break;
		cand++;
	}
	free(t);
	if (cand > last)
		return -1;
	*out = cand;
	return 0;
}

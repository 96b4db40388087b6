/* dnsmsg.c — DNS messages as the resolver reads them (dnsmsg.h): the question, a reply
 * with no records, the A records of an answer. */
#include "dnsmsg.h"

#include <ctype.h>
#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int dnsmsg_question(const uint8_t *m, size_t n, bool response, dns_question *q)
{
	if (n < DNS_HEADER || get16(m + 4) != 1)
		return -1;
	bool qr = m[2] & 0x80;
	int opcode = (m[2] >> 3) & 0xf;
	if (qr != response || opcode != 0)
		return -1;
	q->id = get16(m);
	size_t at = DNS_HEADER, out = 0;
	for (;;) {
		if (at >= n)
			return -1;
		uint8_t len = m[at++];
		if (len == 0)
			break;
		if (len > 63 || at + len > n || out + len + 1 > SL_NAME_MAX + 1)
			return -1; /* also a compression pointer (0xc0): none in a question */
		if (out)
			q->name[out++] = '.';
		for (uint8_t i = 0; i < len; i++) {
			char c = (char)tolower(m[at + i]);
			if (c == '.' || c == '\0')
				return -1; /* a name the rules could not tell apart */
			q->name[out++] = c;
		}
		at += len;
	}
	q->name[out] = '\0';
	if (at + 4 > n)
		return -1;
	q->type = get16(m + at);
	q->cls = get16(m + at + 2);
	q->end = at + 4;
	return 0;
}

size_t dnsmsg_reply_empty(const uint8_t *m, const dns_question *q, int rcode, uint8_t *out,
			  size_t cap)
{
	if (q->end > cap)
		return 0;
	memcpy(out, m, q->end);
	out[2] = (uint8_t)(0x80 | (m[2] & 0x01)); /* QR, opcode QUERY, the query's RD */
	out[3] = (uint8_t)(0x80 | (rcode & 0xf)); /* RA */
	memset(out + 6, 0, 6);			  /* no answer, authority or additional */
	return q->end;
}

/* The offset past the (possibly compressed) name at AT, or 0 if it runs off the end. */
static size_t skip_name(const uint8_t *m, size_t n, size_t at)
{
	for (int labels = 0; labels < 128; labels++) {
		if (at >= n)
			return 0;
		uint8_t len = m[at];
		if (len == 0)
			return at + 1;
		if ((len & 0xc0) == 0xc0)
			return at + 2 <= n ? at + 2 : 0;
		if (len & 0xc0)
			return 0;
		at += 1 + (size_t)len;
	}
	return 0;
}

int dnsmsg_answers_a(const uint8_t *m, size_t n, dns_addr *out, size_t max)
{
	dns_question q;
	if (dnsmsg_question(m, n, true, &q) < 0)
		return -1;
	uint16_t an = get16(m + 6);
	size_t at = q.end;
	int got = 0;
	for (uint16_t i = 0; i < an; i++) {
		at = skip_name(m, n, at);
		if (!at || at + 10 > n)
			return -1;
		uint16_t type = get16(m + at), cls = get16(m + at + 2);
		uint32_t ttl = get32(m + at + 4);
		uint16_t rdlen = get16(m + at + 8);
		at += 10;
		if (at + rdlen > n)
			return -1;
		if (type == DNS_TYPE_A && cls == 1 && rdlen == 4 && (size_t)got < max) {
			out[got].addr = get32(m + at);
			out[got].ttl =
			    ttl > 0x7fffffff ? 0 : ttl; /* RFC 2181 8: top bit set is 0 */
			got++;
		}
		at += rdlen;
	}
	return got;
}

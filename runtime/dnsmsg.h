/* dnsmsg.h — the little of the DNS wire format (RFC 1035) the daemon's resolver needs:
 * a message's question, a refusal built from a query, and the A records of an answer.
 * Every input is a sandbox's or an upstream's bytes: bounds are checked everywhere. */
#ifndef SANDLOT_DNSMSG_H
#define SANDLOT_DNSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netname.h"

#define DNS_HEADER	   12
#define DNS_MAX_UDP	   4096 /* what the resolver reads or sends in one datagram */
#define DNS_TYPE_A	   1
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_REFUSED  5

typedef struct dns_question {
	uint16_t id;
	char name[SL_NAME_MAX + 2]; /* lowercase, dotted, no trailing dot ("" for the root) */
	uint16_t type, cls;
	size_t end; /* the offset just past the question */
} dns_question;

/* The single question of M (N bytes): a query (RESPONSE false: QR 0, opcode QUERY) or a
 * response (QR 1). -1 if M is not such a message or its name is malformed (compression
 * in a question, a label over 63 bytes, a name over 255, bytes past the end). */
int dnsmsg_question(const uint8_t *m, size_t n, bool response, dns_question *q);
/* A response to the query M (whose question Q parsed) with RCODE and no records, into OUT
 * (CAP bytes): its length, or 0 if it does not fit. */
size_t dnsmsg_reply_empty(const uint8_t *m, const dns_question *q, int rcode, uint8_t *out,
			  size_t cap);

typedef struct dns_addr {
	uint32_t addr; /* host byte order */
	uint32_t ttl;  /* seconds */
} dns_addr;
/* The A records (class IN) of M's answer section, at most MAX into OUT: how many, or -1
 * if the message is malformed up to the end of that section. */
int dnsmsg_answers_a(const uint8_t *m, size_t n, dns_addr *out, size_t max);

#endif

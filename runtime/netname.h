/* netname.h — domain names in egress rules (docs/network.md, "Domain rules"): telling a
 * name ("github.com", "*.github.com") from a CIDR, checking it, and the resolver's verdict
 * on a queried name. Pure: no I/O. */
#ifndef SANDLOT_NETNAME_H
#define SANDLOT_NETNAME_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "err.h"

#define SL_NAME_MAX 253 /* a name's text, without the trailing dot */

/* Does S look like a name rather than an address or CIDR (it has a character other than
 * digits, '.' and '/')? A name is then checked by netname_parse, a CIDR by cidr_parse. */
bool netname_is_name(const char *s);
/* A rule's name: "example.com" or "*.example.com" (any name under it, not itself), at
 * least two labels, each 1-63 of letters, digits, '-' and '_' (not leading or trailing
 * '-'), at most SL_NAME_MAX; the last label not all digits. Lowercased, a trailing dot
 * dropped, into OUT (SL_NAME_MAX + 1 bytes). FIELD names the input in the message. */
int netname_parse(const char *field, const char *s, char out[SL_NAME_MAX + 1], sl_err *err);
/* Does NAME (lowercase, no trailing dot) match RULE (as netname_parse leaves it)? */
bool netname_match(const char *rule, const char *name);

/* What the resolver does with a query for NAME from a sandbox with these allow and deny
 * lists (the record's arrays of normalised strings, CIDRs and names mixed). */
typedef enum netname_verdict {
	NETNAME_REFUSE,	 /* a deny name matches, or the allow list has names and none does */
	NETNAME_FORWARD, /* forward; the answer's addresses need not be admitted */
	NETNAME_ADMIT,	 /* forward, and admit the answer's IPv4 addresses for their TTL */
} netname_verdict;
netname_verdict netname_decide(const cJSON *allow, const cJSON *deny, const char *name);
/* Does the list hold a name? */
bool netname_any(const cJSON *list);

#endif

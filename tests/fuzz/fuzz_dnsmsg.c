/* fuzz_dnsmsg.c — the daemon's resolver reads sandboxes' queries and upstream answers
 * (runtime/dnsmsg.c) and checks domain rules (runtime/netname.c): none may read past
 * its input, and what they produce must hold together. */
#include "dnsmsg.h"
#include "fuzz.h"
#include "netname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dns_question q;
	uint8_t out[DNS_MAX_UDP];
	for (int resp = 0; resp < 2; resp++) {
		if (dnsmsg_question(data, size, resp, &q) < 0)
			continue;
		if (q.end > size || strlen(q.name) > SL_NAME_MAX)
			abort();
		size_t n = dnsmsg_reply_empty(data, &q, DNS_RCODE_REFUSED, out, sizeof(out));
		dns_question again;
		if (n && (dnsmsg_question(out, n, true, &again) < 0 || strcmp(again.name, q.name)))
			abort();
		/* a question's name, as a rule or a queried name */
		char rule[SL_NAME_MAX + 1];
		sl_err err = {0};
		if (netname_parse("f", q.name, rule, &err) == 0 && !netname_match(rule, q.name) &&
		    rule[0] != '*')
			abort();
	}
	dns_addr a[16];
	int k = dnsmsg_answers_a(data, size, a, 16);
	if (k > 16)
		abort();
	/* Lines as rules: one that parses is a name, and matches itself unless a wildcard. */
	fuzz_in in = {data, size};
	for (int i = 0; i < 8 && in.n; i++) {
		char *s = fuzz_line(&in), rule[SL_NAME_MAX + 1];
		sl_err err = {0};
		if (netname_parse("f", s, rule, &err) == 0) {
			if (!netname_is_name(rule) ||
			    (rule[0] != '*' && !netname_match(rule, rule)))
				abort();
		} else if (!err.msg[0]) {
			abort();
		}
		free(s);
	}
	return 0;
}

/* test_netname.c — domain egress rules' pure half: telling names from CIDRs, checking
 * and normalising them, matching (wildcards), the resolver's verdict, and the DNS
 * messages it reads and writes (dnsmsg.c). */
#include "dnsmsg.h"
#include "netname.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_names_parse(void **state)
{
	char out[SL_NAME_MAX + 1];
	sl_err err = {0};
	assert_true(netname_is_name("example.com"));
	assert_true(netname_is_name("*.a.b"));
	assert_false(netname_is_name("10.0.0.0/8"));
	assert_false(netname_is_name("1.2.3.4.5")); /* a bad address, not a name */
	assert_int_equal(netname_parse("f", "Api.GitHub.com.", out, &err), 0);
	assert_string_equal(out, "api.github.com");
	assert_int_equal(netname_parse("f", "*.svc.test", out, &err), 0);
	assert_string_equal(out, "*.svc.test");
	assert_int_equal(netname_parse("f", "_srv.x-y.example", out, &err), 0);
	const char *bad[] = {"com",    "*",	"*.",	 "a..b",    ".a.b",
			     "-a.b",   "a-.b",	"a b.c", "*.*.a.b", "a.*.b",
			     "a.b/24", "x.123", "a.b..", "é.com",   ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_err e = {0};
		if (netname_parse("network.allow[3]", bad[i], out, &e) == 0)
			fail_msg("\"%s\" parsed as %s", bad[i], out);
		assert_int_equal(e.kind, SL_INVALID);
		assert_non_null(strstr(e.msg, "network.allow[3]"));
	}
	char longer[300];
	memset(longer, 'a', sizeof(longer));
	for (int i = 60; i < 299; i += 61)
		longer[i] = '.';
	longer[299] = '\0';
	assert_int_equal(netname_parse("f", longer, out, &err), -1);
}

static void test_names_match(void **state)
{
	assert_true(netname_match("allowed.test", "allowed.test"));
	assert_false(netname_match("allowed.test", "a.allowed.test"));
	assert_true(netname_match("*.svc.test", "a.svc.test"));
	assert_true(netname_match("*.svc.test", "b.a.svc.test"));
	assert_false(netname_match("*.svc.test", "svc.test"));
	assert_false(netname_match("*.svc.test", "svc.test.evil"));
	assert_false(netname_match("*.svc.test", "evilsvc.test"));
}

static void test_names_decide(void **state)
{
	cJSON *allow = cJSON_Parse("[\"10.0.0.0/8\", \"allowed.test\", \"*.svc.test\"]");
	cJSON *deny = cJSON_Parse("[\"bad.svc.test\"]");
	cJSON *cidrs = cJSON_Parse("[\"10.0.0.0/8\"]");
	assert_int_equal(netname_decide(allow, deny, "allowed.test"), NETNAME_ADMIT);
	assert_int_equal(netname_decide(allow, deny, "a.svc.test"), NETNAME_ADMIT);
	assert_int_equal(netname_decide(allow, deny, "bad.svc.test"), NETNAME_REFUSE);
	assert_int_equal(netname_decide(allow, deny, "other.test"), NETNAME_REFUSE);
	assert_int_equal(netname_decide(cidrs, NULL, "other.test"), NETNAME_FORWARD);
	assert_int_equal(netname_decide(NULL, deny, "other.test"), NETNAME_FORWARD);
	assert_int_equal(netname_decide(NULL, deny, "bad.svc.test"), NETNAME_REFUSE);
	assert_true(netname_any(allow));
	assert_false(netname_any(cidrs));
	assert_false(netname_any(NULL));
	cJSON_Delete(allow), cJSON_Delete(deny), cJSON_Delete(cidrs);
}

/* A query for allowed.test, A, id 0x1234. */
static const uint8_t query[] = {0x12, 0x34, 0x01, 0x00, 0,   1,	  0,   0,   0,	 0,
				0,    0,    7,	  'A',	'l', 'l', 'o', 'w', 'e', 'd',
				4,    't',  'e',  's',	't', 0,	  0,   1,   0,	 1};

static void test_dnsmsg_question_and_refusal(void **state)
{
	dns_question q;
	assert_int_equal(dnsmsg_question(query, sizeof(query), false, &q), 0);
	assert_string_equal(q.name, "allowed.test");
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.type, DNS_TYPE_A);
	assert_int_equal(q.end, sizeof(query));
	assert_int_equal(dnsmsg_question(query, sizeof(query), true, &q), -1); /* not a response */
	uint8_t out[512];
	size_t n = dnsmsg_reply_empty(query, &q, DNS_RCODE_REFUSED, out, sizeof(out));
	assert_int_equal(n, sizeof(query));
	assert_int_equal(out[2] & 0x80, 0x80);
	assert_int_equal(out[3] & 0xf, DNS_RCODE_REFUSED);
	assert_int_equal(dnsmsg_question(out, n, true, &q), 0);
	/* Truncated anywhere: refused, never read past the end. */
	for (size_t len = 0; len < sizeof(query); len++)
		assert_int_equal(dnsmsg_question(query, len, false, &q), -1);
	uint8_t ptr[sizeof(query)];
	memcpy(ptr, query, sizeof(query));
	ptr[12] = 0xc0; /* compression in a question */
	assert_int_equal(dnsmsg_question(ptr, sizeof(ptr), false, &q), -1);
	ptr[12] = 7;
	ptr[14] = '.'; /* a dot inside a label would fool the rules */
	assert_int_equal(dnsmsg_question(ptr, sizeof(ptr), false, &q), -1);
}

static void test_dnsmsg_answers(void **state)
{
	uint8_t m[128];
	memcpy(m, query, sizeof(query));
	m[2] = 0x81, m[3] = 0x80;
	m[7] = 3; /* three answers: a CNAME, then two A records by compressed names */
	size_t n = sizeof(query);
	const uint8_t cname[] = {0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 30, 0, 4, 1, 'x', 0xc0, 12};
	const uint8_t a1[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 198, 19, 53, 10};
	const uint8_t a2[] = {0xc0, 12, 0, 1, 0, 1, 0x80, 0, 0, 0, 0, 4, 198, 19, 53, 11};
	memcpy(m + n, cname, sizeof(cname)), n += sizeof(cname);
	memcpy(m + n, a1, sizeof(a1)), n += sizeof(a1);
	memcpy(m + n, a2, sizeof(a2)), n += sizeof(a2);
	dns_addr a[4];
	assert_int_equal(dnsmsg_answers_a(m, n, a, 4), 2);
	assert_int_equal(a[0].addr, 0xc613350a);
	assert_int_equal(a[0].ttl, 256);
	assert_int_equal(a[1].ttl, 0); /* the top bit set: 0 (RFC 2181) */
	assert_int_equal(dnsmsg_answers_a(m, n, a, 1), 1);
	for (size_t len = sizeof(query); len < n; len++)
		assert_int_equal(dnsmsg_answers_a(m, len, a, 4), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_parse),
	    cmocka_unit_test(test_names_match),
	    cmocka_unit_test(test_names_decide),
	    cmocka_unit_test(test_dnsmsg_question_and_refusal),
	    cmocka_unit_test(test_dnsmsg_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

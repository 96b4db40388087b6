/* test_netaddr.c — the pure half of networking: CIDR parsing and normalising, overlap,
 * choosing a subnet no host network uses, and the lease allocator's next address. */
#include "netaddr.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static sl_cidr C(const char *s)
{
	sl_cidr c;
	sl_err err = {0};
	assert_int_equal(cidr_parse("t", s, &c, &err), 0);
	return c;
}

static void test_cidr_parse_forms(void **state)
{
	char buf[24];
	sl_cidr c = C("10.1.2.3");
	cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "10.1.2.3/32");
	c = C("10.1.2.3/16"); /* host bits cleared */
	cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "10.1.0.0/16");
	c = C("0.0.0.0/0");
	assert_int_equal(c.prefix, 0);
	assert_int_equal(c.addr, 0);
	c = C("203.0.113.255/24");
	cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "203.0.113.0/24");
}

static void test_cidr_parse_rejects(void **state)
{
	static const char *const bad[] = {
	    "",		 "10.0.0.0/33", "10.0.0/8",  "10.0.0.0/",    "10.0.0.0/-1", "10.0.0.0/8x",
	    "256.0.0.1", "::1/128",	"010.0.0.1", "10.0.0.0/008", "a.b.c.d",	    "10.0.0.0 /8",
	    NULL};
	for (int i = 0; bad[i]; i++) {
		sl_cidr c;
		sl_err err = {0};
		assert_int_equal(cidr_parse("network.allow[0]", bad[i], &c, &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
		assert_non_null(strstr(err.msg, "network.allow[0]"));
	}
	sl_err err = {0};
	sl_cidr c;
	assert_int_equal(cidr_parse("f", NULL, &c, &err), -1);
}

static void test_overlap_and_contains(void **state)
{
	sl_cidr a = C("10.213.0.0/16"), b = C("10.213.5.0/24"), d = C("10.214.0.0/16");
	assert_true(cidr_overlaps(&a, &b));
	assert_true(cidr_overlaps(&b, &a));
	assert_false(cidr_overlaps(&a, &d));
	sl_cidr all = C("0.0.0.0/0");
	assert_true(cidr_overlaps(&all, &d));
	uint32_t x;
	assert_true(ipv4_parse("10.213.255.254", &x));
	assert_true(cidr_contains(&a, x));
	assert_false(cidr_contains(&d, x));
}

static void test_subnet_pick_avoids_host_networks(void **state)
{
	/* Nothing in use: the first candidate. */
	assert_int_equal(subnet_pick(net_subnet_candidates, net_subnet_ncandidates, NULL, 0), 0);
	/* The host has 10.213.7.0/24 and an address in 10.214: the third candidate. */
	sl_cidr used[] = {C("10.213.7.0/24"), C("10.214.1.1/32"), C("192.0.2.0/24")};
	int i = subnet_pick(net_subnet_candidates, net_subnet_ncandidates, used, 3);
	assert_int_equal(i, 2);
	char buf[24];
	cidr_format(&net_subnet_candidates[i], buf, sizeof(buf));
	assert_string_equal(buf, "10.215.0.0/16");
	/* A route covering every candidate (10/8 and 172.16/12): none. */
	sl_cidr wide[] = {C("10.0.0.0/8"), C("172.16.0.0/12")};
	assert_int_equal(subnet_pick(net_subnet_candidates, net_subnet_ncandidates, wide, 2), -1);
	/* A default route (prefix 0) is no collision. */
	sl_cidr def[] = {C("0.0.0.0/0")};
	assert_int_equal(subnet_pick(net_subnet_candidates, net_subnet_ncandidates, def, 1), 0);
}

static void test_lease_pick_lowest_free(void **state)
{
	sl_cidr s = C("10.213.0.0/16");
	uint32_t a, gw = subnet_gateway(&s);
	char buf[16];
	ipv4_format(gw, buf, sizeof(buf));
	assert_string_equal(buf, "10.213.0.1");
	assert_int_equal(lease_pick(&s, NULL, 0, &a), 0);
	ipv4_format(a, buf, sizeof(buf));
	assert_string_equal(buf, "10.213.0.2");
	/* Taken in any order, with a hole at .4: the hole. */
	uint32_t taken[4];
	const char *t[] = {"10.213.0.5", "10.213.0.2", "10.213.0.3", "10.213.0.6"};
	for (int i = 0; i < 4; i++)
		assert_true(ipv4_parse(t[i], &taken[i]));
	assert_int_equal(lease_pick(&s, taken, 4, &a), 0);
	ipv4_format(a, buf, sizeof(buf));
	assert_string_equal(buf, "10.213.0.4");
}

static void test_lease_pick_distinct_and_full(void **state)
{
	/* Handing out one after another gives distinct addresses until the subnet is full:
	 * a /29 has 8 addresses, minus network, gateway, broadcast = 5. */
	sl_cidr s = C("10.9.9.8/29");
	uint32_t taken[8];
	size_t n = 0;
	uint32_t a;
	while (lease_pick(&s, taken, n, &a) == 0) {
		for (size_t i = 0; i < n; i++)
			assert_int_not_equal(taken[i], a);
		assert_true(cidr_contains(&s, a));
		assert_int_not_equal(a, s.addr);
		assert_int_not_equal(a, subnet_gateway(&s));
		assert_int_not_equal(a, s.addr | 7);
		taken[n++] = a;
		assert_true(n <= 5);
	}
	assert_int_equal(n, 5);
	/* Released in the middle: that one comes back first. */
	taken[2] = taken[--n];
	uint32_t back;
	assert_int_equal(lease_pick(&s, taken, n, &back), 0);
	assert_true(ipv4_parse("10.9.9.12", &a));
	assert_int_equal(back, a);
	/* Addresses outside the subnet in the taken list change nothing. */
	uint32_t other;
	assert_true(ipv4_parse("10.9.9.99", &other));
	sl_cidr s2 = C("10.9.9.8/29");
	assert_int_equal(lease_pick(&s2, &other, 1, &a), 0);
	assert_true(ipv4_parse("10.9.9.10", &other));
	assert_int_equal(a, other);
	/* Too small for any sandbox. */
	sl_cidr tiny = C("10.9.9.8/31");
	assert_int_equal(lease_pick(&tiny, NULL, 0, &a), -1);
}

/* An allow rule opens a private range only when it lies inside one: 0.0.0.0/0 does not. */
static void test_private_named(void **state)
{
	sl_cidr a = C("10.1.2.0/24"), b = C("0.0.0.0/0"), c = C("10.0.0.0/7"), d = C("198.18.0.1");
	sl_cidr e = C("192.168.0.0/16"), f = C("100.64.0.1");
	assert_true(net_private_named(&a));
	assert_false(net_private_named(&b));
	assert_false(net_private_named(&c));
	assert_false(net_private_named(&d));
	assert_true(net_private_named(&e));
	assert_true(net_private_named(&f));
}

static void test_private_list_parse(void **state)
{
	sl_cidr out[4];
	sl_err err = {0};
	assert_int_equal(
	    net_private_list_parse("--allow-private", "10.9.0.0/16, 192.168.7.3", out, 4, &err), 2);
	char buf[24];
	cidr_format(&out[1], buf, sizeof(buf));
	assert_string_equal(buf, "192.168.7.3/32");
	assert_int_equal(net_private_list_parse("--allow-private", "", out, 4, &err), 0);
	assert_int_equal(net_private_list_parse("--allow-private", "10.0.0.0/33", out, 4, &err),
			 -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "--allow-private[0]"));
	assert_int_equal(net_private_list_parse("x", "10.1.0.0/16,8.8.8.0/24", out, 4, &err), -1);
	assert_non_null(strstr(err.msg, "not inside a private range"));
	assert_int_equal(net_private_list_parse("x", "169.254.169.254", out, 4, &err), -1);
	assert_non_null(strstr(err.msg, "link-local"));
	assert_int_equal(net_private_list_parse("x", "10.1.0.0/16 10.2.0.0/16", out, 1, &err), -1);
	assert_non_null(strstr(err.msg, "at most 1 ranges"));
	assert_int_equal(net_private_list_parse("x", "10.1.0.0/16 10.2.0.0/16", NULL, 1, &err), -1);
	assert_int_equal(net_private_list_parse("x", "10.1.0.0/16 10.2.0.0/16", NULL, 2, &err), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cidr_parse_forms),
	    cmocka_unit_test(test_cidr_parse_rejects),
	    cmocka_unit_test(test_overlap_and_contains),
	    cmocka_unit_test(test_subnet_pick_avoids_host_networks),
	    cmocka_unit_test(test_lease_pick_lowest_free),
	    cmocka_unit_test(test_lease_pick_distinct_and_full),
	    cmocka_unit_test(test_private_named),
	    cmocka_unit_test(test_private_list_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

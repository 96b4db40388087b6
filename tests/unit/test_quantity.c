/* test_quantity.c — Kubernetes quantities and durations: every accepted form, the
 * rejected ones, rounding, overflow, and messages that name the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "quantity.h"

static uint64_t cpu_ok(const char *s)
{
	uint64_t v = 0;
	sl_err err = {0};
	int rc = quantity_parse_cpu("resources.cpu", s, &v, &err);
	if (rc != 0)
		fail_msg("cpu %s rejected: %s", s, err.msg);
	return v;
}

static void cpu_bad(const char *s, const char *needle)
{
	uint64_t v = 12345;
	sl_err err = {0};
	int rc = quantity_parse_cpu("resources.cpu", s, &v, &err);
	if (rc != -1)
		fail_msg("cpu \"%s\" accepted as %llu", s, (unsigned long long)v);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "resources.cpu: "));
	if (needle && !strstr(err.msg, needle))
		fail_msg("cpu \"%s\": message \"%s\" lacks \"%s\"", s, err.msg, needle);
}

static uint64_t bytes_ok(const char *s)
{
	uint64_t v = 0;
	sl_err err = {0};
	if (quantity_parse_bytes("resources.memory", s, &v, &err) != 0)
		fail_msg("bytes %s rejected: %s", s, err.msg);
	return v;
}

static void bytes_bad(const char *s, const char *needle)
{
	uint64_t v = 12345;
	sl_err err = {0};
	if (quantity_parse_bytes("resources.memory", s, &v, &err) != -1)
		fail_msg("bytes \"%s\" accepted as %llu", s, (unsigned long long)v);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "resources.memory: "));
	if (needle && !strstr(err.msg, needle))
		fail_msg("bytes \"%s\": message \"%s\" lacks \"%s\"", s, err.msg, needle);
}

static uint64_t dur_ok(const char *s)
{
	uint64_t v = 0;
	sl_err err = {0};
	if (duration_parse("timeout", s, &v, &err) != 0)
		fail_msg("duration %s rejected: %s", s, err.msg);
	return v;
}

static void dur_bad(const char *s, const char *needle)
{
	uint64_t v = 12345;
	sl_err err = {0};
	if (duration_parse("timeout", s, &v, &err) != -1)
		fail_msg("duration \"%s\" accepted as %llu", s, (unsigned long long)v);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "timeout: "));
	if (needle && !strstr(err.msg, needle))
		fail_msg("duration \"%s\": message \"%s\" lacks \"%s\"", s, err.msg, needle);
}

static void test_cpu_forms(void **state)
{
	assert_int_equal(cpu_ok("500m"), 500);
	assert_int_equal(cpu_ok("100m"), 100);
	assert_int_equal(cpu_ok("1m"), 1);
	assert_int_equal(cpu_ok("0.5"), 500);
	assert_int_equal(cpu_ok("2"), 2000);
	assert_int_equal(cpu_ok("1.5"), 1500);
	assert_int_equal(cpu_ok("0.001"), 1);
	assert_int_equal(cpu_ok("1e0"), 1000);
	assert_int_equal(cpu_ok("1E0"), 1000);
	assert_int_equal(cpu_ok("5e-1"), 500);
	assert_int_equal(cpu_ok("2e3"), 2000000);
	assert_int_equal(cpu_ok("+1"), 1000);
	assert_int_equal(cpu_ok(".25"), 250);
	assert_int_equal(cpu_ok("1.0000000"), 1000);
	assert_int_equal(cpu_ok("0002"), 2000);
	assert_int_equal(cpu_ok("1500m"), 1500);
}

static void test_cpu_rejects(void **state)
{
	cpu_bad("abc", "\"abc\" is not a CPU quantity (use \"500m\", \"0.5\" or \"2\")");
	cpu_bad("", "empty");
	cpu_bad(NULL, "empty");
	cpu_bad("-1", "negative");
	cpu_bad("-500m", "negative");
	cpu_bad("0", "greater than zero");
	cpu_bad("0m", "greater than zero");
	cpu_bad("0.0", "greater than zero");
	cpu_bad("1.0001", "finer than");
	cpu_bad("0.0005", "finer than");
	cpu_bad("1e-4", "finer than");
	cpu_bad("1 ", "not a CPU quantity");
	cpu_bad(" 1", "not a CPU quantity");
	cpu_bad("1Mi", "not a CPU quantity");
	cpu_bad("1k", "not a CPU quantity");
	cpu_bad("1e0m", "not a CPU quantity");
	cpu_bad("1e", "not a CPU quantity");
	cpu_bad(".", "not a CPU quantity");
	cpu_bad("1.2.3", "not a CPU quantity");
	cpu_bad("1mm", "not a CPU quantity");
	cpu_bad("99999999999999999999", "too large");
	cpu_bad("1e30", "too large");
	cpu_bad("9223372036854775808m", "too large");
	/* the largest accepted value is INT64_MAX millicores */
	assert_int_equal(cpu_ok("9223372036854775807m"), INT64_MAX);
}

static void test_bytes_forms(void **state)
{
	assert_int_equal(bytes_ok("1000"), 1000);
	assert_int_equal(bytes_ok("1"), 1);
	assert_int_equal(bytes_ok("1k"), 1000);
	assert_int_equal(bytes_ok("1M"), 1000000);
	assert_int_equal(bytes_ok("1G"), 1000000000ULL);
	assert_int_equal(bytes_ok("1T"), 1000000000000ULL);
	assert_int_equal(bytes_ok("1P"), 1000000000000000ULL);
	assert_int_equal(bytes_ok("1E"), 1000000000000000000ULL);
	assert_int_equal(bytes_ok("1Ki"), 1024);
	assert_int_equal(bytes_ok("64Mi"), 64ULL << 20);
	assert_int_equal(bytes_ok("512Mi"), 512ULL << 20);
	assert_int_equal(bytes_ok("1Gi"), 1ULL << 30);
	assert_int_equal(bytes_ok("1Ti"), 1ULL << 40);
	assert_int_equal(bytes_ok("1Pi"), 1ULL << 50);
	assert_int_equal(bytes_ok("7Ei"), 7ULL << 60);
	assert_int_equal(bytes_ok("1e9"), 1000000000ULL);
	assert_int_equal(bytes_ok("1E3"), 1000);
	assert_int_equal(bytes_ok("1E+3"), 1000);
	assert_int_equal(bytes_ok("15e-1"), 2); /* 1.5 bytes rounds up */
	assert_int_equal(bytes_ok("1.5Gi"), 3ULL << 29);
	assert_int_equal(bytes_ok("0.5Mi"), 1ULL << 19);
	assert_int_equal(bytes_ok("0.1Ki"), 103);	/* 102.4 rounds up */
	assert_int_equal(bytes_ok("0.1Gi"), 107374183); /* 107374182.4 */
	assert_int_equal(bytes_ok("1.5k"), 1500);
	assert_int_equal(bytes_ok("0.0001"), 1);
	assert_int_equal(bytes_ok("9223372036854775807"), INT64_MAX);
	assert_int_equal(bytes_ok("128974848"), 128974848);
	assert_int_equal(bytes_ok("129e6"), 129000000);
}

static void test_bytes_rejects(void **state)
{
	bytes_bad("abc", "\"abc\" is not a byte quantity");
	bytes_bad("", "empty");
	bytes_bad("-1", "negative");
	bytes_bad("-1Gi", "negative");
	bytes_bad("0", "greater than zero");
	bytes_bad("0Mi", "greater than zero");
	bytes_bad("1m", "milli-bytes; use \"1Mi\" (mebibytes) or \"1M\" (megabytes)");
	bytes_bad("64MB", "use \"64Mi\" (binary, 2^20) or \"64M\" (decimal, 10^6)");
	bytes_bad("1GB", "\"1Gi\"");
	bytes_bad("2KB", "\"2Ki\" (binary, 2^10) or \"2k\" (decimal, 10^3)");
	bytes_bad("1K", "\"1Ki\"");
	bytes_bad("1MiB", "\"1Mi\"");
	bytes_bad("9223372036854775808", "too large");
	bytes_bad("18446744073709551616", "too large");
	bytes_bad("8Ei", "too large");
	bytes_bad("16E", "too large");
	bytes_bad("1e19", "too large");
	bytes_bad("1e99999999999", "too large");
	bytes_bad("1 ", "not a byte quantity");
	bytes_bad("1Mi ", NULL);
	bytes_bad("1e3Mi", "exponent");
	bytes_bad("1x", "not a byte quantity");
	bytes_bad("Mi", "not a byte quantity");
	bytes_bad("1.2.3Mi", NULL);
	bytes_bad("0.50000000000000000000001Mi", "too many digits");
}

static void test_field_named_and_quoted(void **state)
{
	uint64_t v;
	sl_err err = {0};
	assert_int_equal(quantity_parse_bytes("limits.disk", "\x01zz", &v, &err), -1);
	assert_non_null(strstr(err.msg, "limits.disk: \"\\x01zz\""));
	char long_in[300];
	memset(long_in, 'z', sizeof(long_in) - 1);
	long_in[sizeof(long_in) - 1] = '\0';
	assert_int_equal(quantity_parse_cpu("x.cpu", long_in, &v, &err), -1);
	assert_true(strlen(err.msg) < 200); /* long input is cut, not copied whole */
	assert_non_null(strstr(err.msg, "...\""));
}

static void test_duration(void **state)
{
	assert_int_equal(dur_ok("500ms"), 500);
	assert_int_equal(dur_ok("30s"), 30000);
	assert_int_equal(dur_ok("5m"), 300000);
	assert_int_equal(dur_ok("1h"), 3600000);
	assert_int_equal(dur_ok("1h30m"), 5400000);
	assert_int_equal(dur_ok("1m30s500ms"), 90500);
	assert_int_equal(dur_ok("1.5s"), 1500);
	assert_int_equal(dur_ok("0.5h"), 1800000);
	assert_int_equal(dur_ok("250"), 250);
	assert_int_equal(dur_ok("0"), 0);
	assert_int_equal(dur_ok("0s"), 0);
	assert_int_equal(dur_ok("1500us"), 2); /* 1.5 ms rounds up */
	assert_int_equal(dur_ok("1000000ns"), 1);
	assert_int_equal(dur_ok("1ns"), 1);
	assert_int_equal(dur_ok("2\xc2\xb5s"), 1);
	assert_int_equal(dur_ok("9223372036854775807"), INT64_MAX);
	dur_bad("", "empty");
	dur_bad("-1s", "negative");
	dur_bad("-5", "negative");
	dur_bad("abc", "not a duration");
	dur_bad("1.5", "not a duration");
	dur_bad("5min", "not a duration");
	dur_bad("1d", "not a duration");
	dur_bad("s", "not a duration");
	dur_bad("1h ", "not a duration");
	dur_bad("1h-30m", "not a duration");
	dur_bad("9223372036854775808", "too long");
	dur_bad("99999999999999999999999", "too long");
	dur_bad("9999999999999999h", "too long");
	dur_bad("9223372036854775807ms1ms", "too long");
}

static void test_format(void **state)
{
	char buf[32];
	assert_int_equal(quantity_format_bytes(512ULL << 20, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "512Mi");
	assert_int_equal(quantity_format_bytes(1ULL << 30, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1Gi");
	assert_int_equal(quantity_format_bytes(1536ULL << 20, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1536Mi");
	assert_int_equal(quantity_format_bytes(1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1000");
	assert_int_equal(quantity_format_bytes(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0");
	assert_int_equal(quantity_format_bytes(7ULL << 60, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "7Ei");
	assert_int_equal(quantity_format_cpu(500, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "500m");
	assert_int_equal(quantity_format_cpu(2000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2");
	assert_int_equal(quantity_format_cpu(1500, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1500m");
	assert_int_equal(quantity_format_bytes(512ULL << 20, buf, 5), -1);
	assert_int_equal(quantity_format_cpu(500, buf, 4), -1);
	/* formatting then parsing gives the same value back */
	uint64_t samples[] = {1, 1023, 1024, 3ULL << 29, 123456789, INT64_MAX, 1ULL << 62};
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		assert_int_equal(quantity_format_bytes(samples[i], buf, sizeof(buf)), 0);
		assert_int_equal(bytes_ok(buf), samples[i]);
		assert_int_equal(quantity_format_cpu(samples[i], buf, sizeof(buf)), 0);
		assert_int_equal(cpu_ok(buf), samples[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpu_forms),
	    cmocka_unit_test(test_cpu_rejects),
	    cmocka_unit_test(test_bytes_forms),
	    cmocka_unit_test(test_bytes_rejects),
	    cmocka_unit_test(test_field_named_and_quoted),
	    cmocka_unit_test(test_duration),
	    cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

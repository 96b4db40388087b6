/* test_clock.c — sl_iso_time's own calendar against the C library's gmtime_r, over
 * leap days, century rules, the epoch, times before it and far ahead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"

static void check(int64_t ms)
{
	char got[64], want[64];
	sl_iso_time(ms, got, sizeof(got));
	int64_t s = ms / 1000, r = ms % 1000;
	if (r < 0) {
		r += 1000;
		s--;
	}
	time_t t = (time_t)s;
	struct tm tm;
	assert_non_null(gmtime_r(&t, &tm));
	snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)r);
	if (strcmp(got, want) != 0)
		fail_msg("%lld ms: got %s, want %s", (long long)ms, got, want);
}

static void known_instants(void **state)
{
	(void)state;
	char b[64];
	sl_iso_time(0, b, sizeof(b));
	assert_string_equal(b, "1970-01-01T00:00:00.000Z");
	sl_iso_time(951782400000LL + 123, b, sizeof(b)); /* 2000 is a leap year */
	assert_string_equal(b, "2000-02-29T00:00:00.123Z");
	sl_iso_time(4107542399999LL, b, sizeof(b)); /* 2100 is not */
	assert_string_equal(b, "2100-02-28T23:59:59.999Z");
	sl_iso_time(-1, b, sizeof(b));
	assert_string_equal(b, "1969-12-31T23:59:59.999Z");
}

static void agrees_with_gmtime(void **state)
{
	(void)state;
	/* Every day boundary (and a second either side) from 1900 to 2200, then a
	 * scatter of odd instants. */
	for (int64_t day = -25567; day <= 84006; day++) {
		int64_t ms = day * 86400000LL;
		check(ms);
		check(ms - 1);
		check(ms + 86399999);
	}
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		check((int64_t)(x % 7258118400000ull)); /* 1970..2200 */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_instants),
		cmocka_unit_test(agrees_with_gmtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

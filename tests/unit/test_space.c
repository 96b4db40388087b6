/* test_space.c — the free-space floor: "1Gi" / "5%" / "0" parsed and formatted, and
 * checked against a real filesystem (the one /tmp is on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "space.h"

static void test_parse(void **state)
{
	sl_space_floor f;
	sl_err err = {0};
	char buf[32];
	assert_int_equal(space_floor_parse("--min-free", "1Gi", &f, &err), 0);
	assert_int_equal(f.bytes, 1ULL << 30);
	assert_int_equal(f.percent, 0);
	space_floor_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "1Gi");
	assert_int_equal(space_floor_parse("--min-free", "5%", &f, &err), 0);
	assert_int_equal(f.percent, 5);
	assert_int_equal(f.bytes, 0);
	space_floor_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "5%");
	assert_int_equal(space_floor_parse("--min-free", "0", &f, &err), 0);
	assert_int_equal(f.bytes, 0);
	assert_int_equal(f.percent, 0);
	const char *bad[] = {"0%", "100%", "%", "-1%", "5 %", "1.5%", "abc", "", "-1Gi"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_err_clear(&err);
		if (space_floor_parse("--min-free", bad[i], &f, &err) == 0)
			fail_msg("\"%s\" parsed", bad[i]);
		assert_int_equal(err.kind, SL_INVALID);
		assert_non_null(strstr(err.msg, "--min-free"));
	}
}

static void test_check(void **state)
{
	sl_err err = {0};
	sl_space_floor none = {0}, low = {.bytes = 1}, high = {.bytes = 1ULL << 60};
	assert_int_equal(space_check("/tmp", NULL, "tmp", &err), 0);
	assert_int_equal(space_check("/tmp", &none, "tmp", &err), 0);
	assert_int_equal(space_check("/tmp", &low, "tmp", &err), 0);
	assert_int_equal(space_check("/tmp", &high, "the test's /tmp", &err), -1);
	assert_int_equal(err.kind, SL_NOSPACE);
	assert_non_null(strstr(err.msg, "the test's /tmp has"));
	assert_non_null(strstr(err.msg, "below the floor of 1Ei"));
	/* Room for a whole disk above the floor. */
	sl_err_clear(&err);
	assert_int_equal(space_check_room("/tmp", &low, 4096, "disk", "tmp", &err), 0);
	assert_int_equal(space_check_room("/tmp", &low, 1ULL << 60, "disk", "tmp", &err), -1);
	assert_int_equal(err.kind, SL_NOSPACE);
	assert_non_null(strstr(err.msg, "disk 1Ei: tmp has only"));
	sl_err_clear(&err);
	assert_int_equal(space_check("/nonexistent-sl", &low, "x", &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

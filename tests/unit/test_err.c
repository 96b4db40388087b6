/* test_err.c — the error value's wrapping at boundaries (runtime/err.c): a failure deep in
 * a launch or a talk with init reaches the client naming the sandbox and the step, once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"

static void test_wrap_names_the_object_once(void **state)
{
	sl_err err = {0};
	sl_fail(&err, SL_INTERNAL, 24, "pipe");
	assert_int_equal(sl_wrap_obj(&err, "sandbox", "sbx_abc", "launch its init"), -1);
	assert_non_null(strstr(err.msg, "sandbox sbx_abc: launch its init: pipe"));
	assert_int_equal(err.kind, SL_INTERNAL);
	assert_int_equal(err.errnum, 24);
	/* A message that names the sandbox already is left as it is. */
	char before[sizeof(err.msg)];
	memcpy(before, err.msg, sizeof(before));
	sl_wrap_obj(&err, "sandbox", "sbx_abc", "start a command");
	assert_string_equal(err.msg, before);
	/* The kind is kept; an error with none becomes INTERNAL rather than success. */
	sl_err e2 = {0};
	sl_fail(&e2, SL_TIMEOUT, 0, "its init did not answer");
	sl_wrap_obj(&e2, "sandbox", "sbx_x", "signal a command");
	assert_int_equal(e2.kind, SL_TIMEOUT);
	sl_err e3 = {0};
	sl_wrap_obj(&e3, "sandbox", "sbx_y", "launch its init");
	assert_int_equal(e3.kind, SL_INTERNAL);
	assert_non_null(strstr(e3.msg, "sbx_y"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wrap_names_the_object_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

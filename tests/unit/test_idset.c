/* test_idset.c — the bounded id set: membership after adds and deletes, the run a
 * deletion cuts (entries shifted back stay findable), a set whose ids come and go forever
 * never fills, and a full one refuses instead of looping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "idset.h"

static void id_of(int k, char buf[32])
{
	snprintf(buf, 32, "sbx_%020d", k);
}

static void add_has_del(void **state)
{
	(void)state;
	sl_idset s = SL_IDSET_INIT(64);
	char a[32], b[32];
	id_of(1, a);
	id_of(2, b);
	assert_false(idset_has(&s, a));
	assert_true(idset_add(&s, a));
	assert_true(idset_add(&s, a)); /* once */
	assert_int_equal(idset_count(&s), 1);
	assert_true(idset_has(&s, a));
	assert_false(idset_has(&s, b));
	idset_del(&s, b); /* not there: nothing happens */
	assert_int_equal(idset_count(&s), 1);
	idset_del(&s, a);
	assert_false(idset_has(&s, a));
	assert_int_equal(idset_count(&s), 0);
	/* Too long for a slot: never remembered, never found. */
	assert_false(idset_add(&s, "sbx_waytoolongtobeanidofasandboxatall"));
	assert_false(idset_has(&s, "sbx_waytoolongtobeanidofasandboxatall"));
	free(s.ids);
}

/* Ids come and go (a sliding window of 20 live ones) far past the capacity; every live
 * one stays findable after each delete, every deleted one is gone. A deletion that left
 * a hole in a probe run without shifting would lose the entries after it. */
static void churn_never_fills(void **state)
{
	(void)state;
	sl_idset s = SL_IDSET_INIT(64);
	char id[32];
	for (int k = 0; k < 5000; k++) {
		id_of(k, id);
		assert_true(idset_add(&s, id));
		if (k >= 20) {
			id_of(k - 20, id);
			idset_del(&s, id);
			assert_false(idset_has(&s, id));
		}
		assert_true(idset_count(&s) <= 21);
		for (int j = k >= 20 ? k - 19 : 0; j <= k; j++) {
			id_of(j, id);
			if (!idset_has(&s, id))
				fail_msg("id %d lost after %d adds", j, k + 1);
		}
	}
	free(s.ids);
}

/* A set at half its slots refuses more (lookups of absent ids still end), until cleared. */
static void full_refuses_then_clears(void **state)
{
	(void)state;
	sl_idset s = SL_IDSET_INIT(32);
	char id[32];
	for (int k = 0; k < 16; k++) {
		id_of(k, id);
		assert_true(idset_add(&s, id));
	}
	id_of(100, id);
	assert_false(idset_add(&s, id));
	assert_false(idset_has(&s, id));
	assert_int_equal(idset_count(&s), 16);
	idset_clear(&s);
	assert_int_equal(idset_count(&s), 0);
	id_of(3, id);
	assert_false(idset_has(&s, id));
	assert_true(idset_add(&s, id));
	free(s.ids);
}

/* The table is as big as what it holds, not its cap: 1,000 ids in a set of 65,536 slots
 * take at most 4,096 (it was allocated whole, and its pages touched as ids landed: the
 * daemon grew by ~1 MiB per thousand sandboxes). Every id stays findable across each
 * doubling; a clear gives the memory back. */
static void grows_with_what_it_holds(void **state)
{
	(void)state;
	sl_idset s = SL_IDSET_INIT(65536);
	char id[32];
	for (int k = 0; k < 1000; k++) {
		id_of(k, id);
		assert_true(idset_add(&s, id));
		assert_true(s.size <= 4096 && s.n <= s.size / 2);
	}
	assert_int_equal(s.size, 2048);
	for (int k = 0; k < 1000; k++) {
		id_of(k, id);
		if (!idset_has(&s, id))
			fail_msg("id %d lost across the doublings", k);
	}
	id_of(5000, id);
	assert_false(idset_has(&s, id));
	idset_clear(&s);
	assert_null(s.ids);
	assert_int_equal(s.size, 0);
	assert_true(idset_add(&s, id));
	assert_int_equal(s.size, 64);
	free(s.ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(add_has_del),
	    cmocka_unit_test(churn_never_fills),
	    cmocka_unit_test(full_refuses_then_clears),
	    cmocka_unit_test(grows_with_what_it_holds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

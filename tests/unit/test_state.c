/* test_state.c — record writes: durable, durable later or not, the new content replaces
 * the old in one step and no temporary file is left beside it; state_sync makes a record
 * durable later and says when there is none; state_mkdirs makes every missing level. */
#include "state.h"
#include "fsutil.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char base[64];

static int setup(void **state)
{
	strcpy(base, "/tmp/sl_test_state_XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	sl_err err;
	return fs_remove_tree(base, &err);
}

static char *slurp(const char *path)
{
	char *s = NULL;
	sl_err err = { 0 };
	assert_int_equal(state_read_file(path, 1 << 20, &s, NULL, &err), 0);
	return s;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_write_replaces(void **state)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/rec.json", base);
	sl_err err = { 0 };
	/* first write (no file to exchange with), then replacements both ways */
	assert_int_equal(state_write_atomic_nosync(p, "one", 3, &err), 0);
	char *s = slurp(p);
	assert_string_equal(s, "one");
	free(s);
	assert_int_equal(state_write_atomic_nosync(p, "two!", 4, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "two!");
	free(s);
	assert_int_equal(state_write_atomic(p, "three", 5, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "three");
	free(s);
	assert_int_equal(state_write_atomic_nosync(p, "4", 1, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "4");
	free(s);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(entries(base), 1); /* no temporary left */
	/* a write into a missing directory fails and says where */
	char q[160];
	snprintf(q, sizeof(q), "%s/nodir/rec.json", base);
	assert_int_equal(state_write_atomic_nosync(q, "x", 1, &err), -1);
	assert_non_null(strstr(err.msg, "nodir"));
}

static void test_write_soon_then_sync(void **state)
{
	char p[128], q[160];
	snprintf(p, sizeof(p), "%s/rec.json", base);
	sl_err err = { 0 };
	assert_int_equal(state_write_atomic_soon(p, "five", 4, &err), 0);
	char *s = slurp(p);
	assert_string_equal(s, "five");
	free(s);
	assert_int_equal(state_write_atomic(p, "six", 3, &err), 0);
	assert_int_equal(state_write_atomic_soon(p, "seven", 5, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "seven"); /* visible before any sync */
	free(s);
	assert_int_equal(entries(base), 1);
	assert_int_equal(state_sync(p, &err), 0);
	s = slurp(p);
	assert_string_equal(s, "seven");
	free(s);
	/* nothing to sync: not found, and it says which */
	snprintf(q, sizeof(q), "%s/gone.json", base);
	assert_int_equal(state_sync(q, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_non_null(strstr(err.msg, "gone.json"));
	/* a symlink where the record was is not followed */
	sl_err_clear(&err);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(state_sync(q, &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	snprintf(q, sizeof(q), "%s/nodir/rec.json", base);
	assert_int_equal(state_write_atomic_soon(q, "x", 1, &err), -1);
	assert_non_null(strstr(err.msg, "nodir"));
}

static void test_mkdirs(void **state)
{
	char p[160];
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	sl_err err = { 0 };
	assert_int_equal(state_mkdirs(p, 0700, &err), 0);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(state_mkdirs(p, 0700, &err), 0); /* already there */
	snprintf(p, sizeof(p), "%s/a/b/d", base);
	assert_int_equal(state_mkdirs(p, 0700, &err), 0); /* one level missing */
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(entries(base), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_write_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_soon_then_sync, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

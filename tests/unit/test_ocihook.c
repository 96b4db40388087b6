/* test_ocihook.c — hooks run as runc runs them: the state on stdin, args and env as given,
 * the runtime's environment when none, the first failure stopping the rest with its exit
 * status and output, a timeout killing the hook. Real /bin/sh hooks in a temp dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ocihook.h"

static char dir[64];

static char *slurp(const char *name)
{
	static char buf[4096];
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	return buf;
}

static void hooks_of(const char *json, oci_hooks *h)
{
	sl_err err = {0};
	assert_int_equal(oci_hooks_parse(json, strlen(json), h, &err), 0);
}

static void test_hooks_run(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sl-ocihook.XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("SL_HOOK_INHERITED", "runtime", 1);
	char json[2048];
	oci_hooks h;
	sl_err err = {0};
	/* Two prestart hooks in order: stdin, argv, env given; env inherited. */
	snprintf(json, sizeof(json),
		 "{\"prestart\":[{\"path\":\"/bin/sh\",\"args\":[\"sh\",\"-c\","
		 "\"cat > %s/in; echo \\\"$0 $1 $X\\\" > %s/a\",\"first\",\"arg1\"],"
		 "\"env\":[\"X=given\"]},{\"path\":\"/bin/sh\",\"args\":[\"sh\",\"-c\","
		 "\"echo $SL_HOOK_INHERITED >> %s/a\"]}]}",
		 dir, dir, dir);
	hooks_of(json, &h);
	assert_int_equal(oci_hooks_run(&h, OCI_HOOK_PRESTART, "{\"id\":\"c1\"}", &err), 0);
	assert_string_equal(slurp("in"), "{\"id\":\"c1\"}");
	assert_string_equal(slurp("a"), "first arg1 given\nruntime\n");
	/* No hooks of a kind: nothing run. */
	assert_int_equal(oci_hooks_run(&h, OCI_HOOK_POSTSTOP, "{}", &err), 0);
	oci_hooks_free(&h);

	/* The first failure stops the rest, named with its status and output. */
	snprintf(json, sizeof(json),
		 "{\"poststart\":[{\"path\":\"/bin/sh\",\"args\":[\"sh\",\"-c\","
		 "\"echo bad thing >&2; exit 3\"]},{\"path\":\"/bin/sh\",\"args\":[\"sh\","
		 "\"-c\",\"touch %s/second\"]}]}",
		 dir);
	hooks_of(json, &h);
	assert_int_equal(oci_hooks_run(&h, OCI_HOOK_POSTSTART, "{}", &err), -1);
	assert_int_equal(err.kind, SL_INTERNAL);
	assert_non_null(strstr(err.msg, "poststart hook 0 /bin/sh: exit status 3"));
	assert_non_null(strstr(err.msg, "bad thing"));
	char p[128];
	snprintf(p, sizeof(p), "%s/second", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	oci_hooks_free(&h);

	/* A missing program, and a timeout (killed at 1 s, not left to run its 30). */
	const char *missing = "{\"poststop\":[{\"path\":\"/nonexistent/hook\"}]}";
	hooks_of(missing, &h);
	assert_int_equal(oci_hooks_run(&h, OCI_HOOK_POSTSTOP, "{}", &err), -1);
	assert_non_null(strstr(err.msg, "exit status 127"));
	assert_non_null(strstr(err.msg, "No such file"));
	oci_hooks_free(&h);
	const char *slow = "{\"createRuntime\":[{\"path\":\"/bin/sleep\",\"args\":[\"sleep\","
			   "\"30\"],\"timeout\":1}]}";
	hooks_of(slow, &h);
	time_t t0 = time(NULL);
	assert_int_equal(oci_hooks_run(&h, OCI_HOOK_CREATE_RUNTIME, "{}", &err), -1);
	assert_true(time(NULL) - t0 <= 3);
	assert_non_null(strstr(err.msg, "createRuntime hook 0 /bin/sleep: timed out after 1 s"));
	oci_hooks_free(&h);

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hooks_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

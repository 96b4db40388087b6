/* test_dockerfile.c — the Dockerfile reader (continuations, comments, JSON exec form,
 * flags, errors naming the line) and the builder's substitution and word splitting. */
#include "dockerfile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int parse(const char *text, df_file *f, sl_err *err)
{
	return dockerfile_parse(text, strlen(text), f, err);
}

static void test_continuations_and_comments(void **state)
{
	(void)state;
	df_file f;
	sl_err err = {0};
	const char *t = "# a comment\n"
			"ARG BASE=busybox\n"
			"FROM $BASE AS build\n"
			"\n"
			"RUN echo one \\\n"
			"  # a comment inside the continuation\n"
			"    two \\\n"
			"\n"
			"    three\r\n"
			"COPY --from=build --chown=1:2 /a /b\n"
			"CMD [\"sh\", \"-c\", \"echo hi\"]\n"
			"ENTRYPOINT [not json\n";
	assert_int_equal(parse(t, &f, &err), 0);
	assert_int_equal(f.n, 6);
	assert_int_equal(f.v[0].kind, DF_ARG);
	assert_int_equal(f.v[1].kind, DF_FROM);
	assert_int_equal(f.v[1].line, 3);
	assert_string_equal(f.v[1].rest, "$BASE AS build");
	assert_int_equal(f.v[2].kind, DF_RUN);
	assert_int_equal(f.v[2].line, 5);
	assert_string_equal(f.v[2].rest, "echo one  two  three");
	assert_false(f.v[2].json);
	assert_int_equal(f.v[3].kind, DF_COPY);
	assert_int_equal(f.v[3].line, 10);
	assert_string_equal(f.v[3].flags, "--from=build --chown=1:2");
	assert_string_equal(f.v[3].rest, "/a /b");
	char *from = dockerfile_flag(f.v[3].flags, "from");
	char *chown = dockerfile_flag(f.v[3].flags, "chown");
	assert_string_equal(from, "build");
	assert_string_equal(chown, "1:2");
	assert_null(dockerfile_flag(f.v[3].flags, "chmod"));
	free(from);
	free(chown);
	assert_true(f.v[4].json);
	assert_int_equal(f.v[4].argc, 3);
	assert_string_equal(f.v[4].argv[2], "echo hi");
	assert_null(f.v[4].argv[3]);
	/* Not valid JSON: shell form, as docker reads it. */
	assert_false(f.v[5].json);
	assert_string_equal(f.v[5].rest, "[not json");
	dockerfile_free(&f);
}

static void expect_error(const char *text, const char *needle)
{
	df_file f;
	sl_err err = {0};
	assert_int_equal(parse(text, &f, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	if (!strstr(err.msg, needle))
		fail_msg("'%s' does not say '%s'", err.msg, needle);
	assert_null(f.v);
}

static void test_errors_name_the_line(void **state)
{
	(void)state;
	expect_error("FROM busybox\nRUN true\nFROOM x\n", "line 3: unknown instruction FROOM");
	expect_error("FROM busybox\n\nHEALTHCHECK CMD true\n",
		     "line 3: HEALTHCHECK is not supported");
	expect_error("FROM busybox\nVOLUME /data\n", "line 2: VOLUME is not supported");
	expect_error("FROM busybox\nRUN\n", "line 2: RUN needs arguments");
	expect_error("FROM busybox\nRUN --mount=type=cache true\n",
		     "line 2: RUN does not support the flag");
	expect_error("FROM busybox\nCOPY --frm=x a b\n",
		     "line 2: COPY does not support the flag --frm=x");
	expect_error("FROM busybox\nSHELL /bin/sh -c\n", "line 2: SHELL takes a JSON array");
	expect_error("RUN true\n", "line 1: RUN before the first FROM");
	expect_error("ARG X=1\n", "no FROM instruction");
	expect_error("# only a comment\n\n", "no instructions");
	expect_error("FROM a\nCOPY [\"only-one\"]\n",
		     "line 2: COPY needs a source and a destination");
	df_file f;
	sl_err err = {0};
	assert_int_equal(dockerfile_parse("FROM a\0b", 8, &f, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
}

static const char *vars(void *arg, const char *name)
{
	(void)arg;
	if (!strcmp(name, "A"))
		return "alpha";
	if (!strcmp(name, "EMPTY"))
		return "";
	if (!strcmp(name, "B_2"))
		return "b two";
	return NULL;
}

static void expect_expand(const char *in, const char *want)
{
	char *out = NULL;
	sl_err err = {0};
	if (dockerfile_expand(in, vars, NULL, &out, &err) < 0)
		fail_msg("expand '%s': %s", in, err.msg);
	assert_string_equal(out, want);
	free(out);
}

static void test_expand(void **state)
{
	(void)state;
	expect_expand("$A", "alpha");
	expect_expand("x${A}y", "xalphay");
	expect_expand("$A/$B_2", "alpha/b two");
	expect_expand("${NOPE:-dflt}", "dflt");
	expect_expand("${EMPTY:-dflt}", "dflt");
	expect_expand("${A:-dflt}", "alpha");
	expect_expand("${A:+set}", "set");
	expect_expand("${NOPE:+set}", "");
	expect_expand("${NOPE:-${A}}", "alpha");
	expect_expand("$NOPE.", ".");
	expect_expand("\\$A", "$A");
	expect_expand("'$A' \"$A\"", "'$A' \"alpha\"");
	expect_expand("cost $ 5", "cost $ 5");
	expect_expand("$1", "$1");
	char *out = NULL;
	sl_err err = {0};
	assert_int_equal(dockerfile_expand("${A", vars, NULL, &out, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(dockerfile_expand("${A:?x}", vars, NULL, &out, &err), -1);
	assert_int_equal(dockerfile_expand("${}", vars, NULL, &out, &err), -1);
}

static void test_words(void **state)
{
	(void)state;
	char **w = NULL;
	size_t n = 0;
	sl_err err = {0};
	assert_int_equal(dockerfile_words("  K=v  L=\"a b\" 'c d'  e\\ f ", &w, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_string_equal(w[0], "K=v");
	assert_string_equal(w[1], "L=a b");
	assert_string_equal(w[2], "c d");
	assert_string_equal(w[3], "e f");
	assert_null(w[4]);
	dockerfile_words_free(w);
	assert_int_equal(dockerfile_words("", &w, &n, &err), 0);
	assert_int_equal(n, 0);
	dockerfile_words_free(w);
	assert_int_equal(dockerfile_words("a \"b", &w, &n, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_continuations_and_comments),
	    cmocka_unit_test(test_errors_name_the_line),
	    cmocka_unit_test(test_expand),
	    cmocka_unit_test(test_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

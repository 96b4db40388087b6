/* test_api_parse.c — parsers of `sandlot serve` (api/, linked from libsandlot-api.a):
 * signal names, file modes, durations and commands in JSON bodies. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

/* ---- signals --------------------------------------------------------------------------- */

static int signal_ok(const char *s)
{
	int sig = -1;
	sl_err err = {0};
	if (api_signal_parse("signal", s, &sig, &err) != 0)
		fail_msg("signal \"%s\" rejected: %s", s, err.msg);
	return sig;
}

static void signal_bad(const char *s, const char *needle)
{
	int sig = -1;
	sl_err err = {0};
	if (api_signal_parse("signal", s, &sig, &err) != -1)
		fail_msg("signal \"%s\" accepted as %d", s ? s : "(null)", sig);
	assert_int_equal(sig, -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "signal: "));
	if (!strstr(err.msg, needle))
		fail_msg("signal \"%s\": message \"%s\" lacks \"%s\"", s ? s : "(null)", err.msg,
			 needle);
}

static void test_signal(void **state)
{
	assert_int_equal(signal_ok("SIGTERM"), SIGTERM);
	assert_int_equal(signal_ok("TERM"), SIGTERM);
	assert_int_equal(signal_ok("sigkill"), SIGKILL);
	assert_int_equal(signal_ok("Winch"), SIGWINCH);
	assert_int_equal(signal_ok("15"), 15);
	assert_int_equal(signal_ok("1"), 1);
	assert_int_equal(signal_ok("64"), 64);
	signal_bad(NULL, "empty");
	signal_bad("", "empty");
	signal_bad("0", "is not a signal");
	signal_bad("65", "is not a signal");
	signal_bad("-9", "is not a signal");
	signal_bad("15x", "is not a signal");
	signal_bad("SIG", "is not a signal");
	signal_bad("SIGFOO", "is not a signal");
	signal_bad("SIGSIGTERM", "is not a signal");
}

/* ---- file modes ------------------------------------------------------------------------ */

static uint32_t mode_ok(const char *s)
{
	uint32_t mode = 01;
	sl_err err = {0};
	if (api_parse_mode("mode", s, &mode, &err) != 0)
		fail_msg("mode \"%s\" rejected: %s", s, err.msg);
	return mode;
}

static void mode_bad(const char *s)
{
	uint32_t mode = 01;
	sl_err err = {0};
	if (api_parse_mode("mode", s, &mode, &err) != -1)
		fail_msg("mode \"%s\" accepted as %o", s, mode);
	assert_int_equal(mode, 01);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "mode: "));
	assert_non_null(strstr(err.msg, "not an octal file mode"));
}

static void test_mode(void **state)
{
	assert_int_equal(mode_ok("0644"), 0644);
	assert_int_equal(mode_ok("644"), 0644);
	assert_int_equal(mode_ok("0"), 0);
	assert_int_equal(mode_ok("4755"), 04755);
	assert_int_equal(mode_ok("07777"), 07777);
	mode_bad("");
	mode_bad("8");
	mode_bad("0648");
	mode_bad("10000"); /* 010000: past 07777 */
	mode_bad("-1");
	mode_bad("+644");
	mode_bad(" 644");
	mode_bad("0644 ");
	mode_bad("rw-r--r--");
}

/* ---- JSON fields ----------------------------------------------------------------------- */

/* api_json_duration of "timeout" in JSON (an object), under WHERE. */
static int duration_of(const char *json, uint64_t *ms, bool *given, sl_err *err)
{
	cJSON *o = cJSON_Parse(json);
	assert_non_null(o);
	int rc = api_json_duration(o, "exec.", "timeout", ms, given, err);
	cJSON_Delete(o);
	return rc;
}

static uint64_t duration_ok(const char *json)
{
	uint64_t ms = 7;
	bool given = false;
	sl_err err = {0};
	if (duration_of(json, &ms, &given, &err) != 0)
		fail_msg("%s rejected: %s", json, err.msg);
	assert_true(given);
	return ms;
}

static void duration_bad(const char *json, const char *needle)
{
	uint64_t ms = 7;
	bool given = false;
	sl_err err = {0};
	if (duration_of(json, &ms, &given, &err) != -1)
		fail_msg("%s accepted as %llu ms", json, (unsigned long long)ms);
	assert_false(given);
	assert_int_equal(err.kind, SL_INVALID);
	assert_non_null(strstr(err.msg, "exec.timeout"));
	if (!strstr(err.msg, needle))
		fail_msg("%s: message \"%s\" lacks \"%s\"", json, err.msg, needle);
}

static void test_json_duration(void **state)
{
	assert_int_equal(duration_ok("{\"timeout\":\"30s\"}"), 30000);
	assert_int_equal(duration_ok("{\"timeout\":\"1h30m\"}"), 5400000);
	assert_int_equal(duration_ok("{\"timeout\":\"500ms\"}"), 500);
	assert_int_equal(duration_ok("{\"timeout\":1500}"), 1500);
	assert_int_equal(duration_ok("{\"timeout\":0}"), 0);
	/* Absent or null: not given, nothing written. */
	const char *none[] = {"{}", "{\"timeout\":null}", "{\"other\":\"5s\"}"};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		uint64_t ms = 7;
		bool given = true;
		sl_err err = {0};
		assert_int_equal(duration_of(none[i], &ms, &given, &err), 0);
		assert_false(given);
		assert_int_equal(ms, 7);
	}
	duration_bad("{\"timeout\":-1}", "whole number from 0");
	duration_bad("{\"timeout\":1.5}", "whole number from 0");
	duration_bad("{\"timeout\":1e16}", "whole number from 0");
	duration_bad("{\"timeout\":\"abc\"}", "not a duration");
	duration_bad("{\"timeout\":\"-5s\"}", "negative");
	duration_bad("{\"timeout\":true}", "expected a duration");
	duration_bad("{\"timeout\":[\"5s\"]}", "expected a duration");
}

static void test_json_command(void **state)
{
	cJSON *o = cJSON_Parse("{\"argv\":[\"echo\",\"a b\",\"\"],\"line\":\"echo hi | wc\","
			       "\"empty\":\"\",\"none\":[],\"mixed\":[\"ls\",1],\"obj\":{}}");
	assert_non_null(o);
	char **argv = NULL;
	const char *shell = NULL;
	sl_err err = {0};

	assert_int_equal(api_json_command(o, "", "argv", &argv, &shell, &err), 0);
	assert_null(shell);
	assert_non_null(argv);
	assert_string_equal(argv[0], "echo");
	assert_string_equal(argv[1], "a b");
	assert_string_equal(argv[2], "");
	assert_null(argv[3]);
	api_strv_free(argv);

	assert_int_equal(api_json_command(o, "", "line", &argv, &shell, &err), 0);
	assert_null(argv);
	assert_string_equal(shell, "echo hi | wc");

	static const struct {
		const char *key, *needle;
	} bad[] = {
	    {"missing", "cmd.missing: required"},
	    {"empty", "cmd.empty: empty"},
	    {"none", "cmd.none: empty"},
	    {"mixed", "cmd.mixed[1]: expected a string"},
	    {"obj", "cmd.obj: expected an array of strings or a string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		argv = (char **)1;
		shell = "x";
		if (api_json_command(o, "cmd.", bad[i].key, &argv, &shell, &err) != -1)
			fail_msg("command %s accepted", bad[i].key);
		assert_null(argv);
		assert_null(shell);
		assert_int_equal(err.kind, SL_INVALID);
		if (!strstr(err.msg, bad[i].needle))
			fail_msg("command %s: message \"%s\" lacks \"%s\"", bad[i].key, err.msg,
				 bad[i].needle);
	}
	cJSON_Delete(o);
}

/* ---- the canonical duration ------------------------------------------------------------ */

static void test_duration_format(void **state)
{
	static const struct {
		uint64_t ms;
		const char *want;
	} cases[] = {
	    {0, "0s"},	   {1, "1ms"},	   {999, "999ms"},  {1000, "1s"},     {1500, "1500ms"},
	    {60000, "1m"}, {90000, "90s"}, {3600000, "1h"}, {5400000, "90m"}, {86400000, "24h"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[32];
		api_duration_format(cases[i].ms, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
		/* And back: what it prints parses to the same milliseconds. */
		char *json = NULL;
		assert_true(asprintf(&json, "{\"timeout\":\"%s\"}", buf) > 0);
		assert_int_equal(duration_ok(json), cases[i].ms);
		free(json);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signal),	    cmocka_unit_test(test_mode),
	    cmocka_unit_test(test_json_duration),   cmocka_unit_test(test_json_command),
	    cmocka_unit_test(test_duration_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_packages.c — the checks on package names and versions (runtime/packages.c) and on
 * the configured sources: what each manager allows passes, anything that could be read
 * as an option or by a shell does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "packages.h"

static int check(const char *manager, const char *name, const char *version)
{
	sl_package p = {name, version, manager};
	sl_err err = {0};
	int r = packages_validate(&p, 1, &err);
	if (r < 0)
		assert_int_equal(err.kind, SL_INVALID);
	return r;
}

static void test_good_names_and_versions(void **state)
{
	static const char *const ok[][3] = {
	    {"apt", "jq", NULL},
	    {"apt", "libssl3", "3.0.11-1~deb12u2"},
	    {"apt", "g++", "4:12.2.0-3"},
	    {"apt", "libc6:amd64", NULL},
	    {"pip", "requests", "2.31"},
	    {"pip", "Django", ">=4,<5"},
	    {"pip", "zope.interface", "~=6.0"},
	    {"pip", "typing_extensions", "==4.*"},
	    {"pip", "a", NULL},
	    {"npm", "lodash", "^4.17.21"},
	    {"npm", "@types/node", "20"},
	    {"npm", "left-pad", "latest"},
	    {"npm", "x", ">=1.0.0"},
	    {"npm", "@scope/a.b_c~d", "1.0.0-beta.1"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (check(ok[i][0], ok[i][1], ok[i][2]) != 0)
			fail_msg("%s %s %s refused", ok[i][0], ok[i][1], ok[i][2] ? ok[i][2] : "");
}

static void test_bad_names_and_versions(void **state)
{
	static const char *const bad[][3] = {
	    {"apt", "-oAPT::x=1", NULL}, /* an option */
	    {"apt", "a", NULL},		 /* too short */
	    {"apt", "Foo", NULL},	 /* uppercase */
	    {"apt", "a b", NULL},
	    {"apt", "curl", "abc"}, /* not starting with a digit */
	    {"apt", "curl", "1;id"},
	    {"apt", "curl:", NULL},
	    {"pip", "--index-url=http://x", NULL},
	    {"pip", "a;b", NULL},
	    {"pip", "a$(id)", NULL},
	    {"pip", "a-", NULL},
	    {"pip", "requests", "1 || true"},
	    {"pip", "requests", "-e"},
	    {"pip", "requests", ""},
	    {"pip", "requests", "latest"}, /* no digit: not a version */
	    {"npm", "../x", NULL},
	    {"npm", ".hidden", NULL},
	    {"npm", "_x", NULL},
	    {"npm", "@/x", NULL},
	    {"npm", "@s/", NULL},
	    {"npm", "UPPER", NULL},
	    {"npm", "x", "1 2"},
	    {"npm", "x", "-g"},
	    {"npm", "x", "1`id`"},
	    {"gem", "rails", NULL},
	    {"", "x", NULL},
	    {NULL, "x", NULL},
	    {"pip", "", NULL},
	    {"pip", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (check(bad[i][0], bad[i][1], bad[i][2]) == 0)
			fail_msg("%s %s %s accepted", bad[i][0] ? bad[i][0] : "(null)",
				 bad[i][1] ? bad[i][1] : "(null)", bad[i][2] ? bad[i][2] : "");
}

static void test_long_and_many(void **state)
{
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(check("pip", name, NULL), -1);
	sl_package many[SL_MAX_PACKAGES + 1];
	for (size_t i = 0; i < SL_MAX_PACKAGES + 1; i++)
		many[i] = (sl_package){"jq", NULL, "apt"};
	sl_err err = {0};
	assert_int_equal(packages_validate(many, SL_MAX_PACKAGES, &err), 0);
	assert_int_equal(packages_validate(many, SL_MAX_PACKAGES + 1, &err), -1);
	assert_non_null(strstr(err.msg, "at most"));
}

static void test_sources(void **state)
{
	sl_config cfg;
	sl_err err = {0};
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.apt_mirror, sizeof(cfg.apt_mirror), "http://deb.debian.org/debian");
	snprintf(cfg.pip_index, sizeof(cfg.pip_index), "https://pypi.org/simple");
	snprintf(cfg.npm_registry, sizeof(cfg.npm_registry), "http://10.0.0.5:4873/");
	snprintf(cfg.pip_wheels, sizeof(cfg.pip_wheels), "/tmp/../tmp");
	assert_int_equal(packages_check_sources(&cfg, &err), 0);
	assert_string_equal(cfg.pip_wheels, "/tmp"); /* made canonical */
	snprintf(cfg.apt_mirror, sizeof(cfg.apt_mirror), "deb [trusted=yes] http://x/ ./");
	assert_int_equal(packages_check_sources(&cfg, &err), 0);
	static const char *const bad_urls[] = {"ftp://x",     "http://x y",	"http://x;id",
					       "file:///srv", "http://x/$(id)", ""};
	for (size_t i = 0; i + 1 < sizeof(bad_urls) / sizeof(bad_urls[0]); i++) {
		snprintf(cfg.npm_registry, sizeof(cfg.npm_registry), "%s", bad_urls[i]);
		if (packages_check_sources(&cfg, &err) == 0)
			fail_msg("npm registry %s accepted", bad_urls[i]);
	}
	cfg.npm_registry[0] = '\0';
	snprintf(cfg.apt_mirror, sizeof(cfg.apt_mirror), "deb http://x/ ./\ndeb http://y/ ./");
	assert_int_equal(packages_check_sources(&cfg, &err), -1);
	cfg.apt_mirror[0] = '\0';
	snprintf(cfg.pip_wheels, sizeof(cfg.pip_wheels), "/nonexistent/wheels");
	assert_int_equal(packages_check_sources(&cfg, &err), -1);
	assert_non_null(strstr(err.msg, "pip wheel directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_names_and_versions),
	    cmocka_unit_test(test_bad_names_and_versions),
	    cmocka_unit_test(test_long_and_many),
	    cmocka_unit_test(test_sources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

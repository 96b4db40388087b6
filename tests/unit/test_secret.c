/* test_secret.c — the secret store's sealing (AES-256-GCM): round trips, a flipped byte
 * anywhere refused, another key or name refused; the store on a temporary state dir:
 * key file 0600, no value in clear on disk, names and sizes checked. */
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

#include "fsutil.h"
#include "owner.h"
#include "secret.h"
#include "state.h"

static const uint8_t key1[SECRET_KEY_LEN] = "0123456789abcdef0123456789abcde";
static const uint8_t key2[SECRET_KEY_LEN] = "0123456789abcdef0123456789abcdX";

static void seal_open_round_trip(void **state)
{
	const char *values[] = {"", "x", "ghp_0123456789abcdefABCDEF", NULL};
	for (size_t i = 0; values[i]; i++) {
		uint8_t *sealed;
		size_t slen, plen;
		char *plain;
		sl_err err = {0};
		size_t n = strlen(values[i]);
		assert_int_equal(secret_seal(key1, "aad", values[i], n, &sealed, &slen, &err), 0);
		assert_int_equal(slen, SECRET_NONCE_LEN + n + SECRET_TAG_LEN);
		if (n > 4)
			assert_null(memmem(sealed, slen, values[i], n));
		assert_int_equal(secret_open(key1, "aad", sealed, slen, &plain, &plen, &err), 0);
		assert_int_equal(plen, n);
		assert_string_equal(plain, values[i]);
		secret_wipe(plain, plen);
		free(sealed);
	}
}

static void nonce_is_fresh(void **state)
{
	uint8_t *a, *b;
	size_t la, lb;
	sl_err err = {0};
	assert_int_equal(secret_seal(key1, "aad", "same", 4, &a, &la, &err), 0);
	assert_int_equal(secret_seal(key1, "aad", "same", 4, &b, &lb, &err), 0);
	assert_memory_not_equal(a, b, SECRET_NONCE_LEN);
	assert_memory_not_equal(a, b, la);
	free(a);
	free(b);
}

/* Every byte, nonce, ciphertext and tag alike: one flipped bit and it does not open. */
static void flipped_byte_fails(void **state)
{
	uint8_t *sealed;
	size_t slen, plen;
	char *plain = NULL;
	sl_err err = {0};
	assert_int_equal(secret_seal(key1, "aad", "tamper-me", 9, &sealed, &slen, &err), 0);
	for (size_t i = 0; i < slen; i++) {
		sealed[i] ^= 0x01;
		sl_err e = {0};
		if (secret_open(key1, "aad", sealed, slen, &plain, &plen, &e) == 0)
			fail_msg("byte %zu flipped and the value still opened", i);
		assert_non_null(strstr(e.msg, "does not authenticate"));
		sealed[i] ^= 0x01;
	}
	assert_int_equal(secret_open(key1, "aad", sealed, slen, &plain, &plen, &err), 0);
	secret_wipe(plain, plen);
	assert_int_equal(secret_open(key2, "aad", sealed, slen, &plain, &plen, &err), -1);
	assert_int_equal(secret_open(key1, "other", sealed, slen, &plain, &plen, &err), -1);
	assert_int_equal(secret_open(key1, "aad", sealed, 10, &plain, &plen, &err), -1);
	free(sealed);
}

static void names_checked(void **state)
{
	const char *ok[] = {"gh", "GITHUB_TOKEN", "a.b-c_d", ".env", "..", NULL};
	const char *bad[] = {"", "a/b", "../x", "a b", "é", "a=b", NULL};
	sl_err err = {0};
	for (size_t i = 0; ok[i]; i++)
		assert_int_equal(secret_name_check(ok[i], &err), 0);
	for (size_t i = 0; bad[i]; i++) {
		assert_int_equal(secret_name_check(bad[i], &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
	}
	char name[SECRET_NAME_MAX + 2];
	memset(name, 'n', sizeof(name));
	name[SECRET_NAME_MAX] = '\0';
	assert_int_equal(secret_name_check(name, &err), 0);
	name[SECRET_NAME_MAX] = 'n';
	name[SECRET_NAME_MAX + 1] = '\0';
	assert_int_equal(secret_name_check(name, &err), -1);
}

/* The whole file: does it hold NEEDLE anywhere? */
static bool file_holds(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return memmem(buf, n, needle, strlen(needle)) != NULL;
}

static void store_round_trip(void **state)
{
	sl_config cfg = {0};
	char dir[] = "/tmp/sandlot-test-secret-XXXXXX", p[PATH_MAX];
	assert_non_null(mkdtemp(dir));
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", dir);
	sl_err err = {0};
	sl_secret s;
	bool created;
	const char *v = "the-value-7f3a", *v2 = "another-value-99";
	owner_act_as("");
	assert_int_equal(secret_set(&cfg, "gh", v, strlen(v), &s, &created, &err), 0);
	assert_true(created);
	struct stat st;
	snprintf(p, sizeof(p), "%s/secrets.key", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, SECRET_KEY_LEN);
	snprintf(p, sizeof(p), "%s/secrets/admin/s-gh.json", dir);
	assert_false(file_holds(p, v));
	char *plain;
	size_t plen;
	assert_int_equal(secret_reveal(&cfg, "", "gh", &plain, &plen, &err), 0);
	assert_string_equal(plain, v);
	secret_wipe(plain, plen);
	/* Replaced: same created date, new value. */
	assert_int_equal(secret_set(&cfg, "gh", v2, strlen(v2), &s, &created, &err), 0);
	assert_false(created);
	assert_int_equal(secret_reveal(&cfg, "", "gh", &plain, &plen, &err), 0);
	assert_string_equal(plain, v2);
	secret_wipe(plain, plen);
	assert_int_equal(s.version, 2);
	/* The façades' create refuses a name in use, their update an unknown one; neither
	 * touches the value then. */
	assert_int_equal(secret_put(&cfg, "gh", v, strlen(v), SECRET_CREATE, &s, &created, &err),
			 -1);
	assert_int_equal(err.kind, SL_CONFLICT);
	assert_int_equal(secret_put(&cfg, "new", v, strlen(v), SECRET_REPLACE, &s, &created, &err),
			 -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(secret_get(&cfg, "new", &s, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	assert_int_equal(secret_put(&cfg, "gh", v, strlen(v), SECRET_REPLACE, &s, &created, &err),
			 0);
	assert_false(created);
	sl_secret g;
	assert_int_equal(secret_get(&cfg, "gh", &g, &err), 0);
	assert_int_equal(g.version, 3);
	assert_int_equal(g.created_ms, s.created_ms);
	assert_int_equal(secret_reveal(&cfg, "", "gh", &plain, &plen, &err), 0);
	assert_string_equal(plain, v);
	secret_wipe(plain, plen);
	/* Another key's names are its own. */
	assert_int_equal(secret_reveal(&cfg, "key_other", "gh", &plain, &plen, &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	owner_act_as("key_other");
	sl_secret *list;
	size_t n;
	assert_int_equal(secret_list(&cfg, &list, &n, &err), 0);
	assert_int_equal(n, 0);
	free(list);
	owner_act_as("");
	assert_int_equal(secret_list(&cfg, &list, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, "gh");
	free(list);
	/* A record copied under another name does not open (the name is bound in). */
	char q[PATH_MAX];
	snprintf(q, sizeof(q), "%s/secrets/admin/s-copy.json", dir);
	assert_int_equal(link(p, q), 0);
	assert_int_equal(secret_reveal(&cfg, "", "copy", &plain, &plen, &err), -1);
	/* Too big, NUL inside, bad name. */
	char *big = calloc(1, SECRET_VALUE_MAX + 2);
	memset(big, 'a', SECRET_VALUE_MAX + 1);
	assert_int_equal(secret_set(&cfg, "big", big, SECRET_VALUE_MAX + 1, &s, &created, &err),
			 -1);
	assert_int_equal(err.kind, SL_TOOLARGE);
	assert_int_equal(secret_set(&cfg, "big", big, SECRET_VALUE_MAX, &s, &created, &err), 0);
	free(big);
	assert_int_equal(secret_set(&cfg, "nul", "a\0b", 3, &s, &created, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(secret_set(&cfg, "a/b", "x", 1, &s, &created, &err), -1);
	assert_int_equal(err.kind, SL_INVALID);
	assert_int_equal(secret_delete(&cfg, "gh", &err), 0);
	assert_int_equal(secret_delete(&cfg, "gh", &err), -1);
	assert_int_equal(err.kind, SL_NOTFOUND);
	/* A key file others can read is refused, not used. */
	snprintf(p, sizeof(p), "%s/secrets.key", dir);
	assert_int_equal(chmod(p, 0644), 0);
	uint8_t k[SECRET_KEY_LEN];
	assert_int_equal(secret_key_load(&cfg, k, &err), -1);
	assert_non_null(strstr(err.msg, "0600"));
	assert_int_equal(fs_remove_tree(dir, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(seal_open_round_trip), cmocka_unit_test(nonce_is_fresh),
	    cmocka_unit_test(flipped_byte_fails),   cmocka_unit_test(names_checked),
	    cmocka_unit_test(store_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_record.c — the sandbox record's file format (runtime/record_codec.c): a record the
 * previous version wrote (schema 1, tests/fixtures/state-v1) reads field for field, a
 * record written now reads back the same, what is not a record is refused, and a record
 * that cannot be read loads as a broken stand-in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include <cmocka.h>

#include "fsutil.h"
#include "record.h"
#include "record_codec.h"
#include "state.h"

#define V1_LIVE "tests/fixtures/state-v1/state/sandboxes/sbx_jzpkjfnp3364bofrvqce/sandbox.json"
#define V1_GONE "tests/fixtures/state-v1/state/sandboxes/sbx_cakjobdq4i37uzikd5co/sandbox.json"

static void load(const char *path, sl_sandbox *sb)
{
	char *text = NULL;
	size_t len;
	sl_err err = {0};
	if (state_read_file(path, 1 << 20, &text, &len, &err) < 0)
		fail_msg("%s", err.msg);
	if (record_decode(text, path, sb, &err) < 0)
		fail_msg("%s", err.msg);
	free(text);
}

static const char *str(const cJSON *o, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void test_schema_1_reads_field_for_field(void **state)
{
	sl_sandbox sb;
	load(V1_LIVE, &sb);
	assert_string_equal(sb.id, "sbx_jzpkjfnp3364bofrvqce");
	assert_string_equal(sb.name, "fixture-a");
	assert_int_equal(sb.status, SL_ST_STOPPED);
	assert_string_equal(sb.image, "busybox");
	assert_string_equal(sb.digest, "sha256:6482d71ea4f66a238b319b432ec886e8a2cace958b9c625103eee50523f0da29");
	assert_string_equal(sb.user, "65534");
	assert_string_equal(sb.workdir, "/tmp");
	assert_string_equal(sb.snapshot, "");
	assert_false(sb.ephemeral);
	assert_int_equal(sb.created_ms, 1796399661260LL);
	assert_int_equal(sb.expires_ms, 1796486061260LL);
	assert_int_equal(sb.limits.cpu_millicores, 500);
	assert_int_equal(sb.limits.memory_bytes, 128ULL << 20);
	assert_int_equal(sb.limits.pids_max, 256);
	assert_int_equal(sb.disk_bytes, 1ULL << 30);
	assert_int_equal(sb.idle_ms, 3600000);
	assert_int_equal(sb.lifetime_ms, 86400000);
	assert_int_equal(sb.exec_timeout_ms, 0);
	assert_int_equal(sb.uid_base, 3364932096U);
	assert_int_equal(sb.creator_pid, 8741);
	assert_int_equal(sb.creator_start, 176211);
	assert_string_equal(sb.boot_id, "b9d8fdfd-a7b9-4597-af7f-05bd4666468a");
	assert_string_equal(str(sb.env, "GREETING"), "hello");
	assert_string_equal(str(sb.labels, "team"), "core");
	assert_string_equal(str(cJSON_GetArrayItem(sb.volumes, 0), "mountPath"), "/data");
	assert_int_equal(cJSON_GetArraySize(sb.packages), 0);
	assert_false(sb.net_enabled);
	sandbox_free(&sb);

	load(V1_GONE, &sb);
	assert_int_equal(sb.status, SL_ST_TERMINATED);
	assert_string_equal(sb.reason, "deleted");
	assert_true(sb.terminated_ms > sb.created_ms);
	sandbox_free(&sb);
}

/* Every field of the struct survives a write and a read (schema 2). */
static void test_schema_2_round_trip(void **state)
{
	sl_sandbox a;
	load(V1_LIVE, &a);
	a.net_enabled = true;
	snprintf(a.net_addr, sizeof(a.net_addr), "10.88.0.7");
	snprintf(a.net_gateway, sizeof(a.net_gateway), "10.88.0.1");
	snprintf(a.net_subnet, sizeof(a.net_subnet), "10.88.0.4/30");
	cJSON_Delete(a.net_allow);
	a.net_allow = cJSON_CreateArray();
	cJSON_AddItemToArray(a.net_allow, cJSON_CreateString("203.0.113.0/24"));
	a.releaser_pid = 4242;
	a.releaser_start = 99;
	a.init_pid = 77;
	a.init_start = 1234567;
	a.terminated_ms = 5;
	snprintf(a.reason, sizeof(a.reason), "deleted");
	snprintf(a.snapshot, sizeof(a.snapshot), "snp_x");
	a.ephemeral = true;
	a.ports = cJSON_Parse("{\"8000\":{\"public\":true}}");
	snprintf(a.preview_token, sizeof(a.preview_token), "%064d", 7);
	snprintf(a.owner, sizeof(a.owner), "key_abcdefghijklmnopqrst");
	snprintf(a.request_host, sizeof(a.request_host), "h.example.com:${PORT}");
	a.on_idle = SL_LIFE_PAUSE;
	a.on_idle_set = true;
	char *text = record_encode(&a);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"schema\":2"));
	assert_null(strstr(text, "internal"));
	sl_sandbox b;
	sl_err err = {0};
	if (record_decode(text, "test", &b, &err) < 0)
		fail_msg("%s", err.msg);
	char *again = record_encode(&b);
	assert_string_equal(text, again);
	assert_string_equal(b.net_addr, "10.88.0.7");
	assert_string_equal(b.net_subnet, "10.88.0.4/30");
	assert_int_equal(b.releaser_pid, 4242);
	assert_int_equal(b.init_start, 1234567);
	assert_true(b.ephemeral);
	assert_string_equal(b.preview_token, a.preview_token);
	assert_string_equal(b.owner, a.owner);
	assert_string_equal(b.request_host, "h.example.com:${PORT}");
	assert_true(b.on_idle_set);
	assert_int_equal(b.on_idle, SL_LIFE_PAUSE);
	assert_int_equal(sandbox_idle_action(b.on_idle_set, b.on_idle, b.ephemeral), SL_LIFE_PAUSE);
	/* A record from before keys has no owner: the admin's. */
	sl_sandbox old;
	if (record_decode("{\"schema\":2,\"id\":\"sbx_a\"}", "old", &old, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(old.owner, "");
	/* ... nor onIdle: what an idle timeout always did, stop (destroy when ephemeral). */
	assert_false(old.on_idle_set);
	assert_int_equal(sandbox_idle_action(old.on_idle_set, old.on_idle, false), SL_LIFE_STOP);
	assert_int_equal(sandbox_idle_action(old.on_idle_set, old.on_idle, true), SL_LIFE_DELETE);
	sandbox_free(&old);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(b.ports, "8000"), "public")));
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(b.net_allow, 0)),
			    "203.0.113.0/24");
	free(text);
	free(again);
	sandbox_free(&a);
	sandbox_free(&b);
}

static void test_what_is_not_a_record_is_refused(void **state)
{
	static const char *const bad[] = {"", "[]", "\"x\"", "{\"schema\":3,\"id\":\"sbx_a\"}",
					  "{\"schema\":\"2\"}", "{not json"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_sandbox sb;
		sl_err err = {0};
		if (record_decode(bad[i], "bad", &sb, &err) == 0)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(err.kind, SL_INTERNAL);
		assert_non_null(strstr(err.msg, "record bad"));
	}
}

/* A record that exists and cannot be read (not JSON; over 1 MiB) is a broken stand-in
 * with its id and why; a missing or empty one is "not found"; "broken" is never read
 * from a record. */
static void test_unreadable_record_reads_as_broken(void **state)
{
	char root[] = "/tmp/test_record.XXXXXX";
	assert_non_null(mkdtemp(root));
	sl_ctx ctx = {0};
	snprintf(ctx.cfg.state_dir, sizeof(ctx.cfg.state_dir), "%s", root);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sandboxes/sbx_broken", root);
	sl_err err = {0};
	assert_int_equal(state_mkdirs(p, 0700, &err), 0);
	strcat(p, "/sandbox.json");
	struct {
		size_t len;
		const char *want;
	} cases[] = {{0, NULL}, {9, "not a JSON object"}, {(1 << 20) + 1, "larger than"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *data = malloc(cases[i].len + 1);
		memset(data, 'x', cases[i].len);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(data, 1, cases[i].len, f), cases[i].len);
		fclose(f);
		free(data);
		sl_sandbox sb;
		sl_err_clear(&err);
		int r = record_load_or_broken(&ctx, "sbx_broken", &sb, &err);
		if (!cases[i].want) {
			assert_int_equal(r, -1);
			assert_int_equal(err.kind, SL_NOTFOUND);
			continue;
		}
		assert_int_equal(r, 0);
		assert_string_equal(sb.id, "sbx_broken");
		assert_int_equal(sb.status, SL_ST_BROKEN);
		assert_string_equal(sandbox_status_name(sb.status), "broken");
		assert_int_equal(strncmp(sb.reason, "record unreadable: ", 19), 0);
		assert_non_null(strstr(sb.reason, cases[i].want));
		assert_true(sb.created_ms > 0);
		sandbox_free(&sb);
	}
	enum sl_status st;
	assert_int_equal(sandbox_status_parse("broken", &st), -1);
	assert_int_equal(fs_remove_tree(root, &err), 0);
}

/* A create's requestHost: none, or visible ASCII of at most 255 characters (it becomes a
 * header line, so no CR, LF, space or control); refusals name the field. */
static void test_request_host(void **state)
{
	(void)state;
	char out[256] = "x";
	sl_err err = {0};
	assert_int_equal(record_request_host(NULL, out, &err), 0);
	assert_string_equal(out, "");
	assert_int_equal(record_request_host("a.example.com:${PORT}", out, &err), 0);
	assert_string_equal(out, "a.example.com:${PORT}");
	char longest[256];
	memset(longest, 'h', 255);
	longest[255] = '\0';
	assert_int_equal(record_request_host(longest, out, &err), 0);
	assert_string_equal(out, longest);
	char over[257];
	memset(over, 'h', 256);
	over[256] = '\0';
	const char *const bad[] = {"a\r\nX-Evil: 1", "a b", "a\tb", "caf\xc3\xa9", over};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sl_err e = {0};
		assert_int_equal(record_request_host(bad[i], out, &e), -1);
		assert_int_equal(e.kind, SL_INVALID);
		assert_non_null(strstr(e.msg, "requestHost"));
		assert_string_equal(out, "");
	}
}

/* timeout.onIdle / onLifetime: every name parses to its value and back; hibernate is the
 * value appended after stop (records written before it keep their meaning); an unknown
 * name and a damaged value are refused or read as the default. */
static void test_on_lifetime_names(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum sl_on_lifetime v;
	} cases[] = {{"delete", SL_LIFE_DELETE},
		     {"pause", SL_LIFE_PAUSE},
		     {"stop", SL_LIFE_STOP},
		     {"hibernate", SL_LIFE_HIBERNATE}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sl_on_lifetime a = SL_LIFE_DELETE;
		assert_int_equal(sandbox_on_lifetime_parse(cases[i].name, &a), 0);
		assert_int_equal(a, cases[i].v);
		assert_string_equal(sandbox_on_lifetime_name(a), cases[i].name);
	}
	assert_int_equal(SL_LIFE_HIBERNATE, 3);
	enum sl_on_lifetime a = SL_LIFE_PAUSE;
	assert_int_equal(sandbox_on_lifetime_parse("Hibernate", &a), -1);
	assert_int_equal(sandbox_on_lifetime_parse("hibernated", &a), -1);
	assert_int_equal(sandbox_on_lifetime_parse("", &a), -1);
	assert_int_equal(sandbox_on_lifetime_parse(NULL, &a), -1);
	assert_int_equal(a, SL_LIFE_PAUSE);
	assert_string_equal(sandbox_on_lifetime_name((enum sl_on_lifetime)99), "delete");
	assert_int_equal(sandbox_idle_action(true, SL_LIFE_HIBERNATE, true), SL_LIFE_HIBERNATE);
	assert_int_equal(sandbox_idle_action(false, SL_LIFE_HIBERNATE, false), SL_LIFE_STOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_schema_1_reads_field_for_field),
	    cmocka_unit_test(test_schema_2_round_trip),
	    cmocka_unit_test(test_what_is_not_a_record_is_refused),
	    cmocka_unit_test(test_unreadable_record_reads_as_broken),
	    cmocka_unit_test(test_request_host),
	    cmocka_unit_test(test_on_lifetime_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

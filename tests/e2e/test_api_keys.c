/* test_api_keys.c — keys per user (hardening fix 10): `sandlot key create|ls|rm`, keys
 * kept only as hashes, and each key seeing only its own sandboxes (with their executions
 * and files), snapshots, volumes and images, over /v1 and the E2B and Daytona façades. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "api_common.h"

/* `sandlot key create NAME`: the key it prints once (caller frees). */
static char *key_create(const char *name)
{
	char *k = e2e_sandlot_ok("key", "create", name, NULL);
	assert_int_equal(strlen(k), 64);
	return k;
}

/* METHOD PATH (BODY) over TCP with HEADER (a whole "Name: value" line, NULL: none). */
static long call_h(e2e_resp *r, const char *header, const char *method, const char *path,
		   const char *body)
{
	e2e_req q = {.method = method,
		     .path = path,
		     .body = body,
		     .len = body ? strlen(body) : 0,
		     .tcp = true,
		     .auth = header,
		     /* The façades' answers are their providers' shapes, not openapi.yaml's. */
		     .no_capture = strncmp(path, "/v1/", 4) != 0};
	return e2e_http_q(r, &q);
}

/* The same with "Authorization: Bearer KEY". */
static long call(e2e_resp *r, const char *key, const char *method, const char *path,
		 const char *body)
{
	char *h = e2e_printf("Authorization: Bearer %s", key);
	long st = call_h(r, h, method, path, body);
	free(h);
	return st;
}

/* KEY gets STATUS for METHOD PATH. */
static void expect_as(const char *key, const char *method, const char *path, const char *body,
		      long status)
{
	e2e_resp r;
	call(&r, key, method, path, body);
	if (r.status != status)
		fail_msg("%s %s as %.8s...: %ld, not %ld: %s", method, path, key, r.status, status,
			 r.body);
	e2e_resp_free(&r);
}

/* Whether the array LIST of GET PATH, as KEY, holds an object whose FIELD is VALUE. */
static bool listed(const char *key, const char *path, const char *list, const char *field,
		   const char *value)
{
	e2e_resp r;
	call(&r, key, "GET", path, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *arr = list ? jget(r.json, list) : r.json;
	assert_true(cJSON_IsArray(arr));
	bool found = false;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		const char *v = jstr(o, field);
		found |= v && !strcmp(v, value);
	}
	e2e_resp_free(&r);
	return found;
}

/* Whether any file under DIR holds NEEDLE. */
static bool tree_holds(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = e2e_printf("%s/%s", dir, e->d_name);
		char *text = e2e_read_file(p);
		found = text && strstr(text, needle);
		free(text);
		free(p);
	}
	closedir(d);
	return found;
}

/* create, ls, rm; only a hash of each key is kept; a removed key is refused at once. */
static void test_key_create_ls_rm(void **state)
{
	char *a = key_create("alice");
	char *dir = e2e_printf("%s/keys", getenv("SANDLOT_STATE_DIR"));
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_false(tree_holds(dir, a));

	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "key", "create", "alice", NULL);
	assert_int_not_equal(r.status, 0);
	assert_true(e2e_contains(r.err, "exists"));
	e2e_result_free(&r);
	e2e_sandlot(&r, NULL, 0, "key", "create", "Not/A/Name", NULL);
	assert_int_not_equal(r.status, 0);
	e2e_result_free(&r);

	char *ls = e2e_sandlot_ok("key", "ls", NULL);
	assert_true(e2e_contains(ls, "alice"));
	assert_true(e2e_contains(ls, "key_"));
	assert_false(e2e_contains(ls, a));
	free(ls);

	/* The key works, with E2B's prefix too; the admin key still does. */
	expect_as(a, "GET", "/v1/sandboxes", NULL, 200);
	expect_as(KEY, "GET", "/v1/sandboxes", NULL, 200);
	char *e2b = e2e_printf("X-API-Key: e2b_%s", a);
	e2e_resp resp;
	call_h(&resp, e2b, "GET", "/v2/sandboxes", NULL);
	expect(&resp, 200, NULL, NULL);
	e2e_resp_free(&resp);

	free(e2e_sandlot_ok("key", "rm", "alice", NULL));
	expect_as(a, "GET", "/v1/sandboxes", NULL, 401);
	call_h(&resp, e2b, "GET", "/v2/sandboxes", NULL);
	assert_int_equal(resp.status, 401);
	e2e_resp_free(&resp);
	e2e_sandlot(&r, NULL, 0, "key", "rm", "alice", NULL);
	assert_int_not_equal(r.status, 0);
	assert_true(e2e_contains(r.err, "no API key named alice"));
	e2e_result_free(&r);
	ls = e2e_sandlot_ok("key", "ls", NULL);
	assert_false(e2e_contains(ls, "alice"));
	free(ls);
	free(e2b);
	free(dir);
	free(a);
}

/* Key A's sandbox, execution, files, snapshot and volume: B gets 404 for each and sees
 * none in lists; the admin key (and the socket) sees and manages all. */
static void test_each_key_sees_its_own(void **state)
{
	char *a = key_create("owner-a"), *b = key_create("owner-b");
	e2e_resp r;

	call(&r, a, "POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"name\":\"of-a\"}");
	expect(&r, 201, NULL, NULL);
	char *id = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	char *sbx = e2e_printf("/v1/sandboxes/%s", id);
	char *execs = e2e_printf("%s/executions", sbx);
	char *run = e2e_printf("%s?wait=30s", execs);
	call(&r, a, "POST", run, "{\"command\":\"echo hi > /tmp/f\"}");
	expect(&r, 201, NULL, NULL);
	free(run);
	char *exe = e2e_printf("%s/%s", execs, jstr(r.json, "id"));
	e2e_resp_free(&r);
	char *files = e2e_printf("%s/files?path=/tmp/f", sbx);
	char *snaps = e2e_printf("%s/snapshots", sbx);
	call(&r, a, "POST", snaps, "{\"name\":\"snap-a\"}");
	expect(&r, 201, NULL, NULL);
	char *snp = e2e_printf("/v1/snapshots/%s", jstr(r.json, "id"));
	char *snp_id = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	expect_as(a, "POST", "/v1/volumes", "{\"name\":\"vol-a\"}", 201);

	/* A sees its own. */
	expect_as(a, "GET", sbx, NULL, 200);
	expect_as(a, "GET", "/v1/sandboxes/of-a", NULL, 200);
	expect_as(a, "GET", exe, NULL, 200);
	expect_as(a, "GET", files, NULL, 200);
	expect_as(a, "GET", snp, NULL, 200);
	assert_true(listed(a, "/v1/sandboxes", "sandboxes", "id", id));
	assert_true(listed(a, "/v1/snapshots", "snapshots", "id", snp_id));
	assert_true(listed(a, "/v1/volumes", "volumes", "name", "vol-a"));

	/* B: 404 for each, by id and by name, reading or acting; nothing in its lists. */
	const struct {
		const char *method, *path, *body;
	} hidden[] = {
	    {"GET", sbx, NULL},
	    {"GET", "/v1/sandboxes/of-a", NULL},
	    {"PATCH", sbx, "{\"labels\":{\"x\":\"y\"}}"},
	    {"POST", execs, "{\"command\":\"true\"}"},
	    {"GET", execs, NULL},
	    {"GET", exe, NULL},
	    {"GET", files, NULL},
	    {"POST", snaps, "{}"},
	    {"POST", e2e_printf("%s/pause", sbx), NULL},
	    {"POST", e2e_printf("%s/stop", sbx), NULL},
	    {"GET", e2e_printf("%s/ports/8000", sbx), NULL},
	    {"GET", snp, NULL},
	    {"GET", "/v1/snapshots/snap-a", NULL},
	    {"DELETE", snp, NULL},
	    {"DELETE", "/v1/volumes/vol-a", NULL},
	    {"DELETE", sbx, NULL},
	};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		expect_as(b, hidden[i].method, hidden[i].path, hidden[i].body, 404);
	assert_false(listed(b, "/v1/sandboxes", "sandboxes", "id", id));
	assert_false(listed(b, "/v1/snapshots", "snapshots", "id", snp_id));
	/* Not even counted for B: /v1/health's count is the key's own (A's is 1 or more). */
	call(&r, b, "GET", "/v1/health", NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal((int)jnum(r.json, "sandboxes"), 0);
	e2e_resp_free(&r);
	call(&r, a, "GET", "/v1/health", NULL);
	expect(&r, 200, NULL, NULL);
	assert_true(jnum(r.json, "sandboxes") >= 1);
	e2e_resp_free(&r);
	assert_false(listed(b, "/v1/volumes", "volumes", "name", "vol-a"));
	/* Nor restored from, mounted, or tagged over. */
	char *from = e2e_printf("{\"image\":\"busybox\",\"snapshot\":\"%s\"}", snp_id);
	call(&r, b, "POST", "/v1/sandboxes", from);
	assert_int_not_equal(r.status, 201);
	e2e_resp_free(&r);
	call(&r, b, "POST", "/v1/sandboxes",
	     "{\"image\":\"busybox\",\"volumes\":[{\"name\":\"vol-a\",\"mountPath\":\"/v\"}]}");
	assert_int_not_equal(r.status, 201);
	e2e_resp_free(&r);
	expect_as(b, "POST", "/v1/volumes", "{\"name\":\"vol-a\"}", 409);

	/* The façades ask the same runtime: E2B (X-API-Key, with its prefix) and Daytona. */
	char *ha = e2e_printf("X-API-Key: e2b_%s", a), *hb = e2e_printf("X-API-Key: e2b_%s", b);
	char *e2b_sbx = e2e_printf("/sandboxes/%s", id);
	call_h(&r, ha, "GET", e2b_sbx, NULL);
	expect(&r, 200, NULL, NULL);
	e2e_resp_free(&r);
	call_h(&r, hb, "GET", e2b_sbx, NULL);
	assert_int_equal(r.status, 404);
	e2e_resp_free(&r);
	call_h(&r, hb, "GET", "/v2/sandboxes", NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(r.json), 0);
	e2e_resp_free(&r);
	/* Agentuity finds an execution by its id alone: still only its sandbox's key. */
	char *ag_exe = e2e_printf("/agentuity/sandbox/execution/%s", strrchr(exe, '/') + 1);
	expect_as(a, "GET", ag_exe, NULL, 200);
	expect_as(b, "GET", ag_exe, NULL, 404);
	expect_as(b, "GET", e2e_printf("/agentuity/sandbox/%s", id), NULL, 404);
	free(ag_exe);
	char *dt_sbx = e2e_printf("/api/sandbox/%s", id);
	expect_as(a, "GET", dt_sbx, NULL, 200);
	expect_as(b, "GET", dt_sbx, NULL, 404);
	expect_as(b, "DELETE", dt_sbx, NULL, 404);
	call(&r, b, "GET", "/api/sandbox", NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "items")), 0);
	e2e_resp_free(&r);

	/* B's own sandbox is not A's to see; the admin sees both. */
	call(&r, b, "POST", "/v1/sandboxes", "{\"image\":\"busybox\"}");
	expect(&r, 201, NULL, NULL);
	char *idb = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	char *sbxb = e2e_printf("/v1/sandboxes/%s", idb);
	expect_as(a, "GET", sbxb, NULL, 404);
	assert_true(listed(KEY, "/v1/sandboxes", "sandboxes", "id", id));
	assert_true(listed(KEY, "/v1/sandboxes", "sandboxes", "id", idb));
	assert_true(listed(KEY, "/v1/snapshots", "snapshots", "id", snp_id));
	assert_true(listed(KEY, "/v1/volumes", "volumes", "name", "vol-a"));
	expect_as(KEY, "GET", exe, NULL, 200);
	e2e_http(&r, "GET", sbx, NULL); /* the socket acts as the admin */
	expect(&r, 200, NULL, NULL);
	e2e_resp_free(&r);

	/* A removed key's things stay, the admin's to manage. */
	free(e2e_sandlot_ok("key", "rm", "owner-b", NULL));
	expect_as(b, "GET", sbxb, NULL, 401);
	expect_as(KEY, "DELETE", sbxb, NULL, 204);
	expect_as(a, "DELETE", sbx, NULL, 204);
	expect_as(a, "DELETE", snp, NULL, 204);
	expect_as(KEY, "DELETE", "/v1/volumes/vol-a", NULL, 204);
	free(e2e_sandlot_ok("key", "rm", "owner-a", NULL));

	for (size_t i = 8; i <= 10; i++)
		free((char *)hidden[i].path);
	free(from);
	free(ha);
	free(hb);
	free(e2b_sbx);
	free(dt_sbx);
	free(sbxb);
	free(idb);
	free(snp_id);
	free(snp);
	free(snaps);
	free(files);
	free(exe);
	free(execs);
	free(sbx);
	free(id);
	free(a);
	free(b);
}

/* POST /v1/images?name=NAME of build/images/busybox.tar as KEY; the status. */
static long image_import_as(const char *key, const char *name)
{
	char *tar = e2e_build_path("images/busybox.tar");
	size_t len;
	char *blob = e2e_read_file_len(tar, &len);
	assert_non_null(blob);
	char *path = e2e_printf("/v1/images?name=%s", name);
	char *h = e2e_printf("Authorization: Bearer %s", key);
	e2e_resp r;
	e2e_req q = {.method = "POST",
		     .path = path,
		     .body = blob,
		     .len = len,
		     .chunked = true,
		     .tcp = true,
		     .auth = h};
	long st = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	free(h);
	free(path);
	free(blob);
	free(tar);
	return st;
}

/* An image a key imports is its own; the admin's images are every key's to use, not to
 * replace or remove. */
static void test_images_per_key(void **state)
{
	char *a = key_create("img-a"), *b = key_create("img-b");
	assert_int_equal(image_import_as(a, "img-of-a"), 201);
	assert_true(listed(a, "/v1/images", "images", "name", "img-of-a"));
	assert_true(listed(a, "/v1/images", "images", "name", "busybox")); /* the admin's */
	assert_false(listed(b, "/v1/images", "images", "name", "img-of-a"));
	assert_true(listed(KEY, "/v1/images", "images", "name", "img-of-a"));
	expect_as(b, "POST", "/v1/sandboxes", "{\"image\":\"img-of-a\"}", 404);
	expect_as(b, "DELETE", "/v1/images/img-of-a", NULL, 404);
	/* Neither A's name nor an admin image's is B's to import over. */
	assert_int_equal(image_import_as(b, "img-of-a"), 409);
	assert_int_equal(image_import_as(b, "busybox"), 409);
	expect_as(b, "DELETE", "/v1/images/busybox", NULL, 409);

	e2e_resp r;
	call(&r, a, "POST", "/v1/sandboxes", "{\"image\":\"img-of-a\"}");
	expect(&r, 201, NULL, NULL);
	char *sbx = e2e_printf("/v1/sandboxes/%s", jstr(r.json, "id"));
	e2e_resp_free(&r);
	expect_as(a, "DELETE", sbx, NULL, 204);
	expect_as(a, "DELETE", "/v1/images/img-of-a", NULL, 204);
	free(e2e_sandlot_ok("key", "rm", "img-a", NULL));
	free(e2e_sandlot_ok("key", "rm", "img-b", NULL));
	free(sbx);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_key_create_ls_rm),
	    E2E_TEST(test_each_key_sees_its_own),
	    E2E_TEST(test_images_per_key),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

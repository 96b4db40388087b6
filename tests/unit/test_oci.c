/* test_oci.c — the JSON of container images (index, manifest, docker's manifest.json,
 * config), whiteout names, and merging layers with whiteouts (layers_apply) on real trees. */
#include "fsutil.h"
#include "layers.h"
#include "oci.h"

#include <fcntl.h>
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

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static void test_whiteout_kinds(void **state)
{
	const char *t = NULL;
	assert_int_equal(oci_whiteout_kind("file", &t), OCI_WH_NONE);
	assert_int_equal(oci_whiteout_kind(".whx", &t), OCI_WH_NONE);
	assert_int_equal(oci_whiteout_kind(".wh.gone", &t), OCI_WH_FILE);
	assert_string_equal(t, "gone");
	assert_int_equal(oci_whiteout_kind(".wh..wh..opq", &t), OCI_WH_OPAQUE);
	assert_int_equal(oci_whiteout_kind(".wh..wh.plnk", &t), OCI_WH_META);
	assert_int_equal(oci_whiteout_kind(".wh...", &t), OCI_WH_INVALID);
	assert_int_equal(oci_whiteout_kind(".wh..", &t), OCI_WH_INVALID);
	assert_int_equal(oci_whiteout_kind(".wh.", &t), OCI_WH_INVALID);
	assert_int_equal(oci_whiteout_kind(".wh..hidden", &t), OCI_WH_FILE);
	assert_string_equal(t, ".hidden");
}

static void test_digests(void **state)
{
	assert_true(oci_digest_ok(D1));
	assert_false(oci_digest_ok("sha256:11"));
	assert_false(oci_digest_ok("sha512:1111111111111111111111111111111111111111111111111111111111111111"));
	assert_false(oci_digest_ok("sha256:111111111111111111111111111111111111111111111111111111111111111A"));
}

static int pick(const char *json, sl_oci_desc *d, char *picked, sl_err *e)
{
	return oci_index_pick(json, strlen(json), "linux/amd64", d, picked, 160, e);
}

static void test_index_pick(void **state)
{
	sl_oci_desc d;
	char picked[160];
	sl_err e;
	/* One manifest without a platform: taken. */
	assert_int_equal(pick("{\"manifests\":[{\"mediaType\":\"m\",\"digest\":\"" D1
			      "\",\"size\":3}]}",
			      &d, picked, &e),
			 0);
	assert_string_equal(d.digest, D1);
	/* Several: the host's, saying which of what. Attestations skipped. */
	const char *multi =
	    "{\"manifests\":[{\"digest\":\"" D1 "\",\"size\":3,\"platform\":{\"os\":\"linux\","
	    "\"architecture\":\"arm64\",\"variant\":\"v8\"}},{\"digest\":\"" D2
	    "\",\"size\":4,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}},"
	    "{\"digest\":\"" D1 "\",\"size\":3,\"platform\":{\"os\":\"unknown\",\"architecture\":"
	    "\"unknown\"}}]}";
	assert_int_equal(pick(multi, &d, picked, &e), 0);
	assert_string_equal(d.digest, D2);
	assert_non_null(strstr(picked, "linux/arm64/v8"));
	assert_non_null(strstr(picked, "linux/amd64 (of 3"));
	/* Only another platform: an error naming what there is. */
	const char *arm = "{\"manifests\":[{\"digest\":\"" D1 "\",\"size\":3,\"platform\":{\"os\":"
			  "\"linux\",\"architecture\":\"arm64\"}}]}";
	assert_int_equal(pick(arm, &d, picked, &e), -1);
	assert_int_equal(e.kind, SL_INVALID);
	assert_non_null(strstr(e.msg, "it has: linux/arm64"));
	/* Bad shapes. */
	assert_int_equal(pick("{\"manifests\":[]}", &d, picked, &e), -1);
	assert_int_equal(pick("[]", &d, picked, &e), -1);
	assert_int_equal(pick("{\"manifests\":[{\"digest\":\"sha256:12\",\"size\":1}]}", &d, picked,
			      &e),
			 -1);
	assert_non_null(strstr(e.msg, "digest"));
	assert_int_equal(pick("{\"manifests\":[{\"digest\":\"" D1 "\"}]}", &d, picked, &e), -1);
}

static int manifest(const char *json, sl_oci_desc *cfg, sl_oci_desc **ls, size_t *n, sl_err *e)
{
	return oci_manifest_parse(json, strlen(json), cfg, ls, n, e);
}

static void test_manifest(void **state)
{
	sl_oci_desc cfg, *ls;
	size_t n;
	sl_err e;
	const char *ok = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"c\",\"digest\":\"" D1
			 "\",\"size\":10},\"layers\":[{\"mediaType\":\"application/vnd.oci.image."
			 "layer.v1.tar+gzip\",\"digest\":\"" D2 "\",\"size\":20},{\"mediaType\":"
			 "\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":\"" D1
			 "\",\"size\":30}]}";
	assert_int_equal(manifest(ok, &cfg, &ls, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(cfg.digest, D1);
	assert_int_equal(ls[1].size, 30);
	free(ls);
	const char *foreign = "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1
			      "\",\"size\":10},\"layers\":[{\"mediaType\":\"application/vnd.oci."
			      "image.layer.nondistributable.v1.tar\",\"digest\":\"" D2
			      "\",\"size\":20}]}";
	assert_int_equal(manifest(foreign, &cfg, &ls, &n, &e), -1);
	assert_non_null(strstr(e.msg, "layer 1"));
	assert_null(ls);
	assert_int_equal(manifest("{\"schemaVersion\":1}", &cfg, &ls, &n, &e), -1);
	assert_int_equal(manifest("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image."
				  "index.v1+json\"}",
				  &cfg, &ls, &n, &e),
			 -1);
	assert_non_null(strstr(e.msg, "index"));
}

static void test_docker_manifest(void **state)
{
	char *cfg, **ls;
	size_t n;
	sl_err e;
	const char *ok = "[{\"Config\":\"abc.json\",\"RepoTags\":[\"x:1\"],\"Layers\":[\"a/layer.tar\","
			 "\"b.tar\"]}]";
	assert_int_equal(oci_docker_manifest_parse(ok, strlen(ok), &cfg, &ls, &n, &e), 0);
	assert_string_equal(cfg, "abc.json");
	assert_int_equal(n, 2);
	assert_string_equal(ls[1], "b.tar");
	free(cfg);
	oci_strv_free(ls, n);
	const char *two = "[{\"Config\":\"a\",\"Layers\":[]},{\"Config\":\"b\",\"Layers\":[]}]";
	assert_int_equal(oci_docker_manifest_parse(two, strlen(two), &cfg, &ls, &n, &e), -1);
	assert_non_null(strstr(e.msg, "exactly one"));
	const char *up = "[{\"Config\":\"a\",\"Layers\":[\"x/../../etc/passwd\"]}]";
	assert_int_equal(oci_docker_manifest_parse(up, strlen(up), &cfg, &ls, &n, &e), -1);
	assert_non_null(strstr(e.msg, "Layers[0]"));
	const char *abs = "[{\"Config\":\"/etc/passwd\",\"Layers\":[]}]";
	assert_int_equal(oci_docker_manifest_parse(abs, strlen(abs), &cfg, &ls, &n, &e), -1);
}

static int config(const char *json, cJSON **out, sl_err *e)
{
	return oci_config_parse(json, strlen(json), out, e);
}

static void test_config(void **state)
{
	cJSON *c;
	sl_err e;
	const char *ok = "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"User\":\"app\","
			 "\"Env\":[\"A=1\",\"PATH=/bin\"],\"WorkingDir\":\"/srv\",\"Entrypoint\":"
			 "[\"/bin/sh\",\"-c\"],\"Cmd\":null,\"Labels\":{\"k\":\"v\"},\"ExposedPorts\":"
			 "{\"80/tcp\":{},\"53/udp\":{}}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":"
			 "[\"" D1 "\"]}}";
	assert_int_equal(config(ok, &c, &e), 0);
	assert_string_equal(cJSON_GetObjectItem(c, "platform")->valuestring, "linux/amd64");
	assert_string_equal(cJSON_GetObjectItem(c, "user")->valuestring, "app");
	assert_string_equal(cJSON_GetObjectItem(c, "workingDir")->valuestring, "/srv");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "env")), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "entrypoint")), 2);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "cmd")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "exposedPorts")), 2);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "diffIds"), 0)->valuestring,
			    D1);
	cJSON_Delete(c);
	/* No "config" at all (scratch images): empty defaults. */
	assert_int_equal(config("{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"diff_ids\""
				":[]}}",
				&c, &e),
			 0);
	assert_string_equal(cJSON_GetObjectItem(c, "user")->valuestring, "");
	assert_null(cJSON_GetObjectItem(c, "startCmd"));
	cJSON_Delete(c);
	/* sandlot's StartCmd/ReadyCmd: kept as they are (a multi-line shell text too). */
	assert_int_equal(config("{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{"
				"\"StartCmd\":\"cd /srv &&\\n exec app\",\"ReadyCmd\":\"sleep 1\"},"
				"\"rootfs\":{\"diff_ids\":[]}}",
				&c, &e),
			 0);
	assert_string_equal(cJSON_GetObjectItem(c, "startCmd")->valuestring,
			    "cd /srv &&\n exec app");
	assert_string_equal(cJSON_GetObjectItem(c, "readyCmd")->valuestring, "sleep 1");
	cJSON_Delete(c);
	static const char *const bad[][2] = {
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"StartCmd\":[\"x\"]},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "StartCmd"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"ReadyCmd\":\"\"},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "ReadyCmd"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"StartCmd\":\"a\\u0001\"},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "StartCmd"},
	    {"{\"architecture\":\"amd64\",\"rootfs\":{\"diff_ids\":[]}}", "os"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\"}", "diff_ids"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"diff_ids\":[\"x\"]}}",
	     "diff_ids[0]"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Env\":[\"NOEQ\"]},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "K=V"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Env\":[1]},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "Env[0]"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"WorkingDir\":\"rel\"},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "WorkingDir"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"ExposedPorts\":"
	     "{\"99999\":{}}},\"rootfs\":{\"diff_ids\":[]}}",
	     "exposed port"},
	    {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"User\":\"a b\"},"
	     "\"rootfs\":{\"diff_ids\":[]}}",
	     "User"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(config(bad[i][0], &c, &e), -1);
		if (!strstr(e.msg, bad[i][1]))
			fail_msg("case %zu: '%s' not in: %s", i, bad[i][1], e.msg);
		assert_null(c);
	}
}

/* ---- layers_apply on real trees ---- */

static void put(const char *root, const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (!text) {
		assert_int_equal(mkdir(p, 0755), 0);
		return;
	}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *root, const char *rel)
{
	static char buf[256];
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int apply(const char *flat, const char *layer, sl_err *e)
{
	int ffd = open(flat, O_RDONLY | O_DIRECTORY);
	int lfd = open(layer, O_RDONLY | O_DIRECTORY);
	int r = layers_apply(ffd, lfd, "layer 2", e);
	close(ffd);
	close(lfd);
	return r;
}

static void test_layers_apply(void **state)
{
	char tmp[] = "/tmp/sl_test_oci_XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char flat[64], l1[64], l2[64], p[128];
	snprintf(flat, sizeof(flat), "%s/flat", tmp);
	snprintf(l1, sizeof(l1), "%s/l1", tmp);
	snprintf(l2, sizeof(l2), "%s/l2", tmp);
	assert_int_equal(mkdir(flat, 0755), 0);
	assert_int_equal(mkdir(l1, 0755), 0);
	assert_int_equal(mkdir(l2, 0755), 0);
	put(l1, "d", NULL);
	put(l1, "d/gone", "g");
	put(l1, "d/keep", "k");
	put(l1, "opq", NULL);
	put(l1, "opq/old", "o");
	put(l1, "link", NULL); /* a directory a later symlink replaces */
	put(l1, "link/f", "f");
	put(l1, ".wh.ignored", ""); /* a whiteout in the first layer: nothing below it */
	put(l2, "d", NULL);
	put(l2, "d/.wh.gone", "");
	put(l2, "d/new", "n");
	put(l2, "opq", NULL);
	put(l2, "opq/.wh..wh..opq", "");
	put(l2, "opq/fresh", "x");
	put(l2, ".wh.nothing-there", "");
	snprintf(p, sizeof(p), "%s/link", l2);
	assert_int_equal(symlink("/etc", p), 0);
	sl_err e;
	assert_int_equal(apply(flat, l1, &e), 0);
	assert_null(slurp(flat, ".wh.ignored"));
	assert_int_equal(apply(flat, l2, &e), 0);
	assert_null(slurp(flat, "d/gone"));
	assert_string_equal(slurp(flat, "d/keep"), "k");
	assert_string_equal(slurp(flat, "d/new"), "n");
	assert_null(slurp(flat, "opq/old"));
	assert_string_equal(slurp(flat, "opq/fresh"), "x");
	assert_null(slurp(flat, "opq/.wh..wh..opq"));
	struct stat st, st2;
	snprintf(p, sizeof(p), "%s/link", flat);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	/* Files are hardlinks of the layer's: stored once. */
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s/d/new", flat);
	snprintf(b, sizeof(b), "%s/d/new", l2);
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(stat(b, &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino);
	/* A whiteout naming ".." is refused, naming the layer and the path. */
	char l3[64];
	snprintf(l3, sizeof(l3), "%s/l3", tmp);
	assert_int_equal(mkdir(l3, 0755), 0);
	put(l3, "d", NULL);
	put(l3, "d/.wh...", "");
	assert_int_equal(apply(flat, l3, &e), -1);
	assert_int_equal(e.kind, SL_INVALID);
	assert_non_null(strstr(e.msg, "layer 2: whiteout '/d/.wh...'"));
	assert_string_equal(slurp(flat, "d/keep"), "k");
	assert_int_equal(fs_remove_tree(tmp, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whiteout_kinds), cmocka_unit_test(test_digests),
	    cmocka_unit_test(test_index_pick),	   cmocka_unit_test(test_manifest),
	    cmocka_unit_test(test_docker_manifest), cmocka_unit_test(test_config),
	    cmocka_unit_test(test_layers_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_images.c — container images in: docker-archive and oci-archive files (written by
 * skopeo from OCI layouts that oci_fixture.py builds), their layers, whiteouts and config,
 * layers stored once, and refusals (bad digests, truncated blobs, hostile layers). */
#include "common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* A layout of SCENARIO under the test root, made once; its path (caller frees). */
static char *layout(const char *scenario)
{
	char *dir = e2e_printf("%s/oci-%s", e2e_root(), scenario);
	struct stat st;
	if (stat(dir, &st) == 0)
		return dir;
	char *bb = e2e_build_path("images/busybox.tar");
	e2e_result r;
	char *argv[] = {"/usr/bin/python3", "tests/e2e/oci_fixture.py", bb, dir, (char *)scenario,
			NULL};
	if (e2e_run(&r, NULL, 0, 60000, argv) != 0)
		fail_msg("oci_fixture.py %s: %s", scenario, r.err);
	e2e_result_free(&r);
	free(bb);
	return dir;
}

/* SCENARIO as an archive of KIND: "docker-archive" or "oci-archive" by skopeo, "tar" (an
 * oci-archive made by tar, for layouts skopeo would refuse to copy). */
static char *archive(const char *scenario, const char *kind)
{
	char *dir = layout(scenario);
	char *file = e2e_printf("%s/%s.%s.tar", e2e_root(), scenario, kind);
	e2e_result r;
	unlink(file);
	if (!strcmp(kind, "tar")) {
		char *argv[] = {"/bin/tar", "-C", dir, "-cf", file, ".", NULL};
		e2e_run(&r, NULL, 0, 60000, argv);
	} else {
		char *src = e2e_printf("oci:%s:latest", dir);
		char *dst = !strcmp(kind, "docker-archive")
				? e2e_printf("docker-archive:%s:fixture/%s:latest", file, scenario)
				: e2e_printf("oci-archive:%s:latest", file);
		char *argv[] = {"/usr/bin/skopeo", "--insecure-policy", "copy", "-q", src, dst, NULL};
		e2e_run(&r, NULL, 0, 60000, argv);
		free(src);
		free(dst);
	}
	if (r.status != 0)
		fail_msg("making %s as %s: %s", scenario, kind, r.err);
	e2e_result_free(&r);
	free(dir);
	return file;
}

static void import_ok(const char *name, const char *file)
{
	free(e2e_sandlot_ok("image", "import", name, file, NULL));
}

/* `sandlot run --image IMG -- sh -c LINE`, its stdout. */
static char *run_sh(const char *img, const char *line)
{
	return e2e_sandlot_ok("run", "--image", img, "--", "sh", "-c", line, NULL);
}

/* Entries of <state>/images/SUB, dot files left out. */
static int count_dir(const char *sub)
{
	char *p = e2e_printf("%s/images/%s", getenv("SANDLOT_STATE_DIR"), sub);
	DIR *d = opendir(p);
	free(p);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static cJSON *image_json(const char *name)
{
	char *out = e2e_sandlot_ok("image", "inspect", name, NULL);
	cJSON *o = cJSON_Parse(out);
	assert_non_null(o);
	free(out);
	return o;
}

static void test_layers_whiteouts_and_links(void **state)
{
	char *file = archive("layers", "oci-archive");
	import_ok("layers", file);
	/* Whiteout, opaque dir, a file removed then re-added, the symlink of layer 3 replaced
	 * by layer 4's directory (nothing written through it into /etc). */
	char *out = run_sh("layers", "cd /; ls data | tr '\\n' ' '; echo; ls opq | tr '\\n' ' '; "
				     "echo; cat data/readd; test -d swap -a ! -L swap && ls swap; "
				     "test -e etc/x || echo no-etc-x; test -e etc/inner || echo ok");
	assert_string_equal(out, "hl3 hl4 keep readd \nc \nv2\nx\nno-etc-x\nok");
	free(out);
	/* Hardlinks within a layer stay one file; the owner of layer 2's directory kept. */
	out = run_sh("layers", "cd /; [ $(stat -c %i hl1) = $(stat -c %i hl2) ] && "
			       "[ $(stat -c %i data/hl3) = $(stat -c %i data/hl4) ] && "
			       "stat -c '%u:%g %a' data home/app");
	assert_string_equal(out, "1234:2345 755\n1234:2345 750");
	free(out);
	free(file);
}

static void test_config_defaults(void **state)
{
	char *out = e2e_sandlot_ok("run", "--image", "layers", NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	/* -e, -w and -u win over the image's, as docker's do. */
	out = e2e_sandlot_ok("run", "-e", "GREETING=hi", "-w", "/tmp", "-u", "0:0", "--image",
			     "layers", NULL);
	assert_string_equal(out, "hi in /tmp as 0:0");
	free(out);
	/* A command given replaces Entrypoint + Cmd; the environment stays the image's. */
	out = run_sh("layers", "echo $GREETING; pwd");
	assert_string_equal(out, "hello from the image\n/data");
	free(out);
	cJSON *o = image_json("layers");
	cJSON *cfg = cJSON_GetObjectItem(o, "config");
	assert_string_equal(cJSON_GetObjectItem(o, "format")->valuestring, "oci-archive");
	assert_string_equal(cJSON_GetObjectItem(o, "platform")->valuestring, "linux/amd64");
	assert_int_equal(cJSON_GetObjectItem(o, "layers")->valueint, 5);
	assert_string_equal(cJSON_GetObjectItem(o, "user")->valuestring, "app");
	assert_string_equal(cJSON_GetObjectItem(o, "workingDirectory")->valuestring, "/data");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "cmd"), 0)->valuestring,
			    "sh");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cfg, "entrypoint")));
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "labels"), "org.example.kind")->valuestring,
	    "fixture");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "exposedPorts"), 0)
				->valuestring,
			    "8080/tcp");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cfg, "layers")), 5);
	cJSON_Delete(o);
	/* A sandbox made from it has the image's labels and env under its own. */
	char *id = e2e_sandlot_ok("create", "--image", "layers", "--label", "mine=1", NULL);
	char *insp = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(insp, "org.example.kind"));
	assert_true(e2e_contains(insp, "GREETING"));
	free(insp);
	free(e2e_sandlot_ok("rm", "-f", id, NULL));
	free(id);
}

static void test_docker_archive_shares_layers(void **state)
{
	int before = count_dir("diffs");
	char *file = archive("layers", "docker-archive");
	import_ok("layers-docker", file);
	/* The same image by another way: the same config digest, no layer stored twice. */
	cJSON *a = image_json("layers"), *b = image_json("layers-docker");
	assert_string_equal(cJSON_GetObjectItem(a, "digest")->valuestring,
			    cJSON_GetObjectItem(b, "digest")->valuestring);
	assert_string_equal(cJSON_GetObjectItem(b, "format")->valuestring, "docker-archive");
	assert_int_equal(count_dir("diffs"), before);
	cJSON_Delete(a);
	cJSON_Delete(b);
	char *out = e2e_sandlot_ok("run", "--image", "layers-docker", NULL);
	assert_string_equal(out, "hello from the image in /data as 1234:2345");
	free(out);
	/* An image sharing the first two layers adds only its own. */
	char *sib = archive("sibling", "oci-archive");
	import_ok("sibling", sib);
	assert_int_equal(count_dir("diffs"), before + 1);
	out = run_sh("sibling", "cat /sibling; cat /data/gone");
	assert_string_equal(out, "mine\ngone");
	free(out);
	cJSON *s = image_json("sibling");
	double size = cJSON_GetObjectItem(s, "sizeBytes")->valuedouble;
	double shared = cJSON_GetObjectItem(s, "sharedBytes")->valuedouble;
	assert_true(shared > 0 && shared < size);
	assert_true(cJSON_GetObjectItem(s, "ownBytes")->valuedouble == size - shared);
	cJSON_Delete(s);
	/* rm frees only what nothing else holds. */
	free(e2e_sandlot_ok("image", "rm", "layers", NULL));
	assert_int_equal(count_dir("diffs"), before + 1);
	free(e2e_sandlot_ok("image", "rm", "layers-docker", NULL));
	assert_int_equal(count_dir("diffs"), before - 5 + 3);
	out = run_sh("sibling", "cat /sibling");
	assert_string_equal(out, "mine");
	free(out);
	free(e2e_sandlot_ok("image", "rm", "sibling", NULL));
	assert_int_equal(count_dir("diffs"), before - 5);
	assert_int_equal(count_dir("meta"), 0);
	assert_int_equal(count_dir("tmp"), 0);
	free(file);
	free(sib);
}

static void test_multi_platform(void **state)
{
	char *file = archive("multi", "tar");
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "image", "import", "multi", file, NULL);
	assert_int_equal(r.status, 0);
	assert_true(e2e_contains(r.err, "took the linux/amd64"));
	assert_true(e2e_contains(r.err, "linux/arm64"));
	e2e_result_free(&r);
	char *out = e2e_sandlot_ok("run", "--image", "multi", NULL);
	assert_string_equal(out, "amd64");
	free(out);
	free(e2e_sandlot_ok("image", "rm", "multi", NULL));
	free(file);
}

/* FILE refused with a message holding WANT; nothing listed, nothing left in the store. */
static void import_refused(const char *name, const char *file, const char *want)
{
	int diffs = count_dir("diffs"), layers = count_dir("layers");
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "image", "import", name, file, NULL);
	assert_int_equal(r.status, 125);
	if (!e2e_contains(r.err, want))
		fail_msg("import %s: wanted '%s' in: %s", name, want, r.err);
	assert_true(e2e_contains(r.err, name));
	e2e_result_free(&r);
	char *ls = e2e_sandlot_ok("image", "ls", NULL);
	assert_false(e2e_contains(ls, name));
	free(ls);
	assert_int_equal(count_dir("diffs"), diffs);
	assert_int_equal(count_dir("layers"), layers);
	assert_int_equal(count_dir("meta"), 0);
	assert_int_equal(count_dir("tmp"), 0);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *scenario, *want;
	} cases[] = {
	    {"armonly", "no linux/amd64 manifest (it has: linux/arm64)"},
	    {"baddigest", "layer 3 of 5"},
	    {"truncated", "layer 2 of 5"},
	    {"escape", "contains a '..' component"},
	    {"whdotdot", "whiteout '/etc/.wh...' names '..'"},
	    {"crosslink", "is not an earlier entry"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *file = archive(cases[i].scenario, "tar");
		char *name = e2e_printf("bad-%s", cases[i].scenario);
		import_refused(name, file, cases[i].want);
		free(name);
		free(file);
	}
	/* A digest mismatch says so, naming both digests. */
	char *file = archive("baddigest", "tar");
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "image", "import", "bad", file, NULL);
	assert_true(e2e_contains(r.err, "digest mismatch"));
	e2e_result_free(&r);
	free(file);
	file = archive("truncated", "tar");
	e2e_sandlot(&r, NULL, 0, "image", "import", "bad", file, NULL);
	assert_true(e2e_contains(r.err, "truncated"));
	e2e_result_free(&r);
	free(file);
}

static void test_tarball_unchanged(void **state)
{
	cJSON *o = image_json("busybox");
	assert_string_equal(cJSON_GetObjectItem(o, "format")->valuestring, "tar");
	assert_null(cJSON_GetObjectItem(o, "config"));
	cJSON_Delete(o);
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "run", "--image", "busybox", NULL);
	assert_int_equal(r.status, 125);
	assert_true(e2e_contains(r.err, "names none"));
	e2e_result_free(&r);
}

/* The API: import a container archive as the body, create with runImageCommand, /v1/run
 * with no command, GET /v1/images/{name}; the spec check over what was answered. */
static void test_api(void **state)
{
	e2e_daemon d;
	char *sock = e2e_printf("%s/img.sock", e2e_root());
	char *captures = e2e_printf("%s/img-captures.jsonl", e2e_root());
	e2e_daemon_start(&d, sock, false, NULL);
	e2e_http_use(&d, captures);
	char *file = archive("layers", "docker-archive");
	size_t len;
	char *body = e2e_read_file_len(file, &len);
	e2e_resp r;
	e2e_http_q(&r, &(e2e_req){.method = "POST", .path = "/v1/images?name=api-layers",
				  .body = body, .len = len});
	assert_int_equal(r.status, 201);
	assert_string_equal(cJSON_GetObjectItem(r.json, "format")->valuestring, "docker-archive");
	e2e_resp_free(&r);
	e2e_http(&r, "GET", "/v1/images/api-layers", NULL);
	assert_int_equal(r.status, 200);
	cJSON *cfg = cJSON_GetObjectItem(r.json, "config");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(cfg, "env"), 1)->valuestring,
			    "GREETING=hello from the image");
	e2e_resp_free(&r);
	/* The image's command as a background execution of a new sandbox. */
	e2e_http(&r, "POST", "/v1/sandboxes", "{\"image\":\"api-layers\",\"runImageCommand\":true}");
	assert_int_equal(r.status, 201);
	char *id = strdup(cJSON_GetObjectItem(r.json, "id")->valuestring);
	char *eid = strdup(cJSON_GetObjectItem(r.json, "imageCommandExecution")->valuestring);
	e2e_resp_free(&r);
	char *path = e2e_printf("/v1/sandboxes/%s/executions/%s?wait=20s", id, eid);
	e2e_http(&r, "GET", path, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "completed");
	e2e_resp_free(&r);
	free(path);
	path = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, eid);
	e2e_http(&r, "GET", path, NULL);
	assert_string_equal(r.body, "hello from the image in /data as 1234:2345\n");
	e2e_resp_free(&r);
	free(path);
	path = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "DELETE", path, NULL);
	assert_int_equal(r.status, 204);
	e2e_resp_free(&r);
	free(path);
	/* /v1/run with no command runs it; env given wins over the image's. */
	e2e_http(&r, "POST", "/v1/run", "{\"image\":\"api-layers\",\"env\":{\"GREETING\":\"hey\"}}");
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "stdout")->valuestring,
			    "hey in /data as 1234:2345\n");
	e2e_resp_free(&r);
	/* An image with no command: refused before anything is made. */
	e2e_http(&r, "POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"runImageCommand\":true}");
	assert_int_equal(r.status, 400);
	assert_true(e2e_contains(r.body, "names no command"));
	e2e_resp_free(&r);
	e2e_http(&r, "POST", "/v1/run", "{\"image\":\"busybox\"}");
	assert_int_equal(r.status, 400);
	e2e_resp_free(&r);
	e2e_http(&r, "DELETE", "/v1/images/api-layers", NULL);
	assert_int_equal(r.status, 204);
	e2e_resp_free(&r);
	free(e2e_spec_check(sock, captures));
	e2e_daemon_stop(&d);
	free(id);
	free(eid);
	free(body);
	free(file);
	free(sock);
	free(captures);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_layers_whiteouts_and_links), E2E_TEST(test_config_defaults),
	    E2E_TEST(test_docker_archive_shares_layers), E2E_TEST(test_multi_platform),
	    E2E_TEST(test_refusals), E2E_TEST(test_tarball_unchanged), E2E_TEST(test_api),
	};
	return e2e_run_tests(tests);
}

/* test_faults.c — what a crash leaves, and `sandlot doctor`: records that cannot be read
 * are listed as broken and deleted with what they held; the daemon killed with -9 at each
 * crash point of create, delete, snapshot and import (docs/testing.md, "Crash points")
 * leaves, after a restart, nothing half-made listed, nothing committed lost, and nothing
 * `sandlot doctor --repair` cannot clean (exit 0 after). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common.h"

#include <archive.h>
#include <archive_entry.h>

static int nsock;

/* A daemon on a fresh socket of the root; CRASH: the crash point it dies at (NULL none). */
static void start(e2e_daemon *d, const char *crash)
{
	char *sock = e2e_printf("%s/faults-%d.sock", e2e_root(), nsock++);
	if (crash)
		setenv("SANDLOT_CRASH_POINT", crash, 1);
	e2e_daemon_start(d, sock, false, NULL);
	unsetenv("SANDLOT_CRASH_POINT");
	e2e_http_use(d, NULL);
	free(sock);
}

/* POST /v1/sandboxes of busybox: the new id (the test fails otherwise). */
static char *create_ok(void)
{
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes", "{\"image\": \"busybox\"}");
	assert_int_equal(r.status, 201);
	char *id = strdup(cJSON_GetObjectItemCaseSensitive(r.json, "id")->valuestring);
	e2e_resp_free(&r);
	return id;
}

/* The status GET /v1/sandboxes gives ID ("" when it is not listed), and its reason. */
static char *listed_status(const char *id, char **reason)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	assert_int_equal(r.status, 200);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r.json, "sandboxes"), *it;
	char *st = strdup("");
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *iid = cJSON_GetObjectItemCaseSensitive(it, "id");
		if (!cJSON_IsString(iid) || strcmp(iid->valuestring, id))
			continue;
		free(st);
		st = strdup(cJSON_GetObjectItemCaseSensitive(it, "status")->valuestring);
		const cJSON *rs = cJSON_GetObjectItemCaseSensitive(it, "reason");
		if (reason)
			*reason = strdup(cJSON_IsString(rs) ? rs->valuestring : "");
	}
	e2e_resp_free(&r);
	return st;
}

/* How many sandboxes GET /v1/sandboxes lists. */
static int listed_count(void)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	assert_int_equal(r.status, 200);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r.json, "sandboxes");
	int n = cJSON_GetArraySize(arr);
	e2e_resp_free(&r);
	return n;
}

/* `sandlot doctor ARG...`: its exit status; its stdout in *OUT when OUT. */
static int doctor(char **out, const char *arg)
{
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "doctor", arg, NULL);
	int st = r.status;
	if (st > 1 || (out == NULL && st != 0))
		fprintf(stderr, "doctor %s: exit %d\n%s%s", arg ? arg : "", st, r.out, r.err);
	if (out)
		*out = strdup(r.out);
	e2e_result_free(&r);
	return st;
}

static void record_write(const char *id, const char *data, size_t len)
{
	char *p = e2e_printf("%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	free(p);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* ---- broken records ------------------------------------------------------------------ */

/* A record that cannot be read (GARBAGE: not JSON; else over the 1 MiB cap) is listed
 * as broken with its reason, by the API and `sandlot ls`; doctor finds it (exit 1); a
 * DELETE (or, BY_DOCTOR, `doctor --repair`) frees its cgroup, processes and layer. */
static void broken_record(bool garbage, bool by_doctor)
{
	e2e_daemon d;
	start(&d, NULL);
	char *id = create_ok();
	free(e2e_sh_ok(id, "sleep 1000 >/dev/null 2>&1 &"));
	if (garbage) {
		record_write(id, "{\"schema\": 2, \"id\": garbage", 27);
	} else {
		size_t n = (1 << 20) + 4096;
		char *big = malloc(n);
		memset(big, ' ', n);
		memcpy(big, "{\"id\": \"x\"}", 11);
		record_write(id, big, n);
		free(big);
	}
	char *reason = NULL, *st = listed_status(id, &reason);
	assert_string_equal(st, "broken");
	assert_true(e2e_contains(reason, "record unreadable: "));
	assert_true(e2e_contains(reason, garbage ? "not a JSON object" : "larger than"));
	free(st);
	free(reason);
	e2e_resp r;
	char *path = e2e_printf("/v1/sandboxes/%s", id);
	e2e_http(&r, "GET", path, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(r.json, "status")->valuestring,
			    "broken");
	e2e_resp_free(&r);
	char *ls = e2e_sandlot_ok("ls", NULL);
	assert_true(e2e_contains(ls, id) && e2e_contains(ls, "broken"));
	free(ls);
	char *out;
	assert_int_equal(doctor(&out, NULL), 1);
	assert_true(e2e_contains(out, id));
	free(out);

	char *layer = e2e_printf("%s/store/sandboxes/%s", getenv("SANDLOT_STATE_DIR"), id);
	assert_true(exists(layer));
	if (by_doctor) {
		assert_int_equal(doctor(&out, "--repair"), 0);
		assert_true(e2e_contains(out, "[repaired]"));
		free(out);
	} else {
		e2e_http(&r, "DELETE", path, NULL);
		assert_int_equal(r.status, 204);
		e2e_resp_free(&r);
	}
	e2e_http(&r, "GET", path, NULL);
	assert_int_equal(r.status, 404);
	e2e_resp_free(&r);
	assert_false(exists(layer));
	assert_int_equal(doctor(NULL, NULL), 0);
	e2e_daemon_stop(&d);
	free(layer);
	free(path);
	free(id);
}

static void test_garbage_record_is_broken_and_deleted(void **state)
{
	broken_record(true, false);
}

static void test_oversized_record_is_broken_and_repaired(void **state)
{
	broken_record(false, true);
}

/* As any user but root, doctor cannot check: exit 2. */
static void test_doctor_as_non_root_exits_2(void **state)
{
	char *bin = e2e_build_path("sandlot");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(99);
		execl(bin, bin, "doctor", (char *)NULL);
		_exit(98);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	free(bin);
}

/* Beside a live daemon with running, paused and stopped sandboxes (and its spares made
 * ahead), doctor finds nothing, and --repair touches nothing. */
static void test_doctor_beside_live_daemon_is_clean(void **state)
{
	e2e_daemon d;
	start(&d, NULL);
	char *ids[3];
	for (int i = 0; i < 3; i++)
		ids[i] = create_ok();
	free(e2e_sandlot_ok("pause", ids[1], NULL));
	free(e2e_sandlot_ok("stop", ids[2], NULL));
	char *out;
	assert_int_equal(doctor(&out, NULL), 0);
	assert_true(e2e_contains(out, "clean"));
	free(out);
	assert_int_equal(doctor(NULL, "--repair"), 0);
	const char *want[] = {"running", "paused", "stopped"};
	for (int i = 0; i < 3; i++) {
		char *st = listed_status(ids[i], NULL);
		assert_string_equal(st, want[i]);
		free(st);
	}
	free(e2e_sandlot_ok("rm", ids[0], ids[1], ids[2], NULL));
	for (int i = 0; i < 3; i++)
		free(ids[i]);
	e2e_daemon_stop(&d);
}

/* ---- kill -9 at each crash point ------------------------------------------------------- */

enum step { CREATE, DELETE, SNAPSHOT, IMPORT, IMPORT_OCI, BUILD };

static void fill_one_file(struct archive *a)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "etc/crashed");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, 6);
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(a, "crash\n", 6), 6);
	archive_entry_free(e);
}

/* A build context: a Dockerfile whose RUN makes a file. */
static void fill_dockerfile(struct archive *a)
{
	static const char df[] = "FROM busybox\nRUN echo built > /built\n";
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "Dockerfile");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, sizeof(df) - 1);
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(a, df, sizeof(df) - 1), (ssize_t)sizeof(df) - 1);
	archive_entry_free(e);
}

/* An OCI image-layout archive of a 3-layer image (tests/e2e/oci_fixture.py, `sibling`)
 * under the test root, made once; its path (caller frees). */
static char *oci_archive(void)
{
	char *tar = e2e_printf("%s/oci-sibling.tar", e2e_root());
	if (access(tar, F_OK) == 0)
		return tar;
	char *bb = e2e_build_path("images/busybox.tar");
	char *sh = e2e_printf("d=%s/oci-sibling && python3 tests/e2e/oci_fixture.py %s $d sibling "
			      "&& tar -C $d -cf %s . && rm -rf $d",
			      e2e_root(), bb, tar);
	char *argv[] = {"/bin/sh", "-c", sh, NULL};
	e2e_result r;
	if (e2e_run(&r, NULL, 0, 60000, argv) != 0)
		fail_msg("oci_fixture.py sibling: %s", r.err);
	e2e_result_free(&r);
	free(sh);
	free(bb);
	return tar;
}

/* Q's body: the file at PATH (freed), which is removed by the suite's cleanup. */
static void body_from_file(e2e_req *q, char *path)
{
	size_t len;
	q->body = e2e_read_file_len(path, &len);
	assert_non_null(q->body);
	q->len = len;
	free(path);
}

/* Run STEP against D, which dies at its crash point; return the id it was about. */
static char *do_step(e2e_daemon *d, enum step step, const char *keep)
{
	e2e_resp r;
	char *victim = NULL, *path = NULL;
	e2e_req q = {.method = "POST", .d = d, .timeout_ms = 30000};
	switch (step) {
	case CREATE:
		q.path = "/v1/sandboxes";
		q.body = "{\"image\": \"busybox\"}";
		break;
	case DELETE:
		victim = create_ok();
		free(e2e_sh_ok(victim, "echo doomed > /doomed"));
		q.method = "DELETE";
		q.path = path = e2e_printf("/v1/sandboxes/%s", victim);
		break;
	case SNAPSHOT:
		q.path = path = e2e_printf("/v1/sandboxes/%s/snapshots", keep);
		q.body = "{}";
		break;
	case BUILD: {
		q.path = "/v1/images/build?name=crashed";
		body_from_file(&q, e2e_write_archive("crashed-ctx.tar", fill_dockerfile));
		break;
	}
	case IMPORT:
	case IMPORT_OCI: {
		/* Not busybox: a tree of its own, which the import places (one of the same
		 * digest as an image's is not placed again). */
		q.path = "/v1/images?name=crashed";
		body_from_file(&q, step == IMPORT ? e2e_write_archive("crashed.tar", fill_one_file)
						  : oci_archive());
		break;
	}
	}
	if (q.body && !q.len)
		q.len = strlen(q.body);
	e2e_http_q(&r, &q);
	/* A DELETE is answered before its release, which dies after; a build's progress
	 * is streamed from its start (its last line, the image, never comes). */
	assert_true(r.status == 0 || (step == DELETE && r.status == 204) ||
		    (step == BUILD && r.status == 200));
	e2e_resp_free(&r);
	if (step == IMPORT || step == IMPORT_OCI || step == BUILD)
		free((void *)q.body);
	free(path);
	int st = e2e_daemon_wait(d, 20000);
	assert_true(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	d->pid = 0;
	return victim;
}

/* After the restart: KEEP (made before the crash, with a file) is running with its file;
 * the victim of a crashed DELETE is not listed; a crashed create or snapshot is listed
 * whole (its record said so before the kill) or not at all. */
static void check_after(enum step step, const char *keep, const char *victim)
{
	char *st = listed_status(keep, NULL);
	assert_string_equal(st, "running");
	free(st);
	char *f = e2e_sh_ok(keep, "cat /kept");
	assert_string_equal(f, "kept");
	free(f);
	e2e_resp r;
	if (step == DELETE) {
		st = listed_status(victim, NULL);
		assert_string_equal(st, "");
		free(st);
	}
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r.json, "sandboxes"), *it;
	cJSON_ArrayForEach(it, arr)
	{
		const char *s = cJSON_GetObjectItemCaseSensitive(it, "status")->valuestring;
		assert_string_equal(s, "running"); /* nothing creating, failed or broken */
	}
	e2e_resp_free(&r);
	if (step == SNAPSHOT) {
		e2e_http(&r, "GET", "/v1/snapshots", NULL);
		assert_int_equal(r.status, 200);
		e2e_resp_free(&r);
	}
	if (step == IMPORT || step == IMPORT_OCI || step == BUILD) {
		e2e_http(&r, "GET", "/v1/images", NULL);
		assert_false(e2e_contains(r.body, "\"crashed\""));
		assert_false(e2e_contains(r.body, "build-tmp-"));
		e2e_resp_free(&r);
	}
	if (step == BUILD) { /* the killed build's sandbox: gone with its daemon's restart */
		e2e_http(&r, "GET", "/v1/sandboxes", NULL);
		assert_false(e2e_contains(r.body, "sandlot.build"));
		e2e_resp_free(&r);
	}
}

/* Kill the daemon at POINT during STEP, restart it, check, repair, check it is clean. */
static void crash_at(const char *point, enum step step)
{
	e2e_daemon d;
	start(&d, point);
	/* Made by the CLI, which the daemon's crash point does not reach. */
	char *keep = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(e2e_sh_ok(keep, "echo kept > /kept"));
	int before = listed_count();
	char *victim = do_step(&d, step, keep);
	if (step == BUILD) {
		/* Before a daemon or build frees them, doctor names the build's leftovers. */
		char *out;
		int st = doctor(&out, NULL);
		if (st != 1 || !strstr(out, "a killed image build left"))
			fail_msg(
			    "after a killed build doctor should name what it left: exit %d\n%s", st,
			    out);
		free(out);
	}
	start(&d, NULL);
	check_after(step, keep, victim);
	char *out;
	int st = doctor(&out, NULL);
	if (st)
		fprintf(stderr, "e2e: after %s, doctor found:\n%s", point, out);
	/* An import that died after placing its tree (and layers) names them nowhere: only
	 * doctor can tell them from an image's. */
	if (strstr(point, "-placed") && (st != 1 || !strstr(out, "no image name holds")))
		fail_msg("after %s doctor should name the image tree left: exit %d\n%s", point, st,
			 out);
	free(out);
	assert_int_equal(doctor(NULL, "--repair"), 0);
	assert_int_equal(doctor(NULL, NULL), 0);
	/* What a crashed create left whole is deleted with the rest. */
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r.json, "sandboxes"), *it;
	int n = 0;
	cJSON_ArrayForEach(it, arr)
	{
		const char *id = cJSON_GetObjectItemCaseSensitive(it, "id")->valuestring;
		free(e2e_sandlot_ok("rm", id, NULL));
		n++;
	}
	e2e_resp_free(&r);
	assert_true(n >= before - (step == DELETE ? 1 : 0));
	e2e_http(&r, "GET", "/v1/snapshots", NULL);
	arr = cJSON_GetObjectItemCaseSensitive(r.json, "snapshots");
	cJSON_ArrayForEach(it, arr)
	{
		const char *id = cJSON_GetObjectItemCaseSensitive(it, "id")->valuestring;
		free(e2e_sandlot_ok("snapshot", "rm", id, NULL));
	}
	e2e_resp_free(&r);
	e2e_daemon_stop(&d);
	free(victim);
	free(keep);
}

#define CRASH_TEST(name, point, step)                                                              \
	static void test_crash_##name(void **state)                                                \
	{                                                                                          \
		crash_at(point, step);                                                             \
	}
CRASH_TEST(create_claimed, "create-claimed", CREATE)
CRASH_TEST(create_layer, "create-layer", CREATE)
CRASH_TEST(create_started, "create-started", CREATE)
CRASH_TEST(create_recorded, "create-recorded", CREATE)
CRASH_TEST(delete_tombstoned, "delete-tombstoned", DELETE)
CRASH_TEST(release_stopped, "release-stopped", DELETE)
CRASH_TEST(release_layer_gone, "release-layer-gone", DELETE)
CRASH_TEST(delete_released, "delete-released", DELETE)
CRASH_TEST(snapshot_frozen, "snapshot-frozen", SNAPSHOT)
CRASH_TEST(snapshot_recorded, "snapshot-recorded", SNAPSHOT)
CRASH_TEST(import_extracted, "import-extracted", IMPORT)
CRASH_TEST(import_placed, "import-placed", IMPORT)
CRASH_TEST(import_layers_placed, "import-layers-placed", IMPORT_OCI)
CRASH_TEST(build_run_done, "build-run-done", BUILD)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_garbage_record_is_broken_and_deleted),
	    E2E_TEST(test_oversized_record_is_broken_and_repaired),
	    E2E_TEST(test_doctor_as_non_root_exits_2),
	    E2E_TEST(test_doctor_beside_live_daemon_is_clean),
	    E2E_TEST(test_crash_create_claimed),
	    E2E_TEST(test_crash_create_layer),
	    E2E_TEST(test_crash_create_started),
	    E2E_TEST(test_crash_create_recorded),
	    E2E_TEST(test_crash_delete_tombstoned),
	    E2E_TEST(test_crash_release_stopped),
	    E2E_TEST(test_crash_release_layer_gone),
	    E2E_TEST(test_crash_delete_released),
	    E2E_TEST(test_crash_snapshot_frozen),
	    E2E_TEST(test_crash_snapshot_recorded),
	    E2E_TEST(test_crash_import_extracted),
	    E2E_TEST(test_crash_import_placed),
	    E2E_TEST(test_crash_import_layers_placed),
	    E2E_TEST(test_crash_build_run_done),
	};
	return e2e_run_tests(tests);
}

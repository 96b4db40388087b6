/* test_api_forks.c — forks, checkpoints and rollback, end to end (docs/forks.md): a fork's
 * copies hold the files of the instant and write privately, the source runs on; a
 * rollback restores modified, deleted and added files and keeps the id, volumes and
 * executions; bad input gets a stable code and leaves nothing (no subvolume, no record). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_common.h"

/* Entries of <state>/SUB not starting with '.', as one sorted line (the leftovers check:
 * subvolumes under store/, records under snapshots/). */
static char *entries(const char *sub)
{
	char *dir = e2e_printf("%s/state/%s", e2e_root(), sub);
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	free(dir);
	size_t cap = 1, len = 0;
	char *out = calloc(1, cap);
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			size_t l = strlen(names[i]->d_name);
			out = realloc(out, cap += l + 1);
			memcpy(out + len, names[i]->d_name, l);
			len += l;
			out[len++] = ' ';
			out[len] = '\0';
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return out;
}

/* What a fork or checkpoint could leave: subvolumes of layers and snapshots, records. */
typedef struct store_view {
	char *layers, *snaps, *records;
} store_view;

static store_view store_now(void)
{
	return (store_view){entries("store/sandboxes"), entries("store/snapshots"),
			    entries("snapshots")};
}

/* The daemon frees a deleted sandbox's layer after it answered: wait up to 5 s. */
static void store_expect_same(store_view *before)
{
	store_view now = store_now();
	for (int i = 0;
	     i < 50 && (strcmp(now.layers, before->layers) || strcmp(now.snaps, before->snaps) ||
			strcmp(now.records, before->records));
	     i++) {
		free(now.layers), free(now.snaps), free(now.records);
		usleep(100000);
		now = store_now();
	}
	assert_string_equal(now.layers, before->layers);
	assert_string_equal(now.snaps, before->snaps);
	assert_string_equal(now.records, before->records);
	free(now.layers), free(now.snaps), free(now.records);
	free(before->layers), free(before->snaps), free(before->records);
}

#define path_of(fmt, id) e2e_printf(fmt, id)

static void test_fork_copies_files_at_one_instant(void **state)
{
	store_view before = store_now();
	char *src =
	    sandbox_new("{\"image\":\"busybox\",\"env\":{\"FORKV\":\"seven\"},"
			"\"labels\":{\"team\":\"a\"},\"resources\":{\"disk\":\"1Gi\"},"
			"\"timeout\":{\"idle\":\"1h\",\"onIdle\":\"pause\","
			"\"lifetime\":\"1h\",\"onLifetime\":\"pause\",\"autoResume\":true}}");
	free(sh_ok(src, "echo before > /root/a && mkdir -p /root/d && "
			"dd if=/dev/urandom of=/root/d/big bs=1M count=64 2>/dev/null && "
			"md5sum /root/d/big | cut -c1-32 > /root/sum"));
	/* A process of the source that must live on through the fork. */
	free(sh_ok(src, "sleep 1000 >/dev/null 2>&1 & echo $! > /root/sleeper"));
	char *sleeper = sh_ok(src, "cat /root/sleeper");
	sleeper[strcspn(sleeper, "\n")] = '\0';

	char *p = path_of("/v1/sandboxes/%s/fork", src);
	double t0 = now_s();
	e2e_resp r;
	e2e_http(&r, "POST", p, "{\"count\":10}");
	double took = now_s() - t0;
	expect(&r, 201, NULL, NULL);
	print_message("fork: 10 copies of a sandbox with 64 MiB of files in %.3f s\n", took);
	assert_true(took < 10.0); /* loose: the bench holds the real figure */
	const cJSON *list = jget(r.json, "sandboxes");
	assert_int_equal(cJSON_GetArraySize(list), 10);
	char *ids[10];
	for (int i = 0; i < 10; i++) {
		const cJSON *sb = cJSON_GetArrayItem(list, i);
		ids[i] = strdup(jstr(sb, "id"));
		assert_string_equal(jstr(sb, "status"), "running");
		assert_string_equal(jstr(sb, "forkedFrom"), src);
		assert_string_not_equal(ids[i], src);
		assert_string_equal(jstr(jget(sb, "env"), "FORKV"), "seven");
		assert_string_equal(jstr(jget(sb, "labels"), "team"), "a");
		/* What its timeouts do, too: a copy of a sandbox that pauses is not killed. */
		const cJSON *to = jget(sb, "timeout");
		assert_string_equal(jstr(to, "onIdle"), "pause");
		assert_string_equal(jstr(to, "onLifetime"), "pause");
		assert_true(cJSON_IsTrue(jget(to, "autoResume")));
	}
	e2e_resp_free(&r);

	/* Every copy holds the files of the instant, checksums and all. */
	char *sum = sh_ok(src, "cat /root/sum");
	for (int i = 0; i < 10; i++) {
		char *a = sh_ok(ids[i], "cat /root/a; md5sum /root/d/big | cut -c1-32");
		char *want = e2e_printf("before\n%s", sum);
		assert_string_equal(a, want);
		free(a), free(want);
	}
	/* Writes after the fork are private: a copy's, and the source's. */
	free(sh_ok(ids[0], "echo mine > /root/a && rm /root/d/big"));
	free(sh_ok(src, "echo after > /root/a && echo new > /root/b"));
	char *a1 = sh_ok(ids[1], "cat /root/a; ls /root/d; test -e /root/b || echo nob");
	assert_string_equal(a1, "before\nbig\nnob\n");
	char *a0 = sh_ok(ids[0], "cat /root/a; test -e /root/b || echo nob");
	assert_string_equal(a0, "mine\nnob\n");
	char *as = sh_ok(src, "cat /root/a; ls /root/d");
	assert_string_equal(as, "after\nbig\n");
	/* The source ran on: its process is the same one, not restarted. */
	char *line = e2e_printf("kill -0 %s && echo alive", sleeper);
	char *alive = sh_ok(src, line);
	assert_string_equal(alive, "alive\n");
	free(a1), free(a0), free(as), free(line), free(alive), free(sum), free(sleeper);

	/* A named single copy. */
	e2e_http(&r, "POST", p, "{\"name\":\"forkling\"}");
	expect(&r, 201, NULL, NULL);
	const cJSON *one = cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0);
	assert_string_equal(jstr(one, "name"), "forkling");
	char *named = strdup(jstr(one, "id"));
	e2e_resp_free(&r);
	sandbox_del(named);

	for (int i = 0; i < 10; i++)
		sandbox_del(ids[i]);
	sandbox_del(src);
	free(p);
	store_expect_same(&before);
}

static void test_fork_bad_input(void **state)
{
	char *src = sandbox_new(NULL);
	free(sh_ok(src, "echo keep > /root/k"));
	store_view before = store_now();
	char *p = path_of("/v1/sandboxes/%s/fork", src);
	expect_call("POST", p, "{\"count\":0}", 400, "INVALID_ARGUMENT", "count 0");
	expect_call("POST", p, "{\"count\":1000}", 400, "INVALID_ARGUMENT", "1 to 100");
	expect_call("POST", p, "{\"count\":-1}", 400, "INVALID_ARGUMENT", NULL);
	expect_call("POST", p, "{\"count\":\"x\"}", 400, "INVALID_ARGUMENT", NULL);
	/* Memory: only of a sandbox made with "hibernate": true (test_hibernate.c forks one). */
	expect_call("POST", p, "{\"memory\":true}", 409, "CONFLICT", "\"hibernate\": true");
	expect_call("POST", p, "{\"cuont\":2}", 400, "INVALID_ARGUMENT", "cuont");
	expect_call("POST", p, "{\"name\":\"Bad Name\"}", 400, "INVALID_ARGUMENT", "name");
	expect_call("POST", "/v1/sandboxes/sbx_nosuchsandboxxxxxxx/fork", "{}", 404, "NOT_FOUND",
		    NULL);
	/* A copy that fails (its name is taken) removes those made before it. */
	char *taken = sandbox_new("{\"image\":\"busybox\",\"name\":\"dup-2\"}");
	store_view with_taken = store_now();
	expect_call("POST", p, "{\"count\":3,\"name\":\"dup\"}", 409, "CONFLICT", "dup-2");
	store_expect_same(&with_taken);
	sandbox_del(taken);
	/* Stopped: refused, and the source is left as it was. */
	char *sp = path_of("/v1/sandboxes/%s/stop", src);
	expect_call("POST", sp, NULL, 200, NULL, NULL);
	expect_call("POST", p, "{\"count\":2}", 409, "CONFLICT", "stopped");
	char *st = path_of("/v1/sandboxes/%s/start", src);
	expect_call("POST", st, NULL, 200, NULL, NULL);
	char *k = sh_ok(src, "cat /root/k");
	assert_string_equal(k, "keep\n");
	free(k);
	/* Paused: allowed (the copies run; the source stays paused). */
	char *pp = path_of("/v1/sandboxes/%s/pause", src);
	expect_call("POST", pp, NULL, 200, NULL, NULL);
	e2e_resp r;
	e2e_http(&r, "POST", p, "{}");
	expect(&r, 201, NULL, NULL);
	char *fid = strdup(jstr(cJSON_GetArrayItem(jget(r.json, "sandboxes"), 0), "id"));
	e2e_resp_free(&r);
	char *g = path_of("/v1/sandboxes/%s", src);
	e2e_http(&r, "GET", g, NULL);
	assert_string_equal(jstr(r.json, "status"), "paused");
	e2e_resp_free(&r);
	sandbox_del(fid);
	/* Deleted: not found. */
	sandbox_del(src);
	expect_call("POST", p, "{}", 404, "NOT_FOUND", NULL);
	free(p), free(sp), free(st), free(pp), free(g);
	/* No subvolume, snapshot or record left but the source's layer, now gone. */
	store_view now = store_now();
	assert_null(strstr(now.snaps, "snp_"));
	assert_string_equal(now.snaps, before.snaps);
	assert_string_equal(now.records, before.records);
	free(now.layers), free(now.snaps), free(now.records);
	free(before.layers), free(before.snaps), free(before.records);
}

static void test_rollback_restores_files(void **state)
{
	store_view before = store_now();
	char *id = sandbox_new("{\"image\":\"busybox\",\"name\":\"rb\","
			       "\"volumes\":[{\"name\":\"rbvol\",\"mountPath\":\"/vol\"}]}");
	free(sh_ok(id, "echo v1 > /root/m && echo del > /root/d && mkdir /root/keep"));
	char *cp = path_of("/v1/sandboxes/%s/checkpoints", id);
	e2e_resp r;
	e2e_http(&r, "POST", cp, "{\"name\":\"c1\"}");
	expect(&r, 201, NULL, NULL);
	assert_string_equal(jstr(r.json, "name"), "c1");
	assert_string_equal(jstr(r.json, "sandboxId"), id);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r.json, "memory")));
	char *c1id = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	/* Checkpoints are the sandbox's own: not in the snapshot list. */
	e2e_http(&r, "GET", "/v1/snapshots", NULL);
	assert_null(strstr(r.body, c1id));
	e2e_resp_free(&r);
	expect_call("POST", cp, "{\"name\":\"c1\"}", 409, "CONFLICT", "already has");
	expect_call("POST", cp, "{\"name\":\"Bad/Name\"}", 400, "INVALID_ARGUMENT", NULL);
	expect_call("POST", cp, "{}", 400, "INVALID_ARGUMENT", NULL);
	/* Memory: only of a sandbox made with "hibernate": true (test_hibernate.c). */
	expect_call("POST", cp, "{\"name\":\"m\",\"memory\":true}", 409, "CONFLICT",
		    "\"hibernate\": true");

	/* Change everything, with an execution to keep. */
	cJSON *e = run_wait(id, "{\"command\":\"echo v2 > /root/m && rm /root/d && "
				"echo added > /root/new && echo in-vol > /vol/f && echo done\"}");
	char *eid = strdup(jstr(e, "id"));
	cJSON_Delete(e);
	char *rb = path_of("/v1/sandboxes/%s/rollback", id);
	expect_call("POST", rb, "{\"checkpoint\":\"nope\"}", 404, "NOT_FOUND", "nope");
	expect_call("POST", rb, "{}", 400, "INVALID_ARGUMENT", "checkpoint");
	char *m = sh_ok(id, "cat /root/m");
	assert_string_equal(m, "v2\n"); /* an unknown checkpoint changed nothing */
	free(m);
	e2e_http(&r, "POST", rb, "{\"checkpoint\":\"c1\"}");
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "id"), id);
	assert_string_equal(jstr(r.json, "name"), "rb");
	assert_string_equal(jstr(r.json, "status"), "running");
	e2e_resp_free(&r);
	char *files = sh_ok(id, "cat /root/m /root/d; test -e /root/new || echo nonew; "
				"test -d /root/keep && echo keep; cat /vol/f");
	/* Volumes are not the sandbox's files: they keep what was written. */
	assert_string_equal(files, "v1\ndel\nnonew\nkeep\nin-vol\n");
	free(files);
	/* The execution record stayed. */
	char *ep = e2e_printf("/v1/sandboxes/%s/executions/%s", id, eid);
	e2e_http(&r, "GET", ep, NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal((int)jnum(r.json, "exitCode"), 0);
	e2e_resp_free(&r);
	char *op = e2e_printf("%s/stdout", ep);
	long code;
	char *out = get_raw(op, &code);
	assert_int_equal(code, 200);
	assert_string_equal(out, "done\n");
	free(op), free(out);

	/* Another sandbox's checkpoint: refused by id, unknown by name. */
	char *other = sandbox_new(NULL);
	char *ocp = path_of("/v1/sandboxes/%s/checkpoints", other);
	e2e_http(&r, "POST", ocp, "{\"name\":\"c2\"}");
	expect(&r, 201, NULL, NULL);
	char *body = e2e_printf("{\"checkpoint\":\"%s\"}", jstr(r.json, "id"));
	e2e_resp_free(&r);
	expect_call("POST", rb, body, 409, "CONFLICT", "belongs to sandbox");
	expect_call("POST", rb, "{\"checkpoint\":\"c2\"}", 404, "NOT_FOUND", NULL);
	free(body);

	/* A stopped sandbox rolls back and stays stopped; started, it has the files. */
	free(sh_ok(id, "echo v3 > /root/m"));
	char *sp = path_of("/v1/sandboxes/%s/stop", id);
	expect_call("POST", sp, NULL, 200, NULL, NULL);
	e2e_http(&r, "POST", rb, "{\"checkpoint\":\"c1\"}");
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "status"), "stopped");
	e2e_resp_free(&r);
	char *st = path_of("/v1/sandboxes/%s/start", id);
	expect_call("POST", st, NULL, 200, NULL, NULL);
	m = sh_ok(id, "cat /root/m");
	assert_string_equal(m, "v1\n");
	free(m);

	/* List, delete, delete again. */
	e2e_http(&r, "POST", cp, "{\"name\":\"c3\"}");
	expect(&r, 201, NULL, NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", cp, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *l = jget(r.json, "checkpoints");
	assert_int_equal(cJSON_GetArraySize(l), 2);
	assert_string_equal(jstr(cJSON_GetArrayItem(l, 0), "name"), "c1");
	assert_string_equal(jstr(cJSON_GetArrayItem(l, 1), "name"), "c3");
	e2e_resp_free(&r);
	char *dp = e2e_printf("%s/c3", cp);
	expect_call("DELETE", dp, NULL, 204, NULL, NULL);
	expect_call("DELETE", dp, NULL, 404, "NOT_FOUND", NULL);
	/* A deleted sandbox takes its checkpoints (c1 here) with it. */
	sandbox_del(other);
	sandbox_del(id);
	expect_call("DELETE", "/v1/volumes/rbvol", NULL, 204, NULL, NULL);
	free(cp), free(rb), free(c1id), free(eid), free(ep), free(ocp), free(sp), free(st),
	    free(dp);
	store_expect_same(&before);
}

/* The CLI's verbs over the same calls. */
static void test_cli(void **state)
{
	store_view before = store_now();
	char *id = sandbox_new(NULL);
	free(sh_ok(id, "echo one > /root/f"));
	char *cid = e2e_sandlot_ok("checkpoint", "create", id, "first", NULL);
	assert_true(!strncmp(cid, "snp_", 4));
	free(sh_ok(id, "echo two > /root/f"));
	char *ls = e2e_sandlot_ok("checkpoint", "ls", id, NULL);
	assert_non_null(strstr(ls, "first"));
	free(e2e_sandlot_ok("rollback", id, "first", NULL));
	char *f = sh_ok(id, "cat /root/f");
	assert_string_equal(f, "one\n");
	char *forks = e2e_sandlot_ok("fork", id, "-n", "2", NULL);
	char *nl = strchr(forks, '\n');
	assert_non_null(nl);
	*nl = '\0';
	char *f2 = sh_ok(forks, "cat /root/f");
	assert_string_equal(f2, "one\n");
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "fork", id, "-n", "0", NULL), 125);
	assert_non_null(strstr(r.err, "count 0"));
	e2e_result_free(&r);
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "rollback", id, "nope", NULL), 125);
	assert_non_null(strstr(r.err, "no checkpoint named nope"));
	e2e_result_free(&r);
	sandbox_del(strdup(forks));
	sandbox_del(strdup(nl + 1));
	sandbox_del(id);
	free(forks);
	free(cid), free(ls), free(f), free(f2);
	store_expect_same(&before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_fork_copies_files_at_one_instant),
	    E2E_TEST(test_fork_bad_input),
	    E2E_TEST(test_rollback_restores_files),
	    E2E_TEST(test_cli),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

/* test_api_secrets.c — /v1/secrets and secrets referenced at create: values never
 * returned; env and files seen inside (mode 0400, the sandbox user's); kept across a
 * snapshot, an export, a daemon kill -9 and a stop/start; never in clear under the test
 * root (state, run, store, the daemon's logs); bad input refused with stable codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nettle/sha2.h>

#include "api_common.h"

/* A value no file holds by chance: "sv-" and 32 random hex digits (caller frees). */
static char *random_value(void)
{
	unsigned char raw[16];
	assert_int_equal(getrandom(raw, sizeof(raw), 0), (ssize_t)sizeof(raw));
	char *v = malloc(3 + 2 * sizeof(raw) + 1);
	strcpy(v, "sv-");
	for (size_t i = 0; i < sizeof(raw); i++)
		sprintf(v + 3 + 2 * i, "%02x", raw[i]);
	return v;
}

/* sha256sum's line for V: what a command inside prints instead of the value itself, so
 * the value never lands in an execution's output. */
static char *sha_line(const char *v)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&h);
	sha256_update(&h, strlen(v), (const uint8_t *)v);
	sha256_digest(&h, sizeof(d), d);
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	for (size_t i = 0; i < sizeof(d); i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	return e2e_printf("%s  -\n", hex);
}

static void secret_set(const char *name, const char *value, long status)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "name", name);
	cJSON_AddStringToObject(b, "value", value);
	char *body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/secrets", body);
	expect(&r, status, NULL, NULL);
	assert_string_equal(jstr(r.json, "name"), name);
	assert_non_null(jstr(r.json, "createdAt"));
	assert_non_null(jstr(r.json, "updatedAt"));
	assert_null(jget(r.json, "value"));
	assert_null(strstr(r.body, value));
	e2e_resp_free(&r);
	free(body);
}

/* CMD's output (a shell line) and exit status. */
static char *shell(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *out = calloc(1, 65536);
	size_t n = fread(out, 1, 65535, p);
	out[n] = '\0';
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return out;
}

/* Nothing under the test root (state and store, run dir, the daemon's output and log)
 * holds VALUE in clear; the export (zstd) is read decompressed. */
static void assert_nowhere(const char *value, const char *export_file)
{
	int st;
	/* store.img is the store's sparse backing file (GiBs of zeros a line-reading grep
	 * chokes on): its files are read through the store's mount, under state/store. The
	 * staging namespace's binds (run/stage/ns, net) are nsfs files, not data. */
	char *cmd = e2e_printf("grep -r -a -l -F -D skip --exclude=store.img --exclude=ns "
			       "--exclude=net -e '%s' '%s' 2>&1",
			       value, e2e_root());
	char *out = shell(cmd, &st);
	/* The daemon's spare filler makes and removes its temp records under the state dir
	 * as it likes (spare-records/.rec-filler-*): a file that vanished between grep's
	 * listing and its read is an error to grep, not a finding. Read again. */
	for (int i = 0; i < 10 && st == 2 && strstr(out, "No such file or directory"); i++) {
		free(out);
		usleep(100000);
		out = shell(cmd, &st);
	}
	if (out[0])
		fail_msg("the secret's value in clear in (or grep failed): %s", out);
	assert_int_equal(st, 1); /* grep: no match, and no error */
	free(out);
	free(cmd);
	if (export_file) {
		cmd = e2e_printf("zstd -dc '%s' | grep -c -a -F -e '%s'", export_file, value);
		out = shell(cmd, &st);
		assert_string_equal(out, "0\n");
		free(out);
		free(cmd);
	}
}

static void test_secrets_crud_and_bad_input(void **state)
{
	char *v = random_value();
	secret_set("gh", v, 201);
	secret_set("gh", v, 200); /* replaced */
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/secrets", NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *list = jget(r.json, "secrets"), *it;
	int found = 0;
	cJSON_ArrayForEach(it, list)
	{
		found += !strcmp(jstr(it, "name"), "gh");
		assert_null(jget(it, "value"));
	}
	assert_int_equal(found, 1);
	assert_null(strstr(r.body, v));
	e2e_resp_free(&r);

	/* Bad input: each a clear error with a stable code. */
	expect_call("POST", "/v1/secrets", "{\"name\":\"a/b\",\"value\":\"x\"}", 400,
		    "INVALID_ARGUMENT", "secret name");
	expect_call("POST", "/v1/secrets", "{\"name\":\"\",\"value\":\"x\"}", 400,
		    "INVALID_ARGUMENT", "secret name");
	expect_call("POST", "/v1/secrets", "{\"name\":\"gh\"}", 400, "INVALID_ARGUMENT",
		    "value: required");
	expect_call("POST", "/v1/secrets", "{\"name\":\"gh\",\"value\":7}", 400, "INVALID_ARGUMENT",
		    "value");
	expect_call("POST", "/v1/secrets", "{\"name\":\"gh\",\"value\":\"x\",\"other\":1}", 400,
		    "INVALID_ARGUMENT", "other");
	expect_call("POST", "/v1/secrets", "{\"name\":\"gh\",\"value\":", 400, "INVALID_ARGUMENT",
		    NULL);
	char name[200];
	memset(name, 'n', 129);
	name[129] = '\0';
	char *body = e2e_printf("{\"name\":\"%s\",\"value\":\"x\"}", name);
	expect_call("POST", "/v1/secrets", body, 400, "INVALID_ARGUMENT", "secret name");
	free(body);
	/* 64 KiB + 1 and 1 MB: too large, whichever layer says it. */
	for (size_t n = 64 * 1024 + 1; n <= 1000000; n = 1000000) {
		char *big = malloc(n + 64);
		int off = sprintf(big, "{\"name\":\"big\",\"value\":\"");
		memset(big + off, 'a', n);
		strcpy(big + off + n, "\"}");
		expect_call("POST", "/v1/secrets", big, 413, "PAYLOAD_TOO_LARGE", NULL);
		free(big);
		if (n == 1000000)
			break;
	}
	expect_call("DELETE", "/v1/secrets/big", NULL, 404, "NOT_FOUND", "big");
	expect_call("DELETE", "/v1/secrets/gh", NULL, 204, NULL, NULL);
	expect_call("DELETE", "/v1/secrets/gh", NULL, 404, "NOT_FOUND", "secret gh");

	/* Unknown secrets and bad references at create: refused naming them, nothing made. */
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"secrets\":{\"T\":\"nosuch\"}}", 404, "NOT_FOUND",
		    "secrets.T: secret nosuch not found");
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"secretFiles\":{\"/run/secrets/x\":\"nosuch\"}}", 404,
		    "NOT_FOUND", "nosuch");
	secret_set("cfg", v, 201);
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"secretFiles\":{\"/etc/x\":\"cfg\"}}", 400,
		    "INVALID_ARGUMENT", "/run/secrets/NAME");
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"secretFiles\":{\"/run/secrets/../x\":\"cfg\"}}", 400,
		    "INVALID_ARGUMENT", "/run/secrets/NAME");
	expect_call("POST", "/v1/sandboxes",
		    "{\"image\":\"busybox\",\"secrets\":{\"A=B\":\"cfg\"}}", 400,
		    "INVALID_ARGUMENT", "environment variable");
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"secrets\":[\"cfg\"]}", 400,
		    "INVALID_ARGUMENT", "secrets");
	expect_call("POST", "/v1/sandboxes", "{\"image\":\"busybox\",\"secrets\":{\"T\":1}}", 400,
		    "INVALID_ARGUMENT", "secrets.T");
	expect_call("DELETE", "/v1/secrets/cfg", NULL, 204, NULL, NULL);
	assert_nowhere(v, NULL);
	free(v);
}

/* Env and file inside ID, as the sandbox user, seen through their hashes. */
static void check_inside(const char *id, const char *sha_gh, const char *sha_cfg)
{
	char *out = sh_ok(id, "printf %s \"$GH_TOKEN\" | sha256sum");
	assert_string_equal(out, sha_gh);
	free(out);
	out = sh_ok(id, "sha256sum < /run/secrets/gh");
	assert_string_equal(out, sha_gh);
	free(out);
	out = sh_ok(id, "sha256sum < /run/secrets/cfg.json");
	assert_string_equal(out, sha_cfg);
	free(out);
	out = sh_ok(id, "id -u; stat -c '%a %u %g' /run/secrets/gh /run/secrets/cfg.json");
	assert_string_equal(out, "65534\n400 65534 65534\n400 65534 65534\n");
	free(out);
	/* Read-only, and only the user's: nothing can be added or changed. */
	out = sh_ok(id, "touch /run/secrets/new 2>/dev/null && echo wrote || echo refused; "
			"mount | grep -c ' /run/secrets '");
	assert_string_equal(out, "refused\n1\n");
	free(out);
	/* An execution's own env wins nothing over it, and the call's env stays the call's. */
	cJSON *e = run_wait(id, "{\"command\":\"printf %s \\\"$GH_TOKEN\\\" | sha256sum\","
				"\"env\":{\"OTHER\":\"1\"}}");
	assert_string_equal(jstr(e, "stdout"), sha_gh);
	cJSON_Delete(e);
}

static void test_secrets_in_a_sandbox(void **state)
{
	char *gh = random_value(), *cfg = random_value();
	char *sha_gh = sha_line(gh), *sha_cfg = sha_line(cfg);
	secret_set("gh", gh, 201);
	secret_set("cfg.json", cfg, 201);
	char *id =
	    sandbox_new("{\"image\":\"busybox\",\"user\":\"nobody\",\"env\":{\"PLAIN\":\"p\"},"
			"\"secrets\":{\"GH_TOKEN\":\"gh\"},"
			"\"secretFiles\":{\"/run/secrets/gh\":\"gh\","
			"\"/run/secrets/cfg.json\":\"cfg.json\"}}");
	check_inside(id, sha_gh, sha_cfg);

	/* The sandbox's JSON shows the references, never a value. */
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(jget(r.json, "secrets"), "GH_TOKEN"), "gh");
	assert_string_equal(jstr(jget(r.json, "secretFiles"), "/run/secrets/gh"), "gh");
	assert_null(jget(jget(r.json, "env"), "GH_TOKEN"));
	assert_null(strstr(r.body, gh));
	e2e_resp_free(&r);

	/* A snapshot and its export: the files are on a tmpfs, not in the layer. */
	char *sp = e2e_printf("/v1/sandboxes/%s/snapshots", id);
	e2e_http(&r, "POST", sp, "{\"name\":\"with-secrets\"}");
	expect(&r, 201, NULL, NULL);
	char *sid = strdup(jstr(r.json, "id"));
	e2e_resp_free(&r);
	char *exp = e2e_printf("%s/export.tar.zst", e2e_root());
	e2e_result er;
	e2e_sandlot(&er, NULL, 0, "snapshot", "export", sid, NULL);
	assert_int_equal(er.status, 0);
	FILE *f = fopen(exp, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(er.out, 1, er.out_len, f), er.out_len);
	fclose(f);
	assert_true(er.out_len > 1000);
	e2e_result_free(&er);

	/* kill -9 of the daemon and a new one: the sandbox keeps its secrets. */
	pid_t old = D.pid;
	e2e_daemon_kill(&D);
	e2e_daemon_start(&D, D.sock, true, NULL);
	check_inside(id, sha_gh, sha_cfg);
	/* A stop and a start: a new init, a new tmpfs, filled from the store again. */
	char *stop = e2e_printf("/v1/sandboxes/%s/stop", id);
	char *start = e2e_printf("/v1/sandboxes/%s/start", id);
	expect_call("POST", stop, NULL, 200, NULL, NULL);
	expect_call("POST", start, NULL, 200, NULL, NULL);
	check_inside(id, sha_gh, sha_cfg);

	/* A secret deleted under a sandbox: its commands fail to start, saying why. */
	secret_set("tmp", gh, 201);
	char *id2 = sandbox_new("{\"image\":\"busybox\",\"secrets\":{\"T\":\"tmp\"}}");
	expect_call("DELETE", "/v1/secrets/tmp", NULL, 204, NULL, NULL);
	char *ep = e2e_printf("/v1/sandboxes/%s/executions?wait=10s", id2);
	expect_call("POST", ep, "{\"command\":\"true\"}", 404, "NOT_FOUND", "secret tmp");
	free(ep);
	sandbox_del(id2);

	assert_nowhere(gh, exp);
	assert_nowhere(cfg, exp);
	char *dp = e2e_printf("/v1/snapshots/%s", sid);
	expect_call("DELETE", dp, NULL, 204, NULL, NULL);
	free(dp);
	sandbox_del(id);
	expect_call("DELETE", "/v1/secrets/gh", NULL, 204, NULL, NULL);
	expect_call("DELETE", "/v1/secrets/cfg.json", NULL, 204, NULL, NULL);
	unlink(exp);
	free(exp);
	free(sid);
	free(sp);
	free(stop);
	free(start);
	free(p);
	free(sha_gh);
	free(sha_cfg);
	free(gh);
	free(cfg);
	assert_only_daemon_changed(*state, old, D.pid);
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

/* Each key has its own names: another key neither lists, uses nor deletes them. */
static void test_secrets_per_key(void **state)
{
	char *k = e2e_sandlot_ok("key", "create", "secrets-other", NULL);
	k[strcspn(k, "\n")] = '\0';
	char *auth = e2e_printf("Authorization: Bearer %s", k);
	char *v = random_value();
	secret_set("mine", v, 201);
	e2e_req q = {.method = "GET", .path = "/v1/secrets", .tcp = true, .auth = auth};
	e2e_resp r;
	e2e_http_q(&r, &q);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(jget(r.json, "secrets")), 0);
	e2e_resp_free(&r);
	const char *body = "{\"image\":\"busybox\",\"secrets\":{\"T\":\"mine\"}}";
	q = (e2e_req){.method = "POST",
		      .path = "/v1/sandboxes",
		      .body = body,
		      .len = strlen(body),
		      .tcp = true,
		      .auth = auth};
	e2e_http_q(&r, &q);
	expect(&r, 404, "NOT_FOUND", "secret mine not found");
	e2e_resp_free(&r);
	q = (e2e_req){.method = "DELETE", .path = "/v1/secrets/mine", .tcp = true, .auth = auth};
	e2e_http_q(&r, &q);
	expect(&r, 404, "NOT_FOUND", NULL);
	e2e_resp_free(&r);
	expect_call("DELETE", "/v1/secrets/mine", NULL, 204, NULL, NULL);
	free(e2e_sandlot_ok("key", "rm", "secrets-other", NULL));
	free(auth);
	free(k);
	free(v);
}

/* `sandlot secret set` reads stdin; ls shows the name; rm removes it. */
static void test_secret_cli(void **state)
{
	char *v = random_value();
	char *in = e2e_printf("%s\n", v);
	e2e_result r;
	e2e_sandlot(&r, in, strlen(in), "secret", "set", "from-cli", NULL);
	assert_int_equal(r.status, 0);
	e2e_result_free(&r);
	char *out = e2e_sandlot_ok("secret", "ls", NULL);
	assert_non_null(strstr(out, "from-cli\t"));
	assert_null(strstr(out, v));
	free(out);
	/* The trailing newline is not part of the value. */
	char *sha = sha_line(v);
	char *id = sandbox_new("{\"image\":\"busybox\",\"secrets\":{\"V\":\"from-cli\"}}");
	out = sh_ok(id, "printf %s \"$V\" | sha256sum");
	assert_string_equal(out, sha);
	free(out);
	sandbox_del(id);
	e2e_sandlot(&r, "x", 1, "secret", "set", "a/b", NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "secret name"));
	e2e_result_free(&r);
	free(e2e_sandlot_ok("secret", "rm", "from-cli", NULL));
	e2e_sandlot(&r, NULL, 0, "secret", "rm", "from-cli", NULL);
	assert_int_equal(r.status, 125);
	e2e_result_free(&r);
	assert_nowhere(v, NULL);
	free(sha);
	free(in);
	free(v);
}

/* `sandlot create` and `run` reference secrets as /v1's create does: --secret ENV=NAME,
 * --secret-file /run/secrets/FILE=NAME; bad ones refused before anything is made. */
static void test_secret_cli_create(void **state)
{
	char *v = random_value(), *sha = sha_line(v);
	char *in = e2e_printf("%s\n", v);
	e2e_result r;
	e2e_sandlot(&r, in, strlen(in), "secret", "set", "cli-ref", NULL);
	assert_int_equal(r.status, 0);
	e2e_result_free(&r);

	char *id = e2e_sandlot_ok("create", "--image", "busybox", "-u", "nobody", "--secret",
				  "TOK=cli-ref", "--secret-file", "/run/secrets/tok=cli-ref", NULL);
	id[strcspn(id, "\n")] = '\0';
	char *out = sh_ok(id, "printf %s \"$TOK\" | sha256sum; sha256sum < /run/secrets/tok; "
			      "stat -c '%a %u %g' /run/secrets/tok");
	char *want = e2e_printf("%s%s400 65534 65534\n", sha, sha);
	assert_string_equal(out, want);
	free(want);
	free(out);
	/* The record holds the references, as /v1 made them. */
	char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_resp resp;
	e2e_http(&resp, "GET", p, NULL);
	expect(&resp, 200, NULL, NULL);
	assert_string_equal(jstr(jget(resp.json, "secrets"), "TOK"), "cli-ref");
	assert_string_equal(jstr(jget(resp.json, "secretFiles"), "/run/secrets/tok"), "cli-ref");
	assert_null(strstr(resp.body, v));
	e2e_resp_free(&resp);
	free(p);
	sandbox_del(id);

	/* run: the first command already sees it. */
	e2e_sandlot(&r, NULL, 0, "run", "--image", "busybox", "--secret", "TOK=cli-ref", "--",
		    "sh", "-c", "printf %s \"$TOK\" | sha256sum", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, sha);
	e2e_result_free(&r);

	/* Bad references: exit 125 saying what is wrong, and no sandbox made. */
	char *before = e2e_sandlot_ok("ls", "-a", NULL);
	static const struct {
		const char *flag, *arg, *says;
	} bad[] = {
	    {"--secret", "TOK", "is not ENV=SECRET"},
	    {"--secret", "=cli-ref", "is not ENV=SECRET"},
	    {"--secret", "TOK=nosuch", "secret nosuch not found"},
	    {"--secret", "A=B=cli-ref", "environment variable"},
	    {"--secret", "T=a/b", "secret name"},
	    {"--secret-file", "/etc/x=cli-ref", "/run/secrets/NAME"},
	    {"--secret-file", "/run/secrets/x", "is not /run/secrets/FILE=SECRET"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", bad[i].flag, bad[i].arg,
			    NULL);
		if (r.status == 0) /* made: removed before the failure is told */
			free(e2e_sandlot_ok("rm", "-f", strtok(r.out, "\n"), NULL));
		if (r.status != 125 || !strstr(r.err, bad[i].says))
			fail_msg("%s %s: exit %d, stderr %s", bad[i].flag, bad[i].arg, r.status,
				 r.err);
		e2e_result_free(&r);
	}
	e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", "--secret", "A=cli-ref",
		    "--secret", "A=cli-ref", NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "A given twice"));
	e2e_result_free(&r);
	e2e_sandlot(&r, NULL, 0, "exec", "--secret", "A=cli-ref", "x", "--", "true", NULL);
	assert_int_equal(r.status, 125);
	assert_non_null(strstr(r.err, "an option of run and create"));
	e2e_result_free(&r);
	out = e2e_sandlot_ok("ls", "-a", NULL);
	for (char *at = out; (at = strstr(at, "sbx_")); at += 4) {
		char sid[32];
		snprintf(sid, sizeof(sid), "%.*s", (int)strcspn(at, " \t\n"), at);
		if (!strstr(before, sid))
			fail_msg("a refused create left %s", sid);
	}
	free(out);
	free(before);

	free(e2e_sandlot_ok("secret", "rm", "cli-ref", NULL));
	assert_nowhere(v, NULL);
	free(in);
	free(sha);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_secrets_crud_and_bad_input),
	    E2E_TEST(test_secrets_in_a_sandbox),
	    E2E_TEST(test_secrets_per_key),
	    E2E_TEST(test_secret_cli),
	    E2E_TEST(test_secret_cli_create),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

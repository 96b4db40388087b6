/* test_api_files.c — `sandlot serve`'s file routes end to end: upload, download,
 * listing, and hostile paths that must never leave the sandbox's root. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_common.h"

/* ---- files ------------------------------------------------------------------------------- */

static void test_files(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\",\"workingDirectory\":\"/home\"}");
	e2e_resp r;
	/* Written by a command (in /tmp, a tmpfs, too), read through the API. */
	free(sh_ok(id, "mkdir -p /home/d && echo from-cmd > /home/d/a.txt && "
		       "printf 'tmp\\000bytes' > /tmp/t.bin"));
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=/home/d/a.txt", id);
	long st;
	char *data = get_raw(p, &st);
	assert_int_equal(st, 200);
	assert_string_equal(data, "from-cmd\n");
	free(data);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=d/a.txt", id); /* relative: workingDirectory */
	data = get_raw(p, &st);
	assert_string_equal(data, "from-cmd\n");
	free(data);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/t.bin", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_int_equal(r.len, 9);
	assert_memory_equal(r.body, "tmp\0bytes", 9);
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/nope", id);
	expect_call("GET", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);

	/* Written through the API (streamed, parents made), read by a command. */
	size_t big = 3u << 20;
	unsigned char *blob = malloc(big);
	for (size_t i = 0; i < big; i++)
		blob[i] = (unsigned char)(i * 7 + (i >> 13));
	p = e2e_printf("/v1/sandboxes/%s/files?path=/tmp/up/deep/blob.bin&mode=0600", id);
	e2e_req q = {.method = "PUT", .path = p, .body = blob, .len = big, .chunked = true};
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "GET", p, NULL);
	assert_int_equal(r.len, big);
	assert_memory_equal(r.body, blob, big);
	e2e_resp_free(&r);
	free(p);
	free(blob);
	char *out = sh_ok(id, "stat -c '%a %s %U' /tmp/up/deep/blob.bin; ls -A /tmp/up/deep");
	assert_string_equal(out, "600 3145728 root\nblob.bin\n");
	free(out);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/home/new.txt", id);
	q = (e2e_req){.method = "PUT", .path = p, .body = "v1", .len = 2};
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	q.body = "version2";
	q.len = 8;
	e2e_http_q(&r, &q); /* replaces */
	expect(&r, 204, NULL, NULL);
	e2e_resp_free(&r);
	free(p);
	out = sh_ok(id, "cat /home/new.txt; stat -c ' %a' /home/new.txt");
	assert_string_equal(out, "version2 644\n");
	free(out);

	/* Batch: base64 contents, modes, relative paths. */
	p = e2e_printf("/v1/sandboxes/%s/files", id);
	e2e_http(&r, "POST", p,
		 "{\"files\":[{\"path\":\"b/one.txt\",\"content\":\"b25lCg==\"},"
		 "{\"path\":\"/opt/two.sh\",\"content\":\"ZWNobyB0d28K\",\"mode\":\"0755\"}]}");
	expect(&r, 200, NULL, NULL);
	assert_int_equal(jnum(r.json, "filesWritten"), 2);
	e2e_resp_free(&r);
	expect_call("POST", p, "{\"files\":[{\"path\":\"x\",\"content\":\"***\"}]}", 400,
		    "INVALID_ARGUMENT", "files[0].content");
	expect_call("POST", p, "{\"files\":[{\"content\":\"\"}]}", 400, "INVALID_ARGUMENT",
		    "files[0].path");
	free(p);
	out = sh_ok(id, "cat /home/b/one.txt; /opt/two.sh");
	assert_string_equal(out, "one\ntwo\n");
	free(out);

	/* fs/: mkdir -p, stat, list, move, chmod (with owner), delete. */
	p = e2e_printf("/v1/sandboxes/%s/fs/mkdir", id);
	expect_call("POST", p, "{\"path\":\"/srv/a/b\"}", 204, NULL, NULL);
	expect_call("POST", p, "{\"path\":\"/srv/a/b\"}", 204, NULL, NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/stat?path=/srv/a", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	assert_string_equal(jstr(r.json, "type"), "dir");
	assert_string_equal(jstr(r.json, "name"), "a");
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/stat?path=/srv/none", id);
	expect_call("GET", p, NULL, 404, "NOT_FOUND", NULL);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/move", id);
	expect_call("POST", p, "{\"from\":\"/home/b/one.txt\",\"to\":\"/srv/a/b/moved.txt\"}", 204,
		    NULL, NULL);
	expect_call("POST", p, "{\"from\":\"/home/b/one.txt\"}", 400, "INVALID_ARGUMENT", "to");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/chmod", id);
	expect_call("POST", p,
		    "{\"path\":\"/srv/a/b/moved.txt\",\"mode\":\"0640\",\"owner\":\"nobody\"}", 204,
		    NULL, NULL);
	expect_call("POST", p, "{\"path\":\"/srv/a/b/moved.txt\",\"mode\":\"rwx\"}", 400,
		    "INVALID_ARGUMENT", "mode");
	expect_call("POST", p, "{\"path\":\"/srv/a/b/moved.txt\"}", 400, "INVALID_ARGUMENT",
		    "mode");
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/fs/list?path=/srv/a/b", id);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *ents = jget(r.json, "entries");
	assert_int_equal(cJSON_GetArraySize(ents), 1);
	const cJSON *f0 = cJSON_GetArrayItem(ents, 0);
	assert_string_equal(jstr(f0, "name"), "moved.txt");
	assert_string_equal(jstr(f0, "type"), "file");
	assert_int_equal(jnum(f0, "size"), 4);
	assert_int_equal(jnum(f0, "mode"), 0640);
	e2e_resp_free(&r);
	free(p);
	out = sh_ok(id, "stat -c '%a %U' /srv/a/b/moved.txt");
	assert_string_equal(out, "640 nobody\n");
	free(out);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/srv/a", id);
	e2e_http(&r, "DELETE", p, NULL);
	assert_true(r.status >= 400); /* not empty, not recursive */
	e2e_resp_free(&r);
	free(p);
	p = e2e_printf("/v1/sandboxes/%s/files?path=/srv/a&recursive=1", id);
	expect_call("DELETE", p, NULL, 204, NULL, NULL);
	free(p);
	out = sh_ok(id, "ls -A /srv");
	assert_string_equal(out, "");
	free(out);
	sandbox_del(id);
}

/* Symlinks planted inside the sandbox never reach a host file, whatever the call. */
static void test_hostile_paths(void **state)
{
	char *canary = e2e_printf("%s/canary.txt", e2e_root());
	char secret[64];
	unsigned char rnd[8];
	assert_int_equal(getrandom(rnd, sizeof(rnd), 0), (ssize_t)sizeof(rnd));
	snprintf(secret, sizeof(secret), "CANARY-%02x%02x%02x%02x%02x%02x%02x%02x\n", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	FILE *f = fopen(canary, "w");
	fputs(secret, f);
	fclose(f);
	chmod(canary, 0600);
	char *shadow = e2e_read_file("/etc/shadow");
	char *id = sandbox_new(NULL);
	char *dir = strdup(canary);
	*strrchr(dir, '/') = '\0';
	char *plant = e2e_printf(
	    "mkdir -p /h && cd /h && ln -s %s abs && ln -s ../../../../../../../../..%s rel && "
	    "ln -s /h/abs chain1 && ln -s chain1 chain2 && ln -s /etc/shadow shadow && "
	    "ln -s %s dirlink && ln -s / rootlink && ln -s ../../.. up",
	    canary, canary, dir);
	free(sh_ok(id, plant));
	free(plant);

	/* Paths ending in '+' get the canary's host path appended. */
	const char *reads[] = {"/h/abs",
			       "/h/rel",
			       "/h/chain2",
			       "/h/shadow",
			       "/h/dirlink/canary.txt",
			       "/h/rootlink/../../..+",
			       "/h/up+",
			       "../../../..+",
			       "+"};
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		size_t rl = strlen(reads[i]);
		char *path = reads[i][rl - 1] == '+'
				 ? e2e_printf("%.*s%s", (int)rl - 1, reads[i], canary)
				 : strdup(reads[i]);
		char *u = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, path);
		e2e_resp r;
		e2e_http(&r, "GET", u, NULL);
		if (strstr(r.body, "CANARY") || (shadow && r.len && !strcmp(r.body, shadow)))
			fail_msg("GET %s returned a host file", path);
		assert_true(r.status == 404 || r.status == 200 || r.status == 400);
		e2e_resp_free(&r);
		free(u);
		u = e2e_printf("/v1/sandboxes/%s/fs/list?path=%s", id, path);
		e2e_http(&r, "GET", u, NULL);
		const cJSON *ent;
		cJSON_ArrayForEach(ent, jget(r.json, "entries"))
		{
			if (!strcmp(jstr(ent, "name"), "canary.txt"))
				fail_msg("fs/list %s listed the host directory", path);
		}
		e2e_resp_free(&r);
		free(u);
		free(path);
	}
	/* Writes, chmod, move and delete through the links. */
	const char *targets[] = {"/h/abs", "/h/chain2", "/h/dirlink/canary.txt", "/h/rel"};
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char *u = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, targets[i]);
		e2e_resp r;
		e2e_req q = {.method = "PUT", .path = u, .body = "pwned\n", .len = 6};
		e2e_http_q(&r, &q);
		e2e_resp_free(&r);
		free(u);
		u = e2e_printf("/v1/sandboxes/%s/fs/chmod", id);
		char *b = e2e_printf("{\"path\":\"%s\",\"mode\":\"0777\"}", targets[i]);
		e2e_http(&r, "POST", u, b);
		e2e_resp_free(&r);
		free(b);
		free(u);
	}
	char *u = e2e_printf("/v1/sandboxes/%s/fs/move", id);
	e2e_resp r;
	char *b = e2e_printf("{\"from\":\"/h/dirlink/canary.txt\",\"to\":\"/stolen\"}");
	e2e_http(&r, "POST", u, b);
	e2e_resp_free(&r);
	free(b);
	free(u);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/dirlink/canary.txt", id);
	e2e_http(&r, "DELETE", u, NULL);
	e2e_resp_free(&r);
	free(u);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/dirlink&recursive=1", id);
	e2e_http(&r, "DELETE", u, NULL); /* removes the link, not the host directory */
	e2e_resp_free(&r);
	free(u);

	/* A symlink swapped back and forth while the API reads it. */
	char *swap = e2e_printf("{\"command\":\"cd /h; while true; do ln -sfn %s race; "
				"echo innocent > race.f; mv -f race.f race; done\"}",
				canary);
	char *loop = exec_start_id(id, swap);
	free(swap);
	u = e2e_printf("/v1/sandboxes/%s/files?path=/h/race", id);
	int innocent = 0;
	for (int i = 0; i < 300; i++) {
		e2e_http(&r, "GET", u, NULL);
		if (strstr(r.body, "CANARY"))
			fail_msg("the race read the canary (attempt %d)", i);
		innocent += r.status == 200 && !strcmp(r.body, "innocent\n");
		e2e_resp_free(&r);
	}
	free(u);
	print_message("symlink race: %d of 300 reads saw the sandbox's own file\n", innocent);
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/signal", id, loop);
	expect_call("POST", p, "{\"signal\":\"KILL\"}", 204, NULL, NULL);
	free(p);
	free(loop);

	/* The canary is intact: same bytes, same mode, same place. */
	char *now = e2e_read_file(canary);
	assert_non_null(now);
	assert_string_equal(now, secret);
	struct stat st;
	assert_int_equal(stat(canary, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, 0);
	free(now);
	sandbox_del(id);
	unlink(canary);
	free(canary);
	free(dir);
	free(shadow);
}

/* ---- hostile sandboxes: what a listing or an upload costs the daemon ------------------- */

/* GET PATH on D (no capture: a façade's shape, or a large answer); the daemon's peak
 * resident growth over it, KiB, in *grew. */
static void get_measured(e2e_resp *r, const char *path, long *grew)
{
	e2e_proc_hwm_reset(D.pid);
	long before = e2e_proc_kib(D.pid, "VmRSS:");
	e2e_http_q(r, &(e2e_req){.method = "GET", .path = path, .no_capture = true});
	*grew = e2e_proc_kib(D.pid, "VmHWM:") - before;
}

#define BIG_DIR_ENTRIES 16000

/* Hardening fix 6: a listing held a sl_fileinfo of ~8.5 KiB per entry (16,000 entries:
 * 136 MB) and the Daytona recursive list a cJSON tree of the whole answer, every level's
 * listing alive, and an O(n²) count. A directory of 16,000 entries with 240-character
 * names, through /v1 fs/list and Daytona's depth-2 list: each answer complete, and the
 * daemon's peak resident size grows by less than 64 MiB. */
static void test_large_listings_are_bounded(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\"}");
	char name[241];
	memset(name, 'n', 235);
	name[235] = '\0';
	char *mk = e2e_printf("mkdir -p /tmp/big/sub && cd /tmp/big && seq %d | sed 's/^/%s/' | "
			      "xargs touch && ls | wc -l",
			      BIG_DIR_ENTRIES - 1, name);
	char *n = sh_ok(id, mk);
	assert_int_equal(atoi(n), BIG_DIR_ENTRIES);
	free(n);
	free(mk);

	e2e_resp r;
	long grew;
	char *p = e2e_printf("/v1/sandboxes/%s/fs/list?path=/tmp/big", id);
	get_measured(&r, p, &grew);
	print_message("/v1 fs/list of %d entries: daemon peak RSS +%ld KiB, answer %zu bytes\n",
		      BIG_DIR_ENTRIES, grew, r.len);
	expect(&r, 200, NULL, NULL);
	const cJSON *ents = jget(r.json, "entries");
	assert_int_equal(cJSON_GetArraySize(ents), BIG_DIR_ENTRIES);
	const char *first = jstr(cJSON_GetArrayItem(ents, 0), "name");
	assert_non_null(first);
	assert_int_equal(strlen(first), 236); /* "nnn...n1", sorted first */
	assert_true(grew < E2E_RSS_BOUND_KIB);
	e2e_resp_free(&r);
	free(p);

	p = e2e_printf("/toolbox/%s/files?path=/tmp&depth=3", id);
	get_measured(&r, p, &grew);
	print_message("Daytona depth-3 list of %d entries: daemon peak RSS +%ld KiB, answer %zu "
		      "bytes\n",
		      BIG_DIR_ENTRIES, grew, r.len);
	if (r.status != 200)
		fail_msg("Daytona list: %ld %.300s", r.status, r.body);
	int big = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, r.json)
	{
		const char *path = jstr(e, "path");
		big += path && !strncmp(path, "/tmp/big/", 9);
	}
	assert_int_equal(big, BIG_DIR_ENTRIES);
	assert_true(grew < E2E_RSS_BOUND_KIB);
	e2e_resp_free(&r);
	free(p);
	sandbox_del(id);
}

typedef struct huge_part {
	long long sent, len;
	const char *head;
} huge_part;

/* The multipart body: HEAD, then 'a's (no CRLF) up to LEN bytes. */
static size_t send_huge_part(char *buf, size_t len, void *ud)
{
	huge_part *h = ud;
	size_t want = len, hl = strlen(h->head), n = 0;
	if (h->sent + (long long)want > h->len)
		want = (size_t)(h->len - h->sent);
	for (; n < want && h->sent < (long long)hl; n++)
		buf[n] = h->head[h->sent++];
	memset(buf + n, 'a', want - n);
	h->sent += (long long)(want - n);
	return want;
}

/* Hardening fix 6: Daytona's bulk upload waited for the CRLF of a part's header line (and
 * of a delimiter line's padding) without a limit, keeping what came. 256 MiB without a
 * CRLF after each: a 400 naming the limit, and the daemon's peak resident size grows by
 * less than 64 MiB. */
static void test_multipart_header_line_is_bounded(void **state)
{
	char *id = sandbox_new("{\"image\":\"busybox\"}");
	char *path = e2e_printf("/toolbox/%s/files/bulk-upload", id);
	static const char *const heads[] = {
	    "--XyZ\r\nContent-Disposition: form-data; name=\"files[0].path\"; x=",
	    "--XyZ",
	};
	const char *headers[] = {"Content-Type: multipart/form-data; boundary=XyZ", NULL};
	for (int i = 0; i < 2; i++) {
		huge_part h = {.len = 256ll << 20, .head = heads[i]};
		e2e_proc_hwm_reset(D.pid);
		long before = e2e_proc_kib(D.pid, "VmRSS:");
		e2e_resp r;
		e2e_http_q(&r, &(e2e_req){.method = "POST", .path = path, .headers = headers,
					  .stream = send_huge_part, .stream_ud = &h,
					  .stream_len = h.len, .timeout_ms = 120000,
					  .no_capture = true});
		long grew = e2e_proc_kib(D.pid, "VmHWM:") - before;
		print_message("a %s of 256 MiB: %ld after %lld bytes sent; daemon peak RSS +%ld "
			      "KiB\n",
			      i ? "delimiter line" : "header line", r.status, h.sent, grew);
		if (r.status != 400 || !strstr(r.body, "16384 bytes"))
			fail_msg("want a 400 naming the limit: %ld %.300s", r.status, r.body);
		assert_true(grew < E2E_RSS_BOUND_KIB);
		e2e_resp_free(&r);
	}
	free(path);
	sandbox_del(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_files),
	    E2E_TEST(test_hostile_paths),
	    E2E_TEST(test_large_listings_are_bounded),
	    E2E_TEST(test_multipart_header_line_is_bounded),
	    E2E_TEST(test_zz_spec),
	};
	return api_run_tests(tests);
}

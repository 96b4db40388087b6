/* load.c — load and crash recovery (`make load`; a short pass in `make test`).
 *
 * LIVE sandboxes (50) each run an execution that writes a numbered line every 100 ms
 * for the whole test, while CLIENTS (20) threads mix what API users do — create, write a
 * file, run a command to its end, read it back, delete — for SECONDS:
 *
 *   test_load_no_leak        one daemon process: its heap and open fds after the load
 *                            settle within 20% of their values after a warm-up (at least
 *                            20 s), its resident size within 50%.
 *   test_load_kill9_twice    the daemon killed with -9 at a third and at two thirds of the
 *                            load and restarted: afterwards every sandbox, file and
 *                            execution (with its output) a client was told about is there,
 *                            the LIVE executions still run and their output up to each
 *                            kill is intact, nothing half-made is listed, and
 *                            `sandlot doctor` finds nothing.
 *
 * SANDLOT_LOAD_SECONDS, SANDLOT_LOAD_SANDBOXES and SANDLOT_LOAD_CLIENTS change the
 * figures (60, 50, 20). Every loop is bounded by time and count; all traffic goes to the
 * test's own daemon over its unix socket. */
#include "api_common.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int SECONDS = 60, NLIVE = 50, NCLIENTS = 20;

#define KEPT_MAX  3   /* sandboxes one client keeps at a time */
#define FACTS_MAX 512 /* committed facts one client remembers */

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	int n = atoi(v);
	if (n < lo || n > hi) {
		fprintf(stderr, "%s=%s: want %d..%d\n", name, v, lo, hi);
		exit(2);
	}
	return n;
}

/* ---- requests from threads (no cmocka calls there) ------------------------------------ */

/* The daemon's socket: a copy the threads read while the main thread restarts D. */
static e2e_daemon SOCK;

static long call(e2e_resp *r, const char *method, const char *path, const void *body,
		 size_t len)
{
	e2e_req q = {.method = method,
		     .path = path,
		     .body = body,
		     .len = len,
		     .d = &SOCK,
		     .timeout_ms = 60000,
		     .no_capture = true};
	return e2e_http_q(r, &q);
}

static long call_json(e2e_resp *r, const char *method, const char *path, const char *json)
{
	return call(r, method, path, json, json ? strlen(json) : 0);
}

/* ---- the LIVE sandboxes -------------------------------------------------------------------- */

typedef struct live {
	char id[64], eid[64];
	char *seen;  /* its output as read before the last kill */
	size_t seen_len;
} live;

static live *LIVE;

#define COUNTER "i=0; while [ $i -lt 100000 ]; do echo line-$i; i=$((i+1)); sleep 0.1; done"

static void live_start(void)
{
	snprintf(SOCK.sock, sizeof(SOCK.sock), "%s", D.sock);
	LIVE = calloc(NLIVE, sizeof(*LIVE));
	assert_non_null(LIVE);
	for (int i = 0; i < NLIVE; i++) {
		char *id = sandbox_new("{\"image\":\"busybox\",\"resources\":{\"memory\":\"64Mi\"}}");
		char *eid = exec_start_id(id, "{\"command\":\"" COUNTER "\"}");
		snprintf(LIVE[i].id, sizeof(LIVE[i].id), "%s", id);
		snprintf(LIVE[i].eid, sizeof(LIVE[i].eid), "%s", eid);
		free(id);
		free(eid);
	}
}

static char *live_output(const live *l, long *status, size_t *len)
{
	e2e_resp r;
	char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", l->id, l->eid);
	*status = call(&r, "GET", p, NULL, 0);
	free(p);
	char *out = r.body;
	*len = r.len;
	r.body = NULL;
	e2e_resp_free(&r);
	return out;
}

/* Before a kill: what each counter has written so far. */
static void live_read_all(void)
{
	for (int i = 0; i < NLIVE; i++) {
		long st;
		free(LIVE[i].seen);
		LIVE[i].seen = live_output(&LIVE[i], &st, &LIVE[i].seen_len);
		if (st != 200)
			fail_msg("%s: stdout answered %ld", LIVE[i].eid, st);
	}
}

/* Each counter still runs, and its output begins with what it had before the last kill,
 * then goes on (numbered lines, none missing). */
static void live_check(void)
{
	for (int i = 0; i < NLIVE; i++) {
		live *l = &LIVE[i];
		cJSON *g = exec_get_wait(l->id, l->eid, NULL);
		if (strcmp(jstr(g, "status"), "running"))
			fail_msg("%s/%s: %s after the load, want running", l->id, l->eid,
				 jstr(g, "status"));
		cJSON_Delete(g);
		long st;
		size_t len;
		char *out = live_output(l, &st, &len);
		if (st != 200)
			fail_msg("%s: stdout answered %ld", l->eid, st);
		if (len <= l->seen_len || memcmp(out, l->seen, l->seen_len))
			fail_msg("%s/%s: %zu bytes of output before the kill, now %zu, and not a "
				 "continuation of them",
				 l->id, l->eid, l->seen_len, len);
		int n = 0;
		for (char *c = out; *c; c = strchr(c, '\n') + 1, n++) {
			char want[32];
			int wl = snprintf(want, sizeof(want), "line-%d\n", n);
			if (strncmp(c, want, wl))
				fail_msg("%s: line %d reads %.16s", l->eid, n, c);
		}
		free(out);
	}
}

static void live_stop(void)
{
	for (int i = 0; i < NLIVE; i++) {
		char *id = strdup(LIVE[i].id);
		sandbox_del(id);
		free(LIVE[i].seen);
	}
	free(LIVE);
	LIVE = NULL;
}

/* ---- the clients ---------------------------------------------------------------------------- */

typedef enum { FACT_FILE, FACT_EXEC } fact_kind;

/* Something a client was told is done: a file written (its content) or an execution
 * ended (its exit code and stdout). */
typedef struct fact {
	fact_kind kind;
	char id[64];
	char name[96]; /* the file's path, or the execution's id */
	char data[96]; /* the content, or the stdout */
	int code;
} fact;

typedef struct client {
	int n;
	pthread_t th;
	unsigned seed;
	char kept[KEPT_MAX][64]; /* sandboxes it made and was told are created */
	int nkept;
	fact facts[FACTS_MAX];
	int nfacts;
	/* counts */
	long ops, ok, refused; /* refused: no answer, or 5xx (a daemon being killed) */
	char error[512];       /* the first answer no kill explains */
} client;

static atomic_bool STOP;
static client *CLIENTS;

static void client_error(client *c, const char *fmt, ...)
{
	if (c->error[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
}

/* An answer no daemon kill explains: not 0 (no answer), not 5xx (a request the daemon
 * could not finish, e.g. a sandbox it lost touch with mid-kill), not WANT. */
static bool answered(client *c, const e2e_resp *r, long want, const char *what)
{
	c->ops++;
	if (r->status == want) {
		c->ok++;
		return true;
	}
	if (r->status == 0 || r->status >= 500) {
		c->refused++;
		return false;
	}
	client_error(c, "%s: %ld %.200s", what, r->status, r->body);
	return false;
}

static void fact_add(client *c, fact_kind k, const char *id, const char *name, const char *data,
		     int code)
{
	if (c->nfacts == FACTS_MAX)
		memmove(c->facts, c->facts + 1, sizeof(fact) * --c->nfacts);
	fact *f = &c->facts[c->nfacts++];
	f->kind = k;
	snprintf(f->id, sizeof(f->id), "%s", id);
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->data, sizeof(f->data), "%s", data);
	f->code = code;
}

/* Forget the facts about sandbox ID (deleted, or its fate unknown). */
static void facts_forget(client *c, const char *id)
{
	int j = 0;
	for (int i = 0; i < c->nfacts; i++)
		if (strcmp(c->facts[i].id, id))
			c->facts[j++] = c->facts[i];
	c->nfacts = j;
}

static void kept_drop(client *c, int i)
{
	facts_forget(c, c->kept[i]);
	memmove(c->kept[i], c->kept[i + 1], sizeof(c->kept[0]) * (c->nkept - i - 1));
	c->nkept--;
}

/* Write a file into ID and, when told it is written, remember it. */
static void client_write(client *c, const char *id, long k)
{
	char path[96], data[96];
	snprintf(path, sizeof(path), "/tmp/c%d-%ld", c->n, k);
	snprintf(data, sizeof(data), "client %d wrote %ld\n", c->n, k);
	char *p = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, path);
	e2e_resp r;
	call(&r, "PUT", p, data, strlen(data));
	if (answered(c, &r, 204, "write a file"))
		fact_add(c, FACT_FILE, id, path, data, 0);
	e2e_resp_free(&r);
	free(p);
}

/* Run a command in ID to its end and remember what it said. */
static void client_exec(client *c, const char *id, long k)
{
	char *body = e2e_printf("{\"command\":\"echo run-%d-%ld; cat /tmp/c%d-%ld >/dev/null 2>&1; "
				"exit %ld\"}",
				c->n, k, c->n, k, k % 3);
	char *p = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", id);
	e2e_resp r;
	call_json(&r, "POST", p, body);
	if (answered(c, &r, 201, "run a command")) {
		const char *st = r.json ? jstr(r.json, "status") : NULL;
		const char *eid = r.json ? jstr(r.json, "id") : NULL;
		const char *out = r.json ? jstr(r.json, "stdout") : NULL;
		cJSON *code = r.json ? cJSON_GetObjectItem(r.json, "exitCode") : NULL;
		if (!st || !eid || !out || !cJSON_IsNumber(code))
			client_error(c, "run a command: %.200s", r.body);
		else if (!strcmp(st, "completed") || !strcmp(st, "failed"))
			fact_add(c, FACT_EXEC, id, eid, out, code->valueint);
		/* still running after 30 s under load: not a fact, not an error */
	}
	e2e_resp_free(&r);
	free(p);
	free(body);
}

static void *client_main(void *arg)
{
	client *c = arg;
	for (long k = 0; k < 100000 && !atomic_load(&STOP); k++) {
		unsigned roll = rand_r(&c->seed) % 10;
		if (roll < 3 && c->nkept < KEPT_MAX) {
			e2e_resp r;
			call_json(&r, "POST", "/v1/sandboxes", "{\"image\":\"busybox\"}");
			const char *id = r.json ? jstr(r.json, "id") : NULL;
			if (answered(c, &r, 201, "create") && id)
				snprintf(c->kept[c->nkept++], sizeof(c->kept[0]), "%s", id);
			e2e_resp_free(&r);
		} else if (roll < 5 && c->nkept > 0) {
			int i = rand_r(&c->seed) % c->nkept;
			char *p = e2e_printf("/v1/sandboxes/%s", c->kept[i]);
			e2e_resp r;
			call(&r, "DELETE", p, NULL, 0);
			/* Deleted, or its fate unknown (the daemon died under the call): either
			 * way it is no longer ours to check; what is left of it is listed at the
			 * end, and must then be whole. */
			answered(c, &r, 204, "delete");
			kept_drop(c, i);
			e2e_resp_free(&r);
			free(p);
		} else {
			/* A file and a command in one of ours, or in a LIVE sandbox. */
			const char *id = c->nkept && roll < 8 ? c->kept[rand_r(&c->seed) % c->nkept]
							      : LIVE[rand_r(&c->seed) % NLIVE].id;
			client_write(c, id, k);
			client_exec(c, id, k);
		}
		if (c->refused && c->ops && c->ops - c->ok == c->refused)
			usleep(20000); /* a daemon being restarted: do not spin */
	}
	return NULL;
}

static void clients_run(int seconds, void (*at_third)(int))
{
	atomic_store(&STOP, false);
	CLIENTS = calloc(NCLIENTS, sizeof(*CLIENTS));
	assert_non_null(CLIENTS);
	for (int i = 0; i < NCLIENTS; i++) {
		CLIENTS[i].n = i;
		CLIENTS[i].seed = 0x5a11 + i;
		assert_int_equal(pthread_create(&CLIENTS[i].th, NULL, client_main, &CLIENTS[i]), 0);
	}
	int64_t t0 = e2e_now_ms();
	for (int third = 1; third <= 3; third++) {
		int64_t until = t0 + (int64_t)seconds * 1000 * third / 3;
		while (e2e_now_ms() < until)
			usleep(50000);
		if (third < 3 && at_third)
			at_third(third);
	}
	atomic_store(&STOP, true);
	for (int i = 0; i < NCLIENTS; i++)
		pthread_join(CLIENTS[i].th, NULL);
	long ops = 0, ok = 0, refused = 0;
	for (int i = 0; i < NCLIENTS; i++) {
		ops += CLIENTS[i].ops;
		ok += CLIENTS[i].ok;
		refused += CLIENTS[i].refused;
	}
	print_message("load: %d clients, %d s: %ld requests, %ld answered as asked, %ld refused "
		      "(no daemon, or 5xx)\n",
		      NCLIENTS, seconds, ops, ok, refused);
	for (int i = 0; i < NCLIENTS; i++)
		if (CLIENTS[i].error[0])
			fail_msg("client %d: %s", i, CLIENTS[i].error);
	assert_true(ok > NCLIENTS); /* the load did happen */
}

/* Every fact still holds; every kept sandbox is running. */
static void clients_check(void)
{
	int files = 0, execs = 0, kept = 0;
	for (int i = 0; i < NCLIENTS; i++) {
		client *c = &CLIENTS[i];
		for (int k = 0; k < c->nkept; k++, kept++) {
			e2e_resp r;
			char *p = e2e_printf("/v1/sandboxes/%s", c->kept[k]);
			e2e_http(&r, "GET", p, NULL);
			expect(&r, 200, NULL, NULL);
			if (strcmp(jstr(r.json, "status"), "running"))
				fail_msg("%s: %s, want running", c->kept[k], jstr(r.json, "status"));
			e2e_resp_free(&r);
			free(p);
		}
		for (int f = 0; f < c->nfacts; f++) {
			fact *x = &c->facts[f];
			e2e_resp r;
			char *p;
			if (x->kind == FACT_FILE) {
				p = e2e_printf("/v1/sandboxes/%s/files?path=%s", x->id, x->name);
				e2e_http(&r, "GET", p, NULL);
				if (r.status != 200 || strcmp(r.body, x->data))
					fail_msg("%s:%s: %ld \"%.100s\", want \"%s\"", x->id, x->name,
						 r.status, r.body, x->data);
				files++;
			} else {
				p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", x->id,
					       x->name);
				e2e_http(&r, "GET", p, NULL);
				if (r.status != 200 || strcmp(r.body, x->data))
					fail_msg("%s/%s: stdout %ld \"%.100s\", want \"%s\"", x->id,
						 x->name, r.status, r.body, x->data);
				e2e_resp_free(&r);
				free(p);
				p = e2e_printf("/v1/sandboxes/%s/executions/%s", x->id, x->name);
				e2e_http(&r, "GET", p, NULL);
				expect(&r, 200, NULL, NULL);
				if ((int)jnum(r.json, "exitCode") != x->code)
					fail_msg("%s/%s: exit code %d, want %d", x->id, x->name,
						 (int)jnum(r.json, "exitCode"), x->code);
				execs++;
			}
			e2e_resp_free(&r);
			free(p);
		}
	}
	print_message("after the load: %d kept sandboxes running, %d files and %d ended "
		      "executions as their clients were told\n",
		      kept, files, execs);
}

/* Every sandbox listed is whole (running, or paused by no one: running), none broken;
 * those that are not LIVE go (the clients' and any a kill left uncommitted). */
static void sweep_all_but_live(bool check_whole)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	expect(&r, 200, NULL, NULL);
	const cJSON *list = jget(r.json, "sandboxes");
	const cJSON *s;
	int other = 0;
	cJSON_ArrayForEach(s, list)
	{
		const char *id = jstr(s, "id"), *st = jstr(s, "status");
		if (check_whole && strcmp(st, "running"))
			fail_msg("%s is listed %s after the load (%s)", id, st,
				 jstr(s, "reason") ? jstr(s, "reason") : "no reason");
		bool is_live = false;
		for (int i = 0; i < NLIVE && !is_live; i++)
			is_live = !strcmp(LIVE[i].id, id);
		if (!is_live) {
			sandbox_del(strdup(id));
			other++;
		}
	}
	print_message("%d sandboxes besides the %d LIVE ones deleted\n", other, NLIVE);
	e2e_resp_free(&r);
}

static void clients_free(void)
{
	free(CLIENTS);
	CLIENTS = NULL;
}

/* ---- the daemon's resources ------------------------------------------------------------------ */

static int fd_count(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(p);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The daemon's figures once it is idle: the lowest of a few readings 200 ms apart (its
 * releasers and relays finish asynchronously). */
/* The daemon's RSS, fds and heap once settled: the least of ten readings over 2 s. The
 * heap too: the deadline sweep holds its listing for part of every second, which one
 * reading may catch. What a leak holds is in every reading. */
static void settled(long *rss, int *fds, long long *heap)
{
	*rss = LONG_MAX;
	*fds = INT_MAX;
	*heap = LLONG_MAX;
	for (int i = 0; i < 10; i++) {
		long r = e2e_proc_kib(D.pid, "VmRSS:");
		int f = fd_count(D.pid);
		long long h = metric("sandlot_daemon_heap_bytes");
		*rss = r < *rss ? r : *rss;
		*fds = f < *fds ? f : *fds;
		*heap = h < *heap ? h : *heap;
		usleep(200000);
	}
}

/* PID's mappings as "start-end name rss_kib" lines (caller frees): what grew, on a
 * failure. */
static char *smaps_rss(pid_t pid)
{
	char *p = e2e_printf("/proc/%d/smaps", (int)pid);
	char *text = e2e_read_file(p);
	free(p);
	assert_non_null(text);
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);
	char head[512] = "";
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		long kib;
		if (sscanf(l, "Rss: %ld kB", &kib) == 1 && kib >= 64) {
			if (len + sizeof(head) + 32 > cap)
				out = realloc(out, cap *= 2);
			len += snprintf(out + len, cap - len, "%s %ld\n", head, kib);
		} else if (strchr(l, '-') && !strchr(l, ':')) {
			snprintf(head, sizeof(head), "%s", l);
		} else if (strchr(l, '-') && strchr(l, ' ') && strchr(l, '-') < strchr(l, ' ')) {
			snprintf(head, sizeof(head), "%s", l);
		}
	}
	free(text);
	return out;
}

/* ---- the tests ------------------------------------------------------------------------------- */

#define HEAP_SLACK (16 * 32 * 1024) /* 16 connections' pools */

static void test_load_no_leak(void **state)
{
	live_start();
	live_read_all();
	/* The warm-up: the same load and the same checks in two halves, its figures the
	 * higher of the two (what the load reaches once — its caches, its threads' stacks —
	 * it should not pass). The leak figure is the heap the daemon holds
	 * (sandlot_daemon_heap_bytes): its RSS moves with how a burst's connection threads
	 * spread over malloc's arenas — after a 10 s warm-up it rose 23% (anonymous 4168 ->
	 * 5648 KiB) in one CI run and 7-12% in others, and after a 30 s warm-up it fell
	 * through 30 s more. So RSS only has to stay within half again of the warm-up's, and
	 * the heap within a fifth plus HEAP_SLACK: libmicrohttpd frees a closed connection's
	 * 32 KiB memory pool when its polling thread next gets to it, so a reading can hold
	 * a few of them (heaptrack of the daemon: those pools and fixed tables were all that
	 * was left at the end). */
	long rss0 = 0, rss1, r;
	long long heap0 = 0, heap1;
	int fd0 = 0, fd1, f;
	int warm = SECONDS > 20 ? SECONDS : 20;
	for (int half = 0; half < 2; half++) {
		clients_run((warm + 1) / 2, NULL);
		clients_check();
		clients_free();
		sweep_all_but_live(true);
		long long h;
		settled(&r, &f, &h);
		rss0 = r > rss0 ? r : rss0;
		fd0 = f > fd0 ? f : fd0;
		heap0 = h > heap0 ? h : heap0;
	}
	long anon0 = e2e_proc_kib(D.pid, "RssAnon:");
	char *maps0 = smaps_rss(D.pid);
	clients_run(SECONDS, NULL);
	clients_check();
	clients_free();
	sweep_all_but_live(true);
	settled(&rss1, &fd1, &heap1);
	print_message("daemon after a %d s warm-up: heap %lld KiB, RSS %ld KiB, %d fds; after %d s "
		      "more load: heap %lld KiB (%+.1f%%), RSS %ld KiB (%+.1f%%), %d fds (%+.1f%%); "
		      "anonymous %ld -> %ld KiB\n",
		      warm, heap0 >> 10, rss0, fd0, SECONDS, heap1 >> 10,
		      heap0 ? 100.0 * (heap1 - heap0) / heap0 : 0.0, rss1,
		      100.0 * (rss1 - rss0) / rss0, fd1, 100.0 * (fd1 - fd0) / fd0, anon0,
		      e2e_proc_kib(D.pid, "RssAnon:"));
	if (rss1 > rss0 * 3 / 2 || heap1 > heap0 * 12 / 10 + HEAP_SLACK) {
		char *maps1 = smaps_rss(D.pid);
		fprintf(stderr,
			"the daemon's mappings of 64 KiB or more resident, after the "
			"warm-up:\n%s\nafter the load:\n%s",
			maps0, maps1);
		free(maps1);
	}
	free(maps0);
	live_check();
	live_stop();
	assert_true(rss1 <= rss0 * 3 / 2);
#ifdef __SANITIZE_ADDRESS__
	/* No heap figure under the sanitizers' allocator: LeakSanitizer checks at exit. */
	assert_true(heap0 >= 0 && heap1 >= 0);
#else
	assert_true(heap0 > 0);
	assert_true(heap1 <= heap0 * 12 / 10 + HEAP_SLACK);
#endif
	assert_true(fd1 <= fd0 * 12 / 10);
}

/* For each sandbox the doctor names: what its daemons logged of it, and what is in its
 * record and run dirs — what it takes to see which step a kill interrupted. */
static void doctor_findings_explained(const char *out)
{
	for (const char *l = out; (l = strstr(l, "sbx_")); l += 4) {
		char id[32];
		if (sscanf(l, "%31[a-z0-9_]", id) != 1)
			continue;
		char *sh = e2e_printf("echo '-- %s:'; grep -h '%s' %s/sandlot.log | tail -n 20; "
				      "ls -la %s/sandboxes/%s %s/sandboxes/%s 2>&1; "
				      "cat %s/sandboxes/%s/sandbox.json 2>/dev/null",
				      id, id, getenv("SANDLOT_STATE_DIR"), getenv("SANDLOT_STATE_DIR"),
				      id, getenv("SANDLOT_RUN_DIR"), id, getenv("SANDLOT_STATE_DIR"),
				      id);
		char *argv[] = {"/bin/sh", "-c", sh, NULL};
		e2e_result r;
		e2e_run(&r, NULL, 0, 10000, argv);
		print_error("%s%s\n", r.out, r.err);
		e2e_result_free(&r);
		free(sh);
		l = strchr(l, '\n');
		if (!l)
			break;
	}
}

static pid_t KILLED[2];

static void kill_and_restart(int third)
{
	live_read_all();
	KILLED[third - 1] = D.pid;
	int64_t t = e2e_now_ms();
	e2e_daemon_kill(&D);
	e2e_daemon_start(&D, D.sock, true, NULL);
	print_message("kill -9 %d at %d/3 of the load; the new daemon %d answered %lld ms "
		      "later\n",
		      (int)KILLED[third - 1], third, (int)D.pid, (long long)(e2e_now_ms() - t));
}

static void test_load_kill9_twice(void **state)
{
	/* With the default bound of tombstones, as a daemon runs (main's bound is for the
	 * leak check's measure alone). */
	pid_t first = D.pid;
	unsetenv("SANDLOT_TOMBSTONES_MAX");
	e2e_daemon_halt(&D);
	e2e_daemon_start(&D, D.sock, true, NULL);
	live_start();
	clients_run(SECONDS, kill_and_restart);
	assert_true(D.pid != first && KILLED[1] != KILLED[0]);
	clients_check();
	clients_free();
	sweep_all_but_live(true);
	live_check();
	live_stop();
	/* The state and the host agree: nothing broken, nothing orphaned. */
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "doctor", NULL);
	if (r.status != 0) {
		print_error("sandlot doctor after the kills: exit %d\n%s%s", r.status, r.out,
			    r.err);
		doctor_findings_explained(r.out);
		fail();
	}
	e2e_result_free(&r);
	/* libmicrohttpd's TCP-option warnings on unix sockets stay out of the log. */
	char *logp = e2e_printf("%s/sandlot.log", getenv("SANDLOT_STATE_DIR"));
	char *log = e2e_read_file(logp);
	assert_non_null(log);
	assert_false(e2e_contains(log, "TCP_CORK"));
	free(log);
	free(logp);
	assert_only_daemon_changed(*state, first, D.pid);
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

int main(void)
{
	SECONDS = env_int("SANDLOT_LOAD_SECONDS", SECONDS, 3, 3600);
	NLIVE = env_int("SANDLOT_LOAD_SANDBOXES", NLIVE, 1, 500);
	NCLIENTS = env_int("SANDLOT_LOAD_CLIENTS", NCLIENTS, 1, 200);
	/* The daemon keeps the records of deleted sandboxes, up to tombstones_max (5000) for
	 * 24 h, and what it holds for them is bounded by that, not by time: a run's churn
	 * (~1,500 deletes in 30 s) stays far below the bound, so its heap rose by ~1.3 KiB a
	 * tombstone through the whole run (+25-48%) and the leak check could not tell that
	 * from a leak. With the bound at 100 it is reached in the warm-up: +6% over the load
	 * (docs/reliability.md). test_load_kill9_twice restarts its daemon without it. */
	setenv("SANDLOT_TOMBSTONES_MAX", "100", 0);
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_load_no_leak),
	    E2E_TEST(test_load_kill9_twice),
	};
	return api_run_tests(tests);
}

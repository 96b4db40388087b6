/* test_disk.c — disk the operator did not grant (hardening fix 7): the state dir is a
 * small ext4 on a loop device, the store a small sparse btrfs in it, and a daemon with
 * --max-disk, --min-free and --max-imports; imports bigger than the disk, a full disk,
 * a sandbox filling its own, concurrent imports. */
#include "common.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"

#define FLOOR_MIB 8 /* --min-free 8Mi */

static e2e_daemon D;
static char IMG[256], STATE[256], LOOPDEV[64];

/* ---- helpers ---- */

static void sh_ok(const char *line)
{
	e2e_result r;
	char *const argv[] = {"/bin/sh", "-c", (char *)line, NULL};
	e2e_run(&r, NULL, 0, 60000, argv);
	if (r.status != 0)
		fail_msg("`%s` exited %d: %s%s", line, r.status, r.out, r.err);
	e2e_result_free(&r);
}

static char *sh_out(const char *line)
{
	e2e_result r;
	char *const argv[] = {"/bin/sh", "-c", (char *)line, NULL};
	e2e_run(&r, NULL, 0, 60000, argv);
	char *out = strdup(r.out);
	e2e_result_free(&r);
	return out;
}

static uint64_t free_bytes(void)
{
	struct statvfs st;
	assert_int_equal(statvfs(STATE, &st), 0);
	return (uint64_t)st.f_bavail * st.f_frsize;
}

static const char *err_code(const e2e_resp *r)
{
	cJSON *e = cJSON_GetObjectItem(r->json, "error");
	cJSON *c = cJSON_GetObjectItem(e, "code");
	return cJSON_IsString(c) ? c->valuestring : "";
}

static const char *err_msg(const e2e_resp *r)
{
	cJSON *e = cJSON_GetObjectItem(r->json, "error");
	cJSON *m = cJSON_GetObjectItem(e, "message");
	return cJSON_IsString(m) ? m->valuestring : "";
}

static void expect(const e2e_resp *r, long status, const char *code)
{
	if (r->status != status || (code && strcmp(err_code(r), code)))
		fail_msg("expected %ld %s, got %ld: %s", status, code ? code : "", r->status,
			 r->body);
}

/* POST /v1/sandboxes with DISK (NULL: the default); the id (caller frees). */
static char *create(const char *disk, long want, const char *code)
{
	_cleanup_free_ char *body =
	    disk ? e2e_printf("{\"image\":\"busybox\",\"resources\":{\"disk\":\"%s\"}}", disk)
		 : strdup("{\"image\":\"busybox\"}");
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes", body);
	expect(&r, want, code);
	char *id = NULL;
	if (want == 201)
		id = strdup(cJSON_GetObjectItem(r.json, "id")->valuestring);
	e2e_resp_free(&r);
	return id;
}

static void sandbox_delete(const char *id)
{
	_cleanup_free_ char *p = e2e_printf("/v1/sandboxes/%s", id);
	e2e_resp r;
	e2e_http(&r, "DELETE", p, NULL);
	expect(&r, 204, NULL);
	e2e_resp_free(&r);
}

static void put_file(const char *id, const char *path, const char *content)
{
	_cleanup_free_ char *p = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, path);
	e2e_resp r;
	e2e_req q = {.method = "PUT", .path = p, .body = content, .len = strlen(content)};
	e2e_http_q(&r, &q);
	expect(&r, 204, NULL);
	e2e_resp_free(&r);
}

static void assert_file(const char *id, const char *path, const char *content)
{
	_cleanup_free_ char *p = e2e_printf("/v1/sandboxes/%s/files?path=%s", id, path);
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL);
	assert_string_equal(r.body, content);
	e2e_resp_free(&r);
}

static void assert_listed(const char *const *ids, int n)
{
	e2e_resp r;
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	expect(&r, 200, NULL);
	for (int i = 0; i < n; i++)
		if (!e2e_contains(r.body, ids[i]))
			fail_msg("sandbox %s missing from the list: %s", ids[i], r.body);
	e2e_resp_free(&r);
}

static char *read_whole(const char *path, size_t *len)
{
	char *b = e2e_read_file_len(path, len);
	assert_non_null(b);
	return b;
}

static long import(const char *name, const void *blob, size_t len, e2e_resp *r)
{
	_cleanup_free_ char *p = e2e_printf("/v1/images?name=%s", name);
	e2e_req q = {.method = "POST", .path = p, .body = blob, .len = len};
	return e2e_http_q(r, &q);
}

static void fill_random(struct archive *a)
{
	_cleanup_free_ char *buf = malloc(1 << 20);
	_cleanup_close_ int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	assert_non_null(buf);
	assert_true(rnd >= 0);
	struct archive_entry *e = archive_entry_new();
	for (int f = 0; f < 4; f++) {
		char name[32];
		snprintf(name, sizeof(name), "data/blob%d", f);
		archive_entry_clear(e);
		archive_entry_set_pathname(e, name);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, 24 << 20);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		for (int m = 0; m < 24; m++) {
			assert_int_equal(read(rnd, buf, 1 << 20), 1 << 20);
			assert_int_equal(archive_write_data(a, buf, 1 << 20), 1 << 20);
		}
	}
	archive_entry_free(e);
}

/* The lowest free space seen on the state filesystem while a test step runs. */
typedef struct watch {
	pthread_t th;
	atomic_bool stop;
	atomic_ullong min;
} watch;

static void *watch_main(void *p)
{
	watch *w = p;
	while (!atomic_load(&w->stop)) {
		struct statvfs st;
		if (statvfs(STATE, &st) == 0) {
			unsigned long long f = (unsigned long long)st.f_bavail * st.f_frsize;
			if (f < atomic_load(&w->min))
				atomic_store(&w->min, f);
		}
		usleep(1000);
	}
	return NULL;
}

/* A create on a thread of its own: its status, 0 when no answer came. */
typedef struct job_create_arg {
	long status;
} job_create_arg;

static void *create_job(void *p)
{
	job_create_arg *a = p;
	e2e_resp r;
	e2e_req q = {.method = "POST",
		     .path = "/v1/sandboxes",
		     .body = "{\"image\":\"busybox\"}",
		     .len = strlen("{\"image\":\"busybox\"}"),
		     .d = &D,
		     .timeout_ms = 30000,
		     .no_capture = true};
	a->status = e2e_http_q(&r, &q);
	e2e_resp_free(&r);
	return NULL;
}

static char *execution_stdout(const char *id, const char *eid)
{
	_cleanup_free_ char *p = e2e_printf("/v1/sandboxes/%s/executions/%s/stdout", id, eid);
	e2e_resp r;
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL);
	char *out = strdup(r.body);
	e2e_resp_free(&r);
	return out;
}

/* ---- fixtures ---- */

static int group_setup(void **state)
{
	e2e_env_setup_opts(false);
	const char *root = e2e_root();
	snprintf(IMG, sizeof(IMG), "%s/statefs.img", root);
	snprintf(STATE, sizeof(STATE), "%s", getenv("SANDLOT_STATE_DIR"));
	/* A 256 MiB sparse store on a 64 MiB filesystem: overcommitted, as a big store on a
	 * host disk can be. The CLI here gets the same floor from the environment. */
	setenv("SANDLOT_STORE_SIZE", "256Mi", 1);
	setenv("SANDLOT_DEFAULT_DISK", "4Mi", 1);
	setenv("SANDLOT_MIN_FREE", "8Mi", 1);
	_cleanup_free_ char *mk = e2e_printf(
	    "truncate -s 64M %s && mkfs.ext4 -q -m 0 -F %s && mkdir -p %s", IMG, IMG, STATE);
	sh_ok(mk);
	_cleanup_free_ char *lo = e2e_printf("losetup --find --show %s", IMG);
	_cleanup_free_ char *dev = sh_out(lo);
	dev[strcspn(dev, "\n")] = '\0';
	assert_true(!strncmp(dev, "/dev/loop", 9));
	snprintf(LOOPDEV, sizeof(LOOPDEV), "%s", dev);
	assert_int_equal(mount(LOOPDEV, STATE, "ext4", 0, NULL), 0);
	_cleanup_free_ char *tar = e2e_build_path("images/busybox.tar");
	free(e2e_sandlot_ok("image", "import", "busybox", tar, NULL));
	_cleanup_free_ char *sock = e2e_printf("%s/disk.sock", root);
	const char *const extra[] = {"--max-disk",    "48Mi", "--min-free", "8Mi",
				     "--max-imports", "1",    NULL};
	e2e_daemon_start(&D, sock, false, extra);
	e2e_http_use(&D, NULL);
	print_message("state filesystem: %s on %s, %llu MiB free after the busybox import\n",
		      LOOPDEV, STATE, (unsigned long long)(free_bytes() >> 20));
	return 0;
}

static int group_teardown(void **state)
{
	if (D.pid > 0)
		e2e_daemon_halt(&D);
	/* Our own mounts, undone by hand: the store (its loop device goes with it,
	 * LO_FLAGS_AUTOCLEAR), then the state filesystem and its loop device. */
	_cleanup_free_ char *store = e2e_printf("%s/store", STATE);
	/* What a failed test left: removed while the state is still mounted. */
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "ls", "--format", "json", NULL);
	cJSON *list = cJSON_Parse(r.out), *it;
	cJSON_ArrayForEach(it, list)
	{
		cJSON *id = cJSON_GetObjectItem(it, "id");
		e2e_result x;
		if (!cJSON_IsString(id))
			continue;
		e2e_sandlot(&x, NULL, 0, "rm", "-f", id->valuestring, NULL);
		e2e_result_free(&x);
	}
	cJSON_Delete(list);
	e2e_result_free(&r);
	if (umount(store) < 0 && errno != EINVAL && errno != ENOENT)
		print_error("test_disk: umount %s: %s\n", store, strerror(errno));
	/* The image store's nosuid,nodev bind of itself (hardening fix 3) holds the state
	 * filesystem busy until it goes. */
	_cleanup_free_ char *images = e2e_printf("%s/images", STATE);
	if (umount(images) < 0 && errno != EINVAL && errno != ENOENT)
		print_error("test_disk: umount %s: %s\n", images, strerror(errno));
	/* The store's loop device lets go of its file a moment after its unmount. */
	_cleanup_free_ char *lo = e2e_printf(
	    "for d in $(losetup -n -O NAME -j %s/store.img); do losetup -d $d; done", STATE);
	free(sh_out(lo));
	int tries = 0;
	while (umount(STATE) < 0 && errno == EBUSY && ++tries < 50)
		usleep(100000);
	if (tries == 50)
		print_error("test_disk: umount %s: %s\n", STATE, strerror(EBUSY));
	if (LOOPDEV[0]) {
		_cleanup_free_ char *d = e2e_printf("losetup -d %s", LOOPDEV);
		free(sh_out(d));
	}
	e2e_env_teardown();
	return 0;
}

/* ---- tests ---- */

/* (e) A disk over --max-disk is refused up front, naming the field and the limit. */
static void test_disk_over_the_maximum_is_refused(void **state)
{
	e2e_resp r;
	e2e_http(&r, "POST", "/v1/sandboxes",
		 "{\"image\":\"busybox\",\"resources\":{\"disk\":\"1Gi\"}}");
	expect(&r, 400, "INVALID_ARGUMENT");
	assert_true(e2e_contains(err_msg(&r), "disk 1Gi"));
	assert_true(e2e_contains(err_msg(&r), "48Mi"));
	e2e_resp_free(&r);
	/* The CLI, whose maximum is the store's size (256Mi) here. */
	e2e_result c;
	assert_int_not_equal(
	    e2e_sandlot(&c, NULL, 0, "create", "--image", "busybox", "--disk", "1Gi", NULL), 0);
	assert_true(e2e_contains(c.err, "maximum of 256Mi"));
	e2e_result_free(&c);
}

struct slow_body {
	const char *blob;
	size_t len, sent;
	atomic_bool release;
	atomic_size_t progress;
};

/* Half the archive, then nothing until released. */
static size_t slow_stream(char *buf, size_t len, void *ud)
{
	struct slow_body *b = ud;
	for (int i = 0; b->sent >= b->len / 2 && !atomic_load(&b->release) && i < 3000; i++)
		usleep(10000);
	size_t n = b->len - b->sent < len ? b->len - b->sent : len;
	memcpy(buf, b->blob + b->sent, n);
	b->sent += n;
	atomic_store(&b->progress, b->sent);
	return n;
}

struct slow_import {
	struct slow_body body;
	e2e_resp r;
};

static void *slow_import_main(void *p)
{
	struct slow_import *s = p;
	e2e_req q = {.method = "POST",
		     .path = "/v1/images?name=slow",
		     .stream = slow_stream,
		     .stream_ud = &s->body,
		     .stream_len = (long long)s->body.len};
	e2e_http_q(&s->r, &q);
	return NULL;
}

/* (d) With --max-imports 1, a second import while one runs gets 429 with Retry-After,
 * before its body is read; once the first ends it goes through. */
static void test_concurrent_imports_are_capped(void **state)
{
	_cleanup_free_ char *tar = e2e_build_path("images/busybox.tar");
	size_t len;
	_cleanup_free_ char *blob = read_whole(tar, &len);
	struct slow_import s = {.body = {.blob = blob, .len = len}};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, slow_import_main, &s), 0);
	for (int i = 0; i < 500 && atomic_load(&s.body.progress) < len / 2; i++)
		usleep(10000);
	assert_true(atomic_load(&s.body.progress) >= len / 2);
	e2e_resp r;
	import("second", blob, len, &r);
	expect(&r, 429, "RESOURCE_EXHAUSTED");
	assert_true(e2e_contains(err_msg(&r), "--max-imports"));
	assert_true(e2e_contains(r.headers, "Retry-After: 1"));
	e2e_resp_free(&r);
	atomic_store(&s.body.release, true);
	pthread_join(th, NULL);
	expect(&s.r, 201, NULL);
	e2e_resp_free(&s.r);
	import("second", blob, len, &r);
	expect(&r, 201, NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "DELETE", "/v1/images/second", NULL);
	expect(&r, 204, NULL);
	e2e_resp_free(&r);
	e2e_http(&r, "DELETE", "/v1/images/slow", NULL);
	expect(&r, 204, NULL);
	e2e_resp_free(&r);
}

/* (a) An archive bigger than the free space: 507 INSUFFICIENT_STORAGE once the floor is
 * reached (never a full disk on the way), nothing half-made left, reads still served. */
static void test_import_bigger_than_the_disk(void **state)
{
	char *id = create(NULL, 201, NULL);
	put_file(id, "/root/keep", "kept");
	_cleanup_free_ char *tar = e2e_write_archive("big.tar", fill_random);
	size_t len;
	_cleanup_free_ char *blob = read_whole(tar, &len);
	unlink(tar);
	uint64_t before = free_bytes();
	print_message("importing %zu MiB onto %llu MiB free\n", len >> 20,
		      (unsigned long long)(before >> 20));
	watch w = {.min = UINT64_MAX};
	assert_int_equal(pthread_create(&w.th, NULL, watch_main, &w), 0);
	e2e_resp r;
	import("big", blob, len, &r);
	atomic_store(&w.stop, true);
	pthread_join(w.th, NULL);
	print_message("507 after the lowest free space of %llu KiB: %s\n",
		      (unsigned long long)(atomic_load(&w.min) >> 10), err_msg(&r));
	expect(&r, 507, "INSUFFICIENT_STORAGE");
	assert_true(e2e_contains(err_msg(&r), "floor"));
	e2e_resp_free(&r);
	/* The floor held: a check every 4 MiB written lets it go at most that far under. */
	assert_true(atomic_load(&w.min) > (uint64_t)(FLOOR_MIB - 5) << 20);
	/* Nothing half-made: no image, an empty scratch dir, the space given back. */
	e2e_http(&r, "GET", "/v1/images", NULL);
	expect(&r, 200, NULL);
	assert_false(e2e_contains(r.body, "\"big\""));
	e2e_resp_free(&r);
	_cleanup_free_ char *ls = e2e_printf("ls -A %s/images/tmp", STATE);
	_cleanup_free_ char *left = sh_out(ls);
	assert_string_equal(left, "");
	uint64_t after = free_bytes();
	assert_true(after + (1 << 20) >= before);
	/* The daemon serves reads and writes. */
	const char *ids[] = {id};
	assert_listed(ids, 1);
	assert_file(id, "/root/keep", "kept");
	sandbox_delete(id);
	free(id);
}

/* (c) A create whose whole disk does not fit above the floor is refused (507); one that
 * fits, filling its disk, stops at its own quota and leaves room for the next. */
static void test_sandbox_disk_needs_room_and_stops_at_its_quota(void **state)
{
	/* Leave about 24 MiB above the floor. */
	uint64_t fr = free_bytes();
	uint64_t fill = fr > (32ULL << 20) ? (fr - (32ULL << 20)) >> 20 : 0;
	_cleanup_free_ char *dd =
	    e2e_printf("dd if=/dev/zero of=%s/filler bs=1M count=%llu status=none && sync", STATE,
		       (unsigned long long)fill);
	sh_ok(dd);
	print_message("%llu MiB free\n", (unsigned long long)(free_bytes() >> 20));
	free(create("40Mi", 507, "INSUFFICIENT_STORAGE"));
	/* Not smaller: btrfs reserves metadata against the qgroup too, and a disk of 8Mi
	 * took no 1 MiB write at all. */
	char *a = create("16Mi", 201, NULL);
	_cleanup_free_ char *fl = e2e_printf("/v1/sandboxes/%s/executions?wait=60s", a);
	e2e_resp r;
	e2e_http(&r, "POST", fl,
		 "{\"command\":[\"sh\",\"-c\",\"dd if=/dev/zero of=/root/fill bs=1M count=64 "
		 "2>&1; sync; stat -c size=%s /root/fill\"]}");
	expect(&r, 201, NULL);
	assert_true(e2e_contains(r.body, "quota exceeded") ||
		    e2e_contains(r.body, "No space left"));
	const char *sz = strstr(r.body, "size=");
	assert_non_null(sz);
	long long size = atoll(sz + 5);
	print_message("disk 16Mi: its filler stopped at %lld bytes; %llu MiB free\n", size,
		      (unsigned long long)(free_bytes() >> 20));
	assert_true(size <= 16LL << 20);
	e2e_resp_free(&r);
	assert_true(free_bytes() > (uint64_t)FLOOR_MIB << 20);
	/* The next sandbox still gets its disk and writes to it. */
	char *b = create(NULL, 201, NULL);
	put_file(b, "/root/mine", "still room");
	assert_file(b, "/root/mine", "still room");
	sandbox_delete(a);
	sandbox_delete(b);
	free(a);
	free(b);
	_cleanup_free_ char *rm = e2e_printf("rm -f %s/filler", STATE);
	sh_ok(rm);
}

/* (b) The state filesystem filled under a running daemon: every sandbox still listed with
 * its files, creates and imports refused with 507, a write fails cleanly or lands whole;
 * after the space is freed everything works again. */
static void test_full_state_filesystem_loses_nothing(void **state)
{
	char *ids[2] = {create(NULL, 201, NULL), create(NULL, 201, NULL)};
	put_file(ids[0], "/root/a", "alpha");
	put_file(ids[1], "/root/b", "beta");
	/* The sandboxes' writes reach the store's file first: btrfs writing into a full
	 * filesystem under it is the case the floor is there to avoid (docs/storage.md). */
	_cleanup_free_ char *dd = e2e_printf(
	    "sync; dd if=/dev/zero of=%s/filler bs=1M status=none 2>/dev/null; sync -f %s", STATE,
	    STATE);
	free(sh_out(dd));
	print_message("filled: %llu KiB free\n", (unsigned long long)(free_bytes() >> 10));
	assert_true(free_bytes() < 1 << 20);

	assert_listed((const char *const *)ids, 2);
	assert_file(ids[0], "/root/a", "alpha");
	assert_file(ids[1], "/root/b", "beta");
	free(create(NULL, 507, "INSUFFICIENT_STORAGE"));
	_cleanup_free_ char *tar = e2e_build_path("images/busybox.tar");
	size_t len;
	_cleanup_free_ char *blob = read_whole(tar, &len);
	e2e_resp r;
	import("whilefull", blob, len, &r);
	expect(&r, 507, "INSUFFICIENT_STORAGE");
	e2e_resp_free(&r);
	/* A record write: whole or refused with an error, never a record lost. */
	_cleanup_free_ char *p = e2e_printf("/v1/sandboxes/%s", ids[0]);
	e2e_http(&r, "PATCH", p, "{\"labels\":{\"k\":\"v\"}}");
	print_message("PATCH on a full disk: %ld %s\n", r.status, r.status == 200 ? "" : r.body);
	assert_true(r.status == 200 || (r.status >= 500 && err_code(&r)[0]));
	e2e_resp_free(&r);
	e2e_http(&r, "GET", p, NULL);
	expect(&r, 200, NULL);
	assert_true(e2e_contains(r.body, "\"running\""));
	e2e_resp_free(&r);
	/* Commands still run (their logs are in the run dir). */
	_cleanup_free_ char *ex = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", ids[1]);
	e2e_http(&r, "POST", ex, "{\"command\":[\"cat\",\"/root/b\"]}");
	print_message("a command on a full disk: %ld %s\n", r.status, r.body);
	expect(&r, 201, NULL);
	assert_true(e2e_contains(r.body, "beta"));
	e2e_resp_free(&r);

	_cleanup_free_ char *rm = e2e_printf("rm -f %s/filler; sync", STATE);
	sh_ok(rm);
	char *c = create(NULL, 201, NULL);
	put_file(c, "/root/c", "gamma");
	assert_file(c, "/root/c", "gamma");
	const char *all[] = {ids[0], ids[1], c};
	assert_listed(all, 3);
	assert_file(ids[0], "/root/a", "alpha");
	for (int i = 0; i < 3; i++)
		sandbox_delete(all[i]);
	free(ids[0]);
	free(ids[1]);
	free(c);
}

/* Hardening issue, fault injection: the daemon killed with -9 while the state filesystem
 * (and so the store in it) is full, with a create in flight and a command writing output,
 * then restarted while still full. It starts and serves reads; nothing committed is
 * lost; the command runs on; once there is room, `sandlot doctor` (after `--repair`, if
 * it found anything) is clean and creates work again. */
static void test_kill9_while_full_loses_nothing(void **state)
{
	char *ids[2] = {create(NULL, 201, NULL), create(NULL, 201, NULL)};
	put_file(ids[0], "/root/a", "alpha");
	put_file(ids[1], "/root/b", "beta");
	_cleanup_free_ char *ex = e2e_printf("/v1/sandboxes/%s/executions", ids[1]);
	e2e_resp r;
	e2e_http(&r, "POST", ex,
		 "{\"command\":\"i=0; while [ $i -lt 3000 ]; do echo n$i; i=$((i+1)); "
		 "sleep 0.1; done\"}");
	expect(&r, 201, NULL);
	_cleanup_free_ char *eid = strdup(cJSON_GetObjectItem(r.json, "id")->valuestring);
	e2e_resp_free(&r);
	/* The sandbox fills its own disk too (the store's), as far as the store lets it. */
	_cleanup_free_ char *fill = e2e_printf("/v1/sandboxes/%s/executions?wait=60s", ids[0]);
	e2e_http(&r, "POST", fill,
		 "{\"command\":\"dd if=/dev/zero of=/root/fill bs=1M 2>&1 | tail -n 1\"}");
	print_message("a sandbox filling its disk: %.200s\n", r.body);
	e2e_resp_free(&r);
	_cleanup_free_ char *dd = e2e_printf(
	    "sync; dd if=/dev/zero of=%s/filler bs=1M status=none 2>/dev/null; sync -f %s", STATE,
	    STATE);
	free(sh_out(dd));
	assert_true(free_bytes() < 1 << 20);

	/* A create in flight (refused for room, or cut by the kill), then kill -9. */
	pthread_t th;
	job_create_arg arg = {0};
	assert_int_equal(pthread_create(&th, NULL, create_job, &arg), 0);
	usleep(20000);
	pid_t old = D.pid;
	_cleanup_free_ char *before_kill = execution_stdout(ids[1], eid);
	e2e_daemon_kill(&D);
	pthread_join(th, NULL);
	print_message("the create in flight at the kill: %ld\n", arg.status);
	const char *const extra[] = {"--max-disk",    "48Mi", "--min-free", "8Mi",
				     "--max-imports", "1",    NULL};
	e2e_daemon_start(&D, D.sock, false, extra);
	print_message("restarted on a full filesystem (%llu KiB free)\n",
		      (unsigned long long)(free_bytes() >> 10));

	/* Reads, still full. */
	assert_listed((const char *const *)ids, 2);
	assert_file(ids[0], "/root/a", "alpha");
	assert_file(ids[1], "/root/b", "beta");
	usleep(500000);
	_cleanup_free_ char *after = execution_stdout(ids[1], eid);
	if (strncmp(after, before_kill, strlen(before_kill)) || strlen(after) <= strlen(before_kill))
		fail_msg("the command's output: %zu bytes before the kill, %zu after, not a "
			 "continuation",
			 strlen(before_kill), strlen(after));
	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	expect(&r, 200, NULL);
	cJSON *s;
	int listed = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.json, "sandboxes"))
	{
		listed++;
		const char *st = cJSON_GetObjectItem(s, "status")->valuestring;
		if (strcmp(st, "running"))
			fail_msg("%s listed %s after the restart", cJSON_GetObjectItem(s, "id")->valuestring,
				 st);
	}
	e2e_resp_free(&r);
	assert_true(listed == 2 || (listed == 3 && arg.status == 201));

	/* Room again: doctor, then a create. */
	_cleanup_free_ char *rm = e2e_printf("rm -f %s/filler; sync", STATE);
	sh_ok(rm);
	_cleanup_free_ char *unfill = e2e_printf("/v1/sandboxes/%s/executions?wait=30s", ids[0]);
	e2e_http(&r, "POST", unfill, "{\"command\":\"rm -f /root/fill\"}");
	expect(&r, 201, NULL);
	e2e_resp_free(&r);
	e2e_result d;
	e2e_sandlot(&d, NULL, 0, "doctor", NULL);
	print_message("doctor after the restart: exit %d\n%s", d.status, d.out);
	if (d.status == 1) {
		e2e_result_free(&d);
		e2e_sandlot(&d, NULL, 0, "doctor", "--repair", NULL);
		e2e_result_free(&d);
		e2e_sandlot(&d, NULL, 0, "doctor", NULL);
	}
	if (d.status != 0)
		fail_msg("doctor: exit %d\n%s%s", d.status, d.out, d.err);
	e2e_result_free(&d);
	char *c = create(NULL, 201, NULL);
	put_file(c, "/root/c", "gamma");
	assert_file(ids[0], "/root/a", "alpha");

	e2e_http(&r, "GET", "/v1/sandboxes", NULL);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.json, "sandboxes"))
	    sandbox_delete(cJSON_GetObjectItem(s, "id")->valuestring);
	e2e_resp_free(&r);
	free(ids[0]);
	free(ids[1]);
	free(c);
	assert_only_daemon_changed(*state, old, D.pid);
	e2e_snapshot_free(*state);
	*state = e2e_snapshot_take();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_disk_over_the_maximum_is_refused),
	    E2E_TEST(test_concurrent_imports_are_capped),
	    E2E_TEST(test_import_bigger_than_the_disk),
	    E2E_TEST(test_sandbox_disk_needs_room_and_stops_at_its_quota),
	    E2E_TEST(test_full_state_filesystem_loses_nothing),
	    E2E_TEST(test_kill9_while_full_loses_nothing),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* test_lifecycle.c — pause/resume (cgroup freezer), stop/start (files kept, processes
 * and cgroup gone), and sandboxes that come back "stopped" after a host reboot. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static char *sh_ok(const char *id, const char *line)
{
	return e2e_sandlot_ok("exec", id, "--", "sh", "-c", line, NULL);
}

static long counter(const char *id)
{
	char *s = sh_ok(id, "wc -l < /tmp/c");
	long v = atol(s);
	free(s);
	return v;
}

static bool cgroup_exists(const char *id)
{
	char p[256];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/pids/sandlot/%s", id);
	struct stat st;
	if (stat("/sys/fs/cgroup/pids", &st) != 0)
		snprintf(p, sizeof(p), "/sys/fs/cgroup/sandlot/%s", id);
	return stat(p, &st) == 0;
}

static void test_pause_stops_the_clock_and_resume_continues(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(id, "(while :; do echo x >> /tmp/c; usleep 50000; done) >/dev/null 2>&1 &"));
	usleep(400000);
	free(e2e_sandlot_ok("pause", id, NULL));
	char *in = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(in, "\"paused\""));
	free(in);
	/* Commands are refused while paused, with a message saying what to do. */
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "true", NULL), 125);
	assert_true(e2e_contains(r.err, "resume"));
	e2e_result_free(&r);
	/* The file does not grow while frozen (read from the host side of the layer). */
	char path[512];
	snprintf(path, sizeof(path), "%s/store/sandboxes/%s/upper/tmp/c", getenv("SANDLOT_STATE_DIR"),
		 id);
	char *a = e2e_read_file(path);
	usleep(600000);
	char *b = e2e_read_file(path);
	assert_non_null(a);
	assert_string_equal(a, b);
	free(a);
	free(b);
	free(e2e_sandlot_ok("resume", id, NULL));
	long c1 = counter(id);
	usleep(400000);
	assert_true(counter(id) > c1);
	free(e2e_sandlot_ok("rm", id, NULL));
	free(id);
}

static void test_stop_start_keeps_files_and_env(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(id, "echo kept > /root/file; sleep 1000 >/dev/null 2>&1 &"));
	free(e2e_sandlot_ok("stop", id, NULL));
	char *in = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(in, "\"stopped\""));
	free(in);
	assert_false(cgroup_exists(id));
	e2e_result r;
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "exec", id, "--", "true", NULL), 125);
	e2e_result_free(&r);
	free(e2e_sandlot_ok("start", id, NULL));
	assert_true(cgroup_exists(id));
	char *f = sh_ok(id, "cat /root/file; ps | grep -c 'sleep 1000' || true");
	assert_true(e2e_contains(f, "kept"));
	/* The old processes are gone: only grep's own line matches. */
	free(f);
	f = sh_ok(id, "pgrep -x sleep || echo none");
	assert_string_equal(f, "none");
	free(f);
	/* start on a running sandbox is a state error. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "start", id, NULL), 125);
	assert_true(e2e_contains(r.err, "running"));
	e2e_result_free(&r);
	free(e2e_sandlot_ok("rm", id, NULL));
	free(id);
}

/* Each launch has its own boot id: a stop/start is a cold boot to the workload, a
 * pause/resume is not, and neither shows the host's. */
static void test_boot_id_is_new_at_each_start(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	char *host = e2e_read_file("/proc/sys/kernel/random/boot_id");
	char *b1 = sh_ok(id, "cat /proc/sys/kernel/random/boot_id");
	assert_int_equal(strlen(b1), 36);
	assert_non_null(host);
	assert_false(e2e_contains(host, b1));
	/* Read-only, and nothing of it left in /dev. */
	char *w = sh_ok(id, "echo x > /proc/sys/kernel/random/boot_id 2>/dev/null && echo written; "
			    "ls -a /dev | grep -c boot_id || true");
	assert_string_equal(w, "0");
	free(w);
	free(e2e_sandlot_ok("pause", id, NULL));
	free(e2e_sandlot_ok("resume", id, NULL));
	char *b2 = sh_ok(id, "cat /proc/sys/kernel/random/boot_id");
	assert_string_equal(b1, b2);
	free(e2e_sandlot_ok("stop", id, NULL));
	free(e2e_sandlot_ok("start", id, NULL));
	char *b3 = sh_ok(id, "cat /proc/sys/kernel/random/boot_id");
	assert_int_equal(strlen(b3), 36);
	assert_string_not_equal(b1, b3);
	free(e2e_sandlot_ok("rm", id, NULL));
	free(host);
	free(b1);
	free(b2);
	free(b3);
	free(id);
}

static void test_after_reboot_sandbox_is_stopped_and_starts(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(id, "echo survived > /root/f"));
	/* Simulate a reboot: the init is gone and the record names another boot. */
	free(e2e_sandlot_ok("stop", id, NULL));
	char rec[512];
	snprintf(rec, sizeof(rec), "%s/sandboxes/%s/sandbox.json", getenv("SANDLOT_STATE_DIR"), id);
	char *json = e2e_read_file(rec);
	assert_non_null(json);
	char *st = strstr(json, "\"status\":\"stopped\"");
	assert_non_null(st);
	memcpy(st, "\"status\":\"running\"", strlen("\"status\":\"running\""));
	char *boot = strstr(json, "\"boot_id\":\"");
	assert_non_null(boot);
	boot[11] = boot[11] == '0' ? '1' : '0';
	FILE *f = fopen(rec, "w");
	fputs(json, f);
	fclose(f);
	free(json);
	char *in = e2e_sandlot_ok("inspect", id, NULL);
	assert_true(e2e_contains(in, "\"stopped\""));
	free(in);
	free(e2e_sandlot_ok("start", id, NULL));
	char *out = sh_ok(id, "cat /root/f");
	assert_string_equal(out, "survived");
	free(out);
	free(e2e_sandlot_ok("rm", id, NULL));
	free(id);
}

#define MANIFEST                                                                            \
	"cd /data && find . | sort | while read f; do "                                       \
	"if [ -L \"$f\" ]; then echo \"$f L $(readlink \"$f\") $(stat -c %u:%g \"$f\")\"; "    \
	"elif [ -f \"$f\" ]; then echo \"$f F $(stat -c %a:%u:%g \"$f\") $(sha256sum < \"$f\")\"; " \
	"else echo \"$f D $(stat -c %a:%u:%g \"$f\")\"; fi; done"

static void test_snapshot_and_create_from_it(void **state)
{
	char *a = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(a, "mkdir -p /data/sub && echo one > /data/a && dd if=/dev/urandom "
		      "of=/data/sub/rand bs=1k count=300 2>/dev/null && chmod 4750 /data/a && "
		      "chown 1000:100 /data/sub/rand && ln -s ../a /data/sub/link && "
		      "echo gone > /data/deleted && rm /data/deleted && rm /bin/vi"));
	/* A writer keeps going while the snapshot is taken. */
	/* (200 files rewritten in turn: the file count, and so the check, stays bounded.) */
	free(sh_ok(a, "(i=0; while :; do i=$((i+1)); echo $i > /tmp/w.$((i % 200)); done) "
		      ">/dev/null 2>&1 &"));
	usleep(200000);
	char *manifest_a = sh_ok(a, MANIFEST);
	char *snp = e2e_sandlot_ok("snapshot", "create", a, "--name", "mysnap", NULL);
	assert_true(strncmp(snp, "snp_", 4) == 0);
	char *b = e2e_sandlot_ok("create", "--snapshot", "mysnap", NULL);
	char *manifest_b = sh_ok(b, MANIFEST);
	assert_string_equal(manifest_a, manifest_b);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "exec", b, "--", "ls", "/data/deleted", NULL), 0);
	e2e_result_free(&r);
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "exec", b, "--", "ls", "/bin/vi", NULL), 0);
	e2e_result_free(&r);
	/* Every file the writer had finished holds its own number. */
	char *bad = sh_ok(b, "n=0; for f in /tmp/w.*; do n=$((n+1)); read v < $f; "
			     "[ -z \"$v\" ] || [ \"/tmp/w.$((v % 200))\" = \"$f\" ] || echo BAD $f; "
			     "done; echo n=$n");
	assert_false(e2e_contains(bad, "BAD"));
	free(bad);
	/* In use: cannot be deleted; names act as tags. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "snapshot", "rm", "mysnap", NULL), 125);
	assert_true(e2e_contains(r.err, "in use"));
	e2e_result_free(&r);
	free(e2e_sandlot_ok("rm", a, b, NULL));
	free(e2e_sandlot_ok("snapshot", "rm", "mysnap", NULL));
	char *ls = e2e_sandlot_ok("snapshot", "ls", NULL);
	assert_false(e2e_contains(ls, snp));
	free(ls);
	free(manifest_a);
	free(manifest_b);
	free(snp);
	free(a);
	free(b);
}

/* The st_dev of each ready-made clone of snapshot SNP in the store (each btrfs subvolume
 * has its own), up to MAX. */
static int clones_of(const char *snp, dev_t *out, int max)
{
	char *dir = e2e_printf("%s/store/sandboxes", getenv("SANDLOT_STATE_DIR"));
	char *prefix = e2e_printf(".clone-%s-", snp);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max)
		if (!strncmp(de->d_name, prefix, strlen(prefix))) {
			char *p = e2e_printf("%s/%s", dir, de->d_name);
			struct stat st;
			if (stat(p, &st) == 0)
				out[n++] = st.st_dev;
			free(p);
		}
	closedir(d);
	free(prefix);
	free(dir);
	return n;
}

/* The release of a sandbox made from a snapshot makes clones of it ahead (storage.c,
 * store_clone_spares_fill), so that the next create from it renames one instead of
 * waiting for a btrfs snapshot's commit: that create's layer is one of them, it holds
 * the snapshot's files with their owners shifted to its own range, and removing the
 * snapshot removes the clones. */
static void test_creates_from_a_snapshot_take_clones(void **state)
{
	char *a = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(a, "mkdir -p /data/sub && echo one > /data/a && chmod 4750 /data/a && "
		      "echo two > /data/sub/b && chown 1000:100 /data/sub/b"));
	char *manifest_a = sh_ok(a, MANIFEST);
	char *snp = e2e_sandlot_ok("snapshot", "create", a, NULL);
	char *b = e2e_sandlot_ok("create", "--snapshot", snp, NULL);
	free(e2e_sandlot_ok("rm", b, NULL));
	dev_t clones[4];
	int n = clones_of(snp, clones, 4);
	assert_true(n > 0);
	char *c = e2e_sandlot_ok("create", "--snapshot", snp, NULL);
	char *layer = e2e_printf("%s/store/sandboxes/%s", getenv("SANDLOT_STATE_DIR"), c);
	struct stat st;
	assert_int_equal(stat(layer, &st), 0);
	bool taken = false;
	for (int i = 0; i < n; i++)
		taken |= clones[i] == st.st_dev;
	assert_true(taken);
	char *manifest_c = sh_ok(c, MANIFEST);
	assert_string_equal(manifest_a, manifest_c);
	free(e2e_sandlot_ok("rm", a, c, NULL));
	assert_true(clones_of(snp, clones, 4) > 0); /* c's release made them again */
	free(e2e_sandlot_ok("snapshot", "rm", snp, NULL));
	assert_int_equal(clones_of(snp, clones, 4), 0);
	free(layer);
	free(manifest_a);
	free(manifest_c);
	free(snp);
	free(a);
	free(b);
	free(c);
}

static void test_snapshot_export_import_round_trip(void **state)
{
	char *a = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(a, "mkdir -p /data/sub && echo one > /data/a && chmod 640 /data/a && "
		      "dd if=/dev/urandom of=/data/sub/r bs=1k count=64 2>/dev/null && "
		      "chown 1000:1000 /data/sub/r && ln -s ../a /data/sub/l && rm /bin/vi"));
	char *manifest_a = sh_ok(a, MANIFEST);
	free(e2e_sandlot_ok("snapshot", "create", a, "--name", "trip", NULL));
	char tar[512], cmd[1024];
	snprintf(tar, sizeof(tar), "%s/trip.tar.zst", e2e_root());
	char *build = e2e_build_path("sandlot");
	snprintf(cmd, sizeof(cmd), "%s snapshot export trip > %s", build, tar);
	assert_int_equal(system(cmd), 0);
	free(e2e_sandlot_ok("rm", a, NULL));
	free(e2e_sandlot_ok("snapshot", "rm", "trip", NULL));
	/* Another host: a fresh state dir. */
	char *saved = strdup(getenv("SANDLOT_STATE_DIR"));
	char other[512];
	snprintf(other, sizeof(other), "%s/other-state", e2e_root());
	setenv("SANDLOT_STATE_DIR", other, 1);
	free(e2e_sandlot_ok("snapshot", "import", "trip", tar, NULL));
	char *b = e2e_sandlot_ok("create", "--snapshot", "trip", NULL);
	char *manifest_b = sh_ok(b, MANIFEST);
	assert_string_equal(manifest_a, manifest_b);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "exec", b, "--", "ls", "/bin/vi", NULL), 0);
	e2e_result_free(&r);
	free(e2e_sandlot_ok("rm", b, NULL));
	free(e2e_sandlot_ok("snapshot", "rm", "trip", NULL));
	/* That host's mounts: its store, and its image store's nosuid,nodev bind. */
	snprintf(cmd, sizeof(cmd), "umount %s/store && umount %s/images", other, other);
	assert_int_equal(system(cmd), 0);
	setenv("SANDLOT_STATE_DIR", saved, 1);
	unlink(tar);
	free(saved);
	free(build);
	free(manifest_a);
	free(manifest_b);
	free(a);
	free(b);
}

static void test_volumes_outlive_sandboxes(void **state)
{
	char *a = e2e_sandlot_ok("create", "--image", "busybox", "-v", "shared:/data", NULL);
	char *b = e2e_sandlot_ok("create", "--image", "busybox", "-v", "shared:/mnt/in:ro", NULL);
	free(sh_ok(a, "echo from-a > /data/f && mkdir /data/d && chown 1000:1000 /data/d"));
	char *out = sh_ok(b, "cat /mnt/in/f; stat -c %u:%g /mnt/in/d");
	assert_string_equal(out, "from-a\n1000:1000");
	free(out);
	e2e_result r;
	assert_int_not_equal(e2e_sandlot(&r, NULL, 0, "exec", b, "--", "touch", "/mnt/in/x", NULL), 0);
	assert_true(e2e_contains(r.err, "Read-only"));
	e2e_result_free(&r);
	/* In use: refused. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "volume", "rm", "shared", NULL), 125);
	e2e_result_free(&r);
	free(e2e_sandlot_ok("rm", a, b, NULL));
	/* The data outlives both sandboxes. */
	char *c = e2e_sandlot_ok("create", "--image", "busybox", "-v", "shared:/v", NULL);
	out = sh_ok(c, "cat /v/f");
	assert_string_equal(out, "from-a");
	free(out);
	free(e2e_sandlot_ok("rm", c, NULL));
	free(e2e_sandlot_ok("volume", "rm", "shared", NULL));
	/* A host directory outside the allow-list is refused. */
	assert_int_equal(e2e_sandlot(&r, NULL, 0, "create", "--image", "busybox", "-v", "/etc:/h",
				     NULL),
			 125);
	assert_true(e2e_contains(r.err, "allow-list"));
	e2e_result_free(&r);
	free(a);
	free(b);
	free(c);
}

/* The freezer state of sandbox ID's cgroup ("FROZEN", "THAWED", ...), caller frees. */
static char *freezer_state(const char *id)
{
	char p[256];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/freezer/sandlot/%s/freezer.state", id);
	if (access(p, F_OK) != 0)
		snprintf(p, sizeof(p), "/sys/fs/cgroup/sandlot/%s/cgroup.freeze", id);
	char *s = e2e_read_file(p);
	assert_non_null(s);
	s[strcspn(s, "\n")] = '\0';
	if (!strcmp(s, "1") || !strcmp(s, "0")) { /* v2's cgroup.freeze */
		char *t = strdup(s[0] == '1' ? "FROZEN" : "THAWED");
		free(s);
		return t;
	}
	return s;
}

/* The snapshot subvolumes in the store, as one string of names. */
static char *store_snapshots(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/store/snapshots", getenv("SANDLOT_STATE_DIR"));
	DIR *d = opendir(p);
	assert_non_null(d);
	char *out = strdup("");
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "snp_", 4))
			continue;
		char *n = e2e_printf("%s%s ", out, de->d_name);
		free(out);
		out = n;
	}
	closedir(d);
	return out;
}

/* A snapshot maker killed between its freeze and its thaw (crash point snapshot-frozen)
 * left the sandbox frozen while its record said running, and a subvolume no record named.
 * The next snapshot, and a daemon's start, clean that up. */
static void test_snapshot_killed_midway_is_cleaned_up(void **state)
{
	char *id = e2e_sandlot_ok("create", "--image", "busybox", NULL);
	free(sh_ok(id, "(while :; do echo x >> /tmp/c; usleep 20000; done) >/dev/null 2>&1 &"));
	char *none = store_snapshots();
	e2e_result r;
	for (int round = 0; round < 2; round++) {
		setenv("SANDLOT_CRASH_POINT", "snapshot-frozen", 1);
		e2e_sandlot(&r, NULL, 0, "snapshot", "create", id, NULL);
		unsetenv("SANDLOT_CRASH_POINT");
		assert_int_equal(r.status, 128 + SIGKILL);
		e2e_result_free(&r);
		char *fs = freezer_state(id);
		assert_string_equal(fs, "FROZEN"); /* what the crash left */
		free(fs);
		char *left = store_snapshots();
		assert_string_not_equal(left, none);
		free(left);
		if (round == 0) {
			/* The next snapshot collects it. */
			char *snp = e2e_sandlot_ok("snapshot", "create", id, NULL);
			snp[strcspn(snp, "\n")] = '\0';
			char *want = e2e_printf("%s%s ", none, snp);
			char *now = store_snapshots();
			assert_string_equal(now, want);
			free(now);
			free(want);
			free(e2e_sandlot_ok("snapshot", "rm", snp, NULL));
			free(snp);
		} else {
			/* A daemon's start collects it. */
			e2e_daemon d;
			char *sock = e2e_printf("%s/snapcrash.sock", e2e_root());
			e2e_daemon_start(&d, sock, false, NULL);
			e2e_daemon_stop(&d);
			free(sock);
			char *now = store_snapshots();
			assert_string_equal(now, none);
			free(now);
		}
		fs = freezer_state(id);
		assert_string_equal(fs, "THAWED");
		free(fs);
		long before = counter(id);
		usleep(300000);
		assert_true(counter(id) > before); /* it runs again */
	}
	free(e2e_sandlot_ok("rm", id, NULL));
	free(none);
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		E2E_TEST(test_pause_stops_the_clock_and_resume_continues),
		E2E_TEST(test_stop_start_keeps_files_and_env),
		E2E_TEST(test_boot_id_is_new_at_each_start),
		E2E_TEST(test_after_reboot_sandbox_is_stopped_and_starts),
		E2E_TEST(test_snapshot_and_create_from_it),
		E2E_TEST(test_snapshot_killed_midway_is_cleaned_up),
		E2E_TEST(test_creates_from_a_snapshot_take_clones),
		E2E_TEST(test_snapshot_export_import_round_trip),
		E2E_TEST(test_volumes_outlive_sandboxes),
	};
	return e2e_run_tests(tests);
}

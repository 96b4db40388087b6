/* doctor.c — `sandlot doctor` (doctor.h): every record read, then everything named for a
 * sandbox or a snapshot (layers, cgroups, run dirs, mounts, subvolumes) checked against
 * the record that should own it, and with --repair what is broken or orphaned removed.
 *
 * Beside a live daemon it never takes what a create, snapshot or import still makes:
 * each of those writes its record (or flocks its marker) before it makes anything the
 * record owns, so a thing without a record was left by a process that died. */
#include "doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "cleanup.h"
#include "execlogs.h"
#include "fsutil.h"
#include "image.h"
#include "record.h"
#include "sandbox.h"
#include "sandbox_internal.h"
#include "snapshot.h"
#include "state.h"
#include "storage.h"

#define BTRFS_MAGIC 0x9123683e
/* An empty record older than this is a crash's, not a create's first write. */
#define EMPTY_RECORD_S 60

typedef struct doctor {
	sl_ctx *ctx;
	bool repair, store;
	sl_doctor_report report;
	void *arg;
	int found, left;
} doctor;

/* Report one finding; REPAIR (when repairing) removes it: 0, or -1 with E. */
static void finding(doctor *d, const char *kind, const char *what, const char *problem,
		    int (*repair)(doctor *d, const char *what, sl_err *e))
{
	sl_finding f = { .kind = kind };
	snprintf(f.what, sizeof(f.what), "%s", what);
	snprintf(f.problem, sizeof(f.problem), "%s", problem);
	d->found++;
	if (d->repair && repair) {
		sl_err e = { 0 };
		f.repaired = repair(d, what, &e) == 0;
		if (!f.repaired)
			snprintf(f.repair_error, sizeof(f.repair_error), "%s",
				 e.msg[0] ? e.msg : "failed");
	}
	if (!f.repaired)
		d->left++;
	d->report(d->arg, &f);
}

/* Nothing owns what is named for ID any more: no record, or a tombstone whose release
 * is over. A record that cannot be read still owns it (its delete frees it); a release
 * whose releaser died is a finding of its own (check_record). */
static bool owner_gone(doctor *d, const char *id)
{
	sl_sandbox sb;
	sl_err e = { 0 };
	if (record_load(d->ctx, id, &sb, &e) < 0)
		return e.kind == SL_NOTFOUND;
	bool gone = sb.status == SL_ST_TERMINATED && !sb.releaser_pid;
	sandbox_free(&sb);
	return gone;
}

/* ---- records ---- */

static int repair_purge(doctor *d, const char *id, sl_err *e)
{
	return sandbox_purge(d->ctx, id, e);
}

static int repair_create(doctor *d, const char *id, sl_err *e)
{
	if (sandbox_destroy_id(d->ctx, id, "create interrupted", true, 0, e) < 0)
		return -1;
	record_remove_dir(d->ctx, id); /* never created: nothing to keep a tombstone of */
	return 0;
}

static int repair_release(doctor *d, const char *id, sl_err *e)
{
	return sandbox_destroy_id(d->ctx, id, NULL, true, 0, e);
}

static int repair_layerless(doctor *d, const char *id, sl_err *e)
{
	return sandbox_destroy_id(d->ctx, id, "its writable layer was gone", false, 0, e);
}

static bool record_empty_and_old(doctor *d, const char *id)
{
	char p[PATH_MAX];
	record_path(d->ctx, id, p);
	struct stat st;
	if (stat(p, &st) < 0) {
		state_sandbox_dir(&d->ctx->cfg, id, p, sizeof(p));
		if (stat(p, &st) < 0)
			return false;
	}
	return time(NULL) - st.st_mtime > EMPTY_RECORD_S;
}

static void check_record(doctor *d, const char *id)
{
	sl_sandbox sb;
	sl_err e = { 0 };
	char msg[384];
	if (record_load_or_broken(d->ctx, id, &sb, &e) < 0) {
		if (record_empty_and_old(d, id))
			finding(d, "record", id, "an empty record a crash left (no create finished it)",
				repair_purge);
		return;
	}
	bool creator = record_pid_alive(sb.creator_pid, sb.creator_start);
	char layer[PATH_MAX];
	store_layer_path(&d->ctx->cfg, id, layer, sizeof(layer));
	switch (sb.status) {
	case SL_ST_BROKEN:
		finding(d, "record", id, sb.reason, repair_purge);
		break;
	case SL_ST_CREATING:
		if (!creator)
			finding(d, "record", id, "a create that did not finish (its process died)",
				repair_create);
		break;
	case SL_ST_POOLED:
		if (!creator)
			finding(d, "record", id, "a pooled sandbox of a daemon that is gone",
				repair_create);
		break;
	case SL_ST_TERMINATED:
		if (sb.releaser_pid && !record_pid_alive(sb.releaser_pid, sb.releaser_start))
			finding(d, "record", id, "a delete whose release did not finish",
				repair_release);
		break;
	case SL_ST_RUNNING:
	case SL_ST_PAUSED:
	case SL_ST_STOPPED:
		if (d->store && access(layer, F_OK) < 0 && errno == ENOENT) {
			snprintf(msg, sizeof(msg), "%s, but its writable layer %s is gone",
				 sandbox_status_name(sb.status), layer);
			finding(d, "record", id, msg, repair_layerless);
		}
		break;
	default:
		break;
	}
	sandbox_free(&sb);
}

static int check_records(doctor *d, sl_err *err)
{
	char **ids;
	size_t n;
	if (record_list_ids(d->ctx, &ids, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		check_record(d, ids[i]);
	state_free_names(ids, n);
	return 0;
}

/* ---- what a sandbox's id names: mounts, cgroups, run dirs, layers ---- */

/* The sandbox id PATH is under, when it is under PREFIX/sbx_...: 0, else -1. */
static int id_under(const char *path, const char *prefix, char id[32])
{
	size_t l = strlen(prefix);
	if (strncmp(path, prefix, l) || strncmp(path + l, "/sbx_", 5))
		return -1;
	const char *s = path + l + 1, *end = strchr(s, '/');
	size_t n = end ? (size_t)(end - s) : strlen(s);
	if (n >= 32)
		return -1;
	snprintf(id, 32, "%.*s", (int)n, s);
	return 0;
}

static int repair_mount(doctor *d, const char *path, sl_err *e)
{
	if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return sl_sysfail(e, "unmount %s", path);
	return 0;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* MP is a mount point now. */
static bool still_mounted(const char *mp)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], p[PATH_MAX];
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", p) != 1)
			continue;
		unescape(p);
		if (!strcmp(p, mp))
			return true;
	}
	return false;
}

static void check_mounts(doctor *d)
{
	char runs[PATH_MAX], states[PATH_MAX];
	snprintf(runs, sizeof(runs), "%s/sandboxes", d->ctx->cfg.run_dir);
	snprintf(states, sizeof(states), "%s/sandboxes", d->ctx->cfg.state_dir);
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[PATH_MAX], id[32], msg[128];
	/* Deepest last in mountinfo: unmounted from the end, children go first. */
	struct found {
		char mp[PATH_MAX], id[32];
	} *found = NULL;
	size_t n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		unescape(mp);
		if ((id_under(mp, runs, id) < 0 && id_under(mp, states, id) < 0) ||
		    !owner_gone(d, id))
			continue;
		void *more = realloc(found, (n + 1) * sizeof(*found));
		if (!more)
			break;
		found = more;
		snprintf(found[n].mp, sizeof(found[n].mp), "%s", mp);
		snprintf(found[n++].id, sizeof(found[n].id), "%s", id);
	}
	for (size_t i = n; i-- > 0;) {
		if (!still_mounted(found[i].mp))
			continue; /* a release's, finished while we read (check_dir_of_ids) */
		snprintf(msg, sizeof(msg), "a mount of %s, which has no record", found[i].id);
		finding(d, "mount", found[i].mp, msg, repair_mount);
	}
	free(found);
}

static int repair_cgroup(doctor *d, const char *id, sl_err *e)
{
	char name[64];
	snprintf(name, sizeof(name), "sandlot/%s", id);
	return cgroup_destroy(d->ctx->cg, name, e);
}

static int repair_rundir(doctor *d, const char *id, sl_err *e)
{
	char run[PATH_MAX];
	state_run_dir(&d->ctx->cfg, id, run, sizeof(run));
	execlogs_unmount(d->ctx, id);
	return fs_remove_tree(run, e);
}

static int repair_layer(doctor *d, const char *id, sl_err *e)
{
	return store_layer_destroy(&d->ctx->cfg, id, e);
}

/* Every sbx_ entry of DIR whose owner is gone: a finding of KIND. */
static void check_dir_of_ids(doctor *d, const char *dir, const char *kind, const char *what,
			     int (*repair)(doctor *d, const char *id, sl_err *e))
{
	_cleanup_closedir_ DIR *dd = opendir(dir);
	struct dirent *de;
	char msg[256];
	while (dd && (de = readdir(dd))) {
		/* Still there once its owner is known gone: a release removes the thing,
		 * then marks the record, so one seen before its record was read may be a
		 * release's that finished in between (the load suite caught that). */
		if (strncmp(de->d_name, "sbx_", 4) || strlen(de->d_name) >= 32 ||
		    !owner_gone(d, de->d_name) ||
		    faccessat(dirfd(dd), de->d_name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(msg, sizeof(msg), "%s %s/%s, which has no record (or a finished delete)",
			 what, dir, de->d_name);
		finding(d, kind, de->d_name, msg, repair);
	}
}

/* A ready-made layer half built more than a minute ago (storage.c, store_layers_collect). */
static void check_building(doctor *d, const char *dir)
{
	_cleanup_closedir_ DIR *dd = opendir(dir);
	struct dirent *de;
	struct stat st;
	char msg[256];
	while (dd && (de = readdir(dd))) {
		if (strncmp(de->d_name, ".building-", 10) ||
		    fstatat(dirfd(dd), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    time(NULL) - st.st_mtime <= 60)
			continue;
		snprintf(msg, sizeof(msg), "a ready-made layer %s/%s half built by a process that died",
			 dir, de->d_name);
		finding(d, "layer", de->d_name, msg, repair_layer);
	}
}

static void check_sandbox_things(doctor *d)
{
	char p[PATH_MAX];
	check_mounts(d);
	if (cgroup_path(d->ctx->cg, NULL, "sandlot", p, sizeof(p)) == 0)
		check_dir_of_ids(d, p, "cgroup", "cgroup", repair_cgroup);
	snprintf(p, sizeof(p), "%s/sandboxes", d->ctx->cfg.run_dir);
	check_dir_of_ids(d, p, "rundir", "run dir", repair_rundir);
	if (!d->store)
		return;
	snprintf(p, sizeof(p), "%s/store/sandboxes", d->ctx->cfg.state_dir);
	check_dir_of_ids(d, p, "layer", "writable layer", repair_layer);
	check_building(d, p);
}

/* ---- snapshots and imports ---- */

static int repair_snapshot_record(doctor *d, const char *id, sl_err *e)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/snapshots/%s.json", d->ctx->cfg.state_dir, id);
	if (d->store && store_snapshot_destroy(&d->ctx->cfg, id, e) < 0)
		return -1;
	if (unlink(p) < 0 && errno != ENOENT)
		return sl_sysfail(e, "remove %s", p);
	return 0;
}

static int repair_snapshot_subvol(doctor *d, const char *id, sl_err *e)
{
	return store_snapshot_destroy(&d->ctx->cfg, id, e);
}

static int repair_making(doctor *d, const char *what, sl_err *e)
{
	snapshot_collect_unfinished(d->ctx);
	return 0;
}

static int repair_imports(doctor *d, const char *what, sl_err *e)
{
	image_scratch_collect(d->ctx->cfg.state_dir, true);
	int left = image_scratch_collect(d->ctx->cfg.state_dir, false);
	return left ? sl_fail(e, SL_INTERNAL, 0, "%d left (sandlot.log says why)", left) : 0;
}

/* Is snapshot marker NAME (.making-<id>) free: its maker died? */
static bool making_dead(const char *dir, const char *name)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	_cleanup_close_ int fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
}

static void check_snapshot_records(doctor *d, const char *dir)
{
	_cleanup_closedir_ DIR *dd = opendir(dir);
	struct dirent *de;
	char msg[384], id[64];
	while (dd && (de = readdir(dd))) {
		size_t l = strlen(de->d_name);
		if (!strncmp(de->d_name, ".making-", 8) && making_dead(dir, de->d_name)) {
			snprintf(msg, sizeof(msg), "a snapshot whose maker died midway (%s/%s)", dir,
				 de->d_name);
			finding(d, "snapshot", de->d_name + 8, msg, repair_making);
			continue;
		}
		if (strncmp(de->d_name, "snp_", 4) || l < 6 || l - 5 >= sizeof(id) ||
		    strcmp(de->d_name + l - 5, ".json"))
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(l - 5), de->d_name);
		sl_snapshot s;
		sl_err e = { 0 };
		if (snapshot_get(d->ctx, id, &s, &e) == 0 || e.kind == SL_NOTFOUND)
			continue;
		snprintf(msg, sizeof(msg), "record unreadable: %s", e.msg);
		finding(d, "snapshot", id, msg, repair_snapshot_record);
	}
}

/* A snapshot subvolume with neither a record nor a live maker's marker: the marker is
 * made before the subvolume and goes after the record, so it is looked at first. */
static void check_snapshot_subvols(doctor *d, const char *dir)
{
	char store[PATH_MAX], p[PATH_MAX], msg[384];
	snprintf(store, sizeof(store), "%s/store/snapshots", d->ctx->cfg.state_dir);
	_cleanup_closedir_ DIR *dd = opendir(store);
	struct dirent *de;
	while (dd && (de = readdir(dd))) {
		if (strncmp(de->d_name, "snp_", 4))
			continue;
		snprintf(p, sizeof(p), "%s/.making-%s", dir, de->d_name);
		if (access(p, F_OK) == 0)
			continue; /* its maker's, or a dead maker's: check_snapshot_records */
		snprintf(p, sizeof(p), "%s/%s.json", dir, de->d_name);
		if (access(p, F_OK) == 0 || errno != ENOENT)
			continue;
		snprintf(msg, sizeof(msg), "a snapshot subvolume %s/%s with no record", store,
			 de->d_name);
		finding(d, "snapshot", de->d_name, msg, repair_snapshot_subvol);
	}
}

/* An image tree a sandbox (pooled ones too) or snapshot still runs on is no orphan. */
static bool image_held_by_sandbox(void *arg, const char *digest)
{
	bool used = true; /* when it cannot be told: kept */
	sl_err e = { 0 };
	sandbox_image_in_use(arg, digest, &used, &e);
	return used;
}

static int repair_image_orphan(doctor *d, const char *path, sl_err *e)
{
	return image_orphan_remove(d->ctx->cfg.state_dir, path, image_held_by_sandbox, d->ctx, e);
}

static void image_orphan_found(void *arg, const char *path, const char *what)
{
	doctor *d = arg;
	char msg[128];
	snprintf(msg, sizeof(msg), "%s (an import that died before naming it)", what);
	finding(d, "image", path, msg, repair_image_orphan);
}

static int repair_builds(doctor *d, const char *what, sl_err *e)
{
	build_collect_unfinished(d->ctx, true);
	int left = build_collect_unfinished(d->ctx, false);
	return left ? sl_fail(e, SL_INTERNAL, 0, "%d left (sandlot.log says why)", left) : 0;
}

static void check_snapshots_and_imports(doctor *d)
{
	char dir[PATH_MAX], msg[128];
	snprintf(dir, sizeof(dir), "%s/snapshots", d->ctx->cfg.state_dir);
	check_snapshot_records(d, dir);
	if (d->store)
		check_snapshot_subvols(d, dir);
	int n = image_scratch_collect(d->ctx->cfg.state_dir, false);
	if (n > 0) {
		snprintf(msg, sizeof(msg), "%d tree(s) an import or image removal left midway", n);
		snprintf(dir, sizeof(dir), "%s/images/tmp", d->ctx->cfg.state_dir);
		finding(d, "import", dir, msg, repair_imports);
	}
	n = build_collect_unfinished(d->ctx, false);
	if (n > 0) {
		snprintf(msg, sizeof(msg),
			 "%d build sandbox(es), build-tmp-* image(s) or file(s) a killed image "
			 "build left",
			 n);
		snprintf(dir, sizeof(dir), "%s/images/build", d->ctx->cfg.state_dir);
		finding(d, "build", dir, msg, repair_builds);
	}
	sl_err e = { 0 };
	if (image_orphans(d->ctx->cfg.state_dir, image_held_by_sandbox, d->ctx, image_orphan_found,
			  d, &e) < 0)
		finding(d, "image", "images", e.msg, NULL); /* not checked: said, not repaired */
}

/* ---- the whole ---- */

int doctor_lock(const sl_ctx *ctx, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/doctor.lock", ctx->cfg.state_dir);
	return state_lock(p, err);
}

/* The store is looked at when it exists; mounted first if it is not (after a reboot). */
static int open_store(doctor *d, sl_err *err)
{
	char p[PATH_MAX];
	struct statfs sf;
	snprintf(p, sizeof(p), "%s/store.img", d->ctx->cfg.state_dir);
	if (access(p, F_OK) < 0)
		return 0;
	if (store_ensure(&d->ctx->cfg, err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/store", d->ctx->cfg.state_dir);
	d->store = statfs(p, &sf) == 0 && (unsigned long)sf.f_type == BTRFS_MAGIC;
	return 0;
}

int doctor_run(sl_ctx *ctx, bool repair, sl_doctor_report report, void *arg, int *found,
	       int *left, sl_err *err)
{
	doctor d = { .ctx = ctx, .repair = repair, .report = report, .arg = arg };
	_cleanup_close_ int lk = doctor_lock(ctx, err);
	if (lk < 0 || open_store(&d, err) < 0 || check_records(&d, err) < 0)
		return -1;
	/* After the records: a repaired record has freed what it held by now. */
	check_sandbox_things(&d);
	check_snapshots_and_imports(&d);
	*found = d.found;
	*left = d.left;
	return 0;
}

/* snapshot.c — snapshot records (<state>/snapshots/<id>.json, names as tag files in
 * <state>/snapshots/names/) over btrfs snapshots of writable layers. Measured choice:
 * layered on the image rather than flattened — a btrfs snapshot costs the same for
 * 1 KB or 1 GB of new files and shares every extent, while flattening copies the
 * whole tree (see docs/snapshots.md). */
#define _XOPEN_SOURCE 700
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "archive_write.h"
#include "cleanup.h"
#include "lookup.h"
#include "clock.h"
#include "crash.h"
#include "hibernate.h"
#include "id.h"
#include "image.h"
#include "log.h"
#include "owner.h"
#include "state.h"
#include "storage.h"


static void snap_dir(const sl_ctx *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snapshots", ctx->cfg.state_dir);
}

static int snap_save(const sl_ctx *ctx, const sl_snapshot *s, sl_err *err)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s.json", s->id);
	/* The runtime's own schema (version 2): the struct's members by name. Version 1 was
	 * the API's shape plus uidBase and createdMs; snap_load reads both. */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "schema", 2);
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "sandbox_id", s->sandbox_id);
	cJSON_AddStringToObject(o, "image", s->image);
	cJSON_AddStringToObject(o, "image_digest", s->digest);
	cJSON_AddNumberToObject(o, "uid_base", s->uid_base);
	cJSON_AddNumberToObject(o, "created_ms", (double)s->created_ms);
	cJSON_AddStringToObject(o, "owner", s->owner);
	if (s->checkpoint_of[0])
		cJSON_AddStringToObject(o, "checkpoint_of", s->checkpoint_of);
	if (s->fork_base)
		cJSON_AddBoolToObject(o, "fork_base", true);
	if (s->memory)
		cJSON_AddBoolToObject(o, "memory", true);
	_cleanup_free_ char *txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return txt ? state_write_atomic(p, txt, strlen(txt), err)
		   : sl_fail(err, SL_INTERNAL, ENOMEM, "serialise snapshot");
}

static int snap_load(const sl_ctx *ctx, const char *id, sl_snapshot *s, sl_err *err)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s.json", id);
	_cleanup_free_ char *data = NULL;
	if (state_read_file(p, 1 << 20, &data, NULL, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			sl_fail(err, SL_NOTFOUND, 0, "snapshot %s not found", id);
		return -1;
	}
	cJSON *o = cJSON_Parse(data);
	if (!o)
		return sl_fail(err, SL_INTERNAL, 0, "snapshot record %s is not JSON", p);
	memset(s, 0, sizeof(*s));
	bool v1 = !cJSON_GetObjectItemCaseSensitive(o, "schema");
	const struct {
		const char *v2, *v1;
		char *dst;
		size_t len;
	} f[] = { { "id", "id", s->id, sizeof(s->id) },
		  { "name", "name", s->name, sizeof(s->name) },
		  { "sandbox_id", "sandboxId", s->sandbox_id, sizeof(s->sandbox_id) },
		  { "image", "image", s->image, sizeof(s->image) },
		  { "image_digest", "imageDigest", s->digest, sizeof(s->digest) },
		  { "owner", "owner", s->owner, sizeof(s->owner) } }; /* absent: the admin's */
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, v1 ? f[i].v1 : f[i].v2);
		snprintf(f[i].dst, f[i].len, "%s", cJSON_IsString(v) ? v->valuestring : "");
	}
	const cJSON *ub = cJSON_GetObjectItemCaseSensitive(o, v1 ? "uidBase" : "uid_base");
	const cJSON *cm = cJSON_GetObjectItemCaseSensitive(o, v1 ? "createdMs" : "created_ms");
	s->uid_base = cJSON_IsNumber(ub) ? (uint32_t)ub->valuedouble : 0;
	s->created_ms = cJSON_IsNumber(cm) ? (int64_t)cm->valuedouble : 0;
	const cJSON *ck = cJSON_GetObjectItemCaseSensitive(o, "checkpoint_of");
	snprintf(s->checkpoint_of, sizeof(s->checkpoint_of), "%s",
		 cJSON_IsString(ck) ? ck->valuestring : "");
	s->fork_base = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "fork_base"));
	s->memory = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "memory"));
	cJSON_Delete(o);
	return 0;
}

/* ---- a snapshot being made ----
 * <state>/snapshots/.making-<snp_id>, flocked by its maker from before the subvolume is
 * made until the record is saved, holding the id of the sandbox it froze ("" when none).
 * A marker nobody holds is what a maker killed midway left: its subvolume is destroyed
 * unless a record names it, and the sandbox it froze is thawed if its record still says
 * running (snapshot_collect_unfinished, at each snapshot and at the daemon's start). */

static void making_path(const sl_ctx *ctx, const char *snp_id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snapshots/.making-%s", ctx->cfg.state_dir, snp_id);
}

static int making_begin(const sl_ctx *ctx, const char *snp_id, const char *froze, sl_err *err)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	making_path(ctx, snp_id, p, sizeof(p));
	int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return sl_sysfail(err, "snapshot %s: create %s", snp_id, p);
	size_t n = strlen(froze);
	if (flock(fd, LOCK_EX) < 0 || write(fd, froze, n) != (ssize_t)n || fsync(fd) < 0) {
		int e = errno;
		unlink(p);
		close(fd);
		return sl_fail(err, SL_INTERNAL, e, "snapshot %s: write %s", snp_id, p);
	}
	return fd;
}

static void making_end(const sl_ctx *ctx, const char *snp_id, int fd)
{
	char p[PATH_MAX];
	making_path(ctx, snp_id, p, sizeof(p));
	unlink(p);
	close(fd);
}

static bool snap_has_record(const sl_ctx *ctx, const char *snp_id)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s.json", snp_id);
	return access(p, F_OK) == 0;
}

/* Thaw sandbox ID's cgroup if its record says running (what a maker that froze it and
 * died left); a sandbox that is gone is no failure. */
static int thaw_if_running(sl_ctx *ctx, const char *id, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (sandbox_get_locked(ctx, id, &sb, &lk, err) < 0)
		return err->kind == SL_NOTFOUND ? 0 : -1;
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	int r = sb.status == SL_ST_RUNNING ? cgroup_freeze(ctx->cg, cg, false, err) : 0;
	sandbox_free(&sb);
	return r;
}

static void snap_unlink_record(const sl_ctx *ctx, const char *snp_id)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s.json", snp_id);
	unlink(p);
}

/* What the maker of SNP_ID (dead: its marker MFD is ours now) left behind. A fork base
 * with its record goes too: it was never meant to outlive its maker. */
static void making_undo(sl_ctx *ctx, const char *snp_id, int mfd)
{
	char froze[40] = "";
	ssize_t n = pread(mfd, froze, sizeof(froze) - 1, 0);
	froze[n > 0 ? n : 0] = '\0';
	sl_err e = {0};
	sl_snapshot rec;
	bool base = snap_load(ctx, snp_id, &rec, &e) == 0 && rec.fork_base;
	sl_err_clear(&e);
	if (base)
		snap_unlink_record(ctx, snp_id);
	bool gone = base || !snap_has_record(ctx, snp_id);
	if (gone) /* its processes' dump, if it was made with memory */
		hibernate_dump_delete(ctx, snp_id);
	if (gone && store_snapshot_destroy(&ctx->cfg, snp_id, &e) < 0 && e.errnum != ENOENT)
		sl_log(SL_LOG_WARN, "snapshot %s: remove the half-made subvolume: %s", snp_id,
		       e.msg);
	if (froze[0] && thaw_if_running(ctx, froze, &e) < 0)
		sl_log(SL_LOG_WARN, "snapshot %s: thaw %s: %s", snp_id, froze, e.msg);
	sl_log(SL_LOG_INFO, "snapshot %s: cleaned up after a maker that died%s%s", snp_id,
	       froze[0] ? "; thawed " : "", froze);
}

int snapshot_collect_unfinished(sl_ctx *ctx)
{
	char dir[PATH_MAX];
	snap_dir(ctx, dir, sizeof(dir));
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int done = 0;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, ".making-", 8))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		_cleanup_close_ int fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* gone, or its maker is at work */
		making_undo(ctx, de->d_name + 8, fd);
		unlink(p);
		done++;
	}
	return done;
}

static int valid_name(const char *n)
{
	size_t len = strlen(n);
	if (!len || len > 63 || !strncmp(n, "snp_", 4))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '-' ||
		      (i && (n[i] == '.' || n[i] == '_'))))
			return 0;
	return 1;
}

/* By id or name, whoever's it is. */
static int snap_find(sl_ctx *ctx, const char *ref, sl_snapshot *out, sl_err *err)
{
	if (!ref || !*ref || strchr(ref, '/') || ref[0] == '.')
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a snapshot id or name",
			       ref ? ref : "");
	if (!strncmp(ref, "snp_", 4))
		return snap_load(ctx, ref, out, err);
	char p[PATH_MAX], id[40] = "";
	snap_dir(ctx, p, sizeof(p));
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/names/%s", ref);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, id, sizeof(id) - 1) : -1;
	if (n <= 0)
		return sl_fail(err, SL_NOTFOUND, 0, "snapshot %s not found", ref);
	id[n] = '\0';
	return snap_load(ctx, id, out, err);
}

static bool snap_hidden(const sl_snapshot *s)
{
	return s->checkpoint_of[0] || s->fork_base;
}

int snapshot_get(sl_ctx *ctx, const char *ref, sl_snapshot *out, sl_err *err)
{
	if (snap_find(ctx, ref, out, err) < 0)
		return -1;
	/* Another key's, a checkpoint or a fork base: as if there were none. */
	if (!owner_sees(out->owner) || snap_hidden(out))
		return sl_fail(err, SL_NOTFOUND, 0, "snapshot %s not found", ref);
	return 0;
}

/* A name is a tag within one key's snapshots: another key's tag is not taken over. */
static int name_free_for(sl_ctx *ctx, const char *name, const char *owner, sl_err *err)
{
	sl_snapshot cur;
	sl_err e = {0};
	if (snap_find(ctx, name, &cur, &e) < 0 || !strcmp(cur.owner, owner))
		return 0;
	return sl_fail(err, SL_CONFLICT, 0, "snapshot name %s is taken by another API key", name);
}

/* What a capture checks under the sandbox's lock, before anything is made. */
typedef snapshot_hook capture_check;

/* The sandbox's files now, as S (name and kind filled by the caller; the rest here), a
 * running sandbox frozen for the instant, and S's record saved. With KEEP_MFD, the
 * making marker stays held and is handed back (a fork base). */
static int capture(sl_ctx *ctx, const char *sandbox_ref, capture_check check,
		   snapshot_hook at_freeze, sl_snapshot *s, int *keep_mfd, sl_err *err)
{
	snapshot_collect_unfinished(ctx);
	/* Under the sandbox's lock: no pause, resume or stop comes between the freeze and
	 * the thaw. */
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (sandbox_get_locked(ctx, sandbox_ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status == SL_ST_TERMINATED || sb.status == SL_ST_CREATING) {
		int r = sl_fail(err, sb.status == SL_ST_TERMINATED ? SL_NOTFOUND : SL_CONFLICT, 0,
				"sandbox %s is %s; nothing to snapshot", sb.id,
				sandbox_status_name(sb.status));
		sandbox_free(&sb);
		return r;
	}
	if (check && check(ctx, &sb, s, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	sl_new_id("snp_", s->id, sizeof(s->id));
	snprintf(s->sandbox_id, sizeof(s->sandbox_id), "%s", sb.id);
	snprintf(s->image, sizeof(s->image), "%s", sb.image);
	snprintf(s->digest, sizeof(s->digest), "%s", sb.digest);
	s->uid_base = sb.uid_base;
	s->created_ms = sl_now_ms();
	snprintf(s->owner, sizeof(s->owner), "%s", owner_acting());
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	bool running = sb.status == SL_ST_RUNNING;
	int mfd = making_begin(ctx, s->id, running ? sb.id : "", err);
	if (mfd < 0) {
		sandbox_free(&sb);
		return -1;
	}
	/* Freeze a running sandbox so no write is half done at the instant of capture. */
	bool froze = running && cgroup_freeze(ctx->cg, cg, true, err) == 0;
	int r = running && !froze ? -1 : store_ensure(&ctx->cfg, err);
	if (r == 0 && at_freeze)
		r = at_freeze(ctx, &sb, s, err);
	if (r == 0)
		r = store_snapshot_create(&ctx->cfg, sb.id, s->id, err);
	sl_crash_point("snapshot-frozen");
	if (froze) {
		sl_err e2 = { 0 };
		cgroup_freeze(ctx->cg, cg, false, &e2);
	}
	sandbox_free(&sb);
	if (r == 0 && snap_save(ctx, s, err) < 0) {
		store_snapshot_destroy(&ctx->cfg, s->id, NULL);
		r = -1;
	}
	sl_crash_point("snapshot-recorded"); /* its record saved, its marker still held */
	if (r == 0 && keep_mfd) {
		*keep_mfd = mfd;
		return 0;
	}
	making_end(ctx, s->id, mfd);
	return r;
}

int snapshot_create(sl_ctx *ctx, const char *sandbox_ref, const char *name, sl_snapshot *out,
		    sl_err *err)
{
	if (name && *name && !valid_name(name))
		return sl_fail(err, SL_INVALID, 0,
			       "name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_'",
			       name);
	if (name && *name && name_free_for(ctx, name, owner_acting(), err) < 0)
		return -1;
	sl_snapshot s = { 0 };
	snprintf(s.name, sizeof(s.name), "%s", name ? name : "");
	if (capture(ctx, sandbox_ref, NULL, NULL, &s, NULL, err) < 0)
		return -1;
	if (s.name[0]) {
		char p[PATH_MAX];
		snap_dir(ctx, p, sizeof(p));
		strcat(p, "/names");
		if (state_mkdirs(p, 0700, err) < 0)
			return -1;
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s", s.name);
		if (state_write_atomic(p, s.id, strlen(s.id), err) < 0)
			return -1;
	}
	*out = s;
	return 0;
}

/* The records PRED keeps (with ARG), those of other keys too when ANY_OWNER, oldest
 * first. */
static int list_where(sl_ctx *ctx, bool (*pred)(const sl_snapshot *, const void *),
		      const void *arg, bool any_owner, sl_snapshot **out, size_t *n, sl_err *err)
{
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	*out = NULL;
	*n = 0;
	char **ids;
	size_t nids;
	if (state_list_dir(p, "snp_", ".json", &ids, &nids, err) < 0)
		return -1;
	if (nids && !(*out = calloc(nids, sizeof(**out)))) {
		state_free_names(ids, nids);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list snapshots");
	}
	for (size_t i = 0; i < nids; i++) {
		char id[40];
		snprintf(id, sizeof(id), "%s", ids[i]);
		sl_err e2 = { 0 };
		sl_snapshot *s = &(*out)[*n];
		if (snap_load(ctx, id, s, &e2) == 0 && (any_owner || owner_sees(s->owner)) &&
		    pred(s, arg))
			(*n)++;
	}
	state_free_names(ids, nids);
	for (size_t i = 1; i < *n; i++) /* a few dozen at most: insertion sort */
		for (size_t j = i; j > 0 && (*out)[j - 1].created_ms > (*out)[j].created_ms; j--) {
			sl_snapshot t = (*out)[j];
			(*out)[j] = (*out)[j - 1];
			(*out)[j - 1] = t;
		}
	return 0;
}

static bool is_plain(const sl_snapshot *s, const void *arg)
{
	return !snap_hidden(s);
}

int snapshot_list(sl_ctx *ctx, sl_snapshot **out, size_t *n, sl_err *err)
{
	if (list_where(ctx, is_plain, NULL, false, out, n, err) < 0)
		return -1;
	/* Only the newest snapshot with a name carries it (tags). */
	for (size_t i = 0; i < *n; i++) {
		sl_snapshot owner;
		sl_err e2 = { 0 };
		if ((*out)[i].name[0] && (snapshot_get(ctx, (*out)[i].name, &owner, &e2) < 0 ||
					  strcmp(owner.id, (*out)[i].id)))
			(*out)[i].name[0] = '\0';
	}
	return 0;
}

static bool uses_snapshot(const sl_sandbox *sb, const void *id)
{
	return !strcmp(sb->snapshot, id);
}

int snapshot_delete(sl_ctx *ctx, const char *ref, sl_err *err)
{
	sl_snapshot s;
	if (snapshot_get(ctx, ref, &s, err) < 0)
		return -1;
	char by[32];
	if (sandbox_find_user(ctx, uses_snapshot, s.id, by, err) < 0)
		return -1;
	if (by[0])
		return sl_fail(err, SL_CONFLICT, 0,
			       "snapshot %s is in use by sandbox %s; delete the sandbox first", s.id,
			       by);
	if (store_snapshot_destroy(&ctx->cfg, s.id, err) < 0)
		return -1;
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	size_t base = strlen(p);
	snprintf(p + base, sizeof(p) - base, "/%s.json", s.id);
	unlink(p);
	if (s.name[0]) {
		sl_snapshot owner;
		sl_err e2 = { 0 };
		if (snapshot_get(ctx, s.name, &owner, &e2) == 0 && !strcmp(owner.id, s.id)) {
			snprintf(p + base, sizeof(p) - base, "/names/%s", s.name);
			unlink(p);
		}
	}
	return 0;
}

/* Ownership shift of a cloned layer from the snapshot's uid range to the new
 * sandbox's. nftw with FTW_PHYS never follows the tree's (hostile) symlinks, and no
 * process runs in this fresh layer yet. */
static uint32_t shift_from, shift_to;

static int shift_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	uid_t u = st->st_uid, g = st->st_gid;
	bool in_u = u >= shift_from && u - shift_from < 65536;
	bool in_g = g >= shift_from && g - shift_from < 65536;
	if (!in_u && !in_g)
		return 0;
	uid_t nu = in_u ? u - shift_from + shift_to : u;
	gid_t ng = in_g ? g - shift_from + shift_to : g;
	if (lchown(path, nu, ng) < 0)
		return -1;
	/* chown clears setuid/setgid: put them back. */
	if (S_ISREG(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)))
		chmod(path, st->st_mode & 07777);
	return 0;
}

int snapshot_clone_layer(sl_ctx *ctx, const sl_snapshot *s, const char *dst_id, uint32_t dst_base,
			 uint64_t disk_bytes, sl_err *err)
{
	char dst[PATH_MAX];
	if (store_layer_clone_snapshot(&ctx->cfg, dst_id, s->id, disk_bytes, err) < 0)
		return -1;
	if (s->uid_base == dst_base)
		return 0;
	store_layer_path(&ctx->cfg, dst_id, dst, sizeof(dst));
	/* The process is single-purpose here (CLI) or holds ctx->lock (daemon). */
	pthread_mutex_lock(&ctx->lock);
	shift_from = s->uid_base;
	shift_to = dst_base;
	int r = nftw(dst, shift_one, 64, FTW_PHYS | FTW_MOUNT);
	pthread_mutex_unlock(&ctx->lock);
	if (r != 0) {
		int e = errno;
		store_layer_destroy(&ctx->cfg, dst_id, NULL);
		return sl_fail(err, SL_INTERNAL, e, "give the snapshot's files to sandbox %s", dst_id);
	}
	return 0;
}

/* The merged view (the snapshot's layer over its image, whiteouts applied) exists
 * only in a private mount namespace of a forked child, which streams it out. */
int snapshot_export(sl_ctx *ctx, const char *ref, int out_fd, sl_err *err)
{
	sl_snapshot s;
	if (snapshot_get(ctx, ref, &s, err) < 0)
		return -1;
	char img[PATH_MAX], snap[PATH_MAX], mnt[PATH_MAX], opts[2 * PATH_MAX + 32];
	if (image_layer_path(ctx->cfg.state_dir, s.digest, img, sizeof(img)) < 0)
		return sl_fail(err, SL_NOTFOUND, 0, "the image of snapshot %s is gone", s.id);
	store_snapshot_path(&ctx->cfg, s.id, snap, sizeof(snap));
	snprintf(mnt, sizeof(mnt), "%s/export-%s", ctx->cfg.run_dir, s.id);
	snprintf(opts, sizeof(opts), "lowerdir=%s/upper:%s", snap, img);
	if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", mnt);
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return sl_sysfail(err, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		sl_err e = { 0 };
		close(ep[0]);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("overlay", mnt, "overlay", MS_RDONLY, opts) < 0 || chdir(mnt) < 0)
			sl_sysfail(&e, "mount the snapshot's tree");
		else
			archive_write_tree(out_fd, mnt, s.uid_base, &e);
		if (e.kind && write(ep[1], e.msg, strlen(e.msg)) < 0)
			_exit(2);
		_exit(e.kind ? 1 : 0);
	}
	close(ep[1]);
	if (pid < 0) {
		close(ep[0]);
		rmdir(mnt);
		return sl_sysfail(err, "fork");
	}
	char msg[sizeof(err->msg)];
	ssize_t n = read(ep[0], msg, sizeof(msg) - 1);
	close(ep[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rmdir(mnt);
	if (n > 0) {
		msg[n] = '\0';
		return sl_fail(err, SL_INTERNAL, 0, "export snapshot %s: %s", s.id, msg);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sl_fail(err, SL_INTERNAL, 0, "export snapshot %s failed", s.id);
	return 0;
}

int snapshot_import(sl_ctx *ctx, const char *name, int in_fd, sl_snapshot *out, sl_err *err)
{
	if (!name || !valid_name(name))
		return sl_fail(err, SL_INVALID, 0,
			       "name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_'",
			       name ? name : "");
	char iname[80];
	snprintf(iname, sizeof(iname), "snapshot-%s", name);
	sl_image img;
	if (store_ensure(&ctx->cfg, err) < 0 ||
	    image_import(ctx->cfg.state_dir, &ctx->cfg.min_free, iname, in_fd, NULL, NULL, &img,
			 err) < 0)
		return -1;
	sl_snapshot s = { 0 };
	sl_new_id("snp_", s.id, sizeof(s.id));
	snprintf(s.name, sizeof(s.name), "%s", name);
	snprintf(s.image, sizeof(s.image), "%s", img.name);
	snprintf(s.digest, sizeof(s.digest), "%s", img.digest);
	s.uid_base = 0; /* the empty layer is canonical: shifted into each new sandbox */
	s.created_ms = sl_now_ms();
	snprintf(s.owner, sizeof(s.owner), "%s", owner_acting());
	if (name_free_for(ctx, s.name, s.owner, err) < 0)
		return -1;
	snapshot_collect_unfinished(ctx);
	int mfd = making_begin(ctx, s.id, "", err);
	if (mfd < 0)
		return -1;
	int r = store_snapshot_create_empty(&ctx->cfg, s.id, err);
	if (r == 0 && snap_save(ctx, &s, err) < 0) {
		store_snapshot_destroy(&ctx->cfg, s.id, NULL);
		r = -1;
	}
	making_end(ctx, s.id, mfd);
	if (r < 0)
		return -1;
	char p[PATH_MAX];
	snap_dir(ctx, p, sizeof(p));
	strcat(p, "/names");
	if (state_mkdirs(p, 0700, err) < 0)
		return -1;
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s", s.name);
	if (state_write_atomic(p, s.id, strlen(s.id), err) < 0)
		return -1;
	*out = s;
	return 0;
}

/* ---- checkpoints ---- */

static bool is_checkpoint_of(const sl_snapshot *s, const void *sandbox_id)
{
	return !strcmp(s->checkpoint_of, sandbox_id);
}

/* Under the sandbox's lock: its checkpoint names are unique, and few. */
static int checkpoint_check(sl_ctx *ctx, const sl_sandbox *sb, const sl_snapshot *s, sl_err *err)
{
	sl_snapshot *list;
	size_t n;
	if (list_where(ctx, is_checkpoint_of, sb->id, true, &list, &n, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; i < n && !r; i++)
		if (!strcmp(list[i].name, s->name))
			r = sl_fail(err, SL_CONFLICT, 0,
				    "sandbox %s already has a checkpoint named %s; delete it first",
				    sb->id, s->name);
	if (!r && n >= SL_CHECKPOINTS_MAX)
		r = sl_fail(err, SL_EXHAUSTED, 0,
			    "sandbox %s has %d checkpoints, the most it may keep; delete one first",
			    sb->id, SL_CHECKPOINTS_MAX);
	free(list);
	if (!r && s->memory)
		r = snapshot_memory_check(sb, "checkpoint", err);
	return r;
}

int snapshot_memory_check(const sl_sandbox *sb, const char *what, sl_err *err)
{
	if (!sb->hibernate)
		return sl_fail(err, SL_CONFLICT, 0,
			       "memory: sandbox %s was not created with \"hibernate\": true; only "
			       "such a sandbox's processes can be kept in a %s (docs/forks.md)",
			       sb->id, what);
	if (sb->status != SL_ST_RUNNING)
		return sl_fail(err, SL_CONFLICT, 0,
			       "memory: sandbox %s is %s; only a running sandbox's processes can "
			       "be kept in a %s",
			       sb->id, sandbox_status_name(sb->status), what);
	if (sb->net_enabled || cJSON_GetArraySize(sb->volumes) > 0 ||
	    cJSON_GetArraySize(sb->secret_files) > 0)
		return sl_fail(err, SL_CONFLICT, 0,
			       "memory: sandbox %s has a network, volumes or secret files, which "
			       "a %s of its processes cannot take yet (docs/forks.md)",
			       sb->id, what);
	return 0;
}

int snapshot_dump_at_freeze(sl_ctx *ctx, const sl_sandbox *sb, const sl_snapshot *s, sl_err *err)
{
	char dir[PATH_MAX];
	hibernate_dump_dir(ctx, s->id, dir, sizeof(dir));
	if (hibernate_dump_copy(ctx, sb, dir, err) < 0)
		return sl_wrap(err, "%s with memory", s->fork_base ? "fork" : "checkpoint");
	return 0;
}

int checkpoint_create(sl_ctx *ctx, const char *sandbox_ref, const char *name, bool memory,
		      sl_snapshot *out, sl_err *err)
{
	if (!name || !valid_name(name))
		return sl_fail(err, SL_INVALID, 0,
			       "checkpoint name \"%s\": use 1-63 lowercase letters, digits, '-', "
			       "'.', '_' (not starting with snp_)",
			       name ? name : "");
	sl_snapshot s = { 0 };
	snprintf(s.name, sizeof(s.name), "%s", name);
	s.memory = memory;
	/* The sandbox's id, known only under its lock: capture fills sandbox_id. */
	sl_sandbox sb;
	if (sandbox_get(ctx, sandbox_ref, &sb, err) < 0)
		return -1;
	snprintf(s.checkpoint_of, sizeof(s.checkpoint_of), "%s", sb.id);
	sandbox_free(&sb);
	if (capture(ctx, s.checkpoint_of, checkpoint_check, memory ? snapshot_dump_at_freeze : NULL,
		    &s, NULL, err) < 0) {
		if (memory && s.id[0]) /* a dump made before the snapshot failed */
			hibernate_dump_delete(ctx, s.id);
		return -1;
	}
	*out = s;
	return 0;
}

int checkpoint_list(sl_ctx *ctx, const char *sandbox_ref, sl_snapshot **out, size_t *n,
		    sl_err *err)
{
	sl_sandbox sb;
	if (sandbox_get(ctx, sandbox_ref, &sb, err) < 0)
		return -1;
	int r = sb.status == SL_ST_TERMINATED
			? sl_fail(err, SL_NOTFOUND, 0, "sandbox %s is terminated", sb.id)
			: list_where(ctx, is_checkpoint_of, sb.id, false, out, n, err);
	sandbox_free(&sb);
	return r;
}

int checkpoint_find(sl_ctx *ctx, const char *sandbox_id, const char *ref, sl_snapshot *out,
		    sl_err *err)
{
	if (!ref || !*ref || strchr(ref, '/') || ref[0] == '.')
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a checkpoint name",
			       ref ? ref : "");
	if (!strncmp(ref, "snp_", 4)) {
		sl_err e = { 0 };
		if (!id_ok(ref, "snp_") || snap_load(ctx, ref, out, &e) < 0 ||
		    !owner_sees(out->owner) || !out->checkpoint_of[0])
			return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s has no checkpoint %s",
				       sandbox_id, ref);
		if (strcmp(out->checkpoint_of, sandbox_id))
			return sl_fail(err, SL_CONFLICT, 0,
				       "checkpoint %s belongs to sandbox %s, not %s: a sandbox "
				       "rolls back only to its own checkpoints (fork to copy "
				       "another sandbox)",
				       ref, out->checkpoint_of, sandbox_id);
		return 0;
	}
	sl_snapshot *list;
	size_t n;
	if (list_where(ctx, is_checkpoint_of, sandbox_id, false, &list, &n, err) < 0)
		return -1;
	int r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s has no checkpoint named %s", sandbox_id,
			ref);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].name, ref)) {
			*out = list[i];
			sl_err_clear(err);
			r = 0;
			break;
		}
	free(list);
	return r;
}

static int checkpoint_remove(sl_ctx *ctx, const sl_snapshot *s, sl_err *err)
{
	if (store_snapshot_destroy(&ctx->cfg, s->id, err) < 0)
		return -1;
	if (s->memory)
		hibernate_dump_delete(ctx, s->id);
	snap_unlink_record(ctx, s->id);
	return 0;
}

int checkpoint_delete(sl_ctx *ctx, const char *sandbox_ref, const char *ref, sl_err *err)
{
	/* Under the sandbox's lock: not while a rollback clones it. */
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (sandbox_get_locked(ctx, sandbox_ref, &sb, &lk, err) < 0)
		return -1;
	sl_snapshot s;
	int r = sb.status == SL_ST_TERMINATED
			? sl_fail(err, SL_NOTFOUND, 0, "sandbox %s is terminated", sb.id)
			: checkpoint_find(ctx, sb.id, ref, &s, err);
	if (r == 0)
		r = checkpoint_remove(ctx, &s, err);
	sandbox_free(&sb);
	return r;
}

void checkpoint_delete_all(sl_ctx *ctx, const char *sandbox_id)
{
	sl_snapshot *list;
	size_t n;
	sl_err e = { 0 };
	if (list_where(ctx, is_checkpoint_of, sandbox_id, true, &list, &n, &e) < 0) {
		sl_log(SL_LOG_WARN, "sandbox %s: list its checkpoints: %s", sandbox_id, e.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		sl_err_clear(&e);
		if (checkpoint_remove(ctx, &list[i], &e) < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: delete checkpoint %s: %s", sandbox_id,
			       list[i].id, e.msg);
	}
	free(list);
}

/* ---- fork bases ---- */

static int fork_check(sl_ctx *ctx, const sl_sandbox *sb, const sl_snapshot *s, sl_err *err)
{
	if (sb->status == SL_ST_RUNNING || sb->status == SL_ST_PAUSED)
		return 0;
	return sl_fail(err, SL_CONFLICT, 0,
		       "sandbox %s is %s; only a running or paused sandbox can be forked", sb->id,
		       sandbox_status_name(sb->status));
}

int snapshot_fork_base(sl_ctx *ctx, const char *sandbox_ref, snapshot_hook at_freeze,
		       sl_snapshot *out, int *mfd, sl_err *err)
{
	sl_snapshot s = { 0 };
	s.fork_base = true;
	if (capture(ctx, sandbox_ref, fork_check, at_freeze, &s, mfd, err) < 0)
		return -1;
	*out = s;
	return 0;
}

void snapshot_fork_base_drop(sl_ctx *ctx, const sl_snapshot *s, int mfd)
{
	sl_err e = { 0 };
	snap_unlink_record(ctx, s->id);
	if (store_snapshot_destroy(&ctx->cfg, s->id, &e) < 0)
		sl_log(SL_LOG_WARN, "fork of %s: delete its base %s: %s", s->sandbox_id, s->id,
		       e.msg);
	making_end(ctx, s->id, mfd);
}

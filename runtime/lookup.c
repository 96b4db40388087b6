/* lookup.c — finding sandboxes: by id or name (sandbox_get), every one (sandbox_list),
 * and the live one using a thing (sandbox_find_user: images, snapshots, volumes). Each
 * answers only with what the calling thread's key may see (owner.h): another key's
 * sandbox is "not found", as an unknown id is. */
#include "lookup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "claim.h"
#include "cleanup.h"
#include "clock.h"
#include "owner.h"
#include "state.h"
#include "tombstone.h"

static int cmp_created(const void *a, const void *b)
{
	const sl_sandbox *x = a, *y = b;
	return x->created_ms < y->created_ms ? -1 : x->created_ms > y->created_ms;
}

/* SB was read without its lock, as WAS, and its init is gone (record_refresh_status made
 * it failed). An operation that ends the init on purpose holds the record's lock until it
 * has written what it made of it (a hibernation's dump kills the init before the record
 * says "hibernated"): while the lock is held, the record as read stands, not "failed" (a
 * client polling for "paused" saw "not found" in that window); once it is free, the
 * record is read again under it and refreshed. Never waits: the caller may hold the lock
 * itself on another descriptor. */
static void settle_dead_init(sl_ctx *ctx, sl_sandbox *sb, enum sl_status was, bool running)
{
	if (sb->status != SL_ST_FAILED || was == SL_ST_FAILED || was == SL_ST_CREATING)
		return;
	char dir[PATH_MAX];
	state_sandbox_dir(&ctx->cfg, sb->id, dir, sizeof(dir));
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		sb->status = was;
		return;
	}
	sl_sandbox again;
	sl_err e = {0};
	if (record_load_or_broken(ctx, sb->id, &again, &e) < 0)
		return;
	record_refresh_status(&again, running);
	sandbox_free(sb);
	*sb = again;
}

/* Every record but the pooled (the daemon's, until a create takes one), by creation
 * time, tombstones only when TOMBSTONES (then those older than TOMBSTONE_MS are removed
 * on the way). Without them, the ids known as tombstones are not read at all. */
static int list_records(sl_ctx *ctx, bool tombstones, bool everyones, sl_sandbox **out, size_t *n,
			sl_err *err)
{
	char **ids;
	size_t nids;
	sl_sandbox *list;
	*out = NULL;
	*n = 0;
	if (record_ids_and_array(ctx, &ids, &nids, sizeof(*list), (void **)&list, err) < 0)
		return -1;
	size_t k = 0;
	int64_t now = sl_now_ms();
	for (size_t i = 0; i < nids; i++) {
		sl_err e2 = { 0 };
		if (!tombstones && record_dead_known(ids[i]))
			continue;
		/* Not found: a record being written for the first time. One that cannot be
		 * read is listed as broken, to be deleted. */
		if (record_load_or_broken(ctx, ids[i], &list[k], &e2) < 0)
			continue;
		bool dead = list[k].status == SL_ST_TERMINATED;
		if (dead)
			record_dead_add(ids[i]);
		if (dead && tombstones && now - list[k].terminated_ms > TOMBSTONE_MS &&
		    !list[k].releaser_pid)
			tombstone_collect_one(ctx, ids[i]);
		if ((dead && (!tombstones || now - list[k].terminated_ms > TOMBSTONE_MS)) ||
		    list[k].status == SL_ST_POOLED || (!everyones && !owner_sees(list[k].owner))) {
			sandbox_free(&list[k]);
			continue;
		}
		enum sl_status was = list[k].status;
		record_refresh_status(&list[k], true);
		settle_dead_init(ctx, &list[k], was, true);
		k++;
	}
	state_free_names(ids, nids);
	qsort(list, k, sizeof(*list), cmp_created);
	*out = list;
	*n = k;
	return 0;
}

int sandbox_list(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err)
{
	return list_records(ctx, true, false, out, n, err);
}

int sandbox_list_live(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err)
{
	return list_records(ctx, false, false, out, n, err);
}

/* Whether the thread's key may see sandbox ID: the admin's needs no read. */
static bool id_visible(sl_ctx *ctx, const char *id)
{
	if (!owner_acting()[0])
		return true;
	sl_sandbox sb;
	sl_err e = { 0 };
	if (record_load(ctx, id, &sb, &e) < 0)
		return false;
	bool ok = owner_sees(sb.owner);
	sandbox_free(&sb);
	return ok;
}

/* Resolve an id or a name to an id. */
int sandbox_resolve_ref(sl_ctx *ctx, const char *ref, char *id, size_t len, sl_err *err)
{
	char p[PATH_MAX];
	if (!ref || !*ref || strchr(ref, '/') || !strcmp(ref, ".") || !strcmp(ref, ".."))
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a sandbox id or name",
			       ref ? ref : "");
	if (!strncmp(ref, "sbx_", 4)) {
		state_sandbox_dir(&ctx->cfg, ref, p, sizeof(p));
		if (access(p, F_OK) == 0 && id_visible(ctx, ref)) {
			snprintf(id, len, "%s", ref);
			return 0;
		}
	}
	/* A live sandbox's name is claimed in <state>/names/<name>, holding its id (every
	 * create claims it): one read, not a scan of every record. */
	claim_path(ctx, "names", ref, p, sizeof(p));
	char owner[40];
	if (claim_read(p, owner) > 4 && !strncmp(owner, "sbx_", 4)) {
		sl_sandbox sb;
		sl_err e = { 0 };
		if (record_load(ctx, owner, &sb, &e) == 0) {
			/* A claim outlives a tombstone until its release ends. */
			bool live = !strcmp(sb.name, ref) && sb.status != SL_ST_TERMINATED &&
				    sb.status != SL_ST_POOLED && owner_sees(sb.owner);
			sandbox_free(&sb);
			if (live) {
				snprintf(id, len, "%s", owner);
				return 0;
			}
		}
	}
	return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", ref);
}

/* record_load_visible, with a record that cannot be read given as broken. */
static int load_visible(sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
{
	if (record_load_or_broken(ctx, id, sb, err) < 0)
		return -1;
	if (sb->status != SL_ST_POOLED)
		return 0;
	sandbox_free(sb);
	return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", id);
}

static int get_of(sl_ctx *ctx, const char *ref, sl_sandbox *out, bool running, sl_err *err)
{
	char id[32];
	/* An id is read straight away (resolve_ref's look for its directory is one path
	 * walk more); only what that does not find is looked up as a name. */
	bool loaded = false;
	if (ref && !strncmp(ref, "sbx_", 4) && strlen(ref) < sizeof(id) && !strchr(ref, '/')) {
		sl_err e = {0};
		loaded = load_visible(ctx, ref, out, &e) == 0;
		if (loaded && !owner_sees(out->owner)) {
			sandbox_free(out);
			return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", ref);
		}
		if (!loaded && e.kind != SL_NOTFOUND) {
			*err = e;
			return -1;
		}
	}
	if (!loaded && (sandbox_resolve_ref(ctx, ref, id, sizeof(id), err) < 0 ||
			load_visible(ctx, id, out, err) < 0))
		return -1;
	enum sl_status was = out->status;
	record_refresh_status(out, running);
	settle_dead_init(ctx, out, was, running);
	return 0;
}

int sandbox_get(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return get_of(ctx, ref, out, true, err);
}

int sandbox_get_for_init(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return get_of(ctx, ref, out, false, err);
}

int sandbox_find_user(sl_ctx *ctx, bool (*uses)(const sl_sandbox *sb, const void *arg),
		      const void *arg, char user[32], sl_err *err)
{
	sl_sandbox *list;
	size_t n;
	user[0] = '\0';
	/* Every key's: another key's sandbox still uses the thing. */
	if (list_records(ctx, false, true, &list, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && !user[0]; i++)
		if (list[i].status != SL_ST_TERMINATED && uses(&list[i], arg))
			snprintf(user, 32, "%s", list[i].id);
	sandbox_free_list(list, n);
	return 0;
}

int sandbox_get_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err)
{
	char id[32];
	*lk = -1;
	if (sandbox_resolve_ref(ctx, ref, id, sizeof(id), err) < 0)
		return -1;
	*lk = record_lock(ctx, id, err);
	if (*lk < 0 || record_load_visible(ctx, id, sb, err) < 0) {
		if (*lk >= 0)
			close(*lk);
		*lk = -1;
		return -1;
	}
	record_refresh_status(sb, true);
	return 0;
}

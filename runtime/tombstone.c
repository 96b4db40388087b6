/* tombstone.c — what is left of destroyed sandboxes: their records collected after 24 h
 * or past the bound, and the daemon's once-a-second read of every live deadline. */
#include "tombstone.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "idset.h"
#include "log.h"
#include "record.h"
#include "state.h"

/* ---- tombstone collection ----
 *
 * A tombstone goes after TOMBSTONE_MS, and past cfg.tombstones_max the oldest go first:
 * a daemon serving one-shots leaves one per run (a record dir, ~12 KB of the state dir,
 * that every listing reads), so unbounded they would fill the disk within days. A
 * collection reads every record (~30 us each). It is due after a release once the state
 * dir holds a tenth of the bound more record dirs than the last collection left
 * (<state>/tombstones-next holds that count), and the daemon's sweep runs one every
 * few minutes for the age limit. Only released tombstones go: one whose releaser still
 * frees it keeps its record until it is done. */

typedef struct tombstone {
	char id[32];
	int64_t terminated_ms;
} tombstone;

static int cmp_newest(const void *a, const void *b)
{
	const tombstone *x = a, *y = b;
	return x->terminated_ms > y->terminated_ms ? -1 : x->terminated_ms < y->terminated_ms;
}

/* How many record dirs <state>/sandboxes holds, from its link count; -1 on a file
 * system that does not count subdirectories there (btrfs: always 1). */
static long record_dirs(const sl_ctx *ctx)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/sandboxes", ctx->cfg.state_dir);
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return -1;
	return (long)st.st_nlink - 2;
}

static uint64_t tombstones_slack(const sl_ctx *ctx)
{
	return ctx->cfg.tombstones_max / 10 + 1;
}

static void tombstones_next_path(const sl_ctx *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/tombstones-next", ctx->cfg.state_dir);
}

static bool tombstones_due(const sl_ctx *ctx)
{
	long n = record_dirs(ctx);
	if (n < 0)
		return false;
	char p[PATH_MAX], buf[32];
	tombstones_next_path(ctx, p, sizeof(p));
	uint64_t next = ctx->cfg.tombstones_max + tombstones_slack(ctx);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (r > 0) {
		buf[r] = '\0';
		char *end;
		unsigned long long v = strtoull(buf, &end, 10);
		if (end != buf && (*end == '\n' || !*end))
			next = v;
	}
	return (uint64_t)n > next;
}

/* Under the sandbox's lock, and only if it is still a released tombstone. */
bool tombstone_collect_one(sl_ctx *ctx, const char *id)
{
	sl_err e = {0};
	_cleanup_close_ int lk = record_lock(ctx, id, &e);
	if (lk < 0)
		return false;
	sl_sandbox sb;
	if (record_load(ctx, id, &sb, &e) < 0)
		return false;
	bool gone = sb.status == SL_ST_TERMINATED && !sb.releaser_pid;
	sandbox_free(&sb);
	if (gone)
		record_remove_dir(ctx, id);
	return gone;
}

int sandbox_collect_tombstones(sl_ctx *ctx, sl_err *err)
{
	char **ids;
	size_t nids;
	tombstone *v;
	if (record_ids_and_array(ctx, &ids, &nids, sizeof(*v), (void **)&v, err) < 0)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < nids; i++) {
		sl_sandbox sb;
		sl_err e = {0};
		if (strlen(ids[i]) >= sizeof(v[0].id) || record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		if (sb.status == SL_ST_TERMINATED && !sb.releaser_pid) {
			snprintf(v[k].id, sizeof(v[k].id), "%s", ids[i]);
			v[k++].terminated_ms = sb.terminated_ms;
		}
		sandbox_free(&sb);
	}
	qsort(v, k, sizeof(*v), cmp_newest);
	int64_t now = sl_now_ms();
	size_t removed = 0;
	for (size_t i = 0; i < k; i++)
		if ((i >= ctx->cfg.tombstones_max || now - v[i].terminated_ms > TOMBSTONE_MS) &&
		    tombstone_collect_one(ctx, v[i].id))
			removed++;
	free(v);
	state_free_names(ids, nids);
	char p[PATH_MAX], buf[32];
	tombstones_next_path(ctx, p, sizeof(p));
	int n = snprintf(buf, sizeof(buf), "%zu\n", nids - removed + (size_t)tombstones_slack(ctx));
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, n) != n)
		sl_log(SL_LOG_WARN, "state: cannot write %s: %s", p, strerror(errno));
	if (removed)
		sl_log(SL_LOG_INFO, "state: removed %zu tombstone(s) (at most %llu kept, for 24 h)",
		       removed, (unsigned long long)ctx->cfg.tombstones_max);
	return (int)removed;
}

/* After a release: a collection when one is due. Its failures are only logged. */
void tombstones_collect_if_due(sl_ctx *ctx)
{
	sl_err e = {0};
	if (tombstones_due(ctx) && sandbox_collect_tombstones(ctx, &e) < 0)
		sl_log(SL_LOG_WARN, "state: tombstone collection: %s", e.msg);
}

/* sandbox_list_deadlines' memory of the records it read, per process: open addressing
 * by id, entries updated in place, the table doubled as it fills (from 64 entries up to
 * SEEN_SIZE). Each listing stamps the entries of the ids it found with its generation;
 * when fewer than half the entries were stamped (the rest are removed sandboxes), the
 * table is made again from the stamped ones, so its size follows the sandboxes there
 * are, not all there ever were (it grew to 1.4 MiB under churn before: the load suite's
 * leak check saw the daemon's heap rise by a fifth in 10 s). Past SEEN_SIZE / 2 live
 * sandboxes, the ones past half are simply read every time. */
#define SEEN_SIZE     8192
#define SEEN_FRESH_MS 30000
typedef struct seen_record {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec ctime;
	int64_t read_ms;
	unsigned gen; /* the last listing that found it */
	bool live;
	sl_deadline d;
} seen_record;
static struct {
	pthread_mutex_t lock;
	seen_record *v;
	size_t n, size;
	unsigned gen;
} seen = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

/* The slot of ID in V of SIZE entries: its own, or the free one ending its probe. */
static size_t seen_find(seen_record *v, size_t size, const char *id)
{
	size_t i = sl_id_hash(id) % size;
	while (v[i].d.id[0] && strcmp(v[i].d.id, id))
		i = (i + 1) % size;
	return i;
}

/* Room for one more: the table made, or doubled when half full. Called locked. */
static bool seen_room(void)
{
	if (!seen.v) {
		seen.v = calloc(64, sizeof(*seen.v));
		seen.size = seen.v ? 64 : 0;
		return seen.v != NULL;
	}
	if (seen.n < seen.size / 2)
		return true;
	if (seen.size * 2 > SEEN_SIZE)
		return false;
	seen_record *v = calloc(seen.size * 2, sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < seen.size; i++)
		if (seen.v[i].d.id[0])
			v[seen_find(v, seen.size * 2, seen.v[i].d.id)] = seen.v[i];
	free(seen.v);
	seen.v = v;
	seen.size *= 2;
	return true;
}

/* The entry for ID (d.id empty: a free one), or NULL when full. Called locked. */
static seen_record *seen_slot(const char *id)
{
	if (seen.v) {
		seen_record *r = &seen.v[seen_find(seen.v, seen.size, id)];
		if (r->d.id[0])
			return r;
	}
	return seen_room() ? &seen.v[seen_find(seen.v, seen.size, id)] : NULL;
}

/* Make the table again from the entries listing GEN stamped, when they are fewer than
 * half of it. Called locked. */
static void seen_prune(unsigned gen, size_t stamped)
{
	if (!seen.v || seen.n <= 2 * stamped + 32)
		return;
	size_t size = 64;
	while (size < 2 * stamped + 2)
		size *= 2;
	seen_record *v = calloc(size, sizeof(*v));
	if (!v)
		return;
	size_t n = 0;
	for (size_t i = 0; i < seen.size; i++)
		if (seen.v[i].d.id[0] && seen.v[i].gen == gen) {
			v[seen_find(v, size, seen.v[i].d.id)] = seen.v[i];
			n++;
		}
	free(seen.v);
	seen.v = v;
	seen.size = size;
	seen.n = n;
}

static bool same_file(const seen_record *r, const struct stat *st)
{
	return r->dev == st->st_dev && r->ino == st->st_ino && r->size == st->st_size &&
	       r->ctime.tv_sec == st->st_ctim.tv_sec && r->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

int sandbox_list_deadlines(sl_ctx *ctx, sl_deadline **out, size_t *n, sl_err *err)
{
	char **ids;
	size_t nids;
	sl_deadline *list;
	*out = NULL;
	*n = 0;
	if (record_list_ids(ctx, &ids, &nids, err) < 0)
		return -1;
	/* Room for the ids not known dead: a daemon keeps up to tombstones_max of those, and
	 * a slot for each (~230 bytes) in a sweep a second was 2.3 MiB held for much of every
	 * second at 10,000 records (the load suite's churn; docs/reliability.md). A live id
	 * is never in the dead set, so every live one has its slot; the bound only guards
	 * against the set changing under the loop (another listing clearing it). */
	size_t cap = 0;
	for (size_t i = 0; i < nids; i++)
		cap += !record_dead_known(ids[i]);
	if (!(list = calloc(cap ? cap : 1, sizeof(*list)))) {
		state_free_names(ids, nids);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list sandboxes");
	}
	size_t k = 0;
	int64_t now = sl_now_ms();
	size_t dead_found = 0, stamped = 0;
	pthread_mutex_lock(&seen.lock);
	if (seen.v && seen.n >= SEEN_SIZE / 2) {
		free(seen.v);
		seen.v = NULL;
		seen.n = seen.size = 0;
	}
	unsigned gen = ++seen.gen;
	pthread_mutex_unlock(&seen.lock);
	for (size_t i = 0; i < nids; i++) {
		if (record_dead_known(ids[i])) {
			dead_found++;
			continue;
		}
		if (strlen(ids[i]) >= sizeof(list[0].id))
			continue;
		char p[PATH_MAX];
		struct stat st;
		record_path(ctx, ids[i], p);
		if (stat(p, &st) < 0)
			continue; /* removed, or being written for the first time */
		pthread_mutex_lock(&seen.lock);
		seen_record *r = seen_slot(ids[i]);
		bool hit = r && r->d.id[0] && same_file(r, &st) && now - r->read_ms < SEEN_FRESH_MS;
		if (hit) {
			r->gen = gen;
			stamped++;
		}
		if (hit && r->live && k < cap)
			list[k++] = r->d;
		pthread_mutex_unlock(&seen.lock);
		if (hit)
			continue;
		sl_sandbox sb;
		sl_err e = {0};
		if (record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		bool dead = sb.status == SL_ST_TERMINATED;
		if (dead)
			record_dead_add(ids[i]);
		sl_deadline d = {.ephemeral = sb.ephemeral,
				 .created_ms = sb.created_ms,
				 .idle_ms = sb.idle_ms,
				 .expires_ms = sb.expires_ms,
				 .on_lifetime = sb.on_lifetime,
				 .on_idle =
				     sandbox_idle_action(sb.on_idle_set, sb.on_idle, sb.ephemeral),
				 .init_pid = sb.init_pid,
				 .init_start = sb.init_start,
				 .stop_policy = sb.stop_policy,
				 .archived = sb.archived,
				 .auto_archive_min = sb.auto_archive_min,
				 .auto_delete_min = sb.auto_delete_min,
				 .stopped_ms = sb.stopped_ms};
		snprintf(d.id, sizeof(d.id), "%s", sb.id);
		snprintf(d.boot_id, sizeof(d.boot_id), "%s", sb.boot_id);
		d.status = sb.status;
		bool live = !dead && sb.status != SL_ST_POOLED;
		sandbox_free(&sb);
		pthread_mutex_lock(&seen.lock);
		if ((r = seen_slot(ids[i]))) {
			if (!r->d.id[0])
				seen.n++;
			*r = (seen_record){.dev = st.st_dev,
					   .ino = st.st_ino,
					   .size = st.st_size,
					   .ctime = st.st_ctim,
					   .read_ms = now,
					   .gen = gen,
					   .live = live,
					   .d = d};
			stamped++;
		}
		pthread_mutex_unlock(&seen.lock);
		if (live && k < cap)
			list[k++] = d;
	}
	state_free_names(ids, nids);
	pthread_mutex_lock(&seen.lock);
	if (seen.gen == gen) /* no listing since began: its stamps are the newest */
		seen_prune(gen, stamped);
	pthread_mutex_unlock(&seen.lock);
	record_dead_forget_stale(dead_found);
	/* The status a record keeps may be stale (its init died): what an idle timeout acts
	 * on, so it is looked at for those (a read of /proc/<pid>/stat each). */
	for (size_t i = 0; i < k; i++) {
		if (!list[i].idle_ms)
			continue;
		sl_sandbox sb = {.init_pid = list[i].init_pid, .init_start = list[i].init_start};
		sb.status = list[i].status;
		snprintf(sb.boot_id, sizeof(sb.boot_id), "%s", list[i].boot_id);
		record_refresh_status(&sb, true);
		list[i].status = sb.status;
	}
	*out = list;
	*n = k;
	return 0;
}

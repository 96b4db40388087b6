/* pool.c — the daemon's background helpers that take work off a request's path:
 *
 * - the pool: `serve --pool [IMAGE=]N` keeps N ready sandboxes of an image (made like
 *   any other, hidden as "pooled"). A create that asks only for what can be set after
 *   the start (env, labels, user, working directory, timeouts) takes one: a record
 *   write instead of a btrfs subvolume, a cgroup, namespaces, mounts and an init. The
 *   pool thread makes a replacement shortly after (REFILL_DELAY_MS).
 * - the releaser: a DELETE kills the sandbox and writes its tombstone, then answers;
 *   the runtime's releaser thread (runtime/release.c) frees cgroup, network, layer and
 *   run dir.
 * - the syncer: a create, a take, a pause... renames its record into place and answers;
 *   this thread fsyncs the record and its directory shortly after (ctx->sync_soon,
 *   docs/storage.md). Fsynced before the answer, they cost that request ~2 ms on this
 *   host's ext4.
 *
 * All stop with the daemon: the pool is discarded, the releases are finished, the
 * records synced. A daemon killed with -9 leaves pooled records and half-released
 * tombstones; the next one finishes them at start (sandbox_finish_orphans). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "clock.h"
#include "doctor.h"
#include "idring.h"
#include "log.h"
#include "pool.h"
#include "release.h"
#include "snapshot.h"
#include "http.h"

#define POOL_MAX_IMAGES 8
#define POOL_MAX_SIZE	API_MAX_POOL_SIZE
/* A record's fsync waits this long: a create is usually followed at once by its first
 * command, which the journal commit would slow down; records saved meanwhile share it. */
#define SYNC_DELAY_MS 20
#define SPARES	      2 /* network namespaces and cgroups kept made (ctx->spares_keep) */
/* A take is usually followed by the taker's first command: the replacement waits this
 * long, so its btrfs, cgroup and mount work (and the journal flushes it causes) does
 * not land in the middle of that request. */
#define REFILL_DELAY_MS 40

typedef struct pool_image {
	char image[128];  /* as given: a name or digest */
	char digest[72];  /* resolved when the daemon starts */
	int target;
	char ids[POOL_MAX_SIZE][32];
	int n;
	int failures; /* in a row: back off, and say so once */
} pool_image;

struct api_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	pool_image images[POOL_MAX_IMAGES];
	int nimages;
	pthread_t filler;
	bool filler_started;
	sl_releaser *releaser; /* NULL: destroys finish inline */
	int64_t last_take_ms; /* monotonic */
	/* The syncer: a ring of sandbox ids whose record to fsync. */
	pthread_cond_t sync_wake;
	pthread_t syncer;
	bool syncer_started, sync_stopping, syncing;
	sl_idring sync;
	uint64_t synced; /* since the daemon started (metrics) */
	int64_t spares_due_ms; /* a spare was taken: refill then (0: none taken) */
};

/* Wait on condition variable C (of the pool's lock) until the monotonic deadline AT_MS. */
static void wait_on_until(api_pool *p, pthread_cond_t *c, int64_t at_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t left = at_ms - sl_mono_ms();
	if (left <= 0)
		return;
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(c, &p->lock, &ts);
}

static void wait_until(api_pool *p, int64_t at_ms)
{
	wait_on_until(p, &p->wake, at_ms);
}

/* ---- the releaser ---- */

int api_destroy(api_server *s, const char *ref, const char *reason, sl_err *err)
{
	return release_queue(s->pool ? s->pool->releaser : NULL, s->ctx, ref, reason, err);
}

/* ---- the syncer ---- */

static void sync_record(api_server *s, const char *id)
{
	sl_err e = {0};
	/* A record removed since (a discarded pool sandbox) has nothing left to keep. */
	if (sandbox_sync_record(s->ctx, id, &e) < 0 && e.kind != SL_NOTFOUND)
		sl_log(SL_LOG_WARN, "sync %s: %s", id, e.msg);
	/* A create took a record dir from the spares, most likely: make another. */
	sandbox_spares_fill(s->ctx);
}

/* ctx->spare_taken: a create took a spare network namespace or cgroup; the syncer makes
 * another SYNC_DELAY_MS later, off the create's path (and its commands'). */
static void spare_taken(void *arg)
{
	api_server *s = arg;
	api_pool *p = s->pool;
	pthread_mutex_lock(&p->lock);
	if (!p->spares_due_ms) {
		p->spares_due_ms = sl_mono_ms() + SYNC_DELAY_MS;
		pthread_cond_signal(&p->sync_wake);
	}
	pthread_mutex_unlock(&p->lock);
}

static void *syncer_main(void *arg)
{
	api_server *s = arg;
	api_pool *p = s->pool;
	sandbox_spares_fill(s->ctx); /* the first creates' */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->sync.len && !p->spares_due_ms && !p->sync_stopping)
			pthread_cond_wait(&p->sync_wake, &p->lock);
		if (p->sync_stopping && !p->sync.len)
			break;
		int64_t due = p->sync.len ? p->sync.v[p->sync.head].at_ms : INT64_MAX;
		if (p->spares_due_ms && p->spares_due_ms <= due && !p->sync_stopping) {
			if (sl_mono_ms() < p->spares_due_ms) {
				wait_on_until(p, &p->sync_wake, p->spares_due_ms);
				continue;
			}
			p->spares_due_ms = 0;
			pthread_mutex_unlock(&p->lock);
			sandbox_spares_fill(s->ctx);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (!p->sync.len)
			continue;
		if (!p->sync_stopping && sl_mono_ms() < due) {
			wait_on_until(p, &p->sync_wake, due);
			continue;
		}
		char id[32];
		idring_pop(&p->sync, id);
		p->syncing = true;
		pthread_mutex_unlock(&p->lock);
		sync_record(s, id);
		pthread_mutex_lock(&p->lock);
		p->syncing = false;
		p->synced++;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ctx->sync_soon: queue ID for the syncer; when it is stopping or its ring is full, sync
 * here and now. */
static void sync_soon(void *arg, const char *id)
{
	api_server *s = arg;
	api_pool *p = s->pool;
	pthread_mutex_lock(&p->lock);
	bool queued = !p->sync_stopping && idring_push(&p->sync, id, sl_mono_ms() + SYNC_DELAY_MS);
	if (queued)
		pthread_cond_signal(&p->sync_wake);
	pthread_mutex_unlock(&p->lock);
	if (!queued)
		sync_record(s, id);
}

void api_sync_stats(api_server *s, uint64_t *synced, size_t *pending)
{
	api_pool *p = s->pool;
	*synced = 0;
	*pending = 0;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*synced = p->synced;
	*pending = p->sync.len + p->syncing;
	pthread_mutex_unlock(&p->lock);
}

/* ---- the pool ---- */

static void *filler_main(void *arg)
{
	api_server *s = arg;
	api_pool *p = s->pool;
	/* Refilling yields to requests: a take wakes us in the middle of that request's
	 * first command. The sandbox itself starts at normal priority (launch.c). */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		pool_image *pi = NULL;
		for (int i = 0; i < p->nimages && !pi; i++)
			if (p->images[i].n < p->images[i].target && p->images[i].failures < 3)
				pi = &p->images[i];
		if (!pi) {
			/* Full (or failing): look again when a take wakes us, or after a
			 * while (a failing image may have been fixed). */
			wait_until(p, sl_mono_ms() + 10000);
			for (int i = 0; i < p->nimages && !p->stopping; i++)
				if (p->images[i].failures >= 3)
					p->images[i].failures = 2; /* one more try */
			continue;
		}
		if (sl_mono_ms() < p->last_take_ms + REFILL_DELAY_MS) {
			wait_until(p, p->last_take_ms + REFILL_DELAY_MS);
			continue;
		}
		char image[128];
		snprintf(image, sizeof(image), "%s", pi->digest);
		pthread_mutex_unlock(&p->lock);
		sl_create_opts o = {.image = image, .pooled = true};
		sl_sandbox sb;
		sl_err e = {0};
		int r = sandbox_create(s->ctx, &o, &sb, &e);
		if (r == 0) {
			/* A take answers with the sandbox's usage, and its first command
			 * reads the OOM counter. The first look at a new cgroup's files makes
			 * their kernfs dentries and inodes: 140-210 us here against 55-80 for
			 * a second look (uprobes), so it is done now, for all five. */
			char cg[64];
			sl_cgusage u;
			snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
			cgroup_usage(s->ctx->cg, cg, &u, NULL);
			/* Its log space too, which its first command would mount (~70 us). */
			sl_err le = {0};
			if (exec_logs_ready(s->ctx, &sb, &le) < 0)
				sl_log(SL_LOG_WARN, "pool: sandbox %s: %s", sb.id, le.msg);
		}
		pthread_mutex_lock(&p->lock);
		if (r < 0) {
			if (++pi->failures == 3)
				sl_log(SL_LOG_WARN, "pool %s: cannot make a sandbox: %s", pi->image,
				       e.msg);
			continue;
		}
		pi->failures = 0;
		if (p->stopping || pi->n >= pi->target) {
			pthread_mutex_unlock(&p->lock);
			sl_err e2 = {0};
			sandbox_pool_discard(s->ctx, sb.id, &e2);
			pthread_mutex_lock(&p->lock);
		} else {
			snprintf(pi->ids[pi->n++], sizeof(pi->ids[0]), "%s", sb.id);
		}
		sandbox_free(&sb);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int api_pool_take(api_server *s, const sl_create_opts *o, sl_sandbox *out, sl_err *err)
{
	api_pool *p = s->pool;
	if (!p || !p->nimages || !sandbox_poolable(o))
		return 0;
	char name[128], digest[72];
	sl_err e = {0};
	if (sandbox_resolve_image(s->ctx, o->image, name, digest, &e) < 0)
		return 0; /* the cold path says what is wrong */
	for (;;) {
		char id[32] = "";
		pthread_mutex_lock(&p->lock);
		for (int i = 0; i < p->nimages && !id[0]; i++) {
			pool_image *pi = &p->images[i];
			if (pi->n && !strcmp(pi->digest, digest))
				memcpy(id, pi->ids[--pi->n], sizeof(id));
		}
		if (id[0]) {
			p->last_take_ms = sl_mono_ms();
			pthread_cond_broadcast(&p->wake); /* make its replacement */
		}
		pthread_mutex_unlock(&p->lock);
		if (!id[0])
			return 0;
		sl_err_clear(&e);
		if (sandbox_pool_take(s->ctx, id, o, out, &e) == 0)
			return 1;
		if (e.kind != SL_NOTFOUND) {
			*err = e;
			return -1;
		}
		/* Its init died (OOM killer, someone's kill -9): throw it away. */
		sl_log(SL_LOG_WARN, "pool: %s", e.msg);
		sl_err_clear(&e);
		sandbox_pool_discard(s->ctx, id, &e);
	}
}

int api_pool_start(api_server *s, const api_pool_spec *specs, int n, sl_err *err)
{
	api_pool *p = calloc(1, sizeof(*p));
	if (!p || !idring_init(&p->sync)) {
		free(p);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "start the pool");
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->sync_wake, NULL);
	for (int i = 0; i < n && p->nimages < POOL_MAX_IMAGES; i++) {
		if (!specs[i].size)
			continue;
		pool_image *pi = &p->images[p->nimages];
		char name[128];
		if (sandbox_resolve_image(s->ctx, specs[i].image[0] ? specs[i].image : NULL, name,
					  pi->digest, err) < 0) {
			idring_free(&p->sync);
			free(p);
			return sl_wrap(err, "--pool");
		}
		snprintf(pi->image, sizeof(pi->image), "%s", name);
		pi->target = specs[i].size;
		p->nimages++;
	}
	s->pool = p;
	/* What a daemon killed with -9 left: pooled sandboxes and unfinished releases. */
	sl_err e = {0};
	/* Under the doctor's lock: a `sandlot doctor --repair` meanwhile would free the
	 * same things (runtime/doctor.h). */
	int dlk = doctor_lock(s->ctx, &e);
	int done = sandbox_finish_orphans(s->ctx, &e);
	if (done > 0)
		sl_log(SL_LOG_INFO, "serve: finished %d sandbox(es) a previous daemon left", done);
	done = snapshot_collect_unfinished(s->ctx);
	if (done > 0)
		sl_log(SL_LOG_INFO, "serve: cleaned up %d snapshot(s) a dead maker left", done);
	done = build_collect_unfinished(s->ctx, true);
	if (done > 0)
		sl_log(SL_LOG_INFO, "serve: freed %d thing(s) a killed image build left", done);
	if (dlk >= 0)
		close(dlk);
	/* Spare cgroups a daemon killed with -9 left (a half-made one would fail every
	 * take); the syncer makes new ones at its start. */
	sandbox_spares_drop(s->ctx);
	pthread_mutex_lock(&s->ctx->lock);
	s->ctx->spares_keep = SPARES;
	s->ctx->spare_taken = spare_taken;
	s->ctx->spare_taken_arg = s;
	pthread_mutex_unlock(&s->ctx->lock);
	p->syncer_started = pthread_create(&p->syncer, NULL, syncer_main, s) == 0;
	if (p->syncer_started) {
		s->ctx->sync_soon = sync_soon;
		s->ctx->sync_soon_arg = s;
	} else {
		pthread_mutex_lock(&s->ctx->lock);
		s->ctx->spares_keep = 0;
		pthread_mutex_unlock(&s->ctx->lock);
	}
	if (!(p->releaser = releaser_start(s->ctx, &e)))
		sl_log(SL_LOG_WARN, "serve: %s (deletes finish their releases inline)", e.msg);
	if (p->nimages)
		p->filler_started = pthread_create(&p->filler, NULL, filler_main, s) == 0;
	return 0;
}

void api_pool_stop(api_server *s)
{
	api_pool *p = s->pool;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->filler_started)
		pthread_join(p->filler, NULL);
	/* The releaser drains its queue before it leaves. */
	releaser_stop(p->releaser);
	p->releaser = NULL;
	for (int i = 0; i < p->nimages; i++)
		for (int k = 0; k < p->images[i].n; k++) {
			sl_err e = {0};
			if (sandbox_pool_discard(s->ctx, p->images[i].ids[k], &e) < 0)
				sl_log(SL_LOG_WARN, "pool: %s", e.msg);
		}
	/* Last: everything before may have saved a record. It drains its ring; a record
	 * saved from now on is synced where it is saved. */
	pthread_mutex_lock(&p->lock);
	p->sync_stopping = true;
	pthread_cond_broadcast(&p->sync_wake);
	pthread_mutex_unlock(&p->lock);
	if (p->syncer_started)
		pthread_join(p->syncer, NULL);
	s->ctx->sync_soon = NULL;
	s->ctx->sync_soon_arg = NULL;
	pthread_mutex_lock(&s->ctx->lock);
	s->ctx->spares_keep = 0;
	s->ctx->spare_taken = NULL;
	s->ctx->spare_taken_arg = NULL;
	pthread_mutex_unlock(&s->ctx->lock);
	sandbox_spares_drop(s->ctx);
	s->pool = NULL;
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->sync_wake);
	idring_free(&p->sync);
	free(p);
}

cJSON *api_pool_json(api_server *s)
{
	api_pool *p = s->pool;
	cJSON *a = cJSON_CreateArray();
	if (!p)
		return a;
	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < p->nimages; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "image", p->images[i].image);
		cJSON_AddNumberToObject(o, "size", p->images[i].target);
		cJSON_AddNumberToObject(o, "ready", p->images[i].n);
		cJSON_AddItemToArray(a, o);
	}
	pthread_mutex_unlock(&p->lock);
	return a;
}


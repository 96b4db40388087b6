/* sandbox.c — sandbox lifecycle on top of the modules: records (state), writable
 * layers (storage), limits (cgroup), images, and launch. A failed create undoes
 * every step; a destroy frees every host resource and leaves only a tombstone. */
#include "sandbox.h"
#include "idset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../init/proto.h"
#include "cleanup.h"
#include "clock.h"
#include "exec.h"
#include "fsutil.h"
#include "image.h"
#include "record_codec.h"
#include "initctl.h"
#include "launch.h"
#include "log.h"
#include "net.h"
#include "netaddr.h"
#include "packages.h"
#include "quantity.h"
#include "snapshot.h"
#include "state.h"
#include "storage.h"
#include "volume.h"

#define TOMBSTONE_MS (24LL * 3600 * 1000)
#define RECORD_MAX (1 << 20)


void sl_new_id(const char *prefix, char *out, size_t len)
{
	static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char r[20];
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		abort(); /* no entropy: ids would collide */
	char s[21];
	for (int i = 0; i < 20; i++)
		s[i] = b32[r[i] & 31];
	s[20] = '\0';
	snprintf(out, len, "%s%s", prefix, s);
}

/* A preview token: 32 random bytes in hex, not derived from anything. */
static void new_preview_token(char out[65])
{
	unsigned char r[32];
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		abort(); /* no entropy: tokens could be guessed */
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

int ctx_open(sl_ctx *ctx, sl_err *err)
{
	memset(ctx, 0, sizeof(*ctx));
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->spare_lock, NULL);
	dirwatch_cache_init(&ctx->watches);
	if (config_load(&ctx->cfg, err) < 0)
		return -1;
	sl_log_open(NULL);
	char p[PATH_MAX];
	/* No local user but root reaches anything under the state and run dirs, bar the API
	 * socket (docs/isolation.md, "The host's side"): image layers keep their owners and
	 * set-id bits there. */
	if (state_private_dir(ctx->cfg.state_dir, 0700, err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sandlot.log", ctx->cfg.state_dir);
	sl_log_open(p);
	/* spares: released claims; spare-records: ready-made record dirs (see claim). */
	static const char *const dirs[] = {"sandboxes", "slots", "names", "spares",
					   "spare-records"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", ctx->cfg.state_dir, dirs[i]);
		if (state_mkdirs(p, 0700, err) < 0)
			return -1;
	}
	char stage[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sandboxes", ctx->cfg.run_dir);
	snprintf(stage, sizeof(stage), "%s/stage", ctx->cfg.run_dir);
	if (state_private_dir(ctx->cfg.run_dir, 0711, err) < 0 ||
	    state_private_dir(p, 0700, err) < 0 || state_restrict(stage, 0700, err) < 0 ||
	    image_store_secure(ctx->cfg.state_dir, err) < 0 ||
	    cgroup_open(ctx->cfg.cgroup_root, &ctx->cg, err) < 0)
		return -1;
	return cgroup_make_private(ctx->cg, "sandlot", err);
}

void ctx_close(sl_ctx *ctx)
{
	while (ctx->netns_nspares > 0)
		close(ctx->netns_spares[--ctx->netns_nspares]);
	if (ctx->cg)
		cgroup_close(ctx->cg);
	if (ctx->bpf_loaded)
		seccomp_bpf_free(&ctx->bpf);
	seccomp_bpf_free(&ctx->bpf_ahead);
	seccomp_bpf_free(&ctx->bpf_last);
	ctx->bpf_split = 0;
	dirwatch_cache_close(&ctx->watches);
	ctx->cg = NULL;
	ctx->bpf_loaded = false;
}

void sandbox_free(sl_sandbox *sb)
{
	if (!sb)
		return;
	cJSON_Delete(sb->env);
	cJSON_Delete(sb->labels);
	cJSON_Delete(sb->volumes);
	cJSON_Delete(sb->packages);
	cJSON_Delete(sb->net_allow);
	cJSON_Delete(sb->net_deny);
	cJSON_Delete(sb->ports);
	sb->env = sb->labels = sb->volumes = sb->packages = sb->net_allow = sb->net_deny = NULL;
	sb->ports = NULL;
}

void sandbox_free_list(sl_sandbox *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_free(&list[i]);
	free(list);
}

/* FROM + MS, saturated at INT64_MAX: a lifetime too long to end is no overflow (which
 * would be undefined, and could wrap into the past). */
static int64_t deadline_after(int64_t from, uint64_t ms)
{
	return ms > (uint64_t)(INT64_MAX - from) ? INT64_MAX : from + (int64_t)ms;
}

/* ---- records ---- */


/* <state>/sandboxes/<id>/sandbox.json */
static void record_path(const sl_ctx *ctx, const char *id, char p[PATH_MAX])
{
	state_sandbox_dir(&ctx->cfg, id, p, PATH_MAX);
	strcat(p, "/sandbox.json");
}

static int record_load(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
{
	char p[PATH_MAX];
	record_path(ctx, id, p);
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (state_read_record(p, RECORD_MAX, &data, &len, err) < 0) {
		if (err->kind == SL_NOTFOUND)
			sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", id);
		return -1;
	}
	/* A record dir taken from the spares holds an empty record until its first
	 * write: no record yet, as for a directory just made. So does one whose first
	 * write a crash cut short: the daemon's writes are synced ~20 ms after they are
	 * made (record_write), and the file's size can reach the disk before its blocks,
	 * which then read as zeros. */
	size_t at = 0;
	while (at < len && (data[at] == '\0' || data[at] == ' ' || data[at] == '\n'))
		at++;
	if (at == len)
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", id);
	if (record_decode(data, p, sb, err) < 0)
		return -1;
	if (strcmp(sb->id, id) != 0) {
		sandbox_free(sb);
		return sl_fail(err, SL_INTERNAL, 0, "record %s names another sandbox", p);
	}
	return 0;
}

/* How a record goes to disk. */
enum rec_write { REC_VOLATILE, REC_DURABLE };

/* A durable record in the daemon is rewritten in its spare and exchanged in
 * (state_write_record_soon), then made durable by the syncer ~20 ms later, not written
 * to a temp file renamed over the old one: on this host's root ext4 (no journal,
 * online discard) the rename's new inode, the writeback a rename over a file starts, and
 * the freeing and discard of the old record's block were 0.35 ms of a 0.58 ms pool take,
 * and 0.25-0.29 ms of a create's "running" record, which takes 0.08-0.09 through the
 * spare (uprobes, docs/bench.md, session 16). A crash before the sync
 * leaves, with a rename, the old record or the new one; with the spare, the new one or
 * the spare's older version, or for a create a record dir as it came from the spares
 * (an empty record) or a record whose blocks never reached the disk (zeros): both read
 * "not found", and the claims are freed as for a create that died midway. Either way the call did not survive the crash; for a create or a pool take,
 * nothing ran in the sandbox that a crash would not have ended. */
static int record_write(const sl_ctx *ctx, const sl_sandbox *sb, enum rec_write how,
			sl_err *err)
{
	char p[PATH_MAX];
	record_path(ctx, sb->id, p);
	_cleanup_free_ char *s = record_encode(sb);
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "serialise %s", sb->id);
	if (how == REC_VOLATILE || !ctx->sync_soon)
		return state_write_record(p, s, strlen(s), how != REC_VOLATILE, err);
	/* The daemon's: answer now, durable ~20 ms later (api/pool.c, the syncer). */
	if (state_write_record_soon(p, s, strlen(s), err) < 0)
		return -1;
	ctx->sync_soon(ctx->sync_soon_arg, sb->id);
	return 0;
}

static int record_save(const sl_ctx *ctx, const sl_sandbox *sb, bool durable, sl_err *err)
{
	return record_write(ctx, sb, durable ? REC_DURABLE : REC_VOLATILE, err);
}

/* A pool take's record. A crash before its sync leaves the "pooled" record (the next
 * daemon discards it), the new one, or the pool's "creating" record, whose creator is
 * then dead: the sandbox reads "failed". Either way the take did not survive the crash,
 * and the id the create returned says so. */
static int record_save_take(const sl_ctx *ctx, const sl_sandbox *sb, sl_err *err)
{
	return record_save(ctx, sb, !sb->ephemeral, err);
}

/* The sandbox's lock: a flock on its record dir (SL_NOTFOUND once it is gone). It
 * serialises the record's writers (state_write_record) and the lifecycle calls. */
static int sandbox_lock(const sl_ctx *ctx, const char *id, sl_err *err)
{
	char dir[PATH_MAX];
	state_sandbox_dir(&ctx->cfg, id, dir, sizeof(dir));
	return state_lock_dir(dir, err);
}

/* record_save from a create, which does not hold the sandbox's lock otherwise: a
 * destroy may come meanwhile. */
static int record_save_creating(const sl_ctx *ctx, const sl_sandbox *sb, bool durable,
				sl_err *err)
{
	_cleanup_close_ int lk = sandbox_lock(ctx, sb->id, err);
	if (lk < 0)
		return -1;
	return record_save(ctx, sb, durable, err);
}

int sandbox_sync_record(sl_ctx *ctx, const char *id, sl_err *err)
{
	char p[PATH_MAX];
	record_path(ctx, id, p);
	return state_sync(p, err);
}

/* A record the callers of the public calls may see: pooled sandboxes are the daemon's
 * until a create takes one, so they are "not found" like ids that never existed. */
static int record_load_visible(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
{
	if (record_load(ctx, id, sb, err) < 0)
		return -1;
	if (strcmp(sb->status, "pooled") != 0)
		return 0;
	sandbox_free(sb);
	return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", id);
}

/* The kernel's boot id: a record written under another boot describes a sandbox
 * whose processes a reboot ended (status "stopped", not "failed"). */
static char boot_id_cache[40];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void boot_id_read(void)
{
	char *buf = boot_id_cache;
	size_t len = sizeof(boot_id_cache);
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* Read once per process: it cannot change while we run. */
static void boot_id(char *buf, size_t len)
{
	pthread_once(&boot_id_once, boot_id_read);
	snprintf(buf, len, "%s", boot_id_cache);
}

static bool pid_alive(pid_t pid, uint64_t start)
{
	return pid > 0 && start && proc_start_time(pid) == start;
}

/* The truth behind a record: an init that died makes a running sandbox "failed";
 * a create whose process died midway is "failed" too (rm cleans it up). RUNNING: look
 * at the init of a "running" record too (else it is taken on its word). */
static void refresh_status_of(sl_sandbox *sb, bool running)
{
	bool is_running = !strcmp(sb->status, "running");
	if ((is_running && running) || !strcmp(sb->status, "paused") ||
	    !strcmp(sb->status, "pooled")) {
		char boot[64];
		boot_id(boot, sizeof(boot));
		if (sb->boot_id[0] && strcmp(boot, sb->boot_id) != 0)
			snprintf(sb->status, sizeof(sb->status), "stopped");
		else if (!pid_alive(sb->init_pid, sb->init_start))
			snprintf(sb->status, sizeof(sb->status), "failed");
	} else if (!strcmp(sb->status, "creating")) {
		if (!pid_alive(sb->creator_pid, sb->creator_start))
			snprintf(sb->status, sizeof(sb->status), "failed");
	}
}

static void refresh_status(sl_sandbox *sb)
{
	refresh_status_of(sb, true);
}

static int list_ids(const sl_ctx *ctx, char ***ids, size_t *n, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sandboxes", ctx->cfg.state_dir);
	_cleanup_closedir_ DIR *d = opendir(p);
	*ids = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : sl_sysfail(err, "list %s", p);
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "sbx_", 4) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(*ids, cap * sizeof(char *));
			if (!nn)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "list sandboxes");
			*ids = nn;
		}
		(*ids)[(*n)++] = strdup(e->d_name);
	}
	return 0;
}

static void free_ids(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

/* The ids in <state>/sandboxes and a zeroed array of as many ELEM-byte entries. */
static int ids_and_array(const sl_ctx *ctx, char ***ids, size_t *nids, size_t elem, void **arr,
			 sl_err *err)
{
	*arr = NULL;
	if (list_ids(ctx, ids, nids, err) < 0)
		return -1;
	if (!(*arr = calloc(*nids ? *nids : 1, elem))) {
		free_ids(*ids, *nids);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list sandboxes");
	}
	return 0;
}

static int cmp_created(const void *a, const void *b)
{
	const sl_sandbox *x = a, *y = b;
	return x->created_ms < y->created_ms ? -1 : x->created_ms > y->created_ms;
}

/* Ids whose record was a tombstone when last read: a tombstone never comes back to
 * life, so listings of live sandboxes (sandbox_list_deadlines: the daemon's
 * once-a-second deadline sweep, the health count) need not read it again. Per process,
 * bounded; a miss costs one read. An id leaves it with its record dir (remove_record_dir);
 * records other processes removed stay until the set is full, when the next sweep starts
 * it over. Until session 20 nothing ever left it: after 32768 tombstones in a daemon's
 * life every sweep read every tombstone again (~2000 reads a second with 5000 kept, 13%
 * of a CPU on an idle daemon). */
static sl_idset dead_set = SL_IDSET_INIT(65536);

static void remove_record_dir(const sl_ctx *ctx, const char *id)
{
	char p[PATH_MAX];
	state_sandbox_dir(&ctx->cfg, id, p, sizeof(p));
	fs_remove_tree(p, NULL);
	idset_del(&dead_set, id);
}

static bool dead_known(const char *id)
{
	return idset_has(&dead_set, id);
}

static void dead_add(const char *id)
{
	idset_add(&dead_set, id);
}

static bool collect_one(sl_ctx *ctx, const char *id);

/* Every record but the pooled (the daemon's, until a create takes one), by creation
 * time, tombstones only when TOMBSTONES (then those older than TOMBSTONE_MS are removed
 * on the way). Without them, the ids known as tombstones are not read at all. */
static int list_records(sl_ctx *ctx, bool tombstones, sl_sandbox **out, size_t *n, sl_err *err)
{
	char **ids;
	size_t nids;
	sl_sandbox *list;
	*out = NULL;
	*n = 0;
	if (ids_and_array(ctx, &ids, &nids, sizeof(*list), (void **)&list, err) < 0)
		return -1;
	size_t k = 0;
	int64_t now = sl_now_ms();
	for (size_t i = 0; i < nids; i++) {
		sl_err e2 = { 0 };
		if (!tombstones && dead_known(ids[i]))
			continue;
		if (record_load(ctx, ids[i], &list[k], &e2) < 0)
			continue; /* a record being written for the first time */
		bool dead = !strcmp(list[k].status, "terminated");
		if (dead)
			dead_add(ids[i]);
		if (dead && tombstones && now - list[k].terminated_ms > TOMBSTONE_MS &&
		    !list[k].releaser_pid)
			collect_one(ctx, ids[i]);
		if ((dead && (!tombstones || now - list[k].terminated_ms > TOMBSTONE_MS)) ||
		    !strcmp(list[k].status, "pooled")) {
			sandbox_free(&list[k]);
			continue;
		}
		refresh_status(&list[k]);
		k++;
	}
	free_ids(ids, nids);
	qsort(list, k, sizeof(*list), cmp_created);
	*out = list;
	*n = k;
	return 0;
}

int sandbox_list(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err)
{
	return list_records(ctx, true, out, n, err);
}

int sandbox_list_live(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err)
{
	return list_records(ctx, false, out, n, err);
}

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
static bool collect_one(sl_ctx *ctx, const char *id)
{
	sl_err e = {0};
	_cleanup_close_ int lk = sandbox_lock(ctx, id, &e);
	if (lk < 0)
		return false;
	sl_sandbox sb;
	if (record_load(ctx, id, &sb, &e) < 0)
		return false;
	bool gone = !strcmp(sb.status, "terminated") && !sb.releaser_pid;
	sandbox_free(&sb);
	if (gone)
		remove_record_dir(ctx, id);
	return gone;
}

int sandbox_collect_tombstones(sl_ctx *ctx, sl_err *err)
{
	char **ids;
	size_t nids;
	tombstone *v;
	if (ids_and_array(ctx, &ids, &nids, sizeof(*v), (void **)&v, err) < 0)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < nids; i++) {
		sl_sandbox sb;
		sl_err e = {0};
		if (strlen(ids[i]) >= sizeof(v[0].id) || record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		if (!strcmp(sb.status, "terminated") && !sb.releaser_pid) {
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
		    collect_one(ctx, v[i].id))
			removed++;
	free(v);
	free_ids(ids, nids);
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
static void collect_if_due(sl_ctx *ctx)
{
	sl_err e = {0};
	if (tombstones_due(ctx) && sandbox_collect_tombstones(ctx, &e) < 0)
		sl_log(SL_LOG_WARN, "state: tombstone collection: %s", e.msg);
}

/* sandbox_list_deadlines' memory of the records it read, per process: open addressing
 * by id, entries updated in place. Ids of removed sandboxes stay until the table is half
 * full; then a listing starts it afresh (with more live sandboxes than that, the ones
 * past half are simply read every time). */
#define SEEN_SIZE 8192
#define SEEN_FRESH_MS 30000
typedef struct seen_record {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec ctime;
	int64_t read_ms;
	bool live;
	sl_deadline d;
} seen_record;
static struct {
	pthread_mutex_t lock;
	seen_record *v;
	size_t n;
} seen = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

/* The entry for ID (d.id empty: a free one), or NULL when full. Called locked. */
static seen_record *seen_slot(const char *id)
{
	if (!seen.v && !(seen.v = calloc(SEEN_SIZE, sizeof(*seen.v))))
		return NULL;
	size_t i = sl_id_hash(id) % SEEN_SIZE;
	for (size_t k = 0; k < SEEN_SIZE; k++, i = (i + 1) % SEEN_SIZE) {
		if (!seen.v[i].d.id[0])
			return seen.n < SEEN_SIZE / 2 ? &seen.v[i] : NULL;
		if (!strcmp(seen.v[i].d.id, id))
			return &seen.v[i];
	}
	return NULL;
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
	if (ids_and_array(ctx, &ids, &nids, sizeof(*list), (void **)&list, err) < 0)
		return -1;
	size_t k = 0;
	int64_t now = sl_now_ms();
	if (idset_count(&dead_set) >= dead_set.cap / 2)
		idset_clear(&dead_set);
	pthread_mutex_lock(&seen.lock);
	if (seen.v && seen.n >= SEEN_SIZE / 2) {
		memset(seen.v, 0, SEEN_SIZE * sizeof(*seen.v));
		seen.n = 0;
	}
	pthread_mutex_unlock(&seen.lock);
	for (size_t i = 0; i < nids; i++) {
		if (dead_known(ids[i]) || strlen(ids[i]) >= sizeof(list[0].id))
			continue;
		char p[PATH_MAX];
		struct stat st;
		record_path(ctx, ids[i], p);
		if (stat(p, &st) < 0)
			continue; /* removed, or being written for the first time */
		pthread_mutex_lock(&seen.lock);
		seen_record *r = seen_slot(ids[i]);
		bool hit = r && r->d.id[0] && same_file(r, &st) && now - r->read_ms < SEEN_FRESH_MS;
		if (hit && r->live)
			list[k++] = r->d;
		pthread_mutex_unlock(&seen.lock);
		if (hit)
			continue;
		sl_sandbox sb;
		sl_err e = { 0 };
		if (record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		bool dead = !strcmp(sb.status, "terminated");
		if (dead)
			dead_add(ids[i]);
		sl_deadline d = { .ephemeral = sb.ephemeral, .created_ms = sb.created_ms,
				  .idle_ms = sb.idle_ms, .expires_ms = sb.expires_ms,
				  .init_pid = sb.init_pid, .init_start = sb.init_start };
		snprintf(d.id, sizeof(d.id), "%s", sb.id);
		snprintf(d.boot_id, sizeof(d.boot_id), "%s", sb.boot_id);
		snprintf(d.status, sizeof(d.status), "%s", sb.status);
		bool live = !dead && strcmp(sb.status, "pooled");
		sandbox_free(&sb);
		pthread_mutex_lock(&seen.lock);
		if ((r = seen_slot(ids[i]))) {
			if (!r->d.id[0])
				seen.n++;
			*r = (seen_record){ st.st_dev, st.st_ino, st.st_size, st.st_ctim, now, live, d };
		}
		pthread_mutex_unlock(&seen.lock);
		if (live)
			list[k++] = d;
	}
	free_ids(ids, nids);
	/* The status a record keeps may be stale (its init died): what an idle timeout acts
	 * on, so it is looked at for those (a read of /proc/<pid>/stat each). */
	for (size_t i = 0; i < k; i++) {
		if (!list[i].idle_ms)
			continue;
		sl_sandbox sb = { .init_pid = list[i].init_pid, .init_start = list[i].init_start };
		snprintf(sb.status, sizeof(sb.status), "%s", list[i].status);
		snprintf(sb.boot_id, sizeof(sb.boot_id), "%s", list[i].boot_id);
		refresh_status(&sb);
		snprintf(list[i].status, sizeof(list[i].status), "%s", sb.status);
	}
	*out = list;
	*n = k;
	return 0;
}

/* Claims are files: <state>/slots/<n> for uid ranges, <state>/names/<name> for names
 * and <state>/leases/<ip> for addresses, each holding the owner's id. A claim is a file
 * already holding the id, renamed into place with RENAME_NOREPLACE: atomic, so
 * concurrent creates need no global lock and no scan of the records. A claim whose
 * owner is gone (no record, or a tombstone) is stale and is taken over.
 *
 * A released claim's file is not unlinked but moved to <state>/spares, and the next
 * claim takes one from there instead of making a new file. On an ext4 without a
 * journal (this host's root), each new inode costs a check of every inode freed in the
 * last minutes, and a one-shot's released uid-range claim was the one inode it freed:
 * each create paid for the churn of all the ones before it (docs/bench.md, session 15). */
static void claim_path(const sl_ctx *ctx, const char *kind, const char *key, char *buf,
		       size_t len)
{
	snprintf(buf, len, "%s/%s/%s", ctx->cfg.state_dir, kind, key);
}

/* The owner's id a claim file holds, NUL-terminated: its length, or <= 0 (errno set
 * when it could not be opened; 0 while its creator is still writing it). */
static ssize_t claim_read(const char *path, char owner[40])
{
	owner[0] = '\0';
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, owner, 39);
	owner[n > 0 ? n : 0] = '\0';
	return n;
}

/* Resolve an id or a name to an id. */
static int resolve_ref(sl_ctx *ctx, const char *ref, char *id, size_t len, sl_err *err)
{
	char p[PATH_MAX];
	if (!ref || !*ref || strchr(ref, '/') || !strcmp(ref, ".") || !strcmp(ref, ".."))
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a sandbox id or name",
			       ref ? ref : "");
	if (!strncmp(ref, "sbx_", 4)) {
		state_sandbox_dir(&ctx->cfg, ref, p, sizeof(p));
		if (access(p, F_OK) == 0) {
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
			bool live = !strcmp(sb.name, ref) && strcmp(sb.status, "terminated") &&
				    strcmp(sb.status, "pooled");
			sandbox_free(&sb);
			if (live) {
				snprintf(id, len, "%s", owner);
				return 0;
			}
		}
	}
	return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s not found", ref);
}

static int get_of(sl_ctx *ctx, const char *ref, sl_sandbox *out, bool running, sl_err *err)
{
	char id[32];
	/* An id is read straight away (resolve_ref's look for its directory is one path
	 * walk more); only what that does not find is looked up as a name. */
	bool loaded = false;
	if (ref && !strncmp(ref, "sbx_", 4) && strlen(ref) < sizeof(id) && !strchr(ref, '/')) {
		sl_err e = {0};
		loaded = record_load_visible(ctx, ref, out, &e) == 0;
		if (!loaded && e.kind != SL_NOTFOUND) {
			*err = e;
			return -1;
		}
	}
	if (!loaded && (resolve_ref(ctx, ref, id, sizeof(id), err) < 0 ||
			record_load_visible(ctx, id, out, err) < 0))
		return -1;
	refresh_status_of(out, running);
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
	if (sandbox_list_live(ctx, &list, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && !user[0]; i++)
		if (strcmp(list[i].status, "terminated") && uses(&list[i], arg))
			snprintf(user, 32, "%s", list[i].id);
	sandbox_free_list(list, n);
	return 0;
}

static bool uses_digest(const sl_sandbox *sb, const void *digest)
{
	return !strcmp(sb->digest, digest);
}

int sandbox_image_in_use(sl_ctx *ctx, const char *digest, bool *in_use, sl_err *err)
{
	char user[32];
	if (sandbox_find_user(ctx, uses_digest, digest, user, err) < 0)
		return -1;
	*in_use = user[0] != '\0';
	/* A daemon's pooled sandboxes (hidden from lists) run on it too. */
	char **ids;
	size_t nids;
	if (!*in_use && list_ids(ctx, &ids, &nids, err) == 0) {
		for (size_t i = 0; i < nids && !*in_use; i++) {
			sl_sandbox sb;
			sl_err e = { 0 };
			if (record_load(ctx, ids[i], &sb, &e) < 0)
				continue;
			*in_use = !strcmp(sb.status, "pooled") && !strcmp(sb.digest, digest);
			sandbox_free(&sb);
		}
		free_ids(ids, nids);
	}
	/* Snapshots are layered on their image: they hold it too. */
	sl_snapshot *snaps;
	size_t n;
	if (snapshot_list(ctx, &snaps, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(snaps[i].digest, digest))
			*in_use = true;
	free(snaps);
	return 0;
}

/* ---- ports ---- */

/* Apply SET to the ports object *PORTS (made when absent): public ports get an entry,
 * private ones (the default) lose theirs. */
static int ports_apply(cJSON **ports, const sl_port_setting *set, size_t n, sl_err *err)
{
	if (n > SL_MAX_PORTS)
		return sl_fail(err, SL_INVALID, 0, "ports: at most %d", SL_MAX_PORTS);
	if (!*ports && !(*ports = cJSON_CreateObject()))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "ports");
	for (size_t i = 0; i < n; i++) {
		if (set[i].port > 65535)
			return sl_fail(err, SL_INVALID, 0, "ports.%u: not a port (1-65535)",
				       set[i].port);
		char key[8];
		snprintf(key, sizeof(key), set[i].port == SL_PORT_ALL ? "*" : "%u", set[i].port);
		cJSON_DeleteItemFromObjectCaseSensitive(*ports, key);
		if (!set[i].public_port)
			continue;
		cJSON *v = cJSON_AddObjectToObject(*ports, key);
		if (!v || !cJSON_AddBoolToObject(v, "public", true))
			return sl_fail(err, SL_INTERNAL, ENOMEM, "ports.%s", key);
	}
	return 0;
}

bool sandbox_port_public(const sl_sandbox *sb, unsigned port)
{
	char key[8];
	snprintf(key, sizeof(key), "%u", port);
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(sb->ports, "*");
	const cJSON *one = cJSON_GetObjectItemCaseSensitive(sb->ports, key);
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(all, "public")) ||
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(one, "public"));
}

/* ---- create ---- */

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63 || !strncmp(s, "sbx_", 4))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		      (i > 0 && (c == '.' || c == '_'))))
			return 0;
	}
	return 1;
}

static int kv_object(const char *field, const char *const *kv, cJSON **out, sl_err *err)
{
	cJSON *o = cJSON_CreateObject();
	for (; kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		if (!eq || eq == *kv) {
			cJSON_Delete(o);
			return sl_fail(err, SL_INVALID, 0, "%s: \"%s\" is not KEY=VALUE", field, *kv);
		}
		char key[256];
		if ((size_t)(eq - *kv) >= sizeof(key)) {
			/* Cut, two long keys would have been one (and one value lost). */
			cJSON_Delete(o);
			return sl_fail(err, SL_INVALID, 0, "%s: key \"%.40s...\" is over %zu bytes",
				       field, *kv, sizeof(key) - 1);
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
		cJSON_AddStringToObject(o, key, eq + 1);
	}
	*out = o;
	return 0;
}

static void spares_path(const sl_ctx *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/spares", ctx->cfg.state_dir);
}

/* A claim file holding ID, at a name in <state>/spares that no other claimer uses
 * (MINE, ".<id>"): the file of a released claim when there is one, else a new file.
 * 0, or -1 with errno. */
static int claim_file(const sl_ctx *ctx, const char *id, char *mine, size_t len)
{
	char dir[PATH_MAX];
	spares_path(ctx, dir, sizeof(dir));
	if (snprintf(mine, len, "%s/.%s", dir, id) >= (int)len)
		return errno = ENAMETOOLONG, -1;
	const char *name = mine + strlen(dir) + 1;
	bool taken = false;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	/* The first few entries are enough: a lost race for one (ENOENT) tries the next. */
	char buf[1024] __attribute__((aligned(8)));
	ssize_t n = getdents64(dfd, buf, sizeof(buf));
	for (ssize_t off = 0; !taken && off < n;) {
		struct dirent64 *e = (struct dirent64 *)(buf + off);
		off += e->d_reclen;
		if (e->d_type == DT_REG && e->d_name[0] != '.' &&
		    renameat(dfd, e->d_name, dfd, name) == 0)
			taken = true;
	}
	_cleanup_close_ int fd =
	    open(mine, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (taken ? 0 : O_CREAT | O_TRUNC), 0600);
	size_t l = strlen(id);
	struct stat st;
	if (fd < 0 || fs_write_all(fd, id, l, 0) < 0 || fstat(fd, &st) < 0 ||
	    (st.st_size > (off_t)l && ftruncate(fd, (off_t)l) < 0)) {
		int e = errno;
		unlink(mine);
		return errno = e, -1;
	}
	return 0;
}

/* Put claim file MINE, which holds ID, at PATH unless PATH exists: 0, or -1 with errno
 * (EEXIST: claimed by someone else). Where a rename cannot do it (no RENAME_NOREPLACE,
 * or the claim dirs on another file system than the spares), a new file is made at PATH
 * with O_EXCL, as exclusive. */
static int place_claim(const char *mine, const char *path, const char *id)
{
	if (syscall(SYS_renameat2, AT_FDCWD, mine, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != EXDEV)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int w = fs_write_all(fd, id, strlen(id), 0), e = errno;
	close(fd);
	if (w < 0) {
		unlink(path);
		return errno = e, -1;
	}
	unlink(mine);
	return 0;
}

/* Keep claim file PATH, released by ID, for the next claim (a spare's name must be
 * unique: ID's claim of that KIND); removed if it cannot be kept. */
static void spare_keep(const sl_ctx *ctx, const char *path, const char *id, const char *kind)
{
	char spare[PATH_MAX];
	spares_path(ctx, spare, sizeof(spare));
	size_t l = strlen(spare);
	snprintf(spare + l, sizeof(spare) - l, "/%s.%s", id, kind);
	if (rename(path, spare) < 0)
		unlink(path);
}

/* Record dirs made ahead: <state>/spare-records/rec-0 .. rec-<N-1>, each with an empty
 * sandbox.json and sandbox.json.next, so that a create renames one into place instead of
 * making a directory and two files (the first record goes into the spare and is
 * exchanged with the empty one; every later write reuses the two). On this host's root
 * ext4 those three new inodes were 0.1-1.1 ms of a create (docs/bench.md, session 15).
 * Releases make them, after the sandbox they release is gone, and so does the daemon's
 * syncer after a create: off any caller's path. */
#define RECORD_SPARES 4

static void record_spare_path(const sl_ctx *ctx, int k, char *buf, size_t len)
{
	snprintf(buf, len, "%s/spare-records/rec-%d", ctx->cfg.state_dir, k);
}

/* DIR, a new sandbox's record dir: a spare renamed into place, or a new directory. */
static int record_dir_make(const sl_ctx *ctx, const char *dir)
{
	for (int k = 0; k < RECORD_SPARES; k++) {
		char spare[PATH_MAX];
		record_spare_path(ctx, k, spare, sizeof(spare));
		if (syscall(SYS_renameat2, AT_FDCWD, spare, AT_FDCWD, dir, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != ENOENT)
			break;
	}
	return mkdir(dir, 0700);
}

/* An empty file NAME in the directory DFD. */
static int empty_file_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Make the missing record spares, at most two per call. The one being built is
 * spare-records/.rec-<TAG> (TAG: the releasing sandbox's id), so concurrent builders never
 * share one; a crash mid-build leaves that directory behind. (Not in <state>/spares: a
 * claim taker of an older build would take a directory there for a claim file.) */
static void record_spares_fill(const sl_ctx *ctx, const char *tag)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/spare-records/.rec-%s", ctx->cfg.state_dir, tag);
	bool built = false;
	for (int k = 0, made = 0; k < RECORD_SPARES && made < 2; k++) {
		char spare[PATH_MAX];
		record_spare_path(ctx, k, spare, sizeof(spare));
		if (access(spare, F_OK) == 0)
			continue;
		if (!built) {
			if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
				return;
			_cleanup_close_ int dfd =
			    open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd < 0 || empty_file_at(dfd, "sandbox.json") < 0 ||
			    empty_file_at(dfd, "sandbox.json.next") < 0)
				break;
			built = true;
		}
		if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, spare, RENAME_NOREPLACE) == 0) {
			built = false;
			made++;
		}
	}
	if (built || access(tmp, F_OK) == 0) {
		sl_err e = {0};
		fs_remove_tree(tmp, &e);
	}
}

/* A spare network namespace (lo up), or -1 when none is kept. */
static int netns_spare_take(sl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	int fd = ctx->netns_nspares > 0 ? ctx->netns_spares[--ctx->netns_nspares] : -1;
	pthread_mutex_unlock(&ctx->lock);
	if (fd >= 0 && ctx->spare_taken)
		ctx->spare_taken(ctx->spare_taken_arg);
	return fd;
}

/* Made outside the lock (~0.5 ms each), two per call at most, as the record spares. */
static void netns_spares_fill(sl_ctx *ctx)
{
	int max = (int)(sizeof(ctx->netns_spares) / sizeof(ctx->netns_spares[0]));
	for (int made = 0; made < 2; made++) {
		pthread_mutex_lock(&ctx->lock);
		int keep = ctx->spares_keep < max ? ctx->spares_keep : max;
		bool want = ctx->netns_nspares < keep;
		pthread_mutex_unlock(&ctx->lock);
		if (!want)
			return;
		sl_err e = {0};
		int fd = launch_new_netns(&e);
		if (fd < 0) {
			sl_log(SL_LOG_WARN, "spare network namespace: %s", e.msg);
			return;
		}
		pthread_mutex_lock(&ctx->lock);
		if (ctx->netns_nspares < max)
			ctx->netns_spares[ctx->netns_nspares++] = steal_fd(&fd);
		pthread_mutex_unlock(&ctx->lock);
		if (fd >= 0)
			close(fd);
	}
}

/* Spare cgroups (v1; cgroup2 cannot rename one): a daemon's own,
 * sandlot/.spare-<its pid>-<cpu m>-<memory>-<pids>-<k>, made with those limits and swap
 * off. A create of that daemon with the same limits renames one to its own name: five
 * renames where five mkdirs and the limit writes took ~0.25 ms (docs/limits.md). Takes
 * and makes are serialised by ctx->spare_lock (a take that finds it held makes its own
 * cgroup rather than wait): a take racing a make could otherwise find a spare half made,
 * and its rename back collide with the rest of the make. Other processes never touch
 * them, but remove those of a daemon that died (sandbox_spares_drop). */
#define CG_SPARES 2

static void cg_spare_name(const sl_limits *l, int k, char *buf, size_t len)
{
	snprintf(buf, len, "sandlot/.spare-%d-%" PRIu64 "-%" PRIu64 "-%" PRIu64 "-%d",
		 (int)getpid(), l->cpu_millicores, l->memory_bytes, l->pids_max, k);
}

static void default_limits(const sl_ctx *ctx, sl_limits *l)
{
	*l = (sl_limits){.cpu_millicores = ctx->cfg.def_cpu_millis,
			 .memory_bytes = ctx->cfg.def_memory,
			 .pids_max = ctx->cfg.def_pids};
}

static int cgroup_create_or_take(sl_ctx *ctx, const char *cg, const sl_limits *l, sl_err *err)
{
	if (ctx->spares_keep > 0 && cgroup_version(ctx->cg) == 1 &&
	    pthread_mutex_trylock(&ctx->spare_lock) == 0) {
		bool taken = false;
		for (int k = 0; k < CG_SPARES && !taken; k++) {
			char spare[128];
			cg_spare_name(l, k, spare, sizeof(spare));
			taken = cgroup_rename(ctx->cg, spare, cg, NULL) == 0;
		}
		pthread_mutex_unlock(&ctx->spare_lock);
		if (taken) {
			if (ctx->spare_taken)
				ctx->spare_taken(ctx->spare_taken_arg);
			return 0;
		}
	}
	return cgroup_create(ctx->cg, cg, l, err);
}

static void cg_spares_fill(sl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	int keep = ctx->spares_keep < CG_SPARES ? ctx->spares_keep : CG_SPARES;
	pthread_mutex_unlock(&ctx->lock);
	if (cgroup_version(ctx->cg) != 1)
		return;
	sl_limits l;
	default_limits(ctx, &l);
	for (int k = 0; k < keep; k++) {
		char spare[128], dir[PATH_MAX];
		cg_spare_name(&l, k, spare, sizeof(spare));
		if (cgroup_path(ctx->cg, "cpu", spare, dir, sizeof(dir)) < 0)
			continue;
		pthread_mutex_lock(&ctx->spare_lock);
		sl_err e = {0};
		if (access(dir, F_OK) != 0 && cgroup_create(ctx->cg, spare, &l, &e) < 0)
			sl_log(SL_LOG_WARN, "spare cgroup: %s", e.msg);
		pthread_mutex_unlock(&ctx->spare_lock);
	}
}

static pid_t spare_owner(const char *name);

/* Launch spares (sl_launch_spare): a pid 1 made ahead in its own namespaces and
 * cgroups (sandlot/.spare-<pid>-<limits>-i<seq>), its /proc, /sys and /dev mounted in
 * <run>/sandboxes/.spare-<pid>-<seq>, the run dir it becomes. A take renames both to the
 * sandbox's names and hands it the rest: what of a launch does not depend on the sandbox,
 * made beforehand (docs/bench.md, session 20). cgroup v1 only (v2 cannot rename a
 * cgroup). As many as ctx->launch_spares holds. */
#define LAUNCH_SPARES (int)(sizeof(((sl_ctx *)0)->launch_spares) / sizeof(struct sl_launch_spare *))

static void launch_spare_free(sl_ctx *ctx, sl_launch_spare *sp)
{
	launch_spare_drop(sp);
	sl_err e = {0};
	if (sp->cgroup[0] && cgroup_destroy(ctx->cg, sp->cgroup, &e) < 0)
		sl_log(SL_LOG_WARN, "spare init: %s", e.msg);
	sl_err_clear(&e);
	fs_remove_tree(sp->dir, &e);
	free(sp);
}

/* The profile split at what a take does (launch_take_calls), tried once. Compiled
 * outside ctx->lock (a cold cache is a 10-20 ms compile, which a create waiting on the
 * lock would pay); only the daemon's syncer fills spares. */
static bool load_bpf_split(sl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	int known = ctx->bpf_split;
	pthread_mutex_unlock(&ctx->lock);
	if (known)
		return known > 0;
	char cache[PATH_MAX];
	snprintf(cache, sizeof(cache), "%s/seccomp-cache", ctx->cfg.state_dir);
	sl_bpf ahead, last;
	sl_err e = {0};
	bool ok = seccomp_bpf_get_split(ctx->cfg.seccomp_profile, cache, seccomp_default_caps(),
					launch_take_calls, &ahead, &last, &e) == 0;
	if (!ok)
		sl_log(SL_LOG_INFO, "spare init: %s: each take installs the whole profile", e.msg);
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->bpf_split) {
		ctx->bpf_split = ok ? 1 : -1;
		if (ok) {
			ctx->bpf_ahead = ahead;
			ctx->bpf_last = last;
			ahead = last = (sl_bpf){0};
		}
	}
	ok = ctx->bpf_split > 0;
	pthread_mutex_unlock(&ctx->lock);
	seccomp_bpf_free(&ahead);
	seccomp_bpf_free(&last);
	return ok;
}

static void launch_spares_fill(sl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	int keep = ctx->spares_keep < LAUNCH_SPARES ? ctx->spares_keep : LAUNCH_SPARES;
	int want = ctx->launch_spares_off ? 0 : keep - ctx->launch_nspares;
	pthread_mutex_unlock(&ctx->lock);
	if (want <= 0 || cgroup_version(ctx->cg) != 1)
		return;
	bool split = load_bpf_split(ctx);
	for (; want > 0; want--) {
		sl_launch_spare *sp = calloc(1, sizeof(*sp));
		if (!sp)
			return;
		sp->sock = sp->child_sock = -1;
		if (split) {
			sp->seccomp_ahead = &ctx->bpf_ahead;
			sp->seccomp_last = &ctx->bpf_last;
		}
		pthread_mutex_lock(&ctx->lock);
		unsigned seq = ctx->launch_seq++;
		pthread_mutex_unlock(&ctx->lock);
		sl_limits l;
		default_limits(ctx, &l);
		char name[128];
		cg_spare_name(&l, 0, name, sizeof(name));
		snprintf(sp->cgroup, sizeof(sp->cgroup), "%.*si%u", (int)strlen(name) - 1, name, seq);
		snprintf(sp->dir, sizeof(sp->dir), "%s/sandboxes/.spare-%d-%u", ctx->cfg.run_dir,
			 (int)getpid(), seq);
		snprintf(sp->stage_dir, sizeof(sp->stage_dir), "%s/stage", ctx->cfg.run_dir);
		sl_err e = {0};
		if (cgroup_create(ctx->cg, sp->cgroup, &l, &e) < 0) {
			sp->cgroup[0] = '\0';
			goto fail;
		}
		if (cgroup_join_files(ctx->cg, sp->cgroup, sp->joinbuf, sizeof(sp->joinbuf), sp->join,
				      8, &sp->njoin, &e) < 0 ||
		    launch_spare_make(sp, &e) < 0)
			goto fail;
		pthread_mutex_lock(&ctx->lock);
		bool kept = ctx->launch_nspares < LAUNCH_SPARES && ctx->spares_keep > 0;
		if (kept)
			ctx->launch_spares[ctx->launch_nspares++] = sp;
		pthread_mutex_unlock(&ctx->lock);
		if (!kept)
			launch_spare_free(ctx, sp);
		continue;
	fail:
		sl_log(SL_LOG_WARN, "spare init: %s", e.msg);
		launch_spare_free(ctx, sp);
		if (e.kind == SL_NOTIMPL) { /* said once: no more tries */
			pthread_mutex_lock(&ctx->lock);
			ctx->launch_spares_off = true;
			pthread_mutex_unlock(&ctx->lock);
		}
		return;
	}
}

/* A spare for sandbox SB with run dir RUN and cgroups CG, renamed to them, or NULL
 * (none kept, or the sandbox needs what a spare cannot give: a network, volumes,
 * limits other than the defaults). */
static sl_launch_spare *launch_spare_take(sl_ctx *ctx, const sl_sandbox *sb, size_t nmounts,
					  const char *cg, const char *run)
{
	sl_limits def;
	default_limits(ctx, &def);
	if (sb->net_enabled || nmounts || sb->limits.cpu_millicores != def.cpu_millicores ||
	    sb->limits.memory_bytes != def.memory_bytes || sb->limits.pids_max != def.pids_max)
		return NULL;
	sl_launch_spare *sp;
	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		sp = ctx->launch_nspares > 0 ? ctx->launch_spares[--ctx->launch_nspares] : NULL;
		pthread_mutex_unlock(&ctx->lock);
		/* One that died (killed under the daemon: its end of the socket is closed) is
		 * dropped, and reaped, rather than handed the sandbox. */
		struct pollfd pf = {sp ? sp->sock : -1, POLLIN, 0};
		if (!sp || poll(&pf, 1, 0) == 0)
			break;
		sl_log(SL_LOG_WARN, "spare init %d ended under the daemon; dropped", (int)sp->pid);
		launch_spare_free(ctx, sp);
	}
	if (!sp)
		return NULL;
	if (ctx->spare_taken)
		ctx->spare_taken(ctx->spare_taken_arg);
	sl_err e = {0};
	if (cgroup_rename(ctx->cg, sp->cgroup, cg, &e) < 0) {
		sl_log(SL_LOG_WARN, "spare init for %s: %s", sb->id, e.msg);
		launch_spare_free(ctx, sp);
		return NULL;
	}
	snprintf(sp->cgroup, sizeof(sp->cgroup), "%s", cg);
	if (rename(sp->dir, run) < 0) {
		sl_log(SL_LOG_WARN, "spare init for %s: rename %s: %s", sb->id, sp->dir,
		       strerror(errno));
		launch_spare_free(ctx, sp);
		return NULL;
	}
	snprintf(sp->dir, sizeof(sp->dir), "%s", run);
	return sp;
}

/* This daemon's launch spares ended, and the run dirs of spares of daemons gone. */
static void launch_spares_drop(sl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	int n = ctx->launch_nspares;
	sl_launch_spare *sp[LAUNCH_SPARES];
	memcpy(sp, ctx->launch_spares, sizeof(sp));
	ctx->launch_nspares = 0;
	pthread_mutex_unlock(&ctx->lock);
	for (int i = 0; i < n; i++)
		launch_spare_free(ctx, sp[i]);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/sandboxes", ctx->cfg.run_dir);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		pid_t owner = spare_owner(de->d_name);
		if (!owner || (owner != getpid() && (kill(owner, 0) == 0 || errno != ESRCH)))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		fs_remove_tree(p, NULL);
	}
}

/* pid of a spare's daemon from its name (.spare-<pid>-...), 0 if it is not one. */
static pid_t spare_owner(const char *name)
{
	if (strncmp(name, ".spare-", 7) != 0)
		return 0;
	char *end;
	long pid = strtol(name + 7, &end, 10);
	return pid > 0 && *end == '-' ? (pid_t)pid : 0;
}

void sandbox_spares_drop(sl_ctx *ctx)
{
	launch_spares_drop(ctx);
	if (cgroup_version(ctx->cg) != 1)
		return;
	char dir[PATH_MAX];
	if (cgroup_path(ctx->cg, "cpu", "sandlot", dir, sizeof(dir)) < 0)
		return;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return;
	pid_t self = getpid();
	struct dirent *de;
	pthread_mutex_lock(&ctx->spare_lock);
	while ((de = readdir(d))) {
		pid_t owner = spare_owner(de->d_name);
		/* Ours, or a daemon's that is gone. */
		if (!owner || (owner != self && (kill(owner, 0) == 0 || errno != ESRCH)))
			continue;
		char name[300];
		snprintf(name, sizeof(name), "sandlot/%s", de->d_name);
		sl_err e = {0};
		if (cgroup_destroy(ctx->cg, name, &e) < 0)
			sl_log(SL_LOG_WARN, "spare cgroup: %s", e.msg);
	}
	pthread_mutex_unlock(&ctx->spare_lock);
}

void sandbox_spares_fill(sl_ctx *ctx)
{
	char tag[32];
	snprintf(tag, sizeof(tag), "filler-%d", (int)getpid());
	record_spares_fill(ctx, tag);
	store_layer_spares_fill(&ctx->cfg, ctx->cfg.def_disk, tag);
	netns_spares_fill(ctx);
	cg_spares_fill(ctx);
	launch_spares_fill(ctx);
}

enum claim_owner { OWNER_GONE, OWNER_LIVE, OWNER_RELEASING };

/* Who holds claim PATH: nobody any more (stale), a live sandbox (or one being made), or
 * a tombstone whose releaser is still freeing it. */
static enum claim_owner claim_owner(const sl_ctx *ctx, const char *path)
{
	char owner[40];
	ssize_t n = claim_read(path, owner);
	if (n < 0)
		return errno == ENOENT ? OWNER_GONE : OWNER_LIVE;
	if (n == 0) /* being written right now, or torn by a crash: look again later */
		return OWNER_LIVE;
	sl_sandbox sb;
	sl_err e = { 0 };
	if (strncmp(owner, "sbx_", 4) || record_load(ctx, owner, &sb, &e) < 0) {
		/* Its creator writes the record right after the claim: only an old
		 * claim without a record is stale. */
		struct stat st;
		bool old = e.kind == SL_NOTFOUND && lstat(path, &st) == 0 &&
			   time(NULL) - st.st_mtime > 60;
		return old ? OWNER_GONE : OWNER_LIVE;
	}
	/* A tombstone still being released keeps its claims until its releaser is done
	 * (or dead: then sandbox_finish_orphans frees what is left). */
	enum claim_owner o = OWNER_LIVE;
	if (!strcmp(sb.status, "terminated"))
		o = pid_alive(sb.releaser_pid, sb.releaser_start) ? OWNER_RELEASING : OWNER_GONE;
	sandbox_free(&sb);
	return o;
}

static bool claim_stale(const sl_ctx *ctx, const char *path)
{
	return claim_owner(ctx, path) == OWNER_GONE;
}

/* 0: claimed; 1: taken by a live owner; -1: error. A claim whose sandbox is being
 * released is waited for when WAIT (a name: `run --name x` twice in a row must not
 * fail because the first one's release, detached, is a few ms from done). */
static int claim(const sl_ctx *ctx, const char *kind, const char *key, const char *id,
		 bool wait, sl_err *err)
{
	char path[PATH_MAX];
	claim_path(ctx, kind, key, path, sizeof(path));
	char mine[PATH_MAX];
	if (claim_file(ctx, id, mine, sizeof(mine)) < 0)
		return sl_sysfail(err, "claim %s", path);
	int64_t give_up = 0;
	for (int tries = 0; tries < 3;) {
		if (place_claim(mine, path, id) == 0)
			return 0;
		if (errno != EEXIST) {
			int e = errno;
			unlink(mine);
			return sl_fail(err, SL_INTERNAL, e, "claim %s", path);
		}
		enum claim_owner o = claim_owner(ctx, path);
		if (o == OWNER_RELEASING && wait) {
			if (!give_up)
				give_up = sl_now_ms() + 10000;
			if (sl_now_ms() < give_up) {
				usleep(2000);
				continue;
			}
		}
		if (o != OWNER_GONE)
			break;
		unlink(path);
		tries++;
	}
	spare_keep(ctx, mine, id, kind);
	return 1;
}

static void unclaim(const sl_ctx *ctx, const char *kind, const char *key, const char *id)
{
	char path[PATH_MAX], owner[40];
	claim_path(ctx, kind, key, path, sizeof(path));
	if (claim_read(path, owner) > 0 && !strcmp(owner, id))
		spare_keep(ctx, path, id, kind);
}

static void release_claims(const sl_ctx *ctx, const sl_sandbox *sb)
{
	char slot[16];
	snprintf(slot, sizeof(slot), "%u", (sb->uid_base - ctx->cfg.uid_base) / 65536);
	unclaim(ctx, "slots", slot, sb->id);
	if (sb->net_addr[0])
		unclaim(ctx, "leases", sb->net_addr, sb->id);
	if (sb->name[0])
		unclaim(ctx, "names", sb->name, sb->id);
}

/* Take the name and a free uid range, then write the "creating" record so
 * that a create that dies midway is visible (as failed) and can be removed. */
static int reserve(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	char dir[PATH_MAX];
	if (sb->name[0]) {
		int r = claim(ctx, "names", sb->name, sb->id, true, err);
		if (r != 0)
			return r < 0 ? -1
				     : sl_fail(err, SL_CONFLICT, 0,
					       "a sandbox named %s already exists", sb->name);
	}
	/* Probed from a slot the id's random letters pick, not from 0: at N sandboxes the
	 * first try is nearly always free, where a scan for the lowest was O(N). */
	uint64_t h = sl_id_hash(sb->id);
	for (uint32_t i = 0; i < ctx->cfg.uid_slots; i++) {
		uint32_t slot = (uint32_t)((h + i) % ctx->cfg.uid_slots);
		char key[16];
		snprintf(key, sizeof(key), "%u", slot);
		int r = claim(ctx, "slots", key, sb->id, false, err);
		if (r < 0)
			break;
		if (r == 1) /* a live sandbox's: try the next one */
			continue;
		sb->uid_base = ctx->cfg.uid_base + slot * 65536u;
		state_sandbox_dir(&ctx->cfg, sb->id, dir, sizeof(dir));
		if (record_dir_make(ctx, dir) < 0 ||
		    record_save_creating(ctx, sb, false, err) < 0) {
			if (!err->kind)
				sl_sysfail(err, "create %s", dir);
			release_claims(ctx, sb);
			return -1;
		}
		return 0;
	}
	if (sb->name[0])
		unclaim(ctx, "names", sb->name, sb->id);
	return err->kind ? -1 : sl_fail(err, SL_EXHAUSTED, 0, "no free uid range for another sandbox");
}

/* ---- network ---- */

/* The allow/deny lists of o, parsed and normalised ("10.0.0.0/8") into arrays. */
static int net_lists(const sl_net_opts *o, cJSON **allow, cJSON **deny, sl_err *err)
{
	const char *const *lists[2] = { o->allow, o->deny };
	const char *names[2] = { "network.allow", "network.deny" };
	cJSON *out[2] = { NULL, NULL };
	for (int k = 0; k < 2; k++) {
		if (!lists[k])
			continue;
		out[k] = cJSON_CreateArray();
		size_t i = 0;
		for (const char *const *c = lists[k]; *c; c++, i++) {
			char field[40], text[24];
			sl_cidr cidr;
			snprintf(field, sizeof(field), "%s[%zu]", names[k], i);
			if (i >= SL_NET_MAX_RULES) {
				sl_fail(err, SL_INVALID, 0, "%s: at most %d entries", names[k],
					SL_NET_MAX_RULES);
				goto fail;
			}
			if (cidr_parse(field, *c, &cidr, err) < 0)
				goto fail;
			cidr_format(&cidr, text, sizeof(text));
			cJSON_AddItemToArray(out[k], cJSON_CreateString(text));
		}
	}
	*allow = out[0];
	*deny = out[1];
	return 0;
fail:
	cJSON_Delete(out[0]);
	cJSON_Delete(out[1]);
	return -1;
}

static size_t cidrs_from(const cJSON *arr, sl_cidr *out)
{
	size_t n = 0;
	const cJSON *it;
	sl_err e = { 0 };
	cJSON_ArrayForEach(it, arr) if (n < SL_NET_MAX_RULES && cJSON_IsString(it) &&
					cidr_parse("rule", it->valuestring, &out[n], &e) == 0) n++;
	return n;
}

/* What net.h needs from the record; allow/deny point into the caller's arrays. */
static int net_spec(const sl_sandbox *sb, sl_net_sandbox *ns, sl_cidr *allow, sl_cidr *deny,
		    sl_err *err)
{
	memset(ns, 0, sizeof(*ns));
	ns->id = sb->id;
	if (!ipv4_parse(sb->net_addr, &ns->addr) ||
	    cidr_parse("subnet", sb->net_subnet, &ns->subnet, err) < 0)
		return sl_fail(err, SL_INTERNAL, 0, "sandbox %s: bad network record", sb->id);
	ns->allow = allow;
	ns->nallow = cidrs_from(sb->net_allow, allow);
	ns->deny = deny;
	ns->ndeny = cidrs_from(sb->net_deny, deny);
	return 0;
}

/* The lowest free address of the subnet, claimed like a uid slot: <state>/leases/<ip>
 * holds the owner's id, so a lease outlives daemon restarts. Destroy removes its lease;
 * stale ones (a crash) are looked for only once the subnet seems full, so a create does
 * not read every other sandbox's record. */
static int lease_take(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	sl_cidr subnet;
	char dir[PATH_MAX];
	if (net_subnet(&ctx->cfg, &subnet, err) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/leases", ctx->cfg.state_dir);
	if (state_mkdirs(dir, 0700, err) < 0)
		return -1;
	for (int pass = 0; pass < 8; pass++) {
		bool sweep = pass > 0; /* the first pass trusts every claim file */
		_cleanup_free_ uint32_t *taken = NULL;
		size_t n = 0, cap = 0;
		_cleanup_closedir_ DIR *d = opendir(dir);
		if (!d)
			return sl_sysfail(err, "list %s", dir);
		struct dirent *e;
		while ((e = readdir(d))) {
			uint32_t a;
			char path[PATH_MAX];
			if (!ipv4_parse(e->d_name, &a) || !cidr_contains(&subnet, a))
				continue;
			claim_path(ctx, "leases", e->d_name, path, sizeof(path));
			if (sweep && claim_stale(ctx, path)) {
				unlink(path);
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				uint32_t *nt = realloc(taken, cap * sizeof(*nt));
				if (!nt)
					return sl_fail(err, SL_INTERNAL, ENOMEM, "leases");
				taken = nt;
			}
			taken[n++] = a;
		}
		for (int tries = 0; tries < 16; tries++) {
			uint32_t a;
			if (lease_pick(&subnet, taken, n, &a) < 0) {
				if (!sweep)
					break; /* look again, taking back stale leases */
				return sl_fail(err, SL_EXHAUSTED, 0,
					       "no free address left in the sandbox subnet");
			}
			char key[16];
			ipv4_format(a, key, sizeof(key));
			int r = claim(ctx, "leases", key, sb->id, false, err);
			if (r < 0)
				return -1;
			if (r == 0) {
				snprintf(sb->net_addr, sizeof(sb->net_addr), "%s", key);
				ipv4_format(subnet_gateway(&subnet), sb->net_gateway,
					    sizeof(sb->net_gateway));
				cidr_format(&subnet, sb->net_subnet, sizeof(sb->net_subnet));
				return 0;
			}
			/* lost a race for it: mark it and try the next */
			uint32_t *nt = realloc(taken, (n + 1) * sizeof(*nt));
			if (!nt)
				return sl_fail(err, SL_INTERNAL, ENOMEM, "leases");
			taken = nt;
			taken[n++] = a;
		}
	}
	return sl_fail(err, SL_EXHAUSTED, 0, "could not claim an address (too many races)");
}

/* /etc/hosts and /etc/resolv.conf for a sandbox with a network. The name servers:
 * SANDLOT_NET_DNS, else the host's own that a sandbox can reach (not loopback). */
static void net_etc_files(const sl_ctx *ctx, const sl_sandbox *sb, char *hosts, size_t hlen,
			  char *resolv, size_t rlen)
{
	const char *name = sb->name[0] ? sb->name : sb->id;
	snprintf(hosts, hlen,
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n",
		 sb->net_addr, name);
	size_t n = snprintf(resolv, rlen, "# written by sandlot at start (docs/network.md)\n");
	if (ctx->cfg.net_dns[0]) {
		char buf[sizeof(ctx->cfg.net_dns)], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", ctx->cfg.net_dns);
		for (char *t = strtok_r(buf, ", ", &save); t && n < rlen;
		     t = strtok_r(NULL, ", ", &save))
			n += snprintf(resolv + n, rlen - n, "nameserver %s\n", t);
		return;
	}
	_cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");
	char line[512], ns[256];
	while (f && fgets(line, sizeof(line), f) && n < rlen) {
		if (sscanf(line, "nameserver %255s", ns) == 1) {
			if (strncmp(ns, "127.", 4) && strcmp(ns, "::1"))
				n += snprintf(resolv + n, rlen - n, "nameserver %s\n", ns);
		} else if (!strncmp(line, "search ", 7) || !strncmp(line, "options ", 8)) {
			n += snprintf(resolv + n, rlen - n, "%s", line);
		}
	}
}

static int load_bpf_locked(sl_ctx *ctx, sl_err *err);

static int load_bpf(sl_ctx *ctx, sl_err *err)
{
	pthread_mutex_lock(&ctx->lock);
	int r = 0;
	if (!ctx->bpf_loaded)
		r = load_bpf_locked(ctx, err);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

static int load_bpf_locked(sl_ctx *ctx, sl_err *err)
{
	char cache[PATH_MAX];
	snprintf(cache, sizeof(cache), "%s/seccomp-cache", ctx->cfg.state_dir);
	if (seccomp_bpf_get(ctx->cfg.seccomp_profile, cache, seccomp_default_caps(), &ctx->bpf,
			    err) < 0)
		return sl_wrap(err, "seccomp profile %s", ctx->cfg.seccomp_profile);
	ctx->bpf_loaded = true;
	return 0;
}

/* End every process (init first, which takes its pid namespace with it) and remove
 * the cgroup. grace_ms > 0 asks init to stop its commands with SIGTERM first. */
static void stop_processes(sl_ctx *ctx, sl_sandbox *sb, int grace_ms)
{
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	if (pid_alive(sb->init_pid, sb->init_start)) {
		int pfd = syscall(SYS_pidfd_open, sb->init_pid, 0);
		if (!strcmp(sb->status, "paused")) {
			sl_err fe = { 0 };
			cgroup_freeze(ctx->cg, cg, false, &fe);
		}
		if (grace_ms > 0 && pfd >= 0) {
			struct pollfd p = { pfd, POLLIN, 0 };
			kill(sb->init_pid, SIGTERM);
			poll(&p, 1, grace_ms);
		}
		kill(sb->init_pid, SIGKILL);
		/* Reap it if it is our child; otherwise wait for its exit via the pidfd. */
		if (waitpid(sb->init_pid, NULL, 0) < 0 && pfd >= 0) {
			struct pollfd p = { pfd, POLLIN, 0 };
			poll(&p, 1, 5000);
		}
		if (pfd >= 0)
			close(pfd);
	}
	sl_err e = { 0 };
	if (cgroup_destroy(ctx->cg, cg, &e) < 0)
		sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
	/* Its veth and rules go with its processes; the lease stays with the record. */
	uint32_t addr;
	sl_err_clear(&e);
	if (sb->net_enabled && ipv4_parse(sb->net_addr, &addr)) {
		int r = net_detach(&ctx->cfg, sb->id, addr, ctx->net_linger, &e);
		if (r < 0)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
		else if (r > 0)
			ctx->net_left_up = true;
	}
}

/* Undo whatever a create or a destroy finds: processes, cgroup, layer, run dir. */
static void release_resources(sl_ctx *ctx, sl_sandbox *sb)
{
	char run[PATH_MAX];
	sl_err e = { 0 };
	stop_processes(ctx, sb, 0);
	/* The overlay lives in the sandbox's mount namespace, which the kernel tears
	 * down as init exits; the layer may be busy for a moment after. */
	for (int i = 0; i < 50; i++) {
		sl_err_clear(&e);
		if (store_layer_destroy(&ctx->cfg, sb->id, &e) == 0)
			break;
		if (e.errnum != EBUSY) {
			sl_log(SL_LOG_WARN, "sandbox %s: %s", sb->id, e.msg);
			break;
		}
		usleep(10000);
	}
	/* For the next create: a layer of the default size ready for it, and one cloned
	 * from the snapshot this sandbox was made from. */
	store_layer_spares_fill(&ctx->cfg, ctx->cfg.def_disk, sb->id);
	if (sb->snapshot[0])
		store_clone_spares_fill(&ctx->cfg, sb->snapshot, sb->disk_bytes, sb->id);
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	exec_logs_unmount(ctx, sb->id);
	fs_remove_tree(run, NULL);
}

static void proc_init(sl_proc *p, const char *sid)
{
	memset(p, 0, sizeof(*p));
	p->conn = p->master = -1;
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", sid);
}

/* The spawn request and its fds, on FD: a connection to init (or its peer to be). */
static int spawn_send(int fd, const sl_sandbox *sb, const sl_spawn *sp, sl_err *err)
{
	if (!sp->argv || !sp->argv[0])
		return sl_fail(err, SL_INVALID, 0, "command: empty");
	initctl_spawn isp = { .argv = sp->argv,
			      .env = sp->env,
			      .user = sp->user,
			      .cwd = sp->cwd,
			      .flags = (sp->tty ? SL_SPAWN_TTY : 0) |
				       (sp->exit_fd >= 0 ? SL_SPAWN_HAS_EXIT : 0),
			      .rows = sp->rows,
			      .cols = sp->cols,
			      .timeout_ms = sp->timeout_ms };
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (initctl_build_spawn(sb, &isp, &buf, &len, err) < 0)
		return -1;
	int fds[4], nfds = 0;
	if (!sp->tty)
		for (int i = 0; i < 3; i++)
			fds[nfds++] = sp->fds[i];
	if (sp->exit_fd >= 0)
		fds[nfds++] = sp->exit_fd;
	if (initctl_send(fd, buf, len, fds, nfds) < 0)
		return sl_sysfail(err, "send command to sandbox %s", sb->id);
	return 0;
}

/* The launch's cgroups and network made now (or taken from the spares), and init
 * cloned into them; its cgroups removed again if that fails. */
static int launch_fresh(sl_ctx *ctx, sl_sandbox *sb, sl_launch *l, const char *cg, sl_err *err)
{
	/* The cgroups are made now and the child joins them itself, launched as a vfork
	 * (launch.h). */
	char joinbuf[PATH_MAX];
	const char *join[8];
	l->join = join;
	if (cgroup_create_or_take(ctx, cg, &sb->limits, err) < 0)
		return -1;
	_cleanup_close_ int netns = -1;
	if (cgroup_join_files(ctx->cg, cg, joinbuf, sizeof(joinbuf), join, 8, &l->njoin, err) < 0)
		goto drop_cgroups;
	/* A daemon's spare (launch_new_netns, never used), or the clone makes one. */
	netns = netns_spare_take(ctx);
	l->netns = netns >= 0 ? &netns : NULL;
	l->netns_ready = netns >= 0;
	/* A network is set up in a namespace of its own before anything runs in it (veth,
	 * address, route, egress chain); the child enters it. Nothing of it waits for the
	 * child, so the launch stays a vfork. */
	if (sb->net_enabled) {
		sl_net_sandbox ns;
		sl_cidr allow[SL_NET_MAX_RULES], deny[SL_NET_MAX_RULES];
		if ((netns < 0 && (netns = launch_new_netns(err)) < 0) ||
		    net_spec(sb, &ns, allow, deny, err) < 0 ||
		    net_attach(&ctx->cfg, &ns, netns, err) < 0)
			goto drop_cgroups;
		l->netns = &netns;
		l->netns_ready = true;
	}
	if (launch_sandbox(l, &sb->init_pid, err) < 0)
		goto drop_cgroups;
	return 0;
drop_cgroups:;
	sl_err e = { 0 };
	cgroup_destroy(ctx->cg, cg, &e);
	return -1;
}

/* Init launched from SPARE (consumed either way): 0, or -1 with its cgroups (CG, the
 * spare's renamed) removed and the reason logged, for the caller to launch from nothing
 * (a spare killed under the daemon, say). */
static int launch_spared(sl_ctx *ctx, sl_sandbox *sb, sl_launch *l, sl_launch_spare *spare,
			 const char *cg, sl_err *err)
{
	l->spare = spare;
	int r = launch_sandbox(l, &sb->init_pid, err);
	launch_spare_drop(spare); /* a no-op when it became init */
	free(spare);
	l->spare = NULL;
	if (r < 0) {
		sl_log(SL_LOG_WARN, "%s; launching it from nothing", err->msg);
		sl_err_clear(err);
		sl_err e = {0};
		cgroup_destroy(ctx->cg, cg, &e);
	}
	return r;
}

/* A new init on the sandbox's existing writable layer: cgroup, namespaces, rootfs.
 * FIRST, when not NULL, is queued for init to start at once; *FP gets its connection. */
static int start_init(sl_ctx *ctx, sl_sandbox *sb, const sl_volume_spec *binds, size_t nbinds,
		      const sl_spawn *first, sl_proc *fp, sl_err *err)
{
	char cg[64], run[PATH_MAX], layer[PATH_MAX], upper[PATH_MAX], work[PATH_MAX],
		imgdir[PATH_MAX];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	store_layer_path(&ctx->cfg, sb->id, layer, sizeof(layer));
	snprintf(upper, sizeof(upper), "%s/upper", layer);
	snprintf(work, sizeof(work), "%s/work", layer);
	if (image_layer_path(ctx->cfg.state_dir, sb->digest, imgdir, sizeof(imgdir)) < 0)
		return sl_fail(err, SL_INTERNAL, errno, "image layer of %s", sb->id);
	char hosts[512], resolv[1024];
	if (sb->net_enabled)
		net_etc_files(ctx, sb, hosts, sizeof(hosts), resolv, sizeof(resolv));
	sl_mount mounts[SL_MAX_VOLUMES];
	/* On the heap, and only with volumes: 64 KB of stack would push every later frame
	 * onto pages this process has not touched yet (a fault each; docs/bench.md). */
	_cleanup_free_ char(*sources)[PATH_MAX] = NULL;
	if (cJSON_GetArraySize(sb->volumes) > 0 && !(sources = calloc(SL_MAX_VOLUMES, PATH_MAX)))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "volumes of %s", sb->id);
	size_t nm = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, sb->volumes)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(v, "mountPath");
		if (nm >= SL_MAX_VOLUMES || !cJSON_IsString(name) || !cJSON_IsString(path))
			return sl_fail(err, SL_INVALID, 0, "volumes of %s: bad entry", sb->id);
		if (volume_source(ctx, name->valuestring, sources[nm], PATH_MAX, err) < 0)
			return -1;
		mounts[nm].source = sources[nm];
		mounts[nm].target = path->valuestring;
		mounts[nm].readonly = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "readOnly"));
		nm++;
	}
	for (size_t i = 0; i < nbinds; i++) {
		if (nm >= SL_MAX_VOLUMES)
			return sl_fail(err, SL_INVALID, 0, "volumes of %s: too many", sb->id);
		mounts[nm++] = (sl_mount){ binds[i].source, binds[i].mount_path, binds[i].readonly };
	}
	char user_env[96], stage[PATH_MAX];
	snprintf(user_env, sizeof(user_env), "SANDLOT_DEFAULT_USER=%s", sb->user);
	snprintf(stage, sizeof(stage), "%s/stage", ctx->cfg.run_dir);
	sl_launch l = { .id = sb->id,
			.mounts = mounts,
			.nmounts = nm,
			.hostname = sb->name[0] ? sb->name : sb->id,
			.image_layer = imgdir,
			.upper = upper,
			.work = work,
			.volatile_upper = sb->ephemeral,
			.run_dir = run,
			.stage_dir = stage,
			.init_path = ctx->cfg.init_path,
			.uid_base = sb->uid_base,
			.seccomp = &ctx->bpf,
			.etc_hosts = sb->net_enabled ? hosts : NULL,
			.etc_resolv = sb->net_enabled ? resolv : NULL,
			.network = sb->net_enabled,
			.default_user_env = user_env };
	if (load_bpf(ctx, err) < 0)
		return -1;
	/* The first command waits in a socket pair whose other end init inherits. */
	_cleanup_close_ int mine = -1, theirs = -1;
	if (first) {
		int sv[2];
		proc_init(fp, sb->id);
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return sl_sysfail(err, "socketpair");
		mine = sv[0];
		theirs = sv[1];
		if (initctl_sock_path(ctx, sb->id, fp->init_sock, sizeof(fp->init_sock), err) < 0 ||
		    spawn_send(mine, sb, first, err) < 0)
			return -1;
		l.client = &theirs;
	}
	/* An ephemeral layer was mounted "volatile": overlay leaves a marker in its work
	 * dir and refuses that work dir until it is removed. Its files are what the page
	 * cache kept (everything, unless the host went down): a restart takes them, and
	 * so does a layer cloned from it (a snapshot, a package layer built in an
	 * ephemeral sandbox; btrfs writes dirty data out before it snapshots). */
	char mark[PATH_MAX + 32];
	snprintf(mark, sizeof(mark), "%s/work/incompat", work);
	if (fs_remove_tree(mark, err) < 0)
		return -1;
	/* A spare init brings its run dir (renamed to RUN) and cgroups (to CG). */
	sl_launch_spare *spare = launch_spare_take(ctx, sb, nm, cg, run);
	if (mkdir(run, 0700) < 0 && errno != EEXIST) {
		sl_sysfail(err, "create %s", run);
		goto drop_spare;
	}
	/* The daemon's idle clock (api/deadlines.c) moves this file's mtime; it is made
	 * here, never by a request, so a request racing a destroy cannot leave it. */
	char act[PATH_MAX];
	snprintf(act, sizeof(act), "%s/activity", run);
	int afd = open(act, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (afd < 0) {
		sl_sysfail(err, "create %s", act);
		goto drop_spare;
	}
	close(afd);
	bool had_spare = spare != NULL; /* launch_spared consumes it either way */
	bool spared = had_spare && launch_spared(ctx, sb, &l, spare, cg, err) == 0;
	/* A failed take may have mounted the layer already (the daemon makes a spare's
	 * overlay): its volatile marker goes again. */
	if (!spared && ((had_spare && fs_remove_tree(mark, err) < 0) ||
			launch_fresh(ctx, sb, &l, cg, err) < 0))
		return -1;
	sb->init_start = proc_start_time(sb->init_pid);
	boot_id(sb->boot_id, sizeof(sb->boot_id));
	if (first)
		fp->conn = steal_fd(&mine);
	return 0;
drop_spare:
	if (spare)
		launch_spare_free(ctx, spare);
	return -1;
}

/* The layer a new sandbox starts from: the snapshot's, or with packages the derived
 * layer of its image (built now or taken from the cache), which it records. */
static int with_packages(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *sb,
			 sl_snapshot *base, sl_err *err)
{
	if (!o->npackages)
		return 0;
	if (base->id[0])
		return sl_fail(err, SL_INVALID, 0,
			       "packages: not with a snapshot (the snapshot keeps what was "
			       "installed before it was taken)");
	sl_pkg_layer l;
	if (packages_layer(ctx, sb->digest, o->packages, o->npackages, sb->disk_bytes, &l, err) < 0)
		return -1;
	snprintf(base->id, sizeof(base->id), "%s", l.id);
	base->uid_base = l.uid_base;
	sb->packages = packages_json(o->packages, o->npackages);
	if (l.node_path[0] && !cJSON_GetObjectItemCaseSensitive(sb->env, "NODE_PATH"))
		cJSON_AddStringToObject(sb->env, "NODE_PATH", l.node_path);
	return 0;
}

/* IMAGE by name or digest; NULL: "default", else "busybox" when there is no default. */
static int lookup_image(sl_ctx *ctx, const char *image, sl_image *img, sl_err *err)
{
	if (!image) {
		sl_err e2 = { 0 };
		image = image_lookup(ctx->cfg.state_dir, "default", img, &e2) == 0 ? "default"
										    : "busybox";
	}
	return image_lookup(ctx->cfg.state_dir, image, img, err);
}

int sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb = { 0 };
	if (o->first)
		proc_init(o->first_proc, "");
	sl_image img;
	sl_snapshot snap = { 0 }, base = { 0 };
	const char *image = o->image;
	if (o->snapshot) {
		if (snapshot_get(ctx, o->snapshot, &snap, err) < 0)
			return -1;
		if (o->image && strcmp(o->image, snap.image) && strcmp(o->image, snap.digest))
			return sl_fail(err, SL_INVALID, 0,
				       "snapshot %s is of image %s, not %s: give one or the other",
				       o->snapshot, snap.image, o->image);
		image = snap.digest;
	}
	if (lookup_image(ctx, image, &img, err) < 0)
		return -1;
	if (o->name && !valid_name(o->name))
		return sl_fail(err, SL_INVALID, 0,
			       "name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_' "
			       "(not starting with sbx_)",
			       o->name);
	sl_new_id("sbx_", sb.id, sizeof(sb.id));
	snprintf(sb.name, sizeof(sb.name), "%s", o->name ? o->name : "");
	snprintf(sb.status, sizeof(sb.status), "creating");
	snprintf(sb.image, sizeof(sb.image), "%s", snap.id[0] ? snap.image : img.name);
	snprintf(sb.snapshot, sizeof(sb.snapshot), "%s", snap.id);
	snprintf(sb.digest, sizeof(sb.digest), "%s", img.digest);
	snprintf(sb.user, sizeof(sb.user), "%s", o->user ? o->user : img.user);
	snprintf(sb.workdir, sizeof(sb.workdir), "%s", o->workdir ? o->workdir : img.workdir);
	sb.created_ms = sl_now_ms();
	sb.limits.cpu_millicores = o->cpu_millis ? o->cpu_millis : ctx->cfg.def_cpu_millis;
	sb.limits.memory_bytes = o->memory ? o->memory : ctx->cfg.def_memory;
	sb.limits.pids_max = o->pids ? o->pids : ctx->cfg.def_pids;
	sb.disk_bytes = o->disk ? o->disk : ctx->cfg.def_disk;
	sb.ephemeral = o->ephemeral;
	sb.idle_ms = o->idle_ms;
	sb.lifetime_ms = o->lifetime_ms;
	sb.exec_timeout_ms = o->exec_timeout_ms;
	sb.expires_ms = o->lifetime_ms ? deadline_after(sb.created_ms, o->lifetime_ms) : 0;
	sb.creator_pid = getpid();
	sb.creator_start = proc_self_start_time();
	if (kv_object("env", o->env, &sb.env, err) < 0 ||
	    kv_object("labels", o->labels, &sb.labels, err) < 0 ||
	    net_lists(&o->net, &sb.net_allow, &sb.net_deny, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	new_preview_token(sb.preview_token);
	if (ports_apply(&sb.ports, o->ports, o->nports, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	sb.net_enabled = o->net.enabled;
	if (!sb.net_enabled && (cJSON_GetArraySize(sb.net_allow) || cJSON_GetArraySize(sb.net_deny))) {
		sandbox_free(&sb);
		return sl_fail(err, SL_INVALID, 0,
			       "network.allow and network.deny need network.enabled=true");
	}
	sb.volumes = cJSON_CreateArray();
	for (size_t i = 0; i < o->nvolumes; i++) {
		const sl_volume_spec *vs = &o->volumes[i];
		const char *mp = vs->mount_path ? vs->mount_path : "";
		if (mp[0] != '/' || !strcmp(mp, "/") || strstr(mp, "/..") || strstr(mp, "/./") ||
		    strlen(mp) > 1024 || !vs->source || !*vs->source) {
			sandbox_free(&sb);
			return sl_fail(err, SL_INVALID, 0,
				       "volumes[%zu]: mountPath \"%s\" must be an absolute path "
				       "other than / without . or .. (and a volume name or host dir)",
				       i, mp);
		}
		if (o->nvolumes > SL_MAX_VOLUMES) {
			sandbox_free(&sb);
			return sl_fail(err, SL_INVALID, 0, "volumes: at most %d", SL_MAX_VOLUMES);
		}
		char src[PATH_MAX];
		if (volume_source(ctx, vs->source, src, sizeof(src), err) < 0) {
			sandbox_free(&sb);
			return sl_wrap(err, "volumes[%zu]", i);
		}
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "name", vs->source);
		cJSON_AddStringToObject(m, "mountPath", mp);
		cJSON_AddBoolToObject(m, "readOnly", vs->readonly);
		cJSON_AddItemToArray(sb.volumes, m);
	}
	if (snap.id[0])
		base = snap;
	if (o->npackages && packages_validate(o->packages, o->npackages, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	if (sb.workdir[0] != '/') {
		sandbox_free(&sb);
		return sl_fail(err, SL_INVALID, 0, "workingDirectory \"%s\" must be absolute",
			       sb.workdir);
	}
	if (load_bpf(ctx, err) < 0 || store_ensure(&ctx->cfg, err) < 0 ||
	    with_packages(ctx, o, &sb, &base, err) < 0 || reserve(ctx, &sb, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	if (sb.net_enabled &&
	    (lease_take(ctx, &sb, err) < 0 || record_save_creating(ctx, &sb, false, err) < 0))
		goto fail;
	if ((base.id[0] ? snapshot_clone_layer(ctx, &base, sb.id, sb.uid_base, sb.disk_bytes, err)
			: store_layer_create(&ctx->cfg, sb.id, sb.disk_bytes, sb.uid_base, err)) < 0 ||
	    start_init(ctx, &sb, o->host_binds, o->nhost_binds, o->first, o->first_proc, err) < 0)
		goto fail;
	/* A pooled sandbox needs no durable record: a daemon that died leaves its pool
	 * to be discarded, whatever the record says. */
	snprintf(sb.status, sizeof(sb.status), "%s", o->pooled ? "pooled" : "running");
	if (record_save_creating(ctx, &sb, !sb.ephemeral && !o->pooled, err) < 0)
		goto fail;
	*out = sb;
	return 0;
fail:
	if (!err->kind)
		sl_sysfail(err, "create sandbox %s", sb.id);
	if (o->first)
		proc_close(o->first_proc);
	release_resources(ctx, &sb);
	remove_record_dir(ctx, sb.id);
	if (sb.uid_base)
		release_claims(ctx, &sb);
	sandbox_free(&sb);
	return -1;
}

/* ---- destroy ---- */

/* The sandbox's lock and record for a destroy; pooled ones only when ALLOW_POOLED. */
static int destroy_load(sl_ctx *ctx, const char *id, bool allow_pooled, sl_sandbox *sb, int *lk,
			sl_err *err)
{
	*lk = sandbox_lock(ctx, id, err);
	if (*lk < 0)
		return -1;
	if ((allow_pooled ? record_load(ctx, id, sb, err) : record_load_visible(ctx, id, sb, err)) < 0)
		return -1;
	return 0;
}

/* Free what a tombstone still holds, then its claims. Under the sandbox's lock. */
static int finish_release(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	release_resources(ctx, sb);
	sb->releaser_pid = 0;
	sb->releaser_start = 0;
	sb->init_pid = 0;
	/* No fsync: if this is lost, the mark says to release again, which finds
	 * nothing left to free. */
	int r = record_save(ctx, sb, false, err);
	/* Claims go last: the tombstone marks them stale once the mark is gone. */
	if (r == 0)
		release_claims(ctx, sb);
	record_spares_fill(ctx, sb->id);
	return r;
}

/* RELEASER 0: free everything here. Else only begin (kill, tombstone), naming RELEASER
 * as the process that frees the rest. */
/* SIGKILL init, on a CPU other than the caller's. Its exit tears the sandbox's namespaces
 * down (mounts and their superblocks, the pid and ipc namespaces): 0.5-0.8 ms of kernel
 * work that, woken on the caller's CPU (this host packs tasks onto one vCPU), preempted
 * the caller before the answer to a DELETE. Moved to another CPU it runs beside the
 * answer. (At SCHED_IDLE instead, it ran after the answer but overlapped the next
 * create, which then waited on the locks it held: slower back to back.) The release,
 * which waits for it to be gone, is unchanged. */
static void kill_elsewhere(pid_t pid)
{
	cpu_set_t set;
	int here = sched_getcpu();
	if (here >= 0 && sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1) {
		CPU_CLR(here, &set);
		sched_setaffinity(pid, sizeof(set), &set);
	}
	kill(pid, SIGKILL);
}

static int destroy_id(sl_ctx *ctx, const char *id, const char *reason, bool allow_pooled,
		      pid_t releaser, sl_err *err)
{
	bool finish = releaser == 0;
	_cleanup_close_ int lk = -1;
	sl_sandbox sb;
	if (destroy_load(ctx, id, allow_pooled, &sb, &lk, err) < 0)
		return -1;
	if (!strcmp(sb.status, "terminated")) {
		/* An orphaned release (its releaser died): whoever destroys it again
		 * finishes it. */
		int r = 0;
		if (sb.releaser_pid && !pid_alive(sb.releaser_pid, sb.releaser_start))
			r = finish_release(ctx, &sb, err);
		else
			r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was already destroyed", id);
		sandbox_free(&sb);
		return r;
	}
	if (!strcmp(sb.status, "creating") && pid_alive(sb.creator_pid, sb.creator_start) &&
	    sb.creator_pid != getpid()) {
		sandbox_free(&sb);
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is still being created", id);
	}
	if (finish) {
		/* One go (the CLI): free everything, then the tombstone. A process that
		 * dies midway leaves a record that says what it was; rm again. */
		release_resources(ctx, &sb);
	} else if (pid_alive(sb.init_pid, sb.init_start)) {
		/* Begin: nothing in the sandbox runs another instruction after this. A
		 * frozen cgroup holds SIGKILL until thawed. */
		char cg[64];
		snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
		if (!strcmp(sb.status, "paused")) {
			sl_err fe = { 0 };
			cgroup_freeze(ctx->cg, cg, false, &fe);
		}
		kill_elsewhere(sb.init_pid);
	}
	snprintf(sb.status, sizeof(sb.status), "terminated");
	snprintf(sb.reason, sizeof(sb.reason), "%s", reason ? reason : "deleted");
	sb.terminated_ms = sl_now_ms();
	if (finish) {
		sb.init_pid = 0;
	} else {
		sb.releaser_pid = releaser;
		sb.releaser_start =
		    releaser == getpid() ? proc_self_start_time() : proc_start_time(releaser);
	}
	/* The daemon's tombstone is not fsynced: it answers the DELETE after this, and
	 * if a power loss takes the write with it, the sandbox comes back stopped, to be
	 * deleted again; nothing of it is lost. */
	int r = record_save(ctx, &sb, finish && !sb.ephemeral, err);
	if (r == 0 && finish)
		release_claims(ctx, &sb);
	sandbox_free(&sb);
	return r;
}

int sandbox_destroy(sl_ctx *ctx, const char *ref, const char *reason, sl_err *err)
{
	char id[32];
	if (resolve_ref(ctx, ref, id, sizeof(id), err) < 0)
		return -1;
	int r = destroy_id(ctx, id, reason, false, 0, err);
	if (r == 0)
		collect_if_due(ctx);
	return r;
}

int sandbox_destroy_begin(sl_ctx *ctx, const char *ref, const char *reason, char id[32],
			  sl_err *err)
{
	return sandbox_destroy_begin_for(ctx, ref, reason, getpid(), id, err);
}

int sandbox_destroy_begin_for(sl_ctx *ctx, const char *ref, const char *reason, pid_t releaser,
			      char id[32], sl_err *err)
{
	if (releaser <= 0)
		return sl_fail(err, SL_INVALID, 0, "destroy: no releaser");
	if (resolve_ref(ctx, ref, id, 32, err) < 0)
		return -1;
	return destroy_id(ctx, id, reason, false, releaser, err);
}

static int destroy_finish_locked(sl_ctx *ctx, const char *id, sl_err *err)
{
	_cleanup_close_ int lk = -1;
	sl_sandbox sb;
	if (destroy_load(ctx, id, true, &sb, &lk, err) < 0)
		return -1;
	int r = 0;
	if (!strcmp(sb.status, "terminated") && sb.releaser_pid)
		r = finish_release(ctx, &sb, err);
	sandbox_free(&sb);
	return r;
}

int sandbox_destroy_finish(sl_ctx *ctx, const char *id, sl_err *err)
{
	int r = destroy_finish_locked(ctx, id, err);
	if (r == 0)
		collect_if_due(ctx);
	return r;
}

/* store_layers_collect's question: does ID have a record? Only "not found" (no record
 * dir, or a record a crash left empty or zeroed) says no; a record that cannot be read
 * for another reason keeps its layer. A create makes its "creating" record before its
 * layer, so a live create's layer always has one. */
static bool has_record(void *arg, const char *id)
{
	sl_sandbox sb;
	sl_err e = { 0 };
	if (record_load(arg, id, &sb, &e) == 0) {
		sandbox_free(&sb);
		return true;
	}
	return e.kind != SL_NOTFOUND;
}

int sandbox_finish_orphans(sl_ctx *ctx, sl_err *err)
{
	char **ids;
	size_t nids;
	if (list_ids(ctx, &ids, &nids, err) < 0)
		return -1;
	int done = 0;
	for (size_t i = 0; i < nids; i++) {
		sl_sandbox sb;
		sl_err e = { 0 };
		if (record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		bool orphan_release = !strcmp(sb.status, "terminated") && sb.releaser_pid &&
				      !pid_alive(sb.releaser_pid, sb.releaser_start);
		bool orphan_pooled = !strcmp(sb.status, "pooled") &&
				     !pid_alive(sb.creator_pid, sb.creator_start);
		sandbox_free(&sb);
		if (orphan_release && destroy_id(ctx, ids[i], NULL, true, 0, &e) == 0)
			done++;
		else if (orphan_pooled && destroy_id(ctx, ids[i], "discarded", true, 0, &e) == 0) {
			remove_record_dir(ctx, ids[i]);
			done++;
		}
		if (e.kind)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", ids[i], e.msg);
	}
	free_ids(ids, nids);
	int layers = store_layers_collect(&ctx->cfg, has_record, ctx);
	if (layers > 0)
		sl_log(SL_LOG_INFO, "store: removed %d layer(s) a crash left without a record",
		       layers);
	return done;
}

/* ---- the pool ---- */

int sandbox_pool_discard(sl_ctx *ctx, const char *id, sl_err *err)
{
	if (destroy_id(ctx, id, "discarded", true, 0, err) < 0)
		return -1;
	remove_record_dir(ctx, id);
	return 0;
}

bool sandbox_poolable(const sl_create_opts *o)
{
	/* Everything here is fixed when init starts (hostname, limits, mounts, netns). */
	return !o->snapshot && !o->name && !o->cpu_millis && !o->memory && !o->disk && !o->pids &&
	       !o->nvolumes && !o->npackages && !o->net.enabled && !o->nhost_binds && !o->pooled;
}

int sandbox_resolve_image(sl_ctx *ctx, const char *image, char name[128], char digest[72],
			  sl_err *err)
{
	sl_image img;
	if (lookup_image(ctx, image, &img, err) < 0)
		return -1;
	snprintf(name, 128, "%s", img.name);
	snprintf(digest, 72, "%s", img.digest);
	return 0;
}

int sandbox_pool_take(sl_ctx *ctx, const char *id, const sl_create_opts *o, sl_sandbox *out,
		      sl_err *err)
{
	sl_image img;
	_cleanup_close_ int lk = -1;
	sl_sandbox sb;
	if (destroy_load(ctx, id, true, &sb, &lk, err) < 0)
		return -1;
	refresh_status(&sb);
	if (strcmp(sb.status, "pooled") != 0) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "pooled sandbox %s is %s", id, sb.status);
	}
	/* By the name asked for (one record read; a digest is a scan of every name), which
	 * must still be the pooled sandbox's image. */
	int r = lookup_image(ctx, o->image, &img, err);
	if (r == 0 && strcmp(img.digest, sb.digest) != 0)
		r = sl_fail(err, SL_NOTFOUND, 0, "pooled sandbox %s: its image is no longer %s", id,
			    o->image ? o->image : "the default");
	if (r < 0) {
		sandbox_free(&sb);
		return -1;
	}
	/* What a cold create would have recorded, from the create's options. */
	cJSON_Delete(sb.env);
	cJSON_Delete(sb.labels);
	sb.env = sb.labels = NULL;
	cJSON_Delete(sb.ports);
	sb.ports = NULL;
	new_preview_token(sb.preview_token);
	if (kv_object("env", o->env, &sb.env, err) < 0 ||
	    kv_object("labels", o->labels, &sb.labels, err) < 0 ||
	    ports_apply(&sb.ports, o->ports, o->nports, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	snprintf(sb.image, sizeof(sb.image), "%s", img.name);
	snprintf(sb.user, sizeof(sb.user), "%s", o->user ? o->user : img.user);
	snprintf(sb.workdir, sizeof(sb.workdir), "%s", o->workdir ? o->workdir : img.workdir);
	if (sb.workdir[0] != '/') {
		sandbox_free(&sb);
		return sl_fail(err, SL_INVALID, 0, "workingDirectory \"%s\" must be absolute",
			       sb.workdir);
	}
	sb.created_ms = sl_now_ms();
	sb.ephemeral = o->ephemeral;
	sb.idle_ms = o->idle_ms;
	sb.lifetime_ms = o->lifetime_ms;
	sb.exec_timeout_ms = o->exec_timeout_ms;
	sb.expires_ms = o->lifetime_ms ? deadline_after(sb.created_ms, o->lifetime_ms) : 0;
	snprintf(sb.status, sizeof(sb.status), "running");
	if (record_save_take(ctx, &sb, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	*out = sb;
	return 0;
}

int sandbox_discard(sl_ctx *ctx, const char *id, sl_err *err)
{
	if (sandbox_destroy(ctx, id, "discarded", err) < 0)
		return -1;
	remove_record_dir(ctx, id);
	return 0;
}

/* ---- lifecycle ---- */

/* Load under the sandbox's lock; the caller unlocks by closing *lk. */
static int load_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err)
{
	char id[32];
	*lk = -1;
	if (resolve_ref(ctx, ref, id, sizeof(id), err) < 0)
		return -1;
	*lk = sandbox_lock(ctx, id, err);
	if (*lk < 0 || record_load_visible(ctx, id, sb, err) < 0) {
		if (*lk >= 0)
			close(*lk);
		*lk = -1;
		return -1;
	}
	refresh_status(sb);
	return 0;
}

int sandbox_load_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err)
{
	return load_locked(ctx, ref, sb, lk, err);
}

int sandbox_thaw_if_running(sl_ctx *ctx, const char *id, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, id, &sb, &lk, err) < 0)
		return err->kind == SL_NOTFOUND ? 0 : -1;
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	int r = strcmp(sb.status, "running") ? 0 : cgroup_freeze(ctx->cg, cg, false, err);
	sandbox_free(&sb);
	return r;
}

static int want_status(const sl_sandbox *sb, const char *want, const char *verb, sl_err *err)
{
	if (!strcmp(sb->status, want))
		return 0;
	return sl_fail(err, !strcmp(sb->status, "terminated") ? SL_NOTFOUND : SL_CONFLICT, 0,
		       "sandbox %s is %s; only a %s sandbox can be %s", sb->id, sb->status, want,
		       verb);
}

/* pause and resume: the same move in two directions. */
static int set_frozen(sl_ctx *ctx, const char *ref, bool frozen, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	int r = frozen ? want_status(&sb, "running", "paused", err)
		       : want_status(&sb, "paused", "resumed", err);
	if (r == 0)
		r = cgroup_freeze(ctx->cg, cg, frozen, err);
	if (r == 0) {
		snprintf(sb.status, sizeof(sb.status), "%s", frozen ? "paused" : "running");
		r = record_save(ctx, &sb, true, err);
	}
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_pause(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return set_frozen(ctx, ref, true, out, err);
}

int sandbox_resume(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return set_frozen(ctx, ref, false, out, err);
}

int sandbox_stop(sl_ctx *ctx, const char *ref, int grace_ms, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (strcmp(sb.status, "running") && strcmp(sb.status, "paused") &&
	    strcmp(sb.status, "failed")) {
		int r = want_status(&sb, "running", "stopped", err);
		sandbox_free(&sb);
		return r;
	}
	stop_processes(ctx, &sb, grace_ms);
	char sock[PATH_MAX];
	state_run_dir(&ctx->cfg, sb.id, sock, sizeof(sock));
	strcat(sock, "/init.sock");
	unlink(sock);
	snprintf(sb.status, sizeof(sb.status), "stopped");
	sb.init_pid = 0;
	sb.init_start = 0;
	int r = record_save(ctx, &sb, true, err);
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_start(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (strcmp(sb.status, "stopped") && strcmp(sb.status, "failed")) {
		int r = want_status(&sb, "stopped", "started", err);
		sandbox_free(&sb);
		return r;
	}
	/* A failed init may have left its cgroup behind. */
	stop_processes(ctx, &sb, 0);
	int r = store_ensure(&ctx->cfg, err);
	if (r == 0)
		r = start_init(ctx, &sb, NULL, 0, NULL, NULL, err);
	if (r == 0) {
		snprintf(sb.status, sizeof(sb.status), "running");
		r = record_save(ctx, &sb, true, err);
	}
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_set_labels(sl_ctx *ctx, const char *ref, const cJSON *labels, sl_sandbox *out,
		       sl_err *err)
{
	if (!cJSON_IsObject(labels))
		return sl_fail(err, SL_INVALID, 0, "labels: must be an object of strings");
	const cJSON *it;
	cJSON_ArrayForEach(it, labels) if (!cJSON_IsString(it)) return sl_fail(
		err, SL_INVALID, 0, "labels.%s: must be a string", it->string);
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (!strcmp(sb.status, "terminated")) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	}
	cJSON_Delete(sb.labels);
	sb.labels = cJSON_Duplicate(labels, 1);
	int r = record_save(ctx, &sb, true, err);
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_set_timeouts(sl_ctx *ctx, const char *ref, int64_t lifetime_ms, int64_t idle_ms,
			 int64_t exec_ms, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (!strcmp(sb.status, "terminated")) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	}
	if (lifetime_ms >= 0) {
		sb.lifetime_ms = lifetime_ms;
		sb.expires_ms = lifetime_ms ? deadline_after(sl_now_ms(), (uint64_t)lifetime_ms) : 0;
	}
	if (idle_ms >= 0)
		sb.idle_ms = idle_ms;
	if (exec_ms >= 0)
		sb.exec_timeout_ms = exec_ms;
	int r = record_save(ctx, &sb, true, err);
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_set_network(sl_ctx *ctx, const char *ref, const sl_net_opts *net, sl_sandbox *out,
			sl_err *err)
{
	cJSON *allow = NULL, *deny = NULL;
	if (net_lists(net, &allow, &deny, err) < 0)
		return -1;
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0) {
		cJSON_Delete(allow);
		cJSON_Delete(deny);
		return -1;
	}
	int r = 0;
	if (!strcmp(sb.status, "terminated"))
		r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	else if (net->enabled != sb.net_enabled)
		r = sl_fail(err, SL_INVALID, 0,
			    "network.enabled: sandbox %s was created with its network %s; that "
			    "cannot change",
			    sb.id, sb.net_enabled ? "on" : "off");
	if (r == 0 && allow) {
		cJSON_Delete(sb.net_allow);
		sb.net_allow = steal_ptr(&allow);
	}
	if (r == 0 && deny) {
		cJSON_Delete(sb.net_deny);
		sb.net_deny = steal_ptr(&deny);
	}
	cJSON_Delete(allow);
	cJSON_Delete(deny);
	/* A running (or paused) sandbox's chain changes now; a stopped one's at start. */
	if (r == 0 && sb.net_enabled &&
	    (!strcmp(sb.status, "running") || !strcmp(sb.status, "paused"))) {
		sl_net_sandbox ns;
		sl_cidr al[SL_NET_MAX_RULES], de[SL_NET_MAX_RULES];
		r = net_spec(&sb, &ns, al, de, err);
		if (r == 0)
			r = net_set_rules(&ctx->cfg, &ns, err);
	}
	if (r == 0)
		r = record_save(ctx, &sb, true, err);
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_set_ports(sl_ctx *ctx, const char *ref, const sl_port_setting *set, size_t n,
		      sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	int r = 0;
	if (!strcmp(sb.status, "terminated"))
		r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	if (r == 0)
		r = ports_apply(&sb.ports, set, n, err);
	if (r == 0)
		r = record_save(ctx, &sb, true, err);
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_preview_token(sl_ctx *ctx, const sl_sandbox *sb, char token[65], sl_err *err)
{
	if (sb->preview_token[0]) {
		memcpy(token, sb->preview_token, 65);
		return 0;
	}
	sl_sandbox cur;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, sb->id, &cur, &lk, err) < 0)
		return -1;
	int r = 0;
	if (!cur.preview_token[0]) {
		new_preview_token(cur.preview_token);
		r = record_save(ctx, &cur, true, err);
	}
	if (r == 0)
		memcpy(token, cur.preview_token, 65);
	sandbox_free(&cur);
	return r;
}

/* ---- commands ---- */

int proc_started(sl_proc *p, const char *cmd, sl_err *err)
{
	struct sl_rep rep;
	int passed = -1;
	int r = initctl_recv(p->conn, &rep, &passed, 30000, err);
	if (r == 1)
		return sl_fail(err, SL_TIMEOUT, 0, "sandbox %s did not start the command in 30 s",
			       p->sandbox_id);
	if (r < 0)
		return -1;
	if (rep.hdr.type == SL_REP_ERROR) {
		if (passed >= 0)
			close(passed);
		/* rep.pid carries the stage that failed; 4 = exec itself. */
		if (rep.pid == 4 && rep.status == ENOENT)
			return sl_fail(err, SL_NOTFOUND, 0, "%s: command not found", cmd);
		return sl_fail(err, SL_INVALID, 0, "%s: %s", cmd, rep.msg);
	}
	if (rep.hdr.type != SL_REP_STARTED || rep.pid <= 1) {
		if (passed >= 0)
			close(passed);
		return sl_fail(err, SL_INTERNAL, 0, "unexpected reply from sandbox %s",
			       p->sandbox_id);
	}
	p->pid = rep.pid;
	p->master = passed;
	return 0;
}

int sandbox_spawn(sl_ctx *ctx, const sl_sandbox *sb, const sl_spawn *sp, sl_proc *p,
		  sl_err *err)
{
	proc_init(p, sb->id);
	if (!strcmp(sb->status, "paused"))
		return sl_fail(err, SL_CONFLICT, 0,
			       "sandbox %s is paused; resume it first (the API also takes "
			       "?autoResume=1)",
			       sb->id);
	if (strcmp(sb->status, "running") != 0)
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is %s, not running", sb->id,
			       sb->status);
	if (initctl_sock_path(ctx, sb->id, p->init_sock, sizeof(p->init_sock), err) < 0)
		return -1;
	_cleanup_close_ int fd = initctl_connect_path(p->init_sock, sb->id, err);
	if (fd < 0)
		return -1;
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	sl_err e2 = { 0 };
	cgroup_oom_kills(ctx->cg, cg, &p->oom_before, &e2);
	if (spawn_send(fd, sb, sp, err) < 0)
		return -1;
	p->conn = steal_fd(&fd);
	if (proc_started(p, sp->argv[0], err) < 0) {
		proc_close(p);
		return -1;
	}
	return 0;
}

int proc_wait(sl_proc *p, int timeout_ms, int *wstatus, sl_err *err)
{
	int64_t deadline = timeout_ms < 0 ? 0 : sl_now_ms() + timeout_ms;
	for (;;) {
		int left = -1;
		if (timeout_ms >= 0) {
			int64_t l = deadline - sl_now_ms();
			left = l < 0 ? 0 : (int)l;
		}
		struct sl_rep rep;
		int passed = -1;
		int r = initctl_recv(p->conn, &rep, &passed, left, err);
		if (passed >= 0)
			close(passed);
		if (r != 0)
			return r;
		if (rep.hdr.type == SL_REP_EXITED && rep.pid == p->pid) {
			*wstatus = rep.status;
			return 0;
		}
	}
}

int proc_signal(sl_proc *p, int sig, bool group, sl_err *err)
{
	struct sl_req_signal rq = { .hdr = { SL_PROTO_MAGIC, SL_REQ_SIGNAL },
				    .pid = p->pid,
				    .sig = sig,
				    .group = group };
	/* A separate connection, so the reply cannot mix with the exit report. */
	_cleanup_close_ int fd = initctl_connect_path(p->init_sock, p->sandbox_id, err);
	if (fd < 0)
		return sl_wrap(err, "signal");
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq))
		return sl_sysfail(err, "send signal request");
	struct sl_rep rep;
	int passed = -1;
	int r = initctl_recv(fd, &rep, &passed, 5000, err);
	if (passed >= 0)
		close(passed);
	if (r != 0)
		return r < 0 ? -1 : sl_fail(err, SL_TIMEOUT, 0, "signal: init did not answer");
	if (rep.hdr.type == SL_REP_ERROR && rep.status != ESRCH)
		return sl_fail(err, SL_INTERNAL, rep.status, "signal %d to pid %d", sig, p->pid);
	return 0;
}

bool proc_oom_killed(sl_ctx *ctx, sl_proc *p)
{
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", p->sandbox_id);
	uint64_t n = 0;
	sl_err e = { 0 };
	return cgroup_oom_kills(ctx->cg, cg, &n, &e) == 0 && n > p->oom_before;
}

void proc_close(sl_proc *p)
{
	if (p->conn >= 0)
		close(p->conn);
	if (p->master >= 0)
		close(p->master);
	p->conn = p->master = -1;
}

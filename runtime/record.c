/* record.c — a sandbox's record on disk (<state>/sandboxes/<id>/sandbox.json): JSON in
 * and out, load, save (durable or soon), the per-sandbox lock, and the status its
 * processes give it. Everything above reads and writes sandboxes through here. */
#include "record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fsutil.h"
#include "idset.h"
#include "launch.h"
#include "quantity.h"
#include "record_codec.h"
#include "spares.h"
#include "state.h"

#define RECORD_MAX (1 << 20)

static const char *const status_names[] = {
	[SL_ST_UNKNOWN] = "",		[SL_ST_CREATING] = "creating",
	[SL_ST_RUNNING] = "running",	[SL_ST_STOPPED] = "stopped",
	[SL_ST_PAUSED] = "paused",	[SL_ST_TERMINATED] = "terminated",
	[SL_ST_FAILED] = "failed",	[SL_ST_POOLED] = "pooled",
	[SL_ST_BROKEN] = "broken",	[SL_ST_HIBERNATED] = "hibernated",
};

const char *sandbox_status_name(enum sl_status s)
{
	return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s] : "";
}

int sandbox_status_parse(const char *name, enum sl_status *out)
{
	/* "broken" is never read from a record: it says the record could not be. */
	for (size_t i = SL_ST_UNKNOWN + 1; i <= SL_ST_HIBERNATED; i++)
		if (i != SL_ST_BROKEN && name && !strcmp(name, status_names[i])) {
			*out = (enum sl_status)i;
			return 0;
		}
	*out = SL_ST_UNKNOWN;
	return -1;
}

static const char *const on_lifetime_names[] = {
    [SL_LIFE_DELETE] = "delete",
    [SL_LIFE_PAUSE] = "pause",
    [SL_LIFE_STOP] = "stop",
    [SL_LIFE_HIBERNATE] = "hibernate",
};

/* A value no build wrote (a damaged record) reads as the default, "delete". */
const char *sandbox_on_lifetime_name(enum sl_on_lifetime a)
{
	return (unsigned)a < sizeof(on_lifetime_names) / sizeof(on_lifetime_names[0])
		   ? on_lifetime_names[a]
		   : on_lifetime_names[SL_LIFE_DELETE];
}

enum sl_on_lifetime sandbox_idle_action(bool on_idle_set, enum sl_on_lifetime on_idle,
					bool ephemeral)
{
	if (on_idle_set)
		return on_idle;
	return ephemeral ? SL_LIFE_DELETE : SL_LIFE_STOP;
}

int sandbox_on_lifetime_parse(const char *name, enum sl_on_lifetime *out)
{
	for (size_t i = 0; i < sizeof(on_lifetime_names) / sizeof(on_lifetime_names[0]); i++)
		if (name && !strcmp(name, on_lifetime_names[i])) {
			*out = (enum sl_on_lifetime)i;
			return 0;
		}
	return -1;
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
	cJSON_Delete(sb->net_open);
	cJSON_Delete(sb->ports);
	cJSON_Delete(sb->secret_env);
	cJSON_Delete(sb->secret_files);
	sb->secret_env = sb->secret_files = NULL;
	sb->env = sb->labels = sb->volumes = sb->packages = sb->net_allow = sb->net_deny = NULL;
	sb->net_open = NULL;
	sb->ports = NULL;
}

void sandbox_free_list(sl_sandbox *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_free(&list[i]);
	free(list);
}

/* ---- records ---- */

/* <state>/sandboxes/<id>/sandbox.json */
void record_path(const sl_ctx *ctx, const char *id, char p[PATH_MAX])
{
	state_sandbox_dir(&ctx->cfg, id, p, PATH_MAX);
	strcat(p, "/sandbox.json");
}

int record_load(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
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

int record_load_or_broken(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
{
	sl_err why = { 0 };
	if (record_load(ctx, id, sb, &why) == 0)
		return 0;
	if (why.kind == SL_NOTFOUND) {
		*err = why;
		return -1;
	}
	memset(sb, 0, sizeof(*sb));
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->status = SL_ST_BROKEN;
	snprintf(sb->reason, sizeof(sb->reason), "record unreadable: %s", why.msg);
	char p[PATH_MAX];
	record_path(ctx, id, p);
	struct stat st;
	if (stat(p, &st) == 0)
		sb->created_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
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
static int record_write(const sl_ctx *ctx, const sl_sandbox *sb, enum rec_write how, sl_err *err)
{
	char p[PATH_MAX];
	record_path(ctx, sb->id, p);
	_cleanup_free_ char *s = record_encode(sb);
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "serialise %s", sb->id);
	if (how == REC_VOLATILE || !ctx->sync_soon) {
		if (state_write_record(p, s, strlen(s), how != REC_VOLATILE, err) < 0)
			return -1;
	} else {
		/* The daemon's: answer now, durable ~20 ms later (api/pool.c, the syncer). */
		if (state_write_record_soon(p, s, strlen(s), err) < 0)
			return -1;
		ctx->sync_soon(ctx->sync_soon_arg, sb->id);
	}
	if (ctx->record_changed)
		ctx->record_changed(ctx->record_changed_arg, sb->id);
	return 0;
}

int record_save(const sl_ctx *ctx, const sl_sandbox *sb, bool durable, sl_err *err)
{
	return record_write(ctx, sb, durable ? REC_DURABLE : REC_VOLATILE, err);
}

/* The sandbox's lock: a flock on its record dir (SL_NOTFOUND once it is gone). It
 * serialises the record's writers (state_write_record) and the lifecycle calls. */
int record_lock(const sl_ctx *ctx, const char *id, sl_err *err)
{
	char dir[PATH_MAX];
	state_sandbox_dir(&ctx->cfg, id, dir, sizeof(dir));
	return state_lock_dir(dir, err);
}

/* <state>/spare-records/.new-<id>: a new record dir while its first record is written. */
static void record_new_dir(const sl_ctx *ctx, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/spare-records/.new-%s", ctx->cfg.state_dir, id);
}

/* The new sandbox's record dir is taken (a spare) or made out of the listing, its first
 * record written in it, and then renamed into <state>/sandboxes/<id>: a listing sees the
 * sandbox with its record or not at all. Renamed into place first and written after, a
 * create killed between the two left a record dir with an empty record, which no daemon
 * start removed (the load suite's kill -9 of its daemon, twice in some 20 runs). A kill
 * now leaves spare-records/.new-<id>, which record_collect_gone removes. */
int record_create(const sl_ctx *ctx, const sl_sandbox *sb, sl_err *err)
{
	char tmp[PATH_MAX], dir[PATH_MAX], p[PATH_MAX];
	record_new_dir(ctx, sb->id, tmp, sizeof(tmp));
	state_sandbox_dir(&ctx->cfg, sb->id, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/sandbox.json", tmp);
	_cleanup_free_ char *s = record_encode(sb);
	if (!s)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "serialise %s", sb->id);
	if (spare_record_dir(ctx, tmp) < 0)
		return sl_sysfail(err, "create %s", tmp);
	if (state_write_record(p, s, strlen(s), false, err) < 0)
		goto drop;
	if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0) {
		sl_sysfail(err, "create %s", dir);
		goto drop;
	}
	return 0;
drop:
	fs_remove_tree(tmp, NULL);
	return -1;
}

/* record_save from a create, which does not hold the sandbox's lock otherwise: a
 * destroy may come meanwhile. */
int record_save_creating(const sl_ctx *ctx, const sl_sandbox *sb, bool durable, sl_err *err)
{
	_cleanup_close_ int lk = record_lock(ctx, sb->id, err);
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
int record_load_visible(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err)
{
	if (record_load(ctx, id, sb, err) < 0)
		return -1;
	if (sb->status != SL_ST_POOLED)
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
void record_boot_id(char *buf, size_t len)
{
	pthread_once(&boot_id_once, boot_id_read);
	snprintf(buf, len, "%s", boot_id_cache);
}

bool record_pid_alive(pid_t pid, uint64_t start)
{
	return pid > 0 && start && proc_start_time(pid) == start;
}

/* The truth behind a record: an init that died makes a running sandbox "failed";
 * a create whose process died midway is "failed" too (rm cleans it up). RUNNING: look
 * at the init of a "running" record too (else it is taken on its word). */
void record_refresh_status(sl_sandbox *sb, bool running)
{
	bool is_running = sb->status == SL_ST_RUNNING;
	if ((is_running && running) || sb->status == SL_ST_PAUSED || sb->status == SL_ST_POOLED) {
		char boot[64];
		record_boot_id(boot, sizeof(boot));
		if (sb->boot_id[0] && strcmp(boot, sb->boot_id) != 0)
			sb->status = SL_ST_STOPPED;
		else if (!record_pid_alive(sb->init_pid, sb->init_start))
			sb->status = SL_ST_FAILED;
	} else if (sb->status == SL_ST_CREATING) {
		if (!record_pid_alive(sb->creator_pid, sb->creator_start))
			sb->status = SL_ST_FAILED;
	}
}

int record_list_ids(const sl_ctx *ctx, char ***ids, size_t *n, sl_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sandboxes", ctx->cfg.state_dir);
	return state_list_dir(p, "sbx_", "", ids, n, err);
}

/* The ids in <state>/sandboxes and a zeroed array of as many ELEM-byte entries. */
int record_ids_and_array(const sl_ctx *ctx, char ***ids, size_t *nids, size_t elem, void **arr,
			 sl_err *err)
{
	*arr = NULL;
	if (record_list_ids(ctx, ids, nids, err) < 0)
		return -1;
	if (!(*arr = calloc(*nids ? *nids : 1, elem))) {
		state_free_names(*ids, *nids);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "list sandboxes");
	}
	return 0;
}

/* Ids whose record was a tombstone when last read: a tombstone never comes back to
 * life, so listings of live sandboxes (sandbox_list_deadlines: the daemon's
 * once-a-second deadline sweep, the health count) need not read it again. Per process,
 * bounded; a miss costs one read. An id leaves it with its record dir (record_remove_dir);
 * records other processes removed stay until the set is full, when the next sweep starts
 * it over. Until session 20 nothing ever left it: after 32768 tombstones in a daemon's
 * life every sweep read every tombstone again (~2000 reads a second with 5000 kept, 13%
 * of a CPU on an idle daemon). */
static sl_idset dead_set = SL_IDSET_INIT(65536);

/* Renamed out of the listing first (one rename: a listing sees the record or nothing),
 * then removed: a process killed in between leaves <state>/sandboxes/.gone-<id>, which
 * no listing reads and record_collect_gone removes. Removed in place before this, a
 * record half removed read as a sandbox with no status (a tombstone collected while the
 * load suite's daemon was killed -9). */
void record_remove_dir(const sl_ctx *ctx, const char *id)
{
	char p[PATH_MAX], gone[PATH_MAX];
	state_sandbox_dir(&ctx->cfg, id, p, sizeof(p));
	snprintf(gone, sizeof(gone), "%s/sandboxes/.gone-%s", ctx->cfg.state_dir, id);
	fs_remove_tree(rename(p, gone) == 0 ? gone : p, NULL);
	idset_del(&dead_set, id);
}

/* What record_create left when its process was killed: spare-records/.new-<id> whose
 * creator is gone (or whose record never got written, a minute on). */
static int collect_new(const sl_ctx *ctx)
{
	char dir[PATH_MAX], p[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/spare-records", ctx->cfg.state_dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, ".new-", 5))
			continue;
		snprintf(p, sizeof(p), "%s/%s/sandbox.json", dir, e->d_name);
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		sl_err le = {0};
		sl_sandbox sb;
		bool dead;
		if (state_read_record(p, RECORD_MAX, &data, &len, &le) == 0 && len &&
		    record_decode(data, p, &sb, &le) == 0) {
			dead = !record_pid_alive(sb.creator_pid, sb.creator_start);
			sandbox_free(&sb);
		} else {
			struct stat st;
			dead = stat(p, &st) < 0 || time(NULL) - st.st_mtime > 60;
		}
		if (dead) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			fs_remove_tree(p, NULL);
			n++;
		}
	}
	closedir(d);
	return n;
}

int record_collect_gone(const sl_ctx *ctx)
{
	char dir[PATH_MAX], p[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/sandboxes", ctx->cfg.state_dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ".gone-", 6)) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			fs_remove_tree(p, NULL);
			n++;
		}
	closedir(d);
	return n + collect_new(ctx);
}

bool record_dead_known(const char *id)
{
	return idset_has(&dead_set, id);
}

void record_dead_add(const char *id)
{
	idset_add(&dead_set, id);
}

int record_kv_check(const char *field, const cJSON *o, sl_err *err)
{
	bool env = !strcmp(field, "env");
	size_t max_n = env ? RECORD_ENV_MAX : RECORD_LABELS_MAX;
	size_t max_bytes = env ? RECORD_ENV_BYTES : RECORD_LABELS_BYTES;
	size_t n = 0, bytes = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		n++;
		bytes += strlen(it->string) + (cJSON_IsString(it) ? strlen(it->valuestring) : 0);
		if (strlen(it->string) > 255)
			return sl_fail(err, SL_INVALID, 0, "%s: key \"%.40s...\" is over 255 bytes",
				       field, it->string);
	}
	if (n > max_n)
		return sl_fail(err, SL_INVALID, 0, "%s: %zu entries; at most %zu", field, n, max_n);
	if (bytes > max_bytes)
		return sl_fail(err, SL_INVALID, 0, "%s: %zu bytes of keys and values; at most %zu",
			       field, bytes, max_bytes);
	return 0;
}

int record_kv_object(const char *field, const char *const *kv, cJSON **out, sl_err *err)
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
	if (record_kv_check(field, o, err) < 0) {
		cJSON_Delete(o);
		return -1;
	}
	*out = o;
	return 0;
}

/* The sandbox's lock and record for a destroy or a pool take; pooled ones only when
 * ALLOW_POOLED. */
int record_lock_load(sl_ctx *ctx, const char *id, bool allow_pooled, sl_sandbox *sb, int *lk,
		     sl_err *err)
{
	*lk = record_lock(ctx, id, err);
	if (*lk < 0)
		return -1;
	if ((allow_pooled ? record_load(ctx, id, sb, err) : record_load_visible(ctx, id, sb, err)) < 0)
		return -1;
	return 0;
}

/* Half full, or more than twice the ids a full listing just found in it (the rest are
 * ids of records removed since: collected tombstones): start the set afresh. */
void record_dead_forget_stale(size_t found)
{
	size_t n = idset_count(&dead_set);
	if (n >= dead_set.cap / 2 || n > 2 * found + 64)
		idset_clear(&dead_set);
}

/* ---- ports (docs/api.md, "Ports") ---- */

void record_new_preview_token(char out[65])
{
	unsigned char r[32];
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		abort(); /* no entropy: tokens could be guessed */
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

int record_ports_apply(cJSON **ports, const sl_port_setting *set, size_t n, sl_err *err)
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

int record_request_host(const char *host, char out[256], sl_err *err)
{
	size_t n = host ? strlen(host) : 0;
	out[0] = '\0';
	if (n >= 256)
		return sl_fail(err, SL_INVALID, 0, "requestHost: at most 255 characters, not %zu",
			       n);
	for (size_t i = 0; i < n; i++)
		if (host[i] <= ' ' || host[i] > '~')
			return sl_fail(err, SL_INVALID, 0,
				       "requestHost: character %zu is not visible ASCII (a Host "
				       "header has no spaces or control characters)",
				       i + 1);
	memcpy(out, host ? host : "", n + 1);
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

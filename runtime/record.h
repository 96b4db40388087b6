/* record.h — a sandbox's record: the struct, its JSON (the API's Sandbox shape and the
 * record on disk, <state>/sandboxes/<id>/sandbox.json), load/save/lock, the status a
 * record's processes say it has, and the ids of every record. */
#ifndef SANDLOT_RECORD_H
#define SANDLOT_RECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "cgroup.h"
#include "ctx.h"
#include "err.h"
#include "owner.h"

/* A sandbox's status. The record and the JSON keep its name (sandbox_status_name), the
 * same strings as ever. */
enum sl_status {
	SL_ST_UNKNOWN, /* a record naming none of these (read as "") */
	SL_ST_CREATING,
	SL_ST_RUNNING,
	SL_ST_STOPPED,
	SL_ST_PAUSED,
	SL_ST_TERMINATED,
	SL_ST_FAILED,
	SL_ST_POOLED, /* the daemon's, hidden until a create takes it */
	SL_ST_BROKEN, /* never on disk: a record that cannot be read (record_load_or_broken) */
	/* Its processes in CRIU images on disk, none running (hibernate.c); it has no cgroup
	 * and no init until a resume. Appended: the values above are unchanged. */
	SL_ST_HIBERNATED,
};
/* "creating", "running", ...; "" for SL_ST_UNKNOWN. */
const char *sandbox_status_name(enum sl_status s);
/* The status NAME names: 0, or -1 (and *out SL_ST_UNKNOWN) when none. */
int sandbox_status_parse(const char *name, enum sl_status *out);

enum sl_on_lifetime {
	SL_LIFE_DELETE = 0, /* every record made before the choice existed */
	SL_LIFE_PAUSE,
	SL_LIFE_STOP,
	/* CRIU's dump, else the freezer's pause (park.h); appended, the values above are
	 * unchanged in records. */
	SL_LIFE_HIBERNATE,
};
/* "delete", "pause", "stop", "hibernate"; and back: 0, or -1 when NAME is none of them.
 * The same choices say what an idle timeout does (timeout.onIdle). */
const char *sandbox_on_lifetime_name(enum sl_on_lifetime a);
int sandbox_on_lifetime_parse(const char *name, enum sl_on_lifetime *out);
/* What an idle timeout does to a sandbox of these settings. */
enum sl_on_lifetime sandbox_idle_action(bool on_idle_set, enum sl_on_lifetime on_idle,
					bool ephemeral);

typedef struct sl_sandbox {
	char id[32];
	char name[64];
	enum sl_status status;
	char image[128];
	char digest[72];
	int64_t created_ms;
	sl_limits limits;
	uint64_t disk_bytes;
	cJSON *env;    /* object K -> V */
	/* Secrets by reference only (secret.h): ENV_NAME -> secret name, and file path
	 * (under SECRET_FILES_DIR) -> secret name. Their values are never in the record:
	 * opened from the owner's store when a process starts or init is launched. */
	cJSON *secret_env, *secret_files;
	cJSON *labels; /* object k -> v */
	char user[64];
	char workdir[256];
	bool ephemeral;
	/* Created with "hibernate": true: launched so that CRIU can dump it (launch.c,
	 * launch_hib.c; docs/hibernate.md). */
	bool hibernate;
	uint32_t uid_base;
	pid_t init_pid;
	uint64_t init_start;
	pid_t creator_pid;
	uint64_t creator_start;
	int64_t terminated_ms;
	char reason[256]; /* why it ended, or why it is broken */
	char boot_id[40]; /* the boot its init was started in */
	char snapshot[32]; /* the snapshot it was created from, or "" */
	char forked_from[32]; /* the sandbox it is a fork of, or "" */
	/* What happens once it has been stopped a while (Daytona's intervals, in minutes as
	 * Daytona sends them; only when stop_policy): archived after auto_archive_min (0:
	 * the most, 30 days), deleted after auto_delete_min (-1: never, 0: at the stop).
	 * Archived: stopped with its files kept (memory is not kept: no hibernate yet). */
	bool stop_policy, archived;
	int64_t auto_archive_min, auto_delete_min;
	int64_t stopped_ms; /* when it was last stopped (0: running since) */
	cJSON *volumes;	   /* array of {name, mountPath, readOnly} */
	/* Timeouts in ms (0: none). expires_ms: the lifetime deadline (unix ms), kept
	 * in the record so a daemon that was down when it passed acts on it at start. */
	uint64_t idle_ms, lifetime_ms, exec_timeout_ms;
	int64_t expires_ms;
	/* What its lifetime's end does (E2B's onTimeout, /v1's timeout.onLifetime): destroy
	 * it, pause it (memory kept) or stop it (files kept); the deadline is dropped when it
	 * pauses or stops. auto_resume: a façade call that needs it running resumes it. */
	enum sl_on_lifetime on_lifetime;
	bool auto_resume;
	/* What its idle timeout does (timeout.onIdle), when on_idle_set; otherwise what it
	 * always did: stop it, or destroy it when ephemeral (sandbox_idle_action). */
	enum sl_on_lifetime on_idle;
	bool on_idle_set;
	cJSON *packages; /* array of {name, version?, manager} installed at create */
	/* Network (docs/network.md): a lease kept from create to destroy (also while
	 * stopped); allow/deny are arrays of normalised CIDR strings. */
	bool net_enabled;
	char net_addr[16], net_gateway[16], net_subnet[20];
	cJSON *net_allow, *net_deny;
	/* Private ranges opened to this sandbox alone, not shown by the API: a package
	 * install sandbox's mirrors (packages.c). NULL: none. */
	cJSON *net_open;
	/* Ports (docs/api.md, "Ports"): {"8000": {"public": true}, "*": ...} for the ports
	 * the relays and the preview proxy open to every local user; preview_token (64
	 * hex chars, random, internal) is the credential for the others. */
	cJSON *ports;
	char preview_token[65];
	/* The Host header the relays and the preview proxy give every HTTP request they
	 * pass in ("" the request's own); "${PORT}" in it stands for the port (E2B's
	 * maskRequestHost). Set at create. */
	char request_host[256];
	/* A tombstone whose host resources are still being freed (sandbox_destroy_begin):
	 * the process doing it. Its claims stay taken until it is done. */
	pid_t releaser_pid;
	uint64_t releaser_start;
	/* The API key that made it (owner.h): "" the admin's, and every record older than
	 * keys. Its executions, files and ports are its owner's too. */
	char owner[SL_OWNER_LEN];
} sl_sandbox;

/* One port's setting at create or PATCH: port 1-65535, or SL_PORT_ALL for every port. */
#define SL_PORT_ALL  0
#define SL_MAX_PORTS 64
typedef struct sl_port_setting {
	unsigned port;
	bool public_port;
} sl_port_setting;
/* A new preview token: 32 random bytes in hex, derived from nothing. */
void record_new_preview_token(char out[65]);
/* Apply SET to the ports object *PORTS (made when absent): public ports get an entry,
 * private ones (the default) lose theirs. */
int record_ports_apply(cJSON **ports, const sl_port_setting *set, size_t n, sl_err *err);
/* A create's request host (record.h, request_host) checked into OUT: NULL or "" none;
 * else 1-255 visible ASCII characters (no space or control: it becomes a header line). */
int record_request_host(const char *host, char out[256], sl_err *err);
/* Is PORT of SB open to every local user? */
bool sandbox_port_public(const sl_sandbox *sb, unsigned port);

void sandbox_free(sl_sandbox *sb);
/* A record freed at the end of its scope; initialise it ({0}): a failed load may leave
 * it untouched. */
#define _cleanup_sandbox_ __attribute__((cleanup(sandbox_free)))
void sandbox_free_list(sl_sandbox *list, size_t n);
/* Make sandbox ID's record durable (what ctx->sync_soon was handed). */
int sandbox_sync_record(sl_ctx *ctx, const char *id, sl_err *err);

/* ---- for the runtime's own modules ---- */

/* <state>/sandboxes/<id>/sandbox.json */
void record_path(const sl_ctx *ctx, const char *id, char p[PATH_MAX]);
/* SL_NOTFOUND when there is no record (yet: an empty one reads so too). */
int record_load(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err);
/* The same, but a record that exists and cannot be read (not JSON, over 1 MiB, a schema
 * this binary does not know, another id) is not an error: SB is a stand-in with its id,
 * status SL_ST_BROKEN, reason "record unreadable: <why>" and the record's mtime as
 * created_ms, so that it can be listed and deleted (sandbox_destroy_id). */
int record_load_or_broken(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err);
/* The same, with pooled sandboxes (the daemon's) "not found". */
int record_load_visible(const sl_ctx *ctx, const char *id, sl_sandbox *sb, sl_err *err);
/* Write the record; DURABLE: fsynced (in a daemon, soon after: record_write). */
int record_save(const sl_ctx *ctx, const sl_sandbox *sb, bool durable, sl_err *err);
/* A new sandbox's record dir with its first record, placed in one rename (record.c). */
int record_create(const sl_ctx *ctx, const sl_sandbox *sb, sl_err *err);
/* record_save under the sandbox's lock, for a create (which does not hold it). */
int record_save_creating(const sl_ctx *ctx, const sl_sandbox *sb, bool durable, sl_err *err);
/* The sandbox's lock: a flock on its record dir (SL_NOTFOUND once it is gone); the fd. */
int record_lock(const sl_ctx *ctx, const char *id, sl_err *err);
/* The lock (*lk) and the record of ID; pooled ones only when ALLOW_POOLED. */
int record_lock_load(sl_ctx *ctx, const char *id, bool allow_pooled, sl_sandbox *sb, int *lk,
		     sl_err *err);
/* The kernel's boot id, read once per process. */
void record_boot_id(char *buf, size_t len);
/* Is the process a record names (pid and start time) still that process? */
bool record_pid_alive(pid_t pid, uint64_t start);
/* The status the record's processes give it (a dead init: "failed"; another boot:
 * "stopped"). RUNNING: look at the init of a "running" record too. */
void record_refresh_status(sl_sandbox *sb, bool running);
/* "K=V" strings as a JSON object (env, labels); FIELD names them in errors. */
/* What a record may hold of env and labels (a 400 above it, naming the field and the
 * limit): far under the record's own cap (1 MiB), which a record must never pass or it
 * could not be read back. */
#define RECORD_ENV_MAX	     1024
#define RECORD_ENV_BYTES     (256 * 1024)
#define RECORD_LABELS_MAX   256
#define RECORD_LABELS_BYTES (64 * 1024)
/* ENV or LABELS object O within those limits ("env" or "labels" as FIELD). */
int record_kv_check(const char *field, const cJSON *o, sl_err *err);
int record_kv_object(const char *field, const char *const *kv, cJSON **out, sl_err *err);

/* The ids in <state>/sandboxes (state_free_names frees them). */
int record_list_ids(const sl_ctx *ctx, char ***ids, size_t *n, sl_err *err);
/* The ids and a zeroed array of as many ELEM-byte entries. */
int record_ids_and_array(const sl_ctx *ctx, char ***ids, size_t *nids, size_t elem, void **arr,
			 sl_err *err);
/* Remove ID's record dir (and forget it as a tombstone). */
void record_remove_dir(const sl_ctx *ctx, const char *id);
/* This process's memory of ids whose record was a tombstone (record.c, dead_set). */
/* Remove what record_remove_dir left of records when its process was killed mid-way;
 * the count. At daemon start, with the other collectors (sandbox_finish_orphans). */
int record_collect_gone(const sl_ctx *ctx);
bool record_dead_known(const char *id);
void record_dead_add(const char *id);
/* After a listing that found FOUND of its ids in the set: forget them all if most of
 * the set is ids of records removed since (they would linger until it filled). */
void record_dead_forget_stale(size_t found);

#endif

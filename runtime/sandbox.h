/* sandbox.h — the engine's public calls: sandboxes (create, get, list, destroy) and
 * commands in them (spawn, wait, signal). State is owned here, one lock per sandbox,
 * so the CLI and the daemon can drive the same sandboxes. */
#ifndef SANDLOT_SANDBOX_H
#define SANDLOT_SANDBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "cgroup.h"
#include "config.h"
#include "err.h"
#include "seccomp.h"
#include "dirwatch.h"

typedef struct sl_ctx {
	sl_config cfg;
	sl_cgroup *cg;
	sl_bpf bpf; /* loaded on first create */
	bool bpf_loaded;
	/* The profile split for launch spares (seccomp_bpf_get_split), tried once by their
	 * filler: 1 made, -1 not (the profile cannot be split: a take installs all of it). */
	sl_bpf bpf_ahead, bpf_last;
	int bpf_split;
	pthread_mutex_t lock; /* guards the lazy bpf load (the daemon is threaded) */
	/* Set by the daemon: a durable sandbox record is renamed into place at once and
	 * handed here to be fsynced off the request's path (sandbox_sync_record). NULL:
	 * fsynced before the call returns. */
	void (*sync_soon)(void *arg, const char *id);
	void *sync_soon_arg;
	sl_dirwatches watches; /* idle inotify instances, for waiters of executions */
	/* Set by `sandlot run`'s releaser: the last network's release leaves the host side
	 * (bridge, table, ip_forward) up, and says so in net_left_up; the caller takes it
	 * down a little later if no network came meanwhile (net_down_if_idle). */
	bool net_linger, net_left_up;
	/* What only a daemon keeps made ahead for its creates: network namespaces with lo
	 * up and nothing else in them (launch_new_netns; the fds here, under lock) and, on
	 * cgroup v1, cgroups of the default limits (sandlot/.spare-*). It sets spares_keep
	 * (how many of each), fills them from a background thread (sandbox_spares_fill) and
	 * removes the cgroups when it stops (sandbox_spares_drop); spare_taken
	 * (spare_taken_arg) tells it a create took one. */
	int netns_spares[4];
	int netns_nspares, spares_keep;
	/* Sandbox inits made ahead, for creates of the default limits with no network
	 * and no volumes (launch.h, sl_launch_spare; sandbox.c, launch_spare_take). */
	struct sl_launch_spare *launch_spares[2];
	int launch_nspares;
	bool launch_spares_off; /* this kernel cannot take them (launch_spare_make) */
	unsigned launch_seq; /* names them */
	pthread_mutex_t spare_lock; /* the spare cgroups' takes and makes (sandbox.c) */
	void (*spare_taken)(void *arg);
	void *spare_taken_arg;
} sl_ctx;

int ctx_open(sl_ctx *ctx, sl_err *err);
void ctx_close(sl_ctx *ctx);
/* Make sandbox ID's record durable (what ctx->sync_soon was handed). */
int sandbox_sync_record(sl_ctx *ctx, const char *id, sl_err *err);
/* Make the record dirs and writable layers that creates take up to the stock kept, and
 * a daemon's network namespaces and cgroups up to ctx->spares_keep: for a background
 * thread (the daemon's syncer). Releases fill the record dirs and layers too. */
void sandbox_spares_fill(sl_ctx *ctx);
/* Remove this process's spare cgroups, and those of daemons that are gone (a daemon
 * stops with it, and starts with it for what a killed one left). */
void sandbox_spares_drop(sl_ctx *ctx);

typedef struct sl_sandbox {
	char id[32];
	char name[64];
	char status[16]; /* creating running stopped paused terminated failed */
	char image[128];
	char digest[72];
	int64_t created_ms;
	sl_limits limits;
	uint64_t disk_bytes;
	cJSON *env;    /* object K -> V */
	cJSON *labels; /* object k -> v */
	char user[64];
	char workdir[256];
	bool ephemeral;
	uint32_t uid_base;
	pid_t init_pid;
	uint64_t init_start;
	pid_t creator_pid;
	uint64_t creator_start;
	int64_t terminated_ms;
	char reason[64];
	char boot_id[40]; /* the boot its init was started in */
	char snapshot[32]; /* the snapshot it was created from, or "" */
	cJSON *volumes;	   /* array of {name, mountPath, readOnly} */
	/* Timeouts in ms (0: none). expires_ms: the lifetime deadline (unix ms), kept
	 * in the record so a daemon that was down when it passed acts on it at start. */
	uint64_t idle_ms, lifetime_ms, exec_timeout_ms;
	int64_t expires_ms;
	cJSON *packages; /* array of {name, version?, manager} installed at create */
	/* Network (docs/network.md): a lease kept from create to destroy (also while
	 * stopped); allow/deny are arrays of normalised CIDR strings. */
	bool net_enabled;
	char net_addr[16], net_gateway[16], net_subnet[20];
	cJSON *net_allow, *net_deny;
	/* Ports (docs/api.md, "Ports"): {"8000": {"public": true}, "*": ...} for the ports
	 * the relays and the preview proxy open to every local user; preview_token (64
	 * hex chars, random, internal) is the credential for the others. */
	cJSON *ports;
	char preview_token[65];
	/* A tombstone whose host resources are still being freed (sandbox_destroy_begin):
	 * the process doing it. Its claims stay taken until it is done. */
	pid_t releaser_pid;
	uint64_t releaser_start;
} sl_sandbox;

typedef struct sl_volume_spec {
	const char *source; /* a volume name (made on first use) or an allowed host dir */
	const char *mount_path;
	bool readonly;
} sl_volume_spec;

/* Network at create (issue 7). Off: a new netns with only lo. */
typedef struct sl_net_opts {
	bool enabled;
	const char *const *allow; /* CIDRs, NULL-terminated; NULL: whatever NAT reaches */
	const char *const *deny;  /* CIDRs refused even when allowed */
} sl_net_opts;

/* A package installed at create, before the sandbox starts (issue 7). */
typedef struct sl_package {
	const char *name;
	const char *version; /* NULL: the newest */
	const char *manager; /* "apt", "pip", "npm" */
} sl_package;

/* One port's setting at create or PATCH: port 1-65535, or SL_PORT_ALL for every port. */
#define SL_PORT_ALL   0
#define SL_MAX_PORTS 64
typedef struct sl_port_setting {
	unsigned port;
	bool public_port;
} sl_port_setting;

struct sl_spawn;
struct sl_proc;

typedef struct sl_create_opts {
	const char *image; /* NULL: "default", else "busybox" when default is absent */
	const char *snapshot; /* id or name: start with the snapshot's files (and image) */
	const char *name;
	uint64_t cpu_millis, memory, disk, pids; /* 0: the configured default */
	const char *const *env;			 /* "K=V", NULL-terminated; may be NULL */
	const char *const *labels;		 /* "k=v" */
	const char *user, *workdir;		 /* NULL: the image's */
	bool ephemeral;
	const sl_volume_spec *volumes;
	size_t nvolumes;
	uint64_t idle_ms, lifetime_ms, exec_timeout_ms; /* 0: none */
	sl_net_opts net;
	const sl_package *packages;
	size_t npackages;
	const sl_port_setting *ports; /* none: every port private */
	size_t nports;
	/* Internal (package installs): trusted host dirs mounted for this start only,
	 * not recorded and not checked against the host-mount allow-list. */
	const sl_volume_spec *host_binds;
	size_t nhost_binds;
	/* Internal (the daemon's pool): make it hidden, status "pooled", until
	 * sandbox_pool_take hands it to a create. */
	bool pooled;
	/* Internal (one-shots: `sandlot run`): a command init starts as soon as it runs,
	 * queued for it before the launch (no connect, no wait for the record). On
	 * success *first_proc holds its connection: proc_started says how the start
	 * went. On failure it is closed. */
	const struct sl_spawn *first;
	struct sl_proc *first_proc;
} sl_create_opts;

int sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err);
/* Look up by id or name, with the status checked against the live init. */
int sandbox_get(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* As sandbox_get, for a call that goes on to talk to the sandbox's init: a "running"
 * record is taken on its word (no look at /proc for its init), since a dead init answers
 * nothing and the call then fails SL_CONFLICT ("not running") on its own. */
int sandbox_get_for_init(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Every sandbox, tombstones included, oldest first (pooled ones are the daemon's). */
int sandbox_list(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err);
/* The same without tombstones, which a daemon then does not read again. */
int sandbox_list_live(sl_ctx *ctx, sl_sandbox **out, size_t *n, sl_err *err);

/* What the daemon's once-a-second deadline sweep and its health count need of a live
 * sandbox (not a tombstone, not pooled). */
typedef struct sl_deadline {
	char id[32];
	char status[16];
	bool ephemeral;
	int64_t created_ms;
	uint64_t idle_ms;  /* 0: none */
	int64_t expires_ms; /* 0: none */
	pid_t init_pid;	    /* what "running" is checked against */
	uint64_t init_start;
	char boot_id[40];
} sl_deadline;
/* Every live sandbox's deadlines. A record whose file is the one read before (same inode,
 * size and ctime) within the last 30 s is not parsed again: at N sandboxes a sweep is N
 * stats, not N JSON parses. A sandbox with an idle timeout gets its status refreshed
 * (an init that died reads "failed"). */
int sandbox_list_deadlines(sl_ctx *ctx, sl_deadline **out, size_t *n, sl_err *err);
/* Kill everything, free every host resource, leave a tombstone (unless the sandbox
 * was still being created by a live process: then SL_CONFLICT). */
int sandbox_destroy(sl_ctx *ctx, const char *ref, const char *reason, sl_err *err);
/* The same in two halves, so a daemon can answer before the kernel is done: _begin
 * SIGKILLs every process and writes the tombstone (marked as releasing, the claims on
 * uid range, name and address still held) and gives the id; _finish waits for the
 * processes to be gone, frees cgroup, network, layer and run dir, then the claims.
 * A releasing tombstone whose releaser died is finished by sandbox_finish_orphans. */
int sandbox_destroy_begin(sl_ctx *ctx, const char *ref, const char *reason, char id[32],
			  sl_err *err);
/* _begin naming another process (RELEASER, alive) as the one that calls _finish: its
 * claims stay held while that process lives (the CLI's `run` hands the release to a
 * child and exits). */
int sandbox_destroy_begin_for(sl_ctx *ctx, const char *ref, const char *reason, pid_t releaser,
			      char id[32], sl_err *err);
int sandbox_destroy_finish(sl_ctx *ctx, const char *id, sl_err *err);
/* Tombstones past cfg.tombstones_max (the oldest first) or older than 24 h lose their
 * records; the count removed. A release (sandbox_destroy, _finish) runs one when due:
 * the state dir has grown by a tenth of the bound since the last one. */
int sandbox_collect_tombstones(sl_ctx *ctx, sl_err *err);
/* Finish every orphaned release, and discard every pooled sandbox whose pool (its
 * creating daemon) is gone. Returns how many it handled. */
int sandbox_finish_orphans(sl_ctx *ctx, sl_err *err);

/* The daemon's pool of ready sandboxes (api/pool.c keeps their ids). A create can be
 * served from the pool when it asks only for what can be set after the start: env,
 * labels, user, working directory, timeouts, ephemeral. */
bool sandbox_poolable(const sl_create_opts *o);
/* The image a create would use (its default rule included): name and digest. */
int sandbox_resolve_image(sl_ctx *ctx, const char *image, char name[128], char digest[72],
			  sl_err *err);
/* Give pooled sandbox ID the create's settings and make it an ordinary running one.
 * SL_NOTFOUND when it is no longer usable (its init died): the caller discards it. */
int sandbox_pool_take(sl_ctx *ctx, const char *id, const sl_create_opts *o, sl_sandbox *out,
		      sl_err *err);
/* Destroy a pooled sandbox, record and all (a pool being drained or shrunk). */
int sandbox_pool_discard(sl_ctx *ctx, const char *id, sl_err *err);
/* pause: freeze every process (cgroup freezer); resume: thaw. stop: end every process
 * (SIGTERM, then SIGKILL after grace_ms) and free the cgroup, keeping the files;
 * start: a new init on the same files and config. out may be NULL. Wrong state:
 * SL_CONFLICT. */
int sandbox_pause(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
int sandbox_resume(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
int sandbox_stop(sl_ctx *ctx, const char *ref, int grace_ms, sl_sandbox *out, sl_err *err);
int sandbox_start(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Replace the labels (an object of strings). */
int sandbox_set_labels(sl_ctx *ctx, const char *ref, const cJSON *labels, sl_sandbox *out,
		       sl_err *err);
/* Change timeouts; -1 keeps one. lifetime: a deadline that many ms from now (0 removes
 * it: E2B's setTimeout); idle (Daytona's autostop); execution (the default per command). */
int sandbox_set_timeouts(sl_ctx *ctx, const char *ref, int64_t lifetime_ms, int64_t idle_ms,
			 int64_t exec_ms, sl_sandbox *out, sl_err *err);
/* Destroy without a tombstone (internal sandboxes, e.g. package builds). */
int sandbox_discard(sl_ctx *ctx, const char *id, sl_err *err);
/* Replace the egress rules (network.allow / network.deny; NULL keeps a list, an empty
 * list clears it); a running sandbox's kernel rules change at once. enabled must be
 * what the sandbox has (network cannot be switched on or off after create). */
int sandbox_set_network(sl_ctx *ctx, const char *ref, const sl_net_opts *net, sl_sandbox *out,
			sl_err *err);
/* REF's record, loaded under its lock (*LK, which the caller closes): nothing else changes
 * the sandbox until then. */
int sandbox_load_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err);
/* Thaw sandbox ID's cgroup if its record says running (what a process that froze it and
 * died left); a sandbox that is gone is no failure. */
int sandbox_thaw_if_running(sl_ctx *ctx, const char *id, sl_err *err);
/* Change ports' settings (the others are kept; public=false is the default, so it
 * removes the port's entry). */
int sandbox_set_ports(sl_ctx *ctx, const char *ref, const sl_port_setting *set, size_t n,
		      sl_sandbox *out, sl_err *err);
/* Is PORT of SB open to every local user? */
bool sandbox_port_public(const sl_sandbox *sb, unsigned port);
/* SB's preview token; a record from before tokens gets one now (saved). */
int sandbox_preview_token(sl_ctx *ctx, const sl_sandbox *sb, char token[65], sl_err *err);
void sandbox_free(sl_sandbox *sb);
void sandbox_free_list(sl_sandbox *list, size_t n);
/* The id of a live (not terminated) sandbox for which uses(sb, arg) holds, in user
 * ("" when none): what refuses deleting an image, snapshot or volume in use. */
int sandbox_find_user(sl_ctx *ctx, bool (*uses)(const sl_sandbox *sb, const void *arg),
		      const void *arg, char user[32], sl_err *err);
/* Is any live sandbox (or snapshot) using this image digest? */
int sandbox_image_in_use(sl_ctx *ctx, const char *digest, bool *in_use, sl_err *err);

typedef struct sl_spawn {
	char *const *argv;
	const char *const *env; /* extra "K=V" on top of the sandbox's; may be NULL */
	const char *user;	/* NULL: the sandbox's */
	const char *cwd;	/* NULL: the sandbox's */
	int fds[3];		/* stdin, stdout, stderr (ignored with tty) */
	int exit_fd;		/* -1, or a file init writes the exit status to */
	bool tty;
	unsigned short rows, cols;
	uint64_t timeout_ms; /* enforced by init (holds if the caller dies); 0: none */
} sl_spawn;

typedef struct sl_proc {
	int conn;   /* control connection to init */
	pid_t pid;  /* pid inside the sandbox */
	int master; /* pty master when tty, else -1 */
	uint64_t oom_before;
	char sandbox_id[32];
	char init_sock[108]; /* init's listening socket, for requests beside conn */
} sl_proc;

/* Start a command. A command that cannot start fails with SL_NOTFOUND (not found:
 * exit 127) or SL_INVALID (cannot execute: 126), the message saying why. */
int sandbox_spawn(sl_ctx *ctx, const sl_sandbox *sb, const sl_spawn *sp, sl_proc *p,
		  sl_err *err);
/* The start of a command sent but not yet answered (sl_create_opts.first): its pid,
 * or the same errors as sandbox_spawn (CMD names the command in them). */
int proc_started(sl_proc *p, const char *cmd, sl_err *err);
/* Wait up to timeout_ms (-1: forever) for the exit. Returns 0 with *wstatus set,
 * 1 on timeout, -1 on error. */
int proc_wait(sl_proc *p, int timeout_ms, int *wstatus, sl_err *err);
int proc_signal(sl_proc *p, int sig, bool group, sl_err *err);
/* Did the sandbox's OOM killer fire since the command started? */
bool proc_oom_killed(sl_ctx *ctx, sl_proc *p);
void proc_close(sl_proc *p);

/* Ids: prefix + 20 lowercase base32 chars. */
void sl_new_id(const char *prefix, char *out, size_t len);

#endif

/* sandbox.h — a sandbox's life: create, destroy, stop/start, pause/resume, and changes
 * to a live one (labels, timeouts, network). It includes the lower modules' headers a
 * caller of these needs: the record (record.h), lookups (lookup.h), commands (proc.h). */
#ifndef SANDLOT_SANDBOX_H
#define SANDLOT_SANDBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "ctx.h"
#include "err.h"
#include "id.h"
#include "image.h"
#include "lookup.h"
#include "pkgspec.h"
#include "proc.h"
#include "record.h"
#include "sbxnet.h"
#include "spares.h"
#include "tombstone.h"
#include "volume.h"

typedef struct sl_create_opts {
	const char *image; /* NULL: "default", else "busybox" when default is absent */
	const char *snapshot; /* id or name: start with the snapshot's files (and image) */
	const char *name;
	uint64_t cpu_millis, memory, disk, pids; /* 0: the configured default */
	const char *const *env;			 /* "K=V", NULL-terminated; may be NULL */
	const char *const *labels;		 /* "k=v" */
	const char *user, *workdir;		 /* NULL: the image's */
	bool ephemeral;
	/* Launched so that CRIU can dump it (docs/hibernate.md): no network, volumes or
	 * secret files; never from the pool or a spare. */
	bool hibernate;
	const sl_volume_spec *volumes;
	size_t nvolumes;
	uint64_t idle_ms, lifetime_ms, exec_timeout_ms; /* 0: none */
	enum sl_on_lifetime on_lifetime; /* what the lifetime's end does (record.h) */
	bool auto_resume;
	enum sl_on_lifetime on_idle; /* what the idle timeout does, when on_idle_set */
	bool on_idle_set;
	sl_net_opts net;
	const sl_package *packages;
	size_t npackages;
	/* Secrets by name (secret.h), the acting key's: ENV_NAME -> secret, and
	 * SECRET_FILES_DIR/<file> -> secret. Only the names are recorded. */
	const cJSON *secret_env, *secret_files;
	const sl_port_setting *ports; /* none: every port private */
	size_t nports;
	const char *request_host; /* record.h, request_host; NULL: none */
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
	/* Internal (forks: fork.c): start with this fork base's files (snapshot.h), and
	 * record the source as forked_from rather than a snapshot. */
	const struct sl_snapshot *fork_base;
	/* Internal (forks with memory): its processes restored from these CRIU images of
	 * the source (hibernate_restore_copy) rather than a new init. */
	const char *restore_images;
} sl_create_opts;

/* What the host grants a create before it starts: a disk within cfg.max_disk
 * (SL_INVALID), and free space for all of it above cfg.min_free (SL_NOSPACE). sandbox_create asks it;
 * so does a take from the daemon's pool. */
int sandbox_create_admit(sl_ctx *ctx, const sl_create_opts *o, sl_err *err);
/* The image a create takes: IMAGE by name or digest; NULL: "default", else "busybox"
 * when there is no default (the CLI and the API ask it for the image's command). */
int sandbox_lookup_image(sl_ctx *ctx, const char *image, sl_image *img, sl_err *err);
/* A container image's Env and Labels added under SB's own (a create's; a pool take's). */
int sandbox_image_defaults(sl_ctx *ctx, const sl_image *img, sl_sandbox *sb, sl_err *err);
/* Create and start a sandbox; a failed create leaves nothing. With packages, their layer
 * comes from ctx->package_layer (packages.c, which sits above this file). */
int sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err);

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
/* pause: freeze every process (cgroup freezer); resume: thaw. stop: end every process
 * (SIGTERM, then SIGKILL after grace_ms) and free the cgroup, keeping the files;
 * start: a new init on the same files and config. out may be NULL. Wrong state:
 * SL_CONFLICT. */
int sandbox_pause(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
int sandbox_resume(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
int sandbox_stop(sl_ctx *ctx, const char *ref, int grace_ms, sl_sandbox *out, sl_err *err);
int sandbox_start(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Put the sandbox's files back as checkpoint CHECKPOINT (its name or id, checkpoint.h in
 * snapshot.h) holds them: every process ends, the writable layer is replaced by a clone
 * of the checkpoint, and a sandbox that was running or paused starts again from its
 * image's entry (running). Its id, name, ports, volumes, network and execution records
 * stay. A checkpoint of another sandbox: SL_CONFLICT. */
int sandbox_rollback(sl_ctx *ctx, const char *ref, const char *checkpoint, sl_sandbox *out,
		     sl_err *err);
/* The stop policy (record.h, Daytona's autoArchive/autoDeleteInterval, in minutes):
 * INT64_MIN keeps one. archive_min >= 0; delete_min >= -1. */
int sandbox_set_stop_policy(sl_ctx *ctx, const char *ref, int64_t archive_min, int64_t delete_min,
			    sl_sandbox *out, sl_err *err);
/* Archive: stop a running or paused sandbox (files kept) and mark it archived; a stopped
 * one is only marked. start clears the mark. */
int sandbox_archive(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Replace the labels (an object of strings). */
int sandbox_set_labels(sl_ctx *ctx, const char *ref, const cJSON *labels, sl_sandbox *out,
		       sl_err *err);
/* Change timeouts; -1 keeps one. lifetime: a deadline that many ms from now (0 removes
 * it: E2B's setTimeout); idle (Daytona's autostop); execution (the default per command). */
int sandbox_set_timeouts(sl_ctx *ctx, const char *ref, int64_t lifetime_ms, int64_t idle_ms,
			 int64_t exec_ms, sl_sandbox *out, sl_err *err);
/* Drop the lifetime's deadline, keeping the lifetime itself (a paused or stopped sandbox
 * waits with no deadline; a wake gives it a fresh one of that length). */
int sandbox_drop_deadline(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err);
/* Destroy without a tombstone (internal sandboxes, e.g. package builds). */
int sandbox_discard(sl_ctx *ctx, const char *id, sl_err *err);
/* Replace the egress rules (network.allow / network.deny; NULL keeps a list, an empty
 * list clears it); a running sandbox's kernel rules change at once. enabled must be
 * what the sandbox has (network cannot be switched on or off after create). */
int sandbox_set_network(sl_ctx *ctx, const char *ref, const sl_net_opts *net, sl_sandbox *out,
			sl_err *err);
/* Change ports' settings (the others are kept; public=false is the default, so it
 * removes the port's entry). */
int sandbox_set_ports(sl_ctx *ctx, const char *ref, const sl_port_setting *set, size_t n,
		      sl_sandbox *out, sl_err *err);
/* SB's preview token; a record from before tokens gets one now (saved). */
int sandbox_preview_token(sl_ctx *ctx, const sl_sandbox *sb, char token[65], sl_err *err);

/* Finish every orphaned release, and discard every pooled sandbox whose pool (its
 * creating daemon) is gone and every create whose process died before it finished. Returns how many it handled. */
int sandbox_finish_orphans(sl_ctx *ctx, sl_err *err);
/* Free what ID still holds (cgroup and its processes, network, layer, run dir, claims)
 * and remove its record dir, under its lock: for a record that cannot be read or is
 * empty (`sandlot doctor --repair`). SL_CONFLICT when the record reads fine. */
int sandbox_purge(sl_ctx *ctx, const char *id, sl_err *err);

/* Is any live sandbox (or snapshot) using this image digest? */
int sandbox_image_in_use(sl_ctx *ctx, const char *digest, bool *in_use, sl_err *err);

#endif

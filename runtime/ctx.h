/* ctx.h — the engine's handle, which every runtime call takes: the configuration, the
 * cgroup backend, the compiled seccomp profile, and what a daemon keeps made ahead. */
#ifndef SANDLOT_CTX_H
#define SANDLOT_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "config.h"
#include "dirwatch.h"
#include "err.h"
#include "seccomp.h"

struct sl_launch_spare;
struct sl_package;
struct sl_pkg_layer;

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
	/* Set by the daemon: sandbox ID's record was just written (any change of its status,
	 * limits, labels, ...), by any thread of this process. Its event stream
	 * (api/events.c) publishes it. Must be cheap: called with the record lock held. */
	void (*record_changed)(void *arg, const char *id);
	void *record_changed_arg;
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
	/* Networks made ahead (spares.c), once this daemon has made a sandbox with its
	 * network on (net_spares_on): a namespace with its veth on the bridge, its address
	 * (a lease held by "spn_<pid>_<start>_<k>") and route, no chain. A create takes one
	 * at its lease (the lease passes to it) and its launch the namespace, kept in
	 * net_taken meanwhile. */
	struct sl_net_spare {
		int netns;
		uint32_t addr;
		char owner[32];
	} net_spares[2], net_taken[4];
	int net_nspares, net_ntaken;
	bool net_spares_on;
	unsigned net_spare_seq;
	/* Sandbox inits made ahead, for creates of the default limits with no volumes
	 * (launch.h, sl_launch_spare; spares.c, spare_launch_take). */
	struct sl_launch_spare *launch_spares[2];
	int launch_nspares;
	bool launch_spares_off; /* this kernel cannot take them (launch_spare_make) */
	unsigned launch_seq; /* names them */
	pthread_mutex_t spare_lock; /* the spare cgroups' takes and makes (spares.c) */
	void (*spare_taken)(void *arg);
	void *spare_taken_arg;
	/* The layer a create with packages starts from: packages_layer, set by ctx_open.
	 * packages.c creates sandboxes to install into, so it sits above sandbox.c, which
	 * reaches it only through here (docs/architecture.md, runtime/). */
	int (*package_layer)(struct sl_ctx *ctx, const char *digest, const struct sl_package *p,
			     size_t n, uint64_t disk, struct sl_pkg_layer *out, sl_err *err);
} sl_ctx;

/* Load the configuration, make the state and run dirs, open the cgroup backend. */
int ctx_open(sl_ctx *ctx, sl_err *err);
void ctx_close(sl_ctx *ctx);

#endif

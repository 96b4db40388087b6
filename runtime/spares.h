/* spares.h — what creates take made ahead: record dirs, network namespaces, cgroups and
 * launched inits (launch spares). */
#ifndef SANDLOT_SPARES_H
#define SANDLOT_SPARES_H

#include <stddef.h>

#include "cgroup.h"
#include "ctx.h"
#include "err.h"
#include "launch.h"
#include "record.h"

/* Make the record dirs and writable layers that creates take up to the stock kept, and
 * a daemon's network namespaces and cgroups up to ctx->spares_keep: for a background
 * thread (the daemon's syncer). Releases fill the record dirs and layers too. */
void sandbox_spares_fill(sl_ctx *ctx);
/* Remove this process's spare cgroups, and those of daemons that are gone (a daemon
 * stops with it, and starts with it for what a killed one left). */
void sandbox_spares_drop(sl_ctx *ctx);

/* ---- for the runtime's own modules ---- */

/* DIR, a new sandbox's record dir: a spare renamed into place, or a new directory. */
int spare_record_dir(const sl_ctx *ctx, const char *dir);
/* Make the missing record spares (at most two); TAG names the one being built. */
void spare_records_fill(const sl_ctx *ctx, const char *tag);
/* A spare network made SB's (not one to hibernate): its lease passed to SB (net_addr,
 * net_gateway, net_subnet set) and its namespace kept for SB's launch. 0, or -1 when
 * none is kept (SB leases an address of its own). */
int spare_net_take(sl_ctx *ctx, sl_sandbox *sb);
/* The namespace of the spare network SB's create took (its veth, address and route
 * made), or -1. */
int spare_net_adopted(sl_ctx *ctx, const char *id);
/* A taken spare network's namespace that no launch took (a create that failed) closed. */
void spare_net_forget(sl_ctx *ctx, const char *id);
/* A spare network namespace (lo up), or -1 when none is kept. */
int spare_netns_take(sl_ctx *ctx);
/* Cgroup CG with limits L: a spare renamed (v1, a daemon's), or made now. */
int spare_cgroup_create_or_take(sl_ctx *ctx, const char *cg, const sl_limits *l, sl_err *err);
/* A launch spare for SB renamed to cgroup CG and run dir RUN, or NULL (none, or SB needs
 * what a spare cannot give: a network, NMOUNTS mounts, other limits). */
sl_launch_spare *spare_launch_take(sl_ctx *ctx, const sl_sandbox *sb, size_t nmounts,
				   const char *cg, const char *run);
/* End a launch spare and remove its cgroups and run dir. */
void spare_launch_free(sl_ctx *ctx, sl_launch_spare *sp);

#endif

/* spares.c — what creates take made ahead: record dirs, and for a daemon network
 * namespaces, cgroups (v1) and whole launched inits (launch spares), filled off the
 * request path by its syncer and dropped when it stops. */
#include "spares.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "claim.h"
#include "cleanup.h"
#include "fsutil.h"
#include "log.h"
#include "net.h"
#include "netaddr.h"
#include "sbxnet.h"
#include "storage.h"

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
int spare_record_dir(const sl_ctx *ctx, const char *dir)
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
void spare_records_fill(const sl_ctx *ctx, const char *tag)
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

/* ---- spare networks (a network create's veth, address and route made ahead) ---- */

#define NET_SPARES ((int)(sizeof(((sl_ctx *)0)->net_spares) / sizeof(struct sl_net_spare)))
#define NET_TAKEN  ((int)(sizeof(((sl_ctx *)0)->net_taken) / sizeof(struct sl_net_spare)))

/* Its veth deleted before its lease is let go: the next holder of the address names its
 * veth the same (net.c). */
static void net_spare_free(sl_ctx *ctx, struct sl_net_spare *sp, const char *holder)
{
	char key[16];
	ipv4_format(sp->addr, key, sizeof(key));
	if (sp->netns >= 0)
		close(steal_fd(&sp->netns));
	net_unprepare(sp->addr);
	if (holder)
		claim_drop(ctx, "leases", key, holder);
}

static void net_spares_fill(sl_ctx *ctx)
{
	for (int made = 0; made < 2; made++) {
		pthread_mutex_lock(&ctx->lock);
		bool want = ctx->spares_keep > 0 && ctx->net_spares_on &&
			    ctx->net_nspares < NET_SPARES;
		unsigned k = ctx->net_spare_seq++;
		pthread_mutex_unlock(&ctx->lock);
		if (!want)
			return;
		/* A sandbox record of its own only for the lease and the spec. */
		sl_sandbox sb = {0};
		snprintf(sb.id, sizeof(sb.id), "spn_%d_%llu_%u", (int)getpid(),
			 (unsigned long long)proc_start_time(getpid()), k);
		struct sl_net_spare sp = {.netns = -1};
		snprintf(sp.owner, sizeof(sp.owner), "%s", sb.id);
		sl_err e = {0};
		sl_net_sandbox ns;
		sbxnet_bufs bufs;
		if (sbxnet_lease_new(ctx, &sb, &e) < 0) {
			sl_log(SL_LOG_WARN, "spare network: %s", e.msg);
			return;
		}
		if (!ipv4_parse(sb.net_addr, &sp.addr) || sbxnet_spec(&ctx->cfg, &sb, &ns, &bufs, &e) < 0 ||
		    (sp.netns = launch_new_netns(&e)) < 0 ||
		    net_prepare(&ctx->cfg, &ns, sp.netns, &e) < 0) {
			sl_log(SL_LOG_WARN, "spare network: %s", e.msg[0] ? e.msg : "bad lease");
			net_spare_free(ctx, &sp, sp.owner);
			return;
		}
		pthread_mutex_lock(&ctx->lock);
		bool kept = ctx->spares_keep > 0 && ctx->net_nspares < NET_SPARES;
		if (kept)
			ctx->net_spares[ctx->net_nspares++] = sp;
		pthread_mutex_unlock(&ctx->lock);
		if (!kept)
			net_spare_free(ctx, &sp, sp.owner);
	}
}

int spare_net_take(sl_ctx *ctx, sl_sandbox *sb)
{
	if (sb->hibernate)
		return -1; /* its namespace is made in its clone (launch_hib.c) */
	struct sl_net_spare sp;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->spares_keep > 0)
		ctx->net_spares_on = true;
	bool have = ctx->net_nspares > 0 && ctx->net_ntaken < NET_TAKEN;
	if (have)
		sp = ctx->net_spares[--ctx->net_nspares];
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->spares_keep > 0 && ctx->spare_taken)
		ctx->spare_taken(ctx->spare_taken_arg); /* one to make, or the first ones */
	if (!have)
		return -1;
	char key[16];
	ipv4_format(sp.addr, key, sizeof(key));
	sl_err e = {0};
	sl_cidr subnet;
	if (net_subnet(&ctx->cfg, &subnet, &e) < 0 || !cidr_contains(&subnet, sp.addr) ||
	    claim_transfer(ctx, "leases", key, sp.owner, sb->id, &e) < 0) {
		sl_log(SL_LOG_WARN, "spare network %s: %s", key, e.msg[0] ? e.msg : "not in the subnet");
		net_spare_free(ctx, &sp, sp.owner);
		return -1;
	}
	snprintf(sb->net_addr, sizeof(sb->net_addr), "%s", key);
	ipv4_format(subnet_gateway(&subnet), sb->net_gateway, sizeof(sb->net_gateway));
	cidr_format(&subnet, sb->net_subnet, sizeof(sb->net_subnet));
	snprintf(sp.owner, sizeof(sp.owner), "%s", sb->id);
	pthread_mutex_lock(&ctx->lock);
	ctx->net_taken[ctx->net_ntaken++] = sp;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int spare_net_adopted(sl_ctx *ctx, const char *id)
{
	int fd = -1;
	pthread_mutex_lock(&ctx->lock);
	for (int i = 0; i < ctx->net_ntaken; i++)
		if (!strcmp(ctx->net_taken[i].owner, id)) {
			fd = ctx->net_taken[i].netns;
			ctx->net_taken[i] = ctx->net_taken[--ctx->net_ntaken];
			break;
		}
	pthread_mutex_unlock(&ctx->lock);
	return fd;
}

void spare_net_forget(sl_ctx *ctx, const char *id)
{
	int fd = ctx->net_ntaken ? spare_net_adopted(ctx, id) : -1;
	if (fd >= 0)
		close(fd);
}

/* Every spare network let go (a daemon that stops): veth, lease, namespace. */
static void net_spares_drop(sl_ctx *ctx)
{
	for (;;) {
		struct sl_net_spare sp;
		pthread_mutex_lock(&ctx->lock);
		bool have = ctx->net_nspares > 0;
		if (have)
			sp = ctx->net_spares[--ctx->net_nspares];
		ctx->net_spares_on = false;
		pthread_mutex_unlock(&ctx->lock);
		if (!have)
			return;
		net_spare_free(ctx, &sp, sp.owner);
	}
}

/* A spare network namespace (lo up), or -1 when none is kept. */
int spare_netns_take(sl_ctx *ctx)
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

int spare_cgroup_create_or_take(sl_ctx *ctx, const char *cg, const sl_limits *l, sl_err *err)
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

void spare_launch_free(sl_ctx *ctx, sl_launch_spare *sp)
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
			spare_launch_free(ctx, sp);
		continue;
	fail:
		sl_log(SL_LOG_WARN, "spare init: %s", e.msg);
		spare_launch_free(ctx, sp);
		if (e.kind == SL_NOTIMPL) { /* said once: no more tries */
			pthread_mutex_lock(&ctx->lock);
			ctx->launch_spares_off = true;
			pthread_mutex_unlock(&ctx->lock);
		}
		return;
	}
}

/* A spare for sandbox SB with run dir RUN and cgroups CG, renamed to them, or NULL
 * (none kept, or the sandbox needs what a spare cannot give: volumes, limits other than
 * the defaults). A network it enters at the take (launch_spare.c, spare_enter_net). */
sl_launch_spare *spare_launch_take(sl_ctx *ctx, const sl_sandbox *sb, size_t nmounts,
				   const char *cg, const char *run)
{
	sl_limits def;
	default_limits(ctx, &def);
	if (nmounts || sb->limits.cpu_millicores != def.cpu_millicores ||
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
		spare_launch_free(ctx, sp);
	}
	if (!sp)
		return NULL;
	if (ctx->spare_taken)
		ctx->spare_taken(ctx->spare_taken_arg);
	sl_err e = {0};
	if (cgroup_rename(ctx->cg, sp->cgroup, cg, &e) < 0) {
		sl_log(SL_LOG_WARN, "spare init for %s: %s", sb->id, e.msg);
		spare_launch_free(ctx, sp);
		return NULL;
	}
	snprintf(sp->cgroup, sizeof(sp->cgroup), "%s", cg);
	/* A run dir kept from the sandbox's last run (a start after a stop: its
	 * executions' records) stays, and the spare's own goes: empty, when it was made in
	 * the staging namespace (launch_spare_make), as every spare is where overlayfs takes
	 * a detached layer. */
	if (rename(sp->dir, run) < 0 &&
	    ((errno != ENOTEMPTY && errno != EEXIST) || rmdir(sp->dir) < 0)) {
		sl_log(SL_LOG_WARN, "spare init for %s: rename %s: %s", sb->id, sp->dir,
		       strerror(errno));
		spare_launch_free(ctx, sp);
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
		spare_launch_free(ctx, sp[i]);
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
	net_spares_drop(ctx);
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
	spare_records_fill(ctx, tag);
	store_layer_spares_fill(&ctx->cfg, ctx->cfg.def_disk, tag);
	netns_spares_fill(ctx);
	net_spares_fill(ctx);
	cg_spares_fill(ctx);
	launch_spares_fill(ctx);
}

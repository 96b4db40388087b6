/* sandbox.c — a sandbox's life: create (checks, claims, layer, launch), destroy (in one
 * go or begun and finished), stop/start, pause/resume, and changes to a live record.
 * A failed create undoes every step; a destroy frees every host resource and leaves only
 * a tombstone. */
#include "sandbox.h"
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "claim.h"
#include "crash.h"
#include "cleanup.h"
#include "clock.h"
#include "execlogs.h"
#include "fsutil.h"
#include "hibernate.h"
#include "id.h"
#include "idset.h"
#include "image.h"
#include "initctl.h"
#include "launch.h"
#include "log.h"
#include "net.h"
#include "netaddr.h"
#include "netname.h"
#include "pkgspec.h"
#include "quantity.h"
#include "secret.h"
#include "secretfs.h"
#include "snapshot.h"
#include "spares.h"
#include "state.h"
#include "storage.h"
#include "tombstone.h"
#include "volume.h"

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

/* Take the name and a free uid range, then write the "creating" record so
 * that a create that dies midway is visible (as failed) and can be removed. */
static int reserve(sl_ctx *ctx, sl_sandbox *sb, sl_err *err)
{
	if (sb->name[0]) {
		int r = claim_take(ctx, "names", sb->name, sb->id, true, err);
		if (r != 0)
			return r < 0 ? -1
				     : sl_fail(err, SL_CONFLICT, 0,
					       "a sandbox named %s already exists", sb->name);
	}
	if (claim_uid_range(ctx, sb->id, sl_id_hash(sb->id), &sb->uid_base, err) == 0) {
		if (record_create(ctx, sb, err) < 0) {
			claim_release_all(ctx, sb);
			return -1;
		}
		return 0;
	}
	if (sb->name[0])
		claim_drop(ctx, "names", sb->name, sb->id);
	return -1;
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
	if (record_pid_alive(sb->init_pid, sb->init_start)) {
		int pfd = syscall(SYS_pidfd_open, sb->init_pid, 0);
		if (sb->status == SL_ST_PAUSED) {
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
	sbxnet_detach(ctx, sb);
}

/* Undo whatever a create or a destroy finds: processes, cgroup, layer, run dir. */
static void release_resources(sl_ctx *ctx, sl_sandbox *sb)
{
	char run[PATH_MAX];
	sl_err e = { 0 };
	stop_processes(ctx, sb, 0);
	sl_crash_point("release-stopped"); /* processes, cgroup and network gone */
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
	sl_crash_point("release-layer-gone");
	checkpoint_delete_all(ctx, sb->id);
	hibernate_images_delete(ctx, sb->id); /* its processes' memory, if it hibernated */
	/* For the next create: a layer of the default size ready for it, and one cloned
	 * from the snapshot this sandbox was made from. */
	store_layer_spares_fill(&ctx->cfg, ctx->cfg.def_disk, sb->id);
	if (sb->snapshot[0])
		store_clone_spares_fill(&ctx->cfg, sb->snapshot, sb->disk_bytes, sb->id);
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	execlogs_unmount(ctx, sb->id);
	fs_remove_tree(run, NULL);
}

struct launch_net_arg {
	sl_ctx *ctx;
	const sl_sandbox *sb;
};

/* sl_launch.net_setup of a launch to hibernate: the sandbox's network into NETNS. */
static int launch_net_setup(void *arg, int netns, sl_err *err)
{
	const struct launch_net_arg *a = arg;
	return sbxnet_attach(a->ctx, a->sb, netns, false, err);
}

/* A network is set up in a namespace of its own before anything runs in it (veth,
 * address, route, egress chain): the spare network its create took (spares.h: veth,
 * address and route made; it needs only its chain), or one made now. Init, a spare's or
 * a new clone, enters it (NETNS, set in L); nothing of it waits for the child, so a
 * launch stays a vfork. Not for a launch to hibernate: it makes its namespace in the
 * clone (its user namespace must own it), and is handed its network there. */
static int network_ready(sl_ctx *ctx, sl_sandbox *sb, sl_launch *l, int *netns, sl_err *err)
{
	if (!sb->net_enabled || l->hibernate)
		return 0;
	int made = spare_net_adopted(ctx, sb->id);
	*netns = made >= 0 ? made : launch_new_netns(err);
	if (*netns < 0 || sbxnet_attach(ctx, sb, *netns, made >= 0, err) < 0)
		return -1;
	l->netns = netns;
	l->netns_ready = true;
	return 0;
}

/* The launch's cgroups made now (or taken from the spares), and init cloned into them;
 * its cgroups removed again if that fails. */
static int launch_fresh(sl_ctx *ctx, sl_sandbox *sb, sl_launch *l, const char *cg, sl_err *err)
{
	/* The cgroups are made now and the child joins them itself, launched as a vfork
	 * (launch.h). */
	char joinbuf[PATH_MAX];
	const char *join[8];
	l->join = join;
	if (spare_cgroup_create_or_take(ctx, cg, &sb->limits, err) < 0)
		return -1;
	_cleanup_close_ int netns = -1;
	if (cgroup_join_files(ctx->cg, cg, joinbuf, sizeof(joinbuf), join, 8, &l->njoin, err) < 0)
		goto drop_cgroups;
	/* Without a network (network_ready made none): a daemon's spare namespace
	 * (launch_new_netns, never used), or the clone makes one. */
	if (!l->netns && !l->hibernate && (netns = spare_netns_take(ctx)) >= 0) {
		l->netns = &netns;
		l->netns_ready = true;
	}
	struct launch_net_arg na = {ctx, sb};
	if (sb->net_enabled && l->hibernate) {
		l->net_setup = launch_net_setup;
		l->net_arg = &na;
	}
	int r = launch_sandbox(l, &sb->init_pid, err);
	if (l->netns == &netns)
		l->netns = NULL;
	l->join = NULL;
	l->net_setup = NULL;
	if (r < 0) {
		sl_wrap_obj(err, "sandbox", sb->id, "launch its init");
		goto drop_cgroups;
	}
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
	if (r < 0)
		sl_wrap_obj(err, "sandbox", sb->id, "take a spare init");
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
/* RUN, the sandbox's run dir, and its activity file in it. */
static int run_dir_make(const char *run, sl_err *err)
{
	if (mkdir(run, 0700) < 0 && errno != EEXIST)
		return sl_sysfail(err, "create %s", run);
	/* The daemon's idle clock (api/deadlines.c) moves this file's mtime; it is made
	 * here, never by a request, so a request racing a destroy cannot leave it. */
	char act[PATH_MAX];
	snprintf(act, sizeof(act), "%s/activity", run);
	int afd = open(act, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (afd < 0)
		return sl_sysfail(err, "create %s", act);
	close(afd);
	return 0;
}

/* A fork with memory: its processes are the source's, restored from DIR's images
 * (hibernate.c) instead of a new init. */
static int restore_init(sl_ctx *ctx, sl_sandbox *sb, const char *dir, sl_err *err)
{
	char run[PATH_MAX];
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	if (run_dir_make(run, err) < 0 || hibernate_restore_copy(ctx, sb, dir, err) < 0)
		return -1;
	record_boot_id(sb->boot_id, sizeof(sb->boot_id));
	return 0;
}

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
		sbxnet_etc_files(ctx, sb, hosts, sizeof(hosts), resolv, sizeof(resolv));
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
	/* Secret files: a tmpfs of their own, filled now (every launch: it is memory). */
	_cleanup_close_ int secrets_fd = -1;
	if (cJSON_GetArraySize(sb->secret_files) > 0) {
		if (nm >= SL_MAX_VOLUMES)
			return sl_fail(err, SL_INVALID, 0, "volumes of %s: too many", sb->id);
		if (secretfs_make(&ctx->cfg, sb, imgdir, upper, &secrets_fd, err) < 0)
			return -1;
		mounts[nm++] = (sl_mount){.target = SECRET_FILES_DIR, .readonly = true,
					  .tree_fd = secrets_fd};
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
			.hibernate = sb->hibernate,
			.default_user_env = user_env };
	if (load_bpf(ctx, err) < 0)
		return -1;
	/* The first command waits in a socket pair whose other end init inherits. */
	_cleanup_close_ int mine = -1, theirs = -1;
	if (first) {
		int sv[2];
		proc_init(fp, sb->id);
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return sl_sysfail(err, "sandbox %s: a socket pair for its first command",
					  sb->id);
		mine = sv[0];
		theirs = sv[1];
		if (initctl_sock_path(ctx, sb->id, fp->init_sock, sizeof(fp->init_sock), err) < 0 ||
		    proc_send_spawn(ctx, mine, sb, first, err) < 0)
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
	_cleanup_close_ int netns = -1;
	if (network_ready(ctx, sb, &l, &netns, err) < 0)
		return -1;
	/* A spare init brings its run dir (renamed to RUN) and cgroups (to CG). */
	sl_launch_spare *spare = sb->hibernate ? NULL : spare_launch_take(ctx, sb, nm, cg, run);
	if (run_dir_make(run, err) < 0)
		goto drop_spare;
	bool had_spare = spare != NULL; /* launch_spared consumes it either way */
	bool spared = had_spare && launch_spared(ctx, sb, &l, spare, cg, err) == 0;
	/* A failed take may have mounted the layer already (the daemon makes a spare's
	 * overlay): its volatile marker goes again. */
	if (!spared && ((had_spare && fs_remove_tree(mark, err) < 0) ||
			launch_fresh(ctx, sb, &l, cg, err) < 0))
		return -1;
	sb->init_start = proc_start_time(sb->init_pid);
	record_boot_id(sb->boot_id, sizeof(sb->boot_id));
	if (first)
		fp->conn = steal_fd(&mine);
	return 0;
drop_spare:
	if (spare)
		spare_launch_free(ctx, spare);
	return -1;
}

/* The layer a new sandbox starts from: the snapshot's, or with packages the derived
 * layer of its image (built now or taken from the cache), which it records. */
static int with_packages(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *sb, sl_snapshot *base,
			 sl_err *err)
{
	if (!o->npackages)
		return 0;
	if (base->id[0])
		return sl_fail(err, SL_INVALID, 0,
			       "packages: not with a snapshot (the snapshot keeps what was "
			       "installed before it was taken)");
	sl_pkg_layer l;
	if (ctx->package_layer(ctx, sb->digest, o->packages, o->npackages, sb->disk_bytes, &l,
			       err) < 0)
		return -1;
	snprintf(base->id, sizeof(base->id), "%s", l.id);
	base->uid_base = l.uid_base;
	sb->packages = packages_json(o->packages, o->npackages);
	if (l.node_path[0] && !cJSON_GetObjectItemCaseSensitive(sb->env, "NODE_PATH"))
		cJSON_AddStringToObject(sb->env, "NODE_PATH", l.node_path);
	return 0;
}

/* IMAGE by name or digest; NULL: "default", else "busybox" when there is no default. */
int sandbox_lookup_image(sl_ctx *ctx, const char *image, sl_image *img, sl_err *err)
{
	if (!image) {
		sl_err e2 = { 0 };
		image = image_lookup(ctx->cfg.state_dir, "default", img, &e2) == 0 ? "default"
										    : "busybox";
	}
	return image_lookup(ctx->cfg.state_dir, image, img, err);
}

/* The create's secrets checked (names the owner has, env names, file paths) and their
 * references (never a value) recorded in SB. */
static int record_secrets(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *sb, sl_err *err)
{
	if (secret_refs_check(&ctx->cfg, sb->owner, "secrets", o->secret_env, err) < 0 ||
	    secret_refs_check(&ctx->cfg, sb->owner, "secretFiles", o->secret_files, err) < 0)
		return -1;
	const cJSON *it;
	cJSON_ArrayForEach(it, o->secret_env)
	{
		if (!it->string[0] || strchr(it->string, '=') || strlen(it->string) > 256)
			return sl_fail(err, SL_INVALID, 0,
				       "secrets: \"%.140s\" is not an environment variable's name",
				       it->string);
	}
	cJSON_ArrayForEach(it, o->secret_files)
	{
		if (secretfs_path_check(it->string, err) < 0)
			return -1;
	}
	if ((o->secret_env && !(sb->secret_env = cJSON_Duplicate(o->secret_env, 1))) ||
	    (o->secret_files && !(sb->secret_files = cJSON_Duplicate(o->secret_files, 1))))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "record the secrets");
	return 0;
}

/* The create's volumes checked (mount path, a source that resolves) and recorded in SB
 * as [{name, mountPath, readOnly}]. */
static int record_volumes(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *sb, sl_err *err)
{
	sb->volumes = cJSON_CreateArray();
	for (size_t i = 0; i < o->nvolumes; i++) {
		const sl_volume_spec *vs = &o->volumes[i];
		const char *mp = vs->mount_path ? vs->mount_path : "";
		if (mp[0] != '/' || !strcmp(mp, "/") || strstr(mp, "/..") || strstr(mp, "/./") ||
		    strlen(mp) > 1024 || !vs->source || !*vs->source)
			return sl_fail(err, SL_INVALID, 0,
				       "volumes[%zu]: mountPath \"%s\" must be an absolute path "
				       "other than / without . or .. (and a volume name or host dir)",
				       i, mp);
		if (o->nvolumes > SL_MAX_VOLUMES)
			return sl_fail(err, SL_INVALID, 0, "volumes: at most %d", SL_MAX_VOLUMES);
		char src[PATH_MAX];
		if (volume_source(ctx, vs->source, src, sizeof(src), err) < 0)
			return sl_wrap(err, "volumes[%zu]", i);
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "name", vs->source);
		cJSON_AddStringToObject(m, "mountPath", mp);
		cJSON_AddBoolToObject(m, "readOnly", vs->readonly);
		cJSON_AddItemToArray(sb->volumes, m);
	}
	return 0;
}

/* A container image's Env and Labels under the create's own (which win, key by key, as
 * docker's -e and --label do over an image's). */
int sandbox_image_defaults(sl_ctx *ctx, const sl_image *img, sl_sandbox *sb, sl_err *err)
{
	_cleanup_cjson_ cJSON *cfg = NULL;
	if (image_config(ctx->cfg.state_dir, img, &cfg, err) < 0)
		return -1;
	if (!cfg)
		return 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cfg, "env"))
	{
		const char *eq = strchr(e->valuestring, '=');
		char key[256];
		if (!eq || (size_t)(eq - e->valuestring) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - e->valuestring), e->valuestring);
		if (!cJSON_GetObjectItemCaseSensitive(sb->env, key))
			cJSON_AddStringToObject(sb->env, key, eq + 1);
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cfg, "labels"))
	{
		if (!cJSON_GetObjectItemCaseSensitive(sb->labels, e->string))
			cJSON_AddStringToObject(sb->labels, e->string, e->valuestring);
	}
	if (record_kv_check("env", sb->env, err) < 0 ||
	    record_kv_check("labels", sb->labels, err) < 0)
		return sl_wrap(err, "image %s's defaults with the create's", img->name);
	return 0;
}

int sandbox_create_admit(sl_ctx *ctx, const sl_create_opts *o, sl_err *err)
{
	if (o->disk > ctx->cfg.max_disk) {
		char want[32], max[32];
		quantity_format_bytes(o->disk, want, sizeof(want));
		quantity_format_bytes(ctx->cfg.max_disk, max, sizeof(max));
		return sl_fail(err, SL_INVALID, 0,
			       "disk %s: over this host's maximum of %s a sandbox (serve "
			       "--max-disk, SANDLOT_MAX_DISK)",
			       want, max);
	}
	return store_space_check(&ctx->cfg, o->disk ? o->disk : ctx->cfg.def_disk, err);
}

int sandbox_create(sl_ctx *ctx, const sl_create_opts *o, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb = { 0 };
	if (sandbox_create_admit(ctx, o, err) < 0)
		return -1;
	if (o->first)
		proc_init(o->first_proc, "");
	sl_image img;
	sl_snapshot snap = { 0 }, base = { 0 };
	const char *image = o->image;
	if (o->fork_base) {
		snap = *o->fork_base;
		image = snap.digest;
	} else if (o->snapshot) {
		if (snapshot_get(ctx, o->snapshot, &snap, err) < 0)
			return -1;
		if (o->image && strcmp(o->image, snap.image) && strcmp(o->image, snap.digest))
			return sl_fail(err, SL_INVALID, 0,
				       "snapshot %s is of image %s, not %s: give one or the other",
				       o->snapshot, snap.image, o->image);
		image = snap.digest;
	}
	if (sandbox_lookup_image(ctx, image, &img, err) < 0)
		return -1;
	if (o->name && !valid_name(o->name))
		return sl_fail(err, SL_INVALID, 0,
			       "name \"%s\": use 1-63 lowercase letters, digits, '-', '.', '_' "
			       "(not starting with sbx_)",
			       o->name);
	sl_new_id("sbx_", sb.id, sizeof(sb.id));
	snprintf(sb.name, sizeof(sb.name), "%s", o->name ? o->name : "");
	sb.status = SL_ST_CREATING;
	snprintf(sb.image, sizeof(sb.image), "%s", snap.id[0] ? snap.image : img.name);
	snprintf(sb.snapshot, sizeof(sb.snapshot), "%s", o->fork_base ? "" : snap.id);
	snprintf(sb.forked_from, sizeof(sb.forked_from), "%s",
		 o->fork_base ? snap.sandbox_id : "");
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
	sb.on_lifetime = o->on_lifetime;
	sb.auto_resume = o->auto_resume;
	sb.on_idle = o->on_idle;
	sb.on_idle_set = o->on_idle_set;
	sb.expires_ms = o->lifetime_ms ? sl_deadline_after(sb.created_ms, o->lifetime_ms) : 0;
	sb.creator_pid = getpid();
	sb.creator_start = proc_self_start_time();
	record_new_preview_token(sb.preview_token);
	snprintf(sb.owner, sizeof(sb.owner), "%s", owner_acting());
	if (record_kv_object("env", o->env, &sb.env, err) < 0 ||
	    record_kv_object("labels", o->labels, &sb.labels, err) < 0 ||
	    record_ports_apply(&sb.ports, o->ports, o->nports, err) < 0 ||
	    record_request_host(o->request_host, sb.request_host, err) < 0 ||
	    sbxnet_lists(&ctx->cfg, &o->net, &sb.net_allow, &sb.net_deny, err) < 0 ||
	    sbxnet_open_list(&o->net, &sb.net_open, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	if (sandbox_image_defaults(ctx, &img, &sb, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	sb.net_enabled = o->net.enabled;
	if (!sb.net_enabled && (cJSON_GetArraySize(sb.net_allow) || cJSON_GetArraySize(sb.net_deny))) {
		sandbox_free(&sb);
		return sl_fail(err, SL_INVALID, 0,
			       "network.allow and network.deny need network.enabled=true");
	}
	if (record_volumes(ctx, o, &sb, err) < 0 || record_secrets(ctx, o, &sb, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	sb.hibernate = o->hibernate;
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
	sl_crash_point("create-claimed"); /* name, uid range and "creating" record */
	if (sb.net_enabled &&
	    (sbxnet_lease_take(ctx, &sb, err) < 0 || record_save_creating(ctx, &sb, false, err) < 0))
		goto fail;
	if ((base.id[0] ? snapshot_clone_layer(ctx, &base, sb.id, sb.uid_base, sb.disk_bytes, err)
			: store_layer_create(&ctx->cfg, sb.id, sb.disk_bytes, sb.uid_base, err)) < 0)
		goto fail;
	sl_crash_point("create-layer"); /* its subvolume made, before its cgroup and init */
	if ((o->restore_images ? restore_init(ctx, &sb, o->restore_images, err)
			       : start_init(ctx, &sb, o->host_binds, o->nhost_binds, o->first,
					    o->first_proc, err)) < 0)
		goto fail;
	sl_crash_point("create-started"); /* cgroup, run dir and init up; still "creating" */
	/* A pooled sandbox needs no durable record: a daemon that died leaves its pool
	 * to be discarded, whatever the record says. */
	sb.status = o->pooled ? SL_ST_POOLED : SL_ST_RUNNING;
	if (record_save_creating(ctx, &sb, !sb.ephemeral && !o->pooled, err) < 0)
		goto fail;
	sl_crash_point("create-recorded"); /* "running" written, the caller not yet told */
	*out = sb;
	return 0;
fail:
	if (!err->kind)
		sl_sysfail(err, "create sandbox %s", sb.id);
	if (o->first)
		proc_close(o->first_proc);
	release_resources(ctx, &sb);
	record_remove_dir(ctx, sb.id);
	if (sb.uid_base)
		claim_release_all(ctx, &sb);
	sandbox_free(&sb);
	return -1;
}

/* ---- destroy ---- */

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
	sl_crash_point("delete-released"); /* everything freed, the claims still held */
	/* Claims go last: the tombstone marks them stale once the mark is gone. */
	if (r == 0)
		claim_release_all(ctx, sb);
	spare_records_fill(ctx, sb->id);
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

/* A record that cannot be read (record_load_or_broken): what its id still finds is
 * freed (its cgroup with every process in it, network, layer, run dir, the claims that
 * name it), then the record dir goes; there is no tombstone to write. Under its lock. */
static int destroy_broken(sl_ctx *ctx, const char *id)
{
	_cleanup_sandbox_ sl_sandbox sb = { 0 };
	char slot[16];
	snprintf(sb.id, sizeof(sb.id), "%s", id);
	claim_find(ctx, "slots", id, slot, sizeof(slot));
	claim_find(ctx, "leases", id, sb.net_addr, sizeof(sb.net_addr));
	claim_find(ctx, "names", id, sb.name, sizeof(sb.name));
	if (slot[0])
		sb.uid_base = ctx->cfg.uid_base + (uint32_t)strtoul(slot, NULL, 10) * 65536u;
	sb.net_enabled = sb.net_addr[0] != '\0';
	release_resources(ctx, &sb);
	claim_release_all(ctx, &sb); /* each drop checks the claim is ID's */
	record_remove_dir(ctx, id);
	sl_log(SL_LOG_WARN, "sandbox %s: its unreadable record and what it held removed", id);
	return 0;
}

int sandbox_destroy_id(sl_ctx *ctx, const char *id, const char *reason, bool allow_pooled,
		       pid_t releaser, sl_err *err)
{
	bool finish = releaser == 0;
	_cleanup_close_ int lk = -1;
	sl_sandbox sb;
	if (record_lock_load(ctx, id, allow_pooled, &sb, &lk, err) < 0) {
		sl_sandbox broken;
		sl_err e = { 0 };
		if (lk < 0 || err->kind == SL_NOTFOUND ||
		    record_load_or_broken(ctx, id, &broken, &e) < 0 || broken.status != SL_ST_BROKEN)
			return -1;
		sl_err_clear(err);
		return destroy_broken(ctx, id);
	}
	if (sb.status == SL_ST_TERMINATED) {
		/* An orphaned release (its releaser died): whoever destroys it again
		 * finishes it. */
		int r = 0;
		if (sb.releaser_pid && !record_pid_alive(sb.releaser_pid, sb.releaser_start))
			r = finish_release(ctx, &sb, err);
		else
			r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was already destroyed", id);
		sandbox_free(&sb);
		return r;
	}
	if (sb.status == SL_ST_CREATING && record_pid_alive(sb.creator_pid, sb.creator_start) &&
	    sb.creator_pid != getpid()) {
		sandbox_free(&sb);
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is still being created", id);
	}
	if (finish) {
		/* One go (the CLI): free everything, then the tombstone. A process that
		 * dies midway leaves a record that says what it was; rm again. */
		release_resources(ctx, &sb);
	} else if (record_pid_alive(sb.init_pid, sb.init_start)) {
		/* Begin: nothing in the sandbox runs another instruction after this. A
		 * frozen cgroup holds SIGKILL until thawed. */
		char cg[64];
		snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
		if (sb.status == SL_ST_PAUSED) {
			sl_err fe = { 0 };
			cgroup_freeze(ctx->cg, cg, false, &fe);
		}
		kill_elsewhere(sb.init_pid);
	}
	sb.status = SL_ST_TERMINATED;
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
	sl_crash_point("delete-tombstoned"); /* init killed, the tombstone written */
	if (r == 0 && finish)
		claim_release_all(ctx, &sb);
	sandbox_free(&sb);
	return r;
}

int sandbox_destroy(sl_ctx *ctx, const char *ref, const char *reason, sl_err *err)
{
	char id[32];
	if (sandbox_resolve_ref(ctx, ref, id, sizeof(id), err) < 0)
		return -1;
	int r = sandbox_destroy_id(ctx, id, reason, false, 0, err);
	if (r == 0)
		tombstones_collect_if_due(ctx);
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
	if (sandbox_resolve_ref(ctx, ref, id, 32, err) < 0)
		return -1;
	return sandbox_destroy_id(ctx, id, reason, false, releaser, err);
}

static int destroy_finish_locked(sl_ctx *ctx, const char *id, sl_err *err)
{
	_cleanup_close_ int lk = -1;
	sl_sandbox sb;
	if (record_lock_load(ctx, id, true, &sb, &lk, err) < 0) {
		/* A broken record's destroy freed it all and removed it (destroy_broken). */
		if (err->kind != SL_NOTFOUND)
			return -1;
		sl_err_clear(err);
		return 0;
	}
	int r = 0;
	if (sb.status == SL_ST_TERMINATED && sb.releaser_pid)
		r = finish_release(ctx, &sb, err);
	sandbox_free(&sb);
	return r;
}

int sandbox_destroy_finish(sl_ctx *ctx, const char *id, sl_err *err)
{
	int r = destroy_finish_locked(ctx, id, err);
	if (r == 0)
		tombstones_collect_if_due(ctx);
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
	if (record_list_ids(ctx, &ids, &nids, err) < 0)
		return -1;
	int done = 0;
	for (size_t i = 0; i < nids; i++) {
		sl_sandbox sb;
		sl_err e = { 0 };
		if (record_load(ctx, ids[i], &sb, &e) < 0)
			continue;
		bool orphan_release = sb.status == SL_ST_TERMINATED && sb.releaser_pid &&
				      !record_pid_alive(sb.releaser_pid, sb.releaser_start);
		/* A pool's sandbox whose daemon is gone, and a create whose process died
		 * before it answered: nobody was told of either, so neither is kept. */
		bool orphan_made = (sb.status == SL_ST_POOLED || sb.status == SL_ST_CREATING) &&
				   !record_pid_alive(sb.creator_pid, sb.creator_start);
		const char *why = sb.status == SL_ST_POOLED ? "discarded" : "create interrupted";
		sandbox_free(&sb);
		if (orphan_release && sandbox_destroy_id(ctx, ids[i], NULL, true, 0, &e) == 0)
			done++;
		else if (orphan_made && sandbox_destroy_id(ctx, ids[i], why, true, 0, &e) == 0) {
			record_remove_dir(ctx, ids[i]);
			done++;
		}
		if (e.kind)
			sl_log(SL_LOG_WARN, "sandbox %s: %s", ids[i], e.msg);
	}
	state_free_names(ids, nids);
	int gone = record_collect_gone(ctx);
	if (gone > 0)
		sl_log(SL_LOG_INFO, "state: removed %d record(s) a crash left half removed", gone);
	int layers = store_layers_collect(&ctx->cfg, has_record, ctx);
	if (layers > 0)
		sl_log(SL_LOG_INFO, "store: removed %d layer(s) a crash left without a record",
		       layers);
	return done;
}

int sandbox_purge(sl_ctx *ctx, const char *id, sl_err *err)
{
	_cleanup_close_ int lk = record_lock(ctx, id, err);
	if (lk < 0)
		return err->kind == SL_NOTFOUND ? (sl_err_clear(err), 0) : -1;
	sl_sandbox sb;
	sl_err e = { 0 };
	if (record_load(ctx, id, &sb, &e) == 0) {
		sandbox_free(&sb);
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s has a record that reads: delete it",
			       id);
	}
	return destroy_broken(ctx, id);
}

int sandbox_discard(sl_ctx *ctx, const char *id, sl_err *err)
{
	if (sandbox_destroy(ctx, id, "discarded", err) < 0)
		return -1;
	record_remove_dir(ctx, id);
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
	if (!*in_use && record_list_ids(ctx, &ids, &nids, err) == 0) {
		for (size_t i = 0; i < nids && !*in_use; i++) {
			sl_sandbox sb;
			sl_err e = { 0 };
			if (record_load(ctx, ids[i], &sb, &e) < 0)
				continue;
			*in_use = sb.status == SL_ST_POOLED && !strcmp(sb.digest, digest);
			sandbox_free(&sb);
		}
		state_free_names(ids, nids);
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

/* The end of a change to a record loaded under its lock: saved (durably) when R, the
 * change's result, is 0; handed to OUT when asked for, freed otherwise. */
static int save_change(sl_ctx *ctx, sl_sandbox *sb, int r, sl_sandbox *out, sl_err *err)
{
	if (r == 0)
		r = record_save(ctx, sb, true, err);
	if (r == 0 && out)
		*out = *sb;
	else
		sandbox_free(sb);
	return r;
}

/* ---- lifecycle ---- */

/* Load under the sandbox's lock; the caller unlocks by closing *lk. */
static int load_locked(sl_ctx *ctx, const char *ref, sl_sandbox *sb, int *lk, sl_err *err)
{
	return sandbox_get_locked(ctx, ref, sb, lk, err);
}

static int want_status(const sl_sandbox *sb, enum sl_status want, const char *verb, sl_err *err)
{
	if (sb->status == want)
		return 0;
	return sl_fail(err, sb->status == SL_ST_TERMINATED ? SL_NOTFOUND : SL_CONFLICT, 0,
		       "sandbox %s is %s; only a %s sandbox can be %s", sb->id,
		       sandbox_status_name(sb->status), sandbox_status_name(want), verb);
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
	/* A hibernated one is restored (hibernate.c). */
	if (!frozen && sb.status == SL_ST_HIBERNATED) {
		int h = hibernate_resume_locked(ctx, &sb, err);
		if (h == 0 && out)
			*out = sb;
		else
			sandbox_free(&sb);
		return h;
	}
	int r = frozen ? want_status(&sb, SL_ST_RUNNING, "paused", err)
		       : want_status(&sb, SL_ST_PAUSED, "resumed", err);
	if (r == 0)
		r = cgroup_freeze(ctx->cg, cg, frozen, err);
	if (r == 0) {
		sb.status = frozen ? SL_ST_PAUSED : SL_ST_RUNNING;
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

/* Every process ended (stop_processes) and the record says stopped. */
static void stop_locked(sl_ctx *ctx, sl_sandbox *sb, int grace_ms)
{
	stop_processes(ctx, sb, grace_ms);
	char sock[PATH_MAX];
	state_run_dir(&ctx->cfg, sb->id, sock, sizeof(sock));
	strcat(sock, "/init.sock");
	unlink(sock);
	sb->status = SL_ST_STOPPED;
	sb->init_pid = 0;
	sb->init_start = 0;
	sb->stopped_ms = sl_now_ms();
}

int sandbox_stop(sl_ctx *ctx, const char *ref, int grace_ms, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status != SL_ST_RUNNING && sb.status != SL_ST_PAUSED && sb.status != SL_ST_FAILED) {
		int r = want_status(&sb, SL_ST_RUNNING, "stopped", err);
		sandbox_free(&sb);
		return r;
	}
	stop_locked(ctx, &sb, grace_ms);
	return save_change(ctx, &sb, 0, out, err);
}

int sandbox_start(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status != SL_ST_STOPPED && sb.status != SL_ST_FAILED) {
		int r = want_status(&sb, SL_ST_STOPPED, "started", err);
		sandbox_free(&sb);
		return r;
	}
	/* A failed init may have left its cgroup behind. */
	stop_processes(ctx, &sb, 0);
	int r = store_ensure(&ctx->cfg, err);
	if (r == 0)
		r = start_init(ctx, &sb, NULL, 0, NULL, NULL, err);
	if (r == 0) {
		sb.status = SL_ST_RUNNING;
		sb.archived = false;
		sb.stopped_ms = 0;
		r = record_save(ctx, &sb, true, err);
	}
	if (r == 0 && out)
		*out = sb;
	else
		sandbox_free(&sb);
	return r;
}

int sandbox_set_stop_policy(sl_ctx *ctx, const char *ref, int64_t archive_min, int64_t delete_min,
			    sl_sandbox *out, sl_err *err)
{
	if ((archive_min != INT64_MIN && archive_min < 0) ||
	    (delete_min != INT64_MIN && delete_min < -1))
		return sl_fail(err, SL_INVALID, 0,
			       "intervals: archive after 0 or more minutes, delete after -1 or more");
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (!sb.stop_policy) { /* Daytona's defaults for what is not given */
		sb.stop_policy = true;
		sb.auto_archive_min = 0;
		sb.auto_delete_min = -1;
	}
	if (archive_min != INT64_MIN)
		sb.auto_archive_min = archive_min;
	if (delete_min != INT64_MIN)
		sb.auto_delete_min = delete_min;
	return save_change(ctx, &sb, 0, out, err);
}

int sandbox_archive(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status == SL_ST_RUNNING || sb.status == SL_ST_PAUSED) {
		stop_locked(ctx, &sb, 10000);
	} else if (sb.status != SL_ST_STOPPED) {
		int r = want_status(&sb, SL_ST_STOPPED, "archived", err);
		sandbox_free(&sb);
		return r;
	}
	sb.archived = true;
	return save_change(ctx, &sb, 0, out, err);
}

/* Every process ended; the layer put back as checkpoint CP has it; started again when
 * RESTART (with CP's processes restored when it holds them, else from the image's entry).
 * A layer that cannot be replaced leaves the old files, started again too, from the
 * image's entry; so does a restore that fails (the call answers its error). */
static int rollback_locked(sl_ctx *ctx, sl_sandbox *sb, const sl_snapshot *cp, bool restart,
			   sl_err *err)
{
	bool was_stopped = sb->status == SL_ST_STOPPED;
	int64_t stopped_ms = sb->stopped_ms;
	stop_locked(ctx, sb, 0);
	if (was_stopped)
		sb->stopped_ms = stopped_ms;
	int r = store_ensure(&ctx->cfg, err);
	if (r == 0)
		r = store_layer_replace(&ctx->cfg, sb->id, cp->id, sb->disk_bytes, err);
	sl_err e2 = { 0 };
	char images[PATH_MAX];
	hibernate_dump_dir(ctx, cp->id, images, sizeof(images));
	if (restart && r == 0 && cp->memory && restore_init(ctx, sb, images, err) == 0) {
		sb->status = SL_ST_RUNNING;
		sb->stopped_ms = 0;
		return 0;
	}
	if (restart && r == 0 && cp->memory)
		r = -1;
	if (restart && start_init(ctx, sb, NULL, 0, NULL, NULL, r == 0 ? err : &e2) == 0) {
		sb->status = SL_ST_RUNNING;
		sb->stopped_ms = 0;
	} else if (restart && r == 0) {
		r = -1;
	}
	return r;
}

int sandbox_rollback(sl_ctx *ctx, const char *ref, const char *checkpoint, sl_sandbox *out,
		     sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	sl_snapshot cp;
	int r = 0;
	if (sb.status != SL_ST_RUNNING && sb.status != SL_ST_PAUSED && sb.status != SL_ST_STOPPED &&
	    sb.status != SL_ST_FAILED)
		r = want_status(&sb, SL_ST_RUNNING, "rolled back", err);
	if (r == 0)
		r = checkpoint_find(ctx, sb.id, checkpoint, &cp, err);
	if (r < 0) {
		sandbox_free(&sb);
		return -1;
	}
	r = rollback_locked(ctx, &sb, &cp, sb.status == SL_ST_RUNNING || sb.status == SL_ST_PAUSED,
			    err);
	/* The record says what is true now, whatever the rollback's result. */
	sl_err e2 = { 0 };
	if (record_save(ctx, &sb, true, r == 0 ? err : &e2) < 0 && r == 0)
		r = -1;
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
	if (record_kv_check("labels", labels, err) < 0)
		return -1;
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status == SL_ST_TERMINATED) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	}
	cJSON_Delete(sb.labels);
	sb.labels = cJSON_Duplicate(labels, 1);
	return save_change(ctx, &sb, 0, out, err);
}

/* Timeouts changed under the lock (-1 keeps one); DROP: the deadline goes, the
 * lifetime it came from stays. */
static int change_timeouts(sl_ctx *ctx, const char *ref, int64_t lifetime_ms, int64_t idle_ms,
			   int64_t exec_ms, bool drop, sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	if (sb.status == SL_ST_TERMINATED) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	}
	if (lifetime_ms >= 0) {
		sb.lifetime_ms = lifetime_ms;
		sb.expires_ms = lifetime_ms ? sl_deadline_after(sl_now_ms(), (uint64_t)lifetime_ms) : 0;
	}
	if (drop)
		sb.expires_ms = 0;
	if (idle_ms >= 0)
		sb.idle_ms = idle_ms;
	if (exec_ms >= 0)
		sb.exec_timeout_ms = exec_ms;
	return save_change(ctx, &sb, 0, out, err);
}

int sandbox_set_timeouts(sl_ctx *ctx, const char *ref, int64_t lifetime_ms, int64_t idle_ms,
			 int64_t exec_ms, sl_sandbox *out, sl_err *err)
{
	return change_timeouts(ctx, ref, lifetime_ms, idle_ms, exec_ms, false, out, err);
}

int sandbox_drop_deadline(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return change_timeouts(ctx, ref, -1, -1, -1, true, out, err);
}

int sandbox_set_network(sl_ctx *ctx, const char *ref, const sl_net_opts *net, sl_sandbox *out,
			sl_err *err)
{
	cJSON *allow = NULL, *deny = NULL;
	if (sbxnet_lists(&ctx->cfg, net, &allow, &deny, err) < 0)
		return -1;
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0) {
		cJSON_Delete(allow);
		cJSON_Delete(deny);
		return -1;
	}
	int r = 0;
	bool had_names = netname_any(sb.net_allow);
	if (sb.status == SL_ST_TERMINATED)
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
	if (r == 0 && sb.net_enabled && (sb.status == SL_ST_RUNNING || sb.status == SL_ST_PAUSED)) {
		sl_net_sandbox ns;
		sbxnet_bufs bufs;
		r = sbxnet_spec(&ctx->cfg, &sb, &ns, &bufs, err);
		ns.names_drop = had_names;
		if (r == 0)
			r = net_set_rules(&ctx->cfg, &ns, err);
	}
	return save_change(ctx, &sb, r, out, err);
}

int sandbox_set_ports(sl_ctx *ctx, const char *ref, const sl_port_setting *set, size_t n,
		      sl_sandbox *out, sl_err *err)
{
	sl_sandbox sb;
	_cleanup_close_ int lk = -1;
	if (load_locked(ctx, ref, &sb, &lk, err) < 0)
		return -1;
	int r = 0;
	if (sb.status == SL_ST_TERMINATED)
		r = sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb.id);
	if (r == 0)
		r = record_ports_apply(&sb.ports, set, n, err);
	return save_change(ctx, &sb, r, out, err);
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
		record_new_preview_token(cur.preview_token);
		r = record_save(ctx, &cur, true, err);
	}
	if (r == 0)
		memcpy(token, cur.preview_token, 65);
	sandbox_free(&cur);
	return r;
}

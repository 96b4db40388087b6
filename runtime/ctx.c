/* ctx.c — opening the engine: the configuration, the state and run dirs made private,
 * the image store secured, the cgroup backend opened, and the package builder handed to
 * create (ctx->package_layer). The top of the runtime: it may include any module. */
#include "ctx.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "image.h"
#include "log.h"
#include "packages.h"
#include "state.h"

int ctx_open(sl_ctx *ctx, sl_err *err)
{
	memset(ctx, 0, sizeof(*ctx));
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->spare_lock, NULL);
	dirwatch_cache_init(&ctx->watches);
	ctx->package_layer = packages_layer;
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
	/* spares: released claims; spare-records: ready-made record dirs (claim.c, spares.c). */
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

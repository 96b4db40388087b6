/* pool.c — the daemon's pool of ready sandboxes (api/pool.c keeps their ids): which
 * creates it can serve, a pooled sandbox handed to a create, or discarded. */
#include "pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "image.h"
#include "record.h"
#include "sandbox_internal.h"

/* A pool take's record. A crash before its sync leaves the "pooled" record (the next
 * daemon discards it), the new one, or the pool's "creating" record, whose creator is
 * then dead: the sandbox reads "failed". Either way the take did not survive the crash,
 * and the id the create returned says so. */
static int record_save_take(const sl_ctx *ctx, const sl_sandbox *sb, sl_err *err)
{
	return record_save(ctx, sb, !sb->ephemeral, err);
}

/* ---- the pool ---- */

int sandbox_pool_discard(sl_ctx *ctx, const char *id, sl_err *err)
{
	if (sandbox_destroy_id(ctx, id, "discarded", true, 0, err) < 0)
		return -1;
	record_remove_dir(ctx, id);
	return 0;
}

bool sandbox_poolable(const sl_create_opts *o)
{
	/* Everything here is fixed when init starts (hostname, limits, mounts, netns). */
	return !o->snapshot && !o->name && !o->cpu_millis && !o->memory && !o->disk && !o->pids &&
	       !o->nvolumes && !o->npackages && !o->net.enabled && !o->nhost_binds && !o->pooled &&
	       !o->secret_env && !o->secret_files && !o->hibernate;
}

int sandbox_resolve_image(sl_ctx *ctx, const char *image, char name[128], char digest[72],
			  sl_err *err)
{
	sl_image img;
	if (sandbox_lookup_image(ctx, image, &img, err) < 0)
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
	if (record_lock_load(ctx, id, true, &sb, &lk, err) < 0)
		return -1;
	record_refresh_status(&sb, true);
	if (sb.status != SL_ST_POOLED) {
		sandbox_free(&sb);
		return sl_fail(err, SL_NOTFOUND, 0, "pooled sandbox %s is %s", id,
			       sandbox_status_name(sb.status));
	}
	/* By the name asked for (one record read; a digest is a scan of every name), which
	 * must still be the pooled sandbox's image. */
	int r = sandbox_lookup_image(ctx, o->image, &img, err);
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
	cJSON_Delete(sb.ports);
	sb.env = sb.labels = sb.ports = NULL;
	record_new_preview_token(sb.preview_token);
	snprintf(sb.owner, sizeof(sb.owner), "%s", owner_acting());
	if (record_kv_object("env", o->env, &sb.env, err) < 0 ||
	    record_kv_object("labels", o->labels, &sb.labels, err) < 0 ||
	    record_ports_apply(&sb.ports, o->ports, o->nports, err) < 0 ||
	    record_request_host(o->request_host, sb.request_host, err) < 0 ||
	    sandbox_image_defaults(ctx, &img, &sb, err) < 0) {
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
	sb.on_lifetime = o->on_lifetime;
	sb.auto_resume = o->auto_resume;
	sb.on_idle = o->on_idle;
	sb.on_idle_set = o->on_idle_set;
	sb.expires_ms = o->lifetime_ms ? sl_deadline_after(sb.created_ms, o->lifetime_ms) : 0;
	sb.status = SL_ST_RUNNING;
	if (record_save_take(ctx, &sb, err) < 0) {
		sandbox_free(&sb);
		return -1;
	}
	*out = sb;
	return 0;
}

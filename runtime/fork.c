/* fork.c — sandbox_fork: a fork base (a hidden snapshot of the source's layer, taken
 * frozen) cloned into new sandboxes made with the source's settings. Above sandbox.c
 * (it creates sandboxes); the base is deleted once the copies exist. */
#include "fork.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "hibernate.h"
#include "log.h"
#include "snapshot.h"

/* The create options a fork of SRC takes, and the arrays they point into. */
typedef struct fork_plan {
	sl_create_opts o;
	char **env, **labels, **allow, **deny;
	sl_volume_spec vols[SL_MAX_VOLUMES];
	sl_port_setting ports[SL_MAX_PORTS + 1];
} fork_plan;

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void plan_free(fork_plan *p)
{
	strv_free(p->env);
	strv_free(p->labels);
	strv_free(p->allow);
	strv_free(p->deny);
}

/* An object of strings as "K=V" (KV) or an array of strings as they are. */
static int strv_of(const cJSON *j, bool kv, char ***out, sl_err *err)
{
	*out = NULL;
	if (!j)
		return 0;
	size_t n = (size_t)cJSON_GetArraySize(j), i = 0;
	if (!(*out = calloc(n + 1, sizeof(char *))))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "fork: settings");
	const cJSON *e;
	cJSON_ArrayForEach(e, j)
	{
		if (!cJSON_IsString(e))
			continue;
		if (kv ? asprintf(&(*out)[i], "%s=%s", e->string, e->valuestring) < 0
		       : !((*out)[i] = strdup(e->valuestring)))
			return sl_fail(err, SL_INTERNAL, ENOMEM, "fork: settings");
		i++;
	}
	return 0;
}

static int plan_of(const sl_sandbox *src, fork_plan *p, sl_err *err)
{
	memset(p, 0, sizeof(*p));
	sl_create_opts *o = &p->o;
	o->cpu_millis = src->limits.cpu_millicores;
	o->memory = src->limits.memory_bytes;
	o->pids = src->limits.pids_max;
	o->disk = src->disk_bytes;
	o->user = src->user;
	o->workdir = src->workdir;
	o->ephemeral = src->ephemeral;
	o->hibernate = src->hibernate;
	o->idle_ms = src->idle_ms;
	o->lifetime_ms = src->lifetime_ms;
	o->exec_timeout_ms = src->exec_timeout_ms;
	o->on_lifetime = src->on_lifetime;
	o->auto_resume = src->auto_resume;
	o->on_idle = src->on_idle;
	o->on_idle_set = src->on_idle_set;
	o->secret_env = src->secret_env;
	o->secret_files = src->secret_files;
	o->net.enabled = src->net_enabled;
	if (strv_of(src->env, true, &p->env, err) < 0 ||
	    strv_of(src->labels, true, &p->labels, err) < 0 ||
	    strv_of(src->net_allow, false, &p->allow, err) < 0 ||
	    strv_of(src->net_deny, false, &p->deny, err) < 0)
		return -1;
	o->env = (const char *const *)p->env;
	o->labels = (const char *const *)p->labels;
	o->net.allow = (const char *const *)p->allow;
	o->net.deny = (const char *const *)p->deny;
	const cJSON *v;
	cJSON_ArrayForEach(v, src->volumes)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(v, "name");
		const cJSON *mp = cJSON_GetObjectItemCaseSensitive(v, "mountPath");
		if (o->nvolumes == SL_MAX_VOLUMES || !cJSON_IsString(nm) || !cJSON_IsString(mp))
			continue;
		p->vols[o->nvolumes++] =
		    (sl_volume_spec){nm->valuestring, mp->valuestring,
				     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "readOnly"))};
	}
	o->volumes = p->vols;
	cJSON_ArrayForEach(v, src->ports)
	{
		if (o->nports > SL_MAX_PORTS ||
		    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "public")))
			continue;
		unsigned port = strcmp(v->string, "*") ? (unsigned)atoi(v->string) : SL_PORT_ALL;
		p->ports[o->nports++] = (sl_port_setting){port, true};
	}
	o->ports = p->ports;
	o->request_host = src->request_host;
	return 0;
}

static int check_opts(const sl_fork_opts *fo, sl_err *err)
{
	if (fo->count < 1 || fo->count > SL_FORK_MAX)
		return sl_fail(err, SL_INVALID, 0, "count %u: give 1 to %d copies", fo->count,
			       SL_FORK_MAX);
	if (fo->name && strlen(fo->name) > 59)
		return sl_fail(err, SL_INVALID, 0,
			       "name \"%s\": at most 59 characters (a suffix "
			       "-N is added to each copy's)",
			       fo->name);
	return 0;
}

/* Undo a fork cut short: its copies go without a trace. */
static void discard_all(sl_ctx *ctx, sl_sandbox *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sl_err e = {0};
		if (sandbox_discard(ctx, list[i].id, &e) < 0)
			sl_log(SL_LOG_WARN, "fork: discard %s: %s", list[i].id, e.msg);
	}
}

int sandbox_fork(sl_ctx *ctx, const char *ref, const sl_fork_opts *fo, sl_sandbox **out, size_t *n,
		 sl_err *err)
{
	*out = NULL;
	*n = 0;
	if (check_opts(fo, err) < 0)
		return -1;
	_cleanup_sandbox_ sl_sandbox src = {0};
	if (sandbox_get(ctx, ref, &src, err) < 0)
		return -1;
	if (src.status == SL_ST_TERMINATED)
		return sl_fail(err, SL_NOTFOUND, 0, "sandbox %s is terminated", src.id);
	if (fo->memory && snapshot_memory_check(&src, "fork", err) < 0)
		return -1;
	fork_plan plan;
	sl_snapshot base;
	int mfd = -1;
	sl_sandbox *list = calloc(fo->count, sizeof(*list));
	if (!list)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "fork %s", src.id);
	/* With memory, the source's processes are dumped while it is frozen for its files. */
	snapshot_hook at_freeze = fo->memory ? snapshot_dump_at_freeze : NULL;
	if (plan_of(&src, &plan, err) < 0 ||
	    snapshot_fork_base(ctx, src.id, at_freeze, &base, &mfd, err) < 0) {
		plan_free(&plan);
		free(list);
		return -1;
	}
	plan.o.fork_base = &base;
	char images[PATH_MAX];
	hibernate_dump_dir(ctx, base.id, images, sizeof(images));
	plan.o.restore_images = fo->memory ? images : NULL;
	int r = 0;
	for (unsigned i = 0; i < fo->count && r == 0; i++) {
		char name[64];
		if (fo->name && fo->count > 1)
			snprintf(name, sizeof(name), "%s-%u", fo->name, i + 1);
		else if (fo->name)
			snprintf(name, sizeof(name), "%s", fo->name);
		plan.o.name = fo->name ? name : NULL;
		r = sandbox_create(ctx, &plan.o, &list[i], err);
		if (r == 0)
			(*n)++;
		else
			sl_wrap(err, "fork %s: copy %u of %u", src.id, i + 1, fo->count);
	}
	if (fo->memory)
		hibernate_dump_delete(ctx, base.id);
	snapshot_fork_base_drop(ctx, &base, mfd);
	plan_free(&plan);
	if (r < 0) {
		discard_all(ctx, list, *n);
		sandbox_free_list(list, *n);
		*n = 0;
		return -1;
	}
	*out = list;
	return 0;
}

/* sandboxes.c — /v1/sandboxes: create (with the body's checks and 501s for fields of
 * later features; packages are installed by the runtime), list with filters, get with usage, patch, delete (tombstone). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "packages.h"
#include "net.h"
#include "quantity.h"
#include "startcmd.h"
#include "http.h"
#include "ports_parse.h"
#include "view.h"

/* ---- the Sandbox shape ---- */

/* KEY = V unless the runtime's record already says (it grows with later features). */
static void add_default(cJSON *o, const char *key, cJSON *v)
{
	if (cJSON_HasObjectItem(o, key))
		cJSON_Delete(v);
	else
		cJSON_AddItemToObject(o, key, v);
}

cJSON *api_sandbox_json(api_server *s, const sl_sandbox *sb, bool detail)
{
	cJSON *o = view_sandbox_json(sb);
	if (!o)
		return NULL;
	add_default(o, "snapshot", cJSON_CreateNull());
	add_default(o, "expiresAt", cJSON_CreateNull());
	cJSON *net = cJSON_CreateObject();
	cJSON_AddBoolToObject(net, "enabled", false);
	add_default(o, "network", net);
	cJSON *t = cJSON_CreateObject();
	cJSON_AddNullToObject(t, "idle");
	cJSON_AddNullToObject(t, "lifetime");
	cJSON_AddNullToObject(t, "execution");
	add_default(o, "timeout", t);
	if (!detail)
		return o;
	/* diskBytes stays 0 until the storage layer reports a sandbox's usage. */
	sl_cgusage u = {0};
	char cg[64];
	sl_err err = {0};
	snprintf(cg, sizeof(cg), "sandlot/%s", sb->id);
	if (sb->status == SL_ST_RUNNING || sb->status == SL_ST_PAUSED)
		cgroup_usage_basic(s->ctx->cg, cg, &u, &err);
	cJSON *use = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(use, "cpuSeconds", u.cpu_usage_ns / 1e9);
	cJSON_AddNumberToObject(use, "memoryBytes", (double)u.memory_bytes);
	cJSON_AddNumberToObject(use, "diskBytes", 0);
	cJSON_AddNumberToObject(use, "pids", (double)u.pids_current);
	size_t nex = 0;
	sl_err e2 = {0};
	if (sb->status != SL_ST_TERMINATED)
		exec_count(s->ctx, sb->id, &nex, &e2);
	cJSON_AddNumberToObject(o, "executions", (double)nex);
	return o;
}

/* ---- shared helpers ---- */

static int live_of(api_server *s, const char *ref, sl_sandbox *sb, bool for_init, sl_err *err)
{
	int rc = for_init ? sandbox_get_for_init(s->ctx, ref, sb, err)
			  : sandbox_get(s->ctx, ref, sb, err);
	if (rc < 0) {
		if (err->kind == SL_INVALID)
			err->kind = SL_NOTFOUND;
		return -1;
	}
	if (sb->status == SL_ST_TERMINATED) {
		sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed (%s)", sb->id,
			sb->reason[0] ? sb->reason : "deleted");
		sandbox_free(sb);
		return -1;
	}
	if (sb->status == SL_ST_BROKEN) {
		sl_fail(err, SL_CONFLICT, 0, "sandbox %s is broken (%s): delete it", sb->id,
			sb->reason);
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

int api_sandbox_live(api_server *s, const char *ref, sl_sandbox *sb, sl_err *err)
{
	return live_of(s, ref, sb, false, err);
}

int api_sandbox_ready(api_server *s, const char *ref, bool for_init, bool resume, sl_sandbox *sb,
		      sl_err *err)
{
	if (live_of(s, ref, sb, for_init, err) < 0)
		return -1;
	if (sb->status != SL_ST_PAUSED && sb->status != SL_ST_HIBERNATED)
		return 0;
	if (!resume) {
		sl_fail(err, SL_CONFLICT, 0, "sandbox %s is %s; resume it or pass ?autoResume=1",
			sb->id, sandbox_status_name(sb->status));
		sandbox_free(sb);
		return -1;
	}
	char id[32];
	snprintf(id, sizeof(id), "%s", sb->id);
	sandbox_free(sb);
	return api_sandbox_wake(s, id, 0, sb, err);
}

int api_sandbox_wake(api_server *s, const char *id, uint64_t min_lifetime_ms, sl_sandbox *sb,
		     sl_err *err)
{
	if (sandbox_resume(s->ctx, id, sb, err) < 0) {
		if (err->kind != SL_CONFLICT || sandbox_get(s->ctx, id, sb, err) < 0)
			return -1;
		*err = (sl_err){0};
	}
	uint64_t life = sb->lifetime_ms > min_lifetime_ms ? sb->lifetime_ms : min_lifetime_ms;
	if (sb->expires_ms || !life)
		return 0;
	sandbox_free(sb);
	return sandbox_set_timeouts(s->ctx, id, (int64_t)life, -1, -1, sb, err);
}

static int for_call_of(api_req *r, sl_sandbox *sb, bool for_init, sl_err *err)
{
	bool resume = false;
	if (api_query_bool(r, "autoResume", false, &resume, err) < 0)
		return -1;
	return api_sandbox_ready(r->srv, r->param[0], for_init, resume, sb, err);
}

int api_sandbox_for_call(api_req *r, sl_sandbox *sb, sl_err *err)
{
	return for_call_of(r, sb, false, err);
}

int api_sandbox_for_exec(api_req *r, sl_sandbox *sb, sl_err *err)
{
	return for_call_of(r, sb, true, err);
}

char *api_sandbox_path(const sl_sandbox *sb, const char *field, const char *path, sl_err *err)
{
	if (!path || !*path) {
		sl_fail(err, SL_INVALID, 0, "%s: required (a path inside the sandbox)", field);
		return NULL;
	}
	if (strlen(path) >= 4000) {
		sl_fail(err, SL_INVALID, 0, "%s: too long", field);
		return NULL;
	}
	char *out;
	int n = path[0] == '/'
		    ? asprintf(&out, "%s", path)
		    : asprintf(&out, "%s/%s", strcmp(sb->workdir, "/") ? sb->workdir : "", path);
	if (n < 0) {
		sl_fail(err, SL_INTERNAL, ENOMEM, "%s", field);
		return NULL;
	}
	return out;
}

/* ---- create ---- */

/* Fields of later features: present and meaningful -> 501 naming them. */
static int later_fields(const cJSON *body, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "command");
	if (v && !cJSON_IsNull(v))
		return sl_fail(err, SL_NOTIMPL, 0,
			       "command: a start command for the sandbox is not available yet");
	return 0;
}

/* An array of strings (at most SL_NET_MAX_RULES) as a NULL-terminated list. */
static int cidr_list(const cJSON *net, const char *key, char ***out, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(net, key), *it;
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sl_fail(err, SL_INVALID, 0, "network.%s: expected an array of CIDRs", key);
	int n = cJSON_GetArraySize(v), i = 0;
	if (n > SL_NET_MAX_RULES)
		return sl_fail(err, SL_INVALID, 0, "network.%s: at most %d entries", key,
			       SL_NET_MAX_RULES);
	char **list = calloc(n + 1, sizeof(char *));
	if (!list)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "network.%s", key);
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it) || !(list[i++] = strdup(it->valuestring))) {
			api_strv_free(list);
			return sl_fail(err, SL_INVALID, 0,
				       "network.%s[%d]: expected a CIDR string like \"10.0.0.0/8\"",
				       key, i - 1);
		}
	}
	*out = list;
	return 0;
}

int api_json_network(const cJSON *o, const char *key, sl_net_opts *net, bool *enabled_given,
		     char ***allow, char ***deny, sl_err *err)
{
	static const char *const f[] = {"enabled", "allow", "deny", NULL};
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	memset(net, 0, sizeof(*net));
	*enabled_given = false;
	*allow = *deny = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sl_fail(err, SL_INVALID, 0,
			       "%s: expected an object {enabled, allow, deny}", key);
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(v, "enabled");
	*enabled_given = en && !cJSON_IsNull(en);
	if (api_json_fields(v, "network.", f, err) < 0 ||
	    api_json_bool(v, "network.", "enabled", &net->enabled, err) < 0 ||
	    cidr_list(v, "allow", allow, err) < 0)
		return -1;
	if (cidr_list(v, "deny", deny, err) < 0) {
		api_strv_free(*allow);
		*allow = NULL;
		return -1;
	}
	net->allow = (const char *const *)*allow;
	net->deny = (const char *const *)*deny;
	return 0;
}

/* The timeout object {idle, lifetime, execution, onLifetime, onIdle, autoResume}:
 * durations; -1 in *_ms = absent. The last three are create's alone (O NULL: refused, as
 * a PATCH that would silently keep the old ones). */
static int parse_timeouts(const cJSON *body, int64_t ms[3], sl_create_opts *o, sl_err *err)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout");
	ms[0] = ms[1] = ms[2] = -1;
	if (!t || cJSON_IsNull(t))
		return 0;
	static const char *const f[] = {"idle",	  "lifetime",	"execution", "onLifetime",
					"onIdle", "autoResume", NULL};
	if (api_json_fields(t, "timeout.", f, err) < 0)
		return -1;
	for (size_t i = 0; i < 3; i++) {
		bool given;
		uint64_t v = 0;
		if (api_json_duration(t, "timeout.", f[i], &v, &given, err) < 0)
			return -1;
		if (given)
			ms[i] = (int64_t)v;
	}
	const char *on = NULL, *idle = NULL;
	bool resume = false;
	if (api_json_string(t, "timeout.", "onLifetime", &on, err) < 0 ||
	    api_json_string(t, "timeout.", "onIdle", &idle, err) < 0 ||
	    api_json_bool(t, "timeout.", "autoResume", &resume, err) < 0)
		return -1;
	if ((on || idle || cJSON_GetObjectItemCaseSensitive(t, "autoResume")) && !o)
		return sl_fail(err, SL_INVALID, 0,
			       "timeout.onLifetime, timeout.onIdle, timeout.autoResume: set at "
			       "create only");
	if (on && sandbox_on_lifetime_parse(on, &o->on_lifetime) < 0)
		return sl_fail(
		    err, SL_INVALID, 0,
		    "timeout.onLifetime: \"%.32s\" is none of delete, pause, stop, hibernate", on);
	if (idle && sandbox_on_lifetime_parse(idle, &o->on_idle) < 0)
		return sl_fail(
		    err, SL_INVALID, 0,
		    "timeout.onIdle: \"%.32s\" is none of delete, pause, stop, hibernate", idle);
	if (o) {
		o->auto_resume = resume;
		o->on_idle_set = idle != NULL;
	}
	return 0;
}

/* volumes: [{name, mountPath, readOnly?}] */
static int parse_volumes(const cJSON *body, sl_volume_spec *vs, size_t *n, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "volumes");
	*n = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sl_fail(err, SL_INVALID, 0, "volumes: expected an array");
	static const char *const f[] = {"name", "mountPath", "readOnly", NULL};
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		char where[32];
		snprintf(where, sizeof(where), "volumes[%zu].", *n);
		if (*n >= 16)
			return sl_fail(err, SL_INVALID, 0, "volumes: at most 16");
		if (!cJSON_IsObject(it))
			return sl_fail(err, SL_INVALID, 0, "volumes[%zu]: expected an object", *n);
		bool ro = false;
		if (api_json_fields(it, where, f, err) < 0 ||
		    api_json_string(it, where, "name", &vs[*n].source, err) < 0 ||
		    api_json_string(it, where, "mountPath", &vs[*n].mount_path, err) < 0 ||
		    api_json_bool(it, where, "readOnly", &ro, err) < 0)
			return -1;
		if (!vs[*n].source || !vs[*n].mount_path)
			return sl_fail(err, SL_INVALID, 0, "%sname and mountPath are required",
				       where);
		vs[*n].readonly = ro;
		(*n)++;
	}
	return 0;
}

/* packages: [{name, version?, manager: apt|pip|npm}]; the runtime checks the names. */
static int parse_packages(const cJSON *body, sl_package *pk, size_t *n, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "packages");
	*n = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sl_fail(err, SL_INVALID, 0, "packages: expected an array");
	static const char *const f[] = {"name", "version", "manager", NULL};
	const cJSON *it;
	cJSON_ArrayForEach(it, v)
	{
		char where[32];
		snprintf(where, sizeof(where), "packages[%zu].", *n);
		if (*n >= SL_MAX_PACKAGES)
			return sl_fail(err, SL_INVALID, 0, "packages: at most %d", SL_MAX_PACKAGES);
		if (!cJSON_IsObject(it))
			return sl_fail(err, SL_INVALID, 0, "packages[%zu]: expected an object", *n);
		sl_package *p = &pk[*n];
		memset(p, 0, sizeof(*p));
		if (api_json_fields(it, where, f, err) < 0 ||
		    api_json_string(it, where, "name", &p->name, err) < 0 ||
		    api_json_string(it, where, "version", &p->version, err) < 0 ||
		    api_json_string(it, where, "manager", &p->manager, err) < 0)
			return -1;
		if (!p->name || !p->manager)
			return sl_fail(err, SL_INVALID, 0,
				       "%sname and manager (apt, pip or npm) are required", where);
		(*n)++;
	}
	return packages_validate(pk, *n, err);
}

/* A quantity may come as a string ("512Mi") or a number (0.5, 1e9). */
static int quantity_field(const cJSON *res, const char *key, bool cpu, uint64_t *out, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, key);
	char field[32], num[64];
	snprintf(field, sizeof(field), "resources.%s", key);
	if (!v || cJSON_IsNull(v))
		return 0;
	const char *text;
	if (cJSON_IsString(v)) {
		text = v->valuestring;
	} else if (cJSON_IsNumber(v)) {
		snprintf(num, sizeof(num), "%.17g", v->valuedouble);
		text = num;
	} else {
		return sl_fail(err, SL_INVALID, 0, "%s: expected a quantity like \"%s\"", field,
			       cpu ? "500m" : "512Mi");
	}
	return cpu ? quantity_parse_cpu(field, text, out, err)
		   : quantity_parse_bytes(field, text, out, err);
}

static int parse_resources(const cJSON *body, sl_create_opts *o, sl_err *err)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(body, "resources");
	if (!res || cJSON_IsNull(res))
		return 0;
	static const char *const f[] = {"cpu", "memory", "disk", "pids", NULL};
	if (api_json_fields(res, "resources.", f, err) < 0 ||
	    quantity_field(res, "cpu", true, &o->cpu_millis, err) < 0 ||
	    quantity_field(res, "memory", false, &o->memory, err) < 0 ||
	    quantity_field(res, "disk", false, &o->disk, err) < 0)
		return -1;
	bool given;
	return api_json_uint(res, "resources.", "pids", 1, 4194304, &o->pids, &given, err);
}

/* KEY, an object of names -> secret names (checked by the runtime), or absent. */
static int secret_refs(const cJSON *body, const char *key, const cJSON **out, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sl_fail(err, SL_INVALID, 0, "%s: expected an object of secret names", key);
	*out = v;
	return 0;
}

int api_sandbox_create_from(api_server *s, const cJSON *body, bool ephemeral, bool run_body,
			    sl_sandbox *out, sl_err *err)
{
	static const char *const fields[] = {
	    "image",   "snapshot", "name",    "ephemeral", "resources",	       "env",
	    "labels",  "network",  "timeout", "user",	   "workingDirectory", "packages",
	    "volumes", "command",  "ports",	       "runImageCommand", "secrets",
	    "secretFiles", "hibernate", "requestHost", NULL};
	sl_create_opts o = {0};
	int64_t tmo[3] = {-1, -1, -1};
	sl_volume_spec vols[16];
	sl_package pkgs[SL_MAX_PACKAGES];
	sl_port_setting ports[SL_MAX_PORTS];
	char **env = NULL, **labels = NULL, **allow = NULL, **deny = NULL;
	bool net_given;
	int r = -1;
	if (!run_body) {
		if (body &&
		    (api_json_fields(body, "", fields, err) < 0 || later_fields(body, err) < 0 ||
		     api_json_network(body, "network", &o.net, &net_given, &allow, &deny, err) < 0 ||
		     parse_timeouts(body, tmo, &o, err) < 0 ||
		     parse_volumes(body, vols, &o.nvolumes, err) < 0 ||
		     parse_packages(body, pkgs, &o.npackages, err) < 0 ||
		     ports_parse(cJSON_GetObjectItemCaseSensitive(body, "ports"), ports, &o.nports,
				 err) < 0 ||
		     api_json_string(body, "", "snapshot", &o.snapshot, err) < 0 ||
		     api_json_string(body, "", "requestHost", &o.request_host, err) < 0 ||
		     api_json_string(body, "", "name", &o.name, err) < 0 ||
		     api_json_string(body, "", "user", &o.user, err) < 0 ||
		     api_json_string(body, "", "workingDirectory", &o.workdir, err) < 0 ||
		     api_json_bool(body, "", "ephemeral", &o.ephemeral, err) < 0 ||
		     api_json_bool(body, "", "hibernate", &o.hibernate, err) < 0 ||
		     api_json_kv(body, "", "labels", &labels, err) < 0 ||
		     secret_refs(body, "secrets", &o.secret_env, err) < 0 ||
		     secret_refs(body, "secretFiles", &o.secret_files, err) < 0))
			goto out;
	}
	if (body &&
	    (api_json_string(body, "", "image", &o.image, err) < 0 ||
	     parse_resources(body, &o, err) < 0 || api_json_kv(body, "", "env", &env, err) < 0))
		goto out;
	if (ephemeral)
		o.ephemeral = true;
	o.env = (const char *const *)env;
	o.labels = (const char *const *)labels;
	o.volumes = vols;
	o.packages = pkgs;
	o.ports = ports;
	o.idle_ms = tmo[0] > 0 ? (uint64_t)tmo[0] : 0;
	o.lifetime_ms = tmo[1] > 0 ? (uint64_t)tmo[1] : 0;
	o.exec_timeout_ms = tmo[2] > 0 ? (uint64_t)tmo[2] : 0;
	if (sandbox_create_admit(s->ctx, &o, err) < 0)
		goto out;
	int pooled = api_pool_take(s, &o, out, err);
	if (pooled < 0 || (!pooled && sandbox_create(s->ctx, &o, out, err) < 0))
		goto out;
	/* The image's start command (E2B's setStartCmd) running and ready before the
	 * answer; a sandbox whose start fails is not left behind. */
	char start_exec[32];
	if (startcmd_image_run(s->ctx, out, start_exec, err) < 0) {
		sl_err e2 = {0};
		api_destroy(s, out->id, "its image's start command failed", &e2);
		sandbox_free(out);
		goto out;
	}
	r = 0;
out:
	api_strv_free(env);
	api_strv_free(labels);
	api_strv_free(allow);
	api_strv_free(deny);
	return r;
}

enum MHD_Result api_sandboxes_create(api_req *r)
{
	const cJSON *body;
	sl_err err = {0};
	sl_sandbox sb;
	bool run_image = false;
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && api_json_bool(body, "", "runImageCommand", &run_image, &err) < 0))
		return api_reply_error(r, &err);
	/* The image names a command, or the create is refused before anything is made. */
	_cleanup_free_ char **cmd = NULL;
	if (run_image) {
		sl_image img;
		const char *name = NULL;
		if (api_json_string(body, "", "image", &name, &err) < 0 ||
		    sandbox_lookup_image(r->srv->ctx, name, &img, &err) < 0 ||
		    image_command(r->srv->ctx->cfg.state_dir, &img, &cmd, &err) < 0)
			return api_reply_error(r, &err);
		if (!cmd)
			return api_fail(r, SL_INVALID,
					"runImageCommand: image %s names no command (Entrypoint or "
					"Cmd)",
					img.name);
	}
	if (api_sandbox_create_from(r->srv, body, false, false, &sb, &err) < 0)
		return api_reply_error(r, &err);
	sl_exec e;
	sl_exec_spec spec = {.argv = cmd};
	if (cmd && exec_start(r->srv->ctx, &sb, &spec, &e, &err) < 0) {
		/* A create that cannot start what it was asked to leaves nothing. */
		sl_err e2 = {0};
		api_destroy(r->srv, sb.id, "runImageCommand failed", &e2);
		sandbox_free(&sb);
		return api_reply_error(r, &err);
	}
	cJSON *o = api_sandbox_json(r->srv, &sb, true);
	if (cmd) {
		cJSON_AddStringToObject(o, "imageCommandExecution", e.id);
		exec_free(&e);
	}
	sandbox_free(&sb);
	return api_reply_json(r, 201, o);
}

/* ---- list ---- */

typedef struct list_filter {
	char statuses[8][16];
	int nstatus;
	char *labels[32]; /* "k=v" */
	int nlabels;
	sl_err err;
} list_filter;

static const char *const known_statuses[] = {"creating",   "running", "paused", "stopped",
					     "terminated", "failed",  NULL};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	list_filter *f = cls;
	if (f->err.kind || !value)
		return MHD_YES;
	if (!strcmp(key, "label")) {
		if (!strchr(value, '=')) {
			sl_fail(&f->err, SL_INVALID, 0,
				"?label=%s: expected k=v (escape = as %%3D)", value);
			return MHD_NO;
		}
		if (f->nlabels == 32) {
			sl_fail(&f->err, SL_INVALID, 0, "?label: at most 32 filters");
			return MHD_NO;
		}
		f->labels[f->nlabels++] = (char *)value;
	} else if (!strcmp(key, "status")) {
		_cleanup_free_ char *copy = strdup(value);
		char *save = NULL;
		for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
		     t = strtok_r(NULL, ",", &save)) {
			bool ok = false;
			for (const char *const *k = known_statuses; *k; k++)
				ok = ok || !strcmp(*k, t);
			if (!ok || f->nstatus == 8) {
				sl_fail(&f->err, SL_INVALID, 0,
					"?status=%s: one or more of creating, running, paused, "
					"stopped, terminated, failed",
					t);
				return MHD_NO;
			}
			snprintf(f->statuses[f->nstatus++], 16, "%s", t);
		}
	}
	return MHD_YES;
}

static bool filter_match(const list_filter *f, const sl_sandbox *sb)
{
	if (f->nstatus) {
		bool ok = false;
		for (int i = 0; i < f->nstatus; i++)
			ok = ok || !strcmp(f->statuses[i], sandbox_status_name(sb->status));
		if (!ok)
			return false;
	} else if (sb->status == SL_ST_TERMINATED) {
		return false; /* tombstones only when asked for */
	}
	for (int i = 0; i < f->nlabels; i++) {
		const char *eq = strchr(f->labels[i], '=');
		char key[256];
		if ((size_t)(eq - f->labels[i]) >= sizeof(key))
			return false; /* no label key is that long (create refuses them) */
		snprintf(key, sizeof(key), "%.*s", (int)(eq - f->labels[i]), f->labels[i]);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(sb->labels, key);
		if (!cJSON_IsString(v) || strcmp(v->valuestring, eq + 1))
			return false;
	}
	return true;
}

enum MHD_Result api_sandboxes_list(api_req *r)
{
	list_filter f = {0};
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, &f);
	if (f.err.kind)
		return api_reply_error(r, &f.err);
	uint64_t limit = 1000000, offset = 0;
	sl_err err = {0};
	if (api_query_uint(r, "limit", 1000000, &limit, &err) < 0 ||
	    api_query_uint(r, "offset", UINT32_MAX, &offset, &err) < 0)
		return api_reply_error(r, &err);
	sl_sandbox *list;
	size_t n;
	bool tombstones = false; /* read only when a status asked for names them */
	for (int i = 0; i < f.nstatus; i++)
		tombstones = tombstones || !strcmp(f.statuses[i], "terminated");
	if ((tombstones ? sandbox_list : sandbox_list_live)(r->srv->ctx, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "sandboxes");
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (!filter_match(&f, &list[i]))
			continue;
		if (total >= offset && total - offset < limit)
			cJSON_AddItemToArray(arr, api_sandbox_json(r->srv, &list[i], false));
		total++;
	}
	sandbox_free_list(list, n);
	cJSON_AddNumberToObject(o, "total", (double)total);
	return api_reply_json(r, 200, o);
}

/* ---- get, patch, delete ---- */

enum MHD_Result api_sandboxes_get(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (sandbox_get(r->srv->ctx, r->param[0], &sb, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	cJSON *o = api_sandbox_json(r->srv, &sb, true);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_sandboxes_patch(api_req *r)
{
	static const char *const fields[] = {"labels", "timeout", "network", "ports", NULL};
	const cJSON *body;
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0}, now = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0)
		return api_reply_error(r, &err);
	int64_t tmo[3];
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(body, "labels");
	char **kv = NULL;
	/* Read for its checks (messages naming the field); the runtime takes the object. */
	if (parse_timeouts(body, tmo, NULL, &err) < 0 ||
	    api_json_kv(body, "", "labels", &kv, &err) < 0)
		return api_reply_error(r, &err);
	api_strv_free(kv);
	sl_port_setting ports[SL_MAX_PORTS];
	size_t nports = 0;
	const cJSON *portsv = cJSON_GetObjectItemCaseSensitive(body, "ports");
	if (ports_parse(portsv, ports, &nports, &err) < 0)
		return api_reply_error(r, &err);
	sl_net_opts net;
	bool net_enabled_given;
	char **allow = NULL, **deny = NULL;
	const cJSON *netv = cJSON_GetObjectItemCaseSensitive(body, "network");
	if (api_json_network(body, "network", &net, &net_enabled_given, &allow, &deny, &err) < 0)
		return api_reply_error(r, &err);
	if (api_sandbox_for_call(r, &sb, &err) < 0) {
		api_strv_free(allow);
		api_strv_free(deny);
		return api_reply_error(r, &err);
	}
	int rc = 0;
	if (netv && !cJSON_IsNull(netv)) {
		if (!net_enabled_given)
			net.enabled = sb.net_enabled;
		rc = sandbox_set_network(r->srv->ctx, sb.id, &net, NULL, &err);
	}
	api_strv_free(allow);
	api_strv_free(deny);
	if (rc == 0 && labels && !cJSON_IsNull(labels))
		rc = sandbox_set_labels(r->srv->ctx, sb.id, labels, NULL, &err);
	if (rc == 0 && nports)
		rc = sandbox_set_ports(r->srv->ctx, sb.id, ports, nports, NULL, &err);
	if (rc == 0 && (tmo[0] >= 0 || tmo[1] >= 0 || tmo[2] >= 0))
		rc = sandbox_set_timeouts(r->srv->ctx, sb.id, tmo[1], tmo[0], tmo[2], NULL, &err);
	/* The sandbox as the changes left it. */
	if (rc < 0 || sandbox_get(r->srv->ctx, sb.id, &now, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, 200, api_sandbox_json(r->srv, &now, true));
}

enum MHD_Result api_sandboxes_delete(api_req *r)
{
	sl_err err = {0};
	if (api_destroy(r->srv, r->param[0], "deleted", &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	return api_reply_empty(r, 204);
}

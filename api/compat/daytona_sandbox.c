/* daytona_sandbox.c — Daytona's control plane (/api/sandbox...): a Daytona create body
 * becomes a /v1 create body for api_sandbox_create_from, a sandlot record becomes a
 * Daytona Sandbox DTO; start/stop/delete/labels/intervals are the runtime's calls. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "daytona.h"
#include "log.h"
#include "netname.h"
#include "snapshot.h"

#define GIB	     1073741824.0
#define LIST_DEFAULT 100
#define LIST_MAX     1000

/* ---- the Sandbox DTO ---- */

static const char *dt_state(const char *status)
{
	if (!strcmp(status, "running"))
		return "started";
	if (!strcmp(status, "terminated"))
		return "destroyed";
	if (!strcmp(status, "failed") || !strcmp(status, "broken"))
		return "error"; /* broken: a record that cannot be read */
	return status;		/* creating, stopped, paused: the same words */
}

static void copy_item(cJSON *to, const char *key, const cJSON *from, const char *fkey)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, fkey);
	cJSON_AddItemToObject(to, key, v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
}

/* The DTO from /v1's Sandbox object (so whatever /v1 reports, network included, is
 * what Daytona sees). */
static cJSON *sandbox_dto(api_req *r, const sl_sandbox *sb)
{
	cJSON *v1 = api_sandbox_json(r->srv, sb, false);
	if (!v1)
		return NULL;
	const sl_config *cfg = &r->srv->ctx->cfg;
	cJSON *o = cJSON_CreateObject();
	char buf[300];
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "name", sb->name[0] ? sb->name : sb->id);
	cJSON_AddStringToObject(o, "organizationId", "local");
	cJSON_AddStringToObject(o, "snapshot", sb->snapshot[0] ? sb->snapshot : sb->image);
	cJSON_AddStringToObject(o, "user", sb->user);
	copy_item(o, "env", v1, "env");
	copy_item(o, "labels", v1, "labels");
	cJSON_AddBoolToObject(o, "public", sandbox_port_public(sb, SL_PORT_ALL));
	cJSON_AddStringToObject(o, "target", "local");
	uint64_t cpu = sb->limits.cpu_millicores ? sb->limits.cpu_millicores : cfg->def_cpu_millis;
	uint64_t mem = sb->limits.memory_bytes ? sb->limits.memory_bytes : cfg->def_memory;
	uint64_t disk = sb->disk_bytes ? sb->disk_bytes : cfg->def_disk;
	cJSON_AddNumberToObject(o, "cpu", cpu / 1000.0);
	cJSON_AddNumberToObject(o, "gpu", 0);
	cJSON_AddNumberToObject(o, "memory", mem / GIB);
	cJSON_AddNumberToObject(o, "disk", disk / GIB);
	/* Archived: hibernated (its memory on disk), or stopped with its files. */
	const char *state =
	    (sb->archived && sb->status == SL_ST_STOPPED) || sb->status == SL_ST_HIBERNATED
		? "archived"
		: dt_state(sandbox_status_name(sb->status));
	cJSON_AddStringToObject(o, "state", state);
	cJSON_AddStringToObject(o, "desiredState",
				!strcmp(state, "stopped") || !strcmp(state, "destroyed") ? state
				: !strcmp(state, "paused")				 ? "paused"
							   : "started");
	if (sb->status == SL_ST_FAILED || sb->status == SL_ST_BROKEN)
		cJSON_AddStringToObject(o, "errorReason", sb->reason[0] ? sb->reason : "failed");
	cJSON_AddStringToObject(o, "backupState", "None");
	cJSON_AddStringToObject(o, "daemonVersion", SANDLOT_VERSION);
	cJSON_AddBoolToObject(o, "recoverable", false);
	cJSON_AddNumberToObject(o, "autoStopInterval", (double)(sb->idle_ms / 60000));
	cJSON_AddNumberToObject(o, "autoArchiveInterval",
				(double)(sb->stop_policy ? sb->auto_archive_min : 0));
	cJSON_AddNumberToObject(o, "autoPauseInterval", 0);
	cJSON_AddNumberToObject(o, "autoDeleteInterval",
				sb->stop_policy ? (double)sb->auto_delete_min
						: sb->ephemeral ? 0 : -1);
	copy_item(o, "createdAt", v1, "createdAt");
	copy_item(o, "updatedAt", v1, "createdAt");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(v1, "expiresAt");
	if (cJSON_IsString(exp))
		cJSON_AddStringToObject(o, "autoDestroyAt", exp->valuestring);
	/* Network: /v1's {enabled, allow} as Daytona's block-all flag and allow-list. */
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(v1, "network");
	bool on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(net, "enabled"));
	cJSON_AddBoolToObject(o, "networkBlockAll", !on);
	/* allow holds CIDRs and names: each goes back to its own Daytona list. */
	const cJSON *allow = cJSON_GetObjectItemCaseSensitive(net, "allow"), *a;
	for (int names = 0; names < 2; names++) {
		buf[0] = '\0';
		cJSON_ArrayForEach(a, allow)
		{
			if (cJSON_IsString(a) && netname_is_name(a->valuestring) == names &&
			    strlen(buf) + strlen(a->valuestring) + 2 < sizeof(buf))
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
					 buf[0] ? "," : "", a->valuestring);
		}
		if (on && buf[0])
			cJSON_AddStringToObject(o, names ? "domainAllowList" : "networkAllowList",
						buf);
	}
	cJSON *vols = cJSON_AddArrayToObject(o, "volumes");
	const cJSON *vol;
	cJSON_ArrayForEach(vol, sb->volumes)
	{
		cJSON *d = cJSON_CreateObject();
		copy_item(d, "volumeId", vol, "name");
		copy_item(d, "mountPath", vol, "mountPath");
		cJSON_AddItemToArray(vols, d);
	}
	char origin[256];
	dt_origin(r, origin, sizeof(origin));
	snprintf(buf, sizeof(buf), "%s/toolbox", origin);
	cJSON_AddStringToObject(o, "toolboxProxyUrl", buf);
	cJSON_Delete(v1);
	return o;
}

/* The live sandbox named by r->param[0] (a tombstone is 404, as Daytona's GET of a
 * deleted sandbox is). */
static int lookup(api_req *r, sl_sandbox *sb, sl_err *err)
{
	cJSON *dto = NULL;
	if (dt_build_resolve(r, &dto) == 2) {
		cJSON_Delete(dto);
		return sl_fail(err, SL_CONFLICT, 0,
			       "sandbox %s is being built; wait for it to start", r->param[0]);
	}
	if (api_sandbox_live(r->srv, r->param[0], sb, err) < 0)
		return -1;
	api_touch(r->srv, sb->id);
	return 0;
}

static enum MHD_Result reply_dto(api_req *r, const char *id, unsigned status)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (sandbox_get(r->srv->ctx, id, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = sandbox_dto(r, &sb);
	sandbox_free(&sb);
	return api_reply_json(r, status, o);
}

/* ---- create: the Daytona body as a /v1 body ---- */

/* A whole number of minutes (Daytona's intervals); -1 allowed where NEG. */
static int minutes(const cJSON *body, const char *key, bool neg, int64_t *out, bool *given,
		   sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
	*given = v && !cJSON_IsNull(v);
	if (!*given)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (neg ? -1 : 0) || v->valuedouble > 525600 * 10)
		return sl_fail(err, SL_INVALID, 0, "%s: expected a whole number of minutes%s", key,
			       neg ? " (or -1)" : "");
	*out = (int64_t)v->valuedouble;
	return 0;
}

int dt_lookup(api_req *r, sl_sandbox *sb, sl_err *err)
{
	return lookup(r, sb, err);
}

enum MHD_Result dt_reply_sandbox(api_req *r, const char *id, unsigned status)
{
	return reply_dto(r, id, status);
}

int dt_stop_policy_apply(api_req *r, const cJSON *body, const char *id, sl_sandbox *out)
{
	int64_t arch = INT64_MIN, del = INT64_MIN;
	bool ag = false, dg = false;
	sl_err err = {0};
	if (body && (minutes(body, "autoArchiveInterval", false, &arch, &ag, &err) < 0 ||
		     minutes(body, "autoDeleteInterval", true, &del, &dg, &err) < 0))
		return -1;
	if (!ag && !dg)
		return 1;
	if (sandbox_set_stop_policy(r->srv->ctx, id, ag ? arch : INT64_MIN, dg ? del : INT64_MIN,
				    out, &err) < 0) {
		sl_log(SL_LOG_WARN, "sandbox %s: stop policy: %s", id, err.msg);
		return -1;
	}
	return 0;
}

/* Daytona's cpu (cores) / memory and disk (GiB) as /v1 resources. */
static int resources(const cJSON *body, cJSON *v1, sl_err *err)
{
	static const char *const keys[] = {"cpu", "memory", "disk"};
	cJSON *res = NULL;
	for (int i = 0; i < 3; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, keys[i]);
		if (!v || cJSON_IsNull(v))
			continue;
		if (!cJSON_IsNumber(v) || v->valuedouble <= 0 || v->valuedouble > 1e6)
			return sl_fail(err, SL_INVALID, 0, "%s: expected a positive number%s",
				       keys[i], i ? " of GiB" : " of cores");
		if (!res)
			res = cJSON_AddObjectToObject(v1, "resources");
		if (i == 0) {
			cJSON_AddNumberToObject(res, "cpu", v->valuedouble);
		} else {
			char q[48];
			snprintf(q, sizeof(q), "%.0fMi", v->valuedouble * 1024);
			cJSON_AddStringToObject(res, keys[i], q);
		}
	}
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(body, "gpu");
	if (cJSON_IsNumber(gpu) && gpu->valuedouble > 0)
		return sl_fail(err, SL_NOTIMPL, 0, "gpu: sandlot sandboxes have no GPUs");
	return 0;
}

/* "a,b c" into ARR (trimmed, empty entries skipped). */
static void split_into(cJSON *arr, const char *text)
{
	_cleanup_free_ char *copy = strdup(text);
	char *save = NULL;
	for (char *t = copy ? strtok_r(copy, ", ", &save) : NULL; t;
	     t = strtok_r(NULL, ", ", &save))
		cJSON_AddItemToArray(arr, cJSON_CreateString(t));
}

/* networkBlockAll / networkAllowList ("cidr,cidr") / domainAllowList ("a.com,*.b.io") as
 * /v1's network object: both lists make its allow list (names and CIDRs mix there).
 * Absent: sandlot's default (no network), or with --provider-defaults Daytona's (an open
 * one). */
/* Daytona's three network keys of BODY, type-checked: *HAS_ALLOW when a list is not empty. */
typedef struct dt_net {
	const cJSON *block, *lists[2]; /* networkAllowList, domainAllowList */
	bool has_allow;
} dt_net;

static int net_keys(const cJSON *body, dt_net *n, sl_err *err)
{
	static const char *const names[2] = {"networkAllowList", "domainAllowList"};
	n->block = cJSON_GetObjectItemCaseSensitive(body, "networkBlockAll");
	n->has_allow = false;
	if (n->block && !cJSON_IsNull(n->block) && !cJSON_IsBool(n->block))
		return sl_fail(err, SL_INVALID, 0, "networkBlockAll: expected true or false");
	for (int i = 0; i < 2; i++) {
		n->lists[i] = cJSON_GetObjectItemCaseSensitive(body, names[i]);
		if (n->lists[i] && !cJSON_IsNull(n->lists[i]) && !cJSON_IsString(n->lists[i]))
			return sl_fail(err, SL_INVALID, 0,
				       "%s: expected a comma-separated string of %s", names[i],
				       i ? "domain names" : "CIDRs");
		n->has_allow |= cJSON_IsString(n->lists[i]) && n->lists[i]->valuestring[0];
	}
	if (cJSON_IsTrue(n->block) && n->has_allow)
		return sl_fail(
		    err, SL_INVALID, 0,
		    "networkBlockAll and networkAllowList/domainAllowList exclude each other");
	return 0;
}

/* networkBlockAll / networkAllowList ("cidr,cidr") / domainAllowList ("a.com,*.b.io") as
 * /v1's network object: both lists make its allow list (names and CIDRs mix there).
 * Absent: sandlot's default (no network), or with --provider-defaults Daytona's (an open
 * one). */
static int network(const cJSON *body, cJSON *v1, bool provider_defaults, sl_err *err)
{
	dt_net k;
	if (net_keys(body, &k, err) < 0)
		return -1;
	if (cJSON_IsTrue(k.block)) {
		cJSON *n = cJSON_AddObjectToObject(v1, "network");
		cJSON_AddBoolToObject(n, "enabled", false);
		return 0;
	}
	if (!k.has_allow && !cJSON_IsFalse(k.block) && !provider_defaults)
		return 0;
	cJSON *n = cJSON_AddObjectToObject(v1, "network");
	cJSON_AddBoolToObject(n, "enabled", true);
	if (!k.has_allow)
		return 0;
	cJSON *list = cJSON_AddArrayToObject(n, "allow");
	for (int i = 0; i < 2; i++)
		if (cJSON_IsString(k.lists[i]))
			split_into(list, k.lists[i]->valuestring);
	return 0;
}

/* snapshot: a sandlot snapshot by that name or id, else an image (Daytona's snapshots
 * are what sandlot calls images). buildInfo: its Dockerfile, for dt_build_create. */
static int base(api_req *r, const cJSON *body, cJSON *v1, const char **dockerfile, sl_err *err)
{
	const char *snap = NULL;
	*dockerfile = NULL;
	if (api_json_string(body, "", "snapshot", &snap, err) < 0)
		return -1;
	const cJSON *bi = cJSON_GetObjectItemCaseSensitive(body, "buildInfo");
	bool build = bi && !cJSON_IsNull(bi);
	if (snap && build)
		return sl_fail(err, SL_INVALID, 0, "snapshot and buildInfo exclude each other");
	if (snap) {
		sl_snapshot s;
		sl_err e2 = {0};
		bool is_snap = snapshot_get(r->srv->ctx, snap, &s, &e2) == 0;
		cJSON_AddStringToObject(v1, is_snap ? "snapshot" : "image", snap);
	}
	return build ? dt_dockerfile_check(bi, dockerfile, err) : 0;
}

/* Options sandlot has no counterpart for: refused when they ask for something. */
static int unsupported(const cJSON *body, sl_err *err)
{
	static const char *const keys[] = {"outboundProxyUrl", "linkedSandbox",
					   "otelEndpointOverride"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, keys[i]);
		if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0]) &&
		    !(cJSON_IsArray(v) && !cJSON_GetArraySize(v)))
			return sl_fail(err, SL_NOTIMPL, 0, "%s: not available in sandlot", keys[i]);
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "kvm")))
		return sl_fail(err, SL_NOTIMPL, 0, "kvm: not available in sandlot");
	return 0;
}

/* secrets: [{"ENV": "secretName"}, ...] as /v1's {"ENV": "secretName"} (docs/secrets.md). */
static int secrets(const cJSON *body, cJSON *v1, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "secrets"), *it, *kv;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sl_fail(err, SL_INVALID, 0, "secrets: expected an array of {ENV: name}");
	cJSON *out = cJSON_CreateObject();
	cJSON_AddItemToObject(v1, "secrets", out);
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsObject(it))
			return sl_fail(err, SL_INVALID, 0,
				       "secrets: expected an array of {ENV: name}");
		cJSON_ArrayForEach(kv, it)
		{
			if (!cJSON_IsString(kv))
				return sl_fail(err, SL_INVALID, 0,
					       "secrets.%.140s: expected a name", kv->string);
			cJSON_DeleteItemFromObjectCaseSensitive(out, kv->string);
			cJSON_AddStringToObject(out, kv->string, kv->valuestring);
		}
	}
	return 0;
}

static int volumes(const cJSON *body, cJSON *v1, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "volumes"), *it;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return sl_fail(err, SL_INVALID, 0, "volumes: expected an array");
	cJSON *out = cJSON_AddArrayToObject(v1, "volumes");
	int i = 0;
	cJSON_ArrayForEach(it, v)
	{
		char where[32];
		snprintf(where, sizeof(where), "volumes[%d].", i++);
		const char *id = NULL, *mp = NULL, *sub = NULL;
		if (api_json_string(it, where, "volumeId", &id, err) < 0 ||
		    api_json_string(it, where, "mountPath", &mp, err) < 0 ||
		    api_json_string(it, where, "subpath", &sub, err) < 0)
			return -1;
		if (sub && *sub)
			return sl_fail(err, SL_NOTIMPL, 0, "%ssubpath: not available in sandlot",
				       where);
		cJSON *d = cJSON_CreateObject();
		if (id)
			cJSON_AddStringToObject(d, "name", id);
		if (mp)
			cJSON_AddStringToObject(d, "mountPath", mp);
		cJSON_AddItemToArray(out, d);
	}
	return 0;
}

/* public: every port of the sandbox open to any local user (Daytona's default, and
 * sandlot's, is false: its preview URLs then need the preview-url token). */
static int public_ports(const cJSON *body, cJSON *v1, sl_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "public");
	if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
		return sl_fail(err, SL_INVALID, 0, "public: expected true or false");
	if (cJSON_IsTrue(v)) {
		cJSON *all = cJSON_AddObjectToObject(cJSON_AddObjectToObject(v1, "ports"), "*");
		cJSON_AddBoolToObject(all, "public", true);
	}
	return 0;
}

int dt_v1_body(api_req *r, const cJSON *body, cJSON *v1, const char **dockerfile, sl_err *err)
{
	const char *name = NULL, *user = NULL;
	int64_t stop = 0, del = -1, ttl = 0;
	bool stop_given, del_given, ttl_given;
	if (api_json_string(body, "", "name", &name, err) < 0 ||
	    api_json_string(body, "", "user", &user, err) < 0 ||
	    base(r, body, v1, dockerfile, err) < 0 || resources(body, v1, err) < 0 ||
	    network(body, v1, r->srv->opt.provider_defaults, err) < 0 ||
	    public_ports(body, v1, err) < 0 || volumes(body, v1, err) < 0 ||
	    secrets(body, v1, err) < 0 || unsupported(body, err) < 0 ||
	    minutes(body, "autoStopInterval", false, &stop, &stop_given, err) < 0 ||
	    minutes(body, "autoDeleteInterval", true, &del, &del_given, err) < 0 ||
	    minutes(body, "ttlMinutes", false, &ttl, &ttl_given, err) < 0)
		return -1;
	int64_t arch;
	bool arch_given;
	if (minutes(body, "autoArchiveInterval", false, &arch, &arch_given, err) < 0)
		return -1;
	if (name)
		cJSON_AddStringToObject(v1, "name", name);
	if (user)
		cJSON_AddStringToObject(v1, "user", user);
	if (del == 0)
		cJSON_AddBoolToObject(v1, "ephemeral", true);
	static const char *const kv[] = {"env", "labels"};
	for (int i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, kv[i]);
		if (v && !cJSON_IsNull(v))
			cJSON_AddItemToObject(v1, kv[i], cJSON_Duplicate(v, 1));
	}
	if (stop > 0 || ttl > 0) {
		cJSON *t = cJSON_AddObjectToObject(v1, "timeout");
		if (stop > 0)
			cJSON_AddNumberToObject(t, "idle", (double)stop * 60000);
		if (ttl > 0)
			cJSON_AddNumberToObject(t, "lifetime", (double)ttl * 60000);
	}
	return 0;
}

enum MHD_Result dt_sandbox_create(api_req *r)
{
	const cJSON *body;
	sl_err err = {0};
	if (api_body_object(r, true, &body, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *v1 = cJSON_CreateObject(), *empty = body ? NULL : cJSON_CreateObject(), *o = NULL;
	const char *dockerfile = NULL;
	sl_sandbox sb;
	int rc = dt_v1_body(r, body ? body : empty, v1, &dockerfile, &err);
	if (rc == 0 && dockerfile)
		rc = dt_build_create(r, v1, dockerfile, &o, &err);
	if (rc == 0 && !o && (rc = api_sandbox_create_from(r->srv, v1, false, false, &sb, &err)) == 0) {
		/* autoArchiveInterval and autoDeleteInterval: the stop policy, on the record. */
		sl_sandbox now;
		if (dt_stop_policy_apply(r, body, sb.id, &now) == 0) {
			sandbox_free(&sb);
			sb = now;
		}
		o = sandbox_dto(r, &sb);
		sandbox_free(&sb);
	}
	cJSON_Delete(v1);
	cJSON_Delete(empty);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	return api_reply_json(r, 200, o);
}

/* ---- get, list ---- */

enum MHD_Result dt_sandbox_get(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	cJSON *pending = NULL;
	if (dt_build_resolve(r, &pending) == 2)
		return api_reply_json(r, 200, pending);
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = sandbox_dto(r, &sb);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

typedef struct list_query {
	cJSON *labels;
	char states[8][24];
	int nstates;
	sl_err err;
} list_query;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	list_query *q = cls;
	if (!value || q->err.kind)
		return MHD_YES;
	if (!strcmp(key, "states") && q->nstates < 8)
		snprintf(q->states[q->nstates++], sizeof(q->states[0]), "%s", value);
	if (!strcmp(key, "labels")) {
		cJSON_Delete(q->labels);
		q->labels = api_json_parse(value, strlen(value), &q->err);
		if (q->labels && !cJSON_IsObject(q->labels))
			sl_fail(&q->err, SL_INVALID, 0, "?labels: expected a JSON object");
	}
	return MHD_YES;
}

static bool list_match(const list_query *q, const sl_sandbox *sb)
{
	if (sb->status == SL_ST_TERMINATED)
		return false;
	if (q->nstates) {
		bool ok = false;
		for (int i = 0; i < q->nstates; i++)
			ok = ok || !strcmp(q->states[i], dt_state(sandbox_status_name(sb->status)));
		if (!ok)
			return false;
	}
	const cJSON *l;
	cJSON_ArrayForEach(l, q->labels)
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(sb->labels, l->string);
		if (!cJSON_IsString(l) || !cJSON_IsString(v) ||
		    strcmp(v->valuestring, l->valuestring))
			return false;
	}
	return true;
}

static int query_count(api_req *r, const char *key, uint64_t def, uint64_t max, uint64_t *out,
		       sl_err *err)
{
	const char *v = api_query(r, key);
	*out = def;
	if (!v || !*v) /* an empty value counts as absent here */
		return 0;
	return api_query_uint(r, key, max, out, err);
}

/* Cursor pagination: the cursor is the offset of the next page in creation order. */
enum MHD_Result dt_sandbox_list(api_req *r)
{
	list_query q = {0};
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect, &q);
	uint64_t limit, offset;
	if (!q.err.kind)
		query_count(r, "limit", LIST_DEFAULT, LIST_MAX, &limit, &q.err);
	if (!q.err.kind)
		query_count(r, "cursor", 0, UINT32_MAX, &offset, &q.err);
	if (!q.err.kind && limit == 0)
		limit = LIST_DEFAULT;
	sl_sandbox *list = NULL;
	size_t n = 0;
	if (q.err.kind || sandbox_list_live(r->srv->ctx, &list, &n, &q.err) < 0) {
		cJSON_Delete(q.labels);
		return dt_error(r, &q.err, NULL);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(o, "items");
	uint64_t seen = 0;
	bool more = false;
	for (size_t i = 0; i < n; i++) {
		if (!list_match(&q, &list[i]))
			continue;
		if (seen >= offset + limit) {
			more = true;
			break;
		}
		if (seen++ >= offset)
			cJSON_AddItemToArray(items, sandbox_dto(r, &list[i]));
	}
	sandbox_free_list(list, n);
	cJSON_Delete(q.labels);
	if (more) {
		char c[24];
		snprintf(c, sizeof(c), "%llu", (unsigned long long)(offset + limit));
		cJSON_AddStringToObject(o, "nextCursor", c);
	} else {
		cJSON_AddNullToObject(o, "nextCursor");
	}
	return api_reply_json(r, 200, o);
}

/* ---- lifecycle ---- */

enum MHD_Result dt_sandbox_delete(api_req *r)
{
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	cJSON *pending = NULL;
	if (dt_build_resolve(r, &pending) == 2) {
		cJSON_Delete(pending);
		dt_build_delete(r);
		return api_reply_empty(r, 200);
	}
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	if (api_destroy(r->srv, sb.id, "deleted", &err) < 0)
		return dt_error(r, &err, NULL);
	return api_reply_empty(r, 200);
}

enum MHD_Result dt_sandbox_start(api_req *r)
{
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	bool running = sb.status == SL_ST_RUNNING,
	     paused = sb.status == SL_ST_PAUSED || sb.status == SL_ST_HIBERNATED;
	/* Starting a started sandbox is a no-op in Daytona; a paused or hibernated (archived)
	 * one resumes. */
	int rc = running  ? 0
		 : paused ? sandbox_resume(r->srv->ctx, sb.id, NULL, &err)
			  : sandbox_start(r->srv->ctx, sb.id, NULL, &err);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	return reply_dto(r, sb.id, 200);
}

enum MHD_Result dt_sandbox_stop(api_req *r)
{
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	bool force = false;
	if (api_query_bool(r, "force", false, &force, &err) < 0 || lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	bool stopped = sb.status == SL_ST_STOPPED, ephemeral = sb.ephemeral;
	/* autoDeleteInterval 0 (ephemeral): Daytona deletes such a sandbox when it stops. */
	int rc = stopped     ? 0
		 : ephemeral ? api_destroy(r->srv, sb.id, "stopped (ephemeral)", &err)
			     : sandbox_stop(r->srv->ctx, sb.id, force ? 0 : 10000, NULL, &err);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	return ephemeral && !stopped ? api_reply_empty(r, 200) : reply_dto(r, sb.id, 200);
}

enum MHD_Result dt_sandbox_labels(api_req *r)
{
	const cJSON *body;
	sl_err err = {0};
	char **kv = NULL;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_kv(body, "", "labels", &kv, &err) < 0)
		return dt_error(r, &err, NULL);
	api_strv_free(kv);
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(body, "labels");
	if (!cJSON_IsObject(labels))
		return dt_fail(r, SL_INVALID, NULL, "labels: required (an object of strings)");
	_cleanup_sandbox_ sl_sandbox sb = {0}, now = {0};
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	if (sandbox_set_labels(r->srv->ctx, sb.id, labels, &now, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "labels",
			      now.labels ? cJSON_Duplicate(now.labels, 1) : cJSON_CreateObject());
	return api_reply_json(r, 200, o);
}

/* updateNetworkSettings: networkAllowList and domainAllowList replace the CIDRs and the
 * names of /v1's allow list (a list not given keeps its kind); networkBlockAll false
 * alone clears it (the open internet). A sandbox's network cannot go on or off after
 * create in sandlot: networkBlockAll true on a network-on sandbox, or a list on a
 * network-off one, is 400. */
enum MHD_Result dt_sandbox_network(api_req *r)
{
	const cJSON *body, *it;
	sl_err err = {0};
	dt_net k;
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (api_body_object(r, false, &body, &err) < 0 || net_keys(body, &k, &err) < 0 ||
	    lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	if (cJSON_IsTrue(k.block) != !sb.net_enabled && (cJSON_IsBool(k.block) || k.has_allow))
		return dt_fail(r, SL_INVALID, NULL,
			       "sandbox %s was created with its network %s; sandlot cannot turn it "
			       "%s (create it with networkBlockAll %s)",
			       sb.id, sb.net_enabled ? "on" : "off", sb.net_enabled ? "off" : "on",
			       sb.net_enabled ? "true" : "false");
	if (!sb.net_enabled)
		return reply_dto(r, sb.id, 200);
	_cleanup_cjson_ cJSON *allow = cJSON_CreateArray();
	for (int names = 0; names < 2 && (k.has_allow || !cJSON_IsFalse(k.block)); names++) {
		if (cJSON_IsString(k.lists[names]))
			split_into(allow, k.lists[names]->valuestring);
		else
			cJSON_ArrayForEach(it, sb.net_allow) if (cJSON_IsString(it) &&
								 netname_is_name(it->valuestring) ==
								     names)
			    cJSON_AddItemToArray(allow, cJSON_CreateString(it->valuestring));
	}
	size_t n = (size_t)cJSON_GetArraySize(allow), i = 0;
	_cleanup_free_ const char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return dt_fail(r, SL_INTERNAL, NULL, "out of memory");
	cJSON_ArrayForEach(it, allow) v[i++] = it->valuestring;
	sl_net_opts net = {.enabled = true, .allow = v};
	if (sandbox_set_network(r->srv->ctx, sb.id, &net, NULL, &err) < 0)
		return dt_error(r, &err, NULL);
	return reply_dto(r, sb.id, 200);
}

/* The {n} of an interval route: whole minutes. */
static int interval(api_req *r, int64_t *n, sl_err *err)
{
	char *end;
	errno = 0;
	long long v = strtoll(r->param[1], &end, 10);
	if (*end || errno || v < 0 || v > 525600 * 10)
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a whole number of minutes",
			       r->param[1]);
	*n = v;
	return 0;
}

static enum MHD_Result set_timeout(api_req *r, bool idle)
{
	sl_err err = {0};
	int64_t n = 0;
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (interval(r, &n, &err) < 0 || lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	int rc = idle ? sandbox_set_timeouts(r->srv->ctx, sb.id, -1, n * 60000, -1, NULL, &err)
		      : sandbox_set_timeouts(r->srv->ctx, sb.id, n * 60000, -1, -1, NULL, &err);
	return rc < 0 ? dt_error(r, &err, NULL) : api_reply_empty(r, 200);
}

enum MHD_Result dt_sandbox_autostop(api_req *r)
{
	return set_timeout(r, true);
}

/* refreshActivity: the lookup marks the sandbox active (what idle timeouts read). */
enum MHD_Result dt_sandbox_activity(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	sandbox_free(&sb);
	return api_reply_empty(r, 204);
}

enum MHD_Result dt_sandbox_ttl(api_req *r)
{
	return set_timeout(r, false);
}

enum MHD_Result dt_sandbox_unsupported_interval(api_req *r)
{
	const char *what = strstr(r->url, "/autoarchive/") ? "archiving"
			   : strstr(r->url, "/autopause/") ? "pausing on a timer"
							   : "a delayed delete after stopping";
	return dt_fail(r, SL_NOTIMPL, NULL, "%s is not available in sandlot", what);
}

enum MHD_Result dt_sandbox_toolbox_url(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	sandbox_free(&sb);
	char origin[256], url[300];
	dt_origin(r, origin, sizeof(origin));
	snprintf(url, sizeof(url), "%s/toolbox", origin);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "url", url);
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_sandbox_preview_url(api_req *r)
{
	char *end;
	unsigned long port = strtoul(r->param[1], &end, 10);
	if (*end || port < 1 || port > 65535)
		return dt_fail(r, SL_INVALID, NULL, "port: \"%s\" is not a port number (1-65535)",
			       r->param[1]);
	sl_sandbox sb;
	sl_err err = {0};
	if (lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	char url[256], token[65];
	api_preview_url(r->srv, sb.id, (unsigned)port, url, sizeof(url));
	/* The sandbox's preview token: the proxy takes it as x-daytona-preview-token. */
	int tr = sandbox_preview_token(r->srv->ctx, &sb, token, &err);
	if (tr < 0) {
		sandbox_free(&sb);
		return dt_error(r, &err, NULL);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sandboxId", sb.id);
	cJSON_AddStringToObject(o, "url", url);
	cJSON_AddStringToObject(o, "token", token);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

/* lifecycle.c — routes over the runtime's lifecycle calls: pause/resume/stop/start,
 * snapshots, volumes, and executeCode. Each is one runtime call; the CLI makes the
 * same calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "hibernate.h"
#include "log.h"
#include "snapshot.h"
#include "volume.h"
#include "http.h"
#include "view.h"

static enum MHD_Result reply_sandbox(api_req *r, const char *id)
{
	sl_sandbox sb;
	sl_err err = { 0 };
	if (sandbox_get(r->srv->ctx, id, &sb, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = api_sandbox_json(r->srv, &sb, true);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

static enum MHD_Result lifecycle(api_req *r, int (*fn)(sl_ctx *, const char *, sl_sandbox *,
						       sl_err *))
{
	sl_err err = { 0 };
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (fn(r->srv->ctx, r->param[0], &sb, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	return reply_sandbox(r, sb.id);
}

static int stop_10s(sl_ctx *ctx, const char *ref, sl_sandbox *out, sl_err *err)
{
	return sandbox_stop(ctx, ref, 10000, out, err);
}

enum MHD_Result api_sandboxes_pause(api_req *r)
{
	return lifecycle(r, sandbox_pause);
}

/* Synchronous: answers the sandbox "hibernated" once CRIU's dump is done (hibernate.c). */
enum MHD_Result api_sandboxes_hibernate(api_req *r)
{
	return lifecycle(r, sandbox_hibernate);
}

enum MHD_Result api_sandboxes_resume(api_req *r)
{
	return lifecycle(r, sandbox_resume);
}

enum MHD_Result api_sandboxes_stop(api_req *r)
{
	return lifecycle(r, stop_10s);
}

enum MHD_Result api_sandboxes_start(api_req *r)
{
	return lifecycle(r, sandbox_start);
}

/* ---- snapshots ---- */

enum MHD_Result api_snapshots_create(api_req *r)
{
	const cJSON *body;
	const char *name = NULL;
	static const char *const fields[] = { "name", NULL };
	sl_err err = { 0 };
	sl_snapshot s;
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_fields(body, "", fields, &err) < 0 ||
		      api_json_string(body, "", "name", &name, &err) < 0)) ||
	    snapshot_create(r->srv->ctx, r->param[0], name, &s, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, 201, view_snapshot_json(&s));
}

enum MHD_Result api_snapshots_list(api_req *r)
{
	sl_snapshot *list;
	size_t n;
	sl_err err = { 0 };
	if (snapshot_list(r->srv->ctx, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "snapshots");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, view_snapshot_json(&list[i]));
	free(list);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_snapshots_get(api_req *r)
{
	sl_snapshot s;
	sl_err err = { 0 };
	if (snapshot_get(r->srv->ctx, r->param[0], &s, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	return api_reply_json(r, 200, view_snapshot_json(&s));
}

enum MHD_Result api_snapshots_delete(api_req *r)
{
	sl_err err = { 0 };
	if (snapshot_delete(r->srv->ctx, r->param[0], &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	return api_reply_empty(r, 204);
}

/* ---- volumes ---- */

enum MHD_Result api_volumes_list(api_req *r)
{
	sl_volume *list;
	size_t n;
	sl_err err = { 0 };
	if (volume_list(r->srv->ctx, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "volumes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, view_volume_json(&list[i]));
	free(list);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_volumes_create(api_req *r)
{
	const cJSON *body;
	const char *name = NULL;
	static const char *const fields[] = { "name", NULL };
	sl_err err = { 0 };
	sl_volume v;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "name", &name, &err) < 0)
		return api_reply_error(r, &err);
	if (!name)
		return api_fail(r, SL_INVALID, "name: required");
	if (volume_create(r->srv->ctx, name, &v, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, 201, view_volume_json(&v));
}

enum MHD_Result api_volumes_delete(api_req *r)
{
	sl_err err = { 0 };
	if (volume_delete(r->srv->ctx, r->param[0], &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return api_reply_error(r, &err);
	}
	return api_reply_empty(r, 204);
}

/* ---- executeCode ---- */

int api_code_args_parse(const cJSON *body, api_code_args *a, sl_err *err)
{
	static const char *const fields[] = { "code", "language", "timeout", "env", NULL };
	bool given;
	memset(a, 0, sizeof(*a));
	if (api_json_fields(body, "", fields, err) < 0 ||
	    api_json_string(body, "", "code", &a->code, err) < 0 ||
	    api_json_string(body, "", "language", &a->language, err) < 0 ||
	    api_json_duration(body, "", "timeout", &a->timeout_ms, &given, err) < 0 ||
	    api_json_kv(body, "", "env", &a->env, err) < 0)
		return -1;
	if (!a->code) {
		api_code_args_free(a);
		return sl_fail(err, SL_INVALID, 0, "code: required (the source text)");
	}
	if (!a->language)
		a->language = "python";
	return 0;
}

void api_code_args_free(api_code_args *a)
{
	api_strv_free(a->env);
	a->env = NULL;
}

struct runner_start {
	char id[64];
	char language[16];
	char **env; /* the first call's: the runner starts with what its calls set */
};

/* api_req.after of a code call that ran cold: the sandbox's runner, started once the
 * answer is out (a sandbox gone or stopped meanwhile has none to start). */
static void runner_start_after(api_req *r, void *arg)
{
	struct runner_start *rs = arg;
	sl_sandbox sb;
	sl_err err = {0};
	if (sandbox_get(r->srv->ctx, rs->id, &sb, &err) == 0) {
		if (code_runner_start(r->srv->ctx, &sb, rs->language,
				      (const char *const *)rs->env, &err) < 0)
			sl_log(SL_LOG_INFO, "sandbox %s: %s", rs->id, err.msg);
		sandbox_free(&sb);
	}
	api_strv_free(rs->env);
	free(rs);
}

void api_code_runner_after(api_req *r, const sl_sandbox *sb, const char *language,
			   char *const *env, const sl_code_result *res)
{
	struct runner_start *rs;
	if (!res->runner_wanted || !r || r->after || !(rs = calloc(1, sizeof(*rs))))
		return;
	if (env && !(rs->env = api_strv_dup(env))) {
		free(rs);
		return;
	}
	snprintf(rs->id, sizeof(rs->id), "%s", sb->id);
	snprintf(rs->language, sizeof(rs->language), "%s", language ? language : "python");
	r->after = runner_start_after;
	r->after_arg = rs;
}

cJSON *api_code_run(api_server *s, api_req *r, const sl_sandbox *sb, const api_code_args *a,
		    sl_err *err)
{
	sl_code_result res;
	if (code_run(s->ctx, sb, a->language, a->code, strlen(a->code),
		     (const char *const *)a->env, a->timeout_ms ? a->timeout_ms : sb->exec_timeout_ms,
		     &res, err) < 0)
		return NULL;
	api_code_runner_after(r, sb, a->language, a->env, &res);
	cJSON *o = code_result_to_json(&res);
	code_result_free(&res);
	return o;
}

enum MHD_Result api_code(api_req *r)
{
	const cJSON *body;
	api_code_args a;
	sl_err err = { 0 };
	sl_sandbox sb;
	if (api_body_object(r, false, &body, &err) < 0 || api_code_args_parse(body, &a, &err) < 0)
		return api_reply_error(r, &err);
	if (api_sandbox_for_call(r, &sb, &err) < 0) {
		api_code_args_free(&a);
		return api_reply_error(r, &err);
	}
	cJSON *o = api_code_run(r->srv, r, &sb, &a, &err);
	sandbox_free(&sb);
	api_code_args_free(&a);
	return o ? api_reply_json(r, 200, o) : api_reply_error(r, &err);
}

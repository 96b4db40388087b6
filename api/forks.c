/* forks.c — routes for copies and rollbacks of a sandbox: fork, checkpoints, rollback
 * (docs/forks.md). Each is one runtime call (fork.h, snapshot.h's checkpoints, and
 * sandbox_rollback); the CLI makes the same calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork.h"
#include "http.h"
#include "snapshot.h"
#include "view.h"

enum MHD_Result api_sandboxes_fork(api_req *r)
{
	static const char *const fields[] = {"count", "name", "memory", NULL};
	const cJSON *body;
	sl_fork_opts fo = {.count = 1};
	uint64_t count = 1;
	bool given;
	sl_err err = {0};
	/* count is read wide, so that 0 and 1000 get the fork's own message. */
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_fields(body, "", fields, &err) < 0 ||
		      api_json_uint(body, "", "count", 0, UINT32_MAX, &count, &given, &err) < 0 ||
		      api_json_string(body, "", "name", &fo.name, &err) < 0 ||
		      api_json_bool(body, "", "memory", &fo.memory, &err) < 0)))
		return api_reply_error(r, &err);
	fo.count = (unsigned)count;
	sl_sandbox *list;
	size_t n;
	if (sandbox_fork(r->srv->ctx, r->param[0], &fo, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "sandboxes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, api_sandbox_json(r->srv, &list[i], true));
	sandbox_free_list(list, n);
	return api_reply_json(r, 201, o);
}

enum MHD_Result api_checkpoints_create(api_req *r)
{
	static const char *const fields[] = {"name", "memory", NULL};
	const cJSON *body;
	const char *name = NULL;
	bool memory = false;
	sl_err err = {0};
	sl_snapshot s;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "name", &name, &err) < 0 ||
	    api_json_bool(body, "", "memory", &memory, &err) < 0 ||
	    checkpoint_create(r->srv->ctx, r->param[0], name, memory, &s, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, 201, view_checkpoint_json(&s));
}

enum MHD_Result api_checkpoints_list(api_req *r)
{
	sl_snapshot *list;
	size_t n;
	sl_err err = {0};
	if (checkpoint_list(r->srv->ctx, r->param[0], &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "checkpoints");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, view_checkpoint_json(&list[i]));
	free(list);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_checkpoints_delete(api_req *r)
{
	sl_err err = {0};
	if (checkpoint_delete(r->srv->ctx, r->param[0], r->param[1], &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_empty(r, 204);
}

enum MHD_Result api_sandboxes_rollback(api_req *r)
{
	static const char *const fields[] = {"checkpoint", NULL};
	const cJSON *body;
	const char *cp = NULL;
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "checkpoint", &cp, &err) < 0)
		return api_reply_error(r, &err);
	if (!cp) {
		sl_fail(&err, SL_INVALID, 0,
			"checkpoint: give the name of one of the sandbox's checkpoints");
		return api_reply_error(r, &err);
	}
	if (sandbox_rollback(r->srv->ctx, r->param[0], cp, &sb, &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, 200, api_sandbox_json(r->srv, &sb, true));
}

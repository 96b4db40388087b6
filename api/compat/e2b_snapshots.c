/* e2b_snapshots.c — E2B's forks and snapshots (docs/e2b.md, "Forks and snapshots"):
 * POST /sandboxes/{id}/fork over sandbox_fork, POST /sandboxes/{id}/snapshots and
 * GET /snapshots over sandlot's snapshots (a snapshot's id is E2B's snapshotID, which
 * Sandbox.create takes as a template), DELETE /templates/{id} for a snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b.h"
#include "fork.h"
#include "log.h"
#include "snapshot.h"

/* E2B's API gives forks a 15 s lifetime unless the request says otherwise. */
#define E2B_FORK_TIMEOUT_S 15

/* POST /sandboxes/{id}/fork {count?, timeout?} -> 201 [{sandbox}...]. sandlot's forks
 * are all or nothing, so every entry carries a sandbox (E2B allows per-entry errors). */
enum MHD_Result e2b_fork(api_req *r)
{
	static const char *const fields[] = {"count", "timeout", NULL};
	const cJSON *in;
	sl_err err = {0};
	uint64_t count = 1, tmo = E2B_FORK_TIMEOUT_S;
	bool given;
	if (api_body_object(r, true, &in, &err) < 0 ||
	    (in && (api_json_fields(in, "", fields, &err) < 0 ||
		    api_json_uint(in, "", "count", 0, UINT32_MAX, &count, &given, &err) < 0 ||
		    api_json_uint(in, "", "timeout", 1, 366ULL * 86400, &tmo, &given, &err) < 0)))
		return e2b_reply_err(r, &err);
	/* E2B's fork copies memory: so does sandlot's of a source launched to hibernate;
	 * any other source (or one whose memory cannot be copied: a network, a running
	 * command, CRIU's refusal) gets its files of the instant, as before, with a log line. */
	sl_fork_opts fo = {.count = (unsigned)count, .memory = true};
	sl_sandbox *list;
	size_t n;
	int rc = sandbox_fork(r->srv->ctx, r->param[0], &fo, &list, &n, &err);
	if (rc < 0 && (err.kind == SL_CONFLICT || err.kind == SL_HIBERNATE_REFUSED)) {
		sl_log(SL_LOG_INFO, "e2b: fork of %s copies its files only: %s", r->param[0],
		       err.msg);
		sl_err_clear(&err);
		fo.memory = false;
		rc = sandbox_fork(r->srv->ctx, r->param[0], &fo, &list, &n, &err);
	}
	if (rc < 0) {
		if (err.kind == SL_NOTFOUND)
			return e2b_reply_code(r, 404, "sandbox \"%s\" not found", r->param[0]);
		return e2b_reply_err(r, &err);
	}
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		sl_sandbox sb = {0};
		sl_err e2 = {0};
		cJSON *entry = cJSON_CreateObject();
		if (sandbox_set_timeouts(r->srv->ctx, list[i].id, (int64_t)tmo * 1000, -1, -1, &sb,
					 &e2) < 0) {
			cJSON *e = cJSON_AddObjectToObject(entry, "error");
			cJSON_AddNumberToObject(e, "code", api_err_status(&e2));
			cJSON_AddStringToObject(e, "message", e2.msg);
		} else {
			cJSON_AddItemToObject(entry, "sandbox", e2b_connection_json(r->srv, &sb));
			sandbox_free(&sb);
		}
		cJSON_AddItemToArray(arr, entry);
	}
	sandbox_free_list(list, n);
	return api_reply_json(r, 201, arr);
}

static cJSON *snapshot_info(const sl_snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "snapshotID", s->id);
	cJSON *names = cJSON_AddArrayToObject(o, "names");
	if (s->name[0])
		cJSON_AddItemToArray(names, cJSON_CreateString(s->name));
	return o;
}

/* POST /sandboxes/{id}/snapshots {name?} -> 201 {snapshotID, names}. */
enum MHD_Result e2b_snapshot_create(api_req *r)
{
	static const char *const fields[] = {"name", NULL};
	const cJSON *in;
	const char *name = NULL;
	sl_err err = {0};
	sl_snapshot s;
	if (api_body_object(r, true, &in, &err) < 0 ||
	    (in && (api_json_fields(in, "", fields, &err) < 0 ||
		    api_json_string(in, "", "name", &name, &err) < 0)))
		return e2b_reply_err(r, &err);
	if (snapshot_create(r->srv->ctx, r->param[0], name, &s, &err) < 0) {
		if (err.kind == SL_NOTFOUND)
			return e2b_reply_code(r, 404, "sandbox \"%s\" not found", r->param[0]);
		return e2b_reply_err(r, &err);
	}
	return api_reply_json(r, 201, snapshot_info(&s));
}

/* GET /snapshots?sandboxID=&name= -> [{snapshotID, names}...], all in one page. */
enum MHD_Result e2b_snapshot_list(api_req *r)
{
	const char *sbx = api_query(r, "sandboxID"), *name = api_query(r, "name");
	sl_snapshot *list;
	size_t n;
	sl_err err = {0};
	if (snapshot_list(r->srv->ctx, &list, &n, &err) < 0)
		return e2b_reply_err(r, &err);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		if (sbx && *sbx && strcmp(list[i].sandbox_id, sbx))
			continue;
		if (name && *name && strcmp(list[i].name, name) && strcmp(list[i].id, name))
			continue;
		cJSON_AddItemToArray(arr, snapshot_info(&list[i]));
	}
	free(list);
	return api_reply_json(r, 200, arr);
}

/* DELETE /templates/{id}: Sandbox.deleteSnapshot (a snapshot's id or name). */
enum MHD_Result e2b_snapshot_delete(api_req *r)
{
	sl_err err = {0};
	if (snapshot_delete(r->srv->ctx, r->param[0], &err) < 0) {
		if (err.kind == SL_NOTFOUND || err.kind == SL_INVALID)
			return e2b_reply_code(r, 404, "snapshot \"%s\" not found", r->param[0]);
		return e2b_reply_err(r, &err);
	}
	return api_reply_empty(r, 204);
}

/* daytona_fork.c — Daytona's sandbox.fork(), sandbox.createSnapshot(name), archive() and
 * the stop intervals (setAutoArchiveInterval, setAutoDeleteInterval), over sandbox_fork,
 * snapshot_create, sandbox_park (archive) and sandbox_set_stop_policy (docs/daytona.md,
 * "Forks, snapshots, archive and intervals"). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daytona.h"
#include "fork.h"
#include "park.h"
#include "snapshot.h"

/* POST /api/sandbox/{id}/fork {name?} -> the new sandbox's DTO. */
enum MHD_Result dt_sandbox_fork(api_req *r)
{
	static const char *const fields[] = {"name", NULL};
	const cJSON *body;
	sl_err err = {0};
	sl_fork_opts fo = {.count = 1};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_fields(body, "", fields, &err) < 0 ||
		      api_json_string(body, "", "name", &fo.name, &err) < 0)) ||
	    dt_lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	sl_sandbox *list;
	size_t n;
	if (sandbox_fork(r->srv->ctx, sb.id, &fo, &list, &n, &err) < 0)
		return dt_error(r, &err, NULL);
	char id[32];
	snprintf(id, sizeof(id), "%s", list[0].id);
	sandbox_free_list(list, n);
	return dt_reply_sandbox(r, id, 200);
}

/* POST /api/sandbox/{id}/snapshot {name, includeMemory?}: a sandlot snapshot of that
 * name, which a create's `snapshot` takes; the sandbox's DTO (never "snapshotting":
 * the capture is done when this answers). */
enum MHD_Result dt_sandbox_snapshot(api_req *r)
{
	static const char *const fields[] = {"name", "includeMemory", NULL};
	const cJSON *body;
	const char *name = NULL;
	bool memory = false;
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_string(body, "", "name", &name, &err) < 0 ||
	    api_json_bool(body, "", "includeMemory", &memory, &err) < 0)
		return dt_error(r, &err, NULL);
	if (!name || !*name) {
		sl_fail(&err, SL_INVALID, 0, "name: required");
		return dt_error(r, &err, NULL);
	}
	if (memory) {
		sl_fail(&err, SL_INVALID, 0,
			"includeMemory: sandlot snapshots hold files only (memory needs hibernate, "
			"not available yet)");
		return dt_error(r, &err, NULL);
	}
	sl_snapshot s;
	if (dt_lookup(r, &sb, &err) < 0 || snapshot_create(r->srv->ctx, sb.id, name, &s, &err) < 0)
		return dt_error(r, &err, NULL);
	return dt_reply_sandbox(r, sb.id, 200);
}

/* POST /api/sandbox/{id}/archive, state "archived": a running sandbox is hibernated
 * (memory to disk, nothing left running) when it can be, else stopped with its files
 * kept (sandbox_park logs why: one not created with "hibernate": true, CRIU refusing);
 * a paused or stopped one is stopped and marked (sandbox_archive), a hibernated one
 * stays so. start resumes it or starts it. */
enum MHD_Result dt_sandbox_archive(api_req *r)
{
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (dt_lookup(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	int rc = sb.status == SL_ST_HIBERNATED ? 0
		 : sb.status == SL_ST_RUNNING  ? sandbox_park(r->srv->ctx, sb.id, SL_PARK_ARCHIVE,
							      "Daytona archive", NULL, &err)
					       : sandbox_archive(r->srv->ctx, sb.id, NULL, &err);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	return dt_reply_sandbox(r, sb.id, 200);
}

/* The {n} of an interval route: whole minutes, -1 allowed where NEG. */
static int interval_of(api_req *r, bool neg, int64_t *n, sl_err *err)
{
	char *end;
	errno = 0;
	long long v = strtoll(r->param[1], &end, 10);
	if (!*r->param[1] || *end || errno || v < (neg ? -1 : 0) || v > 525600 * 10)
		return sl_fail(err, SL_INVALID, 0, "\"%s\" is not a whole number of minutes%s",
			       r->param[1], neg ? " (or -1)" : "");
	*n = v;
	return 0;
}

static enum MHD_Result set_interval(api_req *r, bool del)
{
	sl_err err = {0};
	int64_t n = 0;
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (interval_of(r, del, &n, &err) < 0 || dt_lookup(r, &sb, &err) < 0 ||
	    sandbox_set_stop_policy(r->srv->ctx, sb.id, del ? INT64_MIN : n, del ? n : INT64_MIN,
				    NULL, &err) < 0)
		return dt_error(r, &err, NULL);
	return api_reply_empty(r, 200);
}

enum MHD_Result dt_sandbox_autoarchive(api_req *r)
{
	return set_interval(r, false);
}

enum MHD_Result dt_sandbox_autodelete(api_req *r)
{
	return set_interval(r, true);
}

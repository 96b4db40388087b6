/* daytona.c — the Daytona compatibility façade: the SDK's control plane under /api and
 * its toolbox under /toolbox/{sandboxId}, translated to the runtime calls /v1 makes.
 * This file holds the route table, the error shape and the helpers the others share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "daytona.h"

/* ---- errors ---- */

enum MHD_Result dt_reply_error(api_req *r, unsigned status, const char *message, const char *code,
			       const char *source)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "statusCode", status);
	cJSON_AddStringToObject(o, "message", message);
	cJSON_AddStringToObject(o, "code", code);
	cJSON_AddStringToObject(o, "source", source);
	return api_reply_json(r, status, o);
}

enum MHD_Result dt_error(api_req *r, const sl_err *err, const char *daemon_code)
{
	sl_kind kind = err->kind ? err->kind : SL_INTERNAL;
	return dt_reply_error(r, api_err_status(err), err->msg[0] ? err->msg : "internal error",
			      daemon_code ? daemon_code : sl_kind_code(kind),
			      daemon_code ? "DAYTONA_DAEMON" : "DAYTONA_API");
}

enum MHD_Result dt_file_error(api_req *r, const sl_err *err)
{
	const char *code = err->kind == SL_NOTFOUND  ? "FILE_NOT_FOUND"
			   : err->kind == SL_INVALID ? "INVALID_FILE_PATH"
						     : NULL;
	return dt_error(r, err, code);
}

static enum MHD_Result no_route(api_req *r, bool path_known, const char *allow)
{
	if (path_known)
		return dt_fail(r, SL_INVALID, NULL, "%s answers %s, not %s", r->url, allow,
			       r->method);
	return dt_fail(r, SL_NOTFOUND, NULL,
		       "no route %s %s in sandlot's Daytona API (see docs/daytona.md)", r->method,
		       r->url);
}

static enum MHD_Result unauthorized(api_req *r)
{
	return dt_fail(r, SL_UNAUTH, NULL,
		       "set DAYTONA_API_KEY to sandlot's API key (print it with `sandlot key`)");
}

/* ---- helpers ---- */

int dt_sandbox(api_req *r, sl_sandbox *sb, sl_err *err)
{
	cJSON *dto = NULL;
	if (dt_build_resolve(r, &dto) == 2) {
		cJSON_Delete(dto);
		return sl_fail(err, SL_CONFLICT, 0, "sandbox %s is being built; wait for it to start",
			       r->param[0]);
	}
	if (api_sandbox_for_call(r, sb, err) < 0)
		return -1;
	api_touch(r->srv, sb->id);
	if (sb->status != SL_ST_RUNNING) {
		sl_fail(err, SL_CONFLICT, 0, "sandbox %s is %s; start it first", sb->id,
			sandbox_status_name(sb->status));
		sandbox_free(sb);
		return -1;
	}
	return 0;
}

void dt_origin(api_req *r, char *buf, size_t len)
{
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	if (!host || !*host || strpbrk(host, "/\\ \"\r\n"))
		host = "localhost";
	snprintf(buf, len, "http://%s", host);
}

int dt_capture(api_req *r, const sl_sandbox *sb, char *const *argv, size_t cap, char **out,
	       int *exit_code, sl_err *err)
{
	sl_exec_spec spec = {.argv = argv, .timeout_ms = 5 * 60 * 1000};
	sl_exec e;
	int rc = api_exec_run(r, sb, &spec, &e, err);
	if (rc < 0)
		return -1;
	char eid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	*exit_code = e.exit_code;
	exec_free(&e);
	if (rc == 1)
		return sl_fail(err, SL_INTERNAL, 0, "abandoned (client gone or daemon stopping)");
	bool trunc;
	return api_exec_read_output(r->srv, sb->id, eid, "stdout", cap, out, &trunc, err);
}

/* ---- routes ---- */

#define TB "/toolbox/{id}"
/* clang-format off */
static const api_route routes[] = {
	{ "POST",   "/api/sandbox", API_BODY_JSON, dt_sandbox_create, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox", API_BODY_NONE, dt_sandbox_list, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox/{id}", API_BODY_NONE, dt_sandbox_get, NULL, NULL, 0 },
	{ "DELETE", "/api/sandbox/{id}", API_BODY_NONE, dt_sandbox_delete, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/start", API_BODY_NONE, dt_sandbox_start, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/stop", API_BODY_NONE, dt_sandbox_stop, NULL, NULL, 0 },
	{ "PUT",    "/api/sandbox/{id}/labels", API_BODY_JSON, dt_sandbox_labels, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/network-settings", API_BODY_JSON, dt_sandbox_network, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/last-activity", API_BODY_NONE, dt_sandbox_activity, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/autostop/{n}", API_BODY_NONE, dt_sandbox_autostop, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/ttl/{n}", API_BODY_NONE, dt_sandbox_ttl, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/autoarchive/{n}", API_BODY_NONE, dt_sandbox_autoarchive, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/autodelete/{n}", API_BODY_NONE, dt_sandbox_autodelete, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/fork", API_BODY_JSON, dt_sandbox_fork, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/snapshot", API_BODY_JSON, dt_sandbox_snapshot, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/archive", API_BODY_NONE, dt_sandbox_archive, NULL, NULL, 0 },
	{ "POST",   "/api/sandbox/{id}/autopause/{n}", API_BODY_NONE, dt_sandbox_unsupported_interval, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox/{id}/toolbox-proxy-url", API_BODY_NONE, dt_sandbox_toolbox_url, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox/{id}/ports/{port}/preview-url", API_BODY_NONE, dt_sandbox_preview_url, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox/{id}/build-logs-url", API_BODY_NONE, dt_sandbox_build_logs_url, NULL, NULL, 0 },
	{ "GET",    "/api/sandbox/{id}/build-logs", API_BODY_NONE, dt_sandbox_build_logs, NULL, NULL, 0 },
	{ "POST",   "/api/snapshots", API_BODY_JSON, dt_snapshot_create, NULL, NULL, 0 },
	{ "GET",    "/api/snapshots", API_BODY_NONE, dt_snapshot_list, NULL, NULL, 0 },
	{ "GET",    "/api/snapshots/{id}", API_BODY_NONE, dt_snapshot_get, NULL, NULL, 0 },
	{ "DELETE", "/api/snapshots/{id}", API_BODY_NONE, dt_snapshot_delete, NULL, NULL, 0 },
	{ "GET",    "/api/snapshots/{id}/build-logs-url", API_BODY_NONE, dt_snapshot_build_logs_url, NULL, NULL, 0 },
	{ "GET",    "/api/snapshots/{id}/build-logs", API_BODY_NONE, dt_snapshot_build_logs, NULL, NULL, 0 },
	/* the Secret service (daytona_secrets.c) */
	{ "POST",   "/api/secret", API_BODY_JSON, dt_secret_create, NULL, NULL, 0 },
	{ "GET",    "/api/secret", API_BODY_NONE, dt_secret_list, NULL, NULL, 0 },
	{ "GET",    "/api/secret/paginated", API_BODY_NONE, dt_secret_page, NULL, NULL, 0 },
	{ "GET",    "/api/secret/{id}", API_BODY_NONE, dt_secret_get, NULL, NULL, 0 },
	{ "PATCH",  "/api/secret/{id}", API_BODY_JSON, dt_secret_update, NULL, NULL, 0 },
	{ "DELETE", "/api/secret/{id}", API_BODY_NONE, dt_secret_delete, NULL, NULL, 0 },
	/* The upgrade carries no Authorization: the token comes in the CONNECT packet. */
	{ "GET",    "/api/socket.io/", API_BODY_NONE, dt_events, NULL, NULL, API_ROUTE_OWN_AUTH },

	{ "POST",   TB "/process/execute", API_BODY_JSON, dt_execute, NULL, NULL, 0 },
	{ "POST",   TB "/process/code-run", API_BODY_JSON, dt_code_run, NULL, NULL, 0 },
	{ "POST",   TB "/process/session", API_BODY_JSON, dt_session_create, NULL, NULL, 0 },
	{ "GET",    TB "/process/session", API_BODY_NONE, dt_session_list, NULL, NULL, 0 },
	{ "GET",    TB "/process/session/{sid}", API_BODY_NONE, dt_session_get, NULL, NULL, 0 },
	{ "DELETE", TB "/process/session/{sid}", API_BODY_NONE, dt_session_delete, NULL, NULL, 0 },
	{ "POST",   TB "/process/session/{sid}/exec", API_BODY_JSON, dt_session_exec, NULL, NULL, 0 },
	{ "GET",    TB "/process/session/{sid}/command/{cid}", API_BODY_NONE, dt_session_command, NULL, NULL, 0 },
	{ "GET",    TB "/process/session/{sid}/command/{cid}/logs", API_BODY_NONE, dt_session_logs, NULL, NULL, 0 },
	{ "POST",   TB "/process/session/{sid}/command/{cid}/input", API_BODY_JSON, dt_session_input, NULL, NULL, 0 },
	{ "GET",    TB "/user-home-dir", API_BODY_NONE, dt_home_dir, NULL, NULL, 0 },
	{ "GET",    TB "/work-dir", API_BODY_NONE, dt_work_dir, NULL, NULL, 0 },

	{ "GET",    TB "/files", API_BODY_NONE, dt_files_list, NULL, NULL, 0 },
	{ "DELETE", TB "/files", API_BODY_NONE, dt_files_delete, NULL, NULL, 0 },
	{ "GET",    TB "/files/info", API_BODY_NONE, dt_files_info, NULL, NULL, 0 },
	{ "POST",   TB "/files/folder", API_BODY_NONE, dt_files_folder, NULL, NULL, 0 },
	{ "POST",   TB "/files/move", API_BODY_NONE, dt_files_move, NULL, NULL, 0 },
	{ "POST",   TB "/files/permissions", API_BODY_NONE, dt_files_permissions, NULL, NULL, 0 },
	{ "GET",    TB "/files/find", API_BODY_NONE, dt_files_find, NULL, NULL, 0 },
	{ "GET",    TB "/files/search", API_BODY_NONE, dt_files_search, NULL, NULL, 0 },
	{ "POST",   TB "/files/bulk-download", API_BODY_JSON, dt_files_download, NULL, NULL, 0 },
	{ "POST",   TB "/files/bulk-upload", API_BODY_RAW, dt_files_upload,
		    dt_files_upload_begin, dt_files_upload_chunk, 0 },
};
/* clang-format on */

static bool claims(api_req *r)
{
	return !strcmp(r->url, "/api") || !strncmp(r->url, "/api/", 5) ||
	       !strncmp(r->url, "/toolbox/", 9);
}

const api_facade api_facade_daytona = {.name = "daytona",
				       .claims = claims,
				       .routes = routes,
				       .nroutes = sizeof(routes) / sizeof(routes[0]),
				       .no_route = no_route,
				       .unauthorized = unauthorized,
				       .stop = dt_builds_stop};

/* agentuity_exec.c — Agentuity's execute, execution long-poll and stream URLs over
 * sandlot's durable executions: the stream URLs are capability URLs (an HMAC of the daemon
 * key) serving the execution's append-only log, live until the command ends, then whole. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "cleanup.h"
#include "clock.h"
#include "rundir.h"
#include "agentuity.h"

#define WAIT_MAX_MS (5 * 60 * 1000)
#define TOKEN_HEX   (2 * SHA256_DIGEST_SIZE)

/* ---- execution shapes ---- */

static const char *ag_exec_status(const sl_exec *e)
{
	switch (e->status) {
	case SL_EXEC_RUNNING:
		return "running";
	case SL_EXEC_COMPLETED:
		return "completed";
	case SL_EXEC_TIMEOUT:
		return "timeout";
	case SL_EXEC_CANCELLED:
		return "cancelled";
	case SL_EXEC_FAILED:
		break;
	}
	/* A command that ran and exited non-zero completed (the exit code says how); one that
	 * could not start (126/127), was killed by a signal or the OOM killer failed. */
	if (e->signal || e->oom_killed || e->exit_code == 126 || e->exit_code == 127 ||
	    e->exit_code < 0)
		return "failed";
	return "completed";
}

static void ag_exec_fields(api_req *r, cJSON *o, const sl_exec *e)
{
	char t[40];
	cJSON_AddStringToObject(o, "executionId", e->id);
	cJSON_AddStringToObject(o, "sandboxId", e->sandbox_id);
	cJSON_AddStringToObject(o, "status", ag_exec_status(e));
	cJSON_AddStringToObject(o, "type", "exec");
	if (e->command)
		cJSON_AddItemToObject(o, "command", cJSON_Duplicate(e->command, 1));
	sl_iso_time(e->started_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "startedAt", t);
	if (e->status != SL_EXEC_RUNNING) {
		/* Always an exit code once it ended: without one run() reports 0. */
		cJSON_AddNumberToObject(o, "exitCode", e->exit_code);
		cJSON_AddNumberToObject(
		    o, "durationMs",
		    (double)(e->finished_ms > e->started_ms ? e->finished_ms - e->started_ms : 0));
		sl_iso_time(e->finished_ms, t, sizeof(t));
		cJSON_AddStringToObject(o, "completedAt", t);
	}
	ag_stream_fields(r, o, e->sandbox_id, e->id, "stdout", false);
	ag_stream_fields(r, o, e->sandbox_id, e->id, "stderr", false);
}

/* ---- stream capability URLs: SID.EID.STREAM.HMAC(key, SID/EID/STREAM) ---- */

static void stream_token(api_server *s, const char *sid, const char *eid, const char *stream,
			 char hex[TOKEN_HEX + 1])
{
	struct hmac_sha256_ctx c;
	uint8_t mac[SHA256_DIGEST_SIZE];
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "sandlot agentuity stream %s/%s/%s", sid, eid, stream);
	hmac_sha256_set_key(&c, strlen(s->key), (const uint8_t *)s->key);
	hmac_sha256_update(&c, (size_t)n, (const uint8_t *)msg);
	hmac_sha256_digest(&c, sizeof(mac), mac);
	for (size_t i = 0; i < sizeof(mac); i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
}

void ag_stream_fields(api_req *r, cJSON *o, const char *sandbox_id, const char *exec_id,
		      const char *stream, bool with_id)
{
	char tok[TOKEN_HEX + 1], id[256], url[1024], key[32];
	stream_token(r->srv, sandbox_id, exec_id, stream, tok);
	snprintf(id, sizeof(id), "%s.%s.%s.%s", sandbox_id, exec_id, stream, tok);
	/* Absolute (the client parses it with new URL()), on the host the client reached. */
	const char *host = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Host");
	if (!host || !*host || strpbrk(host, "/?#@ \t\r\n"))
		host = "localhost";
	snprintf(url, sizeof(url), "http://%s" AG_PREFIX "/stream/%s", host, id);
	snprintf(key, sizeof(key), "%sStreamUrl", stream);
	cJSON_AddStringToObject(o, key, url);
	if (with_id) {
		snprintf(key, sizeof(key), "%sStreamId", stream);
		cJSON_AddStringToObject(o, key, id);
	}
}

enum MHD_Result ag_stream(api_req *r)
{
	char buf[256], *part[4], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", r->param[0]);
	int n = 0;
	for (char *t = strtok_r(buf, ".", &save); t && n < 4; t = strtok_r(NULL, ".", &save))
		part[n++] = t;
	char want[TOKEN_HEX + 1];
	bool ok = n == 4 && id_ok(part[0], "sbx_") && id_ok(part[1], "exe_") &&
		  (!strcmp(part[2], "stdout") || !strcmp(part[2], "stderr")) &&
		  strlen(part[3]) == TOKEN_HEX;
	if (ok) {
		stream_token(r->srv, part[0], part[1], part[2], want);
		ok = memeql_sec(want, part[3], TOKEN_HEX);
	}
	/* A wrong token looks like a missing stream. */
	if (!ok)
		return ag_fail(r, SL_NOTFOUND, "no stream %s", r->param[0]);
	sl_err err = {0};
	struct MHD_Response *resp =
	    api_exec_stream_response(r, part[0], part[1], part[2], true, &err);
	if (!resp)
		return ag_reply_error(r, &err, "STREAM_NOT_FOUND");
	return api_reply(r, 200, resp);
}

/* ---- execute ---- */

int ag_exec_start(api_req *r, const sl_sandbox *sb, char **argv, const char *shell,
		  const cJSON *files, uint64_t timeout_ms, sl_exec *out, sl_err *err)
{
	int n;
	if (files && !cJSON_IsNull(files) && api_files_write_batch(r->srv, sb, files, &n, err) < 0)
		return -1;
	sl_exec_spec spec = {.argv = argv, .shell = shell, .timeout_ms = timeout_ms};
	if (exec_start(r->srv->ctx, sb, &spec, out, err) < 0)
		return -1;
	atomic_fetch_add(&r->srv->executions_started, 1);
	return 0;
}

enum MHD_Result ag_execute(api_req *r)
{
	static const char *const fields[] = {"command", "files", "timeout", "stream", NULL};
	const cJSON *body;
	sl_err err = {0};
	char **argv = NULL;
	const char *shell = NULL;
	uint64_t timeout_ms = 0;
	bool given = false;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    api_json_duration(body, "", "timeout", &timeout_ms, &given, &err) < 0 ||
	    api_json_command(body, "", "command", &argv, &shell, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	sl_sandbox sb;
	bool resumed;
	if (ag_sandbox_for_call(r, &sb, &resumed, &err) < 0) {
		api_strv_free(argv);
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	}
	if (ag_sandbox_ended(r, &sb)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "sandbox %s ran its oneshot command and is terminated",
			 sb.id);
		api_strv_free(argv);
		sandbox_free(&sb);
		return ag_reply_failure(r, 410, "SANDBOX_TERMINATED", msg);
	}
	/* Agentuity sends argv; a string runs as a shell line, as on /v1. */
	sl_exec e;
	int rc = ag_exec_start(r, &sb, argv, shell, cJSON_GetObjectItemCaseSensitive(body, "files"),
			       given ? timeout_ms : sb.exec_timeout_ms, &e, &err);
	api_strv_free(argv);
	sandbox_free(&sb);
	if (rc < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(body, "stream");
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "executionId", e.id);
	cJSON_AddStringToObject(d, "status", ag_exec_status(&e));
	static const char *const names[] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(stream, names[i]);
		if (!(cJSON_IsString(s) && !strcmp(s->valuestring, "ignore")))
			ag_stream_fields(r, d, e.sandbox_id, e.id, names[i], false);
	}
	exec_free(&e);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", true);
	cJSON_AddItemToObject(o, "data", d);
	if (resumed)
		cJSON_AddBoolToObject(o, "autoResumed", true);
	return api_reply_json(r, 200, o);
}

/* ---- execution get (long-poll) and list ---- */

enum MHD_Result ag_execution_get(api_req *r)
{
	sl_err err = {0};
	uint64_t ms = 0;
	bool given;
	char sid[32];
	if (api_query_duration(r, "wait", &ms, &given, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	char seen[32];
	/* By its execution id alone: its sandbox must be one the key sees (fix 10). */
	if (rundir_exec_sandbox(&r->srv->ctx->cfg, r->param[0], sid, &err) < 0 ||
	    sandbox_resolve_ref(r->srv->ctx, sid, seen, sizeof(seen), &err) < 0) {
		sl_fail(&err, SL_NOTFOUND, 0, "no execution %s", r->param[0]);
		return ag_reply_error(r, &err, "EXECUTION_NOT_FOUND");
	}
	api_touch(r->srv, sid);
	sl_exec e;
	int rc = given && ms ? api_exec_wait(r, sid, r->param[0],
					     ms > WAIT_MAX_MS ? WAIT_MAX_MS : (int64_t)ms, &e, &err)
			     : exec_get(r->srv->ctx, sid, r->param[0], &e, &err);
	if (rc < 0)
		return ag_reply_error(r, &err, "EXECUTION_NOT_FOUND");
	sl_sandbox sb;
	if (e.status != SL_EXEC_RUNNING && sandbox_get(r->srv->ctx, sid, &sb, &err) == 0) {
		ag_sandbox_ended(r, &sb); /* a oneshot's exit is remembered now */
		sandbox_free(&sb);
	}
	cJSON *d = cJSON_CreateObject();
	ag_exec_fields(r, d, &e);
	exec_free(&e);
	return ag_reply_data(r, 200, d);
}

enum MHD_Result ag_execution_list(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	if (sandbox_get(r->srv->ctx, r->param[0], &sb, &err) < 0 || sb.status == SL_ST_TERMINATED) {
		if (!err.kind) {
			sandbox_free(&sb);
			sl_fail(&err, SL_NOTFOUND, 0, "sandbox %s was destroyed", r->param[0]);
		}
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	}
	const char *lim = api_query(r, "limit");
	long limit = lim ? strtol(lim, NULL, 10) : 0;
	sl_exec *list;
	size_t n;
	int rc = exec_list(r->srv->ctx, sb.id, &list, &n, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	cJSON *d = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(d, "executions");
	/* Newest first; ?limit keeps the newest. */
	for (size_t k = 0; k < n && (limit <= 0 || (long)k < limit); k++) {
		cJSON *o = cJSON_CreateObject();
		ag_exec_fields(r, o, &list[n - 1 - k]);
		cJSON_AddItemToArray(arr, o);
	}
	exec_free_list(list, n);
	return ag_reply_data(r, 200, d);
}

/* agentuity.c — the Agentuity façade under /agentuity (@agentuity/core 2.0's SandboxClient):
 * its route table, the {success, data} envelope, and sandboxes, status, pause/resume and
 * snapshots, each translated to the runtime calls /v1 makes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "clock.h"
#include "snapshot.h"
#include "agentuity.h"
#include "view.h"

/* A oneshot sandbox outlives its command this long without a call on it (for the
 * client's stream reads and polls), then the idle timer destroys it. */
#define ONESHOT_GRACE_MS (15 * 1000)
#define WAIT_MAX_MS	 (5 * 60 * 1000)
/* Labels that keep what sandlot has no field for (visible in /v1 too). */
#define LABEL_MODE	  "agentuity.mode"
#define LABEL_DESCRIPTION "agentuity.description"
#define LABEL_METADATA	  "agentuity.metadata"
#define LABEL_EXIT	  "agentuity.exitCode"

/* ---- the envelope ---- */

enum MHD_Result ag_reply_data(api_req *r, unsigned status, cJSON *data)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", true);
	if (data)
		cJSON_AddItemToObject(o, "data", data);
	return api_reply_json(r, status, o);
}

enum MHD_Result ag_reply_ok(api_req *r, cJSON *top)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", true);
	while (top && top->child) {
		cJSON *it = top->child;
		cJSON_AddItemToObject(o, it->string, cJSON_DetachItemViaPointer(top, it));
	}
	cJSON_Delete(top);
	/* Never an empty body: the client turns one into null and fails its schema. */
	return api_reply_json(r, 200, o);
}

enum MHD_Result ag_reply_failure(api_req *r, unsigned status, const char *code, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", false);
	cJSON_AddStringToObject(o, "message", message);
	cJSON_AddStringToObject(o, "code", code);
	return api_reply_json(r, status, o);
}

enum MHD_Result ag_reply_error(api_req *r, const sl_err *err, const char *notfound_code)
{
	sl_kind kind = err->kind ? err->kind : SL_INTERNAL;
	const char *code =
	    kind == SL_NOTFOUND && notfound_code ? notfound_code : sl_kind_code(kind);
	return ag_reply_failure(r, api_err_status(err), code,
				err->msg[0] ? err->msg : "internal error");
}

/* Agentuity features that need its cloud: a clear 501 naming what to use instead. */
static enum MHD_Result not_implemented(api_req *r)
{
	return ag_fail(r, SL_NOTIMPL,
		       "%s %s is an Agentuity cloud feature sandlot does not have (see README, "
		       "\"Use with Agentuity's client\")",
		       r->method, r->url);
}

/* ---- sandboxes: the shapes ---- */


static const char *label(const sl_sandbox *sb, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(sb->labels, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_oneshot(const sl_sandbox *sb)
{
	const char *m = label(sb, LABEL_MODE);
	return m && !strcmp(m, "oneshot");
}

/* What Agentuity calls the sandbox's state, from the record and its executions. A
 * oneshot sandbox is terminated (with the exit code) once its command has ended. */
typedef struct ag_state {
	const char *status;
	size_t executions;
	bool has_exit;
	int exit_code;
	char first_exec[32]; /* the oneshot command's execution */
} ag_state;

/* A oneshot's exit code goes into its labels, so it outlives the execution records (which
 * go when the idle timer reclaims the sandbox). */
static void remember_exit(api_req *r, const sl_sandbox *sb, int code)
{
	if (label(sb, LABEL_EXIT))
		return;
	cJSON *l = sb->labels ? cJSON_Duplicate(sb->labels, 1) : cJSON_CreateObject();
	char buf[16];
	snprintf(buf, sizeof(buf), "%d", code);
	cJSON_AddStringToObject(l, LABEL_EXIT, buf);
	sl_err err = {0};
	sandbox_set_labels(r->srv->ctx, sb->id, l, NULL, &err);
	cJSON_Delete(l);
}

static void sandbox_state(api_req *r, const sl_sandbox *sb, ag_state *st)
{
	memset(st, 0, sizeof(*st));
	if (sb->status == SL_ST_TERMINATED) {
		st->status = !strcmp(sb->reason, "deleted") ? "deleted" : "terminated";
		const char *code = label(sb, LABEL_EXIT);
		if (code && is_oneshot(sb)) {
			st->has_exit = true;
			st->exit_code = atoi(code);
		}
		return;
	}
	sl_exec *ex = NULL;
	size_t n = 0;
	sl_err err = {0};
	bool running = false;
	if (exec_list(r->srv->ctx, sb->id, &ex, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			running = running || ex[i].status == SL_EXEC_RUNNING;
		st->executions = n;
		if (n && is_oneshot(sb)) {
			snprintf(st->first_exec, sizeof(st->first_exec), "%s", ex[0].id);
			if (ex[0].status != SL_EXEC_RUNNING) {
				st->has_exit = true;
				st->exit_code = ex[0].exit_code;
				remember_exit(r, sb, st->exit_code);
			}
		}
		exec_free_list(ex, n);
	}
	if (sb->status == SL_ST_CREATING)
		st->status = "creating";
	else if (sb->status == SL_ST_FAILED || sb->status == SL_ST_BROKEN)
		st->status = "failed";
	else if (sb->status == SL_ST_PAUSED || sb->status == SL_ST_HIBERNATED ||
		 sb->status == SL_ST_STOPPED)
		st->status = "suspended";
	else if (st->has_exit)
		st->status = "terminated";
	else
		st->status = running ? "running" : "idle";
}

bool ag_sandbox_ended(api_req *r, const sl_sandbox *sb)
{
	ag_state st;
	if (!is_oneshot(sb))
		return false;
	sandbox_state(r, sb, &st);
	return st.has_exit;
}

static void add_quantity(cJSON *o, const char *key, uint64_t v, bool cpu)
{
	char buf[32];
	if (!v)
		return;
	if (cpu)
		snprintf(buf, sizeof(buf), "%llum", (unsigned long long)v);
	else if (v % (1ull << 30) == 0)
		snprintf(buf, sizeof(buf), "%lluGi", (unsigned long long)(v >> 30));
	else if (v % (1ull << 20) == 0)
		snprintf(buf, sizeof(buf), "%lluMi", (unsigned long long)(v >> 20));
	else
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddStringToObject(o, key, buf);
}

/* The record's packages ({name, version?, manager}, once sandboxes can have them) back
 * in Agentuity's form: apt ones as dependencies ("name=version"), npm ones as packages
 * ("name@version"). */
static void add_packages(cJSON *o, const cJSON *pkgs)
{
	const cJSON *p;
	if (!cJSON_IsArray(pkgs))
		return;
	cJSON_ArrayForEach(p, pkgs)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
		const cJSON *ver = cJSON_GetObjectItemCaseSensitive(p, "version");
		const cJSON *mgr = cJSON_GetObjectItemCaseSensitive(p, "manager");
		if (!cJSON_IsString(name) || !cJSON_IsString(mgr))
			continue;
		bool apt = !strcmp(mgr->valuestring, "apt");
		if (!apt && strcmp(mgr->valuestring, "npm"))
			continue;
		const char *key = apt ? "dependencies" : "packages";
		cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, key);
		if (!arr)
			arr = cJSON_AddArrayToObject(o, key);
		char buf[512];
		if (cJSON_IsString(ver) && ver->valuestring[0])
			snprintf(buf, sizeof(buf), "%s%c%s", name->valuestring, apt ? '=' : '@',
				 ver->valuestring);
		else
			snprintf(buf, sizeof(buf), "%s", name->valuestring);
		cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
	}
}

/* SandboxInfo: get and list entries (list needs "org"; get accepts it). */
static cJSON *sandbox_info(api_req *r, const sl_sandbox *sb)
{
	ag_state st;
	char t[40];
	sandbox_state(r, sb, &st);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sandboxId", sb->id);
	cJSON_AddStringToObject(o, "identifier", sb->id);
	if (sb->name[0])
		cJSON_AddStringToObject(o, "name", sb->name);
	const char *desc = label(sb, LABEL_DESCRIPTION);
	if (desc)
		cJSON_AddStringToObject(o, "description", desc);
	cJSON_AddStringToObject(o, "status", st.status);
	cJSON_AddStringToObject(o, "mode", is_oneshot(sb) ? "oneshot" : "interactive");
	sl_iso_time(sb->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	cJSON_AddStringToObject(o, "region", "local");
	cJSON_AddNumberToObject(o, "executions", (double)st.executions);
	if (st.has_exit)
		cJSON_AddNumberToObject(o, "exitCode", st.exit_code);
	if (st.first_exec[0]) {
		ag_stream_fields(r, o, sb->id, st.first_exec, "stdout", false);
		ag_stream_fields(r, o, sb->id, st.first_exec, "stderr", false);
	}
	if (sb->snapshot[0]) {
		cJSON *s = cJSON_AddObjectToObject(o, "snapshot");
		cJSON_AddStringToObject(s, "id", sb->snapshot);
		cJSON_AddBoolToObject(s, "public", false);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(s, "user"), "id", "local");
	}
	const char *meta = label(sb, LABEL_METADATA);
	cJSON *m = meta ? cJSON_Parse(meta) : NULL;
	if (cJSON_IsObject(m))
		cJSON_AddItemToObject(o, "metadata", m);
	else
		cJSON_Delete(m);
	cJSON *res = cJSON_AddObjectToObject(o, "resources");
	add_quantity(res, "memory", sb->limits.memory_bytes, false);
	add_quantity(res, "cpu", sb->limits.cpu_millicores, true);
	add_quantity(res, "disk", sb->disk_bytes, false);
	/* The record's network object (once sandboxes can have one). */
	cJSON *rec = view_sandbox_json(sb);
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(rec, "network");
	cJSON_AddBoolToObject(o, "networkEnabled",
			      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(net, "enabled")));
	add_packages(o, cJSON_GetObjectItemCaseSensitive(rec, "packages"));
	cJSON_Delete(rec);
	cJSON *tmo = cJSON_AddObjectToObject(o, "timeout");
	char d[32];
	if (sb->idle_ms && !is_oneshot(sb)) {
		api_duration_format(sb->idle_ms, d, sizeof(d));
		cJSON_AddStringToObject(tmo, "idle", d);
	}
	if (sb->exec_timeout_ms) {
		api_duration_format(sb->exec_timeout_ms, d, sizeof(d));
		cJSON_AddStringToObject(tmo, "execution", d);
	}
	cJSON *org = cJSON_AddObjectToObject(o, "org");
	cJSON_AddStringToObject(org, "id", "org_local");
	cJSON_AddStringToObject(org, "name", "sandlot");
	return o;
}

int ag_sandbox_for_call(api_req *r, sl_sandbox *sb, bool *resumed, sl_err *err)
{
	if (resumed)
		*resumed = false;
	api_touch(r->srv, r->param[0]);
	if (api_sandbox_live(r->srv, r->param[0], sb, err) < 0)
		return -1;
	bool paused = sb->status == SL_ST_PAUSED || sb->status == SL_ST_HIBERNATED,
	     stopped = sb->status == SL_ST_STOPPED;
	if (!paused && !stopped)
		return 0;
	/* Agentuity resumes a suspended sandbox on use (execute says autoResumed). */
	char id[32];
	snprintf(id, sizeof(id), "%s", sb->id);
	sandbox_free(sb);
	if ((paused ? sandbox_resume : sandbox_start)(r->srv->ctx, id, sb, err) < 0)
		return -1;
	if (resumed)
		*resumed = true;
	return 0;
}

/* ---- create ---- */

/* "curl", "curl=7.88.1-10" (apt's own syntax) -> {name, version?, manager}. npm names
 * take "@version" ("@scope/pkg@1.2" too). */
static cJSON *package_list(const cJSON *names, const char *field, const char *manager, cJSON *out,
			   sl_err *err)
{
	if (!names || cJSON_IsNull(names))
		return out;
	if (!cJSON_IsArray(names)) {
		sl_fail(err, SL_INVALID, 0, "%s: expected an array of package names", field);
		cJSON_Delete(out);
		return NULL;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, names)
	{
		if (!cJSON_IsString(it) || !it->valuestring[0]) {
			sl_fail(err, SL_INVALID, 0, "%s: expected package names (strings)", field);
			cJSON_Delete(out);
			return NULL;
		}
		const char *s = it->valuestring;
		const char *sep = !strcmp(manager, "apt") ? strchr(s, '=') : strrchr(s + 1, '@');
		cJSON *p = cJSON_CreateObject();
		if (sep) {
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(sep - s), s);
			cJSON_AddStringToObject(p, "name", name);
			cJSON_AddStringToObject(p, "version", sep + 1);
		} else {
			cJSON_AddStringToObject(p, "name", s);
		}
		cJSON_AddStringToObject(p, "manager", manager);
		cJSON_AddItemToArray(out, p);
	}
	return out;
}

cJSON *ag_v1_body(const cJSON *in, bool oneshot, sl_err *err)
{
	static const char *const fields[] = {
	    "projectId", "runtime",	 "runtimeId", "name",	  "description", "resources",
	    "env",	 "network",	 "stream",    "timeout",  "command",	 "files",
	    "snapshot",	 "dependencies", "packages",  "metadata", "scopes",	 NULL};
	if (api_json_fields(in, "", fields, err) < 0)
		return NULL;
	const char *runtime = NULL;
	if (api_json_string(in, "", "runtime", &runtime, err) < 0 ||
	    api_json_string(in, "", "runtimeId", &runtime, err) < 0)
		return NULL;
	if (runtime) {
		sl_fail(err, SL_NOTIMPL, 0,
			"runtime/runtimeId: Agentuity's runtime catalogue is not available; "
			"sandboxes use sandlot's default image");
		return NULL;
	}
	const cJSON *scopes = cJSON_GetObjectItemCaseSensitive(in, "scopes");
	if (cJSON_IsArray(scopes) && cJSON_GetArraySize(scopes) > 0) {
		sl_fail(err, SL_NOTIMPL, 0,
			"scopes: Agentuity credential scopes are not available");
		return NULL;
	}
	cJSON *out = cJSON_CreateObject();
	static const char *const copy[] = {"name", "resources", "env", "snapshot"};
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, copy[i]);
		if (v && !cJSON_IsNull(v))
			cJSON_AddItemToObject(out, copy[i], cJSON_Duplicate(v, 1));
	}
	cJSON *labels = cJSON_AddObjectToObject(out, "labels");
	cJSON_AddStringToObject(labels, LABEL_MODE, oneshot ? "oneshot" : "interactive");
	const char *desc = NULL;
	if (api_json_string(in, "", "description", &desc, err) < 0)
		goto fail;
	if (desc)
		cJSON_AddStringToObject(labels, LABEL_DESCRIPTION, desc);
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(in, "metadata");
	if (cJSON_IsObject(meta)) {
		_cleanup_free_ char *text = cJSON_PrintUnformatted(meta);
		if (text)
			cJSON_AddStringToObject(labels, LABEL_METADATA, text);
	}
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(in, "network");
	if (net && !cJSON_IsNull(net)) {
		static const char *const nf[] = {"enabled", "port", NULL};
		bool on = false;
		if (api_json_fields(net, "network.", nf, err) < 0 ||
		    api_json_bool(net, "network.", "enabled", &on, err) < 0)
			goto fail;
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(net, "port");
		if (port && !cJSON_IsNull(port)) {
			sl_fail(
			    err, SL_NOTIMPL, 0,
			    "network.port: public URLs on Agentuity's domains are not "
			    "available; use sandlot's preview proxy (/v1/sandboxes/{id}/ports)");
			goto fail;
		}
		cJSON_AddBoolToObject(cJSON_AddObjectToObject(out, "network"), "enabled", on);
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(in, "timeout");
	if (t && !cJSON_IsNull(t)) {
		static const char *const tf[] = {"idle", "execution", "paused", NULL};
		if (api_json_fields(t, "timeout.", tf, err) < 0)
			goto fail;
		cJSON *tt = cJSON_AddObjectToObject(out, "timeout");
		for (int i = 0; i < 2; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, tf[i]);
			if (v && !cJSON_IsNull(v))
				cJSON_AddItemToObject(tt, tf[i], cJSON_Duplicate(v, 1));
		}
		/* "paused" (how long a suspended sandbox is kept) has no counterpart: a
		 * paused sandlot sandbox is kept until destroyed. */
	}
	if (oneshot) {
		/* The command's end terminates it; the idle timer then reclaims it. */
		cJSON *tt = cJSON_GetObjectItemCaseSensitive(out, "timeout");
		if (!tt)
			tt = cJSON_AddObjectToObject(out, "timeout");
		cJSON_DeleteItemFromObjectCaseSensitive(tt, "idle");
		cJSON_AddNumberToObject(tt, "idle", ONESHOT_GRACE_MS);
		cJSON_AddBoolToObject(out, "ephemeral", true);
	}
	cJSON *pk = cJSON_CreateArray();
	pk = package_list(cJSON_GetObjectItemCaseSensitive(in, "dependencies"), "dependencies",
			  "apt", pk, err);
	if (pk)
		pk = package_list(cJSON_GetObjectItemCaseSensitive(in, "packages"), "packages",
				  "npm", pk, err);
	if (!pk)
		goto fail;
	if (cJSON_GetArraySize(pk))
		cJSON_AddItemToObject(out, "packages", pk);
	else
		cJSON_Delete(pk);
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

/* The start command {exec, mode, files}: argv into *ARGV, *ONESHOT. */
static int parse_command(const cJSON *in, char ***argv, const cJSON **files, bool *oneshot,
			 sl_err *err)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(in, "command");
	*argv = NULL;
	*files = NULL;
	*oneshot = false;
	if (!c || cJSON_IsNull(c))
		return 0;
	static const char *const f[] = {"exec", "mode", "files", NULL};
	const char *mode = NULL, *shell = NULL;
	if (!cJSON_IsObject(c))
		return sl_fail(err, SL_INVALID, 0, "command: expected {exec, mode?, files?}");
	if (api_json_fields(c, "command.", f, err) < 0 ||
	    api_json_string(c, "command.", "mode", &mode, err) < 0 ||
	    api_json_command(c, "command.", "exec", argv, &shell, err) < 0)
		return -1;
	if (!*argv || shell) {
		api_strv_free(*argv);
		*argv = NULL;
		return sl_fail(err, SL_INVALID, 0, "command.exec: expected an array of strings");
	}
	if (mode && strcmp(mode, "oneshot") && strcmp(mode, "interactive")) {
		api_strv_free(*argv);
		*argv = NULL;
		return sl_fail(err, SL_INVALID, 0,
			       "command.mode: expected \"oneshot\" or \"interactive\"");
	}
	*oneshot = mode && !strcmp(mode, "oneshot");
	*files = cJSON_GetObjectItemCaseSensitive(c, "files");
	return 0;
}

static int write_files(api_req *r, const sl_sandbox *sb, const cJSON *files, sl_err *err)
{
	int n;
	if (!files || cJSON_IsNull(files))
		return 0;
	return api_files_write_batch(r->srv, sb, files, &n, err);
}

static enum MHD_Result create_from(api_req *r, const cJSON *in)
{
	sl_err err = {0};
	char **argv = NULL;
	const cJSON *cmd_files;
	bool oneshot;
	cJSON *body = NULL;
	if (parse_command(in, &argv, &cmd_files, &oneshot, &err) == 0)
		body = ag_v1_body(in, oneshot, &err);
	if (!body) {
		api_strv_free(argv);
		return ag_reply_error(r, &err, "SNAPSHOT_NOT_FOUND");
	}
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(in, "stream");
	const cJSON *stdin_id = cJSON_GetObjectItemCaseSensitive(stream, "stdin");
	if (cJSON_IsString(stdin_id) && strcmp(stdin_id->valuestring, "ignore")) {
		api_strv_free(argv);
		cJSON_Delete(body);
		return ag_fail(r, SL_NOTIMPL,
			       "stream.stdin: stdin from Agentuity's stream service is not "
			       "available");
	}
	sl_sandbox sb;
	int made = api_sandbox_create_from(r->srv, body, false, false, &sb, &err);
	cJSON_Delete(body);
	if (made < 0) {
		api_strv_free(argv);
		return ag_reply_error(r, &err, "SNAPSHOT_NOT_FOUND");
	}
	sl_exec e = {0};
	int rc = write_files(r, &sb, cJSON_GetObjectItemCaseSensitive(in, "files"), &err);
	if (rc == 0 && argv)
		rc = ag_exec_start(r, &sb, argv, NULL, cmd_files, sb.exec_timeout_ms, &e, &err);
	api_strv_free(argv);
	if (rc < 0) {
		sl_err e2 = {0};
		api_destroy(r->srv, sb.id, "create failed", &e2);
		sandbox_free(&sb);
		return ag_reply_error(r, &err, NULL);
	}
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "sandboxId", sb.id);
	if (e.id[0]) {
		cJSON_AddStringToObject(d, "status", "running");
		cJSON_AddStringToObject(d, "executionId", e.id);
		ag_stream_fields(r, d, sb.id, e.id, "stdout", true);
		ag_stream_fields(r, d, sb.id, e.id, "stderr", true);
		exec_free(&e);
	} else {
		cJSON_AddStringToObject(d, "status", "idle");
	}
	sandbox_free(&sb);
	return ag_reply_data(r, 201, d);
}

static enum MHD_Result sandbox_create_route(api_req *r)
{
	const cJSON *in;
	sl_err err = {0};
	if (api_body_object(r, true, &in, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	cJSON *empty = in ? NULL : cJSON_CreateObject();
	enum MHD_Result ret = create_from(r, in ? in : empty);
	cJSON_Delete(empty);
	return ret;
}

/* ---- get, status (both may wait for a status), list, destroy ---- */

static bool in_list(const char *list, const char *status)
{
	size_t n = strlen(status);
	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && !strncmp(p, status, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* The sandbox, waited for (?waitForStatus=a,b&waitMs=) until its status is listed. A
 * destroyed one is 404 unless INCLUDE_DELETED. */
static int sandbox_waited(api_req *r, bool include_deleted, sl_sandbox *sb, ag_state *st,
			  sl_err *err)
{
	const char *want = api_query(r, "waitForStatus");
	const char *wms = api_query(r, "waitMs");
	int64_t wait = 0;
	if (want && *want) {
		char *end;
		wait = wms ? strtoll(wms, &end, 10) : 30000;
		if (wms && (*end || wait < 0))
			return sl_fail(err, SL_INVALID, 0, "?waitMs=%s: expected milliseconds",
				       wms);
		if (wait > WAIT_MAX_MS)
			wait = WAIT_MAX_MS;
	}
	int64_t deadline = sl_mono_ms() + wait;
	for (;;) {
		api_touch(r->srv, r->param[0]);
		if (sandbox_get(r->srv->ctx, r->param[0], sb, err) < 0) {
			if (err->kind == SL_INVALID)
				err->kind = SL_NOTFOUND;
			return -1;
		}
		if (sb->status == SL_ST_TERMINATED && !include_deleted &&
		    !strcmp(sb->reason, "deleted")) {
			sl_fail(err, SL_NOTFOUND, 0, "sandbox %s was destroyed", sb->id);
			sandbox_free(sb);
			return -1;
		}
		sandbox_state(r, sb, st);
		if (!want || !*want || in_list(want, st->status) || sl_mono_ms() >= deadline ||
		    atomic_load(&r->srv->stopping) || api_client_gone(r))
			return 0;
		sandbox_free(sb);
		struct timespec ts = {0, 100 * 1000000};
		nanosleep(&ts, NULL);
	}
}

static enum MHD_Result sandbox_get_route(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	ag_state st;
	bool incl = false;
	if (api_query_bool(r, "includeDeleted", false, &incl, &err) < 0 ||
	    sandbox_waited(r, incl, &sb, &st, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	cJSON *o = sandbox_info(r, &sb);
	sandbox_free(&sb);
	return ag_reply_data(r, 200, o);
}

static enum MHD_Result sandbox_status(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	ag_state st;
	if (sandbox_waited(r, true, &sb, &st, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "sandboxId", sb.id);
	cJSON_AddStringToObject(d, "status", st.status);
	if (st.has_exit)
		cJSON_AddNumberToObject(d, "exitCode", st.exit_code);
	sandbox_free(&sb);
	return ag_reply_data(r, 200, d);
}

static int by_created(const void *a, const void *b)
{
	const sl_sandbox *x = a, *y = b;
	return (x->created_ms > y->created_ms) - (x->created_ms < y->created_ms);
}

static enum MHD_Result sandbox_list_route(api_req *r)
{
	sl_err err = {0};
	const char *name = api_query(r, "name"), *mode = api_query(r, "mode");
	const char *status = api_query(r, "status"), *snap = api_query(r, "snapshotId");
	const char *dir = api_query(r, "direction"), *lim = api_query(r, "limit");
	const char *off = api_query(r, "offset");
	bool live = false, deleted_only = false;
	if (api_query_bool(r, "live", false, &live, &err) < 0 ||
	    api_query_bool(r, "deletedOnly", false, &deleted_only, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	long limit = lim ? strtol(lim, NULL, 10) : 100, offset = off ? strtol(off, NULL, 10) : 0;
	if (limit <= 0)
		limit = 100;
	if (offset < 0)
		offset = 0;
	sl_sandbox *list;
	size_t n;
	/* Destroyed ones only when asked for (deletedOnly, or by their status). */
	bool want_gone = deleted_only ||
			 (status && (in_list(status, "terminated") || in_list(status, "deleted")));
	if ((want_gone ? sandbox_list : sandbox_list_live)(r->srv->ctx, &list, &n, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	qsort(list, n, sizeof(*list), by_created);
	bool asc = dir && !strcmp(dir, "asc");
	cJSON *d = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(d, "sandboxes");
	long total = 0;
	for (size_t k = 0; k < n; k++) {
		sl_sandbox *sb = &list[asc ? k : n - 1 - k];
		bool gone = sb->status == SL_ST_TERMINATED;
		if ((gone && !want_gone) || (deleted_only && !gone))
			continue;
		if ((name && strcmp(name, sb->name)) ||
		    (mode && strcmp(mode, is_oneshot(sb) ? "oneshot" : "interactive")) ||
		    (snap && strcmp(snap, sb->snapshot)))
			continue;
		if (status || live) {
			ag_state st;
			sandbox_state(r, sb, &st);
			if ((status && !in_list(status, st.status)) ||
			    (live &&
			     (!strcmp(st.status, "terminated") || !strcmp(st.status, "failed"))))
				continue;
		}
		if (total >= offset && total - offset < limit)
			cJSON_AddItemToArray(arr, sandbox_info(r, sb));
		total++;
	}
	sandbox_free_list(list, n);
	cJSON_AddNumberToObject(d, "total", (double)total);
	return ag_reply_data(r, 200, d);
}

static enum MHD_Result sandbox_destroy_route(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	if (sandbox_get(r->srv->ctx, r->param[0], &sb, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	}
	bool gone = sb.status == SL_ST_TERMINATED;
	sandbox_free(&sb);
	if (gone)
		return ag_fail(r, SL_NOTFOUND, "sandbox %s was already destroyed", r->param[0]);
	if (api_destroy(r->srv, r->param[0], "deleted", &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	return ag_reply_ok(r, NULL);
}

/* ---- pause, resume ---- */

static enum MHD_Result sandbox_pause_route(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	api_touch(r->srv, r->param[0]);
	if (sandbox_pause(r->srv->ctx, r->param[0], &sb, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	}
	cJSON *top = cJSON_CreateObject();
	cJSON_AddStringToObject(top, "sandboxId", sb.id);
	cJSON_AddStringToObject(top, "status", "suspended");
	sandbox_free(&sb);
	return ag_reply_ok(r, top);
}

static enum MHD_Result sandbox_resume_route(api_req *r)
{
	sl_err err = {0};
	sl_sandbox sb;
	if (sandbox_get(r->srv->ctx, r->param[0], &sb, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	}
	bool suspended = sb.status == SL_ST_PAUSED || sb.status == SL_ST_HIBERNATED ||
			 sb.status == SL_ST_STOPPED;
	sandbox_free(&sb);
	if (!suspended)
		return ag_fail(r, SL_CONFLICT, "sandbox %s is not suspended", r->param[0]);
	if (ag_sandbox_for_call(r, &sb, NULL, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	sandbox_free(&sb);
	return ag_reply_ok(r, NULL);
}

/* ---- snapshots ---- */

static cJSON *snapshot_info(const sl_snapshot *s)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "snapshotId", s->id);
	cJSON_AddStringToObject(o, "name", s->name[0] ? s->name : s->id);
	/* sandlot does not count a snapshot's files or bytes. */
	cJSON_AddNumberToObject(o, "sizeBytes", 0);
	cJSON_AddNumberToObject(o, "fileCount", 0);
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	cJSON_AddStringToObject(o, "sourceSandboxId", s->sandbox_id);
	cJSON_AddBoolToObject(o, "public", false);
	return o;
}

static enum MHD_Result snapshot_create_route(api_req *r)
{
	static const char *const fields[] = {"name", "description", "tag", "public", NULL};
	const cJSON *body;
	const char *name = NULL, *tag = NULL;
	bool pub = false;
	sl_err err = {0};
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_fields(body, "", fields, &err) < 0 ||
		      api_json_string(body, "", "name", &name, &err) < 0 ||
		      api_json_string(body, "", "tag", &tag, &err) < 0 ||
		      api_json_bool(body, "", "public", &pub, &err) < 0)))
		return ag_reply_error(r, &err, NULL);
	if (pub)
		return ag_fail(r, SL_NOTIMPL,
			       "public: public snapshots are an Agentuity cloud "
			       "feature");
	char full[160];
	if (name && tag)
		snprintf(full, sizeof(full), "%s:%s", name, tag);
	api_touch(r->srv, r->param[0]);
	sl_snapshot s;
	if (snapshot_create(r->srv->ctx, r->param[0], name && tag ? full : name, &s, &err) < 0)
		return ag_reply_error(r, &err, "SANDBOX_NOT_FOUND");
	return ag_reply_data(r, 201, snapshot_info(&s));
}

static enum MHD_Result snapshot_get_route(api_req *r)
{
	sl_snapshot s;
	sl_err err = {0};
	if (snapshot_get(r->srv->ctx, r->param[0], &s, &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SNAPSHOT_NOT_FOUND");
	}
	return ag_reply_data(r, 200, snapshot_info(&s));
}

static enum MHD_Result snapshot_list_route(api_req *r)
{
	sl_snapshot *list;
	size_t n;
	sl_err err = {0};
	const char *sid = api_query(r, "sandboxId");
	if (snapshot_list(r->srv->ctx, &list, &n, &err) < 0)
		return ag_reply_error(r, &err, NULL);
	cJSON *d = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(d, "snapshots");
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (sid && strcmp(sid, list[i].sandbox_id))
			continue;
		cJSON_AddItemToArray(arr, snapshot_info(&list[i]));
		total++;
	}
	free(list);
	cJSON_AddNumberToObject(d, "total", (double)total);
	return ag_reply_data(r, 200, d);
}

static enum MHD_Result snapshot_delete_route(api_req *r)
{
	sl_err err = {0};
	if (snapshot_delete(r->srv->ctx, r->param[0], &err) < 0) {
		if (err.kind == SL_INVALID)
			err.kind = SL_NOTFOUND;
		return ag_reply_error(r, &err, "SNAPSHOT_NOT_FOUND");
	}
	return ag_reply_ok(r, NULL);
}

/* ---- the table ---- */

#define P AG_PREFIX
#define NOTIMPL(m, path)                                                                           \
	{                                                                                          \
		m, P path, API_BODY_NONE, not_implemented, NULL, NULL, 0                           \
	}
/* clang-format off */
static const api_route routes[] = {
	{ "POST",   P "/sandbox", API_BODY_JSON, sandbox_create_route, NULL, NULL, 0 },
	{ "GET",    P "/sandbox", API_BODY_NONE, sandbox_list_route, NULL, NULL, 0 },
	{ "GET",    P "/sandbox/snapshots", API_BODY_NONE, snapshot_list_route, NULL, NULL, 0 },
	NOTIMPL("GET", "/sandbox/snapshots/lineage"),
	NOTIMPL("GET", "/sandbox/snapshots/public"),
	NOTIMPL("GET", "/sandbox/snapshots/public/{ref}"),
	NOTIMPL("POST", "/sandbox/snapshots/build"),
	NOTIMPL("PUT", "/sandbox/snapshots/{sid}/upload"),
	NOTIMPL("POST", "/sandbox/snapshots/{sid}/finalize"),
	NOTIMPL("PATCH", "/sandbox/snapshots/{sid}"),
	{ "GET",    P "/sandbox/snapshots/{sid}", API_BODY_NONE, snapshot_get_route, NULL, NULL, 0 },
	{ "DELETE", P "/sandbox/snapshots/{sid}", API_BODY_NONE, snapshot_delete_route, NULL, NULL, 0 },
	NOTIMPL("GET", "/sandbox/runtimes"),
	{ "GET",    P "/sandbox/status/{id}", API_BODY_NONE, sandbox_status, NULL, NULL, 0 },
	{ "GET",    P "/sandbox/execution/{eid}", API_BODY_NONE, ag_execution_get, NULL, NULL, 0 },
	{ "GET",    P "/sandbox/sandboxes/{id}/executions", API_BODY_NONE, ag_execution_list, NULL, NULL, 0 },
	NOTIMPL("GET", "/sandbox/sandboxes/{id}/jobs"),
	NOTIMPL("POST", "/sandbox/sandboxes/{id}/jobs"),
	NOTIMPL("GET", "/sandbox/sandboxes/{id}/jobs/{job}"),
	NOTIMPL("DELETE", "/sandbox/sandboxes/{id}/jobs/{job}"),
	NOTIMPL("GET", "/sandbox/sandboxes/{id}/events"),
	NOTIMPL("PATCH", "/sandbox/env/{id}"),
	NOTIMPL("GET", "/sandbox/checkpoints/{id}"),
	NOTIMPL("POST", "/sandbox/{id}/checkpoint"),
	NOTIMPL("POST", "/sandbox/{id}/checkpoint/{ckpt}/restore"),
	NOTIMPL("DELETE", "/sandbox/{id}/checkpoint/{ckpt}"),
	{ "GET",    P "/sandbox/{id}", API_BODY_NONE, sandbox_get_route, NULL, NULL, 0 },
	{ "DELETE", P "/sandbox/{id}", API_BODY_NONE, sandbox_destroy_route, NULL, NULL, 0 },
	{ "POST",   P "/sandbox/{id}/execute", API_BODY_JSON, ag_execute, NULL, NULL, 0 },
	{ "POST",   P "/sandbox/{id}/pause", API_BODY_NONE, sandbox_pause_route, NULL, NULL, 0 },
	{ "POST",   P "/sandbox/{id}/resume", API_BODY_NONE, sandbox_resume_route, NULL, NULL, 0 },
	{ "POST",   P "/sandbox/{id}/snapshot", API_BODY_JSON, snapshot_create_route, NULL, NULL, 0 },
	{ "GET",    P "/fs/list/{id}", API_BODY_NONE, ag_fs_list, NULL, NULL, 0 },
	{ "POST",   P "/fs/mkdir/{id}", API_BODY_JSON, ag_fs_mkdir, NULL, NULL, 0 },
	{ "POST",   P "/fs/rm/{id}", API_BODY_JSON, ag_fs_rm, NULL, NULL, 0 },
	{ "POST",   P "/fs/rmdir/{id}", API_BODY_JSON, ag_fs_rmdir, NULL, NULL, 0 },
	{ "GET",    P "/fs/download/{id}", API_BODY_NONE, ag_fs_download, NULL, NULL, 0 },
	{ "POST",   P "/fs/upload/{id}", API_BODY_RAW, ag_fs_upload, ag_fs_upload_begin,
		    ag_fs_upload_chunk, 0 },
	{ "GET",    P "/fs/{id}", API_BODY_NONE, ag_fs_read, NULL, NULL, 0 },
	{ "POST",   P "/fs/{id}", API_BODY_JSON, ag_fs_write, NULL, NULL, 0 },
	/* Capability URLs: the token in the stream id is the authorisation. */
	{ "GET",    P "/stream/{stream}", API_BODY_NONE, ag_stream, NULL, NULL, API_ROUTE_OWN_AUTH },
	NOTIMPL("GET", "/cli/sandbox"),
	NOTIMPL("GET", "/cli/sandbox/{id}"),
};
/* clang-format on */

static bool claims(api_req *r)
{
	size_t n = strlen(AG_PREFIX);
	return !strncmp(r->url, AG_PREFIX, n) && (r->url[n] == '/' || !r->url[n]);
}

static enum MHD_Result no_route(api_req *r, bool path_known, const char *allow)
{
	char msg[512];
	if (path_known) {
		snprintf(msg, sizeof(msg), "%s answers %s, not %s", r->url, allow, r->method);
		return ag_reply_failure(r, 405, "METHOD_NOT_ALLOWED", msg);
	}
	snprintf(msg, sizeof(msg), "no Agentuity route %s %s", r->method, r->url);
	return ag_reply_failure(r, 404, "NOT_FOUND", msg);
}

static enum MHD_Result unauthorized(api_req *r)
{
	return ag_reply_failure(r, 401, "UNAUTHORIZED",
				"this listener needs the API key: set AGENTUITY_SDK_KEY to the "
				"output of `sandlot key`");
}

const api_facade api_facade_agentuity = {
    .name = "agentuity",
    .claims = claims,
    .routes = routes,
    .nroutes = sizeof(routes) / sizeof(routes[0]),
    .no_route = no_route,
    .unauthorized = unauthorized,
};

/* executions.c — commands in a sandbox over HTTP: start (with ?wait= long-polls and
 * output inline), list, get, stdin, signals, processes, and the one-shot /v1/run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "processes.h"
#include "http.h"
#include "view.h"

#define OUTPUT_CAP    (1u << 20) /* bytes of each stream returned inline */
#define WAIT_MAX_MS   (5 * 60 * 1000)
#define WAIT_SLICE_MS 250

int api_exec_wait(api_req *r, const char *sandbox_id, const char *exec_id, int64_t wait_ms,
		  sl_exec *out, sl_err *err)
{
	int64_t deadline = wait_ms < 0 ? INT64_MAX : sl_mono_ms() + wait_ms;
	for (;;) {
		int64_t left = deadline - sl_mono_ms();
		int slice = left < 0 ? 0 : left > WAIT_SLICE_MS ? WAIT_SLICE_MS : (int)left;
		if (exec_wait(r->srv->ctx, sandbox_id, exec_id, slice, out, err) < 0)
			return -1;
		if (out->status != SL_EXEC_RUNNING)
			return 0;
		if (sl_mono_ms() >= deadline || atomic_load(&r->srv->stopping) ||
		    api_client_gone(r))
			return 1;
		exec_free(out);
	}
}

int api_exec_run(api_req *r, const sl_sandbox *sb, sl_exec_spec *spec, sl_exec *out,
		 sl_err *err)
{
	spec->wait_ms = WAIT_SLICE_MS;
	if (exec_start(r->srv->ctx, sb, spec, out, err) < 0)
		return -1;
	atomic_fetch_add(&r->srv->executions_started, 1);
	if (out->master >= 0)
		close(steal_fd(&out->master));
	if (out->status != SL_EXEC_RUNNING)
		return 0;
	char sid[32], eid[32];
	snprintf(sid, sizeof(sid), "%s", sb->id);
	snprintf(eid, sizeof(eid), "%s", out->id);
	exec_free(out);
	return api_exec_wait(r, sid, eid, -1, out, err);
}

int api_exec_read_output(api_server *s, const char *sandbox_id, const char *exec_id,
			 const char *stream, size_t cap, char **out, bool *truncated, sl_err *err)
{
	_cleanup_close_ int fd = -1;
	if (exec_open_log(s->ctx, sandbox_id, exec_id, stream, &fd, err) < 0)
		return -1;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", stream);
	size_t len = 0;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(err, "read the %s of %s", stream, exec_id);
		if (n == 0)
			break;
		len += n;
	}
	char extra;
	*truncated = len == cap && read(fd, &extra, 1) == 1;
	*out = api_utf8_string(buf, len);
	if (!*out)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "read %s", stream);
	return 0;
}

/* The Execution shape; with OUTPUT and a finished command, stdout/stderr inline. */
cJSON *api_exec_json(api_server *s, const sl_exec *e, bool output)
{
	cJSON *o = view_exec_json(e);
	if (!o || !output || e->status == SL_EXEC_RUNNING)
		return o;
	static const char *const streams[] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		char *text = NULL, key[32];
		bool trunc = false;
		sl_err err = {0};
		if (e->log_empty[i])
			text = strdup("");
		else if (api_exec_read_output(s, e->sandbox_id, e->id, streams[i], OUTPUT_CAP,
					      &text, &trunc, &err) < 0)
			text = strdup("");
		cJSON_AddStringToObject(o, streams[i], text ? text : "");
		snprintf(key, sizeof(key), "%sTruncated", streams[i]);
		cJSON_AddBoolToObject(o, key, trunc);
		free(text);
	}
	return o;
}

/* ?wait= as milliseconds (capped), or -1 when absent. */
static int wait_param(api_req *r, int64_t *wait_ms, sl_err *err)
{
	uint64_t ms;
	bool given;
	if (api_query_duration(r, "wait", &ms, &given, err) < 0)
		return -1;
	*wait_ms = !given ? -1 : ms > WAIT_MAX_MS ? WAIT_MAX_MS : (int64_t)ms;
	return 0;
}

/* ---- start ---- */

void api_exec_body_free(api_exec_body *b)
{
	api_strv_free(b->argv);
	api_strv_free(b->env);
}

int api_exec_body_parse(const cJSON *body, const sl_sandbox *sb, api_exec_body *b, sl_err *err)
{
	static const char *const fields[] = {"command", "env",	 "cwd", "user",
					     "timeout", "stdin", "pty", NULL};
	memset(b, 0, sizeof(*b));
	bool given;
	if (api_json_fields(body, "", fields, err) < 0 ||
	    api_json_command(body, "", "command", &b->argv, &b->shell, err) < 0 ||
	    api_json_kv(body, "", "env", &b->env, err) < 0 ||
	    api_json_string(body, "", "cwd", &b->spec.cwd, err) < 0 ||
	    api_json_string(body, "", "user", &b->spec.user, err) < 0 ||
	    api_json_duration(body, "", "timeout", &b->spec.timeout_ms, &given, err) < 0 ||
	    api_json_bool(body, "", "stdin", &b->spec.stdin_pipe, err) < 0)
		return -1;
	if (!given)
		b->spec.timeout_ms = sb->exec_timeout_ms; /* the sandbox's default */
	const cJSON *pty = cJSON_GetObjectItemCaseSensitive(body, "pty");
	if (pty && !cJSON_IsNull(pty) && !cJSON_IsFalse(pty)) {
		b->spec.tty = true;
		b->spec.cols = 80;
		b->spec.rows = 24;
		if (!cJSON_IsTrue(pty)) {
			static const char *const pf[] = {"cols", "rows", NULL};
			uint64_t v;
			if (api_json_fields(pty, "pty.", pf, err) < 0 ||
			    api_json_uint(pty, "pty.", "cols", 1, 1000, &v, &given, err) < 0)
				return -1;
			if (given)
				b->spec.cols = v;
			if (api_json_uint(pty, "pty.", "rows", 1, 1000, &v, &given, err) < 0)
				return -1;
			if (given)
				b->spec.rows = v;
		}
	}
	b->spec.argv = b->argv;
	b->spec.shell = b->shell;
	b->spec.env = (const char *const *)b->env;
	return 0;
}

enum MHD_Result api_exec_create(api_req *r)
{
	const cJSON *body;
	sl_err err = {0};
	int64_t wait_ms;
	if (api_body_object(r, false, &body, &err) < 0 || wait_param(r, &wait_ms, &err) < 0)
		return api_reply_error(r, &err);
	sl_sandbox sb;
	if (api_sandbox_for_exec(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	api_exec_body b;
	sl_exec e;
	int rc = api_exec_body_parse(body, &sb, &b, &err);
	/* A first slice of the wait inside exec_start (on init's own connection). */
	b.spec.wait_ms = wait_ms < 0 ? 0 : wait_ms < WAIT_SLICE_MS ? (int)wait_ms : WAIT_SLICE_MS;
	if (rc == 0)
		rc = exec_start(r->srv->ctx, &sb, &b.spec, &e, &err);
	api_exec_body_free(&b);
	sandbox_free(&sb);
	if (rc < 0)
		return api_reply_error(r, &err);
	atomic_fetch_add(&r->srv->executions_started, 1);
	if (e.master >= 0) {
		api_pty_add(r->srv, e.sandbox_id, e.id, e.master);
		e.master = -1;
	}
	if (wait_ms >= 0 && e.status == SL_EXEC_RUNNING) {
		char sid[32], eid[32];
		snprintf(sid, sizeof(sid), "%s", e.sandbox_id);
		snprintf(eid, sizeof(eid), "%s", e.id);
		exec_free(&e);
		if (api_exec_wait(r, sid, eid, wait_ms, &e, &err) < 0)
			return api_reply_error(r, &err);
	}
	cJSON *o = api_exec_json(r->srv, &e, wait_ms >= 0);
	exec_free(&e);
	return api_reply_json(r, 201, o);
}

/* ---- list, get ---- */

enum MHD_Result api_exec_list(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	sl_exec *list;
	size_t n;
	int rc = exec_list(r->srv->ctx, sb.id, &list, &n, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "executions");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, api_exec_json(r->srv, &list[i], false));
	exec_free_list(list, n);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_exec_get(api_req *r)
{
	sl_err err = {0};
	int64_t wait_ms;
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (wait_param(r, &wait_ms, &err) < 0 || api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	sl_exec e;
	int rc = wait_ms >= 0 ? api_exec_wait(r, sb.id, r->param[1], wait_ms, &e, &err)
			      : exec_get(r->srv->ctx, sb.id, r->param[1], &e, &err);
	if (rc < 0)
		return api_reply_error(r, &err);
	cJSON *o = api_exec_json(r->srv, &e, wait_ms >= 0);
	exec_free(&e);
	return api_reply_json(r, 200, o);
}

/* ---- signal, stdin ---- */

enum MHD_Result api_exec_signal(api_req *r)
{
	static const char *const fields[] = {"signal", NULL};
	const cJSON *body;
	const char *name = NULL;
	int sig = SIGTERM;
	sl_err err = {0};
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_fields(body, "", fields, &err) < 0 ||
		      api_json_string(body, "", "signal", &name, &err) < 0)) ||
	    (name && api_signal_parse("signal", name, &sig, &err) < 0))
		return api_reply_error(r, &err);
	sl_sandbox sb;
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	int rc = exec_signal(r->srv->ctx, sb.id, r->param[1], sig, &err);
	sandbox_free(&sb);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}

typedef struct stdin_upload {
	char sandbox_id[32];
} stdin_upload;

static void stdin_upload_free(api_req *r)
{
	free(r->upload);
	r->upload = NULL;
}

int api_exec_stdin_begin(api_req *r, sl_err *err)
{
	sl_sandbox sb;
	if (api_sandbox_for_call(r, &sb, err) < 0)
		return -1;
	stdin_upload *u = calloc(1, sizeof(*u));
	if (!u) {
		sandbox_free(&sb);
		return sl_fail(err, SL_INTERNAL, ENOMEM, "stdin");
	}
	snprintf(u->sandbox_id, sizeof(u->sandbox_id), "%s", sb.id);
	sandbox_free(&sb);
	r->upload = u;
	r->upload_free = stdin_upload_free;
	sl_exec e;
	if (exec_get(r->srv->ctx, u->sandbox_id, r->param[1], &e, err) < 0)
		return -1;
	exec_free(&e);
	return 0;
}

int api_exec_stdin_chunk(api_req *r, const char *data, size_t len, sl_err *err)
{
	stdin_upload *u = r->upload;
	return exec_write_stdin(r->srv->ctx, u->sandbox_id, r->param[1], data, len, err);
}

enum MHD_Result api_exec_stdin(api_req *r)
{
	stdin_upload *u = r->upload;
	bool eof;
	sl_err err = {0};
	if (api_query_bool(r, "eof", false, &eof, &err) < 0 ||
	    (eof && exec_close_stdin(r->srv->ctx, u->sandbox_id, r->param[1], &err) < 0))
		return api_reply_error(r, &err);
	return api_reply_empty(r, 204);
}

/* ---- processes ---- */

enum MHD_Result api_processes_list(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	sl_process *list;
	size_t n;
	int rc = sandbox_processes(r->srv->ctx, &sb, &list, &n, &err);
	sandbox_free(&sb);
	if (rc < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "processes");
	for (size_t i = 0; i < n; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "pid", list[i].pid);
		cJSON_AddNumberToObject(p, "pgid", list[i].pgid);
		_cleanup_free_ char *cmd =
		    api_utf8_string(list[i].cmdline, strlen(list[i].cmdline));
		cJSON_AddStringToObject(p, "cmd", cmd ? cmd : "");
		if (list[i].exec_id[0])
			cJSON_AddStringToObject(p, "executionId", list[i].exec_id);
		else
			cJSON_AddNullToObject(p, "executionId");
		cJSON_AddItemToArray(arr, p);
	}
	free(list);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_processes_kill(api_req *r)
{
	sl_err err = {0};
	int sig = SIGKILL;
	const char *s = api_query(r, "signal");
	char *end;
	long pid = strtol(r->param[1], &end, 10);
	if (*end || pid < 1 || pid > 4194304)
		return api_fail(r, SL_INVALID, "pid \"%s\" is not a process id", r->param[1]);
	if (s && api_signal_parse("?signal", s, &sig, &err) < 0)
		return api_reply_error(r, &err);
	sl_sandbox sb;
	if (api_sandbox_for_call(r, &sb, &err) < 0)
		return api_reply_error(r, &err);
	int rc = sandbox_kill_process(r->srv->ctx, &sb, (pid_t)pid, sig, &err);
	sandbox_free(&sb);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_empty(r, 204);
}

int api_image_command(api_server *s, const sl_sandbox *sb, char ***argv, sl_err *err)
{
	sl_image img;
	if (image_lookup(s->ctx->cfg.state_dir, sb->digest, &img, err) < 0 ||
	    image_command(s->ctx->cfg.state_dir, &img, argv, err) < 0)
		return -1;
	if (!*argv)
		return sl_fail(err, SL_INVALID, 0,
			       "command: required: image %s names no command (Entrypoint or Cmd)",
			       sb->image);
	return 0;
}

/* ---- /v1/run: create, write files, run, wait, destroy (always) ---- */

/* Exit status as a shell reports it (128+n for signal n), and 124 for a timeout. */
static int run_exit_code(const sl_exec *e)
{
	return e->status == SL_EXEC_TIMEOUT ? 124 : e->exit_code;
}

static int run_in(api_req *r, const sl_sandbox *sb, const cJSON *body, cJSON **out, sl_err *err)
{
	api_exec_body b = {0};
	bool given;
	_cleanup_free_ char **image_cmd = NULL;
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(body, "command");
	if ((cmd && !cJSON_IsNull(cmd)
		 ? api_json_command(body, "", "command", &b.argv, &b.shell, err)
		 : api_image_command(r->srv, sb, &image_cmd, err)) < 0 ||
	    api_json_duration(body, "", "timeout", &b.spec.timeout_ms, &given, err) < 0) {
		api_exec_body_free(&b);
		return -1;
	}
	b.spec.argv = image_cmd ? image_cmd : b.argv;
	b.spec.shell = b.shell;
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(body, "files");
	int nfiles;
	sl_exec e;
	int rc = files && !cJSON_IsNull(files)
		     ? api_files_write_batch(r->srv, sb, files, &nfiles, err)
		     : 0;
	if (rc == 0)
		rc = api_exec_run(r, sb, &b.spec, &e, err);
	api_exec_body_free(&b);
	if (rc < 0)
		return -1;
	char eid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	if (rc == 1) {
		exec_free(&e);
		return sl_fail(err, SL_INTERNAL, 0,
			       "the run was abandoned (client gone or daemon stopping)");
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "exitCode", run_exit_code(&e));
	cJSON_AddStringToObject(o, "status", exec_status_name(e.status));
	cJSON_AddNumberToObject(
	    o, "durationMs",
	    (double)(e.finished_ms > e.started_ms ? e.finished_ms - e.started_ms : 0));
	static const char *const streams[] = {"stdout", "stderr"};
	for (int i = 0; i < 2 && rc == 0; i++) {
		char *text = NULL, key[32];
		bool trunc;
		rc = api_exec_read_output(r->srv, sb->id, eid, streams[i], OUTPUT_CAP, &text,
					  &trunc, err);
		if (rc == 0) {
			cJSON_AddStringToObject(o, streams[i], text);
			snprintf(key, sizeof(key), "%sTruncated", streams[i]);
			cJSON_AddBoolToObject(o, key, trunc);
		}
		free(text);
	}
	exec_free(&e);
	if (rc < 0) {
		cJSON_Delete(o);
		return -1;
	}
	*out = o;
	return 0;
}

enum MHD_Result api_run(api_req *r)
{
	static const char *const fields[] = {"image", "command", "files", "resources",
					     "env",   "timeout", NULL};
	const cJSON *body;
	sl_err err = {0};
	char **argv = NULL;
	const char *shell;
	const cJSON *cmd;
	/* No command: the image's Entrypoint + Cmd (run_in), as `docker run IMAGE`. */
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_fields(body, "", fields, &err) < 0 ||
	    ((cmd = cJSON_GetObjectItemCaseSensitive(body, "command")) && !cJSON_IsNull(cmd) &&
	     api_json_command(body, "", "command", &argv, &shell, &err) < 0))
		return api_reply_error(r, &err);
	api_strv_free(argv);
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(body, "files");
	if (files && !cJSON_IsNull(files) && !cJSON_IsArray(files))
		return api_fail(r, SL_INVALID, "files: expected an array of {path, content}");
	sl_sandbox sb;
	if (api_sandbox_create_from(r->srv, body, true, true, &sb, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *out = NULL;
	int rc = run_in(r, &sb, body, &out, &err);
	sl_err e2 = {0};
	if (api_destroy(r->srv, sb.id, "run finished", &e2) < 0 && rc == 0) {
		err = e2;
		cJSON_Delete(out);
		rc = -1;
	}
	sandbox_free(&sb);
	return rc < 0 ? api_reply_error(r, &err) : api_reply_json(r, 200, out);
}

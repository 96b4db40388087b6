/* daytona_process.c — the toolbox's process calls: execute (a durable execution of a
 * shell line), code-run (executeCode), sessions, and the home and work dirs.
 *
 * A session is one durable execution of a shell whose stdin stays open (exec_start with
 * stdin_pipe), so cd, export and shell variables carry from command to command as in
 * Daytona. Each command's text is written to a file inside the sandbox,
 * /tmp/.sandlot-sessions/SESSION/CMDID/cmd, and one line goes to the shell's stdin:
 * check its syntax (a syntax error must not end the shell), source it in the shell
 * itself with output to .../out and .../err, then write the exit status to .../exit.
 * Status, logs and the log WebSocket read those files; the session's execution id is
 * kept in the sandbox's run dir (daytona-sessions/SESSION). Commands of one session
 * run one after the other, as in Daytona; an open session is a running command, so a
 * sandbox with one is never idle-stopped (delete the session to let it be). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "code.h"
#include "fsutil.h"
#include "rundir.h"
#include "sbxfs.h"
#include "state.h"
#include "daytona.h"

#define OUTPUT_CAP   (8u << 20)
#define SESSIONS_DIR "/tmp/.sandlot-sessions"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Concatenate two strings into a malloc'd one. */
static char *concat(const char *a, const char *b)
{
	char *s;
	return asprintf(&s, "%s%s", a ? a : "", b ? b : "") < 0 ? NULL : s;
}

/* ---- execute ---- */

/* timeout: whole seconds (Daytona's unit); 0 or absent: the sandbox's default. */
static int seconds(const cJSON *body, uint64_t *ms, sl_err *err)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout");
	*ms = 0;
	if (!t || cJSON_IsNull(t))
		return 0;
	if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble > 86400 * 30)
		return sl_fail(err, SL_INVALID, 0, "timeout: expected a number of seconds");
	*ms = (uint64_t)(t->valuedouble * 1000);
	return 0;
}

static enum MHD_Result reply_timeout(api_req *r, uint64_t ms)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "the command ran longer than %llu s and was killed",
		 (unsigned long long)(ms / 1000));
	return dt_reply_error(r, 408, msg, "PROCESS_EXECUTION_TIMEOUT", "DAYTONA_DAEMON");
}

enum MHD_Result dt_execute(api_req *r)
{
	const cJSON *body;
	const char *command = NULL, *cwd = NULL;
	char **env = NULL;
	uint64_t timeout;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "command", &command, &err) < 0 ||
	    api_json_string(body, "", "cwd", &cwd, &err) < 0 ||
	    api_json_kv(body, "", "envs", &env, &err) < 0 || seconds(body, &timeout, &err) < 0) {
		api_strv_free(env);
		return dt_error(r, &err, NULL);
	}
	if (!command || !*command) {
		api_strv_free(env);
		return dt_fail(r, SL_INVALID, NULL, "command: required (a shell command line)");
	}
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (dt_sandbox(r, &sb, &err) < 0) {
		api_strv_free(env);
		return dt_error(r, &err, NULL);
	}
	/* Daytona's result is stdout and stderr as one stream, in order. */
	_cleanup_free_ char *line = concat("exec 2>&1\n", command);
	_cleanup_free_ char *dir = cwd && *cwd ? api_sandbox_path(&sb, "cwd", cwd, &err) : NULL;
	char *argv[] = {"/bin/sh", "-c", line, NULL};
	sl_exec_spec spec = {.argv = argv,
			     .env = (const char *const *)env,
			     .cwd = dir,
			     .timeout_ms = timeout ? timeout : sb.exec_timeout_ms};
	sl_exec e;
	int rc = !line || (cwd && *cwd && !dir) ? -1 : api_exec_run(r, &sb, &spec, &e, &err);
	if (!line && !err.kind)
		sl_fail(&err, SL_INTERNAL, ENOMEM, "execute");
	api_strv_free(env);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	char eid[32];
	snprintf(eid, sizeof(eid), "%s", e.id);
	if (rc == 1) {
		exec_free(&e);
		return dt_fail(r, SL_INTERNAL, NULL, "the wait was abandoned");
	}
	sl_exec_status st = e.status;
	int code = e.exit_code;
	exec_free(&e);
	if (st == SL_EXEC_TIMEOUT)
		return reply_timeout(r, spec.timeout_ms);
	/* stderr holds only why a command could not start (the shell's own goes to stdout). */
	_cleanup_free_ char *out = NULL, *errout = NULL;
	bool trunc;
	if (api_exec_read_output(r->srv, sb.id, eid, "stdout", OUTPUT_CAP, &out, &trunc, &err) < 0 ||
	    api_exec_read_output(r->srv, sb.id, eid, "stderr", OUTPUT_CAP, &errout, &trunc, &err) < 0)
		return dt_error(r, &err, NULL);
	_cleanup_free_ char *result = concat(out, errout);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "exitCode", code);
	cJSON_AddStringToObject(o, "result", result ? result : "");
	return api_reply_json(r, 200, o);
}

/* ---- code-run ---- */

enum MHD_Result dt_code_run(api_req *r)
{
	const cJSON *body;
	const char *code = NULL, *lang = NULL;
	char **env = NULL;
	uint64_t timeout;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "code", &code, &err) < 0 ||
	    api_json_string(body, "", "language", &lang, &err) < 0 ||
	    api_json_kv(body, "", "envs", &env, &err) < 0 || seconds(body, &timeout, &err) < 0) {
		api_strv_free(env);
		return dt_error(r, &err, NULL);
	}
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(body, "argv");
	if (!code || (argv && cJSON_GetArraySize(argv) > 0)) {
		api_strv_free(env);
		return code ? dt_fail(r, SL_NOTIMPL, NULL,
				      "argv: arguments to the code are not available in sandlot")
			    : dt_fail(r, SL_INVALID, NULL, "code: required (the source text)");
	}
	sl_sandbox sb;
	if (dt_sandbox(r, &sb, &err) < 0) {
		api_strv_free(env);
		return dt_error(r, &err, NULL);
	}
	if (!timeout)
		timeout = sb.exec_timeout_ms;
	sl_code_result res;
	int rc = code_run(r->srv->ctx, &sb, lang ? lang : "python", code, strlen(code),
			  (const char *const *)env, timeout, &res, &err);
	if (rc == 0)
		api_code_runner_after(r, &sb, lang, env, &res);
	sandbox_free(&sb);
	api_strv_free(env);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	if (res.has_error && !strcmp(res.error_name, "TimeoutError")) {
		code_result_free(&res);
		return reply_timeout(r, timeout);
	}
	/* stdout, then stderr (the traceback of an uncaught error). */
	_cleanup_free_ char *result = concat(res.out, res.errout);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "exitCode", res.exit_code);
	cJSON_AddStringToObject(o, "result", result ? result : "");
	code_result_free(&res);
	return api_reply_json(r, 200, o);
}

/* ---- sessions: names, the registry in the run dir ---- */

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= 64 && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The sandbox's registry of sessions (a directory of the runtime's in its run dir, made
 * when MAKE), or one SESSION's file in it; "" when there is none to name. */
static int registry_path_of(api_req *r, const char *sandbox_id, const char *session,
			    bool make, char *buf, size_t len, sl_err *err)
{
	char dir[PATH_MAX];
	buf[0] = '\0';
	if (rundir_facade_dir(&r->srv->ctx->cfg, sandbox_id, "daytona-sessions", make, dir,
			      sizeof(dir), err) < 0)
		return -1;
	snprintf(buf, len, "%s%s%s", dir, session ? "/" : "", session ? session : "");
	return 0;
}

static void registry_path(api_req *r, const char *sandbox_id, const char *session, char *buf,
			  size_t len)
{
	sl_err e = {0};
	registry_path_of(r, sandbox_id, session, false, buf, len, &e);
}

/* The session's shell execution id; SL_NOTFOUND when there is no such session. */
static int session_exec(api_req *r, const char *sandbox_id, const char *session, char eid[32],
			sl_err *err)
{
	if (!name_ok(session))
		return sl_fail(err, SL_NOTFOUND, 0, "session %s not found", session);
	char p[PATH_MAX];
	registry_path(r, sandbox_id, session, p, sizeof(p));
	_cleanup_free_ char *s = NULL;
	size_t n;
	if (state_read_file(p, 64, &s, &n, err) < 0) {
		if (err->errnum == ENOENT || err->kind == SL_NOTFOUND)
			return sl_fail(err, SL_NOTFOUND, 0, "session %s not found", session);
		return -1;
	}
	snprintf(eid, 32, "%.*s", (int)strcspn(s, "\n"), s);
	return 0;
}

static bool exec_running(api_req *r, const char *sandbox_id, const char *eid)
{
	sl_exec e;
	sl_err err = {0};
	if (exec_get(r->srv->ctx, sandbox_id, eid, &e, &err) < 0)
		return false;
	bool running = e.status == SL_EXEC_RUNNING;
	exec_free(&e);
	return running;
}

/* The file NAME of a command (or of the session when CID is NULL), inside the sandbox. */
static void cmd_path(const char *session, const char *cid, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, SESSIONS_DIR "/%s%s%s%s%s", session, cid ? "/" : "", cid ? cid : "",
		 name ? "/" : "", name ? name : "");
}

/* Read a small file of the command; NULL when absent. */
static char *cmd_read(api_req *r, const sl_sandbox *sb, const char *session, const char *cid,
		      const char *name, size_t cap, size_t *len)
{
	char p[512];
	cmd_path(session, cid, name, p, sizeof(p));
	char *data = NULL;
	size_t n = 0;
	sl_err err = {0};
	if (sbxfs_read_file(r->srv->ctx, sb, p, cap, &data, &n, &err) < 0)
		return NULL;
	if (len)
		*len = n;
	return data;
}

/* The exit status, or -1 while the command runs (the file is written when it ends). */
static int cmd_exit(api_req *r, const sl_sandbox *sb, const char *session, const char *cid)
{
	_cleanup_free_ char *s = cmd_read(r, sb, session, cid, "exit", 64, NULL);
	char *end;
	if (!s || !*s)
		return -1;
	long v = strtol(s, &end, 10);
	return end == s || (*end && *end != '\n') ? -1 : (int)v;
}

enum MHD_Result dt_session_create(api_req *r)
{
	const cJSON *body;
	const char *name = NULL;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "sessionId", &name, &err) < 0)
		return dt_error(r, &err, NULL);
	if (!name_ok(name))
		return dt_fail(r, SL_INVALID, NULL,
			       "sessionId: 1 to 64 letters, digits, '.', '_' or '-', not starting "
			       "with '.'");
	sl_sandbox sb;
	if (dt_sandbox(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	char old[32], reg[PATH_MAX], dir[512];
	sl_err e2 = {0};
	if (session_exec(r, sb.id, name, old, &e2) == 0 && exec_running(r, sb.id, old)) {
		sandbox_free(&sb);
		return dt_fail(r, SL_CONFLICT, NULL, "session %s already exists", name);
	}
	cmd_path(name, NULL, NULL, dir, sizeof(dir));
	sbxfs_remove(r->srv->ctx, &sb, dir, true, &e2);
	/* bash where the image has it (what Daytona's sessions run), else sh. */
	char *argv[] = {"/bin/sh", "-c",
			"if command -v bash >/dev/null 2>&1; then exec bash --noprofile --norc -s; "
			"fi; exec sh -s",
			NULL};
	sl_exec_spec spec = {.argv = argv, .stdin_pipe = true};
	sl_exec e;
	static const char boot[] = "__sl_sh=${BASH:-/bin/sh}\n";
	int rc = sbxfs_mkdir(r->srv->ctx, &sb, dir, &err);
	if (rc == 0)
		rc = exec_start(r->srv->ctx, &sb, &spec, &e, &err);
	if (rc == 0) {
		atomic_fetch_add(&r->srv->executions_started, 1);
		rc = registry_path_of(r, sb.id, name, true, reg, sizeof(reg), &err);
		if (rc == 0)
			rc = state_write_atomic_nosync(reg, e.id, strlen(e.id), &err);
		if (rc == 0)
			rc = exec_write_stdin(r->srv->ctx, sb.id, e.id, boot, strlen(boot), &err);
		if (rc < 0)
			exec_signal(r->srv->ctx, sb.id, e.id, SIGKILL, &e2);
		exec_free(&e);
	}
	sandbox_free(&sb);
	return rc < 0 ? dt_error(r, &err, NULL) : api_reply_empty(r, 201);
}

/* {id, command, exitCode?} of one command. */
static cJSON *command_json(api_req *r, const sl_sandbox *sb, const char *session, const char *cid)
{
	size_t n = 0;
	_cleanup_free_ char *text = cmd_read(r, sb, session, cid, "cmd", 1 << 20, &n);
	_cleanup_free_ char *safe = api_utf8_string(text ? text : "", text ? n : 0);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", cid);
	cJSON_AddStringToObject(o, "command", safe ? safe : "");
	int code = cmd_exit(r, sb, session, cid);
	if (code >= 0)
		cJSON_AddNumberToObject(o, "exitCode", code);
	return o;
}

struct session_walk {
	api_req *r;
	const sl_sandbox *sb;
	const char *session;
	cJSON *cmds;
};

static int session_command(void *arg, const sl_fileinfo *fi, sl_err *err)
{
	struct session_walk *w = arg;
	if (!strcmp(fi->type, "dir") && name_ok(fi->name))
		cJSON_AddItemToArray(w->cmds, command_json(w->r, w->sb, w->session, fi->name));
	return 0;
}

/* {sessionId, commands: [...]}, commands oldest first (their ids sort by time). */
static cJSON *session_json(api_req *r, const sl_sandbox *sb, const char *session)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sessionId", session);
	cJSON *cmds = cJSON_AddArrayToObject(o, "commands");
	char dir[512];
	cmd_path(session, NULL, NULL, dir, sizeof(dir));
	struct session_walk w = {r, sb, session, cmds};
	sl_err err = {0};
	sbxfs_list(r->srv->ctx, sb, dir, session_command, &w, &err);
	return o;
}

/* The sandbox and the live session named by r->param[1] (SESSION_ENDED when its shell
 * has exited, NOT_FOUND when there is none). */
static enum MHD_Result session_target(api_req *r, sl_sandbox *sb, char eid[32], bool need_live)
{
	sl_err err = {0};
	if (dt_sandbox(r, sb, &err) < 0)
		return dt_error(r, &err, NULL);
	if (session_exec(r, sb->id, r->param[1], eid, &err) < 0) {
		sandbox_free(sb);
		return dt_error(r, &err, err.kind == SL_NOTFOUND ? "PROCESS_NOT_FOUND" : NULL);
	}
	if (need_live && !exec_running(r, sb->id, eid)) {
		sandbox_free(sb);
		return dt_reply_error(r, 410, "the session's shell has exited", "SESSION_ENDED",
				      "DAYTONA_DAEMON");
	}
	return MHD_YES;
}

enum MHD_Result dt_session_get(api_req *r)
{
	sl_sandbox sb;
	char eid[32];
	enum MHD_Result ret = session_target(r, &sb, eid, false);
	if (ret != MHD_YES || r->queued)
		return ret;
	cJSON *o = session_json(r, &sb, r->param[1]);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_session_list(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (dt_sandbox(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	char reg[PATH_MAX];
	registry_path(r, sb.id, NULL, reg, sizeof(reg));
	cJSON *arr = cJSON_CreateArray();
	_cleanup_closedir_ DIR *d = opendir(reg);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (name_ok(de->d_name))
			cJSON_AddItemToArray(arr, session_json(r, &sb, de->d_name));
	sandbox_free(&sb);
	return api_reply_json(r, 200, arr);
}

enum MHD_Result dt_session_delete(api_req *r)
{
	sl_sandbox sb;
	char eid[32], reg[PATH_MAX], dir[512];
	enum MHD_Result ret = session_target(r, &sb, eid, false);
	if (ret != MHD_YES || r->queued)
		return ret;
	sl_err err = {0};
	/* The shell's process group: the commands it started go with it. */
	exec_signal(r->srv->ctx, sb.id, eid, SIGKILL, &err);
	registry_path(r, sb.id, r->param[1], reg, sizeof(reg));
	unlink(reg);
	cmd_path(r->param[1], NULL, NULL, dir, sizeof(dir));
	sbxfs_remove(r->srv->ctx, &sb, dir, true, &err);
	sandbox_free(&sb);
	return api_reply_empty(r, 204);
}

/* ---- session commands ---- */

/* cmd-<ms since epoch, hex>-<random>: unique, and sorting by name sorts by time. */
static void new_cid(char *buf, size_t len)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char rnd[32];
	sl_new_id("", rnd, sizeof(rnd));
	snprintf(buf, len, "cmd-%012llx-%.8s",
		 (unsigned long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, rnd);
}

static int wait_command(api_req *r, const sl_sandbox *sb, const char *session, const char *cid,
			const char *eid, int *code, sl_err *err)
{
	int64_t next_check = sl_mono_ms() + 500;
	for (int i = 0;; i++) {
		*code = cmd_exit(r, sb, session, cid);
		if (*code >= 0)
			return 0;
		if (atomic_load(&r->srv->stopping) || api_client_gone(r))
			return sl_fail(err, SL_INTERNAL, 0, "abandoned");
		if (sl_mono_ms() >= next_check) {
			if (!exec_running(r, sb->id, eid)) {
				/* One last look: the command may have been the shell's last. */
				*code = cmd_exit(r, sb, session, cid);
				if (*code >= 0)
					return 0;
				return 1;
			}
			next_check = sl_mono_ms() + 500;
		}
		sleep_ms(i < 100 ? 5 : 50);
	}
}

/* stdout, stderr and both (stdout then stderr) of a command. */
static void command_logs(api_req *r, const sl_sandbox *sb, const char *session, const char *cid,
			 cJSON *o)
{
	size_t n[2] = {0, 0};
	_cleanup_free_ char *out = cmd_read(r, sb, session, cid, "out", OUTPUT_CAP, &n[0]);
	_cleanup_free_ char *err = cmd_read(r, sb, session, cid, "err", OUTPUT_CAP, &n[1]);
	_cleanup_free_ char *so = api_utf8_string(out ? out : "", n[0]);
	_cleanup_free_ char *se = api_utf8_string(err ? err : "", n[1]);
	_cleanup_free_ char *both = concat(so, se);
	cJSON_AddStringToObject(o, "output", both ? both : "");
	cJSON_AddStringToObject(o, "stdout", so ? so : "");
	cJSON_AddStringToObject(o, "stderr", se ? se : "");
}

enum MHD_Result dt_session_exec(api_req *r)
{
	const cJSON *body;
	const char *command = NULL;
	bool run_async = false, async2 = false;
	sl_err err = {0};
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "command", &command, &err) < 0 ||
	    api_json_bool(body, "", "runAsync", &run_async, &err) < 0 ||
	    api_json_bool(body, "", "async", &async2, &err) < 0)
		return dt_error(r, &err, NULL);
	if (!command || !*command)
		return dt_fail(r, SL_INVALID, NULL, "command: required (a shell command line)");
	sl_sandbox sb;
	char eid[32];
	enum MHD_Result ret = session_target(r, &sb, eid, true);
	if (ret != MHD_YES || r->queued)
		return ret;
	const char *session = r->param[1];
	char cid[48], p[512], d[512];
	new_cid(cid, sizeof(cid));
	cmd_path(session, cid, "cmd", p, sizeof(p));
	cmd_path(session, cid, NULL, d, sizeof(d));
	/* Every name is ours ([A-Za-z0-9._-]), so single quotes are enough. A syntax error
	 * is reported as status 2 rather than ending the shell; `>|` beats noclobber. */
	char line[2048];
	snprintf(line, sizeof(line),
		 "if \"$__sl_sh\" -n '%s/cmd' 2>|'%s/err'; then { . '%s/cmd'; } </dev/null "
		 ">|'%s/out' 2>|'%s/err'; else (exit 2); fi; echo $? >|'%s/exit'\n",
		 d, d, d, d, d, d);
	int rc = sbxfs_write_file(r->srv->ctx, &sb, p, command, strlen(command), 0644, &err);
	if (rc == 0)
		rc = exec_write_stdin(r->srv->ctx, sb.id, eid, line, strlen(line), &err);
	if (rc < 0) {
		sandbox_free(&sb);
		return dt_error(r, &err, NULL);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cmdId", cid);
	if (run_async || async2) {
		sandbox_free(&sb);
		return api_reply_json(r, 202, o);
	}
	int code;
	rc = wait_command(r, &sb, session, cid, eid, &code, &err);
	if (rc != 0) {
		sandbox_free(&sb);
		cJSON_Delete(o);
		return rc < 0
			   ? dt_error(r, &err, NULL)
			   : dt_reply_error(r, 410, "the session's shell exited during the command",
					    "SESSION_ENDED", "DAYTONA_DAEMON");
	}
	command_logs(r, &sb, session, cid, o);
	cJSON_AddNumberToObject(o, "exitCode", code);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

/* The command r->param[2] of the session: PROCESS_NOT_FOUND when unknown. */
static enum MHD_Result command_target(api_req *r, sl_sandbox *sb, char eid[32])
{
	enum MHD_Result ret = session_target(r, sb, eid, false);
	if (ret != MHD_YES || r->queued)
		return ret;
	char p[512];
	cmd_path(r->param[1], r->param[2], "cmd", p, sizeof(p));
	sl_fileinfo *fi = malloc(sizeof(*fi));
	sl_err err = {0};
	if (!name_ok(r->param[2]) || !fi || sbxfs_stat(r->srv->ctx, sb, p, fi, &err) < 0) {
		free(fi);
		sandbox_free(sb);
		return dt_fail(r, SL_NOTFOUND, "PROCESS_NOT_FOUND",
			       "command %s not found in session %s", r->param[2], r->param[1]);
	}
	free(fi);
	return MHD_YES;
}

enum MHD_Result dt_session_command(api_req *r)
{
	sl_sandbox sb;
	char eid[32];
	enum MHD_Result ret = command_target(r, &sb, eid);
	if (ret != MHD_YES || r->queued)
		return ret;
	cJSON *o = command_json(r, &sb, r->param[1], r->param[2]);
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_session_input(api_req *r)
{
	return dt_fail(r, SL_NOTIMPL, NULL,
		       "input to a session command is not available in sandlot (commands read "
		       "/dev/null)");
}

/* ---- the log WebSocket: stdout and stderr as they grow, each piece behind its 3-byte
 * marker (01 01 01 stdout, 02 02 02 stderr); closed once the command has ended. ---- */

typedef struct log_follow {
	api_server *srv;
	sl_sandbox sb;
	char session[72], cid[48], eid[32];
} log_follow;

static void log_follow_free(api_req *r)
{
	log_follow *f = r->upload;
	if (!f)
		return;
	sandbox_free(&f->sb);
	free(f);
	r->upload = NULL;
}

/* Send what file I gained since *off; -1 when the client is gone. */
static int pump(log_follow *f, int sock, int *fd, uint64_t *off, int i)
{
	if (*fd < 0) {
		char p[512];
		uint64_t size;
		sl_err err = {0};
		cmd_path(f->session, f->cid, i ? "err" : "out", p, sizeof(p));
		if (sbxfs_open_read(f->srv->ctx, &f->sb, p, fd, &size, &err) < 0)
			return 0; /* not made yet: the command is still queued */
	}
	unsigned char buf[3 + 32768];
	memset(buf, i ? 2 : 1, 3);
	for (;;) {
		ssize_t n = pread(*fd, buf + 3, sizeof(buf) - 3, (off_t)*off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		*off += n;
		if (api_ws_send(sock, 0x2, buf, 3 + n) < 0)
			return -1;
	}
}

/* Did the client close or go away? (It sends nothing but a close frame.) */
static bool client_left(int sock, int wait_ms)
{
	struct pollfd p = {sock, POLLIN | POLLRDHUP, 0};
	if (poll(&p, 1, wait_ms) <= 0)
		return false;
	unsigned char b[256];
	ssize_t n = recv(sock, b, sizeof(b), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
	       (n > 0 && (b[0] & 0x0f) == 0x8);
}

static void follow_loop(log_follow *f, int sock)
{
	int fds[2] = {-1, -1};
	uint64_t off[2] = {0, 0};
	int64_t next_check = sl_mono_ms() + 500;
	api_req fake = {.srv = f->srv};
	bool gone = false;
	for (;;) {
		bool ended = cmd_exit(&fake, &f->sb, f->session, f->cid) >= 0;
		if (!ended && sl_mono_ms() >= next_check) {
			ended = !exec_running(&fake, f->sb.id, f->eid);
			next_check = sl_mono_ms() + 500;
		}
		if (pump(f, sock, &fds[0], &off[0], 0) < 0 ||
		    pump(f, sock, &fds[1], &off[1], 1) < 0) {
			gone = true;
			break;
		}
		if (ended || atomic_load(&f->srv->stopping))
			break;
		if (client_left(sock, 50)) {
			gone = true;
			break;
		}
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (!gone) {
		unsigned char c[2] = {1000 >> 8, 1000 & 0xff};
		api_ws_send(sock, 0x8, c, 2);
		/* Give the client a moment to answer the close before the socket goes. */
		client_left(sock, 1000);
	}
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
			size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	api_req *r = con_cls;
	follow_loop(r->upload, sock);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

enum MHD_Result dt_session_logs(api_req *r)
{
	sl_sandbox sb;
	char eid[32];
	sl_err err = {0};
	if (api_ws_requested(r) && api_ws_check(r, &err) < 0)
		return dt_error(r, &err, NULL);
	enum MHD_Result ret = command_target(r, &sb, eid);
	if (ret != MHD_YES || r->queued)
		return ret;
	if (!api_ws_requested(r)) {
		cJSON *o = cJSON_CreateObject();
		command_logs(r, &sb, r->param[1], r->param[2], o);
		sandbox_free(&sb);
		return api_reply_json(r, 200, o);
	}
	log_follow *f = calloc(1, sizeof(*f));
	if (!f) {
		sandbox_free(&sb);
		return dt_fail(r, SL_INTERNAL, NULL, "out of memory");
	}
	f->srv = r->srv;
	f->sb = sb;
	snprintf(f->session, sizeof(f->session), "%s", r->param[1]);
	snprintf(f->cid, sizeof(f->cid), "%s", r->param[2]);
	snprintf(f->eid, sizeof(f->eid), "%s", eid);
	r->upload = f;
	r->upload_free = log_follow_free;
	return api_ws_accept(r, on_upgraded);
}

/* ---- dirs ---- */

enum MHD_Result dt_home_dir(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (dt_sandbox(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	char *argv[] = {"/bin/sh", "-c", "printf %s \"$HOME\"", NULL};
	_cleanup_free_ char *out = NULL;
	int code;
	int rc = dt_capture(r, &sb, argv, 4096, &out, &code, &err);
	if (rc == 0 && (code != 0 || !out || !*out)) {
		free(out);
		out = strdup(sb.user[0] && strcmp(sb.user, "root") ? "/home" : "/root");
	}
	sandbox_free(&sb);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "dir", out ? out : "/");
	return api_reply_json(r, 200, o);
}

enum MHD_Result dt_work_dir(api_req *r)
{
	sl_sandbox sb;
	sl_err err = {0};
	if (dt_sandbox(r, &sb, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "dir", sb.workdir[0] ? sb.workdir : "/");
	sandbox_free(&sb);
	return api_reply_json(r, 200, o);
}

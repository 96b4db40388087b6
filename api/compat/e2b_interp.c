/* e2b_interp.c — E2B's code interpreter (E2b-Sandbox-Port: 49999): stateful contexts,
 * each a long-lived REPL execution in the sandbox (e2b_repl.py, e2b_repl.js) fed one
 * JSON request a line on its stdin, whose NDJSON events on stdout are streamed back as
 * /execute's body. Contexts are recorded in the sandbox's run dir (they die with it),
 * so a restarted daemon finds their REPLs again, or starts fresh ones when they ended. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "e2b.h"
#include "rundir.h"
#include "state.h"

/* The REPL sources, compiled in (paths from the top of the tree, where make runs). */
__asm__(".pushsection .rodata\n"
	"e2b_repl_py_text:\n"
	".incbin \"api/compat/e2b_repl.py\"\n"
	".byte 0\n"
	"e2b_repl_js_text:\n"
	".incbin \"api/compat/e2b_repl.js\"\n"
	".byte 0\n"
	"e2b_repl_rich_text:\n"
	".incbin \"api/compat/e2b_repl_rich.py\"\n"
	".byte 0\n"
	"e2b_repl_r_text:\n"
	".incbin \"api/compat/e2b_repl.R\"\n"
	".byte 0\n"
	"e2b_repl_java_text:\n"
	".incbin \"api/compat/e2b_repl.java\"\n"
	".byte 0\n"
	".popsection\n");
extern const char e2b_repl_py_text[] __attribute__((visibility("hidden")));
extern const char e2b_repl_rich_text[] __attribute__((visibility("hidden")));
extern const char e2b_repl_js_text[] __attribute__((visibility("hidden")));
extern const char e2b_repl_r_text[] __attribute__((visibility("hidden")));
extern const char e2b_repl_java_text[] __attribute__((visibility("hidden")));

#define WAIT_SLICE_MS 250
/* The longest REPL line taken whole: the REPLs cut a text event at 256 Ki characters
 * (at most 12 bytes each once JSON-escaped), so only output written around them (raw
 * writes to the protocol's fd) is longer. Past it a line is dropped as it is read, and
 * its request gets a marker event instead (docs/e2b.md, "Long output"). */
#define LINE_MAX_BYTES (4u << 20)
#define LINE_TAIL      128 /* the end of a cut line kept: its "_req" names the request */

#define LANGUAGES_MSG "language %s: sandlot runs python, javascript, typescript, bash, r and java"

typedef struct ctx_rec {
	char id[40];
	char language[16]; /* python javascript typescript bash r java */
	char cwd[256];
	char exec_id[32]; /* the REPL's execution ("" before its first start) */
	double created;	  /* unix µs (0: a default one): listed oldest first, as E2B does */
} ctx_rec;

/* "python", "js", "ts", "sh", "R"... -> the six this serves; NULL for others. */
static const char *language_norm(const char *l)
{
	if (!l || !*l || !strcasecmp(l, "python") || !strcasecmp(l, "python3"))
		return "python";
	if (!strcasecmp(l, "js") || !strcasecmp(l, "javascript") || !strcasecmp(l, "node"))
		return "javascript";
	if (!strcasecmp(l, "ts") || !strcasecmp(l, "typescript"))
		return "typescript";
	if (!strcasecmp(l, "bash") || !strcasecmp(l, "sh") || !strcasecmp(l, "shell"))
		return "bash";
	if (!strcasecmp(l, "r"))
		return "r";
	if (!strcasecmp(l, "java"))
		return "java";
	return NULL;
}

/* The sandbox's directory of context records (the runtime's, in its run dir); made when
 * MAKE. An empty BUF (a failure) names nothing: lookups in it find nothing. */
static int ctx_dir_of(api_server *s, const char *sid, bool make, char *buf, size_t len, sl_err *err)
{
	buf[0] = '\0';
	int r = rundir_facade_dir(&s->ctx->cfg, sid, "e2b-contexts", make, buf, len, err);
	if (r < 0)
		buf[0] = '\0';
	return r;
}

static void ctx_dir(api_server *s, const char *sid, char *buf, size_t len)
{
	sl_err e = {0};
	ctx_dir_of(s, sid, false, buf, len, &e);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e6 + (double)(ts.tv_nsec / 1000);
}

static bool ctx_id_ok(const char *id)
{
	size_t n = strlen(id);
	return n && n < 40 && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static int ctx_load(api_server *s, const char *sid, const char *ref, ctx_rec *out, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 64], id[40];
	snprintf(id, sizeof(id), "%s", ref); /* ref may be out->id */
	if (!ctx_id_ok(ref) || strlen(ref) >= sizeof(id))
		return sl_fail(err, SL_NOTFOUND, 0, "context %s not found", id);
	ctx_dir(s, sid, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/%s.json", dir, id);
	_cleanup_free_ char *text = NULL;
	size_t len;
	sl_err e2 = {0};
	if (state_read_file(p, 64 * 1024, &text, &len, &e2) < 0)
		return sl_fail(err, SL_NOTFOUND, 0, "context %s not found", id);
	_cleanup_cjson_ cJSON *o = cJSON_Parse(text);
	const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "language"));
	const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "cwd"));
	const char *x = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "execId"));
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "created");
	if (!l || !c)
		return sl_fail(err, SL_INTERNAL, 0, "context %s: a damaged record", id);
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", id);
	snprintf(out->language, sizeof(out->language), "%s", l);
	snprintf(out->cwd, sizeof(out->cwd), "%s", c);
	snprintf(out->exec_id, sizeof(out->exec_id), "%s", x ? x : "");
	out->created = cJSON_IsNumber(t) ? t->valuedouble : 0;
	return 0;
}

static int ctx_save(api_server *s, const char *sid, const ctx_rec *c, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 64];
	if (ctx_dir_of(s, sid, true, dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/%s.json", dir, c->id);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", c->id);
	cJSON_AddStringToObject(o, "language", c->language);
	cJSON_AddStringToObject(o, "cwd", c->cwd);
	cJSON_AddStringToObject(o, "execId", c->exec_id);
	cJSON_AddNumberToObject(o, "created", c->created);
	_cleanup_free_ char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "context %s", c->id);
	return state_write_atomic_nosync(p, text, strlen(text), err);
}

/* One execution at a time per context: a flock held for the request's whole stream. */
static int ctx_lock(api_server *s, const char *sid, const char *id, sl_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX + 64];
	if (ctx_dir_of(s, sid, true, dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/%s.lock", dir, id);
	return state_lock(p, err);
}

static cJSON *ctx_json(const ctx_rec *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", c->id);
	cJSON_AddStringToObject(o, "language", c->language);
	cJSON_AddStringToObject(o, "cwd", c->cwd);
	return o;
}

static bool repl_running(api_server *s, const char *sid, const ctx_rec *c)
{
	sl_exec e;
	sl_err err = {0};
	if (!c->exec_id[0] || exec_get(s->ctx, sid, c->exec_id, &e, &err) < 0)
		return false;
	bool run = e.status == SL_EXEC_RUNNING;
	exec_free(&e);
	return run;
}

/* The shell start of the REPLs that cannot arrange their descriptors themselves: the
 * requests on fd 3, the protocol on fd 4, and the cells a stdin of /dev/null and a
 * stdout/stderr that cannot garble the protocol (raw fd writes are dropped, as Jupyter's
 * kernels drop them). Node: console output is captured in the vm. */
#define FDS_SHELL "exec 3<&0 4>&1 </dev/null >/dev/null 2>&1; "

/* How each language's REPL runs: the Python REPL (python, and bash, which it drives:
 * e2b_repl.py, _Shell), Node (javascript, typescript), Rscript (r) and java's
 * source-file mode (java: its source written to a file first). */
typedef struct repl_kind {
	const char *text;  /* the REPL's source, given in SANDLOT_E2B_REPL */
	char *const *argv; /* ending in E2B_CONTEXT_MARK */
	const char *probe; /* a shell test that the interpreter is in the image; NULL: none */
	const char *needs; /* what the probe looks for, for the error */
} repl_kind;

static char *const py_argv[] = {
    "python3",	      "-u", "-c", "import os; exec(os.environ.pop('SANDLOT_E2B_REPL'))",
    E2B_CONTEXT_MARK, NULL};
static char *const js_argv[] = {"/bin/sh", "-c",
				FDS_SHELL "exec node --expose-internals -e "
					  "'const s = process.env.SANDLOT_E2B_REPL; "
					  "delete process.env.SANDLOT_E2B_REPL; eval(s)'",
				E2B_CONTEXT_MARK, NULL};
/* R prints in the locale's encoding: UTF-8 unless the sandbox names another. */
static char *const r_argv[] = {"/bin/sh", "-c",
			       FDS_SHELL ": \"${LANG:=C.UTF-8}\"; export LANG; "
					 "exec Rscript --no-save --no-restore -e "
					 "'eval(parse(text = Sys.getenv(\"SANDLOT_E2B_REPL\")))'",
			       E2B_CONTEXT_MARK, NULL};
/* Java keeps fds 0 and 1 (nothing in a JVM writes to them behind System.out); its
 * warnings on stderr are dropped. The file is removed once compiled (e2b_repl.java). */
static char *const java_argv[] = {
    "/bin/sh", "-c",
    "exec 2>/dev/null; d=$(mktemp -d) && printf %s \"$SANDLOT_E2B_REPL\" >\"$d/E2bRepl.java\" && "
    "unset SANDLOT_E2B_REPL && exec java \"$d/E2bRepl.java\" "
    "\"$d/E2bRepl.java\"",
    E2B_CONTEXT_MARK, NULL};

static repl_kind repl_kind_of(const char *language)
{
	if (!strcmp(language, "javascript") || !strcmp(language, "typescript"))
		return (repl_kind){e2b_repl_js_text, js_argv, NULL, "node"};
	if (!strcmp(language, "r"))
		return (repl_kind){e2b_repl_r_text, r_argv, "command -v Rscript",
				   "R (Rscript on the PATH)"};
	if (!strcmp(language, "java"))
		return (repl_kind){e2b_repl_java_text, java_argv,
				   "command -v java && command -v jshell",
				   "a JDK 17 or later (java and jshell on the PATH)"};
	return (repl_kind){e2b_repl_py_text, py_argv, NULL, "python3"};
}

/* The image has the interpreter LANGUAGE needs: a short shell test in the sandbox, when a
 * context is made, so that a language the image lacks is a clear error at once, not a
 * REPL that dies at its start (the shell of FDS_SHELL would start). 1 when it lacks it
 * (ERR says what, SL_INVALID), -1 when the test could not run. */
static int repl_probe(api_server *s, const sl_sandbox *sb, const char *language, sl_err *err)
{
	repl_kind k = repl_kind_of(language);
	if (!k.probe)
		return 0;
	char *const argv[] = {"/bin/sh", "-c", (char *)k.probe, E2B_CONTEXT_MARK, NULL};
	sl_exec_spec spec = {.argv = argv, .user = "root", .cwd = "/", .wait_ms = 10000};
	sl_exec e;
	if (exec_start(s->ctx, sb, &spec, &e, err) < 0)
		return -1;
	bool ok = e.status != SL_EXEC_RUNNING && e.exit_code == 0;
	if (e.status == SL_EXEC_RUNNING) { /* a probe of shell builtins does not hang */
		sl_err e2 = {0};
		exec_signal(s->ctx, sb->id, e.id, SIGKILL, &e2);
	}
	exec_free(&e);
	if (ok)
		return 0;
	sl_fail(err, SL_INVALID, 0,
		"language %s: this sandbox's image lacks %s; the code-interpreter image has it "
		"(docs/e2b.md, \"Code interpreter\")",
		language, k.needs);
	return 1;
}

/* "SANDLOT_E2B_PROPS=" and the names of the sandbox's env vars, space-separated (the
 * ones E2B's server reads from envd's /envs and sets in each context); NULL: no memory. */
static char *env_names(const sl_sandbox *sb)
{
	size_t len = sizeof("SANDLOT_E2B_PROPS=");
	const cJSON *it;
	cJSON_ArrayForEach(it, sb->env)
	{
		len += strlen(it->string) + 1;
	}
	char *out = malloc(len);
	if (!out)
		return NULL;
	char *p = stpcpy(out, "SANDLOT_E2B_PROPS=");
	cJSON_ArrayForEach(it, sb->env)
	{
		p = stpcpy(p, it->string);
		*p++ = ' ';
	}
	*p = '\0';
	return out;
}

/* Start the context's REPL (a fresh interpreter) and record it. */
static int repl_start(api_server *s, const sl_sandbox *sb, ctx_rec *c, sl_err *err)
{
	char lang_env[64];
	repl_kind k = repl_kind_of(c->language);
	snprintf(lang_env, sizeof(lang_env), "SANDLOT_E2B_LANGUAGE=%s", c->language);
	/* The source goes in the environment (taken out before any cell runs), so process
	 * listings show a short command line. */
	_cleanup_free_ char *src = NULL, *props = NULL, *rich = NULL;
	bool java = !strcmp(c->language, "java"), py = k.text == e2b_repl_py_text;
	if (asprintf(&src, "SANDLOT_E2B_REPL=%s", k.text) < 0 ||
	    (java && !(props = env_names(sb))) ||
	    (py && asprintf(&rich, "SANDLOT_E2B_RICH=%s", e2b_repl_rich_text) < 0))
		return sl_fail(err, SL_INTERNAL, ENOMEM, "context %s", c->id);
	/* SANDLOT_E2B_PROPS: the sandbox's env vars, by name (Java's system properties).
	 * SANDLOT_E2B_RICH: Python's rich results (figures, charts, DataFrames:
	 * e2b_repl_rich.py), run only when a cell needs them. */
	const char *env[] = {lang_env,
			     src,
			     "PYTHONUNBUFFERED=1",
			     "PYTHONIOENCODING=utf-8",
			     java ? props : py ? rich : NULL,
			     NULL};
	/* As root, as E2B's Jupyter runs its kernels (a context may work in /root). */
	sl_exec_spec spec = {
	    .argv = k.argv, .env = env, .user = "root", .cwd = c->cwd, .stdin_pipe = true};
	sl_exec e;
	if (exec_start(s->ctx, sb, &spec, &e, err) < 0)
		return -1;
	bool failed = e.status != SL_EXEC_RUNNING;
	snprintf(c->exec_id, sizeof(c->exec_id), "%s", e.id);
	exec_free(&e);
	if (failed)
		return sl_fail(err, SL_INVALID, 0,
			       "context %s: the %s interpreter did not start (is %s in the image?)",
			       c->id, c->language, k.needs);
	return ctx_save(s, sb->id, c, err);
}

static void repl_kill(api_server *s, const char *sid, const ctx_rec *c)
{
	sl_err err = {0};
	if (c->exec_id[0])
		exec_signal(s->ctx, sid, c->exec_id, SIGKILL, &err);
}

/* ---- /execute ---- */

typedef struct exec_stream {
	api_server *srv;
	char sid[32], cid[40], eid[32], req[32];
	int lock, log, conn;
	sl_dirwatch ino; /* on the REPL's execution directory; fd -1: we poll */
	uint64_t off;
	char *request; /* the line written to the REPL, kept for a resend */
	size_t request_len;
	char *line;
	size_t line_len, line_cap;
	uint64_t line_cut; /* bytes of the current line beyond LINE_MAX_BYTES, dropped */
	char tail[LINE_TAIL];
	size_t tail_len;
	char *out;
	size_t out_len, out_pos;
	bool done, accepted, resent;
} exec_stream;

static void exec_stream_free(void *cls)
{
	exec_stream *x = cls;
	if (x->log >= 0)
		close(x->log);
	exec_watch_end(x->srv->ctx, &x->ino);
	if (x->lock >= 0)
		close(x->lock);
	free(x->request);
	free(x->line);
	free(x->out);
	free(x);
}

static void out_add(exec_stream *x, const char *s)
{
	size_t n = strlen(s);
	char *b = realloc(x->out, x->out_len + n + 1);
	if (!b)
		return;
	memcpy(b + x->out_len, s, n);
	b[x->out_len + n] = '\n';
	x->out = b;
	x->out_len += n + 1;
}

/* A result's text as E2B's server gives it (template/server/api/models/result.py):
 * text/plain with one pair of enclosing quotes taken off, so a string's repr is the
 * bare string ('abc' -> abc, "it's" -> it's). Nothing is unescaped, as there. */
static void text_unquote(cJSON *o)
{
	cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "text");
	const char *s = cJSON_GetStringValue(t);
	size_t n = s ? strlen(s) : 0;
	if (!n || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
		return;
	_cleanup_free_ char *bare = strndup(s + 1, n >= 2 ? n - 2 : 0);
	if (bare)
		cJSON_SetValuestring(t, bare);
}

/* A line from the REPL: ours (tagged with this request) is passed on untagged. */
static void take_line(exec_stream *x, const char *line)
{
	_cleanup_cjson_ cJSON *o = cJSON_Parse(line);
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(o, "_req");
	if (!cJSON_IsObject(o) || !cJSON_IsString(req) || strcmp(req->valuestring, x->req))
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(o, "_req");
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "type"));
	if (type && !strcmp(type, "accepted")) { /* the REPL's own: it read the request */
		x->accepted = true;
		return;
	}
	if (type && !strcmp(type, "result"))
		text_unquote(o);
	_cleanup_free_ char *s = cJSON_PrintUnformatted(o);
	if (s)
		out_add(x, s);
	if (type && !strcmp(type, "end_of_execution"))
		x->done = true;
}

/* The part of the current line in S (N bytes, no newline): kept up to LINE_MAX_BYTES,
 * the rest counted, its last LINE_TAIL bytes kept in x->tail. */
static int line_add(exec_stream *x, const char *s, size_t n)
{
	size_t take = x->line_len < LINE_MAX_BYTES ? LINE_MAX_BYTES - x->line_len : 0;
	take = take < n ? take : n;
	if (take && x->line_len + take + 1 > x->line_cap) {
		size_t cap = x->line_cap ? x->line_cap : 4096;
		while (cap < x->line_len + take + 1)
			cap *= 2;
		char *l = realloc(x->line, cap);
		if (!l)
			return -1;
		x->line = l;
		x->line_cap = cap;
	}
	memcpy(x->line + x->line_len, s, take);
	x->line_len += take;
	size_t rest = n - take;
	if (!rest)
		return 0;
	x->line_cut += rest;
	s += take;
	if (rest >= LINE_TAIL) {
		memcpy(x->tail, s + rest - LINE_TAIL, LINE_TAIL);
		x->tail_len = LINE_TAIL;
		return 0;
	}
	size_t keep = x->tail_len + rest > LINE_TAIL ? LINE_TAIL - rest : x->tail_len;
	memmove(x->tail, x->tail + x->tail_len - keep, keep);
	memcpy(x->tail + keep, s, rest);
	x->tail_len = keep + rest;
	return 0;
}

/* A line too long to take: when its end names this request, the request gets a marker
 * in its place, on the stream its start names (stdout unless stderr). */
static void take_cut_line(exec_stream *x)
{
	if (!memmem(x->tail, x->tail_len, x->req, strlen(x->req)))
		return;
	size_t head = x->line_len < 64 ? x->line_len : 64;
	bool err = memmem(x->line, head, "\"stderr\"", 8) != NULL;
	char ev[160];
	snprintf(ev, sizeof(ev), "{\"type\":\"%s\",\"text\":\"\u2026[cut: %llu bytes]\\n\"}",
		 err ? "stderr" : "stdout", (unsigned long long)(x->line_len + x->line_cut));
	out_add(x, ev);
}

static void line_end(exec_stream *x)
{
	if (x->line_cut)
		take_cut_line(x);
	else if (x->line_len) {
		x->line[x->line_len] = '\0';
		take_line(x, x->line);
	}
	x->line_len = x->tail_len = 0;
	x->line_cut = 0;
	/* A long line's buffer is not kept for the next, short ones. */
	if (x->line_cap > 65536) {
		free(x->line);
		x->line = NULL;
		x->line_cap = 0;
	}
}

static int exec_pull(exec_stream *x)
{
	char buf[16384];
	ssize_t n;
	do
		n = pread(x->log, buf, sizeof(buf), (off_t)x->off);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	x->off += (uint64_t)n;
	for (const char *p = buf, *end = buf + n; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (line_add(x, p, (size_t)((nl ? nl : end) - p)) < 0)
			return -1;
		if (!nl)
			break;
		line_end(x);
		p = nl + 1;
	}
	return 1;
}

/* Follow the output of the context's REPL (x->eid) from its end, and send it the
 * request. */
static int stream_attach(exec_stream *x, sl_err *err)
{
	sl_ctx *ctx = x->srv->ctx;
	struct stat st;
	if (x->log >= 0)
		close(x->log);
	exec_watch_end(ctx, &x->ino);
	x->line_len = x->tail_len = 0;
	x->line_cut = 0;
	if (exec_open_log(ctx, x->sid, x->eid, "stdout", &x->log, err) < 0)
		return -1;
	if (fstat(x->log, &st) < 0)
		return sl_sysfail(err, "context %s: its output", x->cid);
	x->off = (uint64_t)st.st_size;
	exec_watch(ctx, x->sid, x->eid, IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_CREATE,
		   &x->ino);
	return exec_write_stdin(ctx, x->sid, x->eid, x->request, x->request_len, err);
}

/* The REPL ended before it read the request (killed just before, its end not yet
 * recorded when the request was written, or no longer reading its stdin): the cell never
 * ran, so a fresh interpreter gets it. Once: an interpreter that dies at its start is
 * not restarted in a loop. */
static int stream_resend(exec_stream *x, sl_err *err)
{
	sl_sandbox sb;
	ctx_rec c;
	x->resent = true;
	if (sandbox_get(x->srv->ctx, x->sid, &sb, err) < 0)
		return -1;
	int rc = ctx_load(x->srv, x->sid, x->cid, &c, err);
	bool same = rc == 0 && !strcmp(c.exec_id, x->eid);
	if (rc == 0 && (same || !repl_running(x->srv, x->sid, &c))) {
		if (same)
			repl_kill(x->srv, x->sid, &c); /* it does not read: make sure it is gone */
		rc = repl_start(x->srv, &sb, &c, err);
	}
	sandbox_free(&sb);
	if (rc < 0)
		return -1;
	snprintf(x->eid, sizeof(x->eid), "%s", c.exec_id);
	return stream_attach(x, err);
}

static ssize_t exec_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	exec_stream *x = cls;
	for (;;) {
		if (x->out_pos < x->out_len) {
			size_t n = x->out_len - x->out_pos;
			n = n > max ? max : n;
			memcpy(buf, x->out + x->out_pos, n);
			x->out_pos += n;
			if (x->out_pos == x->out_len)
				x->out_pos = x->out_len = 0;
			return (ssize_t)n;
		}
		if (x->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&x->srv->stopping))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		int got = exec_pull(x);
		if (got < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (got)
			continue;
		sl_exec e;
		sl_err err = {0};
		if (exec_get(x->srv->ctx, x->sid, x->eid, &e, &err) < 0 ||
		    e.status != SL_EXEC_RUNNING) {
			/* Gone with its sandbox (its record with it, or its init died first):
			 * cut, with no end event, as E2B's proxy drops the stream when the
			 * sandbox dies; the SDK then finds the sandbox gone and throws a
			 * TimeoutError (as commands.run's stream in e2b_envd.c). */
			bool gone = err.kind != SL_OK || e.lost;
			if (err.kind == SL_OK)
				exec_free(&e);
			if (exec_pull(x) > 0)
				continue;
			if (gone && !x->done)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			if (!x->done && !x->accepted && !x->resent && stream_resend(x, &err) == 0)
				continue;
			if (!x->done) {
				out_add(x, "{\"type\":\"error\",\"name\":\"ContextDied\",\"value\":"
					   "\"the interpreter of this context ended; it starts "
					   "afresh on the next call\",\"traceback\":\"\"}");
				x->done = true;
			}
			continue;
		}
		exec_free(&e);
		struct pollfd p[2] = {{x->conn, POLLRDHUP, 0}, {x->ino.fd, POLLIN, 0}};
		int n = poll(p, x->ino.fd >= 0 ? 2 : 1, WAIT_SLICE_MS);
		if (n > 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			/* The caller gave up (its timeout): interrupt the cell. */
			exec_signal(x->srv->ctx, x->sid, x->eid, SIGINT, &err);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (n > 0 && (p[1].revents & POLLIN))
			dirwatch_drain(&x->ino);
	}
}

/* The context of an /execute: named, or the sandbox's default for the language (made
 * on first use). 1 when the image lacks the language (repl_probe). */
static int execute_context(api_req *r, const sl_sandbox *sb, const char *cid, const char *lang,
			   ctx_rec *c, sl_err *err)
{
	if (cid)
		return ctx_load(r->srv, sb->id, cid, c, err);
	const char *l = language_norm(lang);
	if (!l)
		return sl_fail(err, SL_INVALID, 0, LANGUAGES_MSG, lang);
	char id[40];
	snprintf(id, sizeof(id), "default-%s", l);
	if (ctx_load(r->srv, sb->id, id, c, err) == 0)
		return 0;
	sl_err_clear(err);
	int lacks = repl_probe(r->srv, sb, l, err);
	if (lacks)
		return lacks;
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->language, sizeof(c->language), "%s", l);
	e2b_user_home(sb, NULL, c->cwd, sizeof(c->cwd));
	c->created = 0; /* E2B's are there from the sandbox's start: listed first */
	return ctx_save(r->srv, sb->id, c, err);
}

/* runCode in a language the image lacks: the SDK shows a failed request only as its
 * status ("400 Bad Request"), so the reason is the execution's error instead, named
 * LanguageUnavailable (createCodeContext gets a 400 with it). */
static enum MHD_Result language_lacking(api_req *r, const sl_err *err)
{
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "type", "error");
	cJSON_AddStringToObject(ev, "name", "LanguageUnavailable");
	cJSON_AddStringToObject(ev, "value", err->msg);
	cJSON_AddStringToObject(ev, "traceback", "");
	_cleanup_free_ char *line = cJSON_PrintUnformatted(ev);
	cJSON_Delete(ev);
	_cleanup_free_ char *text = NULL;
	if (!line || asprintf(&text, "%s\n{\"type\":\"end_of_execution\"}\n", line) < 0)
		return MHD_NO;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	return api_reply(r, 200, resp);
}

enum MHD_Result e2b_execute(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	sl_err err = {0};
	const cJSON *body;
	if (e2b_plane_sandbox(r, true, &sb, &ret) < 0)
		return ret;
	const char *code = NULL, *cid = NULL, *lang = NULL;
	ctx_rec c;
	int lock = -1;
	if (api_body_object(r, false, &body, &err) < 0 ||
	    api_json_string(body, "", "code", &code, &err) < 0 ||
	    api_json_string(body, "", "context_id", &cid, &err) < 0 ||
	    api_json_string(body, "", "language", &lang, &err) < 0)
		goto fail;
	if (!code) {
		sl_fail(&err, SL_INVALID, 0, "code: required");
		goto fail;
	}
	int got = execute_context(r, &sb, cid, lang, &c, &err);
	if (got > 0) {
		sandbox_free(&sb);
		return language_lacking(r, &err);
	}
	if (got < 0 || (lock = ctx_lock(r->srv, sb.id, c.id, &err)) < 0)
		goto fail;
	/* Read again under the lock: a restart may have replaced the REPL. */
	if (ctx_load(r->srv, sb.id, c.id, &c, &err) < 0 ||
	    (!repl_running(r->srv, sb.id, &c) && repl_start(r->srv, &sb, &c, &err) < 0))
		goto fail;
	exec_stream *x = calloc(1, sizeof(*x));
	if (!x)
		goto fail;
	x->srv = r->srv;
	x->lock = lock;
	lock = -1;
	x->log = x->ino.fd = -1;
	snprintf(x->sid, sizeof(x->sid), "%s", sb.id);
	snprintf(x->cid, sizeof(x->cid), "%s", c.id);
	snprintf(x->eid, sizeof(x->eid), "%s", c.exec_id);
	sl_new_id("req_", x->req, sizeof(x->req));
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	x->conn = ci ? ci->connect_fd : -1;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "req", x->req);
	cJSON_AddStringToObject(req, "code", code);
	const cJSON *envs = cJSON_GetObjectItemCaseSensitive(body, "env_vars");
	if (cJSON_IsObject(envs))
		cJSON_AddItemToObject(req, "env_vars", cJSON_Duplicate(envs, 1));
	x->request = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (x->request) {
		x->request_len = strlen(x->request);
		x->request[x->request_len++] = '\n'; /* replaces the NUL: written with its length */
	}
	/* A REPL that no longer reads its stdin (killed, its end not yet recorded) is
	 * replaced at once. */
	int sent = x->request ? stream_attach(x, &err) : -1;
	if (sent < 0 && err.kind == SL_CONFLICT) {
		sl_err_clear(&err);
		sent = stream_resend(x, &err);
	}
	if (sent < 0) {
		exec_stream_free(x);
		if (!err.kind)
			sl_fail(&err, SL_INTERNAL, ENOMEM, "context %s", c.id);
		goto fail;
	}
	sandbox_free(&sb);
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, 16 * 1024, exec_stream_read, x, exec_stream_free);
	if (!resp) {
		exec_stream_free(x);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	api_conn_long_lived(r, false);
	return api_reply(r, 200, resp);
fail:
	if (lock >= 0)
		close(lock);
	sandbox_free(&sb);
	if (err.kind == SL_NOTFOUND)
		return api_reply(r, 404,
				 MHD_create_response_from_buffer(strlen(err.msg), err.msg,
								 MHD_RESPMEM_MUST_COPY));
	return e2b_reply_err(r, &err);
}

/* ---- /contexts ---- */

enum MHD_Result e2b_contexts_create(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	sl_err err = {0};
	const cJSON *body;
	const char *lang = NULL, *cwd = NULL;
	if (e2b_plane_sandbox(r, true, &sb, &ret) < 0)
		return ret;
	ctx_rec c = {0};
	if (api_body_object(r, true, &body, &err) < 0 ||
	    (body && (api_json_string(body, "", "language", &lang, &err) < 0 ||
		      api_json_string(body, "", "cwd", &cwd, &err) < 0)))
		goto fail;
	const char *l = language_norm(lang);
	if (!l) {
		sl_fail(&err, SL_INVALID, 0, LANGUAGES_MSG, lang);
		goto fail;
	}
	char id[32];
	sl_new_id("ctx_", id, sizeof(id));
	snprintf(c.id, sizeof(c.id), "%s", id);
	snprintf(c.language, sizeof(c.language), "%s", l);
	c.created = now_us();
	if (cwd && *cwd)
		snprintf(c.cwd, sizeof(c.cwd), "%s", cwd);
	else
		e2b_user_home(&sb, NULL, c.cwd, sizeof(c.cwd));
	if (repl_probe(r->srv, &sb, l, &err) != 0 || repl_start(r->srv, &sb, &c, &err) < 0)
		goto fail;
	sandbox_free(&sb);
	return api_reply_json(r, 200, ctx_json(&c));
fail:
	sandbox_free(&sb);
	return e2b_reply_err(r, &err);
}

/* Oldest first (E2B lists a new context last); ties by id. */
static int ctx_older(const void *a, const void *b)
{
	const ctx_rec *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->id, y->id);
}

enum MHD_Result e2b_contexts_list(api_req *r)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	if (e2b_plane_sandbox(r, true, &sb, &ret) < 0)
		return ret;
	/* E2B's sandbox starts with its default python and javascript contexts, and lists
	 * them before any code ran: their records are made here (the REPL starts on use). */
	static const char *const defaults[] = {"python", "javascript"};
	for (size_t i = 0; i < 2; i++) {
		ctx_rec c;
		sl_err err = {0};
		execute_context(r, &sb, NULL, defaults[i], &c, &err);
	}
	char dir[PATH_MAX];
	ctx_dir(r->srv, sb.id, dir, sizeof(dir));
	ctx_rec *all = NULL;
	size_t n_all = 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		char id[64];
		snprintf(id, sizeof(id), "%.*s", (int)(n - 5), de->d_name);
		ctx_rec c;
		sl_err err = {0};
		if (ctx_load(r->srv, sb.id, id, &c, &err) < 0)
			continue;
		ctx_rec *more = realloc(all, (n_all + 1) * sizeof(*all));
		if (!more)
			break;
		all = more;
		all[n_all++] = c;
	}
	if (n_all)
		qsort(all, n_all, sizeof(*all), ctx_older);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n_all; i++)
		cJSON_AddItemToArray(arr, ctx_json(&all[i]));
	free(all);
	sandbox_free(&sb);
	return api_reply_json(r, 200, arr);
}

static enum MHD_Result context_op(api_req *r, bool restart)
{
	sl_sandbox sb;
	enum MHD_Result ret;
	sl_err err = {0};
	ctx_rec c;
	if (e2b_plane_sandbox(r, true, &sb, &ret) < 0)
		return ret;
	if (ctx_load(r->srv, sb.id, r->param[0], &c, &err) < 0) {
		sandbox_free(&sb);
		return e2b_reply_err(r, &err);
	}
	repl_kill(r->srv, sb.id, &c);
	int lock = ctx_lock(r->srv, sb.id, c.id, &err);
	int rc = lock < 0 ? -1 : 0;
	if (rc == 0 && restart) {
		rc = repl_start(r->srv, &sb, &c, &err);
	} else if (rc == 0) {
		char dir[PATH_MAX], p[PATH_MAX + 64];
		ctx_dir(r->srv, sb.id, dir, sizeof(dir));
		snprintf(p, sizeof(p), "%s/%s.json", dir, c.id);
		unlink(p);
		snprintf(p, sizeof(p), "%s/%s.lock", dir, c.id);
		unlink(p);
	}
	if (lock >= 0)
		close(lock);
	sandbox_free(&sb);
	if (rc < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

enum MHD_Result e2b_contexts_delete(api_req *r)
{
	return context_op(r, false);
}

enum MHD_Result e2b_contexts_restart(api_req *r)
{
	return context_op(r, true);
}

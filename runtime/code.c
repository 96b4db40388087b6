/* code.c — executeCode over executions and sandbox files: the snippet is written to a
 * file inside the sandbox (never quoted into a command line, so any text is safe), a
 * small fixed wrapper runs it in a fresh interpreter and records an uncaught error as
 * JSON beside it, and the result is assembled from the execution's record and logs.
 * Python calls go through the sandbox's warm runner (code_runner.py), started after the
 * first call has been answered: a clean forked child per call instead of a new
 * interpreter; TypeScript and
 * JavaScript calls through the same runner in its node mode: a new node per call, started
 * ahead and waiting (js_runner), with esbuild started ahead beside it. */
#include "code.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "exec.h"
#include "fsutil.h"
#include "id.h"
#include "sbxfs.h"
#include "state.h"

#define CODE_DEFAULT_TIMEOUT_MS (5 * 60 * 1000)
#define CODE_FIRST_WAIT_MS	1000 /* exec_start waits this long on init's connection */
/* Each stream's output kept in the result; the rest is cut, "…[cut: N bytes]" marking
 * the place (docs/executions.md, "Code"). JSON-escaped it may grow sixfold in a reply. */
#define CODE_OUTPUT_MAX (1u << 20)

/* The warm Python runner and each call's client (init/coderun.c), compiled in (paths
 * from the top of the tree, where make runs; the Makefile names the client's). */
#ifndef SL_CODERUN_BIN
#define SL_CODERUN_BIN "build/sandlot-coderun"
#endif
#ifndef SL_CODERUN_NODE
#define SL_CODERUN_NODE "build/sandlot-coderun.node"
#endif
__asm__(".pushsection .rodata\n"
	"code_runner_py_text:\n"
	".incbin \"runtime/code_runner.py\"\n"
	".byte 0\n"
	"code_coderun_bin:\n"
	".incbin \"" SL_CODERUN_BIN "\"\n"
	"code_coderun_bin_end:\n"
	"code_coderun_node:\n"
	".incbin \"" SL_CODERUN_NODE "\"\n"
	"code_coderun_node_end:\n"
	".popsection\n");
extern const char code_runner_py_text[] __attribute__((visibility("hidden")));
extern const char code_coderun_bin[] __attribute__((visibility("hidden")));
extern const char code_coderun_bin_end[] __attribute__((visibility("hidden")));
extern const char code_coderun_node[] __attribute__((visibility("hidden")));
extern const char code_coderun_node_end[] __attribute__((visibility("hidden")));

/* Inside the sandbox: the runner's socket and the client, beside the calls' dirs. */
#define CODE_DIR	 "/tmp/.sandlot-code"
#define RUNNER_DIR	 "/tmp/.sandlot-runner"
#define RUNNER_SOCK	 RUNNER_DIR "/python.sock"
#define RUNNER_NODE_SOCK RUNNER_DIR "/node.sock"
#define RUNNER_CLIENT	 RUNNER_DIR "/coderun"
#define RUNNER_ADDON	 RUNNER_DIR "/coderun.node"

/* Runs SRC as __main__; an uncaught exception goes to stderr as a traceback (without
 * this wrapper's frame) and to ERRF as {name, message, traceback}. */
static const char py_wrapper[] =
    "import sys\n"
    "src, errf = sys.argv[1], sys.argv[2]\n"
    "sys.argv = [src]\n"
    "g = {'__name__': '__main__', '__file__': src, '__builtins__': __builtins__}\n"
    "try:\n"
    "    with open(src, encoding='utf-8') as f:\n"
    "        code = compile(f.read(), src, 'exec')\n"
    "    exec(code, g)\n"
    "except SystemExit:\n"
    "    raise\n"
    "except BaseException as e:\n"
    "    import json, traceback  # only on failure: they cost start-up time\n"
    "    tb = ''.join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))\n"
    "    sys.stderr.write(tb)\n"
    "    sys.stderr.flush()\n"
    "    with open(errf, 'w') as f:\n"
    "        json.dump({'name': type(e).__name__, 'message': str(e), 'traceback': tb}, f)\n"
    "    sys.exit(1)\n";

/* Runs the JS file as a module; an uncaught error or rejection goes to stderr and to
 * the error file as {name, message, traceback}. */
#define JS_WRAPPER                                                                                 \
	"const fs = require('fs'), path = require('path');\n"                                      \
	"const [src, errf] = process.argv.slice(1);\n"                                             \
	"let failed = false;\n"                                                                    \
	"function fail(e) {\n"                                                                     \
	"  if (failed) return; failed = true;\n"                                                   \
	"  const o = { name: (e && e.name) || 'Error',\n"                                          \
	"    message: e && e.message !== undefined ? String(e.message) : String(e),\n"             \
	"    traceback: (e && e.stack) || String(e) };\n"                                          \
	"  try { fs.writeFileSync(errf, JSON.stringify(o)); } catch (_) {}\n"                      \
	"  process.stderr.write(o.traceback + '\\n');\n"                                           \
	"  process.exitCode = 1;\n"                                                                \
	"}\n"                                                                                      \
	"process.on('uncaughtException', e => { fail(e); process.exit(1); });\n"                   \
	"process.on('unhandledRejection', e => { fail(e); process.exit(1); });\n"                  \
	"try { require(path.resolve(src)); } catch (e) { fail(e); process.exit(1); }\n"
static const char js_wrapper[] = JS_WRAPPER;

/* The node started ahead by the warm runner (code_runner.py, its waiting child execs
 * it): node -e THIS ADDON WRAPPER LS CTL GONE. It has loaded what a call needs, and
 * esbuild's JS API with its service process running and warmed by two transforms (a
 * transform then costs ~1-2 ms, not the ~10 ms of an esbuild run); the addon
 * (init/coderun_node.c) takes the call off the socket (its fds 0/1/2 and cwd made this
 * process's), then the call's environment is set, TypeScript transformed, the service
 * ended (the snippet sees no child), and WRAPPER run as `node -e` runs it, on the argv a
 * cold call has. A snippet esbuild refuses, or an image without esbuild's JS API, goes
 * through the esbuild command as a cold call does (its errors are the cold path's).
 * Nothing of it is left in the snippet's scope, nor in require.cache. */
static const char js_runner[] =
    "(() => {\n"
    "const [addon, wrapper, ls, ctl, gone] = process.argv.slice(1);\n"
    "const m = { exports: {} };\n"
    "process.dlopen(m, addon);\n"
    "const cp = require('child_process'), fs = require('fs');\n"
    "const vm = require('vm');\n"
    "const PH = '__sandlot_main__.ts';\n"
    "const OPTS = { loader: 'ts', format: 'cjs', platform: 'node', target: 'node18',\n"
    "  sourcefile: PH };\n"
    "let esb = null, svc = null;\n"
    "const ahead = async () => {\n"
    "  try {\n"
    "    esb = require('esbuild');\n"
    "    const spawn = cp.spawn;\n"
    "    cp.spawn = function () { return (svc = spawn.apply(this, arguments)); };\n"
    "    let first;\n"
    "    try { first = esb.transform('let a: number = 1;\\n', OPTS); }\n"
    "    finally { cp.spawn = spawn; }\n"
    "    await first;\n"
    "    await esb.transform('console.log(1 as number);\\n', OPTS);\n"
    "  } catch (_) { esb = null; }\n"
    "  for (const k of Object.keys(require.cache))\n"
    "    if (k.includes('esbuild')) delete require.cache[k];\n"
    "};\n"
    "ahead().then(() => {\n"
    "const [cwd, req] = m.exports.take(+ls, +ctl, +gone);\n"
    "const parts = req.toString('utf8').split('\\0');\n"
    "const argc = +parts[0], args = parts.slice(1, 1 + argc);\n"
    "for (const k of Object.keys(process.env)) delete process.env[k];\n"
    "for (const e of parts.slice(1 + argc, -1)) {\n"
    "  const i = e.indexOf('=');\n"
    "  if (i > 0) process.env[e.slice(0, i)] = e.slice(i + 1);\n"
    "}\n"
    "try { process.chdir(cwd); } catch (_) {}\n"
    "const [lang, src, js, errf] = args;\n"
    "const go = () => {\n"
    "  process.argv = [process.argv[0], js, errf];\n"
    "  vm.runInThisContext(wrapper, { filename: '[eval]' });\n"
    "};\n"
    "const end = (then) => {\n"
    "  if (!svc || svc.exitCode !== null || svc.signalCode !== null) return then();\n"
    "  svc.ref();\n"
    "  svc.once('exit', then);\n"
    "  svc.kill('SIGKILL');\n"
    "};\n"
    "if (lang !== 'ts') return end(go);\n"
    "const fail = (text) => {\n"
    "  text = text.replace(/\\n+$/, '');\n"
    "  process.stderr.write(text + '\\n');\n"
    "  const l = text.split('\\n');\n"
    "  const msg = (l.find(x => /ERROR|error/.test(x)) || '').replace(/^.*ERROR\\] */, '')\n"
    "    .replace(/^ */, '');\n"
    "  const at = text.match(/[^ \\n]+\\.ts:[0-9]+:[0-9]+/);\n"
    "  fs.writeFileSync(errf, JSON.stringify({ name: 'SyntaxError',\n"
    "    message: msg + (at ? ' (' + at[0] + ')' : ''), traceback: text }));\n"
    "  process.exit(1);\n"
    "};\n"
    "const cold = () => {\n"
    "  const r = cp.spawnSync('esbuild', [src, '--outfile=' + js, '--format=cjs',\n"
    "    '--platform=node', '--target=node18', '--log-level=error']);\n"
    "  if (r.status !== 0) fail(String(r.stderr || r.error) + String(r.stdout || ''));\n"
    "  go();\n"
    "};\n"
    "if (!esb) return end(cold);\n"
    "esb.transform(fs.readFileSync(src, 'utf8'), OPTS).then(\n"
    "  (r) => end(() => { fs.writeFileSync(js, r.code, { mode: 0o644 }); go(); }),\n"
    "  () => end(cold));\n"
    "});\n"
    "})();\n";

/* TypeScript: strip types with esbuild (errors carry file:line:col), then the JS path.
 * $1 = main.ts, $2 = main.js, $3 = error file; the JS wrapper arrives in $4. */
static const char ts_script[] =
    "if ! out=$(esbuild \"$1\" --outfile=\"$2\" --format=cjs --platform=node "
    "--target=node18 --log-level=error 2>&1); then\n"
    "  printf '%s\\n' \"$out\" >&2\n"
    "  msg=$(printf '%s\\n' \"$out\" | grep -m1 -E 'ERROR|error' | sed 's/^.*ERROR\\] *//; s/^ "
    "*//')\n"
    "  line=$(printf '%s\\n' \"$out\" | grep -m1 -oE '[^ ]+\\.ts:[0-9]+:[0-9]+')\n"
    "  node -e 'require(\"fs\").writeFileSync(process.argv[1], JSON.stringify({name: "
    "\"SyntaxError\", message: process.argv[2] + (process.argv[3] ? \" (\" + "
    "process.argv[3] + \")\" : \"\"), traceback: process.argv[4]}))' \"$3\" \"$msg\" "
    "\"$line\" \"$out\"\n"
    "  exit 1\n"
    "fi\n"
    "js=$2 errf=$3 w=$4\n"
    "shift 4\n"
    "exec node -e \"$w\" \"$js\" \"$errf\" \"$@\"\n";

void code_result_free(sl_code_result *r)
{
	cJSON_Delete(r->output);
	free(r->out);
	free(r->errout);
	free(r->error_name);
	free(r->error_message);
	free(r->error_traceback);
	memset(r, 0, sizeof(*r));
}

static int write_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, const char *data,
		      size_t len, sl_err *err)
{
	int fd;
	if (sbxfs_open_write(ctx, sb, path, 0600, &fd, err) < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			return sl_fail(err, e == ENOSPC || e == EDQUOT ? SL_EXHAUSTED : SL_INTERNAL,
				       e, "write %s in sandbox %s", path, sb->id);
		}
		off += w;
	}
	close(fd);
	return 0;
}

static char *read_fd_capped(int fd, size_t cap)
{
	size_t len = 0, sz = 4096;
	char *buf = malloc(sz);
	while (buf) {
		if (len + 1 >= sz) {
			if (sz >= cap + 1)
				break;
			char *nb = realloc(buf, sz * 2 > cap + 1 ? cap + 1 : sz * 2);
			if (!nb)
				break;
			buf = nb;
			sz = sz * 2 > cap + 1 ? cap + 1 : sz * 2;
		}
		ssize_t n = read(fd, buf + len, sz - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

static char *read_log(sl_ctx *ctx, const sl_sandbox *sb, const char *eid, const char *stream)
{
	int fd;
	sl_err e = {0};
	if (exec_open_log(ctx, sb->id, eid, stream, &fd, &e) < 0)
		return strdup("");
	char *s = read_fd_capped(fd, CODE_OUTPUT_MAX);
	struct stat st;
	size_t len = s ? strlen(s) : 0;
	if (s && fstat(fd, &st) == 0 && (uint64_t)st.st_size > len) {
		char *t = NULL;
		if (asprintf(&t, "%s\u2026[cut: %llu bytes]", s,
			     (unsigned long long)((uint64_t)st.st_size - len)) >= 0) {
			free(s);
			s = t;
		}
	}
	close(fd);
	return s ? s : strdup("");
}

/* output: the last non-empty stdout line, when it parses as JSON. */
static cJSON *last_line_json(const char *out)
{
	const char *end = out + strlen(out);
	while (end > out && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	const char *start = end;
	while (start > out && start[-1] != '\n')
		start--;
	if (start == end)
		return NULL;
	return cJSON_ParseWithLength(start, end - start);
}

static void set_error(sl_code_result *r, const char *name, const char *message,
		      const char *traceback)
{
	r->has_error = true;
	free(r->error_name);
	free(r->error_message);
	free(r->error_traceback);
	r->error_name = strdup(name);
	r->error_message = strdup(message ? message : "");
	r->error_traceback = traceback ? strdup(traceback) : NULL;
}

static void read_error_file(sl_ctx *ctx, const sl_sandbox *sb, const char *path, sl_code_result *r)
{
	int fd;
	uint64_t size;
	sl_err e = {0};
	if (sbxfs_open_read(ctx, sb, path, &fd, &size, &e) < 0)
		return;
	_cleanup_free_ char *s = read_fd_capped(fd, 1 << 20);
	close(fd);
	cJSON *o = s ? cJSON_Parse(s) : NULL;
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "message");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "traceback");
	if (cJSON_IsString(n))
		set_error(r, n->valuestring, cJSON_IsString(m) ? m->valuestring : "",
			  cJSON_IsString(t) ? t->valuestring : NULL);
	cJSON_Delete(o);
}

/* Start SPEC's command and wait for its end, into EX. */
static int exec_run(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec_spec *spec, sl_exec *ex,
		    sl_err *err)
{
	int r = exec_start(ctx, sb, spec, ex, err);
	if (r == 0 && ex->status == SL_EXEC_RUNNING) {
		char eid[32];
		snprintf(eid, sizeof(eid), "%s", ex->id);
		exec_free(ex);
		r = exec_wait(ctx, sb->id, eid, -1, ex, err);
	}
	return r;
}

/* An execution's record and logs, once its result is read: the result went back inline. */
static void exec_forget(sl_ctx *ctx, const sl_sandbox *sb, const char *eid)
{
	char run[PATH_MAX], edir[PATH_MAX + 64];
	if (!eid[0]) /* an empty one would name the execs dir itself */
		return;
	state_run_dir(&ctx->cfg, sb->id, run, sizeof(run));
	snprintf(edir, sizeof(edir), "%s/execs/%s", run, eid);
	fs_remove_tree(edir, NULL);
}

/* A file each warm call uses (the client, node's addon), renamed into place (a call may
 * be running the one it replaces). */
static int runner_file_write(sl_ctx *ctx, const sl_sandbox *sb, const char *dst, const char *data,
			     const char *end)
{
	sl_err e = {0};
	char tag[32], tmp[96];
	sl_new_id("", tag, sizeof(tag));
	snprintf(tmp, sizeof(tmp), RUNNER_DIR "/.coderun-%s", tag);
	if (sbxfs_write_file(ctx, sb, tmp, data, (size_t)(end - data), 0755, &e) < 0 ||
	    sbxfs_move(ctx, sb, tmp, dst, &e) < 0) {
		sbxfs_remove(ctx, sb, tmp, false, &e);
		return -1;
	}
	return 0;
}

/* A call through the sandbox's warm runner of its language (Python, or node for
 * TypeScript and JavaScript). 1: the code has not run (no runner: the sandbox's first
 * call, or one killed, or gone with a stop) and the caller runs it cold; the result then
 * asks for a runner (runner_wanted), which the caller starts once it has answered
 * (code_runner_start), off the call's path. */
static int run_warm(sl_ctx *ctx, const sl_sandbox *sb, const char *ext, const char *dir,
		    const char *src, const char *js, const char *errf, sl_exec_spec *spec,
		    sl_exec *ex, sl_err *err)
{
	char marker[128];
	snprintf(marker, sizeof(marker), "%s/norunner", dir);
	bool py = ext[0] == 'p';
	const char *pyv[] = {RUNNER_CLIENT, RUNNER_SOCK, marker, src, errf, NULL};
	const char *nodev[] = {RUNNER_CLIENT, RUNNER_NODE_SOCK, marker, ext, src, js, errf, NULL};
	_cleanup_free_ sl_fileinfo *fi = malloc(sizeof(*fi));
	sl_err e = {0};
	if (!fi || sbxfs_stat(ctx, sb, py ? RUNNER_CLIENT : RUNNER_ADDON, fi, &e) < 0)
		return 1;
	spec->argv = (char *const *)(py ? pyv : nodev);
	if (exec_run(ctx, sb, spec, ex, err) < 0)
		return -1;
	/* The client exits 255 with MARKER made only when no runner took the call (the
	 * code has not run). */
	if (ex->status == SL_EXEC_COMPLETED || ex->exit_code != 255 ||
	    sbxfs_stat(ctx, sb, marker, fi, &e) < 0)
		return 0;
	exec_forget(ctx, sb, ex->id);
	exec_free(ex);
	sbxfs_remove(ctx, sb, marker, false, &e);
	return 1;
}

int code_runner_start(sl_ctx *ctx, const sl_sandbox *sb, const char *language,
		      const char *const *env, sl_err *err)
{
	bool py = !language || !strcmp(language, "python");
	/* The client starts the runner 20 ms later, detached (init/coderun.c, --start): the
	 * execution ends at once, and the runner's start-up is not beside whatever the
	 * caller does right after its answer. Node's mode: the runner then starts a node
	 * (js_runner) waiting for the first call. */
	const char *pyv[] = {RUNNER_CLIENT, "--start", "20",	  "python3", "-c",
			     code_runner_py_text, RUNNER_SOCK, py_wrapper, NULL};
	const char *nodev[] = {RUNNER_CLIENT, "--start", "20", "python3",	  "-c",
			       code_runner_py_text, RUNNER_NODE_SOCK, js_wrapper, "node", "-e",
			       js_runner, RUNNER_ADDON, NULL};
	_cleanup_free_ sl_fileinfo *fi = malloc(sizeof(*fi));
	sl_err e = {0};
	if (!fi)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "code runner of %s", sb->id);
	if ((sbxfs_stat(ctx, sb, RUNNER_CLIENT, fi, &e) < 0 &&
	     runner_file_write(ctx, sb, RUNNER_CLIENT, code_coderun_bin, code_coderun_bin_end) <
		 0) ||
	    (!py && sbxfs_stat(ctx, sb, RUNNER_ADDON, fi, &e) < 0 &&
	     runner_file_write(ctx, sb, RUNNER_ADDON, code_coderun_node, code_coderun_node_end) <
		 0))
		return sl_fail(err, SL_INTERNAL, 0, "code runner of %s: its files cannot be written",
			       sb->id);
	sl_exec_spec spec = {.argv = (char *const *)(py ? pyv : nodev),
			     .env = env,
			     .timeout_ms = CODE_FIRST_WAIT_MS,
			     .wait_ms = CODE_FIRST_WAIT_MS};
	sl_exec ex;
	if (exec_run(ctx, sb, &spec, &ex, err) < 0)
		return -1;
	exec_forget(ctx, sb, ex.id);
	exec_free(&ex);
	return 0;
}

static void result_from_exec(sl_ctx *ctx, const sl_sandbox *sb, const sl_exec *ex,
			     uint64_t timeout_ms, const char *errf, sl_code_result *out)
{
	snprintf(out->exec_id, sizeof(out->exec_id), "%s", ex->id);
	out->out = read_log(ctx, sb, ex->id, "stdout");
	out->errout = read_log(ctx, sb, ex->id, "stderr");
	out->duration_ms = ex->finished_ms - ex->started_ms;
	out->exit_code = ex->exit_code;
	out->output = last_line_json(out->out);
	if (ex->status == SL_EXEC_TIMEOUT) {
		char msg[96];
		snprintf(msg, sizeof(msg), "the code ran longer than %llu ms and was stopped",
			 (unsigned long long)timeout_ms);
		set_error(out, "TimeoutError", msg, NULL);
	} else if (ex->oom_killed) {
		set_error(out, "OutOfMemoryError",
			  "the code was killed by the OOM killer: the sandbox's memory limit was "
			  "reached",
			  NULL);
	} else {
		/* The wrappers write it only on their way to exit 1: a snippet that ended
		 * well has none to look for. */
		if (ex->status != SL_EXEC_COMPLETED || ex->exit_code != 0)
			read_error_file(ctx, sb, errf, out);
		if (!out->has_error && ex->status != SL_EXEC_COMPLETED) {
			char msg[96];
			if (ex->signal)
				snprintf(msg, sizeof(msg),
					 "the interpreter was killed by signal %d", ex->signal);
			else
				snprintf(msg, sizeof(msg), "the code exited with status %d",
					 ex->exit_code);
			set_error(out, ex->signal ? "Killed" : "ExitError", msg, NULL);
		}
	}
	out->success = ex->status == SL_EXEC_COMPLETED && !out->has_error;
}

int code_run(sl_ctx *ctx, const sl_sandbox *sb, const char *language, const char *code, size_t len,
	     const char *const *env, uint64_t timeout_ms, sl_code_result *out, sl_err *err)
{
	memset(out, 0, sizeof(*out));
	const char *ext;
	if (!language || !strcmp(language, "python"))
		ext = "py";
	else if (!strcmp(language, "typescript") || !strcmp(language, "ts"))
		ext = "ts";
	else if (!strcmp(language, "javascript") || !strcmp(language, "js"))
		ext = "js";
	else if (!strcmp(language, "bash") || !strcmp(language, "sh"))
		ext = "sh";
	else
		return sl_fail(
		    err, SL_INVALID, 0,
		    "language: \"%s\" is not one of python, typescript, javascript, bash",
		    language);
	char tag[32], dir[96], src[128], js[128], errf[128];
	sl_new_id("", tag, sizeof(tag));
	snprintf(dir, sizeof(dir), CODE_DIR "/%s", tag);
	snprintf(src, sizeof(src), "%s/main.%s", dir, ext);
	snprintf(js, sizeof(js), "%s/main.js", dir);
	snprintf(errf, sizeof(errf), "%s/error.json", dir);
	/* Its dir is made with it (sbxfs_open_write makes the parents, as the sandbox's
	 * user): one look-up of the sandbox's root and user, not two. */
	if (write_file(ctx, sb, src, code, len, err) < 0)
		return -1;
	const char *pyv[] = {"python3", "-c", py_wrapper, src, errf, NULL};
	const char *jsv[] = {"node", "-e", js_wrapper, src, errf, NULL};
	const char *tsv[] = {"/bin/sh", "-c", ts_script,  "sandlot-ts", src,
			     js,	errf, js_wrapper, NULL};
	/* bash where the image has it (busybox has only sh) */
	const char *shv[] = {"/bin/sh", "-c",
			     "command -v bash >/dev/null && exec bash \"$0\" || exec sh \"$0\"",
			     src, NULL};
	const char *const *argv = ext[0] == 'p'	  ? pyv
				  : ext[0] == 't' ? tsv
				  : ext[0] == 'j' ? jsv
						  : shv;
	/* A snippet that ends within the first wait_ms is reported on init's own
	 * connection; a longer one is waited for. */
	sl_exec_spec spec = {.argv = (char *const *)argv,
			     .env = env,
			     .timeout_ms = timeout_ms ? timeout_ms : CODE_DEFAULT_TIMEOUT_MS,
			     .wait_ms = CODE_FIRST_WAIT_MS};
	sl_exec ex;
	int r = ext[0] != 's' && !ctx->cfg.code_runner_off
		    ? run_warm(ctx, sb, ext, dir, src, js, errf, &spec, &ex, err)
		    : 2;
	if (r >= 1) {
		out->runner_wanted = r == 1;
		spec.argv = (char *const *)argv;
		r = exec_run(ctx, sb, &spec, &ex, err);
	}
	if (r < 0) {
		sl_err e2 = {0};
		sbxfs_remove(ctx, sb, dir, true, &e2);
		return -1;
	}
	result_from_exec(ctx, sb, &ex, spec.timeout_ms, errf, out);
	exec_free(&ex);
	exec_forget(ctx, sb, out->exec_id);
	sl_err e2 = {0};
	sbxfs_remove(ctx, sb, dir, true, &e2);
	return 0;
}

cJSON *code_result_to_json(const sl_code_result *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "success", r->success);
	if (r->output)
		cJSON_AddItemToObject(o, "output", cJSON_Duplicate(r->output, 1));
	cJSON_AddStringToObject(o, "stdout", r->out ? r->out : "");
	cJSON_AddStringToObject(o, "stderr", r->errout ? r->errout : "");
	cJSON_AddNumberToObject(o, "durationMs", (double)r->duration_ms);
	cJSON_AddNumberToObject(o, "exitCode", r->exit_code);
	if (r->has_error) {
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "name", r->error_name);
		cJSON_AddStringToObject(e, "message", r->error_message);
		if (r->error_traceback)
			cJSON_AddStringToObject(e, "traceback", r->error_traceback);
	}
	return o;
}

/* test_code.c — executeCode (`sandlot code`, the runtime's code_run) on the default image:
 * output and JSON output, errors with name/message/traceback, TypeScript types and
 * syntax errors, timeouts, OOM, hostile code text, env/cwd/user, and clean state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common.h"

static char *SBX; /* one default-image sandbox for the suite */
static long warm_runner(const char *sbx);
static long node_runner(const char *sbx);

static int setup(void **state)
{
	e2e_group_setup(state);
	char *tar = e2e_build_path("images/default.tar.zst");
	free(e2e_sandlot_ok("image", "import", "default", tar, NULL));
	free(tar);
	SBX = e2e_sandlot_ok("create", "--name", "coder", "-e", "FROM_SANDBOX=yes", NULL);
	/* Python's warm runner starts after the first call and lives with the sandbox:
	 * started here, it is part of the host every test's leak check begins from. */
	warm_runner(SBX);
	node_runner(SBX); /* and TypeScript's */
	return 0;
}

static int teardown(void **state)
{
	e2e_result r;
	e2e_sandlot(&r, NULL, 0, "rm", "-f", "coder", NULL);
	e2e_result_free(&r);
	free(SBX);
	return e2e_group_teardown(state);
}

/* Run CODE in LANG through the CLI (code via stdin, never on a command line); the result
 * JSON (caller frees). */
static cJSON *code(const char *sbx, const char *lang, const char *src, const char *extra1,
		   const char *extra2)
{
	e2e_result r;
	e2e_sandlot(&r, src, strlen(src), "code", sbx, "--language", lang, "--format", "json",
		    extra1 ? extra1 : "-", extra1 ? extra2 : NULL, extra1 ? "-" : NULL, NULL);
	cJSON *o = cJSON_Parse(r.out);
	if (!o)
		fail_msg("sandlot code gave no JSON (status %d): %s %s", r.status, r.out, r.err);
	e2e_result_free(&r);
	return o;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool ok(const cJSON *o)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "success"));
}

static const cJSON *error(const cJSON *o)
{
	return cJSON_GetObjectItemCaseSensitive(o, "error");
}

static void test_python_output_and_json(void **state)
{
	cJSON *o = code(SBX, "python", "print('hello')\nprint('{\"a\": [1, 2]}')\n", NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "hello\n{\"a\": [1, 2]}\n");
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "output");
	assert_non_null(out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out, "a")), 2);
	assert_null(error(o));
	cJSON_Delete(o);
	/* Not JSON on the last line: no output. */
	o = code(SBX, "python", "print('{not json')\n", NULL, NULL);
	assert_true(ok(o));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "output"));
	cJSON_Delete(o);
}

static void test_python_exception(void **state)
{
	cJSON *o =
	    code(SBX, "python", "def f():\n    raise KeyError('missing-key')\nf()\n", NULL, NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "KeyError");
	assert_true(e2e_contains(str(error(o), "message"), "missing-key"));
	const char *tb = str(error(o), "traceback");
	assert_non_null(tb);
	assert_true(e2e_contains(tb, "Traceback"));
	assert_true(e2e_contains(tb, "line 2, in f"));
	cJSON_Delete(o);
}

static void test_typescript_types_and_errors(void **state)
{
	cJSON *o = code(SBX, "typescript",
			"interface P { n: number; s?: string }\n"
			"function first<T>(xs: T[]): T { return xs[0]; }\n"
			"const p: P = { n: first<number>([41, 2]) + 1 };\n"
			"console.log(JSON.stringify(p));\n",
			NULL, NULL);
	assert_true(ok(o));
	assert_int_equal(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "output"), "n")
		->valueint,
	    42);
	cJSON_Delete(o);
	o = code(SBX, "typescript", "const a: number = 1;\nconst b = (a + ;\n", NULL, NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "SyntaxError");
	assert_true(e2e_contains(str(error(o), "message"), ":2:"));
	cJSON_Delete(o);
	o = code(SBX, "typescript",
		 "class E extends Error { name = 'MyError' }\nthrow new E('boom');\n", NULL, NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "MyError");
	assert_string_equal(str(error(o), "message"), "boom");
	assert_true(e2e_contains(str(error(o), "traceback"), "boom"));
	cJSON_Delete(o);
	o = code(SBX, "javascript", "console.log(1 + 1)\n", NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "2\n");
	cJSON_Delete(o);
}

static void test_timeout(void **state)
{
	int64_t t0 = e2e_now_ms();
	cJSON *o = code(SBX, "python", "import time\ntime.sleep(30)\n", "--timeout", "1s");
	assert_true(e2e_now_ms() - t0 < 10000);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "TimeoutError");
	cJSON_Delete(o);
	o = code(SBX, "typescript", "while (true) {}\n", "--timeout", "1500ms");
	assert_string_equal(str(error(o), "name"), "TimeoutError");
	cJSON_Delete(o);
}

static void test_oom(void **state)
{
	char *small = e2e_sandlot_ok("create", "--memory", "64Mi", NULL);
	cJSON *o =
	    code(small, "python", "x = bytearray(512 * 1024 * 1024)\nprint(len(x))\n", NULL, NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "OutOfMemoryError");
	cJSON_Delete(o);
	/* The sandbox still runs code afterwards. */
	o = code(small, "python", "print(7)\n", NULL, NULL);
	assert_true(ok(o));
	cJSON_Delete(o);
	free(e2e_sandlot_ok("rm", small, NULL));
	free(small);
}

static void test_hostile_text_verbatim(void **state)
{
	const char *py = "print('q\"uo\\'te $(rm -rf /) `id` ${HOME} \\\\n ünïcødé ✓')\n";
	cJSON *o = code(SBX, "python", py, NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "q\"uo'te $(rm -rf /) `id` ${HOME} \\n ünïcødé ✓\n");
	cJSON_Delete(o);
	const char *ts = "const s: string = `$(touch /tmp/pwned) \\`x\\``;\nconsole.log(s)\n";
	o = code(SBX, "typescript", ts, NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "$(touch /tmp/pwned) `x`\n");
	cJSON_Delete(o);
	char *check =
	    e2e_sandlot_ok("exec", SBX, "--", "sh", "-c", "ls /tmp/pwned 2>&1 || true", NULL);
	assert_true(e2e_contains(check, "No such file"));
	free(check);
	/* A megabyte of code. */
	size_t n = 1 << 20;
	char *big = malloc(n + 64);
	strcpy(big, "s = 0\n");
	size_t len = strlen(big);
	while (len + 16 < n)
		len += sprintf(big + len, "s += 1\n");
	strcpy(big + len, "print(s)\n");
	o = code(SBX, "python", big, NULL, NULL);
	assert_true(ok(o));
	assert_true(atoi(str(o, "stdout")) > 100000);
	cJSON_Delete(o);
	free(big);
}

static void test_env_cwd_user_and_clean_state(void **state)
{
	cJSON *o =
	    code(SBX, "python",
		 "import os\nprint(os.getuid(), os.getcwd(), os.environ.get('FROM_SANDBOX'), "
		 "os.environ.get('PER_CALL'))\n",
		 "-e", "PER_CALL=given");
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "1000 /home/user yes given\n");
	cJSON_Delete(o);
	o = code(SBX, "python", "leak = 41\nprint(leak)\n", NULL, NULL);
	assert_true(ok(o));
	cJSON_Delete(o);
	o = code(SBX, "python", "print(leak)\n", NULL, NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "NameError");
	cJSON_Delete(o);
	/* An interpreter that dies hard does not break the next call. */
	o = code(SBX, "python", "import os\nos.kill(os.getpid(), 9)\n", NULL, NULL);
	assert_false(ok(o));
	cJSON_Delete(o);
	o = code(SBX, "typescript", "process.abort()\n", NULL, NULL);
	assert_false(ok(o));
	cJSON_Delete(o);
	o = code(SBX, "python", "print('still fine')\n", NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "still fine\n");
	cJSON_Delete(o);
	/* The snippet's dir is the sandbox user's (it writes beside itself), no earlier
	 * call's is left, and a file it writes where the wrapper records an uncaught error
	 * is not taken for one: a snippet that ended well succeeded. */
	o = code(SBX, "python",
		 "import os, json\nd = os.path.dirname(__file__)\nst = os.stat(d)\n"
		 "print(st.st_uid, oct(st.st_mode & 0o777), os.listdir(os.path.dirname(d)) == "
		 "[os.path.basename(d)])\n"
		 "json.dump({'name': 'Fake', 'message': 'not raised'}, "
		 "open(os.path.join(d, 'error.json'), 'w'))\n",
		 NULL, NULL);
	assert_true(ok(o));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "error"));
	assert_string_equal(str(o, "stdout"), "1000 0o755 True\n");
	cJSON_Delete(o);
}

/* One number printed by a call in LANG (a pid, a count). */
static long lang_num(const char *sbx, const char *lang, const char *src)
{
	cJSON *o = code(sbx, lang, src, NULL, NULL);
	if (!ok(o))
		fail_msg("%s call failed: %s %s", lang, str(o, "stdout"), str(o, "stderr"));
	long n = atol(str(o, "stdout"));
	cJSON_Delete(o);
	return n;
}

static long py_num(const char *sbx, const char *src)
{
	return lang_num(sbx, "python", src);
}

static long ts_num(const char *sbx, const char *src)
{
	return lang_num(sbx, "typescript", src);
}

/* The pid of SBX's warm runner of LANG, once it serves calls (a call's parent, SRC
 * prints it): it starts after a sandbox's first call (or the first after it was gone),
 * and calls before it listens run cold (their parent is init, pid 1). */
static long runner_of(const char *sbx, const char *lang, const char *src)
{
	int64_t t0 = e2e_now_ms();
	long ppid;
	while ((ppid = lang_num(sbx, lang, src)) <= 1 && e2e_now_ms() - t0 < 10000)
		usleep(100 * 1000);
	return ppid;
}

static long warm_runner(const char *sbx)
{
	return runner_of(sbx, "python", "import os\nprint(os.getppid())\n");
}

/* TypeScript's: the node runner (the zygote is a call's parent). */
static long node_runner(const char *sbx)
{
	return runner_of(sbx, "typescript", "console.log(process.ppid as number)\n");
}

/* Calls are forked from one warm runner (the same parent, not pid 1), and each starts
 * clean: a global, a monkeypatched module, sys.modules, os.environ, the cwd and the
 * signal handlers set by one call are not in the next; files are shared, as the
 * sandbox's filesystem is. */
static void test_python_warm_calls_start_clean(void **state)
{
	long runner = warm_runner(SBX);
	assert_true(runner > 1);
	/* Forked, not a new interpreter: what the runner imported is there (`select` is
	 * nothing a fresh python3 loads), and the locale it was given is the same. */
	cJSON *w =
	    code(SBX, "python",
		 "import os, sys\nprint('select' in sys.modules, os.environ.get('LC_CTYPE'))\n",
		 NULL, NULL);
	assert_true(ok(w));
	assert_string_equal(str(w, "stdout"), "True C.UTF-8\n");
	cJSON_Delete(w);
	assert_int_equal(py_num(SBX, "import os\nprint(os.getppid())\n"), runner);
	cJSON *o = code(SBX, "python",
			"import json, os, sys, signal, types\n"
			"marker = 'set by call 1'\n"
			"json.dumps = lambda *a, **k: 'patched'\n"
			"sys.modules['planted'] = types.ModuleType('planted')\n"
			"os.environ['PLANTED'] = '1'\n"
			"signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
			"os.chdir('/')\n"
			"open('/tmp/shared-by-call-1', 'w').write('kept')\n"
			"print(json.dumps([1]))\n",
			NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "patched\n");
	cJSON_Delete(o);
	o = code(
	    SBX, "python",
	    "import json, os, sys, signal\n"
	    "print(json.dumps([1]), 'marker' in globals(), 'planted' in sys.modules,\n"
	    "      os.environ.get('PLANTED'), signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,\n"
	    "      os.getcwd(), open('/tmp/shared-by-call-1').read())\n",
	    NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "[1] False False None True /home/user kept\n");
	cJSON_Delete(o);
}

/* Exit codes, stderr and the error shapes are those of a fresh interpreter. */
static void test_python_exit_codes_and_stderr(void **state)
{
	cJSON *o = code(SBX, "python",
			"import sys\nprint('to err', file=sys.stderr)\nsys.exit(3)\n", NULL, NULL);
	assert_false(ok(o));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 3);
	assert_string_equal(str(o, "stderr"), "to err\n");
	assert_string_equal(str(error(o), "name"), "ExitError");
	cJSON_Delete(o);
	o = code(SBX, "python", "import sys\nsys.exit('a message')\n", NULL, NULL);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 1);
	assert_string_equal(str(o, "stderr"), "a message\n");
	cJSON_Delete(o);
	o = code(SBX, "python", "import os, sys\nprint('unflushed', end='')\nos._exit(5)\n", NULL,
		 NULL);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 5);
	cJSON_Delete(o);
	/* atexit handlers and non-daemon threads run at the end, as in an interpreter. */
	o = code(
	    SBX, "python",
	    "import atexit, threading, time\n"
	    "atexit.register(lambda: print('atexit ran'))\n"
	    "threading.Thread(target=lambda: (time.sleep(0.2), print('thread ran'))).start()\n",
	    NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "thread ran\natexit ran\n");
	cJSON_Delete(o);
	o = code(SBX, "python", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", NULL,
		 NULL);
	assert_false(ok(o));
	assert_string_equal(str(error(o), "name"), "Killed");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 128 + 15);
	cJSON_Delete(o);
	/* A variable the interpreter reads at start-up, given per call, is honoured. */
	o = code(SBX, "python", "import sys\nprint(sys.flags.dont_write_bytecode)\n", "-e",
		 "PYTHONDONTWRITEBYTECODE=1");
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "1\n");
	cJSON_Delete(o);
}

/* A timed-out call's process group is killed, not only the call's execution. */
static void test_python_timeout_kills_the_child(void **state)
{
	cJSON *o = code(SBX, "python",
			"import os, subprocess, time\n"
			"p = subprocess.Popen(['sleep', '60'])\n"
			"open('/tmp/timed-out-pids', 'w').write('%d %d' % (os.getpid(), p.pid))\n"
			"time.sleep(60)\n",
			"--timeout", "1s");
	assert_string_equal(str(error(o), "name"), "TimeoutError");
	cJSON_Delete(o);
	int64_t t0 = e2e_now_ms();
	char *left = NULL;
	do {
		free(left);
		left =
		    e2e_sandlot_ok("exec", SBX, "--", "sh", "-c",
				   "for p in $(cat /tmp/timed-out-pids); do "
				   "[ -d /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status && "
				   "echo alive $p; done; true",
				   NULL);
	} while (left[0] && e2e_now_ms() - t0 < 5000);
	assert_string_equal(left, "");
	free(left);
}

/* A runner starts beside a sandbox's first call; a killed one is replaced on the next call; so is
 * one gone with a stop, and a paused sandbox resumes with its runner. */
static void test_python_runner_replaced(void **state)
{
	char *sbx = e2e_sandlot_ok("create", NULL);
	/* A sandbox's first call runs cold (init's child); its runner is started after it;
	 * calls before that runner listens run cold too. */
	assert_int_equal(py_num(sbx, "import os\nprint(os.getppid())\n"), 1);
	long runner = warm_runner(sbx);
	assert_true(runner > 1);
	char *pid = e2e_printf("%ld", runner);
	free(e2e_sandlot_ok("exec", sbx, "--", "kill", "-9", pid, NULL));
	free(pid);
	long second = warm_runner(sbx);
	assert_true(second > 1);
	assert_int_not_equal(second, runner);
	free(e2e_sandlot_ok("pause", sbx, NULL));
	free(e2e_sandlot_ok("resume", sbx, NULL));
	assert_int_equal(py_num(sbx, "import os\nprint(os.getppid())\n"), second);
	free(e2e_sandlot_ok("stop", sbx, NULL));
	free(e2e_sandlot_ok("start", sbx, NULL));
	assert_true(warm_runner(sbx) > 1);
	/* One runner (a zygote, and its one child waiting for the next call), however many
	 * calls and restarts. */
	char *list = e2e_sandlot_ok("exec", sbx, "--", "sh", "-c",
				    "ps -eo ppid,args | grep '[c]ode_runner' | awk "
				    "'{print $1}' | sort | uniq -c | awk '{print $1}' | sort | tr "
				    "'\\n' ' '",
				    NULL);
	if (strcmp(list, "1") != 0) /* the waiting child may be between calls' forks */
		assert_string_equal(list, "1 1");
	free(list);
	free(e2e_sandlot_ok("rm", "-f", sbx, NULL));
	free(sbx);
}

/* TypeScript and JavaScript calls go through the warm node runner (a node started ahead
 * per call), and each starts clean: a global, a patched built-in module, the require
 * cache, an exit listener, a signal listener, process.env and the cwd set by one call
 * are not in the next; the call's env, cwd and user are the cold path's. */
static void test_node_warm_calls_start_clean(void **state)
{
	long runner = node_runner(SBX);
	assert_true(runner > 1);
	assert_int_equal(ts_num(SBX, "console.log(process.ppid)\n"), runner);
	cJSON *o = code(SBX, "javascript", "console.log(process.ppid)\n", NULL, NULL);
	assert_int_equal(atol(str(o, "stdout")), runner);
	cJSON_Delete(o);
	o = code(SBX, "typescript",
		 "const fs = require('fs');\n"
		 "(globalThis as any).marker = 'set by call 1';\n"
		 "fs.readFileSync = (() => 'patched') as any;\n"
		 "require.cache['/planted.js'] = { exports: 1 } as any;\n"
		 "process.on('exit', () => { console.log('exit listener'); });\n"
		 "process.on('SIGTERM', () => {});\n"
		 "process.env.PLANTED = '1';\n"
		 "process.chdir('/');\n"
		 "fs.writeFileSync('/tmp/shared-by-ts-call-1', 'kept');\n"
		 "console.log(fs.readFileSync('/etc/hostname'));\n",
		 NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "patched\nexit listener\n");
	cJSON_Delete(o);
	o = code(SBX, "typescript",
		 "const fs = require('fs');\n"
		 "console.log([typeof (globalThis as any).marker, "
		 "fs.readFileSync('/tmp/shared-by-ts-call-1', 'utf8'), "
		 "'/planted.js' in require.cache, process.listenerCount('exit'), "
		 "process.listenerCount('SIGTERM'), String(process.env.PLANTED), process.cwd(), "
		 "process.getuid(), String(process.env.FROM_SANDBOX), "
		 "String(process.env.PER_CALL)].join(' '))\n",
		 "-e", "PER_CALL=given");
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"),
			    "undefined kept false 0 0 undefined /home/user 1000 yes given\n");
	cJSON_Delete(o);
	/* Errors, exit codes, stdin and a signal are the cold path's. */
	o = code(SBX, "typescript", "const a: number = 1;\nconst b = (a + ;\n", NULL, NULL);
	assert_string_equal(str(error(o), "name"), "SyntaxError");
	assert_true(e2e_contains(str(error(o), "message"), "main.ts:2:15)"));
	assert_true(e2e_contains(str(o, "stderr"), "Unexpected"));
	cJSON_Delete(o);
	o = code(SBX, "javascript", "console.error('to err'); process.exit(3)\n", NULL, NULL);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 3);
	assert_string_equal(str(o, "stderr"), "to err\n");
	assert_string_equal(str(error(o), "name"), "ExitError");
	cJSON_Delete(o);
	o = code(SBX, "typescript", "Promise.reject(new TypeError('nope'))\n", NULL, NULL);
	assert_string_equal(str(error(o), "name"), "TypeError");
	assert_string_equal(str(error(o), "message"), "nope");
	cJSON_Delete(o);
	o = code(SBX, "javascript", "process.kill(process.pid, 'SIGTERM')\n", NULL, NULL);
	assert_string_equal(str(error(o), "name"), "Killed");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "exitCode")->valueint, 128 + 15);
	cJSON_Delete(o);
	o = code(SBX, "javascript",
		 "let s = ''; process.stdin.on('data', d => s += d)"
		 ".on('end', () => console.log(JSON.stringify(s)))\n",
		 NULL, NULL);
	assert_true(ok(o));
	assert_string_equal(str(o, "stdout"), "\"\"\n");
	cJSON_Delete(o);
	o = code(SBX, "typescript", "setTimeout(() => {}, 60000)\n", "--timeout", "1s");
	assert_string_equal(str(error(o), "name"), "TimeoutError");
	cJSON_Delete(o);
	assert_int_equal(ts_num(SBX, "console.log(process.ppid)\n"), runner);
}

/* A killed node runner: the next call runs cold and starts it again. */
static void test_node_runner_replaced(void **state)
{
	char *sbx = e2e_sandlot_ok("create", NULL);
	assert_int_equal(ts_num(sbx, "console.log(process.ppid)\n"), 1);
	long runner = node_runner(sbx);
	assert_true(runner > 1);
	char *pid = e2e_printf("%ld", runner);
	free(e2e_sandlot_ok("exec", sbx, "--", "kill", "-9", pid, NULL));
	free(pid);
	/* Its waiting node ends with it; the next call runs cold (init's child). */
	int64_t t0 = e2e_now_ms();
	char *left = NULL;
	do {
		free(left);
		left = e2e_sandlot_ok("exec", sbx, "--", "sh", "-c",
				      "ps -eo args | grep -c '^node -e' || true", NULL);
	} while (atoi(left) && e2e_now_ms() - t0 < 5000);
	assert_int_equal(atoi(left), 0);
	free(left);
	assert_int_equal(ts_num(sbx, "console.log(process.ppid)\n"), 1);
	long second = node_runner(sbx);
	assert_true(second > 1);
	assert_int_not_equal(second, runner);
	free(e2e_sandlot_ok("rm", "-f", sbx, NULL));
	free(sbx);
}

/* ---- the E2B code interpreter's REPL, through the façade of a daemon ---- */

/* The stdout event of an /execute's NDJSON BODY that holds NEEDLE, or NULL. */
static cJSON *ndjson_event(const char *body, const char *type, const char *needle)
{
	for (const char *l = body; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		cJSON *o = cJSON_ParseWithLength(l, n);
		const char *t = str(o, "type"), *text = str(o, "text");
		if (t && !strcmp(t, type) && text && strstr(text, needle))
			return o;
		cJSON_Delete(o);
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* POST /execute CODE to the E2B sandbox plane of D; the body (NDJSON), status 200. The
 * daemon's peak resident growth over the call, KiB, in *grew. */
static char *e2b_execute(const e2e_daemon *d, const char *sid, const char *tok, const char *code,
			 long *grew)
{
	char *h1 = e2e_printf("E2b-Sandbox-Id: %s", sid),
	     *h2 = e2e_printf("X-Access-Token: %s", tok);
	const char *headers[] = {h1, h2, NULL};
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "code", code);
	char *body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	e2e_proc_hwm_reset(d->pid);
	long before = e2e_proc_kib(d->pid, "VmRSS:");
	e2e_resp r;
	e2e_http_q(&r, &(e2e_req){.method = "POST",
				  .path = "/execute",
				  .body = body,
				  .len = strlen(body),
				  .d = d,
				  .headers = headers,
				  .timeout_ms = 300000,
				  .no_capture = true});
	*grew = e2e_proc_kib(d->pid, "VmHWM:") - before;
	if (r.status != 200)
		fail_msg("/execute: status %ld: %.300s", r.status, r.body);
	char *out = r.body;
	r.body = NULL;
	e2e_resp_free(&r);
	free(body);
	free(h1);
	free(h2);
	return out;
}

/* Hardening fix 6: a REPL's output line was read whole into the daemon (a 700 MiB print
 * cost it about three times that). The REPL now cuts an event's text, and the daemon any
 * longer line (raw writes to the protocol's fd), each with a "…[cut: N bytes]" marker;
 * the daemon's peak resident size grows by less than 64 MiB. */
static void test_e2b_interpreter_cuts_long_lines(void **state)
{
	char *sock = e2e_printf("%s/interp.sock", e2e_root());
	e2e_daemon d;
	/* Room for the cells' 700 MiB strings (several copies before the fix), and a
	 * 1 GiB log space (a quarter, at most). */
	setenv("SANDLOT_DEFAULT_MEMORY", "6Gi", 1);
	e2e_daemon_start(&d, sock, false, NULL);
	unsetenv("SANDLOT_DEFAULT_MEMORY");
	e2e_resp r;
	const char *create = "{\"templateID\":\"code-interpreter-v1\"}";
	e2e_http_q(&r, &(e2e_req){.method = "POST",
				  .path = "/sandboxes",
				  .body = create,
				  .len = strlen(create),
				  .d = &d,
				  .no_capture = true});
	assert_int_equal(r.status, 201);
	char *sid = strdup(str(r.json, "sandboxID")), *tok = strdup(str(r.json, "envdAccessToken"));
	e2e_resp_free(&r);

	long grew;
	char *out = e2b_execute(&d, sid, tok, "print('x' * (700 << 20))", &grew);
	print_message("700 MiB print: daemon peak RSS +%ld KiB\n", grew);
	cJSON *ev = ndjson_event(out, "stdout", "\u2026[cut: ");
	if (!ev)
		fail_msg("no stdout event with the marker: %.300s", out);
	const char *text = str(ev, "text");
	char *want = e2e_printf("\u2026[cut: %d bytes]\n", (700 << 20) - (256 << 10));
	assert_int_equal(strspn(text, "x"), 256 << 10);
	assert_string_equal(text + (256 << 10), want);
	assert_true(grew < E2E_RSS_BOUND_KIB);
	cJSON_Delete(ev);
	free(want);
	free(out);

	/* Around the REPL: one 700 MiB line straight onto the protocol, tagged as the REPL
	 * tags this request's events. */
	out = e2b_execute(
	    &d, sid, tok,
	    "import __main__ as m\n"
	    "m._proto.write('{\"type\": \"stderr\", \"text\": \"' + 'y' * (700 << 20) + "
	    "'\", \"_req\": \"' + m._cur[0] + '\"}\\n')\nm._proto.flush()\n"
	    "print('after')\n",
	    &grew);
	print_message("700 MiB protocol line: daemon peak RSS +%ld KiB\n", grew);
	ev = ndjson_event(out, "stderr", "\u2026[cut: ");
	if (!ev)
		fail_msg("no stderr event with the marker: %.300s", out);
	assert_true(grew < E2E_RSS_BOUND_KIB);
	cJSON_Delete(ev);
	ev = ndjson_event(out, "stdout", "after\n");
	assert_non_null(ev); /* the protocol goes on */
	cJSON_Delete(ev);
	free(out);

	char *path = e2e_printf("/sandboxes/%s", sid);
	e2e_http_q(&r, &(e2e_req){.method = "DELETE", .path = path, .d = &d, .no_capture = true});
	assert_int_equal(r.status, 204);
	e2e_resp_free(&r);
	e2e_daemon_stop(&d);
	free(path);
	free(sid);
	free(tok);
	free(sock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_python_output_and_json),
	    E2E_TEST(test_python_exception),
	    E2E_TEST(test_typescript_types_and_errors),
	    E2E_TEST(test_timeout),
	    E2E_TEST(test_oom),
	    E2E_TEST(test_hostile_text_verbatim),
	    E2E_TEST(test_env_cwd_user_and_clean_state),
	    E2E_TEST(test_e2b_interpreter_cuts_long_lines),
	    E2E_TEST(test_python_warm_calls_start_clean),
	    E2E_TEST(test_python_exit_codes_and_stderr),
	    E2E_TEST(test_python_timeout_kills_the_child),
	    E2E_TEST(test_python_runner_replaced),
	    E2E_TEST(test_node_warm_calls_start_clean),
	    E2E_TEST(test_node_runner_replaced),
	};
	e2e_apply_filter();
	return cmocka_run_group_tests(tests, setup, teardown);
}

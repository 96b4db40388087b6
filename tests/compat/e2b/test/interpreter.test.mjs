// @e2b/code-interpreter: stateful contexts (Python, JavaScript, TypeScript), results,
// errors, output, execution counts, contexts that do not share state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker } from '../lib.mjs';
import { Sandbox } from '@e2b/code-interpreter';

const t = tracker();
let sbx;
before(async () => {
	sbx = t.add(await Sandbox.create());
});
after(() => t.cleanup());

test('state persists across runCode calls in the default context', async () => {
	const a = await sbx.runCode('x = 1');
	assert.equal(a.error, undefined);
	assert.equal(a.text, undefined);
	const b = await sbx.runCode('x + 1');
	assert.equal(b.text, '2');
	assert.ok(b.results[0].isMainResult);
	await sbx.runCode('import math\ndef area(r):\n    return math.pi * r * r');
	assert.equal((await sbx.runCode('round(area(2), 3)')).text, '12.566');
	assert.ok(b.executionCount >= 2);
});

test('stdout and stderr arrive as logs, streamed to callbacks', async () => {
	const seen = [];
	const e = await sbx.runCode('import sys\nprint("out")\nprint("err", file=sys.stderr)\n40 + 2', {
		onStdout: (m) => seen.push(m.line),
	});
	assert.deepEqual(e.logs.stdout, ['out\n']);
	assert.deepEqual(e.logs.stderr, ['err\n']);
	assert.equal(e.text, '42');
	assert.deepEqual(seen, ['out\n']);
	// Output of child processes and of the fds themselves is caught too, before the end.
	const c = await sbx.runCode('import subprocess, os\nsubprocess.run("echo from-child", shell=True)\nos.write(1, b"raw\\n")\nNone');
	assert.equal(c.logs.stdout.join(''), 'from-child\nraw\n');
	// A cell reading stdin gets EOF, not the next request.
	assert.equal((await sbx.runCode('import sys\nsys.stdin.read()')).text, '');
});

test('an exception gives its name, value and traceback', async () => {
	const e = await sbx.runCode('def f():\n    raise ValueError("bad value")\nf()');
	assert.equal(e.error.name, 'ValueError');
	assert.equal(e.error.value, 'bad value');
	assert.match(e.error.traceback, /ValueError: bad value/);
	assert.match(e.error.traceback, /in f/);
	// The context lives on.
	assert.equal((await sbx.runCode('x')).text, '1');
});

test('rich results: _repr_html_ and display()', async () => {
	const e = await sbx.runCode(
		'class Table:\n    def _repr_html_(self):\n        return "<b>t</b>"\n    def __repr__(self):\n        return "Table()"\n' +
			'display("shown first")\nTable()',
	);
	assert.equal(e.results.length, 2);
	assert.equal(e.results[0].text, 'shown first');
	assert.equal(e.results[0].isMainResult, false);
	assert.equal(e.results[1].html, '<b>t</b>');
	assert.equal(e.text, 'Table()');
});

test('env vars per call', async () => {
	const e = await sbx.runCode('import os\nos.environ["E2B_RUN_VAR"]', { envs: { E2B_RUN_VAR: 'per-call' } });
	assert.equal(e.text, 'per-call');
});

test('a new sandbox lists its default python and javascript contexts, usable at once', async () => {
	const fresh = t.add(await Sandbox.create());
	const list = await fresh.listCodeContexts();
	const langs = list.map((c) => c.language).sort();
	assert.deepEqual(langs, ['javascript', 'python'], JSON.stringify(list));
	const py = list.find((c) => c.language === 'python');
	assert.equal(py.cwd, '/home/user');
	assert.equal((await fresh.runCode('1 + 1', { context: py })).text, '2');
	assert.equal((await fresh.listCodeContexts()).length, 2, 'listing again makes no more');
	await fresh.kill();
});

test('two contexts do not share variables', async () => {
	const c1 = await sbx.createCodeContext();
	const c2 = await sbx.createCodeContext({ cwd: '/tmp' });
	await sbx.runCode('secret = "one"', { context: c1 });
	const miss = await sbx.runCode('secret', { context: c2 });
	assert.equal(miss.error.name, 'NameError');
	assert.equal((await sbx.runCode('secret', { context: c1 })).text, 'one');
	assert.equal((await sbx.runCode('import os\nos.getcwd()', { context: c2 })).text, '/tmp');
	const list = await sbx.listCodeContexts();
	assert.ok(list.some((c) => c.id === c1.id) && list.some((c) => c.id === c2.id));
	await sbx.restartCodeContext(c1);
	assert.equal((await sbx.runCode('secret', { context: c1 })).error.name, 'NameError');
	await sbx.removeCodeContext(c2);
	assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === c2.id));
});

test('a JavaScript context keeps state; TypeScript has its types stripped', async () => {
	const js = await sbx.createCodeContext({ language: 'js' });
	await sbx.runCode('const base = 40; function add(a, b) { return a + b }', { context: js });
	const r = await sbx.runCode('console.log("from js"); add(base, 2)', { context: js });
	assert.equal(r.text, '42');
	assert.deepEqual(r.logs.stdout, ['from js\n']);
	// Raw writes to the fds and stdin reads cannot reach the façade's channels.
	const raw = await sbx.runCode("require('child_process').spawnSync('echo', ['raw'], { stdio: 'inherit' }); require('fs').readFileSync(0, 'utf8')", { context: js });
	assert.equal(raw.error, undefined);
	assert.equal(raw.text, '');
	assert.equal((await sbx.runCode('base', { context: js })).text, '40');
	const err = await sbx.runCode('null.x', { context: js });
	assert.equal(err.error.name, 'TypeError');
	assert.equal((await sbx.runCode('[1, 2, 3].map((n) => n * 2)', { language: 'javascript' })).text, '[ 2, 4, 6 ]');
	const ts = await sbx.runCode('const n: number = 5;\nconst s: string = "ts";\n`${s}${n * 2}`', { language: 'ts' });
	assert.equal(ts.error, undefined);
	assert.equal(ts.text, 'ts10');
});

test('contexts never leak between sandboxes, and die with theirs', async () => {
	const other = t.add(await Sandbox.create());
	await sbx.runCode('only_here = 1');
	const r = await other.runCode('only_here');
	assert.equal(r.error.name, 'NameError');
	const ctx = await other.createCodeContext();
	await other.kill();
	// (A short requestTimeoutMs: the SDK leaves that timer running when a call fails.)
	await assert.rejects(other.runCode('1', { context: ctx, requestTimeoutMs: 2000 }));
	await assert.rejects(sbx.runCode('1', { context: ctx, requestTimeoutMs: 2000 }), /not found/i);
});

test('a cell past its timeout is interrupted and the context lives on', async () => {
	const c = await sbx.createCodeContext();
	await sbx.runCode('kept = 7', { context: c });
	await assert.rejects(sbx.runCode('while True:\n    pass', { context: c, timeoutMs: 1500 }), (e) => e.name === 'TimeoutError');
	const r = await sbx.runCode('kept * 6', { context: c });
	assert.equal(r.text, '42');
	const js = await sbx.createCodeContext({ language: 'javascript' });
	await sbx.runCode('let count = 1', { context: js });
	await assert.rejects(sbx.runCode('for (;;) {}', { context: js, timeoutMs: 1500 }), (e) => e.name === 'TimeoutError');
	assert.equal((await sbx.runCode('count + 1', { context: js })).text, '2');
});

test('a string result is bare, as E2B gives it: one pair of enclosing quotes taken off', async () => {
	assert.equal((await sbx.runCode('"abc"')).text, 'abc');
	// Only the enclosing pair, nothing unescaped: repr("it's") is "it's".
	assert.equal((await sbx.runCode('"it\'s"')).text, "it's");
	assert.equal((await sbx.runCode('"a\\nb"')).text, 'a\\nb');
	assert.equal((await sbx.runCode('["x"]')).text, "['x']");
	assert.equal((await sbx.runCode('"q"', { language: 'js' })).text, 'q');
	assert.equal((await sbx.runCode('display("d")\n1')).results[0].text, 'd');
});

test('contexts list oldest first, the defaults before all; one may work in /root', async () => {
	const fresh = t.add(await Sandbox.create());
	const a = await fresh.createCodeContext();
	const b = await fresh.createCodeContext({ language: 'python', cwd: '/root' });
	const ids = (await fresh.listCodeContexts()).map((c) => c.id);
	assert.deepEqual(ids.slice(-2), [a.id, b.id], JSON.stringify(ids));
	assert.equal(ids.length, 4);
	// As in E2B, where Jupyter runs its kernels as root.
	const r = await fresh.runCode('import os\nprint(os.getcwd(), os.getuid())', { context: b });
	assert.deepEqual(r.logs.stdout, ['/root 0\n']);
	await fresh.kill();
});

test("IPython's cell rules: indented cells, !shell escapes", async () => {
	const r = await sbx.runCode('\n    x_ind = 20\n    if x_ind:\n        x_ind += 1\n    x_ind * 2\n');
	assert.equal(r.error, undefined);
	assert.equal(r.text, '42');
	const c = await sbx.createCodeContext({ cwd: '/tmp' });
	const sh = await sbx.runCode('print("before")\n!pwd\n!echo "$HOME" >&2\nfiles = !printf "a\\nb\\n"\nfiles', { context: c });
	assert.equal(sh.error, undefined);
	assert.deepEqual(sh.logs.stdout, ['before\n', '/tmp\n']);
	assert.deepEqual(sh.logs.stderr, ['/root\n']);
	assert.equal(sh.text, "['a', 'b']");
	assert.equal((await sbx.runCode('!exit 3\n_exit_code', { context: c })).text, '3');
	// A cell that is Python as it is is left alone ("!" in a string).
	assert.equal((await sbx.runCode('s = """\n!not a command\n"""\ns.strip()', { context: c })).text, '!not a command');
});

test('JavaScript and TypeScript cells: ESM imports and top-level await', async () => {
	const js = await sbx.createCodeContext({ language: 'js' });
	const r = await sbx.runCode("\n    import { readFileSync } from 'fs'\n    import * as path from 'node:path'; import os, { EOL as eol } from 'os'\n    console.log(typeof readFileSync, typeof path.join, typeof os.cpus, JSON.stringify(eol))\n", { context: js });
	assert.equal(r.error, undefined, JSON.stringify(r.error));
	assert.deepEqual(r.logs.stdout, ['function function function "\\n"\n']);
	// The names stay for later cells; importing again is no error.
	assert.equal((await sbx.runCode("import { readFileSync } from 'fs'\ntypeof readFileSync", { context: js })).text, 'function');
	assert.equal((await sbx.runCode("await Promise.resolve('Hello World!')", { context: js })).text, 'Hello World!');
	const d = await sbx.runCode('const later = await new Promise((r) => setTimeout(() => r(41), 50));\nlater + 1', { context: js });
	assert.equal(d.text, '42');
	assert.equal((await sbx.runCode('later', { context: js })).text, '41');
	assert.equal((await sbx.runCode('await null', { context: js })).text, 'null');
	assert.equal((await sbx.runCode('await undefined', { context: js })).text, undefined);
	const ts = await sbx.runCode("import { join } from 'path'\nconst p: string = await Promise.resolve(join('a', 'b'));\np", { language: 'ts' });
	assert.equal(ts.error, undefined, JSON.stringify(ts.error));
	assert.equal(ts.text, 'a/b');
	// Still a SyntaxError when it is one.
	assert.equal((await sbx.runCode('import {', { context: js })).error.name, 'SyntaxError');
});

test('a bash context: one bash per context, state kept, env per call', async () => {
	const sh = await sbx.createCodeContext({ language: 'bash' });
	assert.equal(sh.language, 'bash');
	const r = await sbx.runCode('pwd\nV=kept; cd /tmp\necho err >&2', { context: sh });
	assert.deepEqual(r.logs.stdout, ['/home/user\n']);
	assert.deepEqual(r.logs.stderr, ['err\n']);
	assert.equal(r.error, undefined);
	const s = await sbx.runCode('echo "$V $(pwd) ${FOO:-none}"; cat; false', { context: sh, envs: { FOO: 'bar' } });
	assert.deepEqual(s.logs.stdout, ['kept /tmp bar\n']);
	assert.deepEqual((await sbx.runCode('echo ${FOO:-none}', { context: sh })).logs.stdout, ['none\n']);
	assert.deepEqual((await sbx.runCode('echo $HOME', { language: 'bash' })).logs.stdout, ['/root\n']);
	// exit ends the bash: an error, and the next cell gets a fresh one (a job left in
	// the background does not hold the cell open).
	assert.equal((await sbx.runCode('sleep 30 & exit 1', { context: sh, timeoutMs: 10000 })).error.name, 'ShellEnded');
	assert.deepEqual((await sbx.runCode('echo "${V:-gone}" $(pwd)', { context: sh })).logs.stdout, ['gone /home/user\n']);
	// An interrupted cell: the bash and its children are gone; the context lives on.
	await assert.rejects(sbx.runCode('sleep 100', { context: sh, timeoutMs: 1500 }), (e) => e.name === 'TimeoutError');
	assert.deepEqual((await sbx.runCode('echo again', { context: sh })).logs.stdout, ['again\n']);
	await assert.rejects(sbx.runCode('1', { language: 'cobol' }), /400|language/);
});

test('a sandbox killed during runCode: the stream is cut, the SDK throws a TimeoutError', async () => {
	const doomed = t.add(await Sandbox.create());
	const run = doomed.runCode('import time; time.sleep(300)', { timeoutMs: 300_000 });
	const failed = assert.rejects(run, (e) => e.name === 'TimeoutError' && /killed while the request was in progress/.test(e.message));
	await new Promise((r) => setTimeout(r, 1500));
	await doomed.kill();
	await failed;
});

// @e2b/code-interpreter: R and Java contexts (e2b_repl.R, e2b_repl.java) on the
// code-interpreter image (the default image with R and a JDK: template code-interpreter-v1
// once setup.sh has imported it, SANDLOT_CI_IMAGE=1), and the clear error for them on an
// image without R or Java.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker } from '../lib.mjs';
import { Sandbox } from '@e2b/code-interpreter';

const template = 'code-interpreter-v1';
const skip = process.env.SANDLOT_CI_IMAGE ? false : 'the code-interpreter image is not built (make images-code-interpreter)';
if (skip) console.error(`\n!!! interpreter-langs: R and Java tests SKIPPED: ${skip}\n`);
const t = tracker();
let sbx;
before(async () => {
	if (!skip) sbx = t.add(await Sandbox.create(template, { envs: { TEST_ENV_VAR: 'supertest' } }));
});
after(() => t.cleanup());

const text = (e) => e.results.map((r) => r.text);

test('R: values printed as the console prints them, state, env vars, cwd, output, errors', { skip }, async () => {
	const opts = { language: 'r' };
	// As IRkernel: every visible top-level value is display data, so results[0], no text.
	const cwd = await sbx.runCode('getwd()', opts);
	assert.deepEqual(text(cwd), ['[1] "/home/user"']);
	assert.equal(cwd.results[0].isMainResult, false);
	assert.deepEqual(text(await sbx.runCode('Sys.getenv("TEST_ENV_VAR")', opts)), ['[1] "supertest"']);
	// A call's env vars are for that call; the sandbox's come back after.
	const per = await sbx.runCode('unname(Sys.getenv(c("FOO", "TEST_ENV_VAR")))', { ...opts, envs: { FOO: 'bar', TEST_ENV_VAR: 'overwrite' } });
	assert.deepEqual(text(per), ['[1] "bar"       "overwrite"']);
	const back = await sbx.runCode('Sys.getenv("FOO", unset = "default")\nSys.getenv("TEST_ENV_VAR")', opts);
	assert.deepEqual(text(back), ['[1] "default"', '[1] "supertest"']);
	// State across cells; invisible values print nothing; output and messages as logs.
	const a = await sbx.runCode('x <- c(1, 2, 3)\ninvisible(7)\ncat("out\\n")\nmessage("note")\nsum(x) * 2', opts);
	assert.deepEqual(text(a), ['[1] 12']);
	assert.deepEqual(a.logs.stdout, ['out\n']);
	assert.deepEqual(a.logs.stderr, ['note\n']);
	assert.equal(a.error, undefined);
	assert.deepEqual(text(await sbx.runCode('f <- function(n) n + length(x)\nf(1)', opts)), ['[1] 4']);
	// An error ends the cell (what came before stays); the context lives on.
	const e = await sbx.runCode('print("before")\nstop("bad thing")\nprint("after")', opts);
	assert.deepEqual(e.logs.stdout, ['[1] "before"\n']);
	assert.equal(e.error.name, 'ERROR');
	assert.equal(e.error.value, 'bad thing');
	assert.match(e.error.traceback, /Error: bad thing/);
	assert.match((await sbx.runCode('1 +', opts)).error.value, /unexpected end of input/);
	assert.deepEqual(text(await sbx.runCode('x[[3]]', opts)), ['[1] 3']);
	// A context of its own, in its own cwd, with its own names.
	const ctx = await sbx.createCodeContext({ language: 'r', cwd: '/tmp' });
	assert.equal(ctx.language, 'r');
	assert.deepEqual(text(await sbx.runCode('getwd()\nexists("x")', { context: ctx })), ['[1] "/tmp"', '[1] FALSE']);
});

test('Java: JShell snippets, values as IJava gives them, env vars as system properties', { skip }, async () => {
	const opts = { language: 'java' };
	const cwd = await sbx.runCode('System.getProperty("user.dir")', opts);
	assert.deepEqual(text(cwd), ['/home/user']);
	assert.equal(cwd.text, '/home/user');
	// E2B's server sets the sandbox's env vars, and a call's, as system properties.
	assert.equal((await sbx.runCode('System.getProperty("TEST_ENV_VAR")', opts)).text, 'supertest');
	const per = await sbx.runCode('System.getProperty("FOO") + " " + System.getProperty("TEST_ENV_VAR")', { ...opts, envs: { FOO: 'bar', TEST_ENV_VAR: 'overwrite' } });
	assert.equal(per.text, 'bar overwrite');
	assert.equal((await sbx.runCode('System.getProperty("FOO", "default")', opts)).text, 'default');
	assert.equal((await sbx.runCode('System.getProperty("TEST_ENV_VAR")', opts)).text, 'supertest');
	// State across cells; System.out and System.err as logs; jshell's default imports.
	const a = await sbx.runCode('int x = 20;\nint twice(int n) { return 2 * n; }\nSystem.out.println("out " + x);\nSystem.err.println("err");\ntwice(x) + 2', opts);
	assert.equal(a.text, '42');
	assert.deepEqual(a.logs.stdout, ['out 20\n']);
	assert.deepEqual(a.logs.stderr, ['err\n']);
	assert.equal((await sbx.runCode('List.of(x, twice(x))', opts)).text, '[20, 40]');
	// A string is the string (no quotes, nothing escaped); a statement has no value.
	assert.equal((await sbx.runCode('"say \\"hi\\""', opts)).text, 'say "hi"');
	assert.deepEqual((await sbx.runCode('x = x + 1;\nSystem.out.print("")', opts)).results, []);
	// An exception and a compile error end the cell; the context lives on.
	const e = await sbx.runCode('int y = 0;\nx / y', opts);
	assert.equal(e.error.name, 'java.lang.ArithmeticException');
	assert.equal(e.error.value, '/ by zero');
	assert.equal((await sbx.runCode('x +* 1', opts)).error.name, 'CompilationException');
	assert.equal((await sbx.runCode('x', opts)).text, '21');
	// An interrupted cell (the caller's timeout) stops; the context lives on.
	await assert.rejects(sbx.runCode('while (true) { Thread.sleep(10); }', { ...opts, timeoutMs: 3000 }), (err) => err.name === 'TimeoutError');
	assert.equal((await sbx.runCode('x + 1', opts)).text, '22');
	const ctx = await sbx.createCodeContext({ language: 'java', cwd: '/tmp' });
	assert.equal((await sbx.runCode('System.getProperty("user.dir")', { context: ctx })).text, '/tmp');
});

test('R and Java on an image without them: an error naming what is missing, at once', async () => {
	const plain = t.add(await Sandbox.create('base'));
	const t0 = Date.now();
	// runCode: the execution's error (the SDK shows a failed request as its status only).
	const r = await plain.runCode('1', { language: 'r' });
	assert.equal(r.error.name, 'LanguageUnavailable');
	assert.match(r.error.value, /^language r: this sandbox's image lacks R \(Rscript on the PATH\)/);
	assert.deepEqual(r.results, []);
	// createCodeContext: a 400 whose body says it.
	await assert.rejects(plain.createCodeContext({ language: 'java' }), /400/);
	const res = await fetch(plain.getJupyterRequestUrl('/contexts'), {
		method: 'POST',
		headers: {
			'Content-Type': 'application/json',
			'E2b-Sandbox-Id': plain.sandboxId,
			'E2b-Sandbox-Port': '49999',
			...(plain.envdAccessToken ? { 'X-Access-Token': plain.envdAccessToken } : {}),
			...(plain.trafficAccessToken ? { 'E2B-Traffic-Access-Token': plain.trafficAccessToken } : {}),
		},
		body: JSON.stringify({ language: 'java' }),
	});
	assert.equal(res.status, 400);
	assert.match(await res.text(), /language java: this sandbox's image lacks a JDK 17 or later/);
	assert.ok(Date.now() - t0 < 15000);
	// Nothing is left of them: no context listed; the image's own languages work.
	assert.deepEqual((await plain.listCodeContexts()).map((c) => c.language).sort(), ['javascript', 'python']);
	assert.equal((await plain.runCode('1 + 1')).text, '2');
});

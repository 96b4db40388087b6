// Contexts live in files and in the sandbox, not in the daemon: a second daemon (a fresh
// process with nothing in memory, as after a restart) finds a context's interpreter and
// its state again, and one whose interpreter died starts afresh cleanly.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tracker, v1 } from '../lib.mjs';
import { Sandbox } from '@e2b/code-interpreter';

const t = tracker();
let second;
const dir = mkdtempSync(join(tmpdir(), 'sandlot-e2b-restart-'));
after(async () => {
	await t.cleanup();
	if (second) {
		second.kill('SIGTERM');
		await new Promise((r) => second.once('exit', r));
	}
	rmSync(dir, { recursive: true, force: true });
});

function startSecondDaemon() {
	second = spawn(process.env.SANDLOT_BIN, ['serve', '--socket', join(dir, 'second.sock'),
		'--listen', '127.0.0.1:0', '--preview-port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
	return new Promise((resolve, reject) => {
		let out = '';
		second.stdout.on('data', (d) => {
			out += d;
			const m = out.match(/http:\/\/127\.0\.0\.1:\d+/);
			if (m) resolve(m[0]);
		});
		second.once('exit', (code) => reject(new Error(`second daemon exited ${code}`)));
	});
}

test('a context survives a daemon change; a dead interpreter is recreated', async () => {
	const sbx = t.add(await Sandbox.create());
	await sbx.runCode('survivor = 41');
	const ctx = await sbx.createCodeContext({ language: 'js' });
	await sbx.runCode('var inCtx = "js state"', { context: ctx });

	const url = await startSecondDaemon();
	const again = await Sandbox.connect(sbx.sandboxId, { apiUrl: url, sandboxUrl: url });
	assert.equal((await again.runCode('survivor + 1')).text, '42');
	assert.equal((await again.runCode('inCtx', { context: ctx })).text, "'js state'");

	// Kill the default context's interpreter (by its execution id).
	const { executions } = await v1('GET', `/v1/sandboxes/${sbx.sandboxId}/executions`);
	const repl = executions.find((e) => e.status === 'running' && e.command[0] === 'python3');
	assert.ok(repl, 'the Python context runs as an execution');
	await v1('POST', `/v1/sandboxes/${sbx.sandboxId}/executions/${repl.id}/signal`, { signal: 'SIGKILL' });
	const fresh = await again.runCode('survivor');
	assert.equal(fresh.error?.name, 'NameError', 'a new interpreter, with nothing from the old one');
	assert.equal((await again.runCode('survivor = 5\nsurvivor * 2')).text, '10');
	assert.equal((await sbx.runCode('survivor')).text, '5', 'both daemons see the same context');
});

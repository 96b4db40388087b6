// Contexts live in files and in the sandbox, not in the daemon: a second daemon (a fresh
// process with nothing in memory, as after a restart) finds a context's interpreter and
// its state again, and one whose interpreter died starts afresh cleanly.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, tracker, v1 } from '../lib.mjs';
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
	assert.equal((await again.runCode('inCtx', { context: ctx })).text, 'js state');

	// Kill the default context's interpreter (by its execution id): the next cell runs
	// in a fresh one.
	const repl = await pythonRepl(sbx.sandboxId);
	await v1('POST', `/v1/sandboxes/${sbx.sandboxId}/executions/${repl.id}/signal`, { signal: 'SIGKILL' });
	const fresh = await again.runCode('survivor');
	assert.equal(fresh.error?.name, 'NameError', 'a new interpreter, with nothing from the old one');
	assert.equal((await again.runCode('survivor = 5\nsurvivor * 2')).text, '10');
	assert.equal((await sbx.runCode('survivor')).text, '5', 'both daemons see the same context');
});

// The Python context's REPL: its execution, and its pid on the host (found by the
// sandbox's cgroup and the pid the execution has in the sandbox).
async function pythonRepl(sandboxId) {
	const { executions } = await v1('GET', `/v1/sandboxes/${sandboxId}/executions`);
	const repl = executions.find((e) => e.status === 'running' && e.command[0] === 'python3');
	assert.ok(repl, 'the Python context runs as an execution');
	return { ...repl, hostPid: hostPid(sandboxId, repl.pid), initPid: hostPid(sandboxId, 1) };
}

function hostPid(sandboxId, nsPid) {
	for (const d of readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(d)) continue;
		try {
			if (!readFileSync(`/proc/${d}/cgroup`, 'utf8').includes(`/sandlot/${sandboxId}`)) continue;
			const ns = readFileSync(`/proc/${d}/status`, 'utf8').match(/^NSpid:\s+(.*)$/m)[1].split(/\s+/);
			if (ns.length > 1 && Number(ns.at(-1)) === nsPid) return Number(d);
		} catch {
			// gone meanwhile
		}
	}
	throw new Error(`pid ${nsPid} of ${sandboxId} not found on the host`);
}

// A cell sent just as the interpreter dies never ran: it runs in a fresh interpreter
// instead of failing with ContextDied. Both windows are held open on purpose.
test('a cell sent to an interpreter that dies before reading it runs in a fresh one', async () => {
	const sbx = t.add(await Sandbox.create());
	await sbx.runCode('gone = 1');

	// 1. The interpreter is alive when the cell is written, and killed before it reads
	// it (stopped, so the cell waits in its stdin).
	let repl = await pythonRepl(sbx.sandboxId);
	process.kill(repl.hostPid, 'SIGSTOP');
	const killer = sleep(500).then(() => process.kill(repl.hostPid, 'SIGKILL'));
	let run = await sbx.runCode('gone');
	await killer;
	assert.equal(run.error?.name, 'NameError', `killed before reading: ${JSON.stringify(run.error)}`);
	assert.equal((await sbx.runCode('gone = 2\ngone * 2')).text, '4');

	// 2. The interpreter is dead, but its end not recorded yet (the sandbox's init,
	// which reaps it, is stopped): nothing reads the cell.
	repl = await pythonRepl(sbx.sandboxId);
	process.kill(repl.initPid, 'SIGSTOP');
	let resumed = false;
	try {
		process.kill(repl.hostPid, 'SIGKILL');
		const waker = sleep(500).then(() => {
			resumed = true;
			process.kill(repl.initPid, 'SIGCONT');
		});
		run = await sbx.runCode('gone');
		await waker;
	} finally {
		if (!resumed) process.kill(repl.initPid, 'SIGCONT');
	}
	assert.equal(run.error?.name, 'NameError', `dead, not reaped: ${JSON.stringify(run.error)}`);
	assert.equal((await sbx.runCode('gone = 3\ngone * 2')).text, '6');

	// A cell that kills its own interpreter did run: it is not run twice.
	run = await sbx.runCode('import os\nopen("/tmp/ran", "a").write("x")\nos.kill(os.getpid(), 9)');
	assert.equal(run.error?.name, 'ContextDied');
	assert.equal((await sbx.files.read('/tmp/ran')), 'x', 'the cell ran once');
});

// E2B's code-interpreter suite (systemd.test.ts) kills its Jupyter server from inside the
// sandbox and waits for systemd to bring it back. sandlot has no server in the sandbox:
// each context's interpreter is an execution the daemon starts, and one that was killed
// is started afresh by the context's next call, whoever killed it.
test('interpreters killed from inside the sandbox (kill -9) come back on the next runCode', async () => {
	const sbx = t.add(await Sandbox.create());
	const js = await sbx.createCodeContext({ language: 'js' });
	assert.equal((await sbx.runCode('x = 1; x')).text, '1');
	assert.equal((await sbx.runCode('let y = 2; y', { context: js })).text, '2');
	// The pattern's brackets keep the shell running pgrep out of its own matches.
	const repls = async () => (await sbx.commands.run("pgrep -f '[S]ANDLOT_E2B_REPL' || true"))
		.stdout.trim().split('\n').filter(Boolean).sort();
	const before = await repls();
	assert.equal(before.length, 2, `a Python and a JavaScript interpreter: ${before}`);
	await sbx.commands.run(`kill -9 ${before.join(' ')}`, { user: 'root' });
	for (let i = 0; i < 50 && (await repls()).length; i++) await sleep(100);
	assert.deepEqual(await repls(), [], 'both killed');

	let run = await sbx.runCode('x = 1; x');
	assert.equal(run.error, undefined, JSON.stringify(run.error));
	assert.equal(run.text, '1');
	run = await sbx.runCode('typeof y', { context: js });
	assert.equal(run.text, 'undefined', 'a fresh interpreter, with nothing from the old one');
	assert.equal((await sbx.runCode('let y = 3; y * 2', { context: js })).text, '6');
	const after = await repls();
	assert.equal(after.length, 2);
	assert.ok(after.every((p) => !before.includes(p)), `new processes: ${before} -> ${after}`);
});

// envd's process service: run, exit codes, env, cwd, user, timeout, background commands
// with streamed output, kill, stdin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker, sleep } from '../lib.mjs';
import { Sandbox, CommandExitError, TimeoutError } from 'e2b';

const t = tracker();
let sbx;
before(async () => {
	sbx = t.add(await Sandbox.create({ envs: { E2B_COMPAT_FOO: 'foo', SHARED: 'sandbox' } }));
});
after(() => t.cleanup());

test('run: stdout, stderr, exit code 0', async () => {
	const r = await sbx.commands.run('echo hello; echo oops >&2');
	assert.equal(r.exitCode, 0);
	assert.equal(r.stdout, 'hello\n');
	assert.equal(r.stderr, 'oops\n');
});

test('a non-zero exit raises CommandExitError with the code', async () => {
	await assert.rejects(sbx.commands.run('echo partial; exit 3'), (e) => {
		assert.ok(e instanceof CommandExitError, `got ${e}`);
		assert.equal(e.exitCode, 3);
		assert.equal(e.stdout, 'partial\n');
		assert.match(e.error, /exit status 3/);
		return true;
	});
});

test('env: the sandbox envs and per-command envs, the latter winning', async () => {
	const r = await sbx.commands.run('echo $E2B_COMPAT_FOO $SHARED $ONLY_HERE', {
		envs: { SHARED: 'command', ONLY_HERE: 'here' },
	});
	assert.equal(r.stdout, 'foo command here\n');
});

test('cwd, and the default one is the user home', async () => {
	assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user\n');
	assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
});

test('user: the default user, and root when asked', async () => {
	assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n');
	assert.equal((await sbx.commands.run('whoami; pwd', { user: 'root' })).stdout, 'root\n/root\n');
	await sbx.commands.run('touch /root/made-by-root', { user: 'root' });
	await assert.rejects(sbx.commands.run('touch /root/not-by-user'), CommandExitError);
});

test('timeout: a command past timeoutMs is ended and the call times out', async () => {
	const start = Date.now();
	await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1500 }), TimeoutError);
	assert.ok(Date.now() - start < 10_000);
	await sleep(500);
	const left = await sbx.commands.list();
	assert.ok(!left.some((p) => p.args.join(' ').includes('sleep 30')), 'the command was not ended');
});

test('background command: streamed output, list, then kill', async () => {
	const lines = [];
	const h = await sbx.commands.run('for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; sleep 0.2; done; sleep 600', {
		background: true,
		onStdout: (d) => lines.push(d),
	});
	assert.ok(h.pid > 0);
	for (let i = 0; i < 50 && !lines.join('').includes('line3'); i++) await sleep(100);
	assert.match(lines.join(''), /line1\nline2\nline3\n/, 'output arrives while the command runs');
	const list = await sbx.commands.list();
	const me = list.find((p) => p.pid === h.pid);
	assert.ok(me, 'listed');
	assert.equal(me.cmd, '/bin/bash');
	assert.equal(await h.kill(), true);
	await assert.rejects(h.wait(), (e) => {
		assert.ok(e instanceof CommandExitError);
		assert.equal(e.exitCode, -1);
		assert.match(e.error, /signal: killed/);
		return true;
	});
	assert.equal(await sbx.commands.kill(h.pid), false, 'it is gone');
	assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid));
});

test('connect to a running command by pid', async () => {
	const h = await sbx.commands.run('sleep 1; echo late', { background: true });
	const c = await sbx.commands.connect(h.pid);
	const r = await c.wait();
	assert.equal(r.stdout, 'late\n');
});

test('stdin: sendStdin reaches the command, closeStdin ends it', async () => {
	const h = await sbx.commands.run('cat', { background: true, stdin: true });
	await sbx.commands.sendStdin(h.pid, 'first\n');
	await h.sendStdin('second\n');
	await sbx.commands.closeStdin(h.pid);
	const r = await h.wait();
	assert.equal(r.stdout, 'first\nsecond\n');
});

test('a command that does not exist exits 127', async () => {
	await assert.rejects(sbx.commands.run('no-such-command-here'), (e) => e.exitCode === 127);
});

test('pty: create, input, resize, output', async () => {
	const out = [];
	const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => out.push(Buffer.from(d).toString()) });
	await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 });
	await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; exit\n'));
	await pty.wait().catch(() => {});
	assert.match(out.join(''), /30 100/);
});

test('pty: connect after disconnect streams the output, and the exit', async () => {
	const dec = new TextDecoder();
	let first = '', second = '';
	const pty = await sbx.pty.create({ cols: 80, rows: 24, envs: { FOO: 'bar' }, onData: (d) => (first += dec.decode(d)) });
	await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('echo one-$FOO\n'));
	for (let i = 0; i < 50 && !first.includes('one-bar'); i++) await sleep(100);
	await pty.disconnect();
	const again = await sbx.pty.connect(pty.pid, { onData: (d) => (second += dec.decode(d)) });
	assert.equal(again.pid, pty.pid);
	await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('echo two-$FOO\nexit\n'));
	const r = await again.wait();
	assert.equal(r.exitCode, 0);
	assert.match(first, /one-bar/);
	assert.match(second, /two-bar/, 'the reconnected stream carries what the pty printed after');
	assert.doesNotMatch(second, /one-bar/, 'and not what was already delivered');
});

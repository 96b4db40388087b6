// Lifecycle as E2B's own suite uses it: pause({keepMemory: false}) is a cold boot,
// onTimeout 'pause' (memory kept or not) pauses instead of killing, autoResume wakes a
// paused sandbox on traffic, and a sandbox killed under commands.run is a TimeoutError.
// A memory pause (pause, betaPause, onTimeout 'pause') hibernates the sandbox (CRIU) when
// it was launched to be (an autoPause create without network or volumes, docs/e2b.md),
// else freezes it; connect resumes either.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tracker, v1, sleep, sandlotUrl, sandlotKey, counter, readCounter } from '../lib.mjs';
import { Sandbox, InvalidArgumentError, TimeoutError, CommandExitError } from 'e2b';

const t = tracker();
after(() => t.cleanup());

// The criu binary is there (scripts/setup builds it): then an autoPause create is launched
// to hibernate and its pause is CRIU's; without it, the freezer's.
const criu = process.env.SANDLOT_CRIU || '/usr/local/lib/sandlot/criu/4.1.1-2/criu';
const hibernateLaunch = existsSync(criu);

const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim();

async function waitState(id, want) {
	let info;
	for (let i = 0; i < 60; i++) {
		info = await Sandbox.getInfo(id);
		if (info.state === want) return info;
		await sleep(250);
	}
	assert.fail(`sandbox ${id} is ${info?.state}, not ${want}`);
}

test('pause({keepMemory: false}) ends the processes; connect is a cold boot', async () => {
	const sbx = t.add(await Sandbox.create());
	await sbx.files.write('/home/user/kept.txt', 'on disk');
	const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 });
	const boot1 = await bootId(sbx);
	assert.match(boot1, /^[0-9a-f-]{36}$/);
	assert.equal(await sbx.pause({ keepMemory: false }), true);
	const info = await sbx.getInfo();
	assert.equal(info.state, 'paused');
	assert.equal(await sbx.isRunning(), false);
	assert.equal(await sbx.pause({ keepMemory: false }), false, 'already paused');
	const listed = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
	assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId));
	// /v1 says what it is: stopped, files kept.
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'stopped');
	const again = await Sandbox.connect(sbx.sandboxId);
	assert.equal(await again.isRunning(), true);
	assert.notEqual(await bootId(again), boot1, 'a new boot_id after the cold boot');
	assert.equal(await again.files.read('/home/user/kept.txt'), 'on disk');
	const procs = await again.commands.list();
	assert.ok(!procs.some((p) => p.pid === bg.pid && p.cmd === 'sleep'), 'the old processes are gone');
	const r = await again.commands.run('pgrep -x sleep || echo none');
	assert.equal(r.stdout, 'none\n');
	// A memory pause keeps the boot.
	const boot2 = await bootId(again);
	assert.equal(await again.pause(), true);
	const third = await Sandbox.connect(sbx.sandboxId);
	assert.equal(await bootId(third), boot2);
});

test("onTimeout 'pause': past its timeout the sandbox is paused, not killed", async () => {
	const sbx = t.add(await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause' } }));
	const info = await sbx.getInfo();
	assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: false });
	const made = await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`);
	assert.equal(made.timeout.onLifetime, 'hibernate');
	assert.equal(made.hibernate, hibernateLaunch, 'an autoPause create is launched to hibernate');
	await sbx.files.write('/tmp/state.txt', 'frozen');
	const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 });
	const paused = await waitState(sbx.sandboxId, 'paused');
	assert.ok(paused.endAt.getTime() - Date.now() > 86_400_000, 'no deadline while paused');
	// Hibernated, with the command (the sleep) still running: its logs and exit record,
	// files of the host's, are CRIU's external files (docs/hibernate.md).
	assert.equal(
		(await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status,
		hibernateLaunch ? 'hibernated' : 'paused',
	);
	const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'running');
	assert.equal(await again.files.read('/tmp/state.txt'), 'frozen');
	assert.ok((await again.commands.list()).some((p) => p.pid === bg.pid), 'memory kept');
	// A default create still dies at its timeout.
	const plain = t.add(await Sandbox.create({ timeoutMs: 60_000 }));
	assert.deepEqual((await plain.getInfo()).lifecycle, { onTimeout: 'kill', autoResume: false });
});

test("onTimeout {action: 'pause', keepMemory: false}: a filesystem-only auto-pause", async () => {
	const sbx = t.add(
		await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } }),
	);
	assert.equal((await sbx.getInfo()).lifecycle.onTimeout, 'pause');
	const boot1 = await bootId(sbx);
	await sbx.files.write('/tmp/on-disk.txt', 'kept');
	await waitState(sbx.sandboxId, 'paused');
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'stopped');
	const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
	assert.notEqual(await bootId(again), boot1);
	assert.equal(await again.files.read('/tmp/on-disk.txt'), 'kept');
});

// `counter` (lib.mjs): a process with state only in memory, started detached.

test('betaPause hibernates a sandbox launched to (autoPause); connect restores its memory', async () => {
	const sbx = t.add(await Sandbox.create({ timeoutMs: 600_000, lifecycle: { onTimeout: 'pause' } }));
	await sbx.commands.run(counter);
	await sleep(600);
	const before = await readCounter(sbx);
	assert.equal(await sbx.betaPause(), true);
	assert.equal((await sbx.getInfo()).state, 'paused');
	const v = await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`);
	assert.equal(v.status, hibernateLaunch ? 'hibernated' : 'paused');
	if (hibernateLaunch) assert.ok(!existsSync(`/sys/fs/cgroup/memory/sandlot/${sbx.sandboxId}`), 'no cgroup left');
	assert.equal(await sbx.betaPause(), false, 'already paused');
	const listed = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
	assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId), 'listed as paused');
	const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'running');
	await sleep(800);
	const after = await readCounter(again);
	assert.equal(after.tok, before.tok, 'the same process, its memory restored');
	assert.ok(after.n > before.n, `the count went on (${before.n} -> ${after.n})`);
});

test('betaPause of a sandbox of the usual launch falls back to the freezer', async () => {
	const sbx = t.add(await Sandbox.create({ timeoutMs: 600_000 }));
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).hibernate, false);
	const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 });
	assert.equal(await sbx.betaPause(), true);
	assert.equal((await sbx.getInfo()).state, 'paused');
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'paused');
	const again = await Sandbox.connect(sbx.sandboxId);
	assert.ok((await again.commands.list()).some((p) => p.pid === bg.pid), 'memory kept');
	// An autoPause create with a network is launched to hibernate too (that launch takes
	// a network), and its pause hibernates it.
	const net = t.add(await Sandbox.create({ timeoutMs: 60_000, allowInternetAccess: true, lifecycle: { onTimeout: 'pause' } }));
	assert.equal((await v1('GET', `/v1/sandboxes/${net.sandboxId}`)).hibernate, hibernateLaunch);
	assert.equal(await net.betaPause(), true);
	assert.equal((await v1('GET', `/v1/sandboxes/${net.sandboxId}`)).status, hibernateLaunch ? 'hibernated' : 'paused');
});

test('autoResume: traffic to an auto-paused sandbox resumes it', async () => {
	const sbx = t.add(
		await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause', autoResume: true } }),
	);
	assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true });
	const boot1 = await bootId(sbx);
	await waitState(sbx.sandboxId, 'paused');
	// No command running (bootId's ended): its lifetime's end hibernated it.
	assert.equal(
		(await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status,
		hibernateLaunch ? 'hibernated' : 'paused',
	);
	// No connect: the command's request wakes it, memory and all.
	assert.equal(await bootId(sbx), boot1);
	assert.equal((await sbx.getInfo()).state, 'running');
	// The SDK refuses what cannot be; the server does too.
	await assert.rejects(
		Sandbox.create({ lifecycle: { onTimeout: { action: 'pause', keepMemory: false }, autoResume: true } }),
		InvalidArgumentError,
	);
	await assert.rejects(
		v1('POST', '/v1/sandboxes', { image: 'busybox', timeout: { onLifetime: 'hibernated' } }),
		/400.*onLifetime/,
	);
});

// E2B's docs ("Timeout after auto-resume"): a fresh timeout from the wake, the one the
// sandbox was given (create, connect, setTimeout), 5 minutes at least.
test("autoResume's timeout: the sandbox's own, 5 minutes at least, from the wake", async () => {
	const sbx = t.add(
		await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause', autoResume: true } }),
	);
	const left = async () => ((await sbx.getInfo()).endAt.getTime() - Date.now()) / 1000;
	await waitState(sbx.sandboxId, 'paused');
	await sbx.commands.run('true');
	let s = await left();
	assert.ok(s > 290 && s <= 300, `3 s asked, 5 minutes given: ${s} s left`);
	// A longer one given by connect carries over to the next wake.
	await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 });
	assert.equal(await sbx.pause(), true);
	assert.ok((await left()) > 86_400, 'no deadline while paused');
	await sbx.files.write('/tmp/wake.txt', 'x');
	assert.equal((await sbx.getInfo()).state, 'running');
	s = await left();
	assert.ok(s > 590 && s <= 600, `600 s given by connect: ${s} s left`);
	// setTimeout's too.
	await sbx.setTimeout(420_000);
	assert.equal(await sbx.pause(), true);
	await sbx.commands.run('true');
	s = await left();
	assert.ok(s > 410 && s <= 420, `420 s given by setTimeout: ${s} s left`);
});

// /v1's ?autoResume=1 is the same wake: a sandbox its lifetime paused gets that lifetime
// again (no 5-minute floor: that is E2B's) and pauses again at its end.
test('/v1 autoResume gives a lifetime-paused sandbox its lifetime again', async () => {
	const sb = await v1('POST', '/v1/sandboxes', {
		image: 'busybox',
		timeout: { lifetime: '3s', onLifetime: 'pause', autoResume: true },
	});
	try {
		const state = async () => (await v1('GET', `/v1/sandboxes/${sb.id}`)).status;
		for (let i = 0; i < 40 && (await state()) !== 'paused'; i++) await sleep(250);
		assert.equal(await state(), 'paused');
		assert.equal((await v1('GET', `/v1/sandboxes/${sb.id}`)).expiresAt, null);
		const res = await fetch(`${sandlotUrl}/v1/sandboxes/${sb.id}/files?path=/etc/passwd&autoResume=1`, {
			headers: { Authorization: `Bearer ${sandlotKey}` },
		});
		assert.equal(res.status, 200);
		await res.arrayBuffer();
		const woke = await v1('GET', `/v1/sandboxes/${sb.id}`);
		assert.equal(woke.status, 'running');
		const left = new Date(woke.expiresAt).getTime() - Date.now();
		assert.ok(left > 0 && left <= 3_000, `a fresh 3 s lifetime: ${left} ms left`);
		assert.equal(woke.timeout.lifetime, 3_000);
		for (let i = 0; i < 40 && (await state()) !== 'paused'; i++) await sleep(250);
		assert.equal(await state(), 'paused', 'paused again at the end of it');
	} finally {
		await v1('DELETE', `/v1/sandboxes/${sb.id}`).catch(() => {});
	}
});

test('a sandbox killed during commands.run: the stream drops, the SDK throws TimeoutError', async () => {
	const sbx = t.add(await Sandbox.create());
	const out = [];
	const run = sbx.commands.run('echo started; sleep 60; echo finished', { onStdout: (d) => out.push(d) });
	for (let i = 0; i < 40 && !out.join('').includes('started'); i++) await sleep(100);
	assert.ok(out.join('').includes('started'), 'the command streamed its first line');
	// Another client kills it, as E2B's suite does.
	assert.equal(await Sandbox.kill(sbx.sandboxId), true);
	await assert.rejects(run, (e) => {
		assert.ok(!(e instanceof CommandExitError), `a clean exit with a code: ${e}`);
		assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e}`);
		assert.match(e.message, /killed or reached its end of life/);
		return true;
	});
	assert.ok(!out.join('').includes('finished'));
});

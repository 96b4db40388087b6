// Lifecycle as E2B's own suite uses it: pause({keepMemory: false}) is a cold boot,
// onTimeout 'pause' (memory kept or not) pauses instead of killing, autoResume wakes a
// paused sandbox on traffic, and a sandbox killed under commands.run is a TimeoutError.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker, v1, sleep } from '../lib.mjs';
import { Sandbox, InvalidArgumentError, TimeoutError, CommandExitError } from 'e2b';

const t = tracker();
after(() => t.cleanup());

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
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).timeout.onLifetime, 'pause');
	await sbx.files.write('/tmp/state.txt', 'frozen');
	const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 });
	const paused = await waitState(sbx.sandboxId, 'paused');
	assert.ok(paused.endAt.getTime() - Date.now() > 86_400_000, 'no deadline while paused');
	assert.equal((await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).status, 'paused');
	const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
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

test('autoResume: traffic to an auto-paused sandbox resumes it', async () => {
	const sbx = t.add(
		await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause', autoResume: true } }),
	);
	assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true });
	const boot1 = await bootId(sbx);
	await waitState(sbx.sandboxId, 'paused');
	// No connect: the command's request wakes it, memory and all.
	assert.equal(await bootId(sbx), boot1);
	assert.equal((await sbx.getInfo()).state, 'running');
	// The SDK refuses what cannot be; the server does too.
	await assert.rejects(
		Sandbox.create({ lifecycle: { onTimeout: { action: 'pause', keepMemory: false }, autoResume: true } }),
		InvalidArgumentError,
	);
	await assert.rejects(
		v1('POST', '/v1/sandboxes', { image: 'busybox', timeout: { onLifetime: 'hibernate' } }),
		/400.*onLifetime/,
	);
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

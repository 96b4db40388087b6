// Forks and snapshots: Sandbox.fork / sandbox.fork (files of the instant in every copy,
// private writes after, the source running on), createSnapshot / listSnapshots /
// deleteSnapshot, and a create from a snapshot id (docs/e2b.md, "Forks and snapshots").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tracker, v1, sleep, counter, readCounter } from '../lib.mjs';
import { Sandbox, SandboxNotFoundError } from 'e2b';

const t = tracker();
after(() => t.cleanup());

test('sandbox.fork and Sandbox.fork copy the files of the instant', async () => {
	const src = t.add(await Sandbox.create({ timeoutMs: 120_000 }));
	await src.files.write('/home/user/state.txt', 'before');
	const forks = await src.fork({ count: 3, timeoutMs: 60_000 });
	assert.equal(forks.length, 3);
	for (const f of forks) {
		assert.ok(f instanceof Sandbox, `a fork failed: ${f}`);
		t.add(f);
		assert.notEqual(f.sandboxId, src.sandboxId);
		assert.equal(await f.files.read('/home/user/state.txt'), 'before');
		const left = (await f.getInfo()).endAt.getTime() - Date.now();
		assert.ok(left > 30_000 && left <= 61_000, `fork's endAt ${left} ms away`);
	}
	// Writes after the fork are private to each.
	await forks[0].files.write('/home/user/state.txt', 'fork0');
	await src.files.write('/home/user/state.txt', 'after');
	assert.equal(await forks[1].files.read('/home/user/state.txt'), 'before');
	assert.equal(await forks[0].files.read('/home/user/state.txt'), 'fork0');
	assert.equal(await src.files.read('/home/user/state.txt'), 'after');
	assert.equal(await src.isRunning(), true);
	// The static form, with the API's default fork lifetime (15 s) when none is given.
	const [one] = await Sandbox.fork(src.sandboxId);
	assert.ok(one instanceof Sandbox);
	t.add(one);
	assert.equal(await one.files.read('/home/user/state.txt'), 'after');
	const left = (await one.getInfo()).endAt.getTime() - Date.now();
	assert.ok(left > 0 && left <= 16_000, `default fork lifetime: ${left} ms left`);
	await assert.rejects(Sandbox.fork('sbx_nosuchsandboxxxxxxx'), SandboxNotFoundError);
	await assert.rejects(src.fork({ count: 1000 }), /count 1000/);
});

// E2B's fork copies memory: sandlot's does for a source launched to hibernate (an
// autoPause create, when the criu binary is there: docs/e2b.md), whose processes each copy
// goes on with (`counter`, lib.mjs: a process with state only in memory).
const criu = process.env.SANDLOT_CRIU || '/usr/local/lib/sandlot/criu/4.1.1-2/criu';

test('fork of a sandbox launched to hibernate copies its memory', { skip: !existsSync(criu) && 'no criu' }, async () => {
	const src = t.add(await Sandbox.create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause' } }));
	assert.equal((await v1('GET', `/v1/sandboxes/${src.sandboxId}`)).hibernate, true);
	await src.commands.run(counter);
	await sleep(600);
	const before = await readCounter(src);
	const forks = await src.fork({ count: 2, timeoutMs: 60_000 });
	for (const f of forks) t.add(f);
	await sleep(800);
	for (const f of forks) {
		const now = await readCounter(f);
		assert.equal(now.tok, before.tok, 'the source\'s process, its memory copied');
		assert.ok(now.n > before.n, `the count went on in the copy (${before.n} -> ${now.n})`);
	}
	const later = await readCounter(src);
	assert.equal(later.tok, before.tok);
	assert.ok(later.n > before.n, 'the source runs on');
});

test('createSnapshot, listSnapshots, create from the snapshot id, deleteSnapshot', async () => {
	const src = t.add(await Sandbox.create({ timeoutMs: 120_000 }));
	await src.files.write('/home/user/snap.txt', 'in the snapshot');
	const info = await src.createSnapshot();
	assert.match(info.snapshotId, /^snp_/);
	const named = await Sandbox.createSnapshot(src.sandboxId, { name: 'e2b-fork-snap' });
	assert.deepEqual(named.names, ['e2b-fork-snap']);
	const list = async () => {
		const p = Sandbox.listSnapshots({ sandboxId: src.sandboxId });
		const all = [];
		while (p.hasNext) all.push(...(await p.nextItems()));
		return all;
	};
	const ids = (await list()).map((s) => s.snapshotId);
	assert.deepEqual(ids.sort(), [info.snapshotId, named.snapshotId].sort());
	const copy = t.add(await Sandbox.create(info.snapshotId, { timeoutMs: 60_000 }));
	assert.equal(await copy.files.read('/home/user/snap.txt'), 'in the snapshot');
	await copy.kill();
	assert.equal(await Sandbox.deleteSnapshot(info.snapshotId), true);
	assert.equal(await Sandbox.deleteSnapshot(info.snapshotId), false);
	assert.equal(await Sandbox.deleteSnapshot('e2b-fork-snap'), true);
	assert.deepEqual(await list(), []);
});

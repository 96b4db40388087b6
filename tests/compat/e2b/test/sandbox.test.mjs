// The control plane: create (default template, a snapshot name), info, timeout, list
// with metadata filters across pages, pause then connect, kill.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker, v1, sleep, sandlotKey } from '../lib.mjs';
import { Sandbox, SandboxNotFoundError, ALL_TRAFFIC } from 'e2b';

const t = tracker();
after(() => t.cleanup());

test('create from the default template, getInfo, metadata, kill', async () => {
	const sbx = t.add(await Sandbox.create({ metadata: { purpose: 'e2b-info' }, timeoutMs: 120_000 }));
	assert.match(sbx.sandboxId, /^sbx_/);
	assert.equal(await sbx.isRunning(), true);
	const info = await sbx.getInfo();
	assert.equal(info.sandboxId, sbx.sandboxId);
	assert.equal(info.templateId, 'base');
	assert.equal(info.state, 'running');
	assert.deepEqual(info.metadata, { purpose: 'e2b-info' });
	const left = info.endAt.getTime() - Date.now();
	assert.ok(left > 100_000 && left <= 121_000, `endAt is ${left} ms away`);
	// The default image is sandlot's: python3 and node are there.
	const r = await sbx.commands.run('python3 -c "print(6*7)" && node -e "console.log(1+1)"');
	assert.equal(r.stdout, '42\n2\n');
	assert.equal(await sbx.kill(), true);
	assert.equal(await sbx.isRunning(), false);
	assert.equal(await Sandbox.kill(sbx.sandboxId), false);
	await assert.rejects(sbx.getInfo(), SandboxNotFoundError);
	await assert.rejects(sbx.commands.run('true'), SandboxNotFoundError);
});

test('setTimeout moves the deadline, and a passed one kills the sandbox', async () => {
	const sbx = t.add(await Sandbox.create());
	const before = (await sbx.getInfo()).endAt.getTime() - Date.now();
	assert.ok(before > 250_000, `default timeout is 300 s, ${before} ms left`);
	await sbx.setTimeout(2_000);
	const after2 = (await sbx.getInfo()).endAt.getTime() - Date.now();
	assert.ok(after2 <= 2_000, `endAt ${after2} ms away after setTimeout(2000)`);
	let running = true;
	for (let i = 0; i < 40 && running; i++) {
		await sleep(250);
		running = await sbx.isRunning();
	}
	assert.equal(running, false, 'the sandbox outlived its timeout');
});

test('list with a metadata filter, across pages', async () => {
	const tag = `run-${process.pid}-${Date.now()}`;
	const ids = [];
	for (let i = 0; i < 3; i++) {
		const s = t.add(await Sandbox.create({ metadata: { tag, n: String(i), 'with space': 'a b&c' } }));
		ids.push(s.sandboxId);
	}
	t.add(await Sandbox.create({ metadata: { tag: 'other' } }));
	const pager = Sandbox.list({ query: { metadata: { tag, 'with space': 'a b&c' } }, limit: 2 });
	const pages = [];
	while (pager.hasNext) pages.push(await pager.nextItems());
	assert.equal(pages.length, 2);
	assert.deepEqual(pages.map((p) => p.length), [2, 1]);
	const seen = pages.flat();
	assert.deepEqual(seen.map((s) => s.sandboxId).sort(), [...ids].sort());
	for (const s of seen) {
		assert.equal(s.metadata.tag, tag);
		assert.equal(s.state, 'running');
		assert.ok(s.startedAt instanceof Date && !isNaN(s.startedAt));
	}
	const later = await Sandbox.list({ query: { metadata: { tag }, startedAfter: new Date(Date.now() + 60_000) } }).nextItems();
	assert.deepEqual(later, []);
	const none = await Sandbox.list({ query: { metadata: { tag: 'absent' } } }).nextItems();
	assert.deepEqual(none, []);
});

test('pause, then connect resumes with the files and processes kept', async () => {
	const sbx = t.add(await Sandbox.create());
	await sbx.files.write('/tmp/kept.txt', 'still here');
	const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 });
	assert.equal(await sbx.pause(), true);
	const paused1 = await sbx.getInfo();
	assert.equal(paused1.state, 'paused');
	// Paused sandboxes keep (no deadline) until connect sets a new one.
	assert.ok(paused1.endAt.getTime() - Date.now() > 86_400_000, 'no deadline while paused');
	assert.equal(await sbx.isRunning(), false);
	assert.equal(await sbx.pause(), false, 'a second pause says it was already paused');
	const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
	assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId));
	const again = await Sandbox.connect(sbx.sandboxId);
	assert.equal(await again.isRunning(), true);
	const left = (await again.getInfo()).endAt.getTime() - Date.now();
	assert.ok(left > 250_000 && left <= 300_000, `after resume, ${left} ms left`);
	assert.equal(await again.files.read('/tmp/kept.txt'), 'still here');
	const procs = await again.commands.list();
	assert.ok(procs.some((p) => p.pid === bg.pid), 'the background command survived the pause');
	await again.commands.kill(bg.pid);
});

test('metrics report the sandbox', async () => {
	const sbx = t.add(await Sandbox.create());
	const m = await sbx.getMetrics();
	assert.ok(m.length >= 1);
	assert.ok(m[0].memUsed > 0);
	assert.ok(m[0].cpuCount >= 1);
});

test('create from a snapshot name', async () => {
	const src = t.add(await Sandbox.create());
	await src.files.write('/home/user/from-snapshot.txt', 'snap');
	const name = `e2b-snap-${process.pid}`;
	await v1('POST', `/v1/sandboxes/${src.sandboxId}/snapshots`, { name });
	const sbx = t.add(await Sandbox.create(name));
	assert.equal(await sbx.files.read('/home/user/from-snapshot.txt'), 'snap');
	assert.equal((await sbx.getInfo()).templateId, name);
	await sbx.kill();
	await src.kill();
	await v1('DELETE', `/v1/snapshots/${name}`);
});

test('an unknown template is an error, a wrong key is refused', async () => {
	await assert.rejects(Sandbox.create('no-such-template'), /no-such-template/);
	await assert.rejects(Sandbox.create({ apiKey: 'wrong' }), (e) => e.name === 'AuthenticationError');
});

test('an API key of the form e2b_<hex> is the same key (E2B_VALIDATE_API_KEY unset)', async () => {
	delete process.env.E2B_VALIDATE_API_KEY;
	const apiKey = `e2b_${sandlotKey}`;
	const sbx = t.add(await Sandbox.create({ apiKey, timeoutMs: 60_000 }));
	const mine = await Sandbox.list({ apiKey, query: { state: ['running'] } }).nextItems();
	assert.ok(mine.some((s) => s.sandboxId === sbx.sandboxId));
	assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey }), true);
	await assert.rejects(Sandbox.list({ apiKey: `e2b_${'0'.repeat(64)}` }).nextItems(),
		(e) => e.name === 'AuthenticationError');
	await assert.rejects(Sandbox.list({ apiKey: `e2b_e2b_${sandlotKey}` }).nextItems(),
		(e) => e.name === 'AuthenticationError', 'the prefix is taken once');
});

test('list is newest first unless order asc is asked', async () => {
	const tag = `order-${process.pid}-${Date.now()}`;
	const ids = [];
	for (let i = 0; i < 3; i++) {
		ids.push(t.add(await Sandbox.create({ metadata: { tag }, timeoutMs: 60_000 })).sandboxId);
		await sleep(20);
	}
	const got = async (opts) =>
		(await Sandbox.list({ query: { metadata: { tag } }, ...opts }).nextItems()).map((s) => s.sandboxId);
	assert.deepEqual(await got({}), [...ids].reverse());
	assert.deepEqual(await got({ order: 'desc' }), [...ids].reverse());
	assert.deepEqual(await got({ order: 'asc' }), ids);
	const page = await Sandbox.list({ query: { metadata: { tag } }, limit: 1 }).nextItems();
	assert.deepEqual(page.map((s) => s.sandboxId), [ids[2]]);
	for (const id of ids) await Sandbox.kill(id);
});

test('connect to a running sandbox extends its timeout, never shortens it', async () => {
	const sbx = t.add(await Sandbox.create({ timeoutMs: 120_000 }));
	const left = async () => (await sbx.getInfo()).endAt.getTime() - Date.now();
	await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 });
	assert.ok((await left()) > 100_000, 'a shorter timeout on connect kept the longer one');
	await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 });
	const longer = await left();
	assert.ok(longer > 590_000 && longer <= 600_000, `after connect(600 s), ${longer} ms left`);
	await Sandbox.connect(sbx.sandboxId);
	assert.ok((await left()) > 590_000, 'connect without a timeout keeps it');
	await sbx.kill();
});

test('metrics honour start and end', async () => {
	const sbx = t.add(await Sandbox.create({ timeoutMs: 60_000 }));
	const start = new Date();
	const now = await sbx.getMetrics({ start, end: new Date() });
	assert.equal(now.length, 1);
	assert.ok(now[0].timestamp.getTime() >= start.getTime() - 10_000);
	const before = await sbx.getMetrics({
		start: new Date(start.getTime() - 3_600_000),
		end: new Date(start.getTime() - 1_800_000),
	});
	assert.deepEqual(before, []);
	const later = await sbx.getMetrics({ start: new Date(start.getTime() + 3_600_000) });
	assert.deepEqual(later, []);
	await assert.rejects(sbx.getMetrics({ start: new Date(start.getTime() + 60_000), end: start }));
	await sbx.kill();
});

test('network: off unless asked; allowInternetAccess and allowOut/denyOut reach /v1', async () => {
	const net = async (sbx) => (await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).network;
	const off = t.add(await Sandbox.create({ timeoutMs: 60_000 }));
	assert.equal((await net(off)).enabled, false);
	assert.equal((await off.commands.run('ls /sys/class/net')).stdout, 'lo\n');
	const on = t.add(await Sandbox.create({ allowInternetAccess: true, timeoutMs: 60_000 }));
	assert.equal((await net(on)).enabled, true);
	assert.match((await on.commands.run('ls /sys/class/net')).stdout, /eth0/);
	assert.equal((await on.getInfo()).allowInternetAccess, true);
	assert.equal((await off.getInfo()).allowInternetAccess, false);
	// E2B's "deny everything but X" is sandlot's allow [X].
	const only = t.add(await Sandbox.create({
		network: { denyOut: ['0.0.0.0/0'], allowOut: ['203.0.113.0/24'] }, timeoutMs: 60_000,
	}));
	const n = await net(only);
	assert.equal(n.enabled, true);
	assert.deepEqual(n.allow, ['203.0.113.0/24']);
	assert.deepEqual(n.deny ?? [], []);
	const closed = t.add(await Sandbox.create({ allowInternetAccess: false, timeoutMs: 60_000 }));
	assert.equal((await net(closed)).enabled, false);
});

test('network: domain names and ALL_TRAFFIC in allowOut/denyOut', async () => {
	const net = async (sbx) => (await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).network;
	// The SDK's own pattern: deny everything but some domains.
	const only = t.add(await Sandbox.create({
		network: { allowOut: ['*.github.com', 'pypi.org'], denyOut: [ALL_TRAFFIC] }, timeoutMs: 60_000,
	}));
	const n = await net(only);
	assert.equal(n.enabled, true);
	assert.deepEqual(n.allow, ['*.github.com', 'pypi.org']);
	const info = await only.getInfo();
	assert.deepEqual(info.network.allowOut, ['*.github.com', 'pypi.org']);
	assert.ok(info.network.denyOut.includes(ALL_TRAFFIC));
	// The sandbox resolves through the daemon: its resolv.conf names the gateway.
	const resolv = (await only.commands.run('cat /etc/resolv.conf')).stdout;
	assert.match(resolv, new RegExp(`nameserver ${n.gateway.replace(/\./g, '\\.')}`));
	// allowInternetAccess: false is denyOut ALL_TRAFFIC: with allowOut, only those.
	const some = t.add(await Sandbox.create({
		allowInternetAccess: false, network: { allowOut: ['Example.COM.'] }, timeoutMs: 60_000,
	}));
	assert.deepEqual((await net(some)).allow, ['example.com']);
	// A denied domain beside the open internet.
	const deny = t.add(await Sandbox.create({ network: { denyOut: ['evil.example'] }, timeoutMs: 60_000 }));
	const dn = await net(deny);
	assert.equal(dn.enabled, true);
	assert.deepEqual(dn.deny, ['evil.example']);
	assert.deepEqual(dn.allow ?? [], []);
	await assert.rejects(
		Sandbox.create({ network: { allowOut: ['not a domain'], denyOut: [ALL_TRAFFIC] } }),
		/400: network.allow\[0\]: "not a domain" is neither a CIDR nor a domain name/,
	);
});

test('updateNetwork: the rules replaced while it runs; on/off after create refused', async () => {
	const net = async (sbx) => (await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`)).network;
	const sbx = t.add(await Sandbox.create({
		network: { allowOut: ['pypi.org'], denyOut: [ALL_TRAFFIC] }, timeoutMs: 60_000,
	}));
	await sbx.updateNetwork({ allowOut: ['*.github.com', '198.51.100.0/24'], denyOut: [ALL_TRAFFIC] });
	assert.deepEqual((await net(sbx)).allow, ['*.github.com', '198.51.100.0/24']);
	assert.deepEqual((await sbx.getInfo()).network.allowOut, ['*.github.com', '198.51.100.0/24']);
	// Fields omitted are cleared (the SDK's words): the open internet, a denied name beside it.
	await sbx.updateNetwork({ denyOut: ['evil.example'] });
	const n = await net(sbx);
	assert.deepEqual(n.allow ?? [], []);
	assert.deepEqual(n.deny, ['evil.example']);
	await assert.rejects(sbx.updateNetwork({ allowOut: ['not a domain'], denyOut: [ALL_TRAFFIC] }),
		/400: network.allow\[0\]: "not a domain" is neither a CIDR nor a domain name/);
	await assert.rejects(sbx.updateNetwork({ rules: { 'api.example.com': [] } }), /400: rules: not supported/);
	// Network off at create: sandlot cannot turn it on.
	const off = t.add(await Sandbox.create({ timeoutMs: 60_000 }));
	await assert.rejects(off.updateNetwork({ allowOut: ['pypi.org'], denyOut: [ALL_TRAFFIC] }),
		/400: sandbox \S+ was created with its network off; sandlot cannot turn it on/);
	assert.equal((await net(off)).enabled, false);
	await assert.rejects(Sandbox.updateNetwork('sbx_nosuchsandbox0000000', { denyOut: ['a.example'] }),
		SandboxNotFoundError);
});

// envd's filesystem service and /files: write, read, list, makeDir, rename, remove,
// exists, uploads in both encodings, and a watch that sees a write.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker, sleep } from '../lib.mjs';
import { Sandbox, FileNotFoundError, SandboxError } from 'e2b';

const t = tracker();
let sbx;
before(async () => {
	sbx = t.add(await Sandbox.create());
});
after(() => t.cleanup());

test('write and read a file (relative paths start at the home)', async () => {
	const info = await sbx.files.write('notes/a.txt', 'hello files');
	assert.equal(info.path, '/home/user/notes/a.txt');
	assert.equal(info.name, 'a.txt');
	assert.equal(await sbx.files.read('/home/user/notes/a.txt'), 'hello files');
	assert.equal((await sbx.commands.run('cat notes/a.txt')).stdout, 'hello files');
	const bytes = await sbx.files.read('notes/a.txt', { format: 'bytes' });
	assert.equal(Buffer.from(bytes).toString(), 'hello files');
	// The file belongs to the sandbox user.
	assert.equal((await sbx.commands.run('stat -c %U notes/a.txt')).stdout, 'user\n');
});

test('binary content and an empty file round-trip, octet-stream too', async () => {
	const data = new Uint8Array(70000).map((_, i) => (i * 7) % 256);
	await sbx.files.write('/tmp/bin.dat', data.buffer);
	assert.deepEqual(new Uint8Array(await sbx.files.read('/tmp/bin.dat', { format: 'bytes' })), data);
	await sbx.files.write('/tmp/empty', '');
	assert.equal(await sbx.files.read('/tmp/empty'), '');
	await sbx.files.write('/tmp/octet.txt', 'via octet-stream', { useOctetStream: true });
	assert.equal(await sbx.files.read('/tmp/octet.txt'), 'via octet-stream');
	const big = 'gzip me '.repeat(50000);
	await sbx.files.write('/tmp/gz.txt', big, { gzip: true });
	assert.equal((await sbx.commands.run('wc -c < /tmp/gz.txt')).stdout.trim(), String(big.length));
	assert.equal(await sbx.files.read('/tmp/gz.txt', { gzip: true }), big);
});

test('write several files at once', async () => {
	const out = await sbx.files.write([
		{ path: '/tmp/multi/one.txt', data: '1' },
		{ path: '/tmp/multi/two.txt', data: '2' },
	]);
	assert.deepEqual(out.map((f) => f.path), ['/tmp/multi/one.txt', '/tmp/multi/two.txt']);
	assert.equal(await sbx.files.read('/tmp/multi/two.txt'), '2');
});

test('reading a missing file is FileNotFoundError', async () => {
	await assert.rejects(sbx.files.read('/nope/missing.txt'), FileNotFoundError);
});

test('makeDir, list, exists, getInfo, rename, remove', async () => {
	assert.equal(await sbx.files.makeDir('/tmp/d/e/f'), true);
	assert.equal(await sbx.files.makeDir('/tmp/d/e/f'), false, 'already there');
	await sbx.files.write('/tmp/d/x.txt', 'xx');
	const entries = await sbx.files.list('/tmp/d');
	assert.deepEqual(entries.map((e) => [e.name, e.type]), [['e', 'dir'], ['x.txt', 'file']]);
	const x = entries.find((e) => e.name === 'x.txt');
	assert.equal(x.path, '/tmp/d/x.txt');
	assert.equal(x.size, 2);
	assert.ok(x.modifiedTime instanceof Date);
	const deep = await sbx.files.list('/tmp/d', { depth: 3 });
	assert.ok(deep.some((e) => e.path === '/tmp/d/e/f'));
	assert.equal(await sbx.files.exists('/tmp/d/x.txt'), true);
	assert.equal(await sbx.files.exists('/tmp/d/none'), false);
	const info = await sbx.files.getInfo('/tmp/d/x.txt');
	assert.equal(info.type, 'file');
	assert.equal(info.permissions, '-rw-r--r--');
	const moved = await sbx.files.rename('/tmp/d/x.txt', '/tmp/d/y.txt');
	assert.equal(moved.path, '/tmp/d/y.txt');
	assert.equal(await sbx.files.exists('/tmp/d/x.txt'), false);
	assert.equal(await sbx.files.read('/tmp/d/y.txt'), 'xx');
	await sbx.files.remove('/tmp/d');
	assert.equal(await sbx.files.exists('/tmp/d'), false);
	await assert.rejects(sbx.files.list('/tmp/d'), FileNotFoundError);
});

test('removing a path that is not there succeeds, as envd does', async () => {
	await sbx.files.remove('/tmp/never-made.txt');
	await sbx.files.remove('/tmp/no-such-dir/below/x.txt');
	await sbx.files.remove('never-made-either');
	assert.equal(await sbx.files.exists('/tmp/never-made.txt'), false);
});

test('getInfo of a symlink gives its target as an absolute path', async () => {
	await sbx.files.write('link-target.txt', 'x');
	await sbx.commands.run('mkdir -p /tmp/ln/sub && ln -sf link-target.txt rel.lnk && ' +
		'ln -sf ../../etc/hostname /tmp/ln/sub/up.lnk && ln -sf /etc/passwd /tmp/ln/abs.lnk');
	const { stdout: home } = await sbx.commands.run('pwd');
	const rel = await sbx.files.getInfo('rel.lnk');
	assert.equal(rel.name, 'rel.lnk');
	assert.equal(rel.symlinkTarget, `${home.trim()}/link-target.txt`);
	assert.equal((await sbx.files.getInfo('/tmp/ln/sub/up.lnk')).symlinkTarget, '/tmp/etc/hostname');
	assert.equal((await sbx.files.getInfo('/tmp/ln/abs.lnk')).symlinkTarget, '/etc/passwd');
});

// E2B's suite (files/info.test.ts "get info of a directory") wants a new directory's
// size above 0: ext4's 4096. The writable layer is btrfs, where an empty directory is 0;
// the façade gives a directory's size as ext4 would (whole 4 KiB blocks, at least one).
test('a directory\'s size is ext4\'s, as E2B\'s filesystem gives it; a file\'s is its own', async () => {
	await sbx.files.makeDir('sized/empty');
	assert.equal((await sbx.commands.run('stat -c %s sized/empty')).stdout, '0\n', 'btrfs: an empty directory is 0');
	const dir = await sbx.files.getInfo('sized/empty');
	assert.equal(dir.type, 'dir');
	assert.equal(dir.size, 4096);
	const listed = await sbx.files.list('sized');
	assert.equal(listed.find((e) => e.name === 'empty').size, 4096);
	await sbx.files.write('sized/f.txt', 'five!');
	assert.equal((await sbx.files.getInfo('sized/f.txt')).size, 5);
	// Many names: btrfs counts their bytes twice; a whole number of blocks above that.
	await sbx.commands.run('cd sized/empty && for i in $(seq 1 300); do : > file-with-a-long-name-$i; done');
	const fs = Number((await sbx.commands.run('stat -c %s sized/empty')).stdout);
	assert.ok(fs > 4096, `btrfs gave ${fs}`);
	assert.equal((await sbx.files.getInfo('sized/empty')).size, Math.ceil(fs / 4096) * 4096);
});

test('file metadata (envd 0.6.2): stored as user.e2b.* xattrs, in every entry', async () => {
	// The SDK sends metadata only to an envd of 0.6.2 or later (else TemplateError).
	const meta = { author: 'mish', purpose: 'upload' };
	const w = await sbx.files.write('meta/a.txt', 'a', { metadata: meta });
	assert.deepEqual(w.metadata, meta);
	assert.deepEqual((await sbx.files.getInfo('meta/a.txt')).metadata, meta);
	const o = await sbx.files.write('meta/o.txt', 'o', { metadata: { k: 'v w' }, useOctetStream: true });
	assert.deepEqual(o.metadata, { k: 'v w' });
	assert.deepEqual((await sbx.files.getInfo('meta/o.txt')).metadata, { k: 'v w' });
	// Inside the sandbox they are plain extended attributes.
	const { stdout: home } = await sbx.commands.run('pwd');
	const py = (code) => sbx.commands.run(`python3 -c "${code}"`);
	const attrs = await py(`import os; p='${home.trim()}/meta/a.txt'; print(sorted((n, os.getxattr(p, n).decode()) for n in os.listxattr(p)))`);
	assert.equal(attrs.stdout, "[('user.e2b.author', 'mish'), ('user.e2b.purpose', 'upload')]\n");
	// ... and one set from inside shows up as metadata.
	await py(`import os; os.setxattr('${home.trim()}/meta/o.txt', 'user.e2b.set_inside', b'yes'); os.setxattr('${home.trim()}/meta/o.txt', 'user.other', b'no')`);
	assert.deepEqual((await sbx.files.getInfo('meta/o.txt')).metadata, { k: 'v w', set_inside: 'yes' });
	// Listing, writeFiles (the same metadata on each file), rename.
	const many = await sbx.files.writeFiles(
		[{ path: 'meta/m1.txt', data: '1' }, { path: 'meta/m2.txt', data: '2' }],
		{ metadata: { source: 'suite' } });
	assert.deepEqual(many.map((f) => f.metadata), [{ source: 'suite' }, { source: 'suite' }]);
	const listed = Object.fromEntries((await sbx.files.list('meta')).map((e) => [e.name, e.metadata]));
	assert.deepEqual(listed, { 'a.txt': meta, 'm1.txt': { source: 'suite' }, 'm2.txt': { source: 'suite' },
		'o.txt': { k: 'v w', set_inside: 'yes' } });
	const moved = await sbx.files.rename('meta/m1.txt', 'meta/renamed.txt');
	assert.deepEqual(moved.metadata, { source: 'suite' });
	// An overwrite replaces the metadata: no stale keys, none at all without.
	const again = await sbx.files.write('meta/a.txt', 'a2', { metadata: { author: 'other' } });
	assert.deepEqual(again.metadata, { author: 'other' });
	assert.deepEqual((await sbx.files.getInfo('meta/a.txt')).metadata, { author: 'other' });
	const plain = await sbx.files.write('meta/a.txt', 'a3');
	assert.equal(plain.metadata, undefined);
	assert.equal((await sbx.files.getInfo('meta/a.txt')).metadata, undefined);
	assert.equal((await sbx.files.getInfo('meta')).metadata, undefined);
});

test('bad metadata is refused by the daemon before any file is made', async () => {
	const url = new URL(await sbx.uploadUrl('meta/bad.txt', { useSignatureExpiration: 60_000 }));
	const post = (headers) => fetch(url, { method: 'POST', body: 'x',
		headers: { 'Content-Type': 'application/octet-stream', ...headers } });
	const bad = await post({ 'X-Metadata-good': 'tab\there' });
	assert.equal(bad.status, 400, await bad.clone().text());
	assert.match((await bad.json()).message, /printable ASCII/);
	assert.equal(await sbx.files.exists('meta/bad.txt'), false);
	const many = {};
	for (let i = 0; i < 65; i++) many[`X-Metadata-k${i}`] = 'v';
	assert.equal((await post(many)).status, 400);
	assert.equal(await sbx.files.exists('meta/bad.txt'), false);
	const ok = await post({ 'X-Metadata-Mixed-Case': 'v' });
	assert.deepEqual((await ok.json())[0].metadata, { 'mixed-case': 'v' });
});

test('watchDir sees a write', async () => {
	await sbx.files.makeDir('/tmp/watched');
	const events = [];
	const w = await sbx.files.watchDir('/tmp/watched', (e) => events.push(e));
	await sbx.files.write('/tmp/watched/new.txt', 'seen');
	await sbx.commands.run('echo more >> /tmp/watched/new.txt; rm /tmp/watched/new.txt');
	for (let i = 0; i < 50 && !events.some((e) => e.type === 'remove'); i++) await sleep(100);
	await w.stop();
	const kinds = events.filter((e) => e.name === 'new.txt').map((e) => e.type);
	assert.ok(kinds.includes('create'), `events: ${JSON.stringify(events)}`);
	assert.ok(kinds.includes('write'), `events: ${JSON.stringify(events)}`);
	assert.ok(kinds.includes('remove'), `events: ${JSON.stringify(events)}`);
});

test('a recursive watch sees directories made after it started', async () => {
	await sbx.files.makeDir('/tmp/tree/a');
	const events = [];
	const w = await sbx.files.watchDir('/tmp/tree', (e) => events.push(e), { recursive: true });
	await sbx.files.write('/tmp/tree/a/in-a.txt', '1');
	await sbx.files.makeDir('/tmp/tree/b/c');
	await sleep(300);
	await sbx.files.write('/tmp/tree/b/c/deep.txt', '2');
	const want = ['a/in-a.txt', 'b', 'b/c/deep.txt'];
	for (let i = 0; i < 50 && !want.every((n) => events.some((e) => e.name === n)); i++) await sleep(100);
	await w.stop();
	for (const n of want) assert.ok(events.some((e) => e.name === n && e.type === 'create'), `${n} in ${JSON.stringify(events)}`);
});

test('includeEntry (envd 0.6.3): events carry the entry as getInfo gives it, none once gone', async () => {
	await sbx.files.makeDir('watch_entry');
	await sbx.files.write('watch_entry/f.txt', 'one');
	const events = [];
	const w = await sbx.files.watchDir('watch_entry', (e) => events.push(e), { includeEntry: true });
	await sbx.files.write('watch_entry/f.txt', 'two, longer');
	await sbx.files.makeDir('watch_entry/sub');
	await sbx.commands.run('rm watch_entry/f.txt');
	const done = () => events.some((e) => e.type === 'remove' && e.name === 'f.txt') && events.some((e) => e.name === 'sub');
	for (let i = 0; i < 50 && !done(); i++) await sleep(100);
	await w.stop();
	const write = events.find((e) => e.type === 'write' && e.name === 'f.txt');
	assert.ok(write, `events: ${JSON.stringify(events)}`);
	assert.equal(write.entry?.name, 'f.txt');
	assert.equal(write.entry?.path, '/home/user/watch_entry/f.txt');
	assert.equal(write.entry?.type, 'file');
	assert.equal(write.entry?.owner, 'user');
	const sub = events.find((e) => e.type === 'create' && e.name === 'sub');
	assert.equal(sub?.entry?.type, 'dir');
	assert.equal(sub?.entry?.path, '/home/user/watch_entry/sub');
	const removed = events.find((e) => e.type === 'remove' && e.name === 'f.txt');
	assert.equal(removed.entry, undefined, 'a removed file has no entry');
	// Without the option, events carry none.
	const plain = [];
	const w2 = await sbx.files.watchDir('watch_entry', (e) => plain.push(e));
	await sbx.files.write('watch_entry/g.txt', 'x');
	for (let i = 0; i < 50 && !plain.length; i++) await sleep(100);
	await w2.stop();
	assert.ok(plain.length && plain.every((e) => e.entry === undefined), JSON.stringify(plain));
});

test('allowNetworkMounts (envd 0.6.4) is accepted, and a local directory watches the same', async () => {
	await sbx.files.makeDir('watch_net');
	const events = [];
	const w = await sbx.files.watchDir('watch_net', (e) => events.push(e), { allowNetworkMounts: true, recursive: true });
	await sbx.files.write('watch_net/n.txt', 'x');
	for (let i = 0; i < 50 && !events.some((e) => e.name === 'n.txt'); i++) await sleep(100);
	await w.stop();
	assert.ok(events.some((e) => e.name === 'n.txt' && e.type === 'create'), JSON.stringify(events));
});

test('watching a file, or a directory that is not there, is refused', async () => {
	await sbx.files.write('watch_me_not.txt', 'x');
	await assert.rejects(sbx.files.watchDir('watch_me_not.txt', () => {}), (e) => e instanceof SandboxError && !(e instanceof FileNotFoundError));
	await assert.rejects(sbx.files.watchDir('no_such_watch_dir', () => {}), FileNotFoundError);
});

test('signed upload and download URLs work without headers', async () => {
	/* Without an expiry, refused: E2B's are good for the sandbox's life, sandlot's default
	 * is not (the daemon's --provider-defaults gives E2B's). */
	const forever = await sbx.uploadUrl('/tmp/signed/up.txt');
	assert.equal((await fetch(forever, { method: 'POST', body: new FormData() })).status, 401);
	const up = await sbx.uploadUrl('/tmp/signed/up.txt', { useSignatureExpiration: 60 });
	const form = new FormData();
	form.append('file', new Blob(['through a signed URL']), 'up.txt');
	const res = await fetch(up, { method: 'POST', body: form });
	assert.equal(res.status, 200, up + ' ' + (await res.clone().text()));
	assert.equal(await sbx.files.read('/tmp/signed/up.txt'), 'through a signed URL');
	const down = await sbx.downloadUrl('/tmp/signed/up.txt', { useSignatureExpiration: 60 });
	assert.equal(await (await fetch(down)).text(), 'through a signed URL');
	const forged = new URL(down);
	forged.searchParams.set('path', '/etc/shadow');
	assert.equal((await fetch(forged)).status, 401);
	const plain = new URL(down);
	plain.searchParams.delete('signature');
	assert.notEqual((await fetch(plain)).status, 200);
});

test('expired and forged signed URLs get envd\'s 401 and words', async () => {
	await sbx.files.write('/tmp/signed/old.txt', 'old');
	const body = async (res) => [res.status, await res.json()];
	const expired = { code: 401, message: 'signature is already expired' };
	const invalid = { code: 401, message: 'invalid signature' };
	const down = await sbx.downloadUrl('/tmp/signed/old.txt', { useSignatureExpiration: -10_000 });
	assert.deepEqual(await body(await fetch(down)), [401, expired]);
	// The same through the sandbox plane's headers (no X-Access-Token): still expired.
	const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' };
	assert.deepEqual(await body(await fetch(down, { headers })), [401, expired]);
	const up = await sbx.uploadUrl('/tmp/signed/old.txt', { useSignatureExpiration: -100_000 });
	const form = new FormData();
	form.append('file', new Blob(['new']), 'old.txt');
	assert.deepEqual(await body(await fetch(up, { method: 'POST', body: form })), [401, expired]);
	assert.equal(await sbx.files.read('/tmp/signed/old.txt'), 'old');
	// A forged signature is "invalid", expired or not: the signature is judged first.
	const forged = new URL(down);
	forged.searchParams.set('signature', 'v1_forged');
	assert.deepEqual(await body(await fetch(forged)), [401, invalid]);
	assert.deepEqual(await body(await fetch(forged, { headers })), [401, invalid]);
	const good = await sbx.downloadUrl('/tmp/signed/old.txt', { useSignatureExpiration: 10_000 });
	assert.equal(await (await fetch(good, { headers })).text(), 'old');
});

test('files as root', async () => {
	await sbx.files.write('/root/secret.txt', 'r00t', { user: 'root' });
	assert.equal(await sbx.files.read('secret.txt', { user: 'root' }), 'r00t');
});

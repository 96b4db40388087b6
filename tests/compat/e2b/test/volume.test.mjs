// The Volume client over sandlot's named volumes: /volumes (create, list, getInfo,
// destroy; the id is the name), volumeMounts at create, and the volume content API
// (readFile, writeFile, list, makeDir, getInfo, updateMetadata, remove) with the volume's
// own token; what one sandbox writes another reads; hostile names, paths and symlinks.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker, v1, sandlotUrl } from '../lib.mjs';
import {
	AuthenticationError,
	Sandbox,
	Volume,
	VolumeError,
	VolumeFileType,
	VolumeNotFoundError,
	VolumePathNotFoundError,
} from 'e2b';

// What an E2B user sets to reach the content API (api.<domain> otherwise).
process.env.E2B_VOLUME_API_URL = sandlotUrl;

const t = tracker();
const made = [];
after(async () => {
	await t.cleanup();
	for (const id of made) await Volume.destroy(id).catch(() => {});
});
const vname = (s) => `e2b-vol-${process.pid}-${s}`;

test('volume: create, getInfo, connect, list, destroy; the id is the name; /v1 sees the same', async () => {
	const name = vname('crud');
	made.push(name);
	const vol = await Volume.create(name);
	assert.equal(vol.volumeId, name);
	assert.equal(vol.name, name);
	assert.match(vol.token, /^[0-9a-f]{64}$/);
	const info = await Volume.getInfo(name);
	assert.deepEqual({ ...info, domain: undefined }, { volumeId: name, name, token: vol.token, domain: undefined });
	assert.equal((await Volume.connect(name)).token, vol.token);
	assert.ok((await Volume.list()).some((v) => v.volumeId === name && v.name === name));
	assert.ok((await v1('GET', '/v1/volumes')).volumes.some((v) => v.name === name));
	// A name in use, a bad name, and unknown ids.
	await assert.rejects(Volume.create(name), (e) => e instanceof VolumeError && /409: .*already exists/.test(e.message));
	await assert.rejects(Volume.create('../etc'), (e) => e instanceof VolumeError && /400: .*volume name/.test(e.message));
	await assert.rejects(Volume.create('Bad Name'), (e) => e instanceof VolumeError && /400:/.test(e.message));
	await assert.rejects(Volume.getInfo(vname('nosuch')), VolumeNotFoundError);
	await assert.rejects(Volume.getInfo('..%2F..'), VolumeNotFoundError);
	assert.equal(await Volume.destroy(name), true);
	assert.equal(await Volume.destroy(name), false);
	assert.ok(!(await Volume.list()).some((v) => v.volumeId === name));
	// Made again under the same name, it has a new token; the old one opens nothing.
	made.push(name);
	const again = await Volume.create(name);
	assert.notEqual(again.token, vol.token);
	await assert.rejects(vol.list('/'), AuthenticationError);
	assert.deepEqual(await again.list('/'), []);
});

test('volume: file operations through the content API', async () => {
	const vol = await Volume.create(vname('files'));
	made.push(vol.volumeId);
	const st = await vol.writeFile('/hello.txt', 'Hello, volume');
	assert.equal(st.name, 'hello.txt');
	assert.equal(st.path, '/hello.txt');
	assert.equal(st.type, VolumeFileType.FILE);
	assert.equal(st.size, 13);
	assert.equal(st.mode, 0o644);
	assert.equal(st.uid, 0);
	assert.ok(st.mtime instanceof Date && !isNaN(st.mtime));
	assert.equal(await vol.readFile('/hello.txt'), 'Hello, volume');
	assert.deepEqual(await vol.readFile('hello.txt', { format: 'bytes' }), new TextEncoder().encode('Hello, volume'));
	// Overwrite only with force (as E2B's content API answers).
	await assert.rejects(vol.writeFile('/hello.txt', 'x', { force: false }), (e) => e instanceof VolumeError && /409:/.test(e.message));
	await vol.writeFile('/hello.txt', 'second', { force: true });
	assert.equal(await vol.readFile('/hello.txt'), 'second');
	// Binary, empty, and streamed bodies.
	const bin = new Uint8Array(256).map((_, i) => i);
	await vol.writeFile('/bin', bin.buffer);
	assert.deepEqual(await vol.readFile('/bin', { format: 'bytes' }), bin);
	await vol.writeFile('/empty', '');
	assert.equal(await vol.readFile('/empty'), '');
	await vol.writeFile('/streamed', new Blob(['from a stream']).stream());
	assert.equal(await vol.readFile('/streamed'), 'from a stream');

	// Directories: a missing parent is "not found" unless force (mkdir -p).
	await assert.rejects(vol.makeDir('/a/b/c'), VolumePathNotFoundError);
	const d = await vol.makeDir('/a/b/c', { force: true, uid: 1000, gid: 1000, mode: 0o750 });
	assert.equal(d.type, VolumeFileType.DIRECTORY);
	assert.equal(d.uid, 1000);
	assert.equal(d.mode, 0o750);
	await assert.rejects(vol.makeDir('/a/b/c'), (e) => e instanceof VolumeError && /409:/.test(e.message));
	assert.equal((await vol.makeDir('/a/b/c', { force: true })).path, '/a/b/c');
	await vol.writeFile('/a/b/c/deep.txt', 'deep', { uid: 1000, gid: 1000, mode: 0o600 });
	await assert.rejects(vol.writeFile('/nodir/x.txt', 'x'), VolumePathNotFoundError);
	const top = await vol.list('/');
	assert.deepEqual(top.map((e) => e.name), ['a', 'bin', 'empty', 'hello.txt', 'streamed']);
	const deep = await vol.list('/a', { depth: 3 });
	assert.deepEqual(deep.map((e) => e.path), ['/a/b', '/a/b/c', '/a/b/c/deep.txt']);
	assert.equal(deep[2].mode, 0o600);
	await assert.rejects(vol.list('/nosuch'), VolumePathNotFoundError);

	// getInfo, exists, updateMetadata, remove.
	assert.equal((await vol.getInfo('/a/b/c/deep.txt')).size, 4);
	assert.equal(await vol.exists('/a/b'), true);
	assert.equal(await vol.exists('/a/nosuch'), false);
	const up = await vol.updateMetadata('/hello.txt', { uid: 1000, gid: 1001, mode: 0o640 });
	assert.deepEqual([up.uid, up.gid, up.mode], [1000, 1001, 0o640]);
	await assert.rejects(vol.updateMetadata('/hello.txt', { uid: 70000 }), (e) => e instanceof VolumeError && /400:/.test(e.message));
	await vol.remove('/a');
	assert.equal(await vol.exists('/a/b/c/deep.txt'), false);
	await assert.rejects(vol.remove('/a'), VolumePathNotFoundError);
	await assert.rejects(vol.remove('/'), (e) => e instanceof VolumeError && /400:/.test(e.message));
	await assert.rejects(vol.readFile('/nosuch'), VolumePathNotFoundError);
});

test('volume: hostile paths and tokens are refused', async () => {
	const vol = await Volume.create(vname('hostile'));
	const other = await Volume.create(vname('other'));
	made.push(vol.volumeId, other.volumeId);
	for (const p of ['../../../etc/passwd', '/../x', 'a/../../b']) {
		await assert.rejects(vol.readFile(p), (e) => e instanceof VolumeError && /400: .*"\.\." is not allowed/.test(e.message), p);
		await assert.rejects(vol.writeFile(p, 'x'), (e) => e instanceof VolumeError && /400:/.test(e.message), p);
	}
	await assert.rejects(vol.readFile(''), (e) => e instanceof VolumeError);
	// A volume's token opens that volume only; no token, a wrong one, or the API key: 401.
	const stolen = new Volume(other.volumeId, other.name, vol.token);
	await assert.rejects(stolen.readFile('/x'), AuthenticationError);
	await assert.rejects(new Volume(vol.volumeId, vol.name, 'f'.repeat(64)).list('/'), AuthenticationError);
	await assert.rejects(new Volume(vol.volumeId, vol.name, process.env.E2B_API_KEY).list('/'), AuthenticationError);
	const bare = await fetch(`${sandlotUrl}/volumecontent/${vol.volumeId}/dir?path=/`);
	assert.equal(bare.status, 401);
	// Big ids and modes are refused before anything is made.
	await assert.rejects(vol.writeFile('/big-uid', 'x', { uid: 65536 }), (e) => e instanceof VolumeError && /400:/.test(e.message));
	assert.equal(await vol.exists('/big-uid'), false);
	await assert.rejects(vol.makeDir('/m', { mode: 0o170000 }), (e) => e instanceof VolumeError && /400:/.test(e.message));
});

test('volume: mounted at create, written by one sandbox, read by another; symlinks never followed; in use is 409', async () => {
	const vol = await Volume.create(vname('shared'));
	made.push(vol.volumeId);
	await assert.rejects(
		Sandbox.create({ volumeMounts: { '/mnt/x': vname('nosuch') } }).then((s) => t.add(s)),
		(e) => /400: .*volume .* not found/.test(e.message),
	);
	// Host directories are no E2B volumes; mount paths are /v1's rule (absolute, not /, no ..).
	for (const [path, name] of [['/mnt/x', '/etc'], ['/', vol.name], ['/mnt/../etc', vol.name], ['rel', vol.name]]) {
		await assert.rejects(
			Sandbox.create({ volumeMounts: { [path]: name } }).then((s) => t.add(s)),
			(e) => /400: /.test(e.message),
			`${path} ${name}`,
		);
	}
	const a = t.add(await Sandbox.create({ volumeMounts: { '/mnt/data': vol } }));
	assert.deepEqual((await a.getInfo()).volumeMounts, [{ name: vol.name, path: '/mnt/data' }]);
	// A directory the sandbox's user owns, made through the content API: the ids a volume
	// stores are the ones sandboxes see.
	const uid = Number((await a.commands.run('id -u')).stdout.trim());
	const gid = Number((await a.commands.run('id -g')).stdout.trim());
	await vol.makeDir('/shared', { uid, gid });
	await a.commands.run('echo from-a > /mnt/data/shared/a.txt && mkdir /mnt/data/shared/sub');
	const st = await vol.getInfo('/shared/a.txt');
	assert.deepEqual([st.uid, st.gid, st.size], [uid, gid, 7]);
	assert.equal(await vol.readFile('/shared/a.txt'), 'from-a\n');
	await vol.writeFile('/shared/from-api.txt', 'from the API', { uid, gid });

	const b = t.add(await Sandbox.create({ volumeMounts: { '/srv/vol': vol.name } }));
	assert.equal((await b.commands.run('cat /srv/vol/shared/a.txt')).stdout, 'from-a\n');
	assert.equal(await b.files.read('/srv/vol/shared/from-api.txt'), 'from the API');
	assert.equal((await b.commands.run('stat -c %u:%g /srv/vol/shared/a.txt')).stdout.trim(), `${uid}:${gid}`);
	await b.commands.run('echo from-b > /srv/vol/shared/b.txt');
	assert.equal((await a.commands.run('cat /mnt/data/shared/b.txt')).stdout, 'from-b\n');

	// Links and a FIFO planted by sandbox code: listed as what they are, never followed.
	await a.commands.run(
		'ln -s /etc /mnt/data/shared/etc-link && ln -s /etc/hostname /mnt/data/shared/file-link && ' +
			'ln -s .. /mnt/data/shared/up && mkfifo /mnt/data/shared/fifo',
		{ user: 'root' },
	);
	const names = Object.fromEntries((await vol.list('/shared')).map((e) => [e.name, e]));
	assert.equal(names['etc-link'].type, VolumeFileType.SYMLINK);
	assert.equal(names['etc-link'].target, '/etc');
	for (const p of ['/shared/etc-link/passwd', '/shared/file-link', '/shared/up/shared/a.txt']) {
		await assert.rejects(vol.readFile(p), (e) => e instanceof VolumeError && /400: .*symlink/.test(e.message), p);
	}
	await assert.rejects(vol.writeFile('/shared/file-link', 'pwned', { force: true }), (e) => e instanceof VolumeError && /400: .*symlink/.test(e.message));
	await assert.rejects(vol.writeFile('/shared/etc-link/pwned', 'x'), (e) => e instanceof VolumeError && /400: .*symlink/.test(e.message));
	await assert.rejects(vol.list('/shared/etc-link'), (e) => e instanceof VolumeError && /400:/.test(e.message));
	await assert.rejects(vol.updateMetadata('/shared/file-link', { mode: 0o777 }), (e) => e instanceof VolumeError && /400:/.test(e.message));
	await assert.rejects(vol.readFile('/shared/fifo'), (e) => e instanceof VolumeError && /400: .*not a regular file/.test(e.message));
	await assert.rejects(vol.writeFile('/shared/fifo', 'x', { force: true }), (e) => e instanceof VolumeError && /409:/.test(e.message));
	assert.equal((await a.commands.run('cat /etc/hostname')).exitCode, 0);
	// Removing a link removes the link, not what it points at.
	await vol.remove('/shared/etc-link');
	assert.equal(await vol.exists('/shared/etc-link'), false);
	assert.equal((await a.commands.run('test -f /etc/passwd && echo ok')).stdout, 'ok\n');

	// A volume a sandbox mounts is not deleted (409, as /v1 answers); once both are gone it is.
	await assert.rejects(Volume.destroy(vol.volumeId), (e) => e instanceof VolumeError && /409: .*mounted by sandbox/.test(e.message));
	assert.equal(await vol.readFile('/shared/b.txt'), 'from-b\n');
	await a.kill();
	await b.kill();
	assert.equal(await Volume.destroy(vol.volumeId), true);
	await assert.rejects(vol.readFile('/shared/b.txt'), AuthenticationError);
});

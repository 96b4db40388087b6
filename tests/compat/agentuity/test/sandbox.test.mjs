// The real @agentuity/core SandboxClient (pinned in package-lock.json) against sandlot's
// /agentuity façade on a real daemon (tests/compat/run-suite.sh starts it). The client is
// configured only as its users do: AGENTUITY_SANDBOX_URL and AGENTUITY_SDK_KEY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import {
	SandboxClient,
	APIClient,
	sandboxExecute,
	executionGet,
	sandboxDownloadArchive,
	sandboxUploadArchive,
	SandboxNotFoundError,
} from '@agentuity/core';

const base = `${process.env.SANDLOT_URL}/agentuity`;
process.env.AGENTUITY_SANDBOX_URL = base;
process.env.AGENTUITY_SDK_KEY = process.env.SANDLOT_API_KEY;

const client = new SandboxClient();
const quiet = {
	trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {},
	child() { return quiet; },
};
// The low-level calls SandboxClient itself uses, for steps it hides (execute without
// waiting, archives).
const api = new APIClient(base, quiet, process.env.SANDLOT_API_KEY, { maxRetries: 0 });

const made = [];
after(async () => {
	for (const id of made) await client.destroy(id).catch(() => {});
});

async function create(opts = {}) {
	const sb = await client.create(opts);
	made.push(sb.id);
	return sb;
}

const text = async (url) => {
	const res = await fetch(url); // no Authorization: the URL is the capability
	assert.equal(res.status, 200, `GET ${url}`);
	return res.text();
};

test('create, then execute with a non-zero exit read back through the long-poll', async () => {
	const sb = await create({ resources: { memory: '256Mi', cpu: '500m' }, env: { GREETING: 'hi' } });
	assert.match(sb.id, /^sbx_/);
	const ex = await sb.execute({ command: ['sh', '-c', 'echo "$GREETING"; exit 3'] });
	assert.equal(ex.exitCode, 3);
	assert.equal(ex.status, 'completed');
	assert.equal(typeof ex.durationMs, 'number');
	assert.equal(await text(ex.stdoutStreamUrl), 'hi\n');
	const ok = await sb.execute({ command: ['true'] });
	assert.equal(ok.exitCode, 0);
	// pipe: the client reads both streams to their end before it polls.
	const got = { out: '', err: '' };
	const sink = (k) => new Writable({ write(c, _e, cb) { got[k] += c; cb(); } });
	const piped = await sb.execute({
		command: ['sh', '-c', 'echo to-out; sleep 1; echo to-err >&2; exit 4'],
		pipe: { stdout: sink('out'), stderr: sink('err') },
	});
	assert.equal(piped.exitCode, 4);
	assert.deepEqual(got, { out: 'to-out\n', err: 'to-err\n' });
});

test('execution timeouts: per execute and the sandbox default', async () => {
	const sb = await create({ timeout: { execution: '1s' } });
	const t0 = Date.now();
	const dflt = await sb.execute({ command: ['sleep', '30'] });
	assert.equal(dflt.status, 'timeout');
	assert.equal(typeof dflt.exitCode, 'number');
	const own = await sb.execute({ command: ['sh', '-c', 'sleep 2; echo done'], timeout: '10s' });
	assert.equal(own.status, 'completed');
	assert.equal(await text(own.stdoutStreamUrl), 'done\n');
	assert.ok(Date.now() - t0 < 20000);
	assert.equal((await client.get(sb.id)).timeout.execution, '1s');
});

test('stream URLs: output while running, EOF at exit, whole again afterwards', async () => {
	const sb = await create();
	const started = await sandboxExecute(api, {
		sandboxId: sb.id,
		options: { command: ['sh', '-c', 'echo first; echo oops >&2; sleep 2; echo second'] },
	});
	assert.ok(started.stdoutStreamUrl.startsWith('http://'), started.stdoutStreamUrl);
	assert.notEqual(started.stdoutStreamUrl, started.stderrStreamUrl);
	const res = await fetch(started.stdoutStreamUrl);
	assert.equal(res.status, 200);
	const reader = res.body.getReader();
	const first = new TextDecoder().decode((await reader.read()).value);
	assert.equal(first, 'first\n');
	// The first bytes arrived while the command was still running.
	const mid = await executionGet(api, { executionId: started.executionId });
	assert.equal(mid.status, 'running');
	let rest = '';
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		rest += new TextDecoder().decode(value);
	}
	assert.equal(rest, 'second\n');
	const done = await executionGet(api, { executionId: started.executionId, wait: '30s' });
	assert.equal(done.status, 'completed');
	assert.equal(done.exitCode, 0);
	assert.equal(await text(started.stdoutStreamUrl), 'first\nsecond\n');
	assert.equal(await text(`${started.stderrStreamUrl}?v=2`), 'oops\n');
	// A forged token is refused like a missing stream.
	const forged = started.stdoutStreamUrl.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
	assert.equal((await fetch(forged)).status, 404);
});

test('writeFiles and readFile, text and binary', async () => {
	const sb = await create();
	const bin = new Uint8Array(256).map((_, i) => i);
	const n = await sb.writeFiles([
		{ path: 'hello.txt', content: new TextEncoder().encode('héllo\n') },
		{ path: '/tmp/sub/dir/all-bytes.bin', content: bin },
	]);
	assert.equal(n, 2);
	assert.equal(await new Response(await sb.readFile('hello.txt')).text(), 'héllo\n');
	const back = new Uint8Array(await new Response(await sb.readFile('/tmp/sub/dir/all-bytes.bin')).arrayBuffer());
	assert.deepEqual(back, bin);
	// The workspace is execute's working directory too.
	const cat = await sb.execute({ command: ['cat', 'hello.txt'] });
	assert.equal(cat.exitCode, 0);
	assert.equal(await text(cat.stdoutStreamUrl), 'héllo\n');
	await assert.rejects(sb.readFile('no-such-file'), /404/);
	const files = await sb.listFiles('/tmp/sub/dir');
	assert.deepEqual(files.map((f) => [f.path, f.size, f.isDir]), [['all-bytes.bin', 256, false]]);
	await sb.mkDir('/tmp/made/deep', true);
	assert.deepEqual(await sb.rmDir('/tmp/made', true), { found: true });
	assert.deepEqual(await sb.rmFile('hello.txt'), { found: true });
	assert.deepEqual(await sb.rmFile('hello.txt'), { found: false });
});

test('tar.gz and zip archives: upload unpacks, download packs', async () => {
	const sb = await create();
	await sb.writeFiles([{ path: '/srv/a/one.txt', content: new TextEncoder().encode('one\n') }]);
	const tgz = await sandboxDownloadArchive(api, { sandboxId: sb.id, path: '/srv/a', format: 'tar.gz' });
	const bytes = new Uint8Array(await new Response(tgz).arrayBuffer());
	assert.deepEqual([...bytes.slice(0, 2)], [0x1f, 0x8b]); // gzip
	await sandboxUploadArchive(api, { sandboxId: sb.id, path: '/srv/b', format: 'tar.gz', archive: bytes });
	assert.equal(await new Response(await sb.readFile('/srv/b/one.txt')).text(), 'one\n');
	const zip = await sandboxDownloadArchive(api, { sandboxId: sb.id, path: '/srv/a', format: 'zip' });
	const zbytes = new Uint8Array(await new Response(zip).arrayBuffer());
	assert.deepEqual([...zbytes.slice(0, 2)], [0x50, 0x4b]); // PK
	await sandboxUploadArchive(api, { sandboxId: sb.id, path: '/srv/c', format: 'zip', archive: zbytes });
	assert.equal(await new Response(await sb.readFile('/srv/c/one.txt')).text(), 'one\n');
	await assert.rejects(
		sandboxUploadArchive(api, { sandboxId: sb.id, path: '/srv/d', format: 'tar.gz', archive: new TextEncoder().encode('not a tarball') }),
		/400/
	);
});

test('list and get', async () => {
	const sb = await create({ name: `agentuity-list-${process.pid}`, metadata: { team: 'qa' } });
	const ran = await sb.execute({ command: ['true'] });
	const execs = await client.listExecutions(sb.id);
	assert.deepEqual(execs.executions.map((e) => [e.executionId, e.exitCode]), [[ran.executionId, 0]]);
	const info = await client.get(sb.id);
	assert.equal(info.sandboxId, sb.id);
	assert.equal(info.status, 'idle');
	assert.equal(info.executions, 1);
	assert.ok(!Number.isNaN(Date.parse(info.createdAt)));
	assert.deepEqual(info.metadata, { team: 'qa' });
	assert.equal(info.resources.memory !== undefined, true);
	const all = await client.list();
	const entry = all.sandboxes.find((s) => s.sandboxId === sb.id);
	assert.ok(entry, 'the sandbox is listed');
	assert.equal(typeof entry.org.id, 'string');
	assert.ok(all.total >= 1);
	const byName = await client.list({ name: `agentuity-list-${process.pid}` });
	assert.deepEqual(byName.sandboxes.map((s) => s.sandboxId), [sb.id]);
	assert.equal(byName.total, 1);
	const none = await client.list({ status: 'running', name: `agentuity-list-${process.pid}` });
	assert.equal(none.total, 0);
});

test('destroy', async () => {
	const sb = await client.create();
	await client.destroy(sb.id);
	await assert.rejects(client.get(sb.id), (e) => e.status === 404);
	const listed = await client.list();
	assert.ok(!listed.sandboxes.some((s) => s.sandboxId === sb.id));
	const deleted = await client.list({ status: 'deleted' });
	assert.equal(deleted.sandboxes.find((s) => s.sandboxId === sb.id)?.status, 'deleted');
	await assert.rejects(sb.execute({ command: ['true'] }), SandboxNotFoundError);
	await assert.rejects(client.destroy(sb.id), (e) => e.status === 404);
});

test('one-shot run: exit code and output', async () => {
	const res = await client.run({
		command: { exec: ['sh', '-c', 'echo run-ok; echo run-err >&2; exit 7'] },
	});
	made.push(res.sandboxId);
	assert.equal(res.exitCode, 7);
	assert.equal(res.stdout, 'run-ok\n');
	assert.equal(res.stderr, 'run-err\n');
	assert.equal(typeof res.durationMs, 'number');
	const info = await client.get(res.sandboxId);
	assert.equal(info.status, 'terminated');
	assert.equal(info.exitCode, 7);
	assert.equal(info.mode, 'oneshot');
	const after = await client.connect(res.sandboxId);
	await assert.rejects(after.execute({ command: ['true'] }), (e) => e.status === 410);
	const zero = await client.run({ command: { exec: ['sh', '-c', 'printf ok'] } });
	made.push(zero.sandboxId);
	assert.equal(zero.exitCode, 0);
	assert.equal(zero.stdout, 'ok');
});

test('an unknown id', async () => {
	const id = 'sbx_aaaaaaaaaaaaaaaaaaaa';
	await assert.rejects(client.get(id), (e) => e.status === 404);
	await assert.rejects(client.destroy(id), (e) => e.status === 404);
	await assert.rejects(
		sandboxExecute(api, { sandboxId: id, options: { command: ['true'] } }),
		SandboxNotFoundError
	);
	await assert.rejects(client.readFile(id, 'x'), /404/);
	await assert.rejects(executionGet(api, { executionId: 'exe_aaaaaaaaaaaaaaaaaaaa' }), (e) => e.status === 404);
});

test('pause and resume; execute auto-resumes', async () => {
	const sb = await create();
	const p = await client.pause(sb.id);
	assert.equal(p.status, 'suspended');
	assert.equal((await client.get(sb.id)).status, 'suspended');
	await client.resume(sb.id);
	assert.equal((await client.get(sb.id)).status, 'idle');
	await client.pause(sb.id);
	const ex = await sb.execute({ command: ['true'] });
	assert.equal(ex.exitCode, 0);
	assert.equal((await client.get(sb.id)).status, 'idle');
});

test('snapshots: create, get, list, start from, delete', async () => {
	const sb = await create();
	await sb.writeFiles([{ path: '/srv/kept.txt', content: new TextEncoder().encode('kept') }]);
	const snap = await client.createSnapshot(sb.id, { name: `ag-snap-${process.pid}` });
	assert.match(snap.snapshotId, /^snp_/);
	assert.equal((await client.getSnapshot(snap.snapshotId)).snapshotId, snap.snapshotId);
	const listed = await client.listSnapshots({ sandboxId: sb.id });
	assert.deepEqual(listed.snapshots.map((s) => s.snapshotId), [snap.snapshotId]);
	const from = await create({ snapshot: snap.snapshotId });
	assert.equal(await new Response(await from.readFile('/srv/kept.txt')).text(), 'kept');
	assert.equal((await client.get(from.id)).snapshot.id, snap.snapshotId);
	await client.destroy(from.id);
	await client.deleteSnapshot(snap.snapshotId);
	await assert.rejects(client.getSnapshot(snap.snapshotId), (e) => e.status === 404);
});

test('cloud-only features answer NOT_IMPLEMENTED', async () => {
	await assert.rejects(client.listRuntimes(), (e) => e.status === 501 && /Agentuity cloud/.test(e.message));
	await assert.rejects(client.create({ network: { enabled: true, port: 8080 } }), (e) => e.status === 501 && /network\.port/.test(e.message));
});

test('dependencies (apt) and packages (npm) are installed at create; network reaches /v1', async () => {
	// From the suite's own apt repository and npm registry (setup.sh).
	const dep = await create({ dependencies: ['sandlot-tiny'], packages: ['sandlot-tiny@1.0.0'] });
	const deb = await dep.execute({ command: ['/usr/bin/sandlot-tiny'] });
	assert.equal(deb.exitCode, 0);
	assert.equal(await text(deb.stdoutStreamUrl), 'tiny deb\n');
	const js = await dep.execute({ command: ['node', '-e', 'console.log(require("sandlot-tiny").answer)'] });
	assert.equal(await text(js.stdoutStreamUrl), '42\n');
	// A package that does not exist: the create fails with the installer's words.
	await assert.rejects(create({ dependencies: ['sandlot-no-such-package'] }), (e) => {
		assert.ok(e.status >= 400 && e.status < 500, String(e));
		assert.match(e.message, /sandlot-no-such-package/);
		return true;
	});
	const sb = await create({ network: { enabled: true } });
	assert.equal((await client.get(sb.id)).networkEnabled, true);
	const off = await create({ network: { enabled: false } });
	assert.equal((await client.get(off.id)).networkEnabled, false);
});

test('wire details: envelope on errors, 401 without the key, JSON bodies on destroy', async () => {
	const noKey = await fetch(`${base}/sandbox`);
	assert.equal(noKey.status, 401);
	const body = await noKey.json();
	assert.equal(body.success, false);
	assert.equal(typeof body.message, 'string');
	const auth = { Authorization: `Bearer ${process.env.SANDLOT_API_KEY}` };
	const unknown = await fetch(`${base}/no/such/route`, { headers: auth });
	assert.equal(unknown.status, 404);
	assert.equal((await unknown.json()).success, false);
	const created = await fetch(`${base}/sandbox`, {
		method: 'POST',
		headers: { ...auth, 'Content-Type': 'application/json' },
		body: '{}',
	});
	const { data } = await created.json();
	const del = await fetch(`${base}/sandbox/${data.sandboxId}?orgId=org_x`, { method: 'DELETE', headers: auth });
	assert.equal(del.status, 200);
	assert.match(del.headers.get('content-type'), /application\/json/);
	assert.deepEqual(await del.json(), { success: true });
	const gone = await fetch(`${base}/sandbox/${data.sandboxId}`, { headers: auth });
	assert.equal(gone.status, 404);
	assert.equal((await gone.json()).code, 'SANDBOX_NOT_FOUND');
});

test('a oneshot sandbox is reclaimed once its command ended and nobody asks', async () => {
	const res = await client.run({ command: { exec: ['sh', '-c', 'exit 5'] } });
	assert.equal(res.exitCode, 5);
	const auth = { Authorization: `Bearer ${process.env.SANDLOT_API_KEY}` };
	const deadline = Date.now() + 40000;
	let status;
	while (Date.now() < deadline) {
		// A call on the sandbox counts as activity and would keep it; the list does not.
		const list = await (await fetch(`${process.env.SANDLOT_URL}/v1/sandboxes?status=terminated`, { headers: auth })).json();
		status = list.sandboxes.find((s) => s.id === res.sandboxId)?.status;
		if (status === 'terminated') break;
		await new Promise((r) => setTimeout(r, 1000));
	}
	assert.equal(status, 'terminated', `${res.sandboxId} was not reclaimed`);
	// Its exit code outlives it.
	const info = await client.get(res.sandboxId);
	assert.equal(info.status, 'terminated');
	assert.equal(info.exitCode, 5);
});

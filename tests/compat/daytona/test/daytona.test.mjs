// The Daytona TypeScript SDK (@daytonaio/sdk, pinned in package-lock.json) against
// sandlot's /api + /toolbox façade on a real daemon: the user's code is unchanged, only
// DAYTONA_API_URL and DAYTONA_API_KEY point at sandlot. Run by tests/compat/run-suite.sh.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import {
  Daytona,
  DaytonaNotFoundError,
  DaytonaValidationError,
  DaytonaTimeoutError,
  DaytonaFileNotFoundError,
  DaytonaAuthenticationError,
  DaytonaConflictError,
  DaytonaError,
} from '@daytonaio/sdk';

const run = promisify(execFile);
const base = process.env.SANDLOT_URL;
const key = process.env.SANDLOT_API_KEY;
assert.ok(base && key, 'run through tests/compat/run-suite.sh (SANDLOT_URL, SANDLOT_API_KEY)');
process.env.DAYTONA_API_URL = `${base}/api`;
process.env.DAYTONA_API_KEY = key;
const daytona = new Daytona();
const tag = `run-${Date.now()}`;
const made = [];

// /v1 on the same daemon, to check that what the façade made is an ordinary sandbox.
async function v1(path, init = {}) {
  const res = await fetch(`${base}/v1${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, ...(init.headers || {}) },
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function create(params) {
  const sb = await daytona.create({ labels: { suite: tag }, ...params }, { timeout: 120 });
  made.push(sb);
  return sb;
}

after(async () => {
  for (const sb of made) await sb.delete().catch(() => {});
});

let py, ts;

test('create a python sandbox: language, env, labels, resources, autostop', async () => {
  py = await create({
    language: 'python',
    envVars: { COMPAT_FOO: 'bar' },
    labels: { suite: tag, role: 'py' },
    resources: { cpu: 1, memory: 1, disk: 2 },
    autoStopInterval: 30,
  });
  assert.match(py.id, /^sbx_/);
  assert.equal(py.state, 'started');
  assert.equal(py.labels['code-toolbox-language'], 'python');
  assert.equal(py.labels.role, 'py');
  assert.equal(py.env.COMPAT_FOO, 'bar');
  assert.equal(py.cpu, 1);
  assert.equal(py.memory, 1);
  assert.equal(py.disk, 2);
  assert.equal(py.autoStopInterval, 30);
  assert.match(py.toolboxProxyUrl, /\/toolbox$/);
  // An ordinary sandlot sandbox: /v1 sees it, with the same labels and timeouts.
  const got = await v1(`/sandboxes/${py.id}`);
  assert.equal(got.status, 200);
  assert.equal(got.body.status, 'running');
  assert.equal(got.body.labels['code-toolbox-language'], 'python');
  assert.equal(got.body.timeout.idle, 30 * 60000);
  assert.equal(got.body.resources.disk, '2Gi');
  assert.equal(got.body.resources.memory, '1Gi');
  const again = await daytona.get(py.id);
  assert.equal(again.state, 'started');
  assert.equal(again.env.COMPAT_FOO, 'bar');
});

test('executeCommand: output, exit code, cwd, env, timeout', async () => {
  let r = await py.process.executeCommand('echo out; echo err >&2; echo $COMPAT_FOO');
  assert.equal(r.exitCode, 0);
  assert.equal(r.result, 'out\nerr\nbar\n');
  r = await py.process.executeCommand('pwd', '/tmp');
  assert.equal(r.result.trim(), '/tmp');
  r = await py.process.executeCommand('echo "$A-$B"', undefined, { A: 'x y', B: '2' });
  assert.equal(r.result, 'x y-2\n');
  r = await py.process.executeCommand('exit 3');
  assert.equal(r.exitCode, 3);
  const t0 = Date.now();
  await assert.rejects(py.process.executeCommand('sleep 30', undefined, undefined, 1), (e) => {
    assert.ok(e instanceof DaytonaTimeoutError, `${e.name}: ${e.message}`);
    return true;
  });
  assert.ok(Date.now() - t0 < 10000, 'the timeout ended the command');
});

test('codeRun python: success and error', async () => {
  let r = await py.process.codeRun('import os\nprint(1 + 1)\nprint(os.environ.get("COMPAT_FOO"))');
  assert.equal(r.exitCode, 0);
  assert.equal(r.result, '2\nbar\n');
  r = await py.process.codeRun('print("before")\nraise ValueError("boom")');
  assert.notEqual(r.exitCode, 0);
  assert.match(r.result, /before/);
  assert.match(r.result, /ValueError: boom/);
});

test('create a typescript sandbox; codeRun typescript: success and error', async () => {
  ts = await create({ language: 'typescript', labels: { suite: tag, role: 'ts' } });
  assert.equal(ts.labels['code-toolbox-language'], 'typescript');
  let r = await ts.process.codeRun('const x: number = 21;\nconsole.log(x * 2);');
  assert.equal(r.exitCode, 0);
  assert.equal(r.result, '42\n');
  r = await ts.process.codeRun('const s: string = "a";\nthrow new Error("bad " + s);');
  assert.notEqual(r.exitCode, 0);
  assert.match(r.result, /bad a/);
});

test('files: upload and download a text and a 5 MB binary file in one call each', async () => {
  const text = Buffer.from('hello from daytona\nsecond line\n');
  const bin = randomBytes(5 * 1024 * 1024);
  await py.fs.uploadFiles([
    { source: text, destination: '/tmp/up/a.txt' },
    { source: bin, destination: '/tmp/up/deep/b.bin' },
  ]);
  const got = await py.fs.downloadFiles([{ source: '/tmp/up/a.txt' }, { source: '/tmp/up/deep/b.bin' }]);
  assert.equal(got.length, 2);
  const byName = Object.fromEntries(got.map((g) => [g.source, g]));
  assert.equal(byName['/tmp/up/a.txt'].error, undefined);
  assert.ok(Buffer.from(byName['/tmp/up/a.txt'].result).equals(text));
  assert.ok(Buffer.from(byName['/tmp/up/deep/b.bin'].result).equals(bin), 'binary round trip');
  // The same file seen from inside.
  const r = await py.process.executeCommand('wc -c < /tmp/up/deep/b.bin');
  assert.equal(r.result.trim(), String(bin.length));
  // downloadFile of one file, and a missing one among several.
  assert.ok((await py.fs.downloadFile('/tmp/up/a.txt')).equals(text));
  const mixed = await py.fs.downloadFiles([{ source: '/tmp/up/a.txt' }, { source: '/tmp/up/nope' }]);
  const nope = mixed.find((m) => m.source === '/tmp/up/nope');
  assert.ok(nope.error, 'a missing file is an error entry');
});

test('files: list, details, folder, move, permissions, find, search, delete', async () => {
  await py.fs.createFolder('/tmp/work', '755');
  await py.fs.uploadFiles([
    { source: Buffer.from('alpha\nneedle here\n'), destination: '/tmp/work/one.txt' },
    { source: Buffer.from('nothing\n'), destination: '/tmp/work/two.md' },
  ]);
  const list = await py.fs.listFiles('/tmp/work');
  assert.deepEqual(list.map((f) => f.name).sort(), ['one.txt', 'two.md']);
  const one = list.find((f) => f.name === 'one.txt');
  assert.equal(one.isDir, false);
  assert.equal(one.size, 18);
  await py.fs.uploadFiles([{ source: Buffer.from('x'), destination: '/tmp/work/sub/deep.txt' }]);
  const tree = await py.fs.listFiles('/tmp/work', { depth: 2 });
  assert.deepEqual(tree.map((f) => f.path).sort(),
    ['/tmp/work/one.txt', '/tmp/work/sub', '/tmp/work/sub/deep.txt', '/tmp/work/two.md']);
  await py.fs.deleteFile('/tmp/work/sub', true);
  const dir = await py.fs.getFileDetails('/tmp/work');
  assert.equal(dir.isDir, true);
  assert.equal(dir.permissions, '0755');
  await py.fs.moveFiles('/tmp/work/two.md', '/tmp/work/three.md');
  assert.deepEqual((await py.fs.listFiles('/tmp/work')).map((f) => f.name).sort(), ['one.txt', 'three.md']);
  await py.fs.setFilePermissions('/tmp/work/one.txt', { mode: '600' });
  const info = await py.fs.getFileDetails('/tmp/work/one.txt');
  assert.equal(info.permissions, '0600');
  assert.equal(info.mode, '-rw-------');
  const found = await py.fs.findFiles('/tmp/work', 'needle here');
  assert.equal(found.length, 1);
  assert.equal(found[0].file, '/tmp/work/one.txt');
  assert.equal(found[0].line, 2);
  assert.equal(found[0].content, 'needle here');
  const search = await py.fs.searchFiles('/tmp/work', '*.txt');
  assert.deepEqual(search.files, ['/tmp/work/one.txt']);
  await py.fs.deleteFile('/tmp/work/three.md');
  await assert.rejects(py.fs.getFileDetails('/tmp/work/three.md'), DaytonaFileNotFoundError);
  await py.fs.deleteFile('/tmp/work', true);
  await assert.rejects(py.fs.listFiles('/tmp/work'), DaytonaNotFoundError);
  assert.ok(await py.getWorkDir());
  assert.equal(await py.getUserHomeDir(), (await py.process.executeCommand('printf %s "$HOME"')).result);
});

test('sessions: cd and export carry over; sync results', async () => {
  await py.process.createSession('s1');
  let r = await py.process.executeSessionCommand('s1', { command: 'cd /tmp && export GREETING=hello && X=local' });
  assert.equal(r.exitCode, 0);
  assert.ok(r.cmdId);
  r = await py.process.executeSessionCommand('s1', { command: 'pwd; echo "$GREETING $X"; echo oops >&2; false' });
  assert.equal(r.exitCode, 1);
  assert.equal(r.stdout, '/tmp\nhello local\n');
  assert.equal(r.stderr, 'oops\n');
  // A syntax error is a failed command, not the end of the session.
  r = await py.process.executeSessionCommand('s1', { command: 'if then fi (' });
  assert.notEqual(r.exitCode, 0);
  r = await py.process.executeSessionCommand('s1', { command: 'echo still $GREETING' });
  assert.equal(r.stdout, 'still hello\n');
  const s = await py.process.getSession('s1');
  assert.equal(s.sessionId, 's1');
  assert.equal(s.commands.length, 4);
  assert.equal(s.commands[1].exitCode, 1);
  assert.ok((await py.process.listSessions()).some((x) => x.sessionId === 's1'));
});

test('sessions: async command with logs streamed over the WebSocket', async () => {
  const r = await py.process.executeSessionCommand('s1', {
    command: 'for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.3; done',
    runAsync: true,
  });
  assert.ok(r.cmdId);
  assert.equal(r.exitCode, undefined);
  const running = await py.process.getSessionCommand('s1', r.cmdId);
  assert.equal(running.exitCode, undefined, 'still running right after the 202');
  let out = '';
  let err = '';
  await py.process.getSessionCommandLogs('s1', r.cmdId, (c) => (out += c), (c) => (err += c));
  assert.equal(out, 'out1\nout2\nout3\n');
  assert.equal(err, 'err1\nerr2\nerr3\n');
  const done = await py.process.getSessionCommand('s1', r.cmdId);
  assert.equal(done.exitCode, 0);
  const logs = await py.process.getSessionCommandLogs('s1', r.cmdId);
  assert.equal(logs.stdout, 'out1\nout2\nout3\n');
  assert.equal(logs.stderr, 'err1\nerr2\nerr3\n');
  await py.process.deleteSession('s1');
  await assert.rejects(py.process.getSession('s1'), DaytonaNotFoundError);
});

test('getPreviewLink: the URL reaches a server in the sandbox (curl)', async () => {
  await py.fs.uploadFiles([{ source: Buffer.from('preview ok\n'), destination: '/tmp/www/index.html' }]);
  await py.process.createSession('web');
  await py.process.executeSessionCommand('web', {
    command: 'cd /tmp/www && exec python3 -m http.server 8080 --bind 127.0.0.1',
    runAsync: true,
  });
  const link = await py.getPreviewLink(8080);
  assert.match(link.url, new RegExp(`^http://8080-${py.id}\\.localhost:${process.env.SANDLOT_PREVIEW_PORT}/`));
  let body = '';
  for (let i = 0; i < 50 && body !== 'preview ok\n'; i++) {
    body = await run('curl', ['-s', '--max-time', '5', link.url]).then((o) => o.stdout, () => '');
    if (body !== 'preview ok\n') await new Promise((res) => setTimeout(res, 200));
  }
  assert.equal(body, 'preview ok\n');
  // Another local user (uid 65534) gets in only with the link's token, sent as the
  // SDK's docs say: the x-daytona-preview-token header.
  assert.match(link.token, /^[0-9a-f]{64}$/);
  assert.equal(py.public, false);
  assert.equal(await curlAsNobody(link.url), '401');
  assert.equal(await curlAsNobody(link.url, { 'x-daytona-preview-token': 'f'.repeat(64) }), '401');
  assert.equal(await curlAsNobody(link.url, { 'x-daytona-preview-token': link.token }), '200');
  await py.process.deleteSession('web');
});

// The HTTP status of GET URL as uid 65534 (the suite runs as root, always let in).
function curlAsNobody(url, headers = {}) {
  const args = ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '5'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  return run('curl', args, { uid: 65534, gid: 65534 }).then((o) => o.stdout, (e) => e.stdout || 'error');
}

test('public: true opens the preview to every local user, without a token', async () => {
  const sb = await create({ public: true });
  assert.equal(sb.public, true);
  await sb.fs.uploadFiles([{ source: Buffer.from('public ok\n'), destination: '/tmp/www/index.html' }]);
  await sb.process.createSession('web');
  await sb.process.executeSessionCommand('web', {
    command: 'cd /tmp/www && exec python3 -m http.server 8081 --bind 127.0.0.1',
    runAsync: true,
  });
  const link = await sb.getPreviewLink(8081);
  let status = '';
  for (let i = 0; i < 50 && status !== '200'; i++) {
    status = await curlAsNobody(link.url);
    if (status !== '200') await new Promise((res) => setTimeout(res, 200));
  }
  assert.equal(status, '200');
  const { body } = await v1(`/sandboxes/${sb.id}`);
  assert.deepEqual(body.ports, { '*': { public: true } });
  await sb.delete();
});

test('list: cursor pagination across pages, label filter', async () => {
  // A third sandbox from a Daytona "snapshot" that is a sandlot image name.
  await create({ snapshot: 'busybox', labels: { suite: tag, role: 'bb' } });
  const seen = [];
  for await (const sb of daytona.list({ labels: { suite: tag }, limit: 2 })) seen.push(sb);
  assert.equal(seen.length, 3);
  assert.ok(seen.every((s) => s.toolboxProxyUrl && s.state === 'started'));
  // The wire: the first page holds 2 and names the next.
  const res = await fetch(`${base}/api/sandbox?limit=2&labels=${encodeURIComponent(JSON.stringify({ suite: tag }))}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  const page = await res.json();
  assert.equal(page.items.length, 2);
  assert.ok(page.nextCursor);
});

test('stop and start keep files', async () => {
  await ts.fs.uploadFiles([{ source: Buffer.from('kept\n'), destination: '/root/keep.txt' }]);
  await ts.stop();
  assert.equal(ts.state, 'stopped');
  assert.equal((await v1(`/sandboxes/${ts.id}`)).body.status, 'stopped');
  await ts.start();
  assert.equal(ts.state, 'started');
  assert.equal((await ts.fs.downloadFile('/root/keep.txt')).toString(), 'kept\n');
});

test('labels and autostop', async () => {
  const labels = await py.setLabels({ suite: tag, role: 'changed', 'code-toolbox-language': 'python' });
  assert.equal(labels.role, 'changed');
  await py.refreshActivity();
  await py.setAutostopInterval(0);
  const got = await daytona.get(py.id);
  assert.equal(got.autoStopInterval, 0);
  assert.equal(got.labels.role, 'changed');
});

test('autoDeleteInterval: 0 deletes on stop; below -1 is refused', async () => {
  const eph = await create({ ephemeral: true, labels: { suite: tag, role: 'eph' } });
  assert.equal(eph.autoDeleteInterval, 0);
  await eph.stop();
  await assert.rejects(daytona.get(eph.id), DaytonaNotFoundError);
  await assert.rejects(create({ autoDeleteInterval: -2 }), /autoDeleteInterval/);
});

test('fork: a copy of the files of the instant, writes after private; createSnapshot(name)', async () => {
  const src = await create({ labels: { suite: tag, role: 'fork-src' } });
  await src.fs.uploadFile(Buffer.from('before'), '/root/f.txt');
  const fork = await src.fork({ name: `fk-${tag}` });
  made.push(fork);
  assert.notEqual(fork.id, src.id);
  assert.equal(fork.name, `fk-${tag}`);
  assert.equal(fork.state, 'started');
  assert.equal(fork.labels.role, 'fork-src');
  assert.equal((await fork.fs.downloadFile('/root/f.txt')).toString(), 'before');
  await fork.fs.uploadFile(Buffer.from('fork'), '/root/f.txt');
  assert.equal((await src.fs.downloadFile('/root/f.txt')).toString(), 'before');
  assert.equal((await v1(`/sandboxes/${fork.id}`)).body.forkedFrom, src.id);
  // createSnapshot: a sandlot snapshot of that name, which a create's snapshot takes.
  await src.createSnapshot(`dsnap-${tag}`);
  assert.equal(src.state, 'started');
  const from = await create({ snapshot: `dsnap-${tag}`, labels: { suite: tag } });
  assert.equal((await from.fs.downloadFile('/root/f.txt')).toString(), 'before');
  await assert.rejects(src.createSnapshot('Not A Name'), /name/);
});

test('intervals in minutes: stored, archive(), auto-delete and auto-archive enforced', async () => {
  const sb = await create({ autoArchiveInterval: 7, autoDeleteInterval: -1, labels: { suite: tag } });
  assert.equal(sb.autoArchiveInterval, 7);
  assert.equal(sb.autoDeleteInterval, -1);
  await sb.setAutoArchiveInterval(5);
  await sb.setAutoDeleteInterval(120);
  let got = await daytona.get(sb.id);
  assert.equal(got.autoArchiveInterval, 5);
  assert.equal(got.autoDeleteInterval, 120);
  // archive() of the usual launch: stopped with its files kept (it cannot be hibernated);
  // start brings it back.
  await sb.fs.uploadFile(Buffer.from('kept'), '/root/a.txt');
  await sb.archive();
  assert.equal(sb.state, 'archived');
  assert.equal((await v1(`/sandboxes/${sb.id}`)).body.status, 'stopped');
  await sb.start();
  assert.equal(sb.state, 'started');
  assert.equal((await sb.fs.downloadFile('/root/a.txt')).toString(), 'kept');
  // autoDeleteInterval 0 set later: deleted once stopped (the daemon's sweep, each second).
  const del = await create({ labels: { suite: tag } });
  await del.setAutoDeleteInterval(0);
  await del.stop();
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    gone = await daytona.get(del.id).then(() => false, (e) => e instanceof DaytonaNotFoundError);
    if (!gone) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(gone, 'a sandbox with autoDeleteInterval 0 outlived its stop');
  // autoStopInterval 1: stopped after a minute without activity (timeout.idle, the same
  // sweep), waited for alongside the archive below.
  const idle = await create({ autoStopInterval: 1, labels: { suite: tag } });
  assert.equal(idle.autoStopInterval, 1);
  assert.equal((await v1(`/sandboxes/${idle.id}`)).body.timeout.idle, 60000);
  // autoArchiveInterval 1: archived a minute after its stop.
  const arc = await create({ autoArchiveInterval: 1, labels: { suite: tag } });
  await arc.stop();
  let state = '';
  for (let i = 0; i < 80 && state !== 'archived'; i++) {
    state = (await daytona.get(arc.id)).state;
    if (state !== 'archived') await new Promise((r) => setTimeout(r, 1000));
  }
  assert.equal(state, 'archived');
  // Looked for in /v1's list (a call on the sandbox itself would be activity): the idle
  // one stops within a minute of its last call.
  let idleState = '';
  for (let i = 0; i < 40 && idleState !== 'stopped'; i++) {
    const list = (await v1('/sandboxes?limit=1000')).body;
    const items = list.sandboxes;
    idleState = items.find((x) => x.id === idle.id)?.status;
    if (idleState !== 'stopped') await new Promise((r) => setTimeout(r, 1000));
  }
  assert.equal(idleState, 'stopped', 'autoStopInterval 1 did not stop an idle sandbox');
  await assert.rejects(sb.setAutoArchiveInterval(-1), /autoArchiveInterval/);
});

// archive() of a sandbox launched to hibernate (made through /v1 with "hibernate": true,
// as the Daytona API has no word for it) keeps its memory: CRIU's dump, /v1 "hibernated",
// Daytona "archived"; start() restores it, the same process running on. (A sandbox of the
// usual launch is stopped with its files kept: the test above.)
test('archive() hibernates a sandbox launched to; start() restores its processes', async (t) => {
  const criu = process.env.SANDLOT_CRIU || '/usr/local/lib/sandlot/criu/4.1.1-2/criu';
  if (!existsSync(criu)) return t.skip(`no criu at ${criu}`);
  const made1 = await v1('/sandboxes', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ image: 'default', hibernate: true, labels: { suite: tag } }),
  });
  assert.equal(made1.status, 201, JSON.stringify(made1.body));
  const sb = await daytona.get(made1.body.id);
  made.push(sb);
  const pid = (await sb.process.executeCommand("sh -c 'sleep 600 >/dev/null 2>&1 </dev/null & echo $!'")).result.trim();
  assert.match(pid, /^[0-9]+$/, 'the pid of a process left running');
  await sb.archive();
  assert.equal(sb.state, 'archived');
  assert.equal((await v1(`/sandboxes/${sb.id}`)).body.status, 'hibernated');
  assert.equal((await daytona.get(sb.id)).state, 'archived');
  assert.ok(!existsSync(`/sys/fs/cgroup/memory/sandlot/${sb.id}`), 'no cgroup left while archived');
  await sb.archive(); // archiving an archived sandbox changes nothing
  assert.equal((await v1(`/sandboxes/${sb.id}`)).body.status, 'hibernated');
  await sb.start();
  assert.equal(sb.state, 'started');
  assert.equal((await v1(`/sandboxes/${sb.id}`)).body.status, 'running');
  const r = await sb.process.executeCommand(`cat /proc/${pid}/cmdline`);
  assert.equal(r.exitCode, 0, 'the process archived with it runs again, the same pid');
  assert.match(r.result, /sleep/);
});

test('secrets: {ENV: name} from a /v1 secret is the env of commands, never in the record', async () => {
  const value = `sv-${randomBytes(16).toString('hex')}`;
  const name = `dt-${tag}`;
  const set = await v1('/secrets', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, value }),
  });
  assert.equal(set.status, 201);
  try {
    const sb = await create({ secrets: { COMPAT_TOKEN: name }, labels: { suite: tag, role: 'secret' } });
    // Its hash, not the value: the value stays out of the command's own output.
    const r = await sb.process.executeCommand('printf %s "$COMPAT_TOKEN" | sha256sum');
    const { createHash } = await import('node:crypto');
    assert.equal(r.result.split(' ')[0], createHash('sha256').update(value).digest('hex'));
    const got = (await v1(`/sandboxes/${sb.id}`)).body;
    assert.deepEqual(got.secrets, { COMPAT_TOKEN: name });
    assert.ok(!JSON.stringify(got).includes(value));
    await sb.delete();
    await assert.rejects(create({ secrets: { T: 'no-such-secret' } }), (e) => {
      assert.ok(e instanceof DaytonaError, `${e.name}: ${e.message}`);
      assert.match(e.message, /no-such-secret/);
      return true;
    });
  } finally {
    await v1(`/secrets/${name}`, { method: 'DELETE' });
  }
});

test('the Secret service: create, get, update, list pages, delete, over the /v1 store', async () => {
  const { createHash } = await import('node:crypto');
  const val = () => `sv-${randomBytes(16).toString('hex')}`;
  const sha = (v) => createHash('sha256').update(v).digest('hex');
  const name = `dts-a-${tag}`, other = `dts-b-${tag}`;
  const v = val(), v2 = val();
  try {
    const s = await daytona.secret.create({ name, value: v });
    assert.equal(s.id, name);
    assert.equal(s.name, name);
    assert.deepEqual(s.hosts, []);
    assert.equal(s.placeholder, '');
    assert.ok(!Number.isNaN(Date.parse(s.createdAt)));
    // Create never replaces; update does, and keeps the creation date.
    await assert.rejects(daytona.secret.create({ name, value: v2 }), DaytonaConflictError);
    const u = await daytona.secret.update(name, { value: v2 });
    assert.equal(u.createdAt, s.createdAt);
    assert.equal((await daytona.secret.update(name, {})).updatedAt, u.updatedAt);
    assert.equal((await daytona.secret.get(name)).name, name);
    await assert.rejects(daytona.secret.get('no-such-secret'), DaytonaNotFoundError);
    await assert.rejects(daytona.secret.update('no-such-secret', { value: 'x' }), DaytonaNotFoundError);
    await daytona.secret.create({ name: other, value: val() });
    // Pages of one, filtered by name, in name order.
    const seen = [];
    let cursor;
    do {
      const p = await daytona.secret.list({ cursor, limit: 1, name: tag, sort: 'name', order: 'asc' });
      assert.equal(p.total, 2);
      seen.push(...p.items.map((i) => i.name));
      cursor = p.nextCursor ?? undefined;
    } while (cursor);
    assert.deepEqual(seen, [name, other]);
    // One store: /v1 lists it; no answer holds a value.
    assert.ok((await v1('/secrets')).body.secrets.some((x) => x.name === name));
    for (const path of ['/api/secret', '/api/secret/paginated', `/api/secret/${name}`]) {
      const res = await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${key}` } });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.ok(text.includes(name) && !text.includes(v) && !text.includes(v2), `${path}: ${text}`);
    }
    // The new value is what a sandbox referencing it gets.
    const sb = await create({ secrets: { TOK: name }, labels: { suite: tag, role: 'secret2' } });
    const r = await sb.process.executeCommand('printf %s "$TOK" | sha256sum');
    assert.equal(r.result.split(' ')[0], sha(v2));
    await sb.delete();

    // Bad input: each a clear error with its status.
    const refused = (status, re) => (e) => {
      assert.ok(e instanceof DaytonaError, `${e.name}: ${e.message}`);
      assert.equal(e.statusCode, status, e.message);
      assert.match(e.message, re);
      return true;
    };
    await assert.rejects(daytona.secret.create({ name: 'a/b', value: 'x' }), refused(400, /secret name "a\/b"/));
    await assert.rejects(daytona.secret.create({ name: `big-${tag}`, value: 'a'.repeat(1_000_000) }), refused(413, /./));
    await assert.rejects(daytona.secret.create({ name: `big-${tag}`, value: 'a'.repeat(64 * 1024 + 1) }), refused(413, /at most 65536/));
    await assert.rejects(daytona.secret.create({ name: `h-${tag}`, value: 'x', hosts: ['api.example.com'] }), refused(400, /hosts: sandlot puts the value itself/));
    await assert.rejects(daytona.secret.update(name, { description: 'd' }), refused(400, /description/));
    await assert.rejects(daytona.secret.get(`big-${tag}`), DaytonaNotFoundError);
    await assert.rejects(daytona.secret.get(`h-${tag}`), DaytonaNotFoundError);

    await daytona.secret.delete(name);
    await assert.rejects(daytona.secret.delete(name), DaytonaNotFoundError);
  } finally {
    for (const n of [name, other]) await v1(`/secrets/${n}`, { method: 'DELETE' });
  }
});

test('network: block-all, and an allow-list', async () => {
  const blocked = await create({ networkBlockAll: true, labels: { suite: tag, role: 'net' } });
  assert.equal(blocked.networkBlockAll, true);
  assert.equal((await v1(`/sandboxes/${blocked.id}`)).body.network.enabled, false);
  await blocked.delete();
  const allowed = await create({ networkAllowList: '10.0.0.0/8', labels: { suite: tag, role: 'net2' } });
  assert.equal(allowed.networkBlockAll, false);
  assert.equal(allowed.networkAllowList, '10.0.0.0/8');
  const net = (await v1(`/sandboxes/${allowed.id}`)).body.network;
  assert.equal(net.enabled, true);
  assert.deepEqual(net.allow, ['10.0.0.0/8']);
  await allowed.delete();
  // Domains beside CIDRs: one /v1 allow list, each back in its own Daytona list.
  const named = await create({
    networkAllowList: '203.0.113.0/24', domainAllowList: 'example.com, *.daytona.io',
    labels: { suite: tag, role: 'net3' },
  });
  assert.equal(named.networkAllowList, '203.0.113.0/24');
  assert.equal(named.domainAllowList, 'example.com,*.daytona.io');
  assert.deepEqual((await v1(`/sandboxes/${named.id}`)).body.network.allow,
    ['203.0.113.0/24', 'example.com', '*.daytona.io']);
  // updateNetworkSettings: a list replaces its kind, block-all false clears both.
  await named.updateNetworkSettings({ domainAllowList: 'pypi.org' });
  assert.equal(named.domainAllowList, 'pypi.org');
  assert.deepEqual((await v1(`/sandboxes/${named.id}`)).body.network.allow, ['203.0.113.0/24', 'pypi.org']);
  await named.updateNetworkSettings({ networkBlockAll: false });
  assert.deepEqual((await v1(`/sandboxes/${named.id}`)).body.network.allow, []);
  await assert.rejects(named.updateNetworkSettings({ networkBlockAll: true }), /cannot turn it off/);
  await named.delete();
  await assert.rejects(create({ networkBlockAll: true, domainAllowList: 'example.com' }), /exclude each other/);
  await assert.rejects(create({ domainAllowList: 'bad..name' }), /neither a CIDR nor a domain name/);
});

test('error classes: unknown sandbox, missing file, bad input, wrong key, conflict', async () => {
  await assert.rejects(daytona.get('sbx_doesnotexistdoesnotex'), (e) => {
    assert.ok(e instanceof DaytonaNotFoundError, e.name);
    assert.equal(e.statusCode, 404);
    return true;
  });
  await assert.rejects(py.fs.downloadFile('/no/such/file'), DaytonaNotFoundError);
  await assert.rejects(py.fs.getFileDetails('/no/such/file'), (e) => {
    assert.ok(e instanceof DaytonaFileNotFoundError, e.name);
    assert.equal(e.code, 'FILE_NOT_FOUND');
    assert.equal(e.source, 'DAYTONA_DAEMON');
    return true;
  });
  await assert.rejects(py.fs.createFolder('/tmp/x', 'rwx'), DaytonaValidationError);
  await assert.rejects(daytona.create({ resources: { cpu: 1 }, snapshot: 'no-such-image' }), DaytonaError);
  const stranger = new Daytona({ apiKey: 'not-the-key', apiUrl: `${base}/api` });
  await assert.rejects(stranger.get(py.id), DaytonaAuthenticationError);
  await py.process.createSession('dup');
  await assert.rejects(py.process.createSession('dup'), DaytonaConflictError);
  await py.process.deleteSession('dup');
  await assert.rejects(daytona.create({ resources: { cpu: -1 } }), DaytonaValidationError);
});

test('a script using the SDK exits promptly (the socket.io channel connects)', async () => {
  // Were socket.io refused, the SDK's reconnect timers would hold Node for ~3 minutes.
  const script = `
    import { Daytona } from '@daytonaio/sdk';
    const d = new Daytona();
    const sb = await d.get(${JSON.stringify(py.id)});
    const r = await sb.process.executeCommand('echo ok');
    process.stdout.write(r.result);`;
  const t0 = Date.now();
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    cwd: new URL('..', import.meta.url).pathname,
    timeout: 60000,
  });
  assert.equal(stdout, 'ok\n');
  assert.ok(Date.now() - t0 < 15000, `the script took ${Date.now() - t0} ms to exit`);
});

// Engine.IO v4 over a WebSocket, as the SDK's socket.io client speaks it.
async function socketio(token) {
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/socket.io/?EIO=4&transport=websocket`);
  const got = [];
  return await new Promise((resolve, reject) => {
    ws.on('message', (m) => {
      got.push(m.toString());
      if (got.length === 1) ws.send(`40${JSON.stringify({ token })}`);
      else ws.close();
    });
    ws.on('close', () => resolve(got));
    ws.on('error', reject);
  });
}

test('socket.io: open, then CONNECT with the API key (refused with another)', async () => {
  const [open, ok] = await socketio(key);
  assert.match(open, /^0\{/);
  assert.equal(JSON.parse(open.slice(1)).upgrades.length, 0);
  assert.match(ok, /^40\{"sid":/);
  const [, refused] = await socketio('not-the-key');
  assert.match(refused, /^44/);
});

test('delete: gone from the Daytona API, a tombstone in /v1', async () => {
  const id = py.id;
  await py.delete();
  await assert.rejects(daytona.get(id), DaytonaNotFoundError);
  const got = await v1(`/sandboxes/${id}`);
  assert.equal(got.body.status, 'terminated');
});

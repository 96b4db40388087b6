// Daytona's image builds through the real SDK: create({ image }) with a ref or a
// declarative Image (its Dockerfile built by sandlot's builder, cached by content),
// snapshot.create with its build log streamed, create({ snapshot }), a failing build's
// error, snapshot delete. Base images come from the suite's local mirror (setup.sh).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Daytona, Image, DaytonaError, DaytonaNotFoundError, DaytonaValidationError } from '@daytonaio/sdk';

const base = process.env.SANDLOT_URL;
const key = process.env.SANDLOT_API_KEY;
assert.ok(base && key, 'run through tests/compat/run-suite.sh (SANDLOT_URL, SANDLOT_API_KEY)');
const daytona = new Daytona({ apiUrl: `${base}/api`, apiKey: key });
const tag = `img-${Date.now()}`;
const made = [];
const snapName = `snap-${Date.now()}`;

async function v1(path, init = {}) {
  const res = await fetch(`${base}/v1${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, ...(init.headers || {}) },
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function create(params, opts = {}) {
  const sb = await daytona.create({ labels: { suite: tag }, ...params }, { timeout: 300, ...opts });
  made.push(sb);
  return sb;
}

async function sh(sb, cmd) {
  const r = await sb.process.executeCommand(cmd);
  assert.equal(r.exitCode, 0, `${cmd}: ${r.result}`);
  return r.result.trim();
}

const builtImages = async () => (await v1('/images')).body.images.filter((i) => i.name.startsWith('daytona-'));

after(async () => {
  for (const sb of made) await sb.delete().catch(() => {});
  await daytona.snapshot.delete(snapName).catch(() => {});
});

test('create({ image: ref }) of an image sandlot has: no build, started at once', async () => {
  const before = await builtImages();
  const sb = await create({ image: 'busybox' });
  assert.equal(sb.state, 'started');
  assert.equal(sb.snapshot, 'busybox');
  assert.match(await sh(sb, 'ls /bin/busybox'), /busybox/);
  assert.equal((await builtImages()).length, before.length);
});

test('create({ image: ref }) of a registry image: pulled through the mirror and built', async () => {
  const sb = await create({ image: 'python:3.12-slim' });
  assert.equal(sb.state, 'started');
  assert.match(sb.snapshot, /^daytona-[0-9a-f]{24}$/);
  assert.match(await sh(sb, 'python --version 2>&1'), /^Python 3/);
});

const declarative = () => Image.debianSlim('3.12')
  .pipInstall(['sandlot-tiny'])
  .runCommands('echo "built $(python -c "import sandlot_tiny; print(sandlot_tiny.ANSWER)")" > /opt/built.txt');

let firstImage;
test('create({ image: Image.debianSlim().pipInstall().runCommands() }): build log streamed, then started', async () => {
  const logs = [];
  const sb = await create({ image: declarative() }, { onSnapshotCreateLogs: (l) => logs.push(l) });
  assert.equal(sb.state, 'started');
  assert.match(sb.id, /^sbx_/, 'the SDK holds the real sandbox id once started');
  const text = logs.join('\n');
  assert.match(text, /STEP 1\/\d+: FROM python:3\.12\.\d+-slim-bookworm/);
  assert.match(text, /Pulling python:3\.12\.\d+-slim-bookworm through http:\/\/127\.0\.0\.1:/);
  assert.match(text, /RUN python -m pip install sandlot-tiny/);
  assert.equal(await sh(sb, 'cat /opt/built.txt'), 'built 42');
  assert.equal(await sh(sb, 'python -c "import sandlot_tiny; print(sandlot_tiny.__name__)"'), 'sandlot_tiny');
  firstImage = (await builtImages()).find((i) => i.name === sb.snapshot);
  assert.ok(firstImage, `image ${sb.snapshot} in /v1/images`);
});

test('the same Image again: the cached build, nothing rebuilt', async () => {
  const logs = [];
  const sb = await create({ image: declarative() }, { onSnapshotCreateLogs: (l) => logs.push(l) });
  assert.equal(sb.state, 'started');
  assert.equal(sb.snapshot, firstImage.name);
  assert.deepEqual(logs, [], 'no build, so no build log');
  const again = (await builtImages()).find((i) => i.name === sb.snapshot);
  assert.equal(again.digest, firstImage.digest);
  assert.equal(again.createdAt, firstImage.createdAt);
  assert.equal(await sh(sb, 'cat /opt/built.txt'), 'built 42');
});

test('create without onSnapshotCreateLogs waits through the build (polling)', async () => {
  const sb = await create({ image: Image.base('default').runCommands('echo default-image user $(id -un)', `echo ${tag} > $HOME/tag.txt`) });
  assert.equal(sb.state, 'started');
  assert.equal(await sh(sb, 'cat ~/tag.txt'), tag);
});

test('snapshot.create with onLogs, get, list, then create({ snapshot })', async () => {
  const logs = [];
  const snap = await daytona.snapshot.create({
    name: snapName,
    image: Image.base('default').env({ SNAP_VAR: 'from-env' }).runCommands('echo snap-content > $HOME/snap.txt'),
  }, { onLogs: (l) => logs.push(l), timeout: 300 });
  assert.equal(snap.name, snapName);
  assert.equal(snap.state, 'active');
  const text = logs.join('\n');
  assert.match(text, /Creating snapshot/);
  assert.match(text, /STEP 3\/3: RUN echo snap-content/);
  assert.match(text, /Created snapshot/);
  const got = await daytona.snapshot.get(snapName);
  assert.equal(got.state, 'active');
  const list = await daytona.snapshot.list();
  assert.ok(list.items.some((s) => s.name === snapName && s.state === 'active'));
  assert.equal((await v1(`/images/${snapName}`)).status, 200, 'a snapshot is a sandlot image');
  const sb = await create({ snapshot: snapName });
  assert.equal(sb.snapshot, snapName);
  assert.equal(await sh(sb, 'cat ~/snap.txt; echo $SNAP_VAR'), 'snap-content\nfrom-env');
});

test('snapshot.create from an image name', async () => {
  const name = `${snapName}-ref`;
  const snap = await daytona.snapshot.create({ name, image: 'busybox' }, { timeout: 120 });
  assert.equal(snap.state, 'active');
  await daytona.snapshot.delete(name);
});

test('a RUN that fails: the SDK error names the line; nothing half-made is listed', async () => {
  const bad = Image.base('default').runCommands('echo ok', 'echo failing-step; exit 3');
  const before = (await v1('/images')).body.images.map((i) => i.name);
  await assert.rejects(create({ image: bad }), (e) => {
    assert.ok(e instanceof DaytonaError, e.name);
    assert.match(e.message, /build_failed/);
    assert.match(e.message, /line 3/);
    return true;
  });
  await assert.rejects(daytona.snapshot.create({ name: `${snapName}-bad`, image: bad }, { timeout: 120 }), (e) => {
    assert.match(e.message, /Failed to create snapshot/);
    assert.match(e.message, /line 3/);
    return true;
  });
  const list = await daytona.snapshot.list();
  assert.ok(!list.items.some((s) => s.name === `${snapName}-bad`));
  assert.deepEqual((await v1('/images')).body.images.map((i) => i.name), before, 'no image was added');
  for await (const sb of daytona.list({ labels: { suite: tag } })) assert.equal(sb.state, 'started');
});

test('a Dockerfile error is refused at once, naming the line', async () => {
  const bad = Image.base('default').dockerfileCommands(['RUN echo fine', 'HEALTHCHECK CMD true']);
  await assert.rejects(create({ image: bad }), (e) => {
    assert.ok(e instanceof DaytonaValidationError, e.name);
    assert.match(e.message, /line 3/);
    return true;
  });
  await assert.rejects(daytona.snapshot.create({ name: `${snapName}-syntax`, image: bad }), DaytonaValidationError);
});

test('snapshot.delete: gone from get, list and /v1/images', async () => {
  await daytona.snapshot.delete(snapName).catch((e) => assert.match(e.message, /used by a sandbox/));
  for (const sb of made.splice(0)) await sb.delete();
  await daytona.snapshot.delete(snapName);
  await assert.rejects(daytona.snapshot.get(snapName), DaytonaNotFoundError);
  assert.ok(!(await daytona.snapshot.list()).items.some((s) => s.name === snapName));
  assert.equal((await v1(`/images/${snapName}`)).status, 404);
});

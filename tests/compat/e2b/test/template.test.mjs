// template.test.mjs — E2B's template builds with the real SDK: Template().fromImage().…,
// Template.build (file uploads for copy, status and log polling), then Sandbox.create(alias)
// in the built image; the step cache on a rebuild; a failing step as a BuildError.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Sandbox, Template } from 'e2b';
import { sandlotKey, sandlotUrl, tracker, v1 } from '../lib.mjs';

// The base: a docker.io reference served by the suite's local registry (setup.sh), else
// the default image run-suite.sh imports.
const BASE = process.env.E2B_TEMPLATE_BASE || 'default';
const t = tracker();
after(() => t.cleanup());

const ctx = fs.mkdtempSync(path.join(os.tmpdir(), 'e2b-tpl-'));
after(() => fs.rmSync(ctx, { recursive: true, force: true }));
fs.writeFileSync(path.join(ctx, 'hello.txt'), 'hello from the build context\n');
fs.mkdirSync(path.join(ctx, 'conf'));
fs.writeFileSync(path.join(ctx, 'conf', 'a.ini'), 'a=1\n');

function recipe() {
	return Template({ fileContextPath: ctx })
		.fromImage(BASE)
		.setUser('root')
		.setEnvs({ GREETING: 'hello "quoted" world', APP_HOME: '/opt/app' })
		.setWorkdir('/opt/app')
		.copy('hello.txt', '/opt/app/hello.txt')
		.copy('conf', '/opt/app/conf', { mode: 0o750 })
		.runCmd(['echo "RUN-MARK $GREETING"', 'echo built > ran.txt', 'id -un > who.txt'])
		.runCmd('id -un > /tmp/as.txt', { user: 'user' })
		.runCmd('id -un > /opt/app/after.txt')
		.pipInstall('sandlot-tiny')
		.setUser('user');
}

async function build(tpl, alias) {
	const logs = [];
	await Template.build(tpl, { alias, onBuildLogs: (e) => logs.push(String(e.message ?? e)) });
	return logs;
}

function uploadsLeft() {
	const dir = path.join(process.env.SANDLOT_STATE_DIR, 'e2b-builds');
	if (!fs.existsSync(dir)) return [];
	return fs.readdirSync(dir).filter((b) => fs.existsSync(path.join(dir, b, 'ctx')));
}

test('build from fromImage with copy, env, workdir, runCmd; Sandbox.create(alias) runs in it', async () => {
	const alias = 'e2b-tpl-app';
	assert.equal(await Template.aliasExists(alias), false);
	const logs = await build(recipe(), alias);
	const text = logs.join('\n');
	assert.match(text, /STEP \d+\/\d+: COPY/, text);
	assert.match(text, /STEP \d+\/\d+: RUN/, text);
	assert.match(text, /^\s*RUN-MARK hello "quoted" world$/m, text);
	assert.match(text, /Uploaded 'hello.txt'/);
	assert.equal(await Template.aliasExists(alias), true);
	assert.deepEqual(uploadsLeft(), [], 'the uploads are removed when the build ends');

	const sbx = t.add(await Sandbox.create(alias));
	const r = await sbx.commands.run(
		'cat /opt/app/hello.txt /opt/app/conf/a.ini /opt/app/ran.txt /opt/app/who.txt ' +
			'/tmp/as.txt /opt/app/after.txt; echo "$GREETING|$APP_HOME"; stat -c %a /opt/app/conf/a.ini',
		{ user: 'root' },
	);
	assert.equal(r.exitCode, 0, r.stderr);
	assert.equal(
		r.stdout,
		'hello from the build context\na=1\nbuilt\nroot\nuser\nroot\nhello "quoted" world|/opt/app\n750\n',
	);
	if (BASE.startsWith('python')) {
		// The stand-in's offline pip (tests/compat/standin.py) installed it at build time.
		const py = await sbx.commands.run('python -c "import sandlot_tiny; print(sandlot_tiny.ANSWER)"');
		assert.equal(py.stdout, '42\n');
	}
	const info = await v1('GET', '/v1/images/' + alias);
	assert.equal(info.name, alias);
});

test('a rebuild of the same template runs no step again (the step cache)', async () => {
	const logs = await build(recipe(), 'e2b-tpl-app');
	const text = logs.join('\n');
	assert.doesNotMatch(text, /^\s*RUN-MARK/m, 'a cached RUN prints nothing');
	const cached = text.match(/CACHED sha256:/g) ?? [];
	// WORKDIR, hello.txt, conf, the RUNs: every step that makes a layer.
	assert.ok(cached.length >= 7, text);
	assert.doesNotMatch(text, /  done sha256:/, text);
});

test('skipCache runs the steps again', async () => {
	const logs = await build(recipe().skipCache().runCmd('echo after-skip'), 'e2b-tpl-app');
	assert.match(logs.join('\n'), /after-skip/);
});

test('fromTemplate builds on a built template', async () => {
	const tpl = Template()
		.fromTemplate('e2b-tpl-app')
		.runCmd('id -un > /tmp/child-user.txt')
		.setUser('root')
		.runCmd('cp hello.txt child.txt');
	await build(tpl, 'e2b-tpl-child');
	const sbx = t.add(await Sandbox.create('e2b-tpl-child'));
	// The base's config goes on: its workdir, and its last USER for the first step.
	const r = await sbx.commands.run('cat /opt/app/child.txt /tmp/child-user.txt');
	assert.equal(r.stdout, 'hello from the build context\nuser\n');
});

test('a failing runCmd is a BuildError naming the step; nothing half-made is listed', async () => {
	const alias = 'e2b-tpl-broken';
	const tpl = Template({ fileContextPath: ctx })
		.fromImage(BASE)
		.runCmd('echo first')
		.runCmd('echo about to fail; exit 3');
	const logs = [];
	await assert.rejects(
		Template.build(tpl, { alias, onBuildLogs: (e) => logs.push(String(e.message)) }),
		(e) => {
			assert.equal(e.name, 'BuildError');
			assert.match(e.message, /step 2: RUN .*exit 3.*: exit code 3/);
			return true;
		},
	);
	assert.match(logs.join('\n'), /about to fail/);
	assert.equal(await Template.aliasExists(alias), false);
	const imgs = await v1('GET', '/v1/images');
	assert.ok(!JSON.stringify(imgs).includes(alias));
	assert.deepEqual(uploadsLeft(), []);
	await assert.rejects(Sandbox.create(alias));
});

// E2B's own suite (runCmd.test.ts) matches envd's words for a RUN as a user the image has
// not: unauthenticated, invalid username.
test("runCmd as a user the image does not have: envd's 'invalid username', at that step", async () => {
	const tpl = Template().fromImage(BASE).runCmd('true').runCmd('whoami', { user: 'root123' });
	await assert.rejects(Template.build(tpl, { alias: 'e2b-tpl-nouser' }), (e) => {
		assert.equal(e.name, 'BuildError');
		assert.match(
			e.message,
			/step 2: failed to run command 'whoami': command failed: unauthenticated: invalid username: 'root123'/,
		);
		return true;
	});
	// A user the image has runs.
	await build(Template().fromImage(BASE).skipCache().runCmd('test "$(whoami)" = root', { user: 'root' }), 'e2b-tpl-asroot');
	assert.equal(await Template.aliasExists('e2b-tpl-nouser'), false);
});

test('a base that is neither local nor pullable fails at the base step', async () => {
	const tpl = Template().fromImage('localhost:1/nowhere:1').runCmd('true');
	await assert.rejects(Template.build(tpl, { alias: 'e2b-tpl-nobase' }), (e) => {
		assert.equal(e.name, 'BuildError');
		assert.match(e.message, /fromImage localhost:1\/nowhere:1/);
		return true;
	});
});

test('registry credentials in the template are refused with a clear error', async () => {
	const tpl = Template().fromImage(BASE, { username: 'u', password: 'p' });
	await assert.rejects(Template.build(tpl, { alias: 'e2b-tpl-creds' }), /registry credentials/);
	// Refused, not left pending: the same name can be asked for again at once.
	await assert.rejects(Template.build(tpl, { alias: 'e2b-tpl-creds' }), /registry credentials/);
	assert.equal(await Template.aliasExists('e2b-tpl-creds'), false);
});

test('the upload URL: its token only, a body that is no archive refused, a stale build superseded', async () => {
	const api = (method, p, body) =>
		fetch(sandlotUrl + p, {
			method,
			headers: { 'X-API-KEY': sandlotKey, 'Content-Type': 'application/json' },
			body: body && JSON.stringify(body),
		});
	const req = await api('POST', '/v3/templates', { name: 'e2b-tpl-raw' });
	assert.equal(req.status, 202);
	const { buildID, templateID } = await req.json();
	const hash = 'ab'.repeat(32);
	const link = await (await api('GET', `/templates/${templateID}/files/${hash}`)).json();
	assert.equal(link.present, false);
	const url = new URL(link.url);
	assert.equal(url.searchParams.get('build'), buildID);
	const put = (u, body) => fetch(u, { method: 'PUT', body });
	const wrong = new URL(url);
	wrong.searchParams.set('token', '0'.repeat(64));
	assert.equal((await put(wrong, 'x')).status, 401);
	const bare = new URL(url);
	bare.search = '';
	assert.equal((await put(bare, 'x')).status, 401);
	const other = new URL(url);
	other.pathname = `/templates/${templateID}/files/${'cd'.repeat(32)}`;
	assert.equal((await put(other, 'x')).status, 401, 'a token names its files');
	const bad = await put(url, 'this is not a tar archive'.repeat(40));
	assert.equal(bad.status, 400, await bad.text());
	assert.equal((await api('GET', `/templates/${templateID}/files/${hash}`).then((r) => r.json())).present, false);
	// The SDK stopped here: a new request supersedes the build left waiting.
	assert.equal((await api('POST', '/v3/templates', { name: 'e2b-tpl-raw' })).status, 202);
	const st = await (await api('GET', `/templates/${templateID}/builds/${buildID}/status`)).json();
	assert.equal(st.status, 'error');
	assert.match(st.reason.message, /superseded/);
	const dir = path.join(process.env.SANDLOT_STATE_DIR, 'e2b-builds', buildID);
	assert.ok(fs.existsSync(path.join(dir, 'build.json')));
	assert.ok(!fs.existsSync(path.join(dir, 'ctx')), 'a superseded build keeps no uploads');
});

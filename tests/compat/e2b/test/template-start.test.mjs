// template-start.test.mjs — E2B's setStartCmd/setReadyCmd with the real SDK: the build
// starts the command and runs the ready check (a failing one fails the build at E2B's
// "finalize" step), and every Sandbox.create from the template has the command running,
// answered only once the ready check passed (waitForTimeout's wait included). setup.sh
// runs the daemon with SANDLOT_READY_TIMEOUT=8 so a check that never passes fails soon.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, Template, waitForFile, waitForTimeout } from 'e2b';
import { tracker, v1 } from '../lib.mjs';

const BASE = process.env.E2B_TEMPLATE_BASE || 'default';
const t = tracker();
after(() => t.cleanup());

async function build(tpl, alias) {
	const logs = [];
	await Template.build(tpl, { alias, onBuildLogs: (e) => logs.push(String(e.message ?? e)) });
	return logs.join('\n');
}

// The start command as commands.list() shows it: /bin/sh -c LINE.
const startProcs = async (sbx) =>
	(await sbx.commands.list()).filter((p) => p.args.join(' ').includes('start-mark'));

test('setStartCmd: every sandbox of the template has the start command running, ready at create', async () => {
	const alias = 'e2b-tpl-started';
	const tpl = Template()
		.fromImage(BASE)
		.setUser('root')
		.setWorkdir('/srv')
		.setStartCmd(
			// start-mark: how the test finds it; the pid file appears only after a second.
			'echo start-mark; sleep 1; pwd > /tmp/start.cwd; echo $$ > /tmp/start.pid; exec sleep 600',
			waitForFile('/tmp/start.pid'),
		);
	const text = await build(tpl, alias);
	assert.match(text, /start command: echo start-mark/, text);
	assert.match(text, /ready command \(1\): \[ -f '?\/tmp\/start\.pid'? \]/, text);
	assert.match(text, /ready in \d+ ms/, text);
	const info = await v1('GET', '/v1/images/' + alias);
	assert.match(info.config.startCmd, /start-mark/);
	assert.match(info.config.readyCmd, /^\[ -f '?\/tmp\/start\.pid'? \]$/);

	for (let i = 0; i < 2; i++) {
		const sbx = t.add(await Sandbox.create(alias));
		// Ready before the create answered: the pid file is there at once.
		const pid = (await sbx.files.read('/tmp/start.pid')).trim();
		assert.equal((await sbx.files.read('/tmp/start.cwd')).trim(), '/srv', 'the image workdir');
		const procs = await startProcs(sbx);
		assert.equal(procs.length, 1, JSON.stringify(await sbx.commands.list()));
		assert.equal(String(procs[0].pid), pid);
		const r = await sbx.commands.run(`kill -0 ${pid} && cat /proc/${pid}/cmdline | tr '\\0' ' '`, {
			user: 'root',
		});
		assert.equal(r.stdout, 'sleep 600 ');
		// /v1 sees the same execution.
		const ex = await v1('GET', `/v1/sandboxes/${sbx.sandboxId}/executions`);
		assert.ok(
			JSON.stringify(ex).includes('start-mark'),
			'the start command is one of the executions: ' + JSON.stringify(ex),
		);
	}
});

test('waitForTimeout is honoured: a create answers after the wait', async () => {
	const alias = 'e2b-tpl-waited';
	await build(Template().fromImage(BASE).setStartCmd('exec sleep 600', waitForTimeout(2_000)), alias);
	const t0 = Date.now();
	const sbx = t.add(await Sandbox.create(alias));
	const took = Date.now() - t0;
	assert.ok(took >= 2_000, `create answered after ${took} ms, before the 2 s wait`);
	assert.ok(took < 8_000, `create took ${took} ms`);
	assert.ok((await sbx.commands.list()).some((p) => p.args.join(' ').includes('exec sleep 600')));
});

// A build that must fail with a BuildError whose message matches RE: its logs, how long it
// took; no template of ALIAS is left.
async function buildFails(tpl, alias, re) {
	const logs = [];
	const t0 = Date.now();
	await assert.rejects(
		Template.build(tpl, { alias, onBuildLogs: (e) => logs.push(String(e.message)) }),
		(e) => {
			assert.equal(e.name, 'BuildError');
			assert.match(e.message, re);
			return true;
		},
	);
	const took = Date.now() - t0;
	assert.equal(await Template.aliasExists(alias), false);
	return { logs: logs.join('\n'), took };
}

test('a ready check that never passes fails the build at the finalize step; no template is made', async () => {
	const alias = 'e2b-tpl-notready';
	const tpl = Template().fromImage(BASE).setStartCmd('exec sleep 600', 'echo not-yet; exit 1');
	const { logs, took } = await buildFails(
		tpl,
		alias,
		/the ready command did not succeed within 8 s \(its last run: exit code 1\)/,
	);
	assert.ok(took >= 8_000, 'the check was retried until the timeout');
	assert.match(logs, /not-yet/);
	await assert.rejects(Sandbox.create(alias));
});

test('a start command that fails fails the build without waiting for the ready check', async () => {
	const tpl = Template().fromImage(BASE).setStartCmd('echo broken >&2; exit 3', waitForTimeout(60_000));
	const { logs, took } = await buildFails(tpl, 'e2b-tpl-badstart', /the start command failed: exit code 3/);
	assert.ok(took < 30_000, 'the 60 s ready check was not waited for');
	assert.match(logs, /broken/);
});

// sudo in the default template (docs/isolation.md, "sudo"), as E2B's base template has
// it and E2B's own suite uses it: passwordless, -u, -E, VAR=value, exit codes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tracker } from '../lib.mjs';
import { Sandbox, CommandExitError } from 'e2b';

const t = tracker();
let sbx;
before(async () => {
	sbx = t.add(await Sandbox.create({ envs: { FROM_CREATE: 'kept' } }));
});
after(() => t.cleanup());

test('sudo: the default user becomes root, or another user with -u', async () => {
	assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n');
	assert.equal((await sbx.commands.run('sudo whoami')).stdout, 'root\n');
	assert.equal((await sbx.commands.run('sudo -u root whoami')).stdout, 'root\n');
	assert.equal((await sbx.commands.run('sudo -u user whoami', { user: 'root' })).stdout, 'user\n');
	// Root's work stays root's: a file in /etc, and apt's lock (apt-get check needs root).
	const r = await sbx.commands.run('sudo touch /etc/made-by-sudo && stat -c %U /etc/made-by-sudo && sudo apt-get check -qq && echo apt-ok');
	assert.equal(r.stdout, 'root\napt-ok\n');
	await assert.rejects(sbx.commands.run('apt-get check -qq'), CommandExitError);
});

test('sudo: env reset, -E keeps it, VAR=value sets one', async () => {
	const plain = await sbx.commands.run('sudo env', { envs: { MINE: 'x' } });
	assert.ok(!plain.stdout.includes('MINE='), 'env_reset drops the caller\'s variables');
	assert.match(plain.stdout, /^HOME=\/root$/m);
	assert.match(plain.stdout, /^SUDO_USER=user$/m);
	const kept = await sbx.commands.run('sudo -E env', { envs: { MINE: 'x' } });
	assert.match(kept.stdout, /^MINE=x$/m);
	assert.match(kept.stdout, /^FROM_CREATE=kept$/m);
	const set = await sbx.commands.run('sudo FOO=bar env');
	assert.match(set.stdout, /^FOO=bar$/m);
	assert.match(set.stdout, /^USER=root$/m);
});

test('sudo: exit codes and errors come through', async () => {
	await assert.rejects(sbx.commands.run('sudo sh -c "exit 3"'), (e) => {
		assert.ok(e instanceof CommandExitError);
		assert.equal(e.exitCode, 3);
		return true;
	});
	await assert.rejects(sbx.commands.run('sudo no-such-command'), (e) => {
		assert.equal(e.exitCode, 1);
		assert.match(e.stderr, /no-such-command: command not found/);
		return true;
	});
	const bg = await sbx.commands.run('sudo sleep 60', { background: true });
	await sbx.commands.kill(bg.pid);
	await assert.rejects(bg.wait(), CommandExitError);
	// Its command went with it (init kills it when sudo's connection drops).
	let left = '';
	for (let i = 0; i < 20; i++) {
		left = (await sbx.commands.run('pgrep -x sleep || echo none')).stdout;
		if (left === 'none\n') break;
		await new Promise((r) => setTimeout(r, 100));
	}
	assert.equal(left, 'none\n');
});

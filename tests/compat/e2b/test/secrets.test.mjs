// The Secret client (/secrets) over sandlot's one secret store, and a secret given to a
// sandbox at create as envVars {VAR: Secret.fill(name)}: the value never comes back.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { tracker, v1, sandlotUrl, sandlotKey } from '../lib.mjs';
import { Sandbox, Secret, SecretError, SecretNotFoundError } from 'e2b';

const t = tracker();
const made = [];
after(async () => {
	await t.cleanup();
	for (const n of made) await Secret.destroy(n).catch(() => {});
});

const value = () => 'sv-' + randomBytes(16).toString('hex');
const sha = (v) => createHash('sha256').update(v).digest('hex') + '  -\n';

// A raw call, to see every byte the façade answers.
async function raw(path) {
	const res = await fetch(sandlotUrl + path, { headers: { 'X-API-KEY': sandlotKey } });
	return { status: res.status, text: await res.text() };
}

test('create, update, getInfo, exists, list across pages, destroy; values never returned', async () => {
	const name = `e2b-${process.pid}`, other = `e2b-${process.pid}-2`;
	const v = value(), v2 = value();
	made.push(name, other);
	const info = await Secret.create(name, v);
	assert.equal(info.secretId, name);
	assert.equal(info.name, name);
	assert.equal(info.version, 1);
	assert.deepEqual(info.metadata, {});
	assert.ok(info.createdAt instanceof Date && !isNaN(info.createdAt));
	// Create refuses a name in use and leaves the value alone.
	await assert.rejects(Secret.create(name, v2), (e) => e instanceof SecretError && /409: secret .* already exists/.test(e.message));
	const up = await Secret.update(name, v2);
	assert.equal(up.version, 2);
	assert.equal(up.createdAt.getTime(), info.createdAt.getTime());
	assert.ok(up.updatedAt >= info.updatedAt);
	assert.equal((await Secret.getInfo(name)).version, 2);
	assert.equal(await Secret.exists(name), true);
	assert.equal(await Secret.exists('nosuch'), false);
	await assert.rejects(Secret.update('nosuch', 'x'), SecretNotFoundError);
	await assert.rejects(Secret.getInfo('nosuch'), SecretNotFoundError);

	await Secret.create(other, value());
	const pager = Secret.list({ limit: 1 });
	const pages = [];
	while (pager.hasNext) pages.push(await pager.nextItems());
	assert.ok(pages.length >= 2 && pages.every((p) => p.length === 1), JSON.stringify(pages));
	const names = pages.flat().map((s) => s.name);
	assert.ok(names.includes(name) && names.includes(other), names.join());

	// One store: /v1 lists what the SDK made, the SDK sees what /v1 made.
	assert.ok((await v1('GET', '/v1/secrets')).secrets.some((s) => s.name === name));
	const v3 = value();
	await v1('POST', '/v1/secrets', { name: `e2b-${process.pid}-v1`, value: v3 });
	made.push(`e2b-${process.pid}-v1`);
	assert.equal((await Secret.getInfo(`e2b-${process.pid}-v1`)).version, 1);

	for (const path of ['/secrets', `/secrets/${name}`, '/secrets?limit=1']) {
		const r = await raw(path);
		assert.equal(r.status, 200, r.text);
		for (const x of [v, v2, v3]) assert.ok(!r.text.includes(x), `${path} answered a value`);
	}

	assert.equal(await Secret.destroy(name), true);
	assert.equal(await Secret.destroy(name), false);
	assert.equal(await Secret.exists(name), false);
});

test('bad input: a name with /, a 1 MB value, metadata, each a clear error', async () => {
	await assert.rejects(Secret.create('a/b', 'x'), (e) => e instanceof SecretError && /400: secret name "a\/b"/.test(e.message));
	await assert.rejects(Secret.create(`big-${process.pid}`, 'a'.repeat(1_000_000)), (e) => e instanceof SecretError && /^413: /.test(e.message));
	await assert.rejects(Secret.create(`big-${process.pid}`, 'a'.repeat(64 * 1024 + 1)), (e) => e instanceof SecretError && /413: secret .* at most 65536/.test(e.message));
	await assert.rejects(Secret.create(`meta-${process.pid}`, 'x', { metadata: { team: 'a' } }), (e) => e instanceof SecretError && /400: metadata: sandlot keeps no metadata/.test(e.message));
	assert.equal(await Secret.exists(`big-${process.pid}`), false);
	assert.equal(await Secret.exists(`meta-${process.pid}`), false);
});

test('a sandbox gets a secret as envVars {VAR: Secret.fill(name)}', async () => {
	const name = `e2b-env-${process.pid}`, v = value();
	made.push(name);
	await Secret.create(name, v);
	const sbx = t.add(await Sandbox.create({ envs: { TOKEN: Secret.fill(name), PLAIN: 'p' } }));
	const r = await sbx.commands.run('printf %s "$TOKEN" | sha256sum; echo "$PLAIN"');
	assert.equal(r.stdout, sha(v) + 'p\n');
	// The sandbox's record holds the reference, not the value.
	const rec = await v1('GET', `/v1/sandboxes/${sbx.sandboxId}`);
	assert.deepEqual(rec.secrets, { TOKEN: name });
	assert.ok(!JSON.stringify(rec).includes(v));
	// A new version is what the next process sees.
	const v2 = value();
	await Secret.update(name, v2);
	assert.equal((await sbx.commands.run('printf %s "$TOKEN" | sha256sum')).stdout, sha(v2));

	await assert.rejects(Sandbox.create({ envs: { T: Secret.fill(`nosuch-${process.pid}`) } }), /404: envVars.T: secret nosuch-\d+ not found/);
	await assert.rejects(Sandbox.create({ envs: { T: `Bearer ${Secret.fill(name)}` } }), /400: envVars.T: a secret's placeholder .* must be the whole value/);
	await assert.rejects(
		Sandbox.create({
			network: {
				allowOut: ['api.example.com'],
				rules: { 'api.example.com': [{ transform: { headers: { Authorization: `Bearer ${Secret.fill(name)}` } } }] },
			},
		}),
		/400: network.rules.api.example.com: sandlot does not rewrite/,
	);
});

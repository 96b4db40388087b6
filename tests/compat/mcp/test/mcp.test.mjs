// The official MCP TypeScript SDK's client (pinned in package-lock.json) against sandlot's
// MCP server: `sandlot mcp` over stdio (the bridge to the daemon's unix socket) and the
// daemon's /mcp over streamable HTTP on the keyed TCP listener (tests/compat/run-suite.sh
// starts the daemon). The raw-protocol tests at the end check the daemon's answers to bad
// input with plain fetch.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const base = process.env.SANDLOT_URL;
const key = process.env.SANDLOT_API_KEY;
const mcpUrl = new URL('/mcp', base);
const auth = { Authorization: `Bearer ${key}` };

const TOOLS = ['file_list', 'file_read', 'file_write', 'run_code', 'sandbox_create',
	'sandbox_delete', 'sandbox_exec', 'sandbox_list'];

const clients = [];
const made = [];
after(async () => {
	for (const c of clients) await c.close().catch(() => {});
	for (const id of made)
		await fetch(`${base}/v1/sandboxes/${id}`, { method: 'DELETE', headers: auth }).catch(() => {});
});

async function httpClient() {
	const c = new Client({ name: 'sandlot-compat', version: '1.0.0' });
	const t = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: auth } });
	await c.connect(t);
	clients.push(c);
	return c;
}

async function stdioClient() {
	const c = new Client({ name: 'sandlot-compat', version: '1.0.0' });
	// The bridge finds the daemon's socket from SANDLOT_RUN_DIR, as a user's would from
	// the default run dir.
	const t = new StdioClientTransport({ command: process.env.SANDLOT_BIN, args: ['mcp'],
		env: { ...process.env }, stderr: 'inherit' });
	await c.connect(t);
	clients.push(c);
	return c;
}

const transports = { http: httpClient, stdio: stdioClient };

async function call(c, name, args) {
	return c.callTool({ name, arguments: args });
}

const text = (res) => res.content.map((x) => x.text).join('');

async function v1(method, path, body) {
	const res = await fetch(`${base}${path}`, {
		method,
		headers: { ...auth, 'Content-Type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return { status: res.status, body: await res.text() };
}

for (const [kind, connect] of Object.entries(transports)) {
	test(`${kind}: initialize negotiates a version and lists the tools with their schemas`, async () => {
		const c = await connect();
		assert.equal(c.getServerVersion().name, 'sandlot');
		assert.ok(c.getServerCapabilities().tools, 'tools capability');
		const { tools } = await c.listTools();
		assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
		const by = Object.fromEntries(tools.map((t) => [t.name, t]));
		for (const t of tools) {
			assert.equal(t.inputSchema.type, 'object', t.name);
			assert.ok(t.description.length > 20, `${t.name} has a description`);
		}
		assert.deepEqual(by.sandbox_exec.inputSchema.required, ['sandbox_id', 'command']);
		assert.ok(by.sandbox_exec.inputSchema.properties.cwd);
		assert.ok(by.sandbox_exec.inputSchema.properties.env);
		assert.ok(by.sandbox_exec.inputSchema.properties.timeout);
		assert.deepEqual(by.run_code.inputSchema.required, ['code']);
		assert.ok(by.run_code.inputSchema.properties.language.enum.includes('python'));
		assert.ok(by.run_code.inputSchema.properties.sandbox_id);
		assert.deepEqual(by.file_write.inputSchema.required, ['sandbox_id', 'path', 'content']);
		assert.deepEqual(by.file_read.inputSchema.required, ['sandbox_id', 'path']);
		assert.deepEqual(by.file_list.inputSchema.required, ['sandbox_id']);
		assert.deepEqual(by.sandbox_delete.inputSchema.required, ['sandbox_id']);
		for (const p of ['image', 'resources', 'network'])
			assert.ok(by.sandbox_create.inputSchema.properties[p], `sandbox_create.${p}`);
		assert.deepEqual(await c.ping(), {});
	});

	test(`${kind}: run_code python print(40+2) in a throw-away sandbox`, async () => {
		const c = await connect();
		const before = (await v1('GET', '/v1/sandboxes')).body;
		const res = await call(c, 'run_code', { language: 'python', code: 'print(40+2)' });
		assert.equal(res.isError, false, text(res));
		assert.match(text(res), /42/);
		assert.equal(res.structuredContent.stdout, '42\n');
		assert.equal(res.structuredContent.exitCode, 0);
		// Its sandbox is gone again.
		const count = (b) => JSON.parse(b).sandboxes.length;
		assert.equal(count((await v1('GET', '/v1/sandboxes')).body), count(before));
	});
}

test('http: sandbox_create, file_write, file_read, file_list, sandbox_exec, run_code in it', async () => {
	const c = await httpClient();
	const created = await call(c, 'sandbox_create', {
		resources: { memory: '256Mi', cpu: '500m' },
		network: { enabled: false },
		labels: { suite: 'mcp' },
	});
	assert.equal(created.isError, false, text(created));
	const id = created.structuredContent.id;
	made.push(id);
	assert.match(id, /^sbx_/);
	assert.equal(created.structuredContent.status, 'running');

	const listed = await call(c, 'sandbox_list', {});
	assert.ok(listed.structuredContent.sandboxes.some((s) => s.id === id));

	const w = await call(c, 'file_write', { sandbox_id: id, path: '/tmp/mcp/hello.txt', content: 'hi there\n' });
	assert.equal(w.isError, false, text(w));
	assert.equal(w.structuredContent.bytes, 9);
	const r = await call(c, 'file_read', { sandbox_id: id, path: '/tmp/mcp/hello.txt' });
	assert.equal(r.isError, false, text(r));
	assert.equal(text(r), 'hi there\n');
	// The same bytes through /v1: one implementation under both.
	assert.equal((await v1('GET', `/v1/sandboxes/${id}/files?path=/tmp/mcp/hello.txt`)).body, 'hi there\n');

	const bytes = Buffer.from([0, 1, 2, 255, 254]);
	await call(c, 'file_write', { sandbox_id: id, path: '/tmp/mcp/bin', content: bytes.toString('base64'), encoding: 'base64' });
	const rb = await call(c, 'file_read', { sandbox_id: id, path: '/tmp/mcp/bin', encoding: 'base64' });
	assert.deepEqual(Buffer.from(text(rb), 'base64'), bytes);

	const l = await call(c, 'file_list', { sandbox_id: id, path: '/tmp/mcp' });
	assert.equal(l.isError, false, text(l));
	const entries = Object.fromEntries(l.structuredContent.entries.map((e) => [e.name, e]));
	assert.deepEqual(Object.keys(entries).sort(), ['bin', 'hello.txt']);
	assert.equal(entries['hello.txt'].size, 9);
	assert.equal(entries['hello.txt'].type, 'file');

	const ex = await call(c, 'sandbox_exec', { sandbox_id: id, command: 'echo out; echo oops >&2; exit 3' });
	assert.equal(ex.isError, false, 'a non-zero exit is a result');
	assert.equal(ex.structuredContent.exitCode, 3);
	assert.equal(ex.structuredContent.stdout, 'out\n');
	assert.equal(ex.structuredContent.stderr, 'oops\n');
	assert.match(text(ex), /oops/);

	const ex2 = await call(c, 'sandbox_exec', { sandbox_id: id, command: ['sh', '-c', 'pwd; echo "$FOO"; cat hello.txt'],
		cwd: '/tmp/mcp', env: { FOO: 'bar' }, timeout: '20s' });
	assert.equal(ex2.structuredContent.exitCode, 0, text(ex2));
	assert.equal(ex2.structuredContent.stdout, '/tmp/mcp\nbar\nhi there\n');

	const slow = await call(c, 'sandbox_exec', { sandbox_id: id, command: 'sleep 30', timeout: '300ms' });
	assert.equal(slow.structuredContent.status, 'timeout', text(slow));

	const rc = await call(c, 'run_code', { sandbox_id: id, language: 'python',
		code: "print(open('/tmp/mcp/hello.txt').read().strip())" });
	assert.equal(rc.structuredContent.stdout, 'hi there\n', text(rc));

	const bad = await call(c, 'sandbox_exec', { sandbox_id: id });
	assert.equal(bad.isError, true);
	assert.match(text(bad), /command: required/);
	const extra = await call(c, 'file_read', { sandbox_id: id, path: '/x', bogus: 1 });
	assert.equal(extra.isError, true);
	assert.match(text(extra), /bogus/);
	const missing = await call(c, 'file_read', { sandbox_id: id, path: '/tmp/mcp/nope' });
	assert.equal(missing.isError, true);
	assert.equal(missing.structuredContent.error.code, 'NOT_FOUND');
});

test('stdio: delete a sandbox, then a command in it is a tool error with the daemon\'s message', async () => {
	const c = await stdioClient();
	const created = await call(c, 'sandbox_create', {});
	const id = created.structuredContent.id;
	made.push(id);
	// The bridge runs requests concurrently: a ping is answered while a command runs.
	const slow = call(c, 'sandbox_exec', { sandbox_id: id, command: 'sleep 2; echo done' });
	await new Promise((r) => setTimeout(r, 200));
	const t0 = Date.now();
	await c.ping();
	assert.ok(Date.now() - t0 < 1500, `ping took ${Date.now() - t0} ms behind a 2 s command`);
	assert.equal((await slow).structuredContent.stdout, 'done\n');
	const w = await call(c, 'file_write', { sandbox_id: id, path: 'note.txt', content: 'kept' });
	assert.equal(w.isError, false, text(w));
	assert.equal(text(await call(c, 'file_read', { sandbox_id: id, path: 'note.txt' })), 'kept');
	const del = await call(c, 'sandbox_delete', { sandbox_id: id });
	assert.equal(del.isError, false, text(del));
	assert.deepEqual(del.structuredContent, { id, deleted: true });
	const res = await call(c, 'sandbox_exec', { sandbox_id: id, command: 'true' });
	assert.equal(res.isError, true);
	assert.equal(res.structuredContent.error.code, 'NOT_FOUND');
	// The message is the daemon's, word for word as /v1 gives it.
	const direct = await v1('POST', `/v1/sandboxes/${id}/executions`, { command: 'true' });
	assert.equal(direct.status, 404);
	assert.equal(text(res), JSON.parse(direct.body).error.message);
	assert.match(text(res), new RegExp(`${id}.*destroyed`));
	// An unknown tool is a protocol error (-32602), through the bridge too.
	await assert.rejects(call(c, 'no_such_tool', {}), (e) => e.code === -32602 && /no_such_tool/.test(e.message));
});

// ---- the daemon's /mcp with plain HTTP: auth, the transport's rules, bad input ----

const json = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const post = (body, headers = {}) => fetch(mcpUrl, { method: 'POST', headers: { ...json, ...auth, ...headers },
	body: typeof body === 'string' ? body : JSON.stringify(body) });
const init = { jsonrpc: '2.0', id: 1, method: 'initialize',
	params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };

async function session() {
	const res = await post(init);
	assert.equal(res.status, 200);
	const sid = res.headers.get('mcp-session-id');
	assert.match(sid, /^[0-9a-f]{32}$/);
	const body = await res.json();
	assert.equal(body.result.protocolVersion, '2025-03-26');
	return sid;
}

test('http: without the API key, 401', async () => {
	const res = await fetch(mcpUrl, { method: 'POST', headers: json, body: JSON.stringify(init) });
	assert.equal(res.status, 401);
	assert.equal(res.headers.get('www-authenticate'), 'Bearer');
	const wrong = await post(init, { Authorization: 'Bearer nope' });
	assert.equal(wrong.status, 401);
	const c = new Client({ name: 'nokey', version: '0' });
	await assert.rejects(c.connect(new StreamableHTTPClientTransport(mcpUrl)), /401|Unauthorized/);
});

test('http: bad input gets JSON-RPC errors with stable codes', async () => {
	const parse = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
	assert.equal(parse.status, 400);
	const pe = await parse.json();
	assert.equal(pe.error.code, -32700);
	assert.equal(pe.id, null);

	const sid = await session();
	const h = { 'Mcp-Session-Id': sid };
	const unknown = await (await post({ jsonrpc: '2.0', id: 2, method: 'resources/nothing' }, h)).json();
	assert.equal(unknown.error.code, -32601);
	assert.equal(unknown.id, 2);
	const tool = await (await post({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'rm_rf' } }, h)).json();
	assert.equal(tool.error.code, -32602);
	assert.match(tool.error.message, /rm_rf/);
	const notJsonRpc = await (await post({ id: 3, method: 'ping' }, h)).json();
	assert.equal(notJsonRpc.error.code, -32600);
	const badParams = await (await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: [1] }, h)).json();
	assert.equal(badParams.error.code, -32602);

	// A notification is accepted with 202 and no body; a batch answers each request.
	const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
	assert.equal(note.status, 202);
	assert.equal(await note.text(), '');
	const batch = await (await post([{ jsonrpc: '2.0', id: 5, method: 'ping' },
		{ jsonrpc: '2.0', method: 'notifications/initialized' },
		{ jsonrpc: '2.0', id: 6, method: 'tools/list' }], h)).json();
	assert.deepEqual(batch.map((m) => m.id), [5, 6]);
	assert.equal(batch[1].result.tools.length, TOOLS.length);

	// Sessions: none is 400, an unknown one 404, a foreign Origin 403, GET 405.
	assert.equal((await post({ jsonrpc: '2.0', id: 7, method: 'ping' })).status, 400);
	assert.equal((await post({ jsonrpc: '2.0', id: 7, method: 'ping' }, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404);
	const evil = await post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { ...h, Origin: 'http://evil.example' });
	assert.equal(evil.status, 403);
	const host = new URL(base).host;
	assert.equal((await post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { ...h, Origin: `http://${host}` })).status, 200);
	assert.equal((await post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { ...h, 'MCP-Protocol-Version': '1999-01-01' })).status, 400);
	const get = await fetch(mcpUrl, { headers: { ...auth, Accept: 'text/event-stream', 'Mcp-Session-Id': sid } });
	assert.equal(get.status, 405);
	assert.match(get.headers.get('allow'), /POST/);

	// A version this server does not speak gets its newest.
	const newer = await (await post({ ...init, params: { ...init.params, protocolVersion: '2099-01-01' } })).json();
	assert.equal(newer.result.protocolVersion, '2025-06-18');

	// DELETE ends the session.
	assert.equal((await fetch(mcpUrl, { method: 'DELETE', headers: { ...auth, ...h } })).status, 204);
	assert.equal((await post({ jsonrpc: '2.0', id: 9, method: 'ping' }, h)).status, 404);
});

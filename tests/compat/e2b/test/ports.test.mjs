// Ports (hardening fix 4): a sandbox's preview URL lets in another local user only with
// E2B's traffic token (E2B-Traffic-Access-Token, the create's trafficAccessToken), unless
// the sandbox was made with network.allowPublicTraffic. The other user is uid 65534
// (curl run as nobody); the suite itself runs as root, which always gets in.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tracker, sleep, sandlotKey } from '../lib.mjs';
import { Sandbox } from 'e2b';

const t = tracker();
after(() => t.cleanup());
const preview = process.env.SANDLOT_PREVIEW_PORT;

// GET / of PORT in sandbox ID through the preview proxy, as uid 65534: [status, body].
function curlAsNobody(id, port, headers = {}, via = preview) {
	const args = ['-s', '-o', '-', '-w', '\n%{http_code}', '-H', `Host: ${port}-${id}.localhost:${via}`];
	for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
	args.push(`http://127.0.0.1:${via}/`);
	return new Promise((res, rej) =>
		execFile('curl', args, { uid: 65534, gid: 65534, timeout: 10_000 }, (err, out) => {
			if (err && !out) return rej(err);
			const i = out.lastIndexOf('\n');
			res([Number(out.slice(i + 1)), out.slice(0, i)]);
		}));
}

async function serve(sbx) {
	await sbx.commands.run('mkdir -p /tmp/www && echo e2b-preview-ok > /tmp/www/index.html');
	await sbx.commands.run('cd /tmp/www && python3 -m http.server 8000 --bind 127.0.0.1', { background: true });
	for (let i = 0; i < 50; i++) {
		const r = await sbx.commands.run('python3 -c "import urllib.request as u; u.urlopen(\'http://127.0.0.1:8000/\')"')
			.catch(() => null);
		if (r && r.exitCode === 0) return;
		await sleep(200);
	}
	throw new Error('the server in the sandbox did not start');
}

test('a private sandbox: the preview URL wants the traffic token from another user', async () => {
	const sbx = t.add(await Sandbox.create({ network: { allowPublicTraffic: false } }));
	assert.match(sbx.trafficAccessToken, /^[0-9a-f]{64}$/);
	await serve(sbx);
	let [status, body] = await curlAsNobody(sbx.sandboxId, 8000);
	assert.equal(status, 401, body);
	[status] = await curlAsNobody(sbx.sandboxId, 8000, { 'e2b-traffic-access-token': 'f'.repeat(64) });
	assert.equal(status, 401);
	[status, body] = await curlAsNobody(sbx.sandboxId, 8000, { 'e2b-traffic-access-token': sbx.trafficAccessToken });
	assert.equal(status, 200);
	assert.equal(body, 'e2b-preview-ok\n');
	assert.equal((await sbx.getInfo()).network.allowPublicTraffic, false);
});

test('no allowPublicTraffic: private too (sandlot default, without --provider-defaults)', async () => {
	const sbx = t.add(await Sandbox.create());
	await serve(sbx);
	const [status] = await curlAsNobody(sbx.sandboxId, 8000);
	assert.equal(status, 401);
	assert.equal((await sbx.getInfo()).allowInternetAccess, false);
});

test('allowPublicTraffic: true opens every port to every local user', async () => {
	const sbx = t.add(await Sandbox.create({ network: { allowPublicTraffic: true } }));
	await serve(sbx);
	const [status, body] = await curlAsNobody(sbx.sandboxId, 8000);
	assert.equal(status, 200);
	assert.equal(body, 'e2b-preview-ok\n');
	assert.equal((await sbx.getInfo()).network.allowPublicTraffic, true);
});

// A daemon started with --provider-defaults (on the same state) gives an E2B create that
// asks for nothing E2B's defaults: public ports and the internet on.
test('--provider-defaults: E2B creates get public ports and the internet', async (tt) => {
	const dir = mkdtempSync(join(tmpdir(), 'sandlot-e2b-defaults-'));
	const d = spawn(process.env.SANDLOT_BIN, ['serve', '--socket', join(dir, 'd.sock'),
		'--listen', '127.0.0.1:0', '--preview-port', '0', '--provider-defaults'],
	{ stdio: ['ignore', 'pipe', 'inherit'] });
	tt.after(async () => {
		d.kill('SIGTERM');
		await new Promise((r) => d.once('exit', r));
		rmSync(dir, { recursive: true, force: true });
	});
	const url = await new Promise((resolve, reject) => {
		let out = '';
		d.stdout.on('data', (b) => {
			out += b;
			const m = out.match(/http:\/\/127\.0\.0\.1:\d+/);
			if (m) resolve(m[0]);
		});
		d.once('exit', (code) => reject(new Error(`the daemon exited ${code}`)));
	});
	const health = await (await fetch(`${url}/v1/health`, { headers: { Authorization: `Bearer ${sandlotKey}` } })).json();
	const sbx = await Sandbox.create({ apiUrl: url, sandboxUrl: url });
	tt.after(() => sbx.kill().catch(() => {}));
	const info = await sbx.getInfo();
	assert.equal(info.allowInternetAccess, true);
	assert.equal(info.network.allowPublicTraffic, true);
	await serve(sbx);
	const [status, body] = await curlAsNobody(sbx.sandboxId, 8000, {}, health.previewPort);
	assert.equal(status, 200);
	assert.equal(body, 'e2b-preview-ok\n');
	// What the client asks for still wins.
	const priv = await Sandbox.create({ apiUrl: url, sandboxUrl: url, allowInternetAccess: false,
		network: { allowPublicTraffic: false } });
	tt.after(() => priv.kill().catch(() => {}));
	const pinfo = await priv.getInfo();
	assert.equal(pinfo.allowInternetAccess, false);
	assert.equal(pinfo.network.allowPublicTraffic, false);
});

// network.maskRequestHost: the Host header a request through sandlot's preview proxy
// reaches the sandbox with, "${PORT}" made the port (E2B's suite, network.test.ts
// "maskRequestHost option", does the same through E2B's public proxy). A server in the
// sandbox writes down the headers it got, as that test's does.
test('maskRequestHost: requests through the preview proxy carry that Host, ${PORT} the port', async () => {
	const sbx = t.add(await Sandbox.create({ network: { maskRequestHost: 'custom-host.example.com:${PORT}' } }));
	assert.equal((await sbx.getInfo()).network.maskRequestHost, 'custom-host.example.com:${PORT}');
	const plain = t.add(await Sandbox.create());
	assert.equal((await plain.getInfo()).network.maskRequestHost, undefined);
	const server = `python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('/tmp/headers.txt', 'w') as f:
            for k, v in self.headers.items():
                f.write(k + ': ' + v + chr(10))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('', 8080), H).serve_forever()
"`;
	const seen = async (s) => {
		await s.commands.run(server, { background: true });
		for (let i = 0; i < 50; i++) {
			const r = await s.commands.run('python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 8080))"')
				.catch(() => null);
			if (r && r.exitCode === 0) break;
			await sleep(100);
		}
		// The suite runs as root: let in without a token.
		const status = await new Promise((res, rej) =>
			execFile('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', `Host: 8080-${s.sandboxId}.localhost:${preview}`,
				`http://127.0.0.1:${preview}/`], { timeout: 10_000 }, (err, out) => (err ? rej(err) : res(out))));
		assert.equal(status, '200');
		return (await s.files.read('/tmp/headers.txt')).split('\n').filter((l) => /^host:/i.test(l));
	};
	assert.deepEqual(await seen(sbx), ['Host: custom-host.example.com:8080']);
	assert.deepEqual(await seen(plain), [`Host: 8080-${plain.sandboxId}.localhost:${preview}`]);
	// Not a header value: refused at create.
	await assert.rejects(Sandbox.create({ network: { maskRequestHost: 'a\r\nX-Evil: 1' } }), /requestHost/);
});

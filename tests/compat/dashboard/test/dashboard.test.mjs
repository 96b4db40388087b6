// The dashboard (docs/dashboard.md) in a real browser: Debian's chromium driven by
// puppeteer-core against a real daemon (tests/compat/run-suite.sh starts it). It signs in
// with `sandlot ui`'s link, watches sandboxes come and go without a reload, creates one
// from the form, types into the terminal, uploads a file, counts the page's requests (one
// list fetch, one event stream, no polling), and checks that the cookie opens nothing from
// another origin, a sandbox's own pages (relay and preview proxy) included, which also
// must not receive the cookie. It saves the screenshots docs/ui-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const base = new URL(process.env.SANDLOT_URL);
const PORT = base.port;
const KEY = process.env.SANDLOT_API_KEY;
const BIN = process.env.SANDLOT_BIN;
const UI = `http://sandlot.localhost:${PORT}`;
const DOCS = path.resolve(import.meta.dirname, '../../../../docs');
const CHROMIUM = process.env.SANDLOT_CHROMIUM || '/usr/bin/chromium';

// One request to the daemon's TCP listener with the Host we choose (node does not resolve
// *.localhost itself, the browser does).
function req(method, p, { host = `sandlot.localhost:${PORT}`, headers = {}, body, key } = {}) {
  return new Promise((resolve, reject) => {
    const h = { Host: host, ...headers };
    if (key) h.Authorization = `Bearer ${key}`;
    let data = body;
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
      data = JSON.stringify(body);
      h['Content-Type'] = 'application/json';
    }
    if (data !== undefined) h['Content-Length'] = Buffer.byteLength(data);
    const r = http.request({ host: '127.0.0.1', port: PORT, method, path: p, headers: h }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json = null;
        try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    r.on('error', reject);
    if (data !== undefined) r.write(data);
    r.end();
  });
}
const apiCall = (method, p, body) => req(method, p, { key: KEY, body, host: `127.0.0.1:${PORT}` });

async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let browser;
let page;
const seen = []; // every request the page made: {method, url}
const made = []; // sandboxes this suite made, deleted at the end

async function shot(name) {
  await page.screenshot({ path: path.join(DOCS, `ui-${name}.png`) });
}

before(async () => {
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
    defaultViewport: { width: 1280, height: 820 },
  });
  page = await browser.newPage();
  page.on('request', (r) => seen.push({ method: r.method(), url: r.url() }));
  page.on('dialog', (d) => d.accept());
  // What went wrong in the page shows in the test's output.
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.error(`page console: ${m.text()}`); });
  page.on('requestfailed', (r) => { if (!r.url().endsWith('/v1/events')) console.error(`request failed: ${r.url()} ${r.failure()?.errorText}`); });
});

after(async () => {
  for (const id of made) await apiCall('DELETE', `/v1/sandboxes/${id}`);
  if (browser) await browser.close();
});

test('the dashboard lives on sandlot.localhost only; /v1 without the cookie is 401', async () => {
  const r = await req('GET', '/ui/', { host: `127.0.0.1:${PORT}` });
  assert.equal(r.status, 307);
  assert.equal(r.headers.location, `${UI}/ui/`);
  const p = await req('POST', '/ui/login', { host: `127.0.0.1:${PORT}`, body: { key: KEY } });
  assert.notEqual(p.status, 200);
  const page0 = await req('GET', '/ui/');
  assert.equal(page0.status, 200);
  assert.match(page0.text, /<script src="\/ui\/app.js">/);
  assert.equal((await req('GET', '/ui/app.js')).status, 200);
  // No cookie, no key: 401, for reads and changes.
  assert.equal((await req('GET', '/v1/sandboxes')).status, 401);
  assert.equal((await req('POST', '/v1/sandboxes', { body: { image: 'busybox' } })).status, 401);
  assert.equal((await req('GET', '/v1/events')).status, 401);
  // A made-up cookie is no session.
  const fake = await req('GET', '/v1/sandboxes', { headers: { Cookie: `sandlot_session=${'0'.repeat(64)}` } });
  assert.equal(fake.status, 401);
});

test('sign in with the one-time link of `sandlot ui`', async () => {
  const url = execFileSync(BIN, ['ui'], { encoding: 'utf8' }).trim();
  assert.match(url, new RegExp(`^${UI}/ui/#token=[0-9a-f]{64}$`));
  await page.goto(url);
  await page.waitForSelector('#sandboxes');
  assert.equal(await page.evaluate(() => location.hash), '#/', 'the token leaves the address bar');
  // The token is used up.
  const token = url.split('token=')[1];
  const again = await req('POST', '/ui/login', { headers: { Origin: UI }, body: { token } });
  assert.equal(again.status, 401);
  // The cookie: this host only, HttpOnly, SameSite=Strict.
  const cookies = await page.cookies(UI);
  const c = cookies.find((k) => k.name === 'sandlot_session');
  assert.ok(c, 'a session cookie');
  assert.equal(c.domain, 'sandlot.localhost');
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read it');
  await until('the live marker', () => page.$eval('#live', (e) => e.textContent.includes('live')));
});

test('a sandbox created through the API appears without a reload, and a deleted one goes', async () => {
  const before = seen.length;
  const r = await apiCall('POST', '/v1/sandboxes', { image: 'busybox', name: 'from-api', labels: { made: 'api' } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.id);
  await page.waitForSelector(`tr[data-id="${r.json.id}"][data-status="running"]`, { timeout: 20000 });
  await shot('sandboxes');
  const fetched = seen.slice(before).filter((q) => new URL(q.url).pathname.startsWith('/v1/'));
  assert.deepEqual(fetched, [], 'the row came on the event stream, not a request');

  // Filter narrows the rows.
  await page.type('#filter', 'made=api');
  await until('the filter', async () => (await page.$$('#sandboxes tbody tr')).length === 1);
  await page.$eval('#filter', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });

  // Delete from the API: the row goes.
  const d = await apiCall('DELETE', `/v1/sandboxes/${r.json.id}`);
  assert.ok(d.status === 204 || d.status === 200, d.text);
  await page.waitForSelector(`tr[data-id="${r.json.id}"]`, { hidden: true, timeout: 20000 });
});

test('create a sandbox from the form, and delete one from the page', async () => {
  await page.click('details.panel summary');
  await page.select('#new-image', 'busybox');
  await page.type('#new-name', 'from-form');
  await page.type('#new-memory', '128Mi');
  await page.type('#new-labels', 'made=form');
  await page.click('#new-submit');
  const id = await until('the new row', () => page.evaluate(() => {
    const row = [...document.querySelectorAll('#sandboxes tbody tr')].find((t) => t.textContent.includes('from-form'));
    return row && row.dataset.status === 'running' && row.dataset.id;
  }));
  made.push(id);
  const got = await apiCall('GET', `/v1/sandboxes/${id}`);
  assert.equal(got.json.name, 'from-form');
  assert.equal(got.json.resources.memory, '128Mi');
  assert.deepEqual(got.json.labels, { made: 'form' });

  // One more, deleted with its button (the confirm is accepted).
  const other = await apiCall('POST', '/v1/sandboxes', { image: 'busybox', name: 'to-delete' });
  made.push(other.json.id);
  await page.waitForSelector(`tr[data-id="${other.json.id}"] button[data-verb="delete"]`);
  await page.click(`tr[data-id="${other.json.id}"] button[data-verb="delete"]`);
  await page.waitForSelector(`tr[data-id="${other.json.id}"]`, { hidden: true, timeout: 20000 });
  const gone = await apiCall('GET', `/v1/sandboxes/${other.json.id}`);
  assert.ok(gone.status === 404 || gone.json.status === 'terminated', gone.text);
});

test('the terminal runs a command; a file uploaded on the page reads back through the API', async () => {
  const id = made[1];
  await page.goto(`${UI}/ui/#/sandbox/${id}`);
  await page.waitForSelector('#open-terminal');
  await page.click('#open-terminal');
  await page.waitForSelector('.xterm-rows');
  await page.waitForFunction(() => document.querySelector('.xterm-rows').textContent.includes('#'), { timeout: 20000 });
  await page.keyboard.type('echo dash$((6*7))\n');
  await page.waitForFunction(() => document.querySelector('.xterm-rows').textContent.includes('dash42'), { timeout: 20000 });

  // Files: go to /tmp, upload, read back through the API.
  await page.$eval('#files-path', (e) => { e.value = '/tmp'; });
  await page.click('#files-path + button');
  await until('the /tmp listing', () => page.$eval('#files-path', (e) => e.value === '/tmp'));
  const local = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dash-')), 'upload.txt');
  fs.writeFileSync(local, 'uploaded from the browser\n');
  const input = await page.$('#upload');
  await input.uploadFile(local);
  await page.waitForFunction(() => [...document.querySelectorAll('#files button')].some((b) => b.textContent === 'upload.txt'), { timeout: 20000 });
  const back = await apiCall('GET', `/v1/sandboxes/${id}/files?path=${encodeURIComponent('/tmp/upload.txt')}`);
  assert.equal(back.status, 200);
  assert.equal(back.text, 'uploaded from the browser\n');

  // Edit it in the page, read the change through the API.
  await page.evaluate(() => [...document.querySelectorAll('#files button')].find((b) => b.textContent === 'upload.txt').click());
  await page.waitForSelector('#editor-text');
  await page.$eval('#editor-text', (e) => { e.value = 'edited\n'; });
  await page.click('#editor-save');
  await until('the edit', async () => (await apiCall('GET', `/v1/sandboxes/${id}/files?path=%2Ftmp%2Fupload.txt`)).text === 'edited\n');

  // An execution run from the page: its output and exit code.
  await page.type('#exec-command', 'echo out; echo err >&2; exit 3');
  await page.click('#exec-command + button');
  await page.waitForSelector('.exit-line', { timeout: 20000 });
  const text = await page.$eval('#exec-output', (e) => e.textContent);
  assert.match(text, /out/);
  assert.match(text, /err/);
  assert.match(text, /exit code 3/);
  await page.$eval('#sec-terminal', (e) => e.scrollIntoView());
  await shot('sandbox');
});

test('the other views: images, snapshots, volumes, system', async () => {
  for (const [hash, sel, name, text] of [['#/images', '#images', 'images', /busybox/], ['#/snapshots', '#snapshots', null, null],
    ['#/volumes', '#volumes', null, null], ['#/system', '#metrics', 'system', /sandlot_/]]) {
    await page.goto(`${UI}/ui/${hash}`);
    await page.waitForSelector(sel);
    if (text) assert.match(await page.$eval(sel, (e) => e.textContent), text);
    if (name) await shot(name);
  }
});

test('an image built from a Dockerfile typed on the page, its steps shown as they come', async () => {
  await page.goto(`${UI}/ui/#/images`);
  await page.waitForSelector('#build-dockerfile');
  await page.type('#build-name', 'ui-built');
  await page.$eval('#build-dockerfile', (e) => { e.value = 'FROM busybox\nRUN echo built-on-the-page > /ui.txt\n'; });
  await page.click('#build-submit');
  await page.waitForFunction(() => /built ui-built sha256:/.test(document.querySelector('#build-log').textContent), { timeout: 60000 });
  const log = await page.$eval('#build-log', (e) => e.textContent);
  assert.match(log, /STEP 1\/2: FROM busybox/);
  assert.match(log, /STEP 2\/2: RUN echo built-on-the-page/);
  await page.waitForFunction(() => document.querySelector('#images').textContent.includes('ui-built'), { timeout: 20000 });
  // The image is real: a sandbox from it has the file the RUN wrote.
  const sb = await apiCall('POST', '/v1/run', { image: 'ui-built', command: ['cat', '/ui.txt'] });
  assert.equal(sb.status, 200, sb.text);
  assert.equal(sb.json.stdout, 'built-on-the-page\n');
  // A Dockerfile that fails names its line on the page; nothing is named.
  await page.$eval('#build-name', (e) => { e.value = 'ui-broken'; });
  await page.$eval('#build-dockerfile', (e) => { e.value = 'FROM busybox\nRUN exit 3\n'; });
  await page.click('#build-submit');
  await page.waitForFunction(() => /line 2: RUN exit 3: exit code 3/i.test(document.body.textContent), { timeout: 60000 });
  assert.equal((await apiCall('GET', '/v1/images/ui-broken')).status, 404);
  assert.equal((await apiCall('DELETE', '/v1/images/ui-built')).status, 204);
});

test('the page holds one event stream and makes no periodic list requests', async () => {
  await page.goto('about:blank');
  seen.length = 0;
  await page.goto(`${UI}/ui/#/`);
  await page.waitForSelector('#sandboxes');
  // Past two usage rounds of the stream (5 s each): the rows' charts move, requests do not.
  await new Promise((r) => setTimeout(r, 12000));
  const api = seen.map((q) => new URL(q.url)).filter((u) => u.pathname.startsWith('/v1/') || u.pathname === '/metrics');
  const lists = api.filter((u) => u.pathname === '/v1/sandboxes');
  const streams = api.filter((u) => u.pathname === '/v1/events');
  assert.equal(lists.length, 1, `one list fetch at load: ${api.map(String)}`);
  assert.equal(streams.length, 1, 'one event stream');
  assert.ok(api.length <= 4, `a handful of requests at load, none after: ${api.map(String)}`);
});

test('the cookie opens nothing from another origin, a sandbox\'s pages included', async () => {
  const c = (await page.cookies(UI)).find((k) => k.name === 'sandlot_session');
  const cookie = `sandlot_session=${c.value}`;
  // Reads from the page's own origin work; changes from elsewhere do not.
  assert.equal((await req('GET', '/v1/sandboxes', { headers: { Cookie: cookie } })).status, 200);
  const ok = await req('PATCH', `/v1/sandboxes/${made[1]}`, { headers: { Cookie: cookie, Origin: UI }, body: { labels: { a: 'b' } } });
  assert.equal(ok.status, 200, ok.text);
  for (const origin of [null, 'http://evil.example', `http://sandlot.localhost:${Number(PORT) + 1}`, `http://127.0.0.1:${PORT}`]) {
    const headers = { Cookie: cookie };
    if (origin) headers.Origin = origin;
    const r = await req('POST', '/v1/sandboxes', { headers, body: { image: 'busybox' } });
    assert.equal(r.status, 403, `Origin ${origin}: ${r.text}`);
    assert.equal(r.json.error.code, 'UNAUTHENTICATED');
  }
  // A WebSocket from another origin is refused too.
  const ws = await req('GET', `/v1/sandboxes/${made[1]}/executions/exe_x/attach`, {
    headers: { Cookie: cookie, Origin: 'http://evil.example', Upgrade: 'websocket', Connection: 'Upgrade' } });
  assert.equal(ws.status, 403);

  // A sandbox serving a page that tries to create a sandbox with the dashboard's cookie,
  // and logging the heads it receives.
  const sb = (await apiCall('POST', '/v1/sandboxes', { image: 'busybox', name: 'evil' })).json;
  made.push(sb.id);
  // Only double quotes in the page: the shell line quotes it in single ones.
  const forged = JSON.stringify({ image: 'busybox', name: 'forged' }).replace(/"/g, '\\"');
  const html = `<script>fetch("${UI}/v1/sandboxes",{method:"POST",credentials:"include",mode:"no-cors",` +
    `headers:{"Content-Type":"text/plain"},body:"${forged}"})` +
    `.then(()=>document.title="sent",()=>document.title="sent")</script>`;
  const head = `HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nContent-Length: ${Buffer.byteLength(html)}\\r\\nConnection: close\\r\\n\\r\\n`;
  // Each connection: the request's head read to its end and kept in /tmp/heads, then the
  // page (a server that answered before reading lost the head when it closed first).
  const reply = 'cr=$(printf "\\r"); while IFS= read -r l; do printf "%s\\n" "$l" >> /tmp/heads; ' +
    '[ "$l" = "$cr" ] && break; [ -z "$l" ] && break; done; printf "$HEAD%s" "$HTML"';
  const server = `printf '%s' '${reply}' > /tmp/reply.sh; nc -ll -p 8000 -e sh /tmp/reply.sh`;
  const ex = await apiCall('POST', `/v1/sandboxes/${sb.id}/executions`,
    { command: ['sh', '-c', server], env: { HEAD: head, HTML: html } });
  assert.equal(ex.status, 201, ex.text);
  const port = (await apiCall('GET', `/v1/sandboxes/${sb.id}/ports/8000`)).json;
  const relayPort = port.host.split(':').pop();
  const before = (await apiCall('GET', '/v1/sandboxes')).json.total;
  // Through the relay, on the dashboard's own host name (cookies ignore ports: the browser
  // sends the cookie there), and through the preview proxy.
  for (const url of [`http://sandlot.localhost:${relayPort}/`, `${port.url}?sandlot_token=${port.token}`]) {
    const p2 = await browser.newPage();
    await until(`${url} to answer`, async () => {
      try { return (await p2.goto(url)).status() === 200; } catch (e) { return false; }
    });
    await p2.waitForFunction(() => document.title === 'sent', { timeout: 20000 });
    await new Promise((r) => setTimeout(r, 500));
    await p2.close();
  }
  const after = (await apiCall('GET', '/v1/sandboxes')).json;
  assert.equal(after.total, before, 'no sandbox was forged');
  assert.ok(!after.sandboxes.some((s) => s.name === 'forged'));
  // What the sandbox received: requests, and never the dashboard's cookie.
  const log = await apiCall('GET', `/v1/sandboxes/${sb.id}/files?path=${encodeURIComponent('/tmp/heads')}`);
  assert.match(log.text, /GET \/ HTTP\/1.1/);
  assert.match(log.text, /Host: sandlot\.localhost:/, 'the relay saw the browser');
  assert.doesNotMatch(log.text, /sandlot_session/);
  assert.doesNotMatch(log.text, new RegExp(c.value));
});

test('sign out ends the session', async () => {
  const c = (await page.cookies(UI)).find((k) => k.name === 'sandlot_session');
  await page.goto(`${UI}/ui/#/`);
  await page.waitForSelector('#logout:not([hidden])');
  await page.click('#logout');
  await page.waitForSelector('#api-key');
  await shot('login');
  const r = await req('GET', '/v1/sandboxes', { headers: { Cookie: `sandlot_session=${c.value}` } });
  assert.equal(r.status, 401);
  // Sign in again with the API key, in the form.
  await page.type('#api-key', KEY);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#sandboxes');
});

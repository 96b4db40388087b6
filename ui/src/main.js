// sandlot's dashboard (docs/dashboard.md): plain DOM, no framework. It reads and drives the
// daemon through the same /v1 API as every client, signed in by a session cookie, and
// stays current through ONE stream, GET /v1/events (server-sent events): the list is
// fetched once, then every change and the usage figures arrive on the stream.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import './style.css';

// ---- little helpers ----

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

const main = () => document.getElementById('main');
const enc = encodeURIComponent;

function toast(msg, bad) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.className = bad ? 'bad' : '';
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.textContent = ''; }, 6000);
}

class ApiError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function api(method, path, body, raw) {
  const opt = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined && !raw) {
    opt.body = JSON.stringify(body);
    opt.headers['Content-Type'] = 'application/json';
  } else if (body !== undefined) {
    opt.body = body;
    opt.headers['Content-Type'] = 'application/octet-stream';
  }
  const r = await fetch(path, opt);
  const text = await r.text();
  if (!r.ok) {
    let msg = `${r.status} ${r.statusText}`;
    try { msg = JSON.parse(text).error.message; } catch (e) { /* not JSON */ }
    throw new ApiError(r.status, msg);
  }
  if (!text) return null;
  try { return JSON.parse(text); } catch (e) { return text; }
}

// Every button that changes something says what went wrong in the toast.
function action(fn) {
  return async (ev) => {
    if (ev) ev.preventDefault();
    try { await fn(ev); } catch (e) { toast(e.message, true); }
  };
}

function parseQty(q) {
  if (q === undefined || q === null || q === '') return 0;
  const m = String(q).match(/^([0-9.]+)\s*([a-zA-Z]*)$/);
  if (!m) return 0;
  const units = { '': 1, m: 1e-3, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12,
    Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  return parseFloat(m[1]) * (units[m[2]] ?? 1);
}

function bytes(n) {
  if (!n) return '0';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n < 10 && i ? n.toFixed(1) : Math.round(n)} ${u[i]}`;
}

function age(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// ---- live state: one list fetch, then the event stream ----

const state = {
  sandboxes: new Map(), // id -> Sandbox
  usage: new Map(),     // id -> [{t, cpu (cores), mem (bytes), disk}], the last HISTORY
  filter: '',
  sort: 'created',
  listRequests: 0,      // shown on the System view: the page fetches the list once
};
const HISTORY = 30;
let events = null;

function noteUsage(sb) {
  const u = sb.usage;
  if (!u) return;
  const hist = state.usage.get(sb.id) || [];
  const t = Date.now();
  const last = hist[hist.length - 1];
  const cpu = last ? Math.max(0, (u.cpuSeconds - last.cpuSeconds) / ((t - last.t) / 1000)) : 0;
  hist.push({ t, cpuSeconds: u.cpuSeconds, cpu, mem: u.memoryBytes, disk: u.diskBytes });
  while (hist.length > HISTORY) hist.shift();
  state.usage.set(sb.id, hist);
}

async function loadSandboxes() {
  state.listRequests++;
  const r = await api('GET', '/v1/sandboxes');
  state.sandboxes.clear();
  for (const sb of r.sandboxes) state.sandboxes.set(sb.id, sb);
}

function connectEvents() {
  if (events) events.close();
  let opened = false;
  events = new EventSource('/v1/events');
  const live = document.getElementById('live');
  events.addEventListener('hello', async () => {
    live.textContent = '● live';
    live.className = 'live on';
    // A reconnect may have missed changes: one list fetch, not a poll.
    if (opened) { await loadSandboxes(); refresh(); }
    opened = true;
  });
  events.addEventListener('sandbox', (ev) => {
    const { sandbox } = JSON.parse(ev.data);
    const had = state.sandboxes.get(sandbox.id);
    if (had && had.usage && !sandbox.usage) sandbox.usage = had.usage;
    state.sandboxes.set(sandbox.id, sandbox);
    refresh(sandbox.id);
  });
  events.addEventListener('usage', (ev) => {
    const { sandbox } = JSON.parse(ev.data);
    state.sandboxes.set(sandbox.id, sandbox);
    noteUsage(sandbox);
    refresh(sandbox.id, true);
  });
  events.addEventListener('resync', async () => { await loadSandboxes(); refresh(); });
  events.onerror = () => { live.textContent = '○ reconnecting'; live.className = 'live'; };
}

// What the current view redraws when a sandbox changes.
let onChange = () => {};
function refresh(id, usageOnly) { onChange(id, usageOnly); }

// ---- sign-in ----

function showLogin(msg) {
  document.getElementById('nav').hidden = true;
  document.getElementById('logout').hidden = true;
  const key = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true });
  const form = h('form', { class: 'login', onsubmit: action(async () => {
    await api('POST', '/ui/login', { key: key.value });
    start();
  }) },
  h('h1', {}, 'Sign in'),
  h('p', {}, 'Paste an API key (`sandlot key` prints the admin\'s), or open the link `sandlot ui` prints.'),
  msg ? h('p', { class: 'bad' }, msg) : null,
  h('label', { for: 'api-key' }, 'API key'), key,
  h('button', { type: 'submit' }, 'Sign in'));
  main().replaceChildren(form);
  key.focus();
}

async function boot() {
  const m = location.hash.match(/token=([0-9a-f]+)/);
  if (m) {
    history.replaceState(null, '', '/ui/#/');
    try { await api('POST', '/ui/login', { token: m[1] }); } catch (e) { return showLogin(e.message); }
  }
  try {
    await api('GET', '/v1/health');
  } catch (e) {
    return showLogin(e.status === 401 ? null : e.message);
  }
  start();
}

async function start() {
  document.getElementById('nav').hidden = false;
  const out = document.getElementById('logout');
  out.hidden = false;
  out.onclick = action(async () => {
    await api('POST', '/ui/logout');
    if (events) events.close();
    showLogin('Signed out.');
  });
  await loadSandboxes();
  connectEvents();
  route();
}

// ---- views ----

const ACTIONS = {
  running: ['pause', 'stop'],
  paused: ['resume', 'stop'],
  stopped: ['start'],
  failed: ['start'],
};

function lifecycleButtons(sb) {
  const btns = (ACTIONS[sb.status] || []).map((verb) => h('button', {
    type: 'button', 'data-verb': verb, 'aria-label': `${verb} ${sb.name || sb.id}`,
    onclick: action(async () => { await api('POST', `/v1/sandboxes/${sb.id}/${verb}`); toast(`${verb}: ${sb.id}`); }),
  }, verb));
  if (sb.status !== 'terminated') {
    btns.push(h('button', {
      type: 'button', class: 'danger', 'data-verb': 'delete', 'aria-label': `delete ${sb.name || sb.id}`,
      onclick: action(async () => {
        if (!confirm(`Delete ${sb.name || sb.id}? Its files go with it.`)) return;
        await api('DELETE', `/v1/sandboxes/${sb.id}`);
        toast(`deleted ${sb.id}`);
      }),
    }, 'delete'));
  }
  return btns;
}

// A meter: USED of LIMIT, and a sparkline of the history's KEY.
function meter(label, used, limit, hist, key, fmt) {
  const pct = limit ? Math.min(100, (used / limit) * 100) : 0;
  const w = 60, ht = 16;
  let pts = '';
  if (hist && hist.length > 1 && limit) {
    pts = hist.map((p, i) => `${(i / (HISTORY - 1)) * w},${ht - Math.min(1, p[key] / limit) * ht}`).join(' ');
  }
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${ht}`);
  svg.setAttribute('width', w);
  svg.setAttribute('height', ht);
  svg.setAttribute('aria-hidden', 'true');
  svg.innerHTML = `<rect x="0" y="${ht - (pct / 100) * ht}" width="${w}" height="${(pct / 100) * ht}" class="fill"/>` +
    (pts ? `<polyline points="${pts}" class="line"/>` : '');
  return h('span', { class: 'meter', title: `${label}: ${fmt(used)} of ${fmt(limit)}` },
    svg, h('span', { class: 'sr' }, `${label} `), `${Math.round(pct)}%`);
}

function usageCells(sb) {
  const u = sb.usage || {};
  const hist = state.usage.get(sb.id);
  const last = hist && hist[hist.length - 1];
  const r = sb.resources || {};
  return [
    h('td', {}, meter('CPU', last ? last.cpu : 0, parseQty(r.cpu), hist, 'cpu', (v) => `${v.toFixed(2)} cores`)),
    h('td', {}, meter('memory', u.memoryBytes || 0, parseQty(r.memory), hist, 'mem', bytes)),
    h('td', {}, meter('disk', u.diskBytes || 0, parseQty(r.disk), hist, 'disk', bytes)),
  ];
}

function labelsText(sb) {
  return Object.entries(sb.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ');
}

function sandboxRow(sb) {
  return h('tr', { 'data-id': sb.id, 'data-status': sb.status },
    h('td', {}, h('a', { href: `#/sandbox/${sb.id}` }, sb.name || sb.id), sb.name ? h('div', { class: 'dim' }, sb.id) : null),
    h('td', {}, h('span', { class: `status ${sb.status}` }, sb.status)),
    h('td', {}, sb.image),
    h('td', { title: sb.createdAt }, age(sb.createdAt)),
    ...usageCells(sb),
    h('td', { class: 'labels' }, labelsText(sb)),
    h('td', { class: 'actions' }, lifecycleButtons(sb)));
}

function visibleSandboxes() {
  const f = state.filter.trim().toLowerCase();
  const list = [...state.sandboxes.values()].filter((sb) => sb.status !== 'terminated').filter((sb) => !f ||
    [sb.id, sb.name, sb.image, sb.status, labelsText(sb)].some((s) => s && s.toLowerCase().includes(f)));
  const by = {
    created: (a, b) => b.createdAt.localeCompare(a.createdAt),
    name: (a, b) => (a.name || a.id).localeCompare(b.name || b.id),
    status: (a, b) => a.status.localeCompare(b.status),
    image: (a, b) => a.image.localeCompare(b.image),
    memory: (a, b) => ((b.usage || {}).memoryBytes || 0) - ((a.usage || {}).memoryBytes || 0),
  }[state.sort];
  return list.sort(by);
}

async function createForm() {
  let images = [];
  try { images = (await api('GET', '/v1/images')).images; } catch (e) { /* shown empty */ }
  const field = (id, label, input) => h('div', { class: 'field' }, h('label', { for: id }, label), input);
  const image = h('select', { id: 'new-image' }, images.map((i) => h('option', { value: i.name }, i.name)));
  const name = h('input', { id: 'new-name', placeholder: 'optional' });
  const cpu = h('input', { id: 'new-cpu', placeholder: 'e.g. 500m' });
  const mem = h('input', { id: 'new-memory', placeholder: 'e.g. 256Mi' });
  const disk = h('input', { id: 'new-disk', placeholder: 'e.g. 1Gi' });
  const net = h('input', { id: 'new-network', type: 'checkbox' });
  const pkgs = h('input', { id: 'new-packages', placeholder: 'apt:curl pip:requests=2.31 npm:left-pad' });
  const labels = h('input', { id: 'new-labels', placeholder: 'team=web env=dev' });
  const form = h('form', { id: 'create', class: 'create', onsubmit: action(async () => {
    const body = { image: image.value, resources: {} };
    if (name.value) body.name = name.value;
    if (cpu.value) body.resources.cpu = cpu.value;
    if (mem.value) body.resources.memory = mem.value;
    if (disk.value) body.resources.disk = disk.value;
    if (net.checked) body.network = { enabled: true };
    if (pkgs.value.trim()) {
      // MANAGER:NAME[=VERSION], apt when no manager is named.
      body.packages = pkgs.value.trim().split(/\s+/).map((p) => {
        const [manager, rest] = p.includes(':') ? p.split(/:(.*)/) : ['apt', p];
        const [n, version] = rest.split(/=(.*)/);
        return version ? { manager, name: n, version } : { manager, name: n };
      });
    }
    if (labels.value.trim()) {
      body.labels = Object.fromEntries(labels.value.trim().split(/\s+/).map((kv) => kv.split(/=(.*)/).slice(0, 2)));
    }
    submit.disabled = true;
    submit.textContent = 'Creating…';
    try {
      const sb = await api('POST', '/v1/sandboxes', body);
      toast(`created ${sb.id}`);
      name.value = '';
    } finally {
      submit.disabled = false;
      submit.textContent = 'Create';
    }
  }) });
  const submit = h('button', { type: 'submit', id: 'new-submit' }, 'Create');
  form.append(
    field('new-image', 'Image', image), field('new-name', 'Name', name),
    field('new-cpu', 'CPU', cpu), field('new-memory', 'Memory', mem), field('new-disk', 'Disk', disk),
    h('div', { class: 'field check' }, net, h('label', { for: 'new-network' }, 'Network')),
    field('new-packages', 'Packages', pkgs), field('new-labels', 'Labels', labels), submit);
  return h('details', { class: 'panel' }, h('summary', {}, 'New sandbox'), form);
}

async function viewSandboxes() {
  const tbody = h('tbody', {});
  const count = h('p', { class: 'dim', id: 'count', 'aria-live': 'polite' });
  const draw = () => {
    const list = visibleSandboxes();
    tbody.replaceChildren(...list.map(sandboxRow));
    count.textContent = `${list.length} sandbox${list.length === 1 ? '' : 'es'}`;
  };
  const filter = h('input', { id: 'filter', type: 'search', value: state.filter, placeholder: 'id, name, image, label, status',
    oninput: () => { state.filter = filter.value; draw(); } });
  const sort = h('select', { id: 'sort', onchange: () => { state.sort = sort.value; draw(); } },
    ['created', 'name', 'status', 'image', 'memory'].map((s) => h('option', { value: s, selected: s === state.sort }, s)));
  main().replaceChildren(
    h('h1', {}, 'Sandboxes'),
    await createForm(),
    h('div', { class: 'toolbar' },
      h('label', { for: 'filter' }, 'Filter'), filter,
      h('label', { for: 'sort' }, 'Sort by'), sort, count),
    h('table', { id: 'sandboxes' },
      h('thead', {}, h('tr', {}, ['Sandbox', 'Status', 'Image', 'Age', 'CPU', 'Memory', 'Disk', 'Labels', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody));
  draw();
  onChange = (id, usageOnly) => {
    // A row redrawn in place keeps the page (and its focus) where it was.
    const row = tbody.querySelector(`tr[data-id="${id}"]`);
    const sb = state.sandboxes.get(id);
    if (usageOnly && row && sb) {
      const fresh = sandboxRow(sb);
      for (let i = 4; i <= 6; i++) row.children[i].replaceWith(fresh.children[4]);
      return;
    }
    if (row && sb && sb.status !== 'terminated' && !row.contains(document.activeElement)) {
      row.replaceWith(sandboxRow(sb));
      return;
    }
    draw();
  };
}

// ---- one sandbox ----

function section(title, ...kids) {
  const id = `sec-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...kids);
}

async function streamInto(url, pre) {
  const r = await fetch(url, { credentials: 'same-origin' });
  if (!r.ok) { pre.textContent = `(${r.status})`; return; }
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pre.textContent += dec.decode(value, { stream: true });
  }
}

function executionsSection(sb) {
  const list = h('tbody', {});
  const out = h('div', { class: 'exec-output', id: 'exec-output' });
  const load = async () => {
    const r = await api('GET', `/v1/sandboxes/${sb.id}/executions`);
    list.replaceChildren(...r.executions.slice().reverse().map((e) => h('tr', {},
      h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => show(e) }, e.id)),
      h('td', { class: 'mono' }, (e.command || []).join(' ')),
      h('td', {}, e.status),
      h('td', { class: 'exit' }, e.exitCode ?? ''),
      h('td', { title: e.startedAt }, age(e.startedAt)))));
  };
  const show = (e) => {
    const so = h('pre', { class: 'stdout', 'aria-label': 'stdout' });
    const se = h('pre', { class: 'stderr', 'aria-label': 'stderr' });
    const live = e.status === 'running' ? '?follow=1' : '';
    out.replaceChildren(h('h3', {}, `${e.id}: ${(e.command || []).join(' ')}`),
      h('h4', {}, 'stdout'), so, h('h4', {}, 'stderr'), se);
    const base = `/v1/sandboxes/${sb.id}/executions/${e.id}`;
    Promise.all([streamInto(`${base}/stdout${live}`, so), streamInto(`${base}/stderr${live}`, se)])
      .then(async () => {
        const done = await api('GET', base);
        out.append(h('p', { class: 'exit-line' }, `exit code ${done.exitCode ?? '—'} (${done.status})`));
        load();
      }).catch((err) => toast(err.message, true));
  };
  const cmd = h('input', { id: 'exec-command', class: 'mono', placeholder: 'echo hello', required: true });
  const form = h('form', { class: 'inline', onsubmit: action(async () => {
    const e = await api('POST', `/v1/sandboxes/${sb.id}/executions`, { command: cmd.value });
    await load();
    show(e);
  }) }, h('label', { for: 'exec-command' }, 'Run'), cmd, h('button', { type: 'submit' }, 'Run'));
  load().catch((e) => toast(e.message, true));
  return section('Executions', form,
    h('table', {}, h('thead', {}, h('tr', {}, ['Execution', 'Command', 'Status', 'Exit', 'Started'].map((c) => h('th', { scope: 'col' }, c)))), list),
    out);
}

function terminalSection(sb) {
  const box = h('div', { class: 'terminal', id: 'terminal' });
  let ws = null;
  let term = null;
  const open = action(async () => {
    if (ws) return;
    term = new Terminal({ cursorBlink: true, fontSize: 13, convertEol: false });
    const fit = new FitAddon();
    term.loadAddon(fit);
    box.replaceChildren();
    term.open(box);
    fit.fit();
    const shell = sb.image === 'busybox' ? ['/bin/sh'] : ['/bin/bash', '-l'];
    const e = await api('POST', `/v1/sandboxes/${sb.id}/executions`,
      { command: shell, pty: { cols: term.cols, rows: term.rows } });
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    ws = new WebSocket(`${proto}://${location.host}/v1/sandboxes/${sb.id}/executions/${e.id}/attach`);
    ws.binaryType = 'arraybuffer';
    const te = new TextEncoder();
    ws.onmessage = (m) => term.write(typeof m.data === 'string' ? m.data : new Uint8Array(m.data));
    ws.onclose = () => { term.write('\r\n[session ended]\r\n'); ws = null; btn.disabled = false; };
    // Escape then Tab (within a second) leaves the terminal, so the keyboard is never
    // trapped; Escape alone still reaches the shell.
    let escAt = 0;
    term.attachCustomKeyEventHandler((ev) => {
      if (ev.type !== 'keydown') return true;
      if (ev.key === 'Escape') escAt = Date.now();
      else if (ev.key === 'Tab' && Date.now() - escAt < 1000) return false;
      return true;
    });
    term.onData((d) => { if (ws && ws.readyState === 1) ws.send(te.encode(d)); });
    term.onResize(({ cols, rows }) => { if (ws && ws.readyState === 1) ws.send(JSON.stringify({ type: 'resize', cols, rows })); });
    btn.disabled = true;
    term.focus();
  });
  const btn = h('button', { type: 'button', id: 'open-terminal', onclick: open }, 'Open terminal');
  return section('Terminal', h('p', { class: 'dim' }, 'A shell on a pty, over the attach WebSocket. Keys go to the shell; Escape then Tab leaves the terminal, Ctrl-D ends the shell.'), btn, box);
}

const EDIT_MAX = 256 * 1024;

function filesSection(sb) {
  let cwd = sb.workingDirectory || '/';
  const where = h('input', { id: 'files-path', class: 'mono', value: cwd });
  const list = h('tbody', {});
  const editor = h('div', { id: 'editor' });
  const join = (d, n) => (d.endsWith('/') ? d + n : `${d}/${n}`);
  const fileUrl = (p) => `/v1/sandboxes/${sb.id}/files?path=${enc(p)}`;
  const load = async (dir) => {
    const r = await api('GET', `/v1/sandboxes/${sb.id}/fs/list?path=${enc(dir)}`);
    cwd = dir;
    where.value = dir;
    const up = dir === '/' ? [] : [h('tr', {}, h('td', {}, h('button', { type: 'button', class: 'link', onclick: action(() => load(dir.replace(/\/[^/]+\/?$/, '') || '/')) }, '..')), h('td', {}), h('td', {}))];
    list.replaceChildren(...up, ...r.entries.map((f) => h('tr', {},
      h('td', {}, f.type === 'dir'
        ? h('button', { type: 'button', class: 'link', onclick: action(() => load(join(dir, f.name))) }, `${f.name}/`)
        : h('button', { type: 'button', class: 'link', disabled: f.size > EDIT_MAX, onclick: action(() => edit(join(dir, f.name))) }, f.name)),
      h('td', {}, f.type === 'dir' ? '' : bytes(f.size)),
      h('td', {}, f.type === 'file' ? h('a', { href: fileUrl(join(dir, f.name)), download: f.name }, 'download') : ''))));
  };
  const edit = async (path) => {
    const r = await fetch(fileUrl(path), { credentials: 'same-origin' });
    if (!r.ok) throw new Error(`${path}: ${r.status}`);
    const ta = h('textarea', { id: 'editor-text', class: 'mono', rows: 14, 'aria-label': `contents of ${path}` });
    ta.value = await r.text();
    editor.replaceChildren(h('h3', {}, path), ta,
      h('div', {}, h('button', { type: 'button', id: 'editor-save', onclick: action(async () => {
        await api('PUT', fileUrl(path), ta.value, true);
        toast(`saved ${path}`);
        load(cwd);
      }) }, 'Save'), h('button', { type: 'button', onclick: () => editor.replaceChildren() }, 'Close')));
    ta.focus();
  };
  const upload = h('input', { id: 'upload', type: 'file', onchange: action(async () => {
    for (const f of upload.files) {
      await api('PUT', fileUrl(join(cwd, f.name)), f, true);
      toast(`uploaded ${join(cwd, f.name)}`);
    }
    upload.value = '';
    await load(cwd);
  }) });
  const go = h('form', { class: 'inline', onsubmit: action(() => load(where.value || '/')) },
    h('label', { for: 'files-path' }, 'Path'), where, h('button', { type: 'submit' }, 'Go'),
    h('label', { for: 'upload' }, 'Upload here'), upload);
  const sec = section('Files', go, h('table', { id: 'files' }, list), editor);
  if (sb.status === 'running') load(cwd).catch((e) => toast(e.message, true));
  else sec.append(h('p', { class: 'dim' }, 'Start the sandbox to browse its files.'));
  return sec;
}

function portsSection(sb) {
  const port = h('input', { id: 'port', type: 'number', min: 1, max: 65535, placeholder: '8000', required: true });
  const out = h('div', { id: 'port-info' });
  const form = h('form', { class: 'inline', onsubmit: action(async () => {
    const p = await api('GET', `/v1/sandboxes/${sb.id}/ports/${enc(port.value)}`);
    const link = p.public ? p.url : `${p.url}?sandlot_token=${enc(p.token)}`;
    out.replaceChildren(h('p', {}, 'Preview: ', h('a', { href: link, target: '_blank', rel: 'noopener noreferrer', id: 'preview-link' }, p.url),
      ` · relay ${p.host}`, p.public ? ' · public' : ''));
  }) }, h('label', { for: 'port' }, 'Port'), port, h('button', { type: 'submit' }, 'Open'));
  const pub = Object.keys(sb.ports || {});
  return section('Ports', form, pub.length ? h('p', { class: 'dim' }, `Public: ${pub.join(', ')}`) : null, out);
}

function snapshotsSection(sb) {
  const list = h('ul', { id: 'sbx-snapshots' });
  const load = async () => {
    const r = await api('GET', '/v1/snapshots');
    list.replaceChildren(...r.snapshots.filter((s) => s.sandboxId === sb.id).map((s) => h('li', {}, `${s.name || s.id} (${s.id}), ${age(s.createdAt)} ago`)));
  };
  const name = h('input', { id: 'snap-name', placeholder: 'optional' });
  const form = h('form', { class: 'inline', onsubmit: action(async () => {
    const s = await api('POST', `/v1/sandboxes/${sb.id}/snapshots`, name.value ? { name: name.value } : {});
    toast(`snapshot ${s.id}`);
    load();
  }) }, h('label', { for: 'snap-name' }, 'Snapshot name'), name, h('button', { type: 'submit' }, 'Take snapshot'));
  load().catch((e) => toast(e.message, true));
  return section('Snapshots', form, list);
}

function overview(sb) {
  const r = sb.resources || {};
  const dl = (pairs) => h('dl', {}, pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  return h('div', { id: 'overview' },
    h('p', {}, h('span', { class: `status ${sb.status}`, id: 'detail-status' }, sb.status), ' ', lifecycleButtons(sb)),
    dl([['Image', sb.image], ['Created', `${sb.createdAt} (${age(sb.createdAt)} ago)`],
      ['Limits', `cpu ${r.cpu}, memory ${r.memory}, disk ${r.disk}, pids ${r.pids}`],
      ['Network', sb.network && sb.network.enabled ? `on (${sb.network.address || ''})` : 'off'],
      ['Labels', labelsText(sb) || '—'], ['User, directory', `${sb.user}, ${sb.workingDirectory}`]]),
    h('table', {}, h('tbody', {}, h('tr', {}, h('th', { scope: 'row' }, 'Now'), ...usageCells(sb)))));
}

async function viewSandbox(id) {
  let sb = state.sandboxes.get(id);
  if (!sb) sb = await api('GET', `/v1/sandboxes/${id}`);
  const head = h('div', {}, overview(sb));
  main().replaceChildren(
    h('p', {}, h('a', { href: '#/' }, '← Sandboxes')),
    h('h1', {}, sb.name || sb.id),
    head,
    executionsSection(sb), terminalSection(sb), filesSection(sb), portsSection(sb), snapshotsSection(sb));
  onChange = (changed) => {
    if (changed !== id) return;
    const now = state.sandboxes.get(id);
    if (!now) return;
    if (now.status === 'terminated') {
      head.replaceChildren(h('p', { class: 'bad' }, `This sandbox was deleted (${now.reason || 'terminated'}).`));
      return;
    }
    if (!head.contains(document.activeElement)) head.replaceChildren(overview(now));
  };
}

// ---- images, snapshots, volumes, system ----

function simpleTable(id, cols, rows) {
  return h('table', { id }, h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows));
}

// A progress answer (pull, build): one JSON object a line, the last the image or an
// error; ONLINE sees each. Returns the last.
async function jsonLines(r, online) {
  if (!r.ok) {
    const t = await r.text();
    let msg = `${r.status}`;
    try { msg = JSON.parse(t).error.message; } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let last = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      last = JSON.parse(line);
      online(last);
    }
  }
  return last;
}

// A tar archive (ustar) of FILES, {name: text}: a build's context from the page.
function tarOf(files) {
  const enc8 = new TextEncoder();
  const blocks = [];
  for (const [name, text] of Object.entries(files)) {
    const data = enc8.encode(text);
    const head = new Uint8Array(512);
    const put = (off, len, str) => head.set(enc8.encode(str).slice(0, len), off);
    const octal = (n, len) => n.toString(8).padStart(len - 1, '0');
    put(0, 100, name);
    put(100, 8, octal(0o644, 8));
    put(108, 8, octal(0, 8));
    put(116, 8, octal(0, 8));
    put(124, 12, octal(data.length, 12));
    put(136, 12, octal(Math.floor(Date.now() / 1000), 12));
    put(148, 8, '        ');
    put(156, 1, '0');
    put(257, 6, 'ustar');
    put(263, 2, '00');
    const sum = head.reduce((a, c) => a + c, 0);
    put(148, 8, `${octal(sum, 7)}\0 `);
    blocks.push(head, data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  blocks.push(new Uint8Array(1024));
  return new Blob(blocks);
}

async function viewImages(keep = {}) {
  const r = await api('GET', '/v1/images');
  const ref = h('input', { id: 'pull-ref', placeholder: 'python:3.12-slim', required: true });
  const status = h('p', { id: 'pull-status', 'aria-live': 'polite' });
  const pull = h('form', { class: 'inline', onsubmit: action(async () => {
    status.textContent = `Pulling ${ref.value}…`;
    const res = await fetch('/v1/images/pull', { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ref: ref.value }) });
    let last;
    try {
      last = await jsonLines(res, (l) => {
        if (l.status) {
          status.replaceChildren(`${l.status} ${l.layer || ''} `,
            l.total ? h('progress', { max: l.total, value: l.current || 0 }) : '',
            l.total ? ` ${bytes(l.current || 0)} of ${bytes(l.total)}` : '');
        }
      });
    } catch (e) { status.textContent = ''; throw e; }
    if (!last || last.error) { status.textContent = ''; throw new Error(last ? last.error.message : 'the pull ended early'); }
    toast(`pulled ${last.name || ref.value}`);
    viewImages();
  }) }, h('label', { for: 'pull-ref' }, 'Pull'), ref, h('button', { type: 'submit' }, 'Pull'));
  // A build from a Dockerfile typed here (its context: that one file), its steps shown as
  // they come (docs/images.md, "Builds").
  const bname = h('input', { id: 'build-name', placeholder: 'my-image', required: true });
  const dockerfile = h('textarea', { id: 'build-dockerfile', rows: 4, cols: 60, required: true,
    placeholder: 'FROM busybox\nRUN echo hello > /hello.txt' });
  // A finished build's steps stay shown when the list is redrawn with its image.
  const blog = h('pre', { id: 'build-log', class: 'mono', 'aria-live': 'polite' }, keep.buildLog || '');
  const build = h('form', { class: 'stack', onsubmit: action(async () => {
    blog.textContent = '';
    const res = await fetch(`/v1/images/build?name=${enc(bname.value)}`, { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-tar' }, body: tarOf({ Dockerfile: dockerfile.value }) });
    const last = await jsonLines(res, (l) => { if (l.stream !== undefined) blog.append(`${l.stream}\n`); });
    if (!last || last.error) throw new Error(last ? last.error.message : 'the build ended early');
    toast(`built ${bname.value}`);
    viewImages({ buildLog: blog.textContent });
  }) }, h('label', { for: 'build-name' }, 'Build'), bname,
    h('label', { for: 'build-dockerfile' }, 'Dockerfile'), dockerfile, h('button', { type: 'submit', id: 'build-submit' }, 'Build'));
  main().replaceChildren(h('h1', {}, 'Images'), pull, status, build, blog,
    simpleTable('images', ['Name', 'Digest', 'Size', 'User', 'Created', ''], r.images.map((i) => h('tr', {},
      h('td', {}, i.name), h('td', { class: 'mono' }, (i.digest || '').slice(0, 19)), h('td', {}, bytes(i.sizeBytes)),
      h('td', {}, i.user), h('td', {}, age(i.createdAt)),
      h('td', {}, h('button', { type: 'button', class: 'danger', onclick: action(async () => {
        if (!confirm(`Remove image ${i.name}?`)) return;
        await api('DELETE', `/v1/images/${enc(i.name)}`);
        viewImages();
      }) }, 'remove'))))));
}

async function viewSnapshots() {
  const r = await api('GET', '/v1/snapshots');
  main().replaceChildren(h('h1', {}, 'Snapshots'),
    simpleTable('snapshots', ['Snapshot', 'Sandbox', 'Image', 'Created', ''], r.snapshots.map((s) => h('tr', {},
      h('td', {}, s.name || s.id, s.name ? h('div', { class: 'dim' }, s.id) : null),
      h('td', {}, h('a', { href: `#/sandbox/${s.sandboxId}` }, s.sandboxId)), h('td', {}, s.image), h('td', {}, age(s.createdAt)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', onclick: action(async () => {
          const sb = await api('POST', '/v1/sandboxes', { snapshot: s.id });
          location.hash = `#/sandbox/${sb.id}`;
        }) }, 'new sandbox from it'),
        h('button', { type: 'button', class: 'danger', onclick: action(async () => {
          if (!confirm(`Delete snapshot ${s.name || s.id}?`)) return;
          await api('DELETE', `/v1/snapshots/${s.id}`);
          viewSnapshots();
        }) }, 'delete'))))));
}

async function viewVolumes() {
  const r = await api('GET', '/v1/volumes');
  const name = h('input', { id: 'vol-name', required: true });
  main().replaceChildren(h('h1', {}, 'Volumes'),
    h('form', { class: 'inline', onsubmit: action(async () => { await api('POST', '/v1/volumes', { name: name.value }); viewVolumes(); }) },
      h('label', { for: 'vol-name' }, 'New volume'), name, h('button', { type: 'submit' }, 'Create')),
    simpleTable('volumes', ['Name', 'Created', ''], r.volumes.map((v) => h('tr', {},
      h('td', {}, v.name), h('td', {}, age(v.createdAt)),
      h('td', {}, h('button', { type: 'button', class: 'danger', onclick: action(async () => {
        if (!confirm(`Delete volume ${v.name}?`)) return;
        await api('DELETE', `/v1/volumes/${enc(v.name)}`);
        viewVolumes();
      }) }, 'delete'))))));
}

async function viewSystem() {
  const [health, metrics] = await Promise.all([api('GET', '/v1/health'), api('GET', '/metrics')]);
  const rows = Object.entries(health).map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k),
    h('td', { class: 'mono' }, typeof v === 'object' ? JSON.stringify(v) : String(v))));
  const lines = String(metrics).split('\n').filter((l) => l && !l.startsWith('#'));
  main().replaceChildren(h('h1', {}, 'System'),
    h('h2', {}, 'Health'), h('table', { id: 'health' }, h('tbody', {}, rows)),
    h('h2', {}, 'Metrics'), h('pre', { id: 'metrics', class: 'mono' }, lines.join('\n')),
    h('p', { class: 'dim' }, `This page fetched the sandbox list ${state.listRequests} time(s); changes come on the event stream.`));
}

// ---- routing ----

async function route() {
  onChange = () => {};
  const hash = location.hash || '#/';
  for (const a of document.querySelectorAll('#nav a')) {
    const on = a.getAttribute('href') === hash || (hash.startsWith('#/sandbox/') && a.getAttribute('href') === '#/');
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  try {
    const m = hash.match(/^#\/sandbox\/([a-z0-9_]+)/);
    if (m) await viewSandbox(m[1]);
    else if (hash === '#/images') await viewImages();
    else if (hash === '#/snapshots') await viewSnapshots();
    else if (hash === '#/volumes') await viewVolumes();
    else if (hash === '#/system') await viewSystem();
    else await viewSandboxes();
  } catch (e) {
    if (e.status === 401) return showLogin('Your session ended: sign in again.');
    main().replaceChildren(h('p', { class: 'bad' }, e.message));
  }
}

window.addEventListener('hashchange', () => { if (!document.getElementById('nav').hidden) { route(); main().focus(); } });
boot();

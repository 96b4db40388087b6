// e2b_repl.js — one E2B code-interpreter context for JavaScript or TypeScript, run inside
// the sandbox by sandlot's E2B façade (api/compat/e2b_interp.c) as a long-lived execution.
// One JSON request a line on fd 3 ({"req","code","env_vars"}); the code interpreter's
// NDJSON events on fd 4, each tagged "_req" (the façade's shell sets the fds up). Cells
// run in one vm context, so top-level declarations persist; TypeScript has its types
// stripped by esbuild first; ESM imports and top-level await are rewritten (prepare()).
'use strict';
const vm = require('vm');
const util = require('util');
const fs = require('fs');
const cp = require('child_process');
const path = require('path');
const readline = require('readline');
const { createRequire } = require('module');

const { Writable } = require('stream');

const ts = process.env.SANDLOT_E2B_LANGUAGE === 'typescript';
delete process.env.SANDLOT_E2B_LANGUAGE;
let cur = null;
let count = 0;
// The longest text of one event, in characters; the rest is cut with a marker (the
// façade refuses lines much longer: docs/e2b.md, "Long output").
const TEXT_MAX = 256 << 10;
const emit = (o) => {
	for (const k of ['text', 'value', 'traceback'])
		if (typeof o[k] === 'string' && o[k].length > TEXT_MAX + 64) // room for a marker
			o[k] = o[k].slice(0, TEXT_MAX) +
				`\u2026[cut: ${Buffer.byteLength(o[k].slice(TEXT_MAX))} bytes]`;
	o._req = cur;
	fs.writeSync(4, JSON.stringify(o) + '\n');
};
const pending = { stdout: '', stderr: '' };
const write = (kind, s) => {
	pending[kind] += String(s);
	const i = pending[kind].lastIndexOf('\n');
	if (i >= 0) {
		emit({ type: kind, text: pending[kind].slice(0, i + 1) });
		pending[kind] = pending[kind].slice(i + 1);
	}
	return true;
};
const flush = () => {
	for (const kind of ['stdout', 'stderr'])
		if (pending[kind]) {
			emit({ type: kind, text: pending[kind] });
			pending[kind] = '';
		}
};
const sink = (kind) => new Writable({
	write(chunk, enc, cb) {
		write(kind, chunk.toString());
		cb();
	},
});
const con = new console.Console({ stdout: sink('stdout'), stderr: sink('stderr') });
const cwd = process.cwd();
const sandbox = {
	console: con,
	require: createRequire(path.join(cwd, '__cell__.js')),
	module: { exports: {} },
	__dirname: cwd,
	__filename: path.join(cwd, '__cell__.js'),
};
for (const k of ['process', 'Buffer', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder',
	'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate',
	'clearImmediate', 'queueMicrotask', 'structuredClone', 'fetch', 'AbortController', 'atob',
	'btoa'])
	if (globalThis[k] !== undefined) sandbox[k] = globalThis[k];
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);

const strip = (code) => {
	const r = cp.spawnSync('esbuild', ['--loader=ts', '--log-level=error', '--sourcefile=cell.ts'],
		{ input: code, encoding: 'utf8' });
	if (r.error) throw r.error;
	if (r.status !== 0) {
		const e = new SyntaxError(r.stderr.trim());
		e.stack = 'SyntaxError: ' + r.stderr.trim();
		throw e;
	}
	return r.stdout;
};

// ESM `import` statements at the top of a cell, as a notebook's JS kernel takes them:
// made `var` bindings of require() (a script has no imports; `var` so a later cell may
// import again). Only for a cell that does not compile as a script as it is; an import
// starts a line or follows a `;`.
const IMPORT = /(?<=^|;)([ \t]*)import\s+(?:([\w$]+)\s*(?:,\s*)?)?(?:\*\s*as\s+([\w$]+)\s*|\{([^}]*)\}\s*)?(?:from\s*)?(['"])([^'"\n]+)\5[ \t]*;?/gm;
const imports = (code) => code.replace(IMPORT, (all, ind, def, ns, names, q, mod) => {
	const req = `require(${JSON.stringify(mod)})`;
	const out = [];
	if (def) out.push(`var ${def} = ((m) => m && m.__esModule ? m.default : m)(${req});`);
	if (ns) out.push(`var ${ns} = ${req};`);
	if (names !== undefined)
		out.push(`var { ${names.replace(/\s+as\s+/g, ': ')} } = ${req};`);
	if (!out.length) out.push(`${req};`);
	return ind + out.join(' ');
});
// Top-level `await`: Node's own REPL rewrite (its hoisting of declarations, its return of
// the last expression as {value}), reached with --expose-internals.
let awaitRewrite = null;
try {
	awaitRewrite = require('internal/repl/await').processTopLevelAwait;
} catch {}
const OPTS = { filename: '<cell>' };
const compile = (code) => {
	try {
		return new vm.Script(code, OPTS);
	} catch (e) {
		if (e instanceof SyntaxError) return null;
		throw e;
	}
};
// The cell as a script, and whether its value is Node's {value} wrapper.
const prepare = (code) => {
	let script = compile(code);
	if (script) return [script, false];
	const imp = imports(code);
	if (imp !== code && (script = compile(imp))) return [script, false];
	const wrapped = awaitRewrite && /\bawait\b/.test(imp) && awaitRewrite(imp);
	if (wrapped) return [new vm.Script(wrapped, OPTS), true];
	return [new vm.Script(code, OPTS), false]; // throws its own SyntaxError
};

const describe = (e) => {
	if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e))
		return { name: e.name || 'Error', value: String(e.message), traceback: String(e.stack) };
	return { name: 'Error', value: String(e), traceback: 'Uncaught ' + util.inspect(e) };
};

async function run(code, env) {
	count++;
	const saved = {};
	for (const [k, v] of Object.entries(env)) {
		saved[k] = process.env[k];
		process.env[k] = String(v);
	}
	try {
		const [script, wrapped] = prepare(ts ? strip(code) : code);
		let value = script.runInContext(context, { breakOnSigint: true });
		if (value && typeof value.then === 'function') value = await value;
		if (wrapped) value = value && typeof value === 'object' ? value.value : undefined;
		flush();
		if (value !== undefined)
			emit({ type: 'result', text: util.inspect(value), is_main_result: true });
	} catch (e) {
		flush();
		emit({ type: 'error', ...describe(e) });
	} finally {
		flush();
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}
}

const queue = [];
let busy = false;
async function drain() {
	if (busy) return;
	busy = true;
	while (queue.length) {
		let req;
		try {
			req = JSON.parse(queue.shift());
		} catch {
			continue;
		}
		cur = req.req;
		emit({ type: 'accepted' }); // the façade's: this request reached the interpreter
		await run(req.code || '', req.env_vars || {});
		emit({ type: 'number_of_executions', execution_count: count });
		emit({ type: 'end_of_execution' });
	}
	busy = false;
}
process.on('SIGINT', () => {});
process.on('uncaughtException', (e) => emit({ type: 'stderr', text: 'Uncaught ' + String(e && e.stack || e) + '\n' }));
readline.createInterface({ input: fs.createReadStream(null, { fd: 3 }) }).on('line', (line) => {
	queue.push(line);
	drain();
}).on('close', () => process.exit(0));

// lib.mjs — what every E2B test shares: the three variables an E2B user sets to use
// sandlot (run-suite.sh provides the daemon), and cleanup of the sandboxes a test made.
const url = process.env.SANDLOT_URL;
const key = process.env.SANDLOT_API_KEY;
if (!url || !key) throw new Error('run through tests/compat/run-suite.sh (SANDLOT_URL, SANDLOT_API_KEY)');
process.env.E2B_API_URL = url;
process.env.E2B_SANDBOX_URL = url;
process.env.E2B_API_KEY = key;
delete process.env.E2B_DEBUG;

export const sandlotUrl = url;
export const sandlotKey = key;

// A /v1 call (for what the E2B API has no word for, like naming a snapshot).
export async function v1(method, path, body) {
	const res = await fetch(url + path, {
		method,
		headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : null;
}

// Kill what a test created even when it failed halfway.
export function tracker() {
	const made = [];
	return {
		add(sbx) {
			made.push(sbx);
			return sbx;
		},
		async cleanup() {
			for (const s of made.splice(0)) await s.kill().catch(() => {});
		},
	};
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A process with state only in memory: a token it made at start, a count it keeps, in
// /tmp/c. Started detached by a command that ends, its output the sandbox's /dev/null.
export const counter =
	"sh -c '(t=$(head -c8 /dev/urandom | od -An -tx1 | tr -d \" \\n\"); i=0; " +
	"while true; do i=$((i+1)); echo \"$t $i\" > /tmp/c.new; mv /tmp/c.new /tmp/c; sleep 0.2; done) " +
	"</dev/null >/dev/null 2>&1 &'";
export const readCounter = async (s) => {
	const [tok, n] = (await s.files.read('/tmp/c')).trim().split(' ');
	return { tok, n: Number(n) };
};

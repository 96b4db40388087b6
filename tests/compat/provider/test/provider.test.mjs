// provider.test.mjs — every method of the provider interface as @sandlot/sdk implements
// it, against the real daemon run-suite.sh started (TCP with the key, and the socket).
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { request } from "node:http";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createLocalProvider, SandboxError } from "@sandlot/sdk";
import { provider, rejectsWith, tracker, until } from "../lib/helpers.mjs";

test("createLocalProvider() with no arguments: SANDLOT_URL and SANDLOT_API_KEY (TCP)", async (t) => {
  const keep = tracker(t);
  assert.match(process.env.SANDLOT_URL, /^http:\/\/127\.0\.0\.1:\d+$/);
  const sb = keep(await provider.create({ language: "python" }));
  assert.match(sb.sandboxId, /^sbx_[a-z2-7]{20}$/);
  const r = await sb.commands.run("echo hello; id -un");
  assert.deepEqual({ ...r, executionId: undefined }, { exitCode: 0, stdout: "hello\nuser\n", stderr: "", executionId: undefined });
  assert.match(r.executionId, /^exe_/);
});

test("without SANDLOT_URL the default is the unix socket <run dir>/sandlot.sock (no key)", async (t) => {
  const keep = tracker(t);
  const saved = { url: process.env.SANDLOT_URL, socket: process.env.SANDLOT_SOCKET, key: process.env.SANDLOT_API_KEY };
  delete process.env.SANDLOT_URL;
  delete process.env.SANDLOT_SOCKET;
  delete process.env.SANDLOT_API_KEY;
  let p;
  try {
    p = createLocalProvider(); // reads SANDLOT_RUN_DIR, as the daemon does
  } finally {
    process.env.SANDLOT_URL = saved.url;
    process.env.SANDLOT_SOCKET = saved.socket;
    process.env.SANDLOT_API_KEY = saved.key;
  }
  assert.equal(p.transport.description, `unix:${process.env.SANDLOT_RUN_DIR}/sandlot.sock`);
  const sb = keep(await p.create({ language: "python" }));
  assert.equal((await sb.commands.run("echo over the socket")).stdout, "over the socket\n");
  // The explicit forms reach the same daemon and the same sandbox.
  for (const url of [`unix://${process.env.SANDLOT_SOCKET}`, process.env.SANDLOT_SOCKET]) {
    const again = await createLocalProvider({ url }).resume(sb.sandboxId);
    assert.equal(await again.filesystem.exists("/etc/os-release"), true);
  }
});

test("a wrong API key over TCP is refused (INTERNAL, HTTP 401 in the cause)", async () => {
  const p = createLocalProvider({ url: process.env.SANDLOT_URL, apiKey: "0".repeat(64) });
  const e = await rejectsWith(p.create({ language: "python" }), "INTERNAL");
  assert.equal(e.cause.status, 401);
  assert.equal(e.cause.code, "UNAUTHENTICATED");
});

test("create: envs, workingDirectory (made when missing), timeoutMs as the lifetime", async (t) => {
  const keep = tracker(t);
  const before = Date.now();
  const sb = keep(
    await provider.create({ language: "python", envs: { GREETING: "hej", EMPTY: "" }, workingDirectory: "/home/user/project/src", timeoutMs: 120000 })
  );
  const r = await sb.commands.run('pwd; echo "$GREETING"; stat -c %U .');
  assert.equal(r.stdout, "/home/user/project/src\nhej\nuser\n");
  const info = await sb.info();
  assert.equal(info.status, "running");
  assert.equal(info.image, "default");
  assert.equal(info.labels["sandlot.language"], "python");
  const expires = Date.parse(info.expiresAt);
  assert.ok(expires >= before + 119000 && expires <= Date.now() + 121000, `expiresAt ${info.expiresAt}`);
  // Relative paths are the working directory's.
  await sb.filesystem.write("rel.txt", "relative");
  assert.equal(await sb.filesystem.read("/home/user/project/src/rel.txt"), "relative");
});

test("create: a lifetime that runs out destroys the sandbox; resume is then NOT_FOUND", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python", timeoutMs: 1500 }));
  await until("the lifetime to run out", async () => (await sb.info()).status === "terminated", 20000);
  const e = await rejectsWith(provider.resume(sb.sandboxId), "NOT_FOUND");
  assert.match(e.message, /destroyed/);
  await rejectsWith(sb.commands.run("true"), "NOT_FOUND");
});

test("create: the language is checked", async () => {
  await rejectsWith(provider.create({ language: "cobol" }), "INTERNAL");
});

test("commands.run: output, exit codes, envs, cwd, user; a non-zero exit is a result", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const r = await sb.commands.run('echo out; echo err >&2; printf "%s" "$A-$B"; exit 3', { envs: { A: "1", B: "two words" } });
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout, "out\n1-two words");
  assert.equal(r.stderr, "err\n");
  assert.equal((await sb.commands.run("pwd", { cwd: "/tmp" })).stdout, "/tmp\n");
  assert.equal((await sb.commands.run("id -u", { user: "root" })).stdout, "0\n");
  assert.equal((await sb.commands.run("exit 0")).exitCode, 0);
  // Killed by a signal: 128+n, still a result.
  assert.equal((await sb.commands.run("kill -9 $$")).exitCode, 137);
  // sh's own "not found" is the command's result (127), not a failure to run.
  const nf = await sb.commands.run("no-such-command-here");
  assert.equal(nf.exitCode, 127);
  assert.match(nf.stderr, /not found/);
  // A command that prints like sandlot and exits 126 ran: a result.
  const fake = await sb.commands.run('echo "sandlot: pretend" >&2; exit 126');
  assert.deepEqual([fake.exitCode, fake.stderr], [126, "sandlot: pretend\n"]);
  // Non-ASCII text survives both ways.
  assert.equal((await sb.commands.run("printf 'żółw 🐢'")).stdout, "żółw 🐢");
});

test("commands.run: more than the daemon's 1 MiB inline output comes back whole", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const r = await sb.commands.run("head -c 3000000 /dev/zero | tr '\\0' a; head -c 1500000 /dev/zero | tr '\\0' b >&2");
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout.length, 3000000);
  assert.ok(/^a+$/.test(r.stdout));
  assert.equal(r.stderr.length, 1500000);
  // And through the streaming path.
  let chunks = 0;
  const s = await sb.commands.run("head -c 3000000 /dev/zero | tr '\\0' a", { onStdout: () => chunks++ });
  assert.equal(s.stdout.length, 3000000);
  assert.ok(chunks >= 1);
});

test("commands.run streams: onStdout/onStderr receive output before the command ends", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const seen = [];
  let released;
  // The command cannot end until /tmp/go exists, and only the onStdout callback
  // writes it, after it has seen "ready": so output reached us while it ran.
  const r = await sb.commands.run(
    'echo ready; echo warming >&2; i=0; while [ ! -f /tmp/go ]; do sleep 0.05; i=$((i+1)); [ $i -gt 400 ] && exit 9; done; echo bye; echo done >&2',
    {
      onStdout: (d) => {
        seen.push(["out", d, Date.now()]);
        if (d.includes("ready") && !released) released = sb.filesystem.write("/tmp/go", "go");
      },
      onStderr: (d) => seen.push(["err", d, Date.now()]),
    }
  );
  await released;
  assert.equal(r.exitCode, 0, "the command saw the file the callback wrote");
  assert.equal(r.stdout, "ready\nbye\n");
  assert.equal(r.stderr, "warming\ndone\n");
  assert.equal(seen.filter((s) => s[0] === "out").map((s) => s[1]).join(""), r.stdout);
  assert.equal(seen.filter((s) => s[0] === "err").map((s) => s[1]).join(""), r.stderr);
  assert.ok(seen.find((s) => s[0] === "err" && s[1].includes("warming")), "stderr streamed too");
});

test("commands.run streams multi-byte characters split across chunks intact", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  let text = "";
  // 'ż' is two bytes: the first byte, a pause, then the second.
  const r = await sb.commands.run("printf '\\305'; sleep 0.3; printf '\\274!'", { onStdout: (d) => (text += d) });
  assert.equal(text, "ż!");
  assert.equal(r.stdout, "ż!");
});

test("commands.run background: resolves at the start; callbacks keep receiving output", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  let out = "";
  const t0 = Date.now();
  // The file first: once "later" is seen, the file is surely there (the other way round
  // raced the exists() call against touch).
  const r = await sb.commands.run("sleep 1; touch /tmp/bg-done; echo later", { background: true, onStdout: (d) => (out += d) });
  assert.ok(Date.now() - t0 < 900, "resolved before the command ended");
  assert.equal(r.exitCode, -1);
  assert.match(r.executionId, /^exe_/);
  await until("the background command's output", () => out === "later\n");
  assert.equal(await sb.filesystem.exists("/tmp/bg-done"), true);
});

test("commands.run timeoutMs: the command is killed and the call rejects with TIMEOUT", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const t0 = Date.now();
  const e = await rejectsWith(sb.commands.run("echo started; sleep 30", { timeoutMs: 700 }), "TIMEOUT");
  assert.ok(Date.now() - t0 < 10000);
  assert.equal(e.cause.result.stdout, "started\n");
  assert.equal(e.cause.result.exitCode, 137);
  // The same with streaming callbacks.
  let streamed = "";
  await rejectsWith(sb.commands.run("echo s; sleep 30", { timeoutMs: 700, onStdout: (d) => (streamed += d) }), "TIMEOUT");
  assert.equal(streamed, "s\n");
  // The sandbox is fine afterwards.
  assert.equal((await sb.commands.run("echo ok")).stdout, "ok\n");
});

test("commands.run that cannot run at all: EXECUTION_FAILED with the daemon's reason", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const e = await rejectsWith(sb.commands.run("true", { cwd: "/no/such/dir" }), "EXECUTION_FAILED");
  assert.match(e.message, /working directory/);
  const u = await rejectsWith(sb.commands.run("true", { user: "nobody-here" }), "EXECUTION_FAILED");
  assert.match(u.message, /unknown user/);
  const bad = await rejectsWith(sb.commands.run("true", { timeoutMs: -5 }), "EXECUTION_FAILED");
  assert.equal(bad.cause.status, 400);
});

test("executeCode python: stdout, parsed output, errors as results", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const ok = await sb.executeCode('import json, os\nprint("working")\nprint(json.dumps({"sum": 6 * 7, "env": os.environ["K"]}))', "python", {
    envs: { K: "v" },
  });
  assert.equal(ok.success, true);
  assert.equal(ok.stdout, 'working\n{"sum": 42, "env": "v"}\n');
  assert.deepEqual(ok.output, { sum: 42, env: "v" });
  assert.equal(ok.error, undefined);
  assert.equal(typeof ok.durationMs, "number");
  const bad = await sb.executeCode("def f():\n    raise ValueError('no good')\nf()", "python");
  assert.equal(bad.success, false);
  assert.equal(bad.error.name, "ValueError");
  assert.equal(bad.error.message, "no good");
  assert.match(bad.error.traceback, /line 2/);
});

test("executeCode typescript: types stripped, run by node", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "typescript" }));
  const r = await sb.executeCode("const n: number = 2;\ninterface P { x: number }\nconst p: P = { x: n * 21 };\nconsole.log(JSON.stringify(p));", "typescript");
  assert.equal(r.success, true, r.stderr);
  assert.deepEqual(r.output, { x: 42 });
  const e = await sb.executeCode("throw new TypeError('bad type');", "typescript");
  assert.equal(e.success, false);
  assert.equal(e.error.name, "TypeError");
  assert.equal(e.error.message, "bad type");
});

test("executeCode timeoutMs: TIMEOUT, with the partial result in the cause", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const e = await rejectsWith(sb.executeCode("import time\nprint('begun', flush=True)\ntime.sleep(30)", "python", { timeoutMs: 800 }), "TIMEOUT");
  assert.equal(e.cause.result.stdout, "begun\n");
  assert.equal(e.cause.result.error.name, "TimeoutError");
});

test("executeCode on an image without the interpreter: EXECUTION_FAILED", async (t) => {
  const keep = tracker(t);
  const p = createLocalProvider({ image: "busybox" });
  const sb = keep(await p.create({ language: "python" }));
  const e = await rejectsWith(sb.executeCode("print(1)", "python"), "EXECUTION_FAILED");
  assert.match(e.message, /python3/);
});

test("filesystem: write/read text, list, exists, mkdir, remove", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const fs = sb.filesystem;
  await fs.mkdir("/home/user/a/b/c");
  await fs.mkdir("/home/user/a/b/c"); // mkdir -p: again is fine
  await fs.write("/home/user/a/hello.txt", "grüß dich\n");
  await fs.write("/home/user/a/b/new/deep.txt", "parents made");
  assert.equal(await fs.read("/home/user/a/hello.txt"), "grüß dich\n");
  assert.equal((await sb.commands.run("cat /home/user/a/hello.txt; stat -c '%U %a' /home/user/a/hello.txt")).stdout, "grüß dich\nuser 644\n");
  await sb.commands.run("ln -s hello.txt /home/user/a/link");
  const entries = await fs.list("/home/user/a");
  assert.deepEqual(
    entries.map((e) => [e.name, e.type]),
    [["b", "dir"], ["hello.txt", "file"], ["link", "symlink"]]
  );
  const f = entries.find((e) => e.name === "hello.txt");
  assert.equal(f.path, "/home/user/a/hello.txt");
  assert.equal(f.size, Buffer.byteLength("grüß dich\n"));
  assert.equal(f.mode, 0o644);
  assert.ok(f.modifiedAt instanceof Date && Math.abs(f.modifiedAt.getTime() - Date.now()) < 120000);
  assert.equal(entries.find((e) => e.name === "link").symlinkTarget, "hello.txt");
  assert.equal(await fs.exists("/home/user/a/hello.txt"), true);
  assert.equal(await fs.exists("/home/user/a/b"), true);
  assert.equal(await fs.exists("/home/user/a/nope"), false);
  await fs.remove("/home/user/a/hello.txt");
  assert.equal(await fs.exists("/home/user/a/hello.txt"), false);
  await fs.remove("/home/user/a"); // a directory with everything in it
  assert.equal(await fs.exists("/home/user/a"), false);
  await rejectsWith(fs.read("/home/user/a/hello.txt"), "NOT_FOUND");
  await rejectsWith(fs.list("/home/user/nowhere"), "NOT_FOUND");
  await rejectsWith(fs.remove("/home/user/nowhere"), "NOT_FOUND");
  // What the sandbox writes is what the filesystem reads.
  await sb.commands.run("echo from-inside > /tmp/inside.txt");
  assert.equal(await fs.read("/tmp/inside.txt"), "from-inside\n");
});

test("filesystem: a 5 MB binary file round-trips through write/readBytes", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  const data = randomBytes(5 * 1024 * 1024);
  data[0] = 0;
  data[1] = 0xff; // not UTF-8: nothing on the way may decode it
  await sb.filesystem.write("/tmp/blob.bin", new Uint8Array(data));
  const back = await sb.filesystem.readBytes("/tmp/blob.bin");
  assert.ok(back instanceof Uint8Array);
  assert.equal(back.byteLength, data.byteLength);
  assert.ok(Buffer.from(back.buffer, back.byteOffset, back.byteLength).equals(data), "same bytes");
  const inside = await sb.commands.run("sha256sum /tmp/blob.bin | cut -d' ' -f1");
  assert.equal(inside.stdout.trim(), createHash("sha256").update(data).digest("hex"));
  const [info] = (await sb.filesystem.list("/tmp")).filter((e) => e.name === "blob.bin");
  assert.equal(info.size, 5 * 1024 * 1024);
});

test("pause, then resume(id): frozen meanwhile, continues where it was", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  await sb.commands.run("(i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done) >/dev/null 2>&1 &");
  await until("the counter", async () => Number(await sb.filesystem.read("/tmp/count").catch(() => "0")) > 3);
  await sb.pause();
  assert.equal((await sb.info()).status, "paused");
  // A paused sandbox refuses commands: the command could not run.
  const e = await rejectsWith(sb.commands.run("true"), "EXECUTION_FAILED");
  assert.equal(e.cause.status, 409);
  const again = await provider.resume(sb.sandboxId);
  assert.equal(again.sandboxId, sb.sandboxId);
  assert.equal((await again.info()).status, "running");
  const a = Number(await again.filesystem.read("/tmp/count"));
  await sleep(400);
  const b = Number(await again.filesystem.read("/tmp/count"));
  assert.ok(b > a, `the counter moves again (${a} -> ${b})`);
  // The old instance works too: it is the same sandbox.
  assert.equal((await sb.commands.run("echo same")).stdout, "same\n");
});

test("resume(id) of a running sandbox reconnects; of a stopped one starts it; by name too", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python", name: `resume-${Date.now()}`, timeoutMs: 30000 }));
  await sb.filesystem.write("/home/user/kept.txt", "kept");
  const before = Date.now();
  const same = await provider.resume(sb.sandboxId);
  assert.equal(await same.filesystem.read("/home/user/kept.txt"), "kept");
  // The lifetime is extended to the provider's timeoutMs (300000 by default) from now.
  const expires = Date.parse((await same.info()).expiresAt);
  assert.ok(expires >= before + 299000 && expires <= Date.now() + 301000, `expiresAt ${expires - before} ms ahead`);
  await provider.transport.call({ method: "POST", path: `/v1/sandboxes/${sb.sandboxId}/stop`, timeoutMs: 60000 });
  assert.equal((await sb.info()).status, "stopped");
  const started = await provider.resume((await sb.info()).name);
  assert.equal(started.sandboxId, sb.sandboxId);
  assert.equal((await started.info()).status, "running");
  assert.equal(await started.filesystem.read("/home/user/kept.txt"), "kept");
});

test("unknown ids: NOT_FOUND, with the daemon's message and status in the cause", async () => {
  const e = await rejectsWith(provider.resume("sbx_aaaaaaaaaaaaaaaaaaaa"), "NOT_FOUND");
  assert.equal(e.cause.status, 404);
  assert.equal(e.cause.code, "NOT_FOUND");
  assert.match(e.cause.message, /sbx_aaaaaaaaaaaaaaaaaaaa/);
  assert.ok(e instanceof Error && e instanceof SandboxError);
  await rejectsWith(provider.resume("not-a-sandbox"), "NOT_FOUND");
});

test("kill: the sandbox is gone, every call is NOT_FOUND, kill again is fine", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  await sb.kill();
  assert.equal((await sb.info()).status, "terminated");
  await rejectsWith(provider.resume(sb.sandboxId), "NOT_FOUND");
  await rejectsWith(sb.commands.run("true"), "NOT_FOUND");
  await rejectsWith(sb.executeCode("1", "python"), "NOT_FOUND");
  await rejectsWith(sb.filesystem.read("/etc/hostname"), "NOT_FOUND");
  await rejectsWith(sb.filesystem.exists("/etc/hostname"), "NOT_FOUND");
  await rejectsWith(sb.getHost(8080), "NOT_FOUND");
  await rejectsWith(sb.pause(), "NOT_FOUND");
  await sb.kill();
});

function httpGet(hostPort, path) {
  const [host, port] = hostPort.split(":");
  return new Promise((resolve, reject) => {
    const r = request({ host, port: Number(port), path }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    r.on("error", reject);
    r.end();
  });
}

test("getHost(port): 127.0.0.1:N reaches a server inside the sandbox (network off)", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "python" }));
  await sb.filesystem.write("/home/user/site/index.html", "hello from inside\n");
  await sb.commands.run("python3 -m http.server 8000 --bind 127.0.0.1 --directory /home/user/site", { background: true });
  const host = await sb.getHost(8000);
  assert.match(host, /^127\.0\.0\.1:\d+$/);
  assert.equal(await sb.getHost(8000), host, "the same relay for the same port");
  const res = await until("the server to answer", () => httpGet(host, "/index.html").catch(() => null));
  assert.equal(res.status, 200);
  assert.equal(res.body, "hello from inside\n");
  await rejectsWith(sb.getHost(0), "INTERNAL");
  await rejectsWith(sb.getHost(70000), "INTERNAL");
});

// daemon.test.mjs — the error mapping when the daemon is not there or does not answer,
// and resume(id) across a daemon restart, with a second daemon this file owns.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createLocalProvider } from "@sandlot/sdk";
import { rejectsWith, SecondDaemon, tracker } from "../lib/helpers.mjs";

test("no daemon: CONNECTION_FAILED (missing socket, refused TCP port)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sandlot-sdk-"));
  try {
    const p = createLocalProvider({ url: `unix://${dir}/nothing.sock` });
    const e = await rejectsWith(p.create({ language: "python" }), "CONNECTION_FAILED");
    assert.match(e.message, /nothing\.sock/);
    assert.equal(e.cause.code, "ENOENT");
    await rejectsWith(p.resume("sbx_aaaaaaaaaaaaaaaaaaaa"), "CONNECTION_FAILED");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // A TCP port nobody listens on (taken, then released).
  const srv = createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  const e = await rejectsWith(createLocalProvider({ url: `http://127.0.0.1:${port}`, apiKey: "k" }).resume("sbx_x"), "CONNECTION_FAILED");
  assert.equal(e.cause.code, "ECONNREFUSED");
});

test("daemon stopped: CONNECTION_FAILED; restarted: resume(id) reconnects, files and commands intact", async (t) => {
  const keep = tracker(t);
  const d = new SecondDaemon("sdk-restart");
  t.after(() => d.stop());
  await d.start();
  const p = createLocalProvider({ url: d.url });
  const sb = await p.create({ language: "python" });
  // Killed through the runner's daemon (the same state) when the test ends.
  keep(await createLocalProvider().resume(sb.sandboxId));
  await sb.filesystem.write("/home/user/note.txt", "before the restart");
  await sb.commands.run("sleep 3; echo finished-while-down > /tmp/bg.txt", { background: true });

  await d.stop();
  const e = await rejectsWith(sb.commands.run("true"), "CONNECTION_FAILED");
  assert.match(e.message, /sdk-restart\.sock/);
  await rejectsWith(sb.filesystem.read("/home/user/note.txt"), "CONNECTION_FAILED");
  await rejectsWith(sb.executeCode("1", "python"), "CONNECTION_FAILED");
  await rejectsWith(p.resume(sb.sandboxId), "CONNECTION_FAILED");
  await rejectsWith(p.create({ language: "python" }), "CONNECTION_FAILED");

  await d.start();
  const again = await p.resume(sb.sandboxId);
  assert.equal(await again.filesystem.read("/home/user/note.txt"), "before the restart");
  // The command started before the restart kept running while the daemon was down.
  const r = await again.commands.run("while [ ! -f /tmp/bg.txt ]; do sleep 0.1; done; cat /tmp/bg.txt");
  assert.equal(r.stdout, "finished-while-down\n");
  // The old instance works again too.
  assert.equal((await sb.commands.run("echo back")).stdout, "back\n");
});

test("a daemon that does not answer: TIMEOUT after requestTimeoutMs", async (t) => {
  const d = new SecondDaemon("sdk-frozen");
  t.after(() => d.stop());
  await d.start();
  const p = createLocalProvider({ url: d.url, requestTimeoutMs: 800 });
  d.freeze(); // SIGSTOP: the socket accepts, nothing answers
  try {
    const t0 = Date.now();
    const e = await rejectsWith(p.resume("sbx_aaaaaaaaaaaaaaaaaaaa"), "TIMEOUT");
    const took = Date.now() - t0;
    assert.ok(took >= 700 && took < 5000, `gave up after ${took} ms`);
    assert.match(e.message, /800 ms/);
  } finally {
    d.thaw();
  }
  await rejectsWith(p.resume("sbx_aaaaaaaaaaaaaaaaaaaa"), "NOT_FOUND");
});

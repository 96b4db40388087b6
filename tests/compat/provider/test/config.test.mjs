// config.test.mjs — create({packages}) and the tool-set sandbox config (provider
// "local"): what goes on the wire, what the daemon makes of it, and a pip install from a
// wheel directory served to the daemon.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { configToCreateOptions, createLocalProvider, parsePackage, SandboxError } from "@sandlot/sdk";
import { provider, rejectsWith, tracker } from "../lib/helpers.mjs";

test("package strings as each manager writes them", () => {
  assert.deepEqual(parsePackage("requests", "python"), { name: "requests", manager: "pip" });
  assert.deepEqual(parsePackage("requests==2.31.0", "python"), { name: "requests", version: "2.31.0", manager: "pip" });
  assert.deepEqual(parsePackage("numpy>=1.26", "python"), { name: "numpy", version: ">=1.26", manager: "pip" });
  assert.deepEqual(parsePackage("uvicorn[standard]==0.30", "python"), { name: "uvicorn[standard]", version: "0.30", manager: "pip" });
  assert.deepEqual(parsePackage("lodash", "typescript"), { name: "lodash", manager: "npm" });
  assert.deepEqual(parsePackage("lodash@4.17.21", "typescript"), { name: "lodash", version: "4.17.21", manager: "npm" });
  assert.deepEqual(parsePackage("@types/node@^18", "typescript"), { name: "@types/node", version: "^18", manager: "npm" });
  assert.deepEqual(parsePackage("@scope/pkg", "typescript"), { name: "@scope/pkg", manager: "npm" });
  assert.throws(() => parsePackage("not a package", "python"), (e) => e instanceof SandboxError && e.code === "INTERNAL");
  assert.throws(() => parsePackage("x@", "typescript"), SandboxError);
});

/** The body create() sends, caught by a stand-in that answers as the daemon does today. */
async function createBody(options, viaConfig = false) {
  const dir = mkdtempSync(join(tmpdir(), "sandlot-sdk-wire-"));
  const bodies = [];
  const srv = createServer((req, res) => {
    let b = "";
    req.on("data", (d) => (b += d));
    req.on("end", () => {
      bodies.push({ method: req.method, url: req.url, body: JSON.parse(b) });
      res.writeHead(501, { "content-type": "application/json" });
      res.end('{"error":{"code":"NOT_IMPLEMENTED","message":"packages: not available yet"}}');
    });
  });
  await new Promise((r) => srv.listen(join(dir, "s.sock"), r));
  try {
    const p = createLocalProvider({ url: `unix://${dir}/s.sock`, timeoutMs: 60000 });
    const e = await rejectsWith(viaConfig ? p.createFromConfig(options) : p.create(options), "INTERNAL");
    assert.equal(e.cause.status, 501);
    assert.equal(bodies.length, 1);
    assert.equal(bodies[0].method, "POST");
    assert.equal(bodies[0].url, "/v1/sandboxes");
    return bodies[0].body;
  } finally {
    await new Promise((r) => srv.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
}

test("create({packages}) sends /v1 packages [{name, version?, manager}]", async () => {
  const py = await createBody({ language: "python", packages: ["pandas==2.0", "numpy"], envs: { A: "1" }, workingDirectory: "/w" });
  assert.deepEqual(py.packages, [
    { name: "pandas", version: "2.0", manager: "pip" },
    { name: "numpy", manager: "pip" },
  ]);
  assert.deepEqual(py.env, { A: "1" });
  assert.equal(py.workingDirectory, "/w");
  assert.deepEqual(py.timeout, { lifetime: 60000 });
  assert.equal(py.image, "default");
  const ts = await createBody({ language: "typescript", packages: ["zod@3.23.8", "@types/lodash"] });
  assert.deepEqual(ts.packages, [
    { name: "zod", version: "3.23.8", manager: "npm" },
    { name: "@types/lodash", manager: "npm" },
  ]);
});

test("the tool-set config (provider local) maps to one create", async () => {
  const config = {
    provider: "local",
    language: "python",
    packages: [{ name: "pandas", version: "2.0" }, { name: "numpy" }],
    resources: { cpu: "2", memory: "4Gi", timeout: 120000 },
  };
  const body = await createBody(config, true);
  assert.deepEqual(body.packages, [
    { name: "pandas", version: "2.0", manager: "pip" },
    { name: "numpy", manager: "pip" },
  ]);
  assert.deepEqual(body.resources, { cpu: "2", memory: "4Gi" });
  assert.deepEqual(body.timeout, { lifetime: 60000, execution: 120000 });
  assert.deepEqual(configToCreateOptions({ ...config, runtime: "busybox", packages: [] }).image, "busybox");
  assert.throws(() => configToCreateOptions({ ...config, provider: "e2b" }), /not "local"/);
});

test("a tool-set config against the daemon: cpu/memory quantities and the per-run timeout hold", async (t) => {
  const keep = tracker(t);
  const sb = keep(
    await provider.createFromConfig({ provider: "local", language: "python", packages: [], resources: { cpu: "500m", memory: "256Mi", timeout: 1500 } })
  );
  const info = await sb.info();
  assert.equal(info.resources.cpu, "500m");
  assert.equal(info.resources.memory, "256Mi");
  // The memory limit holds: 400 MiB does not fit in 256Mi.
  const big = await sb.executeCode("b = bytearray(400 * 1024 * 1024)\nprint(len(b))", "python", { timeoutMs: 60000 });
  assert.equal(big.success, false);
  assert.equal(big.error.name, "OutOfMemoryError");
  assert.equal((await sb.executeCode("b = bytearray(64 * 1024 * 1024)\nprint(len(b))", "python")).output, 64 * 1024 * 1024);
  // resources.timeout is each run's default timeout.
  await rejectsWith(sb.commands.run("sleep 20"), "TIMEOUT");
  await rejectsWith(sb.executeCode("import time\ntime.sleep(20)", "python"), "TIMEOUT");
  assert.equal((await sb.commands.run("echo quick")).stdout, "quick\n");
});

test("packages: pip installs a wheel from the daemon's --pip-wheels directory", async (t) => {
  const keep = tracker(t);
  assert.ok(process.env.SANDLOT_TEST_WHEELS, "setup.sh made the wheel directory");
  const sb = keep(await provider.create({ language: "python", packages: ["sandlot-probe==1.0"] }));
  const r = await sb.executeCode("import sandlot_probe\nprint(sandlot_probe.VALUE)", "python");
  assert.equal(r.success, true, r.stderr);
  assert.equal(r.stdout, "sandlot-probe-1.0\n");
  // The same through the tool-set config.
  const viaConfig = keep(
    await provider.createFromConfig({ provider: "local", language: "python", packages: [{ name: "sandlot-probe", version: "1.0" }], resources: {} })
  );
  assert.equal((await viaConfig.commands.run("python3 -c 'import sandlot_probe; print(sandlot_probe.VALUE)'")).stdout, "sandlot-probe-1.0\n");
  // A version the directory does not have: the create fails, nothing is left running.
  await assert.rejects(provider.create({ language: "python", packages: ["sandlot-probe==9.9"] }), SandboxError);
});

test("packages: typescript sandboxes get npm packages (name@version) from the daemon's registry", async (t) => {
  const keep = tracker(t);
  const sb = keep(await provider.create({ language: "typescript", packages: ["sandlot-tiny@1.0.0"] }));
  const r = await sb.executeCode('const m = require("sandlot-tiny");\nconsole.log(m.answer as number);', "typescript");
  assert.equal(r.success, true, r.stderr);
  assert.equal(r.stdout, "42\n");
  await assert.rejects(provider.create({ language: "typescript", packages: ["sandlot-tiny@9.9.9"] }), SandboxError);
});

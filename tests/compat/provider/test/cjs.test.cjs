// cjs.test.cjs — the CommonJS build, loaded with require(), does the same work.
const assert = require("node:assert/strict");
const { test } = require("node:test");
const sdk = require("@sandlot/sdk");

test("require('@sandlot/sdk'): the CJS build creates, runs, reads and kills", async () => {
  assert.equal(require.resolve("@sandlot/sdk").endsWith("/dist/cjs/index.js"), true);
  assert.equal(typeof sdk.createLocalProvider, "function");
  const sb = await sdk.createLocalProvider().create({ language: "python" });
  try {
    const r = await sb.commands.run("echo from cjs");
    assert.equal(r.stdout, "from cjs\n");
    const code = await sb.executeCode("print(40 + 2)", "python");
    assert.equal(code.output, 42);
    await assert.rejects(sdk.createLocalProvider().resume("sbx_aaaaaaaaaaaaaaaaaaaa"), (e) => e instanceof sdk.SandboxError && e.code === "NOT_FOUND");
  } finally {
    await sb.kill();
  }
});

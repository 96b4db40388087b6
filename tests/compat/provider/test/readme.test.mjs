// readme.test.mjs — sdk/typescript/README.md's complete example, run as it is written.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { repoRoot, suiteDir } from "../lib/helpers.mjs";

test("the README's complete example runs and prints what its comments say", async () => {
  const readme = readFileSync(join(repoRoot, "sdk/typescript/README.md"), "utf8");
  const section = readme.split("## A complete example")[1];
  assert.ok(section, "the README has its example section");
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(code, "the section has a js block");
  const dir = join(suiteDir, "node_modules", ".cache", "sandlot-readme");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "example.mjs"), code);
  let stdout;
  try {
    ({ stdout } = await promisify(execFile)(process.execPath, [join(dir, "example.mjs")], { timeout: 120000 }));
  } catch (e) {
    assert.fail(`the example failed (exit ${e.code}):\n--- stdout\n${e.stdout}\n--- stderr\n${e.stderr}`);
  }
  assert.match(stdout, /^code: true \{"greeting":"hello","sum":6\}$/m);
  assert.match(stdout, /^live: step 1\n(live: )?step 2\n?/m);
  assert.match(stdout, /^exit code: 3$/m);
  assert.match(stdout, /^served: "a,b\\n1,2\\n3,4\\n"$/m);
  assert.match(stdout, /^files: \[ 'data\.csv file 12' \]$/m);
  assert.match(stdout, /^bytes: \[ 0, 1, 2, 255 \]$/m);
});

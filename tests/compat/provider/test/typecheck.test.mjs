// typecheck.test.mjs — `tsc --noEmit`: createLocalProvider() is assignable to the
// interface's SandboxProvider, where the interface is the declaration blocks of the
// seed document taken as they are, at test time (not a copy kept by the package).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { seedFile, suiteDir } from "../lib/helpers.mjs";

const WANTED = [
  "SandboxProvider",
  "SandboxInstance",
  "SandboxCommands",
  "SandboxFilesystem",
  "SandboxLanguage",
  "SandboxCreateOptions",
  "CodeExecutionResult",
  "SandboxExecutionResult",
  "SandboxConfig",
  "SandboxError",
  "SandboxErrorCode",
];

/**
 * The top-level `interface`/`type`/`class` blocks of the document, unmodified: an
 * interface or class runs to its closing "}" at the start of a line, a type alias to the
 * line that ends with ";" (before any // comment).
 */
function seedBlocks(text) {
  const lines = text.split("\n");
  const blocks = new Map();
  for (let i = 0; i < lines.length; i++) {
    const m = /^(interface|type|class) (\w+)/.exec(lines[i]);
    if (!m) continue;
    let j = i;
    if (m[1] === "type") while (j < lines.length && !/;\s*(\/\/.*)?$/.test(lines[j])) j++;
    else while (j < lines.length && lines[j] !== "}") j++;
    if (j === lines.length) throw new Error(`the seed's ${m[2]} block has no end`);
    blocks.set(m[2], lines.slice(i, j + 1).join("\n"));
    i = j;
  }
  return blocks;
}

const work = join(suiteDir, "node_modules", ".cache", "sandlot-typecheck");
const tsc = createRequire(join(suiteDir, "package.json")).resolve("typescript/bin/tsc");

function compile(files) {
  const cfg = {
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      types: ["node"],
      skipLibCheck: false,
    },
    files,
  };
  writeFileSync(join(work, "tsconfig.json"), JSON.stringify(cfg, null, 2));
  try {
    execFileSync(process.execPath, [tsc, "-p", join(work, "tsconfig.json")], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return { ok: true, out: "" };
  } catch (e) {
    return { ok: false, out: `${e.stdout}${e.stderr}` };
  }
}

test("tsc --noEmit: createLocalProvider() is a SandboxProvider as the seed document declares it", () => {
  const path = seedFile();
  const blocks = seedBlocks(readFileSync(path, "utf8"));
  const missing = WANTED.filter((n) => !blocks.has(n));
  assert.deepEqual(missing, [], `declarations missing from ${path}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  // The seed uses three types it does not define; they are the package's to define.
  writeFileSync(
    join(work, "seed.ts"),
    [
      `// Generated from ${path}: its declaration blocks, unmodified.`,
      'import type * as Sdk from "@sandlot/sdk";',
      "export declare namespace Seed {",
      "type SandboxCommandOptions = Sdk.SandboxCommandOptions;",
      "type CodeExecutionOptions = Sdk.CodeExecutionOptions;",
      "type SandboxFileInfo = Sdk.SandboxFileInfo;",
      ...[...blocks.values()],
      "}",
      "",
    ].join("\n")
  );
  writeFileSync(
    join(work, "conforms.ts"),
    `import { createLocalProvider, configToCreateOptions, SandboxError } from "@sandlot/sdk";
import type { SandboxErrorCode, LocalSandboxCreateOptions } from "@sandlot/sdk";
import type { Seed } from "./seed.js";

// The one line a project changes: an E2B or Daytona provider becomes the local one.
export const provider: Seed.SandboxProvider = createLocalProvider();
export const configured: Seed.SandboxProvider = createLocalProvider({ url: "unix:///run/sandlot/sandlot.sock", apiKey: "k", timeoutMs: 300000 });
export const tcp: Seed.SandboxProvider = createLocalProvider({ url: "http://127.0.0.1:7070", apiKey: "k" });

export async function use(p: Seed.SandboxProvider, o: Seed.SandboxCreateOptions): Promise<Seed.SandboxExecutionResult> {
  const i: Seed.SandboxInstance = await p.create(o);
  const again: Seed.SandboxInstance = await p.resume(i.sandboxId);
  const code: Seed.CodeExecutionResult = await again.executeCode("print(1)", "python", { timeoutMs: 1000 });
  const bytes: Uint8Array = await i.filesystem.readBytes(code.stdout);
  await i.filesystem.write("/x", bytes);
  return i.commands.run("echo", { cwd: "/", envs: { A: "1" }, timeoutMs: 1, onStdout: (s: string) => void s, onStderr: (s: string) => void s, background: false });
}
export const local = (o: Seed.SandboxCreateOptions) => createLocalProvider().create(o);

// SandboxError: the same constructor, the same codes both ways.
export const ErrorClass: typeof Seed.SandboxError = SandboxError;
export const err: Seed.SandboxError = new SandboxError("m", "TIMEOUT", { status: 504 });
export const toSeed: Seed.SandboxErrorCode[] = [] as SandboxErrorCode[];
export const fromSeed: SandboxErrorCode[] = [] as Seed.SandboxErrorCode[];

// The tool-set config, with provider "local".
export const fromConfig = (c: Omit<Seed.SandboxConfig, "provider">): LocalSandboxCreateOptions =>
  configToCreateOptions({ ...c, provider: "local" });
export const viaProvider = (c: Omit<Seed.SandboxConfig, "provider">) => createLocalProvider().createFromConfig({ ...c, provider: "local" });
`
  );
  // CommonJS consumers get the same types through the "require" condition.
  writeFileSync(
    join(work, "conforms-cjs.cts"),
    `import sdk = require("@sandlot/sdk");
import type { Seed } from "./seed.js";
export const provider: Seed.SandboxProvider = sdk.createLocalProvider();
export const ErrorClass: typeof Seed.SandboxError = sdk.SandboxError;
`
  );
  const good = compile(["seed.ts", "conforms.ts", "conforms-cjs.cts"]);
  assert.ok(good.ok, `tsc found errors:\n${good.out}`);

  // The check can fail: an object that is not a provider is refused by the same setup.
  writeFileSync(
    join(work, "mismatch.ts"),
    `import type { Seed } from "./seed.js";
export const notAProvider: Seed.SandboxProvider = { create: async () => ({ sandboxId: "x" }), resume: async (id: number) => { throw id; } };
`
  );
  const bad = compile(["seed.ts", "mismatch.ts"]);
  assert.equal(bad.ok, false, "tsc accepted an object that is not a SandboxProvider");
  assert.match(bad.out, /mismatch\.ts\(2,\d+\): error TS2322/);
});

test("the seed file is found from the repository root, and its absence is named", () => {
  const path = seedFile();
  assert.match(readFileSync(path, "utf8"), /interface SandboxProvider \{/);
  const nowhere = mkdtempSync(join(tmpdir(), "sandlot-noseed-"));
  const shared = process.env.SANDLOT_SHARED_DIR;
  process.env.SANDLOT_SHARED_DIR = join(nowhere, "shared");
  try {
    assert.throws(() => seedFile(join(nowhere, "repo")), /the interface document is missing: looked for .*noseed.*shared\/seeds\/000_ac2822aae9ec0850\.txt/);
  } finally {
    if (shared === undefined) delete process.env.SANDLOT_SHARED_DIR;
    else process.env.SANDLOT_SHARED_DIR = shared;
    rmSync(nowhere, { recursive: true, force: true });
  }
});

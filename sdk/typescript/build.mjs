// build.mjs — tsc twice: ESM (dist/esm) and CommonJS (dist/cjs, marked by its own
// package.json), each with its .d.ts. Usage: node build.mjs [path to tsc]
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const tsc = process.argv[2] ?? createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync(join(here, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"])
  execFileSync(process.execPath, [tsc, "-p", join(here, project)], { stdio: "inherit" });
mkdirSync(join(here, "dist/cjs"), { recursive: true });
writeFileSync(join(here, "dist/cjs/package.json"), '{ "type": "commonjs" }\n');
writeFileSync(join(here, "dist/esm/package.json"), '{ "type": "module" }\n');

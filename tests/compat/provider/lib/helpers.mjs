// helpers.mjs — shared by the provider suite: the provider under test, cleanup of the
// sandboxes a test makes, a second daemon the suite owns (stop/restart/SIGSTOP), and
// where the seed document is.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { createLocalProvider, SandboxError } from "@sandlot/sdk";

export const suiteDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const repoRoot = resolve(suiteDir, "../../..");

for (const v of ["SANDLOT_URL", "SANDLOT_API_KEY", "SANDLOT_SOCKET", "SANDLOT_BIN", "SANDLOT_RUN_DIR"])
  if (!process.env[v]) throw new Error(`${v} is not set: run this suite with tests/compat/run-suite.sh`);

/** The provider as a user gets it: createLocalProvider() reading SANDLOT_URL/SANDLOT_API_KEY. */
export const provider = createLocalProvider();

/** Sandboxes made by a test, killed when it ends (the runner removes any left too). */
export function tracker(t) {
  const made = [];
  t.after(async () => {
    for (const sb of made) await sb.kill().catch(() => undefined);
  });
  return (sb) => {
    made.push(sb);
    return sb;
  };
}

/** Await P and check it rejects with a SandboxError of CODE; returns the error. */
export async function rejectsWith(p, code) {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof SandboxError)) throw new Error(`expected SandboxError ${code}, got ${e?.stack ?? e}`);
    if (e.code !== code) throw new Error(`expected SandboxError ${code}, got ${e.code}: ${e.message}`);
    return e;
  }
  throw new Error(`expected SandboxError ${code}, but the call succeeded`);
}

export async function until(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * A second `sandlot serve` on the suite's state (its own socket, no TCP), so a test can
 * stop, restart and freeze a daemon without touching the runner's.
 */
export class SecondDaemon {
  constructor(name) {
    this.socket = join(process.env.SANDLOT_RUN_DIR, `${name}.sock`);
    this.url = `unix://${this.socket}`;
    this.proc = null;
  }

  async start() {
    const p = spawn(process.env.SANDLOT_BIN, ["serve", "--socket", this.socket, "--preview-port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.proc = p;
    let err = "";
    p.stderr.on("data", (d) => (err += d));
    p.stdout.resume();
    const probe = createLocalProvider({ url: this.url, requestTimeoutMs: 2000 });
    await until(`the second daemon on ${this.socket} (${err})`, async () => {
      if (p.exitCode !== null) throw new Error(`sandlot serve exited ${p.exitCode}: ${err}`);
      // An unknown id answers 404 only once the daemon serves.
      return probe.resume("sbx_aaaaaaaaaaaaaaaaaaaa").then(
        () => false,
        (e) => e.code === "NOT_FOUND"
      );
    });
  }

  async stop() {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const done = new Promise((r) => p.once("exit", r));
    p.kill("SIGCONT");
    p.kill("SIGTERM");
    await done;
    this.proc = null;
  }

  freeze() {
    this.proc.kill("SIGSTOP");
  }

  thaw() {
    this.proc.kill("SIGCONT");
  }
}

/**
 * The seed document that defines the interface: <repo>/../shared/seeds/000_...txt (the
 * repo is /work/main and the documents /work/shared), also from a git worktree of it.
 */
export function seedFile(root = repoRoot) {
  const name = "shared/seeds/000_ac2822aae9ec0850.txt";
  const candidates = [resolve(root, "..", name)];
  try {
    const common = execFileSync("git", ["-C", root, "rev-parse", "--path-format=absolute", "--git-common-dir"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    candidates.push(resolve(common, "../..", name));
  } catch {
    /* not a git checkout: the first candidate only */
  }
  // Where the workspace keeps its shared documents when the checkout lives elsewhere
  // (a CI clone in a scratch directory): SANDLOT_SHARED_DIR, else /work/shared.
  candidates.push(resolve(process.env.SANDLOT_SHARED_DIR || "/work/shared", name.slice("shared/".length)));
  const found = candidates.find((c) => existsSync(c));
  if (!found)
    throw new Error(`the interface document is missing: looked for ${[...new Set(candidates)].join(" and ")} (the seeds live in ../shared next to the repository)`);
  return found;
}

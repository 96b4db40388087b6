// provider.ts — createLocalProvider(): the provider interface over sandlot's /v1 API.
// Each method is one or a few /v1 calls; all behaviour (timeouts, durability, file
// safety) is the daemon's.
import { SandboxError, type SandboxErrorCause } from "./errors.js";
import { managerFor, parsePackage, type PackageSpec } from "./packages.js";
import { Transport, parseEndpoint, type Request } from "./transport.js";
import type {
  CodeExecutionOptions,
  CodeExecutionResult,
  SandboxCommandOptions,
  SandboxCommands,
  SandboxConfig,
  SandboxCreateOptions,
  SandboxExecutionResult,
  SandboxFileInfo,
  SandboxFilesystem,
  SandboxInstance,
  SandboxLanguage,
  SandboxProvider,
} from "./types.js";

export interface LocalProviderOptions {
  /**
   * Where the daemon is: "unix:///run/sandlot/sandlot.sock" (or just the path) or
   * "http://127.0.0.1:PORT". Default: $SANDLOT_URL, else $SANDLOT_SOCKET, else
   * $SANDLOT_RUN_DIR/sandlot.sock, else /run/sandlot/sandlot.sock.
   */
  url?: string;
  /** The key `sandlot key` prints; needed for TCP only. Default: $SANDLOT_API_KEY. */
  apiKey?: string;
  /** Default lifetime of a sandbox in ms (E2B's timeoutMs; default 300000, 0: none). */
  timeoutMs?: number;
  /** Image of new sandboxes (default "default": Debian with python3 and node). */
  image?: string;
  /** Give up on a daemon that does not answer an ordinary call within this (default 60000). */
  requestTimeoutMs?: number;
}

/** create() options beyond the interface's. */
export interface LocalSandboxCreateOptions extends Omit<SandboxCreateOptions, "packages"> {
  /** Strings as the language's manager writes them, or {name, version?} objects. */
  packages?: (string | { name: string; version?: string })[];
  /** A sandlot image (default: the provider's). */
  image?: string;
  /** Kubernetes quantities: cpu "500m" | "2", memory "512Mi", disk "1Gi"; pids a count. */
  resources?: { cpu?: string | number; memory?: string | number; disk?: string | number; pids?: number };
  /** Default timeout of each command and code run, in ms. */
  executionTimeoutMs?: number;
  labels?: Record<string, string>;
  name?: string;
}

/** commands.run's result, with the execution's id (its record stays in the daemon). */
export interface LocalExecutionResult extends SandboxExecutionResult {
  executionId: string;
}

/** executeCode's result, with the interpreter's exit code. */
export interface LocalCodeExecutionResult extends CodeExecutionResult {
  exitCode?: number;
}

/** The daemon's Sandbox record (the fields this package reads; see api/openapi.yaml). */
export interface SandboxInfo {
  id: string;
  name: string | null;
  status: "creating" | "running" | "paused" | "stopped" | "terminated" | "failed";
  image: string;
  createdAt: string;
  expiresAt: string | null;
  workingDirectory: string;
  user: string;
  labels: Record<string, string>;
  [field: string]: unknown;
}

interface Execution {
  id: string;
  status: "queued" | "running" | "completed" | "failed" | "timeout" | "cancelled";
  exitCode: number | null;
  signal: string | null;
  pid?: number;
  stdout?: string;
  stderr?: string;
  stdoutTruncated?: boolean;
  stderrTruncated?: boolean;
}

const WAIT = "5m"; // the daemon's longest ?wait=
const WAIT_SLACK_MS = 5 * 60 * 1000 + 30 * 1000;
const CREATE_TIMEOUT_MS = 10 * 60 * 1000; // image layers, packages

export function createLocalProvider(options: LocalProviderOptions = {}): LocalProvider {
  return new LocalProvider(options);
}

function defaultUrl(): string {
  const env = process.env;
  if (env.SANDLOT_URL) return env.SANDLOT_URL;
  if (env.SANDLOT_SOCKET) return env.SANDLOT_SOCKET;
  return `${env.SANDLOT_RUN_DIR || "/run/sandlot"}/sandlot.sock`;
}

function checkLanguage(language: unknown): SandboxLanguage {
  if (language !== "python" && language !== "typescript")
    throw new SandboxError(`language: "${String(language)}" is not one of python, typescript`, "INTERNAL");
  return language;
}

/** The tool-set sandbox config (provider "local") as create() options. */
export function configToCreateOptions(config: SandboxConfig): LocalSandboxCreateOptions {
  if (config.provider !== "local")
    throw new SandboxError(`sandbox config: provider "${String(config.provider)}" is not "local"`, "INTERNAL");
  const o: LocalSandboxCreateOptions = { language: checkLanguage(config.language), packages: config.packages ?? [] };
  if (config.runtime) o.image = config.runtime;
  const r = config.resources ?? {};
  if (r.cpu !== undefined || r.memory !== undefined) {
    o.resources = {};
    if (r.cpu !== undefined) o.resources.cpu = r.cpu;
    if (r.memory !== undefined) o.resources.memory = r.memory;
  }
  if (r.timeout !== undefined) o.executionTimeoutMs = r.timeout;
  return o;
}

export class LocalProvider implements SandboxProvider {
  readonly transport: Transport;
  private readonly timeoutMs: number;
  private readonly image: string;
  private readonly requestTimeoutMs: number;

  constructor(options: LocalProviderOptions = {}) {
    this.transport = new Transport(parseEndpoint(options.url ?? defaultUrl()), options.apiKey ?? process.env.SANDLOT_API_KEY);
    this.timeoutMs = options.timeoutMs ?? 300000;
    this.image = options.image ?? "default";
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60000;
  }

  async create(options: LocalSandboxCreateOptions): Promise<LocalSandbox> {
    const language = checkLanguage(options?.language);
    const body: Record<string, unknown> = { image: options.image ?? this.image };
    if (options.name) body.name = options.name;
    if (options.envs) body.env = options.envs;
    if (options.workingDirectory) body.workingDirectory = options.workingDirectory;
    if (options.resources) body.resources = options.resources;
    body.labels = { ...(options.labels ?? {}), "sandlot.sdk": "typescript", "sandlot.language": language };
    const timeout: Record<string, number> = {};
    const lifetime = options.timeoutMs ?? this.timeoutMs;
    if (lifetime > 0) timeout.lifetime = lifetime;
    if (options.executionTimeoutMs) timeout.execution = options.executionTimeoutMs;
    if (Object.keys(timeout).length) body.timeout = timeout;
    const packages: PackageSpec[] = (options.packages ?? []).map((p) =>
      typeof p === "string" ? parsePackage(p, language) : { ...p, manager: managerFor(language) }
    );
    if (packages.length) body.packages = packages;

    const sb = await this.transport.json<SandboxInfo>({ method: "POST", path: "/v1/sandboxes", json: body, timeoutMs: CREATE_TIMEOUT_MS });
    const instance = new LocalSandbox(sb.id, this.transport, this.requestTimeoutMs);
    if (options.workingDirectory) {
      // The image may not have it: make it (mkdir -p, owned by the sandbox's user).
      try {
        await instance.filesystem.mkdir(options.workingDirectory);
      } catch (error) {
        await instance.kill().catch(() => undefined);
        throw error;
      }
    }
    return instance;
  }

  /** create() from the tool-set sandbox config (provider "local"). */
  createFromConfig(config: SandboxConfig): Promise<LocalSandbox> {
    return this.create(configToCreateOptions(config));
  }

  /**
   * Reconnect to a sandbox made earlier (by id or name), also after a daemon restart:
   * a paused one is resumed, a stopped one started; its lifetime is extended to at least
   * timeoutMs from now (as E2B's connect). Unknown or destroyed: NOT_FOUND.
   */
  async resume(sandboxId: string): Promise<LocalSandbox> {
    const t = this.transport;
    const path = `/v1/sandboxes/${encodeURIComponent(sandboxId)}`;
    const rt = this.requestTimeoutMs;
    let sb = await t.json<SandboxInfo>({ method: "GET", path, timeoutMs: rt });
    if (sb.status === "terminated")
      throw new SandboxError(`sandlot: sandbox ${sb.id} was destroyed${sb.reason ? ` (${String(sb.reason)})` : ""}`, "NOT_FOUND", {
        status: 404,
        code: "NOT_FOUND",
        method: "GET",
        path,
      } satisfies SandboxErrorCause);
    const base = `/v1/sandboxes/${sb.id}`;
    if (sb.status === "paused") sb = await t.json<SandboxInfo>({ method: "POST", path: `${base}/resume`, timeoutMs: rt });
    else if (sb.status === "stopped" || sb.status === "failed")
      sb = await t.json<SandboxInfo>({ method: "POST", path: `${base}/start`, timeoutMs: CREATE_TIMEOUT_MS });
    if (sb.expiresAt && this.timeoutMs > 0 && Date.parse(sb.expiresAt) < Date.now() + this.timeoutMs)
      await t.call({ method: "PATCH", path: base, json: { timeout: { lifetime: this.timeoutMs } }, timeoutMs: rt });
    return new LocalSandbox(sb.id, t, rt);
  }
}

export class LocalSandbox implements SandboxInstance {
  readonly sandboxId: string;
  readonly commands: LocalCommands;
  readonly filesystem: LocalFilesystem;
  private readonly t: Transport;
  private readonly base: string;
  private readonly rt: number;

  constructor(sandboxId: string, transport: Transport, requestTimeoutMs: number) {
    this.sandboxId = sandboxId;
    this.t = transport;
    this.base = `/v1/sandboxes/${sandboxId}`;
    this.rt = requestTimeoutMs;
    this.commands = new LocalCommands(transport, this.base, requestTimeoutMs);
    this.filesystem = new LocalFilesystem(transport, this.base, requestTimeoutMs);
  }

  /**
   * Run CODE in a fresh interpreter (python3; TypeScript through esbuild and node). An
   * exception in the code is a result (success false, error); a run past timeoutMs
   * rejects with TIMEOUT; an interpreter that could not start, with EXECUTION_FAILED.
   */
  async executeCode(code: string, language: SandboxLanguage, options: CodeExecutionOptions = {}): Promise<LocalCodeExecutionResult> {
    checkLanguage(language);
    const body: Record<string, unknown> = { code, language };
    if (options.timeoutMs) body.timeout = options.timeoutMs;
    if (options.envs) body.env = options.envs;
    const path = `${this.base}/code`;
    const r = await this.t.json<LocalCodeExecutionResult>({
      method: "POST",
      path,
      json: body,
      timeoutMs: options.timeoutMs ? options.timeoutMs + 60000 : 0,
      running: true,
    });
    if (!r.success && r.error?.name === "TimeoutError")
      throw new SandboxError(`code timed out: ${r.error.message}`, "TIMEOUT", { method: "POST", path, result: r } satisfies SandboxErrorCause);
    // The interpreter could not start: sandlot-init's one-line reason is all of stderr.
    if (!r.success && (r.exitCode === 126 || r.exitCode === 127) && /^sandlot: [^\n]*\n?$/.test(r.stderr))
      throw new SandboxError(`code could not run: ${r.stderr.trim()}`, "EXECUTION_FAILED", { method: "POST", path, result: r } satisfies SandboxErrorCause);
    const out: LocalCodeExecutionResult = { success: r.success, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs };
    if ("output" in r) out.output = r.output;
    if (r.error) out.error = r.error;
    if (r.exitCode !== undefined) out.exitCode = r.exitCode;
    return out;
  }

  /** Destroy the sandbox (already gone: nothing to do). */
  async kill(): Promise<void> {
    try {
      await this.t.call({ method: "DELETE", path: this.base, timeoutMs: this.rt });
    } catch (error) {
      if (!(error instanceof SandboxError && error.code === "NOT_FOUND")) throw error;
    }
  }

  /** Freeze every process (the cgroup freezer); provider.resume(id) thaws it. */
  async pause(): Promise<void> {
    await this.t.call({ method: "POST", path: `${this.base}/pause`, timeoutMs: this.rt });
  }

  /** "127.0.0.1:N": a loopback relay to PORT inside the sandbox (network on or off). */
  async getHost(port: number): Promise<string> {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new SandboxError(`getHost: ${port} is not a port number (1-65535)`, "INTERNAL");
    const r = await this.t.json<{ host: string }>({ method: "GET", path: `${this.base}/ports/${port}`, timeoutMs: this.rt });
    return r.host;
  }

  /** The daemon's record of the sandbox (status, image, expiresAt, usage, ...). */
  info(): Promise<SandboxInfo> {
    return this.t.json<SandboxInfo>({ method: "GET", path: this.base, timeoutMs: this.rt });
  }
}

export class LocalCommands implements SandboxCommands {
  constructor(private readonly t: Transport, private readonly base: string, private readonly rt: number) {}

  /**
   * Run a shell line (/bin/sh -c). A non-zero exit is a result; a command past
   * timeoutMs rejects with TIMEOUT, one that could not start (bad cwd, unknown user)
   * with EXECUTION_FAILED. onStdout/onStderr get the output while it runs.
   */
  async run(command: string, options: SandboxCommandOptions = {}): Promise<LocalExecutionResult> {
    const body: Record<string, unknown> = { command };
    if (options.envs) body.env = options.envs;
    if (options.cwd) body.cwd = options.cwd;
    if (options.user) body.user = options.user;
    if (options.timeoutMs) body.timeout = options.timeoutMs;
    const path = `${this.base}/executions`;
    const streaming = Boolean(options.onStdout || options.onStderr);

    if (!streaming && !options.background) {
      const ex = await this.settle(await this.t.json<Execution>({ method: "POST", path, query: { wait: WAIT }, json: body, timeoutMs: WAIT_SLACK_MS, running: true }));
      const stdout = ex.stdoutTruncated ? await this.output(ex.id, "stdout") : (ex.stdout ?? "");
      const stderr = ex.stderrTruncated ? await this.output(ex.id, "stderr") : (ex.stderr ?? "");
      return this.result(ex, stdout, stderr, options);
    }

    const started = await this.t.json<Execution>({ method: "POST", path, json: body, timeoutMs: this.rt, running: true });
    if (options.background) {
      // Only the streams someone listens to; a failed stream ends quietly.
      if (options.onStdout) this.follow(started.id, "stdout", options.onStdout).catch(() => undefined);
      if (options.onStderr) this.follow(started.id, "stderr", options.onStderr).catch(() => undefined);
      return { exitCode: -1, stdout: "", stderr: "", executionId: started.id };
    }
    const out = this.follow(started.id, "stdout", options.onStdout);
    const err = this.follow(started.id, "stderr", options.onStderr);
    const [stdout, stderr] = await Promise.all([out, err]);
    return this.result(await this.settle(started), stdout, stderr, options);
  }

  /** Long-poll the execution until it has ended. */
  private async settle(ex: Execution): Promise<Execution> {
    while (ex.status === "running" || ex.status === "queued")
      ex = await this.t.json<Execution>({ method: "GET", path: `${this.base}/executions/${ex.id}`, query: { wait: WAIT }, timeoutMs: WAIT_SLACK_MS });
    return ex;
  }

  /** A whole output log (when the inline copy was truncated at 1 MiB). */
  private async output(eid: string, stream: "stdout" | "stderr"): Promise<string> {
    const r = await this.t.call({ method: "GET", path: `${this.base}/executions/${eid}/${stream}`, timeoutMs: WAIT_SLACK_MS });
    return r.body.toString("utf8");
  }

  /** Stream a log from its first byte until the command has ended; resolves with all of it. */
  private async follow(eid: string, stream: "stdout" | "stderr", cb?: (data: string) => void): Promise<string> {
    const decoder = new TextDecoder("utf-8");
    let all = "";
    const take = (text: string) => {
      if (!text) return;
      all += text;
      if (cb) cb(text);
    };
    const req: Request = { method: "GET", path: `${this.base}/executions/${eid}/${stream}`, query: { follow: 1 }, timeoutMs: 0 };
    await this.t.stream(req, (chunk) => take(decoder.decode(chunk, { stream: true })), true);
    take(decoder.decode());
    return all;
  }

  private result(ex: Execution, stdout: string, stderr: string, options: SandboxCommandOptions): LocalExecutionResult {
    const path = `${this.base}/executions/${ex.id}`;
    const result: LocalExecutionResult = { exitCode: ex.exitCode ?? -1, stdout, stderr, executionId: ex.id };
    if (ex.status === "timeout")
      throw new SandboxError(`command timed out after ${options.timeoutMs ?? "the sandbox's default"} ms and was killed`, "TIMEOUT", {
        method: "POST",
        path,
        executionId: ex.id,
        result,
      } satisfies SandboxErrorCause);
    // Could not start (sandlot-init refused it: working directory, user, no /bin/sh).
    if (ex.status === "failed" && !ex.pid && (ex.exitCode === 126 || ex.exitCode === 127) && stderr.startsWith("sandlot: "))
      throw new SandboxError(`command could not run: ${stderr.trim().slice("sandlot: ".length)}`, "EXECUTION_FAILED", {
        method: "POST",
        path,
        executionId: ex.id,
        result,
      } satisfies SandboxErrorCause);
    return result;
  }
}

interface FileInfoJson {
  name: string;
  path: string;
  type: SandboxFileInfo["type"];
  size: number;
  mode: number;
  mtime: string;
  target?: string;
}

export class LocalFilesystem implements SandboxFilesystem {
  constructor(private readonly t: Transport, private readonly base: string, private readonly rt: number) {}

  async read(path: string): Promise<string> {
    return (await this.get(path)).toString("utf8");
  }

  async readBytes(path: string): Promise<Uint8Array> {
    const b = await this.get(path);
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }

  /** Write a whole file (parents made; a new file is 0644 and the sandbox user's). */
  async write(path: string, content: string | Uint8Array): Promise<void> {
    const raw = typeof content === "string" ? Buffer.from(content, "utf8") : content;
    await this.t.call({ method: "PUT", path: `${this.base}/files`, query: { path }, raw, timeoutMs: this.bulkTimeout(raw.byteLength) });
  }

  async list(path: string): Promise<SandboxFileInfo[]> {
    const r = await this.t.json<{ entries: FileInfoJson[] }>({ method: "GET", path: `${this.base}/fs/list`, query: { path }, timeoutMs: this.rt });
    return r.entries.map(fileInfo);
  }

  /** Whether PATH exists (a dangling symlink counts); the sandbox itself must exist. */
  async exists(path: string): Promise<boolean> {
    try {
      await this.t.call({ method: "GET", path: `${this.base}/fs/stat`, query: { path }, timeoutMs: this.rt });
      return true;
    } catch (error) {
      if (!(error instanceof SandboxError && error.code === "NOT_FOUND")) throw error;
    }
    // 404 is also the answer for a sandbox that is gone: tell the two apart.
    const sb = await this.t.json<{ status: string; id: string }>({ method: "GET", path: this.base, timeoutMs: this.rt });
    if (sb.status === "terminated")
      throw new SandboxError(`sandlot: sandbox ${sb.id} was destroyed`, "NOT_FOUND", { status: 404, code: "NOT_FOUND", method: "GET", path: this.base } satisfies SandboxErrorCause);
    return false;
  }

  /** mkdir -p. */
  async mkdir(path: string): Promise<void> {
    await this.t.call({ method: "POST", path: `${this.base}/fs/mkdir`, json: { path }, timeoutMs: this.rt });
  }

  /** Remove a file, a link, or a directory with everything in it. */
  async remove(path: string): Promise<void> {
    await this.t.call({ method: "DELETE", path: `${this.base}/files`, query: { path, recursive: 1 }, timeoutMs: this.rt });
  }

  private async get(path: string): Promise<Buffer> {
    return (await this.t.call({ method: "GET", path: `${this.base}/files`, query: { path }, timeoutMs: this.rt })).body;
  }

  /** The ordinary timeout, plus a second per 8 MiB for large files. */
  private bulkTimeout(bytes: number): number {
    return this.rt + Math.ceil(bytes / (8 << 20)) * 1000;
  }
}

function fileInfo(e: FileInfoJson): SandboxFileInfo {
  const f: SandboxFileInfo = { name: e.name, path: e.path, type: e.type, size: e.size, mode: e.mode, modifiedAt: new Date(e.mtime) };
  if (e.target !== undefined) f.symlinkTarget = e.target;
  return f;
}

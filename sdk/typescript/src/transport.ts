// transport.ts — HTTP to the daemon over its unix socket or loopback TCP with node:http
// (no dependencies), and the one place daemon and system errors become SandboxErrors.
import * as http from "node:http";
import { SandboxError, type SandboxErrorCause } from "./errors.js";
import type { SandboxErrorCode } from "./types.js";

export type Endpoint =
  | { kind: "unix"; socketPath: string }
  | { kind: "tcp"; host: string; port: number };

/** "unix:///run/sandlot/sandlot.sock", "unix:/path", "/path" or "http://127.0.0.1:7070". */
export function parseEndpoint(url: string): Endpoint {
  if (url.startsWith("/")) return { kind: "unix", socketPath: url };
  if (url.startsWith("unix:")) {
    const path = url.slice("unix:".length).replace(/^\/\/(?=\/)/, "");
    if (!path.startsWith("/"))
      throw new SandboxError(`url ${url}: a unix socket URL needs an absolute path (unix:///run/sandlot/sandlot.sock)`, "CONNECTION_FAILED");
    return { kind: "unix", socketPath: path };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch (error) {
    throw new SandboxError(`url ${url}: not a URL (use unix:///path or http://127.0.0.1:PORT)`, "CONNECTION_FAILED", { error });
  }
  if (u.protocol !== "http:")
    throw new SandboxError(`url ${url}: sandlot serves plain HTTP on loopback or a unix socket; ${u.protocol} is not supported`, "CONNECTION_FAILED");
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return { kind: "tcp", host, port: u.port ? Number(u.port) : 80 };
}

export interface Request {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** A JSON value (sent as application/json) or raw bytes. */
  json?: unknown;
  raw?: Uint8Array;
  /** Give up (TIMEOUT) when the whole exchange takes longer; 0: never. */
  timeoutMs: number;
  /** Map 400/409/413/429/501/507 answers to EXECUTION_FAILED (the command could not run). */
  running?: boolean;
}

export interface Response {
  status: number;
  body: Buffer;
}

export class Transport {
  readonly endpoint: Endpoint;
  private readonly apiKey: string | undefined;
  private readonly agent = new http.Agent({ keepAlive: false });

  constructor(endpoint: Endpoint, apiKey: string | undefined) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
  }

  get description(): string {
    return this.endpoint.kind === "unix"
      ? `unix:${this.endpoint.socketPath}`
      : `http://${this.endpoint.host}:${this.endpoint.port}`;
  }

  /** One exchange; a non-2xx answer rejects with the mapped SandboxError. */
  async call(req: Request): Promise<Response> {
    const res = await this.exchange(req);
    if (res.status >= 200 && res.status < 300) return res;
    throw daemonError(req, res.status, res.body);
  }

  async json<T>(req: Request): Promise<T> {
    const res = await this.call(req);
    try {
      return JSON.parse(res.body.toString("utf8")) as T;
    } catch (error) {
      throw new SandboxError(`${req.method} ${req.path}: the daemon's answer is not JSON`, "INTERNAL", { status: res.status, method: req.method, path: req.path, error } satisfies SandboxErrorCause);
    }
  }

  /** The answer's status and body, whatever the status; rejects only on transport errors. */
  exchange(req: Request): Promise<Response> {
    const chunks: Buffer[] = [];
    return this.stream(req, (c) => chunks.push(c)).then((status) => ({ status, body: Buffer.concat(chunks) }));
  }

  /**
   * Send REQ and hand each chunk of the answer's body to ONDATA as it arrives; resolves
   * with the status when the body has ended. A non-2xx answer's body is collected and
   * rejected as a SandboxError instead (when CHECK is set).
   */
  stream(req: Request, ondata: (chunk: Buffer) => void, check = false): Promise<number> {
    const target = requestPath(req);
    const headers: Record<string, string> = { accept: "application/json" };
    let payload: Uint8Array | undefined;
    if (req.json !== undefined) {
      payload = Buffer.from(JSON.stringify(req.json));
      headers["content-type"] = "application/json";
    } else if (req.raw !== undefined) {
      payload = req.raw;
      headers["content-type"] = "application/octet-stream";
    }
    if (payload !== undefined || req.method === "POST" || req.method === "PUT")
      headers["content-length"] = String(payload ? payload.byteLength : 0);
    if (this.apiKey && this.endpoint.kind === "tcp") headers.authorization = `Bearer ${this.apiKey}`;
    const where =
      this.endpoint.kind === "unix"
        ? { socketPath: this.endpoint.socketPath, host: "localhost" }
        : { host: this.endpoint.host, port: this.endpoint.port };

    return new Promise<number>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err: SandboxError | undefined, status?: number) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (err) reject(err);
        else resolve(status as number);
      };
      const r = http.request({ ...where, method: req.method, path: target, headers, agent: this.agent }, (res) => {
        const status = res.statusCode ?? 0;
        const failed = check && (status < 200 || status >= 300);
        const errChunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => {
          if (settled) return;
          if (failed) errChunks.push(chunk);
          else {
            try {
              ondata(chunk);
            } catch (error) {
              r.destroy();
              finish(error instanceof SandboxError ? error : new SandboxError(`${req.method} ${req.path}: a callback threw: ${String(error)}`, "INTERNAL", { method: req.method, path: req.path, error }));
            }
          }
        });
        res.on("end", () => finish(failed ? daemonError(req, status, Buffer.concat(errChunks)) : undefined, status));
        res.on("error", (error) => finish(this.connectionError(req, error)));
        res.on("close", () => {
          if (!res.complete) finish(this.connectionError(req, new Error("the daemon closed the connection mid-answer")));
        });
      });
      r.on("error", (error) => finish(this.connectionError(req, error)));
      if (req.timeoutMs > 0) {
        timer = setTimeout(() => {
          finish(new SandboxError(`${req.method} ${req.path}: no answer from sandlot at ${this.description} within ${req.timeoutMs} ms`, "TIMEOUT", { method: req.method, path: req.path } satisfies SandboxErrorCause));
          r.destroy();
        }, req.timeoutMs);
      }
      r.end(payload);
    });
  }

  private connectionError(req: Request, error: unknown): SandboxError {
    const e = error as NodeJS.ErrnoException;
    const why = e && e.code === "ENOENT" ? "no socket there (is `sandlot serve` running?)" : e && e.message ? e.message : String(error);
    return new SandboxError(`cannot reach sandlot at ${this.description}: ${why}`, "CONNECTION_FAILED", {
      code: e?.code,
      message: e?.message,
      method: req.method,
      path: req.path,
      error,
    } satisfies SandboxErrorCause);
  }
}

function requestPath(req: Request): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) q.append(k, String(v));
  const s = q.toString();
  return s ? `${req.path}?${s}` : req.path;
}

/** The daemon's {"error": {code, message}} answer as a SandboxError. */
export function daemonError(req: Request, status: number, body: Buffer): SandboxError {
  let code = "UNKNOWN";
  let message = body.toString("utf8").trim() || `HTTP ${status}`;
  try {
    const e = (JSON.parse(body.toString("utf8")) as { error?: { code?: string; message?: string } }).error;
    if (e?.code) code = e.code;
    if (e?.message) message = e.message;
  } catch {
    /* not JSON: keep the text */
  }
  let kind: SandboxErrorCode = "INTERNAL";
  if (status === 404) kind = "NOT_FOUND";
  else if (status === 504) kind = "TIMEOUT";
  else if (req.running && [400, 409, 413, 429, 501, 507].includes(status)) kind = "EXECUTION_FAILED";
  return new SandboxError(`sandlot: ${message}`, kind, { status, code, message, method: req.method, path: req.path } satisfies SandboxErrorCause);
}

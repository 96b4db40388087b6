// errors.ts — SandboxError (the interface's class) and what its `cause` carries: the
// daemon's error (HTTP status, code, message) or the transport's, and partial results.
import type { SandboxErrorCode } from "./types.js";

/** What `SandboxError.cause` holds when sandlot raised the error. */
export interface SandboxErrorCause {
  /** The HTTP status the daemon answered (absent when no answer came). */
  status?: number;
  /** The daemon's error code ("NOT_FOUND", "CONFLICT", ...) or the system's ("ECONNREFUSED"). */
  code?: string;
  /** The daemon's message, or the system error's. */
  message?: string;
  /** The request that failed. */
  method?: string;
  path?: string;
  /** The underlying error (a Node system error for CONNECTION_FAILED). */
  error?: unknown;
  /** For a command or code run that timed out or could not run: what it gave back. */
  result?: unknown;
  executionId?: string;
}

export class SandboxError extends Error {
  readonly code: SandboxErrorCode;
  declare readonly cause?: unknown;

  constructor(message: string, code: SandboxErrorCode, cause?: unknown) {
    super(message);
    this.name = "SandboxError";
    this.code = code;
    if (cause !== undefined)
      Object.defineProperty(this, "cause", { value: cause, writable: true, configurable: true });
  }
}

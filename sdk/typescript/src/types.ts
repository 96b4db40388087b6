// types.ts — the provider interface (as ../shared/seeds/000 defines it) plus the option
// and result types the interface leaves open, defined the way E2B/Daytona users expect.

export type SandboxLanguage = "python" | "typescript";

export interface SandboxProvider {
  /** Make a new sandbox. */
  create(options: SandboxCreateOptions): Promise<SandboxInstance>;
  /** Reconnect to an existing sandbox by id (resuming it when paused). */
  resume(sandboxId: string): Promise<SandboxInstance>;
}

export interface SandboxInstance {
  readonly sandboxId: string;
  readonly commands: SandboxCommands;
  readonly filesystem: SandboxFilesystem;
  executeCode(
    code: string,
    language: SandboxLanguage,
    options?: CodeExecutionOptions
  ): Promise<CodeExecutionResult>;
  kill(): Promise<void>;
  pause(): Promise<void>;
  getHost(port: number): Promise<string>;
}

export interface SandboxCommands {
  run(command: string, options?: SandboxCommandOptions): Promise<SandboxExecutionResult>;
}

export interface SandboxFilesystem {
  read(path: string): Promise<string>;
  readBytes(path: string): Promise<Uint8Array>;
  write(path: string, content: string | Uint8Array): Promise<void>;
  list(path: string): Promise<SandboxFileInfo[]>;
  exists(path: string): Promise<boolean>;
  mkdir(path: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export interface SandboxCreateOptions {
  language: SandboxLanguage;
  /** Packages for the language's manager: pip (`name`, `name==1.2`) or npm (`name`, `name@1.2`). */
  packages?: string[];
  envs?: Record<string, string>;
  workingDirectory?: string;
  /** The sandbox's lifetime in ms (as E2B's timeoutMs): destroyed when it runs out. */
  timeoutMs?: number;
}

export interface CodeExecutionResult {
  success: boolean;
  /** The parsed JSON of the last non-empty stdout line, when that line is JSON. */
  output?: unknown;
  stdout: string;
  stderr: string;
  durationMs: number;
  error?: { name: string; message: string; traceback?: string };
}

export interface SandboxExecutionResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Options of `commands.run` (not given by the interface; E2B's names). */
export interface SandboxCommandOptions {
  /** Working directory (default: the sandbox's). */
  cwd?: string;
  /** Environment variables added for this command. */
  envs?: Record<string, string>;
  /** Kill the command after this many ms; the call then rejects with TIMEOUT. */
  timeoutMs?: number;
  /** The user to run as (a name, uid or uid:gid; default: the sandbox's user). */
  user?: string;
  /** Called with each chunk of stdout while the command runs. */
  onStdout?: (data: string) => void;
  /** Called with each chunk of stderr while the command runs. */
  onStderr?: (data: string) => void;
  /**
   * Resolve as soon as the command has started (exitCode -1, empty output, and the
   * execution's id in `executionId`); onStdout/onStderr keep receiving its output.
   */
  background?: boolean;
}

/** Options of `executeCode`. */
export interface CodeExecutionOptions {
  /** Stop the code after this many ms; the call then rejects with TIMEOUT. */
  timeoutMs?: number;
  /** Environment variables for this run. */
  envs?: Record<string, string>;
}

/** One entry of `filesystem.list`. */
export interface SandboxFileInfo {
  name: string;
  /** Absolute path inside the sandbox. */
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  /** Permission bits (0o644 = 420), set-id and sticky bits included. */
  mode: number;
  modifiedAt: Date;
  /** A symlink's target text. */
  symlinkTarget?: string;
}

export type SandboxErrorCode =
  | "CONNECTION_FAILED"
  | "TIMEOUT"
  | "NOT_FOUND"
  | "EXECUTION_FAILED"
  | "INTERNAL";

/** The tool-set sandbox config of the interface, with `provider: "local"` accepted. */
export interface SandboxConfig {
  provider: "local" | "e2b" | "daytona";
  language: SandboxLanguage;
  /** A sandlot image name (default: the provider's image, "default"). */
  runtime?: string;
  packages: { name: string; version?: string }[];
  resources: {
    /** Kubernetes quantity: "2", "500m". */
    cpu?: string;
    /** Kubernetes quantity: "4Gi", "512Mi". */
    memory?: string;
    /** Default timeout of each command and code run, in ms. */
    timeout?: number;
  };
}

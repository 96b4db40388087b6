// index.ts — the package's surface: createLocalProvider, SandboxError and the types of
// the provider interface (../shared/seeds/000), with sandlot's additions.
export { createLocalProvider, configToCreateOptions, LocalProvider, LocalSandbox, LocalCommands, LocalFilesystem } from "./provider.js";
export type {
  LocalProviderOptions,
  LocalSandboxCreateOptions,
  LocalExecutionResult,
  LocalCodeExecutionResult,
  SandboxInfo,
} from "./provider.js";
export { SandboxError } from "./errors.js";
export type { SandboxErrorCause } from "./errors.js";
export { parsePackage } from "./packages.js";
export type { PackageSpec } from "./packages.js";
export type {
  SandboxLanguage,
  SandboxProvider,
  SandboxInstance,
  SandboxCommands,
  SandboxFilesystem,
  SandboxCreateOptions,
  CodeExecutionResult,
  SandboxExecutionResult,
  SandboxCommandOptions,
  CodeExecutionOptions,
  SandboxFileInfo,
  SandboxErrorCode,
  SandboxConfig,
} from "./types.js";

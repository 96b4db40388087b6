// packages.ts — the create body's `packages` ([{name, version?, manager}]) from the
// interface's strings (pip's `name==1.2`, npm's `name@1.2`) or the tool-set config.
import { SandboxError } from "./errors.js";
import type { SandboxLanguage } from "./types.js";

export interface PackageSpec {
  name: string;
  version?: string;
  manager: "pip" | "npm" | "apt";
}

/** The manager a language's packages go to. */
export function managerFor(language: SandboxLanguage): "pip" | "npm" {
  if (language === "python") return "pip";
  if (language === "typescript") return "npm";
  throw new SandboxError(`language: "${String(language)}" is not one of python, typescript`, "INTERNAL");
}

const PIP = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._,\s-]*\])?)\s*(?:(===|==|~=|!=|>=|<=|>|<)\s*(\S.*?))?$/;
const NPM = /^(@[a-z0-9][\w.~-]*\/[\w.~-]+|[\w.~-]+)(?:@(\S+))?$/i;

/**
 * One package string as its manager writes it: pip `name`, `name==1.2` (version "1.2"),
 * other specifiers kept whole (`name>=1.2` gives version ">=1.2"); npm `name`,
 * `name@1.2`, `@scope/name@^1.2`.
 */
export function parsePackage(text: string, language: SandboxLanguage): PackageSpec {
  const manager = managerFor(language);
  const s = text.trim();
  const m = (manager === "pip" ? PIP : NPM).exec(s);
  if (!m)
    throw new SandboxError(`packages: "${text}" is not a ${manager} package (${manager === "pip" ? "name or name==1.2" : "name or name@1.2"})`, "INTERNAL");
  const name = m[1] as string;
  let version: string | undefined;
  if (manager === "pip") version = m[2] === undefined ? undefined : m[2] === "==" ? m[3] : `${m[2]}${m[3]}`;
  else version = m[2];
  return version === undefined ? { name, manager } : { name, version, manager };
}

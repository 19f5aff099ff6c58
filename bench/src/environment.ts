/** What the log records about the machine and the software under test. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem, release, platform } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./settings.js";

export interface Environment {
  node: string;
  wrangler: string;
  workerd: string;
  capnweb: string;
  /** The Agents SDK (`agents`); absent in runs before it was a contender. */
  agents?: string;
  dorpc: string;
  compatibilityDate: string;
  compatibilityFlags: string;
  /** wrangler dev's local observability (X_LOCAL_OBSERVABILITY): on = a trace stored per invocation. Absent in runs before it was recorded. */
  localObservability?: boolean;
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  gitHash: string;
  gitDirty: boolean;
}

function version(packageJson: string): string {
  try {
    return (JSON.parse(readFileSync(join(REPO_ROOT, packageJson), "utf8")) as { version?: string }).version ?? "?";
  } catch {
    return "not found";
  }
}

function git(args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

export function gitState(): { hash: string; dirty: boolean } {
  const hash = git(["rev-parse", "--short=10", "HEAD"]) || "nogit";
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  return { hash, dirty };
}

export function environment(localObservability: boolean): Environment {
  const toml = readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8");
  const cpu = cpus();
  const { hash, dirty } = gitState();
  return {
    node: process.version,
    wrangler: version("node_modules/wrangler/package.json"),
    workerd: version("node_modules/workerd/package.json"),
    capnweb: version("node_modules/capnweb/package.json"),
    agents: version("node_modules/agents/package.json"),
    dorpc: `@dorpc/rpc ${version("packages/rpc/package.json")}, @dorpc/routing ${version("packages/routing/package.json")} (this checkout)`,
    compatibilityDate: /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1] ?? "?",
    compatibilityFlags: /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1]?.replace(/"/g, "").trim() ?? "",
    localObservability,
    cpuModel: cpu[0]?.model?.trim() ?? "?",
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    gitHash: hash,
    gitDirty: dirty,
  };
}

export function loadAverage(): [number, number, number] {
  return loadavg() as [number, number, number];
}

/**
 * Starts `wrangler dev` on a free loopback port and stops it again: used by the e2e test and
 * by the bench's global setup, so both drive the same Worker the same way.
 *
 * Invariants: the child runs in its own process group and is killed as a group (wrangler
 * spawns workerd), on `stop()`, on this process's exit and on SIGINT/SIGTERM; a start that
 * fails or times out kills what it started and says why, with wrangler's last output.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The repository root: the nearest directory above this module whose package.json declares
 * workspaces. Searched, not a fixed `../..`, because the bench also runs this file bundled into
 * bench/results/scratch/.
 */
function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && "workspaces" in (JSON.parse(readFileSync(manifest, "utf8")) as object)) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json with workspaces above ${from}`);
  }
}

export const REPO_ROOT = findRepoRoot(dirname(fileURLToPath(import.meta.url)));

export interface WranglerDev {
  /** `http://127.0.0.1:PORT` */
  readonly baseUrl: string;
  readonly port: number;
  /** workerd's DevTools inspector port (`--inspector-port`), for profiling the Worker and its Durable Objects. */
  readonly inspectorPort: number;
  /** Everything wrangler printed so far (for diagnostics). */
  output(): string;
  /** Stops wrangler and workerd; resolves when the process group is gone. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** wrangler config, relative to `cwd`. Default `wrangler.toml`. */
  config?: string;
  /** Where to run wrangler: a project with its own node_modules/wrangler. Default the repo root. */
  cwd?: string;
  /** The Node binary that runs wrangler. Default this process's. */
  node?: string;
  /**
   * Start with `npm start --workspace=<npmStart>` instead of running wrangler directly: for the
   * examples, whose start script builds and then runs `wrangler dev`. The flags below are
   * appended after `--`, so they reach that `wrangler dev`; `config`, `cwd` and `node` are not used.
   */
  npmStart?: string;
  /** Port; default a free one. */
  port?: number;
  /** Give up after this many ms. Default 60,000. */
  timeoutMs?: number;
  /** Directory for local state (`--persist-to`); default wrangler's. */
  persistTo?: string;
  /** Extra `--var NAME:VALUE` pairs. */
  vars?: Record<string, string>;
  /** Extra environment variables for wrangler (e.g. `X_LOCAL_OBSERVABILITY`). */
  env?: Record<string, string>;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

const live = new Set<ChildProcess>();
let hooksInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // gone
    }
  }
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on("exit", () => {
    for (const child of live) killGroup(child, "SIGKILL");
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      for (const child of live) killGroup(child, "SIGKILL");
      process.exit(130);
    });
  }
}

/** Starts `wrangler dev` and resolves once it answers HTTP. */
export async function startWranglerDev(options: StartOptions = {}): Promise<WranglerDev> {
  installExitHooks();
  const port = options.port ?? (await freePort());
  const inspectorPort = await freePort();
  const flags = [
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  if (options.persistTo) flags.push("--persist-to", options.persistTo);
  for (const [name, value] of Object.entries(options.vars ?? {})) flags.push("--var", `${name}:${value}`);

  let command: string;
  let args: string[];
  let cwd = options.cwd ?? REPO_ROOT;
  if (options.npmStart) {
    cwd = REPO_ROOT;
    // The npm that runs this test (npm_execpath) on this Node; plain `npm` from PATH otherwise.
    const npm = process.env.npm_execpath;
    command = npm ? process.execPath : "npm";
    args = [...(npm ? [npm] : []), "start", `--workspace=${options.npmStart}`, "--", ...flags];
  } else {
    command = options.node ?? process.execPath;
    args = [resolve(cwd, "node_modules/wrangler/bin/wrangler.js"), "dev", "--config", options.config ?? "wrangler.toml", ...flags];
  }
  // An npm started from `npm test` must not inherit that run's npm settings (npm_config_*).
  const inherited = options.npmStart ? Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))) : process.env;
  const child = spawn(command, args, {
    cwd,
    detached: true, // own process group: we kill wrangler and workerd together
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...inherited, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1", ...options.env },
  });
  live.add(child);
  let log = "";
  const append = (chunk: Buffer) => {
    log += chunk.toString();
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  child.stdout!.on("data", append);
  child.stderr!.on("data", append);
  const exited = once(child, "exit");

  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (!live.has(child)) return;
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
    // workerd may outlive wrangler for a moment; the group kill covers it.
    killGroup(child, "SIGKILL");
    live.delete(child);
  };

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      live.delete(child);
      throw new Error(`wrangler dev exited early (code ${child.exitCode}). Output:\n${log.slice(-4000)}`);
    }
    try {
      // One deadline for the answer and its body: a body that never ends must not hang the start.
      const signal = AbortSignal.timeout(2_000);
      const probe = (async () => {
        const response = await fetch(`${baseUrl}/__ready`, { signal });
        await response.arrayBuffer();
      })();
      probe.catch(() => undefined); // when the race is lost, its own failure is not news
      await Promise.race([probe, new Promise<never>((_, fail) => signal.addEventListener("abort", () => fail(signal.reason)))]);
      break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`wrangler dev did not answer on ${baseUrl} within ${options.timeoutMs ?? 60_000} ms. Output:\n${log.slice(-4000)}`);
    }
    await new Promise((done) => setTimeout(done, 250));
  }
  return { baseUrl, port, inspectorPort, output: () => log, stop };
}

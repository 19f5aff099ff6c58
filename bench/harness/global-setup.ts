/**
 * Vitest global setup for the bench. Before anything else runs, while the machine has nothing of
 * the bench on it, it measures the in-process parts (the codec micro-benchmark and the bundle
 * sizes) and writes them next to the raw results. Then it starts `wrangler dev` (root
 * wrangler.toml, free port, fresh local state), finds workerd's processes for the server-CPU
 * counters, and in the pinned mode moves wrangler and workerd to the server core. It stops
 * wrangler after the run files, also when a run fails or is interrupted (startWranglerDev kills
 * the whole process group on exit, SIGINT and SIGTERM), and only then turns the raw results of a
 * complete run into the log entry, the JSON file and the charts (report/finish.ts).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { TestProject } from "vitest/node";
import { startWranglerDev } from "../../test/support/wrangler-dev.js";
import { measureBundles } from "../src/bundle-size.js";
import { MICRO_FULL, MICRO_QUICK, runMicro } from "../src/micro.js";
import type { Extras, RunMode } from "../src/raw.js";
import { finishRun } from "../src/report/finish.js";
import { descendants, findServerPids, type ServerPids } from "../src/server-cpu.js";
import { BENCH_DIR, runSettings, selected } from "../src/settings.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    rawPath: string;
    serverPids: ServerPids;
    pinned: RunMode["pinned"];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Local Durable Object state for this run: new every run, removed after it (and stale ones of dead runs). */
function freshStateDir(): string {
  const parent = join(BENCH_DIR, "results", "scratch");
  mkdirSync(parent, { recursive: true });
  for (const name of readdirSync(parent)) {
    const pid = /^wrangler-state-(\d+)$/.exec(name)?.[1];
    if (pid && !alive(Number(pid))) rmSync(join(parent, name), { recursive: true, force: true });
  }
  const dir = join(parent, `wrangler-state-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  return dir;
}

/**
 * The pinned mode: scripts/run.mjs started vitest (and so this process and the test worker) on
 * the client CPU; everything wrangler started goes to the server CPU, every thread of it.
 */
function pinServer(serverCpu: string): void {
  for (const pid of descendants(process.pid)) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmdline.includes("vitest")) continue; // the test worker stays with the client
    execFileSync("taskset", ["-a", "-p", "-c", serverCpu, String(pid)], { stdio: "ignore" });
  }
}

async function measureExtras(settings: ReturnType<typeof runSettings>): Promise<void> {
  const extras: Extras = {};
  if (selected(settings, "micro")) {
    process.stderr.write("bench: codec micro-benchmark (in process, before wrangler starts) …\n");
    extras.micro = await runMicro(settings.quick ? MICRO_QUICK : MICRO_FULL, (line) => process.stderr.write(`bench: ${line}\n`));
  }
  if (selected(settings, "bundle")) extras.bundle = await measureBundles();
  mkdirSync(dirname(settings.extrasPath), { recursive: true });
  writeFileSync(settings.extrasPath, JSON.stringify(extras));
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const settings = runSettings();
  const sanity = process.env.BENCH_SANITY === "1";
  const pinned: RunMode["pinned"] = settings.pinned
    ? { client: process.env.BENCH_CLIENT_CPU ?? "0", server: process.env.BENCH_SERVER_CPU ?? "1" }
    : null;
  if (!sanity) await measureExtras(settings);
  const state = freshStateDir();
  // Registered before startWranglerDev's own hooks, so it runs first; they then kill wrangler and workerd.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}: stopping wrangler dev; no log entry written\n`);
      rmSync(settings.rawPath, { force: true });
      rmSync(settings.extrasPath, { force: true });
      rmSync(state, { recursive: true, force: true });
    });
  }
  process.stderr.write("bench: starting wrangler dev …\n");
  const started = Date.now();
  const dev = await startWranglerDev({
    config: "wrangler.toml",
    persistTo: state,
    timeoutMs: 90_000,
    env: { X_LOCAL_OBSERVABILITY: settings.localObservability ? "true" : "false" },
  });
  process.stderr.write(`bench: wrangler dev ready at ${dev.baseUrl} after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  if (pinned) {
    pinServer(pinned.server);
    process.stderr.write(`bench: pinned: client on CPU ${pinned.client}, wrangler dev and workerd on CPU ${pinned.server}\n`);
  }
  project.provide("baseUrl", dev.baseUrl);
  project.provide("rawPath", settings.rawPath);
  project.provide("serverPids", findServerPids());
  project.provide("pinned", pinned);

  return async () => {
    await dev.stop();
    if (existsSync(state)) rmSync(state, { recursive: true, force: true });
    process.stderr.write("bench: wrangler dev stopped\n");
    await finishRun(settings);
  };
}

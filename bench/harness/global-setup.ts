/**
 * Vitest global setup for the bench: starts `wrangler dev` (root wrangler.toml, free port, fresh
 * local state) before any run file and stops it after, also when a run fails or is interrupted
 * (startWranglerDev kills the whole process group on exit, SIGINT and SIGTERM). After wrangler
 * has stopped, it turns the raw results of a complete run into the log entry, the JSON file and
 * the charts (report/finish.ts).
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startWranglerDev } from "../../test/support/wrangler-dev.js";
import { finishRun } from "../src/report/finish.js";
import { BENCH_DIR, runSettings } from "../src/settings.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    rawPath: string;
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const settings = runSettings();
  const state = freshStateDir();
  // Registered before startWranglerDev's own hooks, so it runs first; they then kill wrangler and workerd.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}: stopping wrangler dev; no log entry written\n`);
      rmSync(settings.rawPath, { force: true });
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
  project.provide("baseUrl", dev.baseUrl);
  project.provide("rawPath", settings.rawPath);

  return async () => {
    await dev.stop();
    if (existsSync(state)) rmSync(state, { recursive: true, force: true });
    process.stderr.write("bench: wrangler dev stopped\n");
    await finishRun(settings);
  };
}

/**
 * Run settings, from the environment that scripts/run.mjs sets:
 *  - BENCH_QUICK=1           quick mode (small samples, scratch log)
 *  - BENCH_PINNED=1          quieter mode: client on CPU 0, wrangler dev and workerd on CPU 1, longer blocks
 *  - BENCH_SCENARIOS=a,b     only scenarios whose id starts with one of these (plus the other parts
 *                            `types`, `idle`, `micro`, `bundle` by name); a partial run, written to scratch
 *  - BENCH_CONTENDERS=a,b    only these contenders; a partial run, written to scratch
 *  - BENCH_ROUNDS=n          override the mode's number of rounds: a full-shaped run to check the
 *                            pipeline end to end; a partial run, written to scratch
 *  - BENCH_DESCRIPTION=…     the description written into the log entry
 *  - BENCH_STARTED_AT=ISO    the run's timestamp (names the result files)
 *  - BENCH_LOCAL_OBSERVABILITY=1  leave wrangler dev's local observability on
 */
import { join } from "node:path";
import { REPO_ROOT } from "../../test/support/wrangler-dev.js";

export { REPO_ROOT };
export const BENCH_DIR = join(REPO_ROOT, "bench");

/** The parts of a run besides the round-based scenarios, selectable by name in BENCH_SCENARIOS. */
export type Extra = "types" | "idle" | "micro" | "bundle";

export interface RunSettings {
  quick: boolean;
  /** Quieter mode: client and server pinned to separate cores, blocks twice as long. */
  pinned: boolean;
  /** Scenario id prefixes / extras to run, or null for everything. */
  scenarios: string[] | null;
  /** Contender names to run, or null for all. */
  contenders: string[] | null;
  /** Rounds instead of the mode's, or null. */
  rounds: number | null;
  /** Quick, or filtered: results go to scratch, never to docs/MEASUREMENTS.md. */
  scratch: boolean;
  description: string;
  startedAt: string;
  /**
   * Whether wrangler dev's local observability (X_LOCAL_OBSERVABILITY, on by default in
   * wrangler) stays on. It stores a trace per invocation in a local SQLite database, fsync
   * included; a hibernatable socket makes each message its own invocation while an accepted
   * socket's messages belong to the one that accepted it, so it taxes exactly the contenders
   * that use hibernation. Off unless asked for; the log records which.
   */
  localObservability: boolean;
  /** Where the run file writes raw results for the teardown to turn into the report. */
  rawPath: string;
  /** Where the global setup writes what it measured before wrangler started (micro, bundle). */
  extrasPath: string;
  /** bench/results (full) or bench/results/scratch (quick, partial). */
  resultsDir: string;
  /** docs/MEASUREMENTS.md (full) or bench/results/scratch/MEASUREMENTS.md (quick, partial). */
  logPath: string;
  /** docs/measurements (full) or bench/results/scratch/measurements (quick, partial). */
  chartsDir: string;
}

function list(value: string | undefined): string[] | null {
  const items = (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : null;
}

export function runSettings(env: NodeJS.ProcessEnv = process.env): RunSettings {
  const quick = env.BENCH_QUICK === "1";
  const scenarios = list(env.BENCH_SCENARIOS);
  const contenders = list(env.BENCH_CONTENDERS);
  const rounds = env.BENCH_ROUNDS ? Number(env.BENCH_ROUNDS) : null;
  const scratch = quick || scenarios !== null || contenders !== null || rounds !== null;
  const startedAt = env.BENCH_STARTED_AT ?? new Date().toISOString();
  const scratchDir = join(BENCH_DIR, "results", "scratch");
  const stamp = startedAt.replace(/[:.]/g, "-");
  return {
    quick,
    pinned: env.BENCH_PINNED === "1",
    scenarios,
    contenders,
    rounds,
    scratch,
    description: env.BENCH_DESCRIPTION ?? "",
    startedAt,
    localObservability: env.BENCH_LOCAL_OBSERVABILITY === "1",
    rawPath: join(scratchDir, `.raw-${stamp}.json`),
    extrasPath: join(scratchDir, `.extras-${stamp}.json`),
    resultsDir: scratch ? scratchDir : join(BENCH_DIR, "results"),
    logPath: scratch ? join(scratchDir, "MEASUREMENTS.md") : join(REPO_ROOT, "docs", "MEASUREMENTS.md"),
    chartsDir: scratch ? join(scratchDir, "measurements") : join(REPO_ROOT, "docs", "measurements"),
  };
}

/** Whether the scenario (or extra) `id` is selected by BENCH_SCENARIOS. */
export function selected(settings: RunSettings, id: string): boolean {
  return settings.scenarios === null || settings.scenarios.some((prefix) => id.startsWith(prefix));
}

/** Whether contender `name` is selected by BENCH_CONTENDERS. */
export function contenderSelected(settings: RunSettings, name: string): boolean {
  return settings.contenders === null || settings.contenders.includes(name);
}

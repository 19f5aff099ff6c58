/**
 * Run settings, from the environment that scripts/run.mjs sets:
 *  - BENCH_QUICK=1           quick mode (small samples, scratch log)
 *  - BENCH_DESCRIPTION=…     the description written into the log entry
 *  - BENCH_STARTED_AT=ISO    the run's timestamp (names the result files)
 *  - BENCH_LOCAL_OBSERVABILITY=1  leave wrangler dev's local observability on
 */
import { join } from "node:path";
import { REPO_ROOT } from "../../test/support/wrangler-dev.js";

export { REPO_ROOT };
export const BENCH_DIR = join(REPO_ROOT, "bench");

export interface RunSettings {
  quick: boolean;
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
  /** bench/results (full) or bench/results/scratch (quick). */
  resultsDir: string;
  /** docs/MEASUREMENTS.md (full) or bench/results/scratch/MEASUREMENTS.md (quick). */
  logPath: string;
  /** docs/measurements (full) or bench/results/scratch/measurements (quick). */
  chartsDir: string;
}

export function runSettings(env: NodeJS.ProcessEnv = process.env): RunSettings {
  const quick = env.BENCH_QUICK === "1";
  const startedAt = env.BENCH_STARTED_AT ?? new Date().toISOString();
  const scratch = join(BENCH_DIR, "results", "scratch");
  const stamp = startedAt.replace(/[:.]/g, "-");
  return {
    quick,
    description: env.BENCH_DESCRIPTION ?? "",
    startedAt,
    localObservability: env.BENCH_LOCAL_OBSERVABILITY === "1",
    rawPath: join(scratch, `.raw-${stamp}.json`),
    resultsDir: quick ? scratch : join(BENCH_DIR, "results"),
    logPath: quick ? join(scratch, "MEASUREMENTS.md") : join(REPO_ROOT, "docs", "MEASUREMENTS.md"),
    chartsDir: quick ? join(scratch, "measurements") : join(REPO_ROOT, "docs", "measurements"),
  };
}

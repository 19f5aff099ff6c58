/**
 * Run settings, from the environment that scripts/run.mjs sets:
 *  - BENCH_QUICK=1           quick mode (small samples, scratch log)
 *  - BENCH_DESCRIPTION=…     the description written into the log entry
 *  - BENCH_STARTED_AT=ISO    the run's timestamp (names the result files)
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = resolve(BENCH_DIR, "..");

export interface RunSettings {
  quick: boolean;
  description: string;
  startedAt: string;
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
    rawPath: join(scratch, `.raw-${stamp}.json`),
    resultsDir: quick ? scratch : join(BENCH_DIR, "results"),
    logPath: quick ? join(scratch, "MEASUREMENTS.md") : join(REPO_ROOT, "docs", "MEASUREMENTS.md"),
    chartsDir: quick ? join(scratch, "measurements") : join(REPO_ROOT, "docs", "measurements"),
  };
}

/**
 * The bench is a vitest run (not vitest's `bench` mode, which does not hand out per-sample
 * data): *.bench-run.ts files are ordinary tests that time calls with process.hrtime.bigint.
 * One worker process (the client), `--expose-gc` so the harness can collect garbage between
 * blocks, and a global setup that starts `wrangler dev` and stops it again.
 *
 * Run it through `npm run bench` (scripts/run.mjs), which sets the BENCH_* variables.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const benchDir = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: benchDir,
  test: {
    name: "bench",
    root: benchDir,
    environment: "node",
    include: ["runs/**/*.bench-run.ts"],
    globalSetup: ["./harness/global-setup.ts"],
    pool: "forks",
    execArgv: ["--expose-gc"],
    maxWorkers: 1,
    fileParallelism: false,
    isolate: false,
    // A backstop only: a block that makes no progress fails the run within minutes (measure.ts).
    // A full run takes 31–35 min; a pinned one, whose blocks are twice as long, more than 45.
    testTimeout: (process.env.BENCH_PINNED === "1" ? 150 : 75) * 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 120_000,
    // Progress is written straight to the terminal by the harness; keep vitest's own output short.
    reporters: ["default"],
    passWithNoTests: false,
    // The workspace's packages resolve (through their node_modules symlinks) to packages/*/dist,
    // outside node_modules, so vitest would inline them: run them through Vite's module transform,
    // which turns every import into a property read on a module object, in the hottest paths.
    // Cap'n Web and the Agents SDK load natively from node_modules; so must dorpc.
    server: { deps: { external: [/\/packages\/[^/]+\/dist\//] } },
  },
});

#!/usr/bin/env node
/**
 * `npm run bench [-- options]`
 *
 * Runs the bench as a vitest run (bench/vitest.bench.config.ts): the global setup measures the
 * in-process parts (codec micro-benchmark, bundle sizes), starts `wrangler dev`,
 * runs/main.bench-run.ts measures, the teardown stops wrangler and writes the log entry, the
 * results JSON and the charts.
 *
 *   --quick               small samples, results to bench/results/scratch/ (CI smoke test)
 *   --pinned              quieter mode: the client on one CPU, wrangler dev and workerd on another
 *                         (taskset), every block twice as long; the entry says so. Needs ≥ 2 CPUs.
 *   --scenarios a,b       only scenarios whose id starts with a or b (and the extras `idle`,
 *                         `micro`, `bundle` by name): a partial run, written to scratch
 *   --contenders a,b      only these contenders: a partial run, written to scratch
 *   --rounds n            n rounds instead of the mode's (e.g. a full-shaped run with 1 round to
 *                         check the whole pipeline): a partial run, written to scratch
 *   --description "…"     description for the log entry
 *   --sanity              only check that every contender answers (no timing, no log entry)
 *   --local-observability keep wrangler dev's local observability on (its default). Off by
 *                         default here: it writes a trace to SQLite, with an fsync, for every
 *                         invocation, and a hibernatable socket makes every message an invocation
 *                         (docs/performance.md has the measurements)
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = resolve(benchDir, "..");

function usage(message) {
  if (message) process.stderr.write(`bench: ${message}\n`);
  process.stderr.write(
    'usage: npm run bench [-- --quick] [-- --pinned] [-- --scenarios a,b] [-- --contenders a,b] [-- --rounds n] [-- --description "what changed"] [-- --sanity] [-- --local-observability]\n',
  );
  process.exit(message ? 2 : 0);
}

let quick = false;
let sanity = false;
let pinned = false;
let localObservability = false;
let description = "";
let scenarios = "";
let contenders = "";
let rounds = "";
const args = process.argv.slice(2);
const value = (i, name) => {
  if (i + 1 >= args.length) usage(`${name} needs a value`);
  return args[i + 1];
};
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--quick") quick = true;
  else if (arg === "--sanity") sanity = true;
  else if (arg === "--pinned") pinned = true;
  else if (arg === "--local-observability") localObservability = true;
  else if (arg === "--description") description = value(i++, arg);
  else if (arg.startsWith("--description=")) description = arg.slice("--description=".length);
  else if (arg === "--scenarios") scenarios = value(i++, arg);
  else if (arg === "--contenders") contenders = value(i++, arg);
  else if (arg === "--rounds") {
    rounds = value(i++, arg);
    if (!/^[1-9][0-9]*$/.test(rounds)) usage("--rounds needs a positive integer");
  } else if (arg === "--help" || arg === "-h") usage();
  else usage(`unknown argument ${JSON.stringify(arg)}`);
}

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  usage(
    `Node ${process.versions.node}: the bench needs Node ≥ 22 (global WebSocket). Run it through npm from the repo root, which uses the Node 22 from node_modules.`,
  );
}
for (const needed of ["packages/rpc/dist/index.js", "packages/rpc/dist/server.js", "packages/routing/dist/index.js"]) {
  if (!existsSync(join(repoRoot, needed))) usage(`${needed} is missing: run \`npm run build\` (or \`npm install\`) at the repo root first`);
}
if (pinned) {
  if (availableParallelism() < 2) usage("--pinned needs at least 2 CPUs (one for the client, one for wrangler dev and workerd)");
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" });
  } catch {
    usage("--pinned needs `taskset` (util-linux) on the PATH");
  }
}

const env = {
  ...process.env,
  BENCH_QUICK: quick ? "1" : "0",
  BENCH_PINNED: pinned ? "1" : "0",
  BENCH_SANITY: sanity ? "1" : "0",
  BENCH_SCENARIOS: scenarios,
  BENCH_CONTENDERS: contenders,
  BENCH_ROUNDS: rounds,
  BENCH_DESCRIPTION: description,
  BENCH_LOCAL_OBSERVABILITY: localObservability ? "1" : "0",
  BENCH_STARTED_AT: new Date().toISOString(),
  BENCH_CLIENT_CPU: "0",
  BENCH_SERVER_CPU: "1",
};
const vitest = join(repoRoot, "node_modules", "vitest", "vitest.mjs");
const vitestArgs = [vitest, "run", "--config", join(benchDir, "vitest.bench.config.ts"), sanity ? "sanity.bench-run" : "main.bench-run"];
// Pinned: vitest, its test worker and (until the global setup moves them) wrangler start on the client CPU.
const [command, commandArgs] = pinned
  ? ["taskset", ["-c", env.BENCH_CLIENT_CPU, process.execPath, ...vitestArgs]]
  : [process.execPath, vitestArgs];
const child = spawn(command, commandArgs, { cwd: repoRoot, env, stdio: "inherit" });

// Ctrl-C reaches vitest too (same process group); vitest's global teardown and the wrangler
// launcher's signal hooks stop wrangler and workerd. Wait for that instead of exiting first.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (signal !== "SIGINT") child.kill(signal);
  });
}
child.on("exit", (code, signal) => {
  process.exit(code ?? (signal ? 130 : 1));
});

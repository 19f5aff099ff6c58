/**
 * After wrangler has stopped: raw results (+ the extras the global setup measured before it
 * started) → results JSON, charts, log entry, terminal summary. Runs in vitest's global teardown;
 * writes nothing when the run did not complete.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { loadAverage } from "../environment.js";
import type { Extras, RawRun } from "../raw.js";
import type { RunSettings } from "../settings.js";
import { REPO_ROOT } from "../settings.js";
import { analyze, type ScenarioStats } from "./analyze.js";
import { entryMarkdown, LOG_HEADER, terminalSummary } from "./markdown.js";
import { clientsChart, inflightChart, latencyChart } from "./svg.js";
import { computeTargets, type Targets } from "./targets.js";

function round(values: number[], digits: number): number[] {
  const f = 10 ** digits;
  return values.map((v) => Math.round(v * f) / f);
}

/** The committed JSON: every raw sample (µs, 0.1 µs resolution; 1 µs in throughput loops) plus the analysis. */
function resultsJson(raw: RawRun, stats: ScenarioStats[], targets: Targets): string {
  const rows = raw.rows.map((row) => {
    const info = raw.scenarios.find((s) => s.id === row.scenario)!;
    const digits = info.kind === "inflight" || info.kind === "clients" ? 0 : 1;
    return {
      ...row,
      blocks: row.blocks.map((b) => ({
        ...b,
        latUs: round(b.latUs, digits),
        handshakeUs: b.handshakeUs ? round(b.handshakeUs, 1) : undefined,
        refUs: b.refUs ? round(b.refUs, 1) : undefined,
        cpuUs: Math.round(b.cpuUs),
        serverCpuUs: b.serverCpuUs === undefined ? undefined : Math.round(b.serverCpuUs),
        proxyCpuUs: b.proxyCpuUs === undefined ? undefined : Math.round(b.proxyCpuUs),
      })),
    };
  });
  return JSON.stringify({
    format: "dorpc-bench/2",
    note: "latUs: per-sample latency in µs, every sample of every timed block, none dropped. serverCpuUs / proxyCpuUs: workerd CPU per block. See docs/performance.md.",
    ...raw,
    rows,
    analysis: stats.map((s) => ({ scenario: s.info.id, metric: s.metric, ratios: s.ratios, rows: s.rows })),
    targets,
  });
}

function readExtras(path: string): Extras {
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Extras;
  } finally {
    rmSync(path, { force: true });
  }
}

export async function finishRun(settings: RunSettings): Promise<void> {
  const extras = readExtras(settings.extrasPath);
  if (!existsSync(settings.rawPath)) {
    process.stderr.write("bench: no complete results (failed, interrupted or a sanity run): no log entry written\n");
    return;
  }
  const raw = { ...(JSON.parse(readFileSync(settings.rawPath, "utf8")) as RawRun), ...extras };
  if (!raw.complete) return;
  const loadAfter = loadAverage();
  const wallSeconds = (Date.now() - Date.parse(raw.startedAt)) / 1000;
  const stats = analyze(raw);
  const targets = computeTargets(stats, raw.quick, raw.bundle);

  const stamp = raw.startedAt.replace(/\.\d+Z$/, "Z").replace(/:/g, "-");
  const base = `${stamp}-${raw.environment.gitHash}`;
  mkdirSync(settings.chartsDir, { recursive: true });
  mkdirSync(settings.resultsDir, { recursive: true });
  mkdirSync(dirname(settings.logPath), { recursive: true });

  const main = ["dorpc", "dorpc-live", "capnweb", "agents", "floor", "floor-accept"].filter((c) =>
    raw.contenders.some((x) => x.name === c),
  );
  const features = ["dorpc", "dorpc-sequential", "capnweb", "agents", "floor"].filter((c) => raw.contenders.some((x) => x.name === c));
  const byGroup = (...groups: string[]) => stats.filter((s) => groups.includes(s.info.group));
  const charts: { title: string; file: string; svg: string }[] = [];
  const addLatency = (title: string, key: string, groups: string[], names: string[]) => {
    const s = byGroup(...groups);
    if (s.length) charts.push({ title, file: `${base}-${key}.svg`, svg: latencyChart(title, s, names) });
  };
  addLatency("Latency: counter calls", "latency-counter", ["counter", "counter-fresh", "counter-large"], main);
  addLatency("Latency: payload matrix (echo)", "latency-payload", ["payload"], main);
  addLatency("Latency: connection setup", "latency-connect", ["connect"], main);
  addLatency(
    "Latency: routing (dorpc via routeDORequest vs hand-written route)",
    "latency-routing",
    ["routing"],
    ["dorpc", "dorpc-direct"],
  );
  addLatency(
    "Latency: features (pipelining, callbacks, fan-out, one-shot, ordering)",
    "latency-features",
    ["pipeline", "callback", "fanout", "oneshot", "ordering"],
    features,
  );
  const inflight = byGroup("inflight");
  if (inflight.length)
    charts.push({
      title: "Throughput vs calls in flight",
      file: `${base}-throughput-inflight.svg`,
      svg: inflightChart("Throughput vs calls in flight (one connection, increment())", inflight, main),
    });
  const clients = byGroup("clients");
  if (clients.length)
    charts.push({
      title: "Throughput: concurrent clients",
      file: `${base}-throughput-clients.svg`,
      svg: clientsChart("Throughput: concurrent clients (increment(), one call at a time per connection)", clients, main),
    });
  for (const chart of charts) writeFileSync(join(settings.chartsDir, chart.file), chart.svg);

  const jsonPath = join(settings.resultsDir, `${base}.json`);
  writeFileSync(jsonPath, resultsJson(raw, stats, targets));

  const logDir = dirname(settings.logPath);
  const links = {
    json: relative(logDir, jsonPath),
    charts: charts.map((c) => ({ title: c.title, href: relative(logDir, join(settings.chartsDir, c.file)) })),
  };
  if (!existsSync(settings.logPath)) writeFileSync(settings.logPath, LOG_HEADER);
  appendFileSync(settings.logPath, `${entryMarkdown(raw, stats, targets, links, loadAfter, wallSeconds)}\n`);
  rmSync(settings.rawPath, { force: true });

  process.stdout.write(`\n${terminalSummary(stats, targets, main)}\n\n`);
  process.stdout.write(`bench: log entry appended to ${relative(REPO_ROOT, settings.logPath)}\n`);
  process.stdout.write(
    `bench: results ${relative(REPO_ROOT, jsonPath)}, charts in ${relative(REPO_ROOT, settings.chartsDir)}/ (${charts.length})\n`,
  );
  process.stdout.write(`bench: total wall time ${(wallSeconds / 60).toFixed(1)} min\n`);
}

/**
 * `npm run profile --workspace=bench -- [options]`: where the time of one call goes, on both
 * ends, for each contender.
 *
 * Starts `wrangler dev` (root wrangler.toml, fresh local state, local observability off unless
 * --local-observability), then per contender: connects, warms up, times `--calls` sequential calls
 * with no profiler attached (p50/p90), then repeats them with the V8 sampling profiler running in
 * this Node process and in workerd (through wrangler's inspector port). Prints a Markdown summary
 * (busy µs per call by kind, top functions by self time) and writes it with the raw
 * `.cpuprofile` files (open them in Chrome DevTools) to results/scratch/profiles/<time>/.
 *
 *   --contenders a,b,…        default dorpc,dorpc-live,capnweb,agents,floor,floor-accept
 *   --call c,…                noop | getValue | increment | echo:<payload id> (default getValue)
 *   --calls N                 calls per block (default 3000)
 *   --local-observability     leave wrangler dev's per-invocation trace store on
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { startWranglerDev } from "../../test/support/wrangler-dev.js";
import { type Conn, type Contender, SETS } from "../src/contenders/index.js";
import { gitState } from "../src/environment.js";
import { PAYLOADS } from "../src/payloads.js";
import { findServerPids, ServerCpuMeter, serverCpuDelta } from "../src/server-cpu.js";
import { BENCH_DIR, REPO_ROOT } from "../src/settings.js";
import { percentileSorted, sortedCopy } from "../src/stats.js";
import { WireCounters } from "../src/wire.js";
import { summarize, type ProfileSummary } from "./cpu-profile.js";
import { nodeProfiler, workerdProfiler } from "./inspector.js";

interface Options {
  contenders: Contender[];
  calls: string[];
  n: number;
  localObservability: boolean;
}

function fail(message: string): never {
  process.stderr.write(`profile: ${message}\n`);
  process.exit(2);
}

function parseOptions(argv: string[]): Options {
  let names = SETS.main.map((c) => c.name);
  let calls = ["getValue"];
  let n = 3000;
  let localObservability = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => argv[++i] ?? fail(`${arg} needs a value`);
    if (arg === "--contenders") names = value().split(",");
    else if (arg === "--call") calls = value().split(",");
    else if (arg === "--calls") n = Number(value());
    else if (arg === "--local-observability") localObservability = true;
    else fail(`unknown argument ${JSON.stringify(arg)}`);
  }
  if (!Number.isSafeInteger(n) || n < 10) fail("--calls must be an integer ≥ 10");
  const contenders = names.map(
    (name) => SETS.main.find((c) => c.name === name) ?? fail(`no contender ${name} (have ${SETS.main.map((c) => c.name).join(", ")})`),
  );
  for (const call of calls) makeCall(call);
  return { contenders, calls, n, localObservability };
}

/** The call named `spec` on a connection, or a usage error. */
function makeCall(spec: string): (conn: Conn) => Promise<unknown> {
  if (spec === "noop") return (conn) => conn.noop();
  if (spec === "getValue") return (conn) => conn.getValue();
  if (spec === "increment") return (conn) => conn.increment();
  if (spec.startsWith("echo:")) {
    const payload =
      PAYLOADS.find((p) => p.id === spec.slice(5)) ?? fail(`no payload ${spec.slice(5)} (have ${PAYLOADS.map((p) => p.id).join(", ")})`);
    const value = payload.make();
    return (conn) => conn.echo(value);
  }
  return fail(`unknown call ${JSON.stringify(spec)}`);
}

async function timeBlock(conn: Conn, call: (conn: Conn) => Promise<unknown>, n: number): Promise<Float64Array> {
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await call(conn);
    samples[i] = Number(process.hrtime.bigint() - start) / 1000;
  }
  return samples;
}

interface Result {
  contender: string;
  p50: number;
  p90: number;
  /** The Worker's workerd CPU per call over the unprofiled block (kernel accounting), µs; null off Linux. */
  serverCpu: number | null;
  client: ProfileSummary;
  server: ProfileSummary;
}

const us = (value: number) => value.toFixed(value < 10 ? 1 : 0);

function report(call: string, n: number, results: Result[]): string {
  const lines = [
    `### ${call} — ${n} sequential calls per contender`,
    "",
    "Busy = sampled non-idle time ÷ calls, µs per call: JavaScript / native `(program)` / GC. Each sample is charged the interval to the next one, and workerd samples coarsely, so its busy figures can exceed the wall time per call: compare contenders within a column, do not read them as CPU time. p50, p90 and server CPU are from a block without profilers; server CPU is the Worker's workerd process's CPU time from the kernel (/proc), as in the bench's tables.",
    "",
    "| contender | p50 µs | p90 µs | server CPU µs/call | client busy | client JS / program / GC | server busy | server JS / program / GC |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of results) {
    const c = r.client.perCall;
    const s = r.server.perCall;
    lines.push(
      `| ${r.contender} | ${us(r.p50)} | ${us(r.p90)} | ${r.serverCpu === null ? "–" : us(r.serverCpu)} | ${us(c.busy)} | ${us(c.js)} / ${us(c.program)} / ${us(c.gc)} | ${us(s.busy)} | ${us(s.js)} / ${us(s.program)} / ${us(s.gc)} |`,
    );
  }
  for (const r of results) {
    for (const [side, summary] of [
      ["client (Node)", r.client],
      ["server (workerd)", r.server],
    ] as const) {
      lines.push(
        "",
        `<details><summary>${r.contender}, ${side}: top functions by self time (${summary.samples} samples)</summary>`,
        "",
        "| µs/call | share of busy | function | where |",
        "| ---: | ---: | --- | --- |",
      );
      for (const f of summary.top) lines.push(`| ${us(f.usPerCall)} | ${(f.share * 100).toFixed(0)}% | ${f.name} | ${f.where} |`);
      lines.push("", "</details>");
    }
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const outDir = join(BENCH_DIR, "results", "scratch", "profiles", stamp);
  const state = join(outDir, "wrangler-state");
  mkdirSync(outDir, { recursive: true });
  process.stderr.write("profile: starting wrangler dev …\n");
  const dev = await startWranglerDev({
    config: "wrangler.toml",
    persistTo: state,
    timeoutMs: 90_000,
    env: { X_LOCAL_OBSERVABILITY: options.localObservability ? "true" : "false" },
  });
  const git = gitState();
  const sections: string[] = [
    `## Profile ${stamp} · ${git.hash}${git.dirty ? " (dirty)" : ""}`,
    "",
    `Command: \`npm run profile --workspace=bench -- ${process.argv.slice(2).join(" ")}\`. wrangler dev local observability: ${options.localObservability ? "on" : "off"}. Node ${process.version}. Client and wrangler dev share the machine; profilers add overhead, so compare contenders within one table, not with the bench's latencies.`,
  ];
  const server = await workerdProfiler(dev.inspectorPort);
  const meter = ServerCpuMeter.create(findServerPids());
  const client = nodeProfiler();
  try {
    for (const spec of options.calls) {
      const call = makeCall(spec);
      const results: Result[] = [];
      for (const contender of options.contenders) {
        process.stderr.write(`profile: ${spec} / ${contender.name} …\n`);
        const { conn } = await contender.connect(dev.baseUrl, `profile-${contender.name}-${stamp}`, new WireCounters());
        try {
          await timeBlock(conn, call, Math.min(500, options.n));
          const cpu0 = meter?.read();
          const sorted = sortedCopy(await timeBlock(conn, call, options.n));
          const serverCpu = cpu0 && meter ? serverCpuDelta(cpu0, meter.read()).workerUs / options.n : null;
          await Promise.all([client.start(), server.start()]);
          await timeBlock(conn, call, options.n);
          const [clientProfile, serverProfile] = await Promise.all([client.stop(), server.stop()]);
          const base = `${spec.replace(":", "-")}-${contender.name}`;
          writeFileSync(join(outDir, `${base}-client.cpuprofile`), JSON.stringify(clientProfile));
          writeFileSync(join(outDir, `${base}-server.cpuprofile`), JSON.stringify(serverProfile));
          results.push({
            contender: contender.name,
            p50: percentileSorted(sorted, 50),
            p90: percentileSorted(sorted, 90),
            serverCpu,
            client: summarize(clientProfile, options.n),
            server: summarize(serverProfile, options.n),
          });
        } finally {
          await conn.close();
        }
      }
      sections.push("", report(spec, options.n, results));
    }
  } finally {
    await client.close();
    await server.close();
    await dev.stop();
    rmSync(state, { recursive: true, force: true });
  }
  const markdown = `${sections.join("\n")}\n`;
  writeFileSync(join(outDir, "summary.md"), markdown);
  process.stdout.write(markdown);
  process.stderr.write(`profile: summary and .cpuprofile files in ${relative(REPO_ROOT, outDir)}/\n`);
}

await main();

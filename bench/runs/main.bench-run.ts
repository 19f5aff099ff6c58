/**
 * The bench itself (`npm run bench`): every scenario of the plan for every contender of its set,
 * interleaved, then the idle / wake-up measurement; raw samples written for the global teardown
 * to report once wrangler has stopped.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { expect, inject, it } from "vitest";
import { ALL, type Contender, SETS } from "../src/contenders/index.js";
import { environment, loadAverage } from "../src/environment.js";
import { IDLE_FULL, IDLE_QUICK, type IdleRun, measureIdle } from "../src/idle.js";
import { type Row, runScenario } from "../src/measure.js";
import { type RawRun, scenarioInfo } from "../src/raw.js";
import { plan } from "../src/scenarios.js";
import { ServerCpuMeter } from "../src/server-cpu.js";
import { contenderSelected, runSettings, selected } from "../src/settings.js";
import { typeSupport } from "../src/type-support.js";

const settings = runSettings();
const baseUrl = inject("baseUrl");
const rawPath = inject("rawPath");
const serverPids = inject("serverPids");
const pinned = inject("pinned");

const t0 = performance.now();
function progress(line: string): void {
  const elapsed = ((performance.now() - t0) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`${elapsed}s ${line}\n`);
}

const pick = (contenders: readonly Contender[]) => contenders.filter((c) => contenderSelected(settings, c.name));

it("measures every scenario for every contender", async () => {
  const { rounds, scenarios: planned } = plan(settings);
  const scenarios = planned.filter((s) => selected(settings, s.id) && pick(SETS[s.set]).length > 0);
  const tag = settings.startedAt.replace(/[^0-9]/g, "").slice(0, 14);
  const loadBefore = loadAverage();
  const env = environment(settings.localObservability);
  const server = ServerCpuMeter.create(serverPids);
  const mode = settings.quick ? "QUICK" : settings.pinned ? "full, pinned" : "full";
  progress(
    `bench: ${mode} run${settings.scratch && !settings.quick ? " (partial)" : ""}, ${scenarios.length} scenarios × ${rounds} rounds, contenders ${pick(
      ALL,
    )
      .map((c) => c.name)
      .join(
        ", ",
      )}; server CPU ${server ? `from /proc (workerd ${serverPids.worker.join(",")}, proxy ${serverPids.proxy.join(",")})` : "not measurable here"}`,
  );
  if (typeof (globalThis as { gc?: unknown }).gc !== "function")
    throw new Error("gc() is not exposed: run through `npm run bench` (node --expose-gc)");

  const types = selected(settings, "types") ? await typeSupport(baseUrl, pick(SETS.main)) : [];
  for (const contender of pick(SETS.main)) {
    const failed = types.filter((t) => t.contender === contender.name && t.result !== "ok");
    progress(
      `type support · ${contender.name}: ${failed.length === 0 ? "every probe ok" : `not ok: ${failed.map((t) => `${t.probe} (${t.result})`).join(", ")}`}`,
    );
  }

  const counter = { done: 0, total: scenarios.reduce((sum, s) => sum + rounds * s.repeats * pick(SETS[s.set]).length, 0) };
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    rows.push(...(await runScenario({ baseUrl, rounds, tag, progress, server }, scenario, pick(SETS[scenario.set]), counter)));
  }
  const loadAfterMeasuring = loadAverage();
  let idle: IdleRun | undefined;
  if (selected(settings, "idle"))
    idle = await measureIdle(baseUrl, tag, pick(SETS.main), settings.quick ? IDLE_QUICK : IDLE_FULL, progress);

  const raw: RawRun = {
    complete: true,
    startedAt: settings.startedAt,
    finishedAt: new Date().toISOString(),
    quick: settings.quick,
    mode: {
      quick: settings.quick,
      pinned,
      partial:
        settings.scratch && !settings.quick
          ? { scenarios: settings.scenarios, contenders: settings.contenders, rounds: settings.rounds }
          : null,
    },
    description: settings.description,
    environment: env,
    loadBefore,
    loadAfterMeasuring,
    rounds,
    scenarios: scenarios.map(scenarioInfo),
    contenders: pick(ALL).map((c) => ({ name: c.name, label: c.label, wire: c.wire, pending: c.pending })),
    typeSupport: types,
    rows,
    serverCpu: server !== null,
    idle,
  };
  mkdirSync(dirname(rawPath), { recursive: true });
  writeFileSync(rawPath, JSON.stringify(raw));
  progress(`measurements done; raw results in ${rawPath}`);
  expect(rows.length + (idle ? 1 : 0)).toBeGreaterThan(0);
  // Unsupported and pending are results; an error (a throw or a hang while timing) is not: it
  // fails the run, after the results (errors included) have been handed to the report.
  const errors = rows
    .filter((r) => r.status.kind === "error")
    .map((r) => `${r.scenario} · ${r.contender}: ${"reason" in r.status ? r.status.reason : ""}`);
  expect(errors).toEqual([]);
  // dorpc claims every payload: anything but "ok" or "pending" for it (a refusal or a wrong echo) is a bug.
  const dorpcNotOk = rows
    .filter((r) => r.contender.startsWith("dorpc") && r.status.kind !== "ok" && r.status.kind !== "pending")
    .map((r) => `${r.scenario} · ${r.contender}: ${r.status.kind}`);
  expect(dorpcNotOk).toEqual([]);
});

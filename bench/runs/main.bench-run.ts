/**
 * The bench itself (`npm run bench`): every scenario of the plan for every contender,
 * interleaved, raw samples written for the global teardown to report once wrangler has stopped.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { inspect } from "node:util";
import { expect, inject, it } from "vitest";
import { MAIN, ROUTING } from "../src/contenders/index.js";
import { environment, loadAverage } from "../src/environment.js";
import { structurallyEqual } from "../src/equal.js";
import { runScenario, type Row } from "../src/measure.js";
import { PAYLOADS, TYPE_PROBES } from "../src/payloads.js";
import type { RawRun, TypeSupport } from "../src/raw.js";
import { plan } from "../src/scenarios.js";
import { runSettings } from "../src/settings.js";
import { WireCounters } from "../src/wire.js";

const settings = runSettings();
const baseUrl = inject("baseUrl");
const rawPath = inject("rawPath");

function progress(line: string): void {
  const elapsed = ((performance.now() - t0) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`${elapsed}s ${line}\n`);
}
const t0 = performance.now();

async function typeSupport(): Promise<TypeSupport[]> {
  const out: TypeSupport[] = [];
  const probes = [
    ...TYPE_PROBES.map((p) => ({ id: p.id, label: p.label, json: p.json, bytes: false, make: p.make })),
    ...PAYLOADS.filter((p) => p.id === "rich" || p.id === "cyclic").map((p) => ({
      id: p.id,
      label: p.label,
      json: p.json,
      bytes: p.bytes,
      make: p.make,
    })),
  ];
  for (const contender of MAIN) {
    const { conn } = await contender.connect(baseUrl, `types-${contender.name}`, new WireCounters());
    try {
      for (const probe of probes) {
        const supported = contender.supports({ ...probe, size: "", id: probe.id, label: probe.label });
        if (supported !== true) {
          out.push({ contender: contender.name, probe: probe.id, label: probe.label, result: "unsupported", detail: supported });
          continue;
        }
        const value = probe.make();
        try {
          const back = await conn.echo(value);
          out.push(
            structurallyEqual(back, value)
              ? { contender: contender.name, probe: probe.id, label: probe.label, result: "ok", detail: "" }
              : {
                  contender: contender.name,
                  probe: probe.id,
                  label: probe.label,
                  result: "wrong",
                  detail: `came back as ${describe(back)}`,
                },
          );
        } catch (error) {
          out.push({
            contender: contender.name,
            probe: probe.id,
            label: probe.label,
            result: "error",
            detail: String((error as Error)?.message ?? error).slice(0, 200),
          });
        }
      }
    } finally {
      await conn.close();
    }
  }
  return out;
}

function describe(value: unknown): string {
  return inspect(value, { depth: 3, breakLength: Infinity, maxArrayLength: 8, maxStringLength: 40 }).slice(0, 100);
}

it("measures every scenario for every contender", async () => {
  const { rounds, scenarios } = plan(settings.quick);
  const tag = settings.startedAt.replace(/[^0-9]/g, "").slice(0, 14);
  const loadBefore = loadAverage();
  const env = environment(settings.localObservability);
  progress(
    `bench: ${settings.quick ? "QUICK" : "full"} run, ${scenarios.length} scenarios × ${rounds} rounds, contenders ${MAIN.map((c) => c.name).join(", ")} (routing: ${ROUTING.map((c) => c.name).join(" vs ")})`,
  );
  if (typeof (globalThis as { gc?: unknown }).gc !== "function")
    throw new Error("gc() is not exposed: run through `npm run bench` (node --expose-gc)");

  const types = await typeSupport();
  for (const contender of MAIN) {
    const failed = types.filter((t) => t.contender === contender.name && t.result !== "ok");
    progress(
      `type support · ${contender.name}: ${failed.length === 0 ? "every probe ok" : `not ok: ${failed.map((t) => `${t.probe} (${t.result})`).join(", ")}`}`,
    );
  }

  const counter = { done: 0, total: scenarios.reduce((sum, s) => sum + rounds * (s.set === "main" ? MAIN.length : ROUTING.length), 0) };
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    const contenders = scenario.set === "main" ? MAIN : ROUTING;
    rows.push(...(await runScenario({ baseUrl, rounds, tag, progress }, scenario, contenders, counter)));
  }
  const raw: RawRun = {
    complete: true,
    startedAt: settings.startedAt,
    finishedAt: new Date().toISOString(),
    quick: settings.quick,
    description: settings.description,
    environment: env,
    loadBefore,
    loadAfterMeasuring: loadAverage(),
    rounds,
    scenarios: scenarios.map((s) => ({
      id: s.id,
      group: s.group,
      kind: s.kind,
      set: s.set,
      label: s.label,
      samplesPerBlock: "samplesPerBlock" in s ? s.samplesPerBlock : undefined,
      callsPerSample: s.kind === "sequence" ? s.callsPerSample : 1,
      warmupPerBlock: s.kind === "sequence" ? s.warmupPerBlock : undefined,
      payload: s.kind === "sequence" && s.payload ? { id: s.payload.id, size: s.payload.size } : undefined,
      inFlight: s.kind === "inflight" ? s.inFlight : undefined,
      clientsPerDO: s.kind === "clients" ? s.clientsPerDO : undefined,
      dos: s.kind === "clients" ? s.dos : undefined,
      durationMs: s.kind === "inflight" || s.kind === "clients" ? s.durationMs : undefined,
      warmMs: s.kind === "inflight" || s.kind === "clients" ? s.warmMs : undefined,
      newInstance: s.kind === "connect" ? s.newInstance : undefined,
    })),
    contenders: [...new Set([...MAIN, ...ROUTING])].map((c) => ({ name: c.name, label: c.label })),
    typeSupport: types,
    rows,
  };
  mkdirSync(dirname(rawPath), { recursive: true });
  writeFileSync(rawPath, JSON.stringify(raw));
  progress(`measurements done; raw results in ${rawPath}`);
  expect(rows.length).toBeGreaterThan(0);
  // Unsupported is a result; an error (a throw or a hang while timing) is not: it fails the run,
  // after the results (errors included) have been handed to the report.
  const errors = rows
    .filter((r) => r.status.kind === "error")
    .map((r) => `${r.scenario} · ${r.contender}: ${"reason" in r.status ? r.status.reason : ""}`);
  expect(errors).toEqual([]);
  // dorpc claims every payload: anything but "ok" for it (a refusal or a wrong echo) is a bug.
  const dorpcNotOk = rows
    .filter((r) => r.contender.startsWith("dorpc") && r.status.kind !== "ok")
    .map((r) => `${r.scenario} · ${r.contender}: ${r.status.kind}`);
  expect(dorpcNotOk).toEqual([]);
});

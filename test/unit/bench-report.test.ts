/**
 * The bench's report (bench/src/report/): per-round ratios, the targets' verdicts, the numbers
 * as printed, and the price model, on small synthetic runs whose right answers are known by hand;
 * then a stored run (bench/results/*.json) against its entry in docs/MEASUREMENTS.md. Cases that
 * went wrong before: a ratio that missed its bound printed as one within it ("1.10 … missed" for
 * 1.1004 against ≤ 1.10), 999.6 µs printed "1000 µs" and 999,999 µs "1000.0 ms", a negative
 * difference lost its unit, and a verdict not judged because a contender was missing from the
 * run did not say which.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { IdleRun } from "../../bench/src/idle.js";
import type { Block, Row } from "../../bench/src/measure.js";
import type { RawRun, ScenarioInfo } from "../../bench/src/raw.js";
import { analyze, type ScenarioStats } from "../../bench/src/report/analyze.js";
import { costsSection } from "../../bench/src/report/costs.js";
import { fmtRatio, fmtUs, ratioText } from "../../bench/src/report/format.js";
import { entryMarkdown } from "../../bench/src/report/markdown.js";
import { targetMatrix, targetSummary } from "../../bench/src/report/tables.js";
import { BOUNDS, computeTargets, type Targets } from "../../bench/src/report/targets.js";

// ---------- synthetic runs ----------

function info(id: string, extra: Partial<ScenarioInfo> = {}): ScenarioInfo {
  return { id, group: "counter", kind: "sequence", set: "main", label: id, callsPerSample: 1, ...extra } as ScenarioInfo;
}

const noWire = { sentFrames: 0, sentBytes: 0, recvFrames: 0, recvBytes: 0 };

function block(round: number, latUs: number[], extra: Partial<Block> = {}): Block {
  return {
    round,
    pass: 0,
    position: 0,
    latUs,
    calls: latUs.length,
    callsMeasured: latUs.length,
    wallNs: 1e9,
    cpuUs: 0,
    wire: noWire,
    ...extra,
  };
}

/** A row whose round r has `n` samples, all equal to perRound[r] (so its p50 and p99 are perRound[r]). */
function row(scenario: string, contender: string, perRound: number[], n = 400, status: Row["status"] = { kind: "ok" }): Row {
  return { scenario, contender, status, blocks: perRound.map((v, r) => block(r, Array(n).fill(v))) };
}

function run(scenarios: ScenarioInfo[], rows: Row[], extra: Partial<RawRun> = {}): RawRun {
  return {
    complete: true,
    startedAt: "x",
    finishedAt: "x",
    quick: false,
    description: "",
    environment: {} as RawRun["environment"],
    loadBefore: [0, 0, 0],
    loadAfterMeasuring: [0, 0, 0],
    rounds: 5,
    scenarios,
    contenders: [...new Set(rows.map((r) => r.contender))].map((name) => ({ name, label: name })),
    typeSupport: [],
    rows,
    ...extra,
  };
}

const floor = [100, 100, 100, 100, 100];
const times = (k: number) => floor.map((v) => v * k);

describe("per-round ratios", () => {
  it("dorpc ÷ floor is formed per round and summarised as median [min–max]", () => {
    const [s] = analyze(run([info("s")], [row("s", "dorpc", [110, 120, 100, 130, 105]), row("s", "floor", floor)]));
    const ratio = s!.ratios.find((x) => x.subject === "dorpc" && x.versus === "floor")!;
    expect(ratio.spread).toEqual({ median: 1.1, min: 1, max: 1.3, n: 5 });
    expect(fmtRatio(ratio.spread)).toBe("1.10 [1.00–1.30]");
    expect(s!.rows.find((x) => x.contender === "floor")!.roundSpread).toBe(0);
    expect(s!.rows.find((x) => x.contender === "dorpc")!.roundSpread).toBeCloseTo((130 - 100) / 110, 12);
    expect(s!.rows[0]!.latency!.n).toBe(2000);
  });

  it("throughput scenarios: calls ÷ wall time per round, and the ratio of those", () => {
    const rounds = (calls: number) => [0, 1, 2, 3, 4].map((r) => block(r, Array(calls).fill(300), { wallNs: 2e9 }));
    const [s] = analyze(
      run(
        [info("t", { kind: "inflight", inFlight: 1 })],
        [
          { scenario: "t", contender: "dorpc", status: { kind: "ok" }, blocks: rounds(3000) },
          { scenario: "t", contender: "floor", status: { kind: "ok" }, blocks: rounds(2000) },
        ],
      ),
    );
    expect(s!.metric).toBe("callsPerSec");
    expect(s!.rows[0]!.callsPerSec).toBe(1500);
    expect(s!.ratios.find((x) => x.versus === "floor")!.spread!.median).toBe(1.5);
  });
});

describe("the targets' verdicts", () => {
  it("p50 exactly 1.10 × the floor's is met; 1.1001 × is missed", () => {
    const raw = run(
      [info("a"), info("b")],
      [row("a", "dorpc", times(1.1)), row("a", "floor", floor), row("b", "dorpc", times(1.1001)), row("b", "floor", floor)],
    );
    expect(computeTargets(analyze(raw), false).matrix.map((m) => m.floorP50.met)).toEqual([true, false]);
  });

  it("p99 exactly 1.25 × the floor's is met with 2,000 samples each; with 1,999 it is not judged", () => {
    const judged = computeTargets(analyze(run([info("a")], [row("a", "dorpc", times(1.25)), row("a", "floor", floor)])), false);
    expect(judged.matrix[0]!.floorP99.met).toBe(true);
    const short = row("c", "floor", floor);
    short.blocks[0] = { ...short.blocks[0]!, latUs: short.blocks[0]!.latUs.slice(1) };
    const notJudged = computeTargets(analyze(run([info("c")], [row("c", "dorpc", times(1.25)), short])), false);
    expect(notJudged.matrix[0]!.floorP99).toMatchObject({ met: null, note: "not judged: n < 2,000" });
  });

  it("the peer bound (≤ 0.95) divides dorpc by the peer; floor ÷ peer is given beside it", () => {
    const raw = run(
      [info("a")],
      [row("a", "dorpc", times(0.95)), row("a", "capnweb", floor), row("a", "floor", times(0.5)), row("a", "agents", times(2))],
    );
    const m = computeTargets(analyze(raw), false).matrix[0]!;
    expect(m.capnweb.met).toBe(true);
    expect(m.capnweb.value!.median).toBeCloseTo(0.95, 12);
    expect(m.floorVsCapnweb!.median).toBe(0.5);
    expect(m.agents.value!.median).toBeCloseTo(0.475, 12);
  });

  it("an unsupported or pending row is never met, even with blocks of numbers", () => {
    const raw = run(
      [info("a")],
      [
        row("a", "dorpc", times(0.5), 400, { kind: "unsupported", reason: "no" }),
        row("a", "floor", floor),
        row("a", "capnweb", floor),
        row("a", "agents", floor, 400, { kind: "pending", reason: "later" }),
      ],
    );
    const t = computeTargets(analyze(raw), false);
    const m = t.matrix[0]!;
    expect([m.floorP50.met, m.floorP99.met, m.capnweb.met, m.agents.met]).toEqual([null, null, null, null]);
    expect(t.summary.every((s) => s.met === 0)).toBe(true);
    expect(targetSummary(t)[0]).toContain("not judged in any of 1 scenarios");
  });

  it("the bytes target's bound is 1.00; a feature target whose row is pending is not measured, saying so", () => {
    const raw = run(
      [info("payload-u8-1k", { group: "payload" }), info("fanout-128", { group: "fanout", kind: "fanout", set: "features" })],
      [
        row("payload-u8-1k", "dorpc", floor),
        row("payload-u8-1k", "floor", floor),
        row("fanout-128", "dorpc", floor, 80, { kind: "pending", reason: "not built" }),
        row("fanout-128", "floor", floor, 80),
      ],
    );
    const t = computeTargets(analyze(raw), false);
    const u8 = t.list.find((x) => x.scenario === "payload-u8-1k")!;
    expect([u8.bound, u8.met]).toEqual([BOUNDS.bytes, true]);
    const fanout = t.list.find((x) => x.label === "fan-out to 128 clients vs floor")!;
    expect(fanout.met).toBeNull();
    expect(fanout.note).toBe("dorpc: not run yet: not built");
  });

  it("a ratio not judged because a contender is missing from the run names that contender", () => {
    const m = computeTargets(analyze(run([info("a")], [row("a", "dorpc", floor), row("a", "floor", floor)])), false).matrix[0]!;
    expect(m.twinP50).toMatchObject({ met: null, note: "floor-twin: not in this run" });
    expect(m.twinP99).toMatchObject({ met: null, note: "floor-twin: not in this run" });
    expect(m.noRecordVsFloor).toMatchObject({ met: null, note: "dorpc-at-most-once: not in this run" });
  });
});

describe("numbers as printed", () => {
  it("a missed ratio is printed with as many decimals as it takes to show it is over its bound", () => {
    expect(ratioText(1.1004, 1.1)).toBe("1.1004");
    expect(ratioText(1.1000001, 1.1)).toBe("1.100000");
    expect(ratioText(1.1, 1.1)).toBe("1.10");
    expect(ratioText(1.1004)).toBe("1.10");
    expect(fmtRatio({ median: 1.1004, min: 1.1, max: 1.2, n: 5 }, 1.1)).toBe("1.1004 [1.10–1.20]");
  });

  it("in the targets' summary and matrix, 1.1004 × the floor against ≤ 1.10 is printed 1.1004, missed", () => {
    const t = computeTargets(analyze(run([info("a")], [row("a", "dorpc", times(1.1004)), row("a", "floor", floor)])), false);
    expect(t.matrix[0]!.floorP50.met).toBe(false);
    const summary = targetSummary(t)[0]!;
    expect(summary).toContain("missed in: a 1.1004");
    expect(targetMatrix(t)).toContain("1.1004 [1.10–1.10] **missed**");
  });

  it("fmtUs picks the unit after rounding", () => {
    expect(fmtUs(999.4)).toBe("999 µs");
    expect(fmtUs(999.6)).toBe("1.00 ms");
    expect(fmtUs(9994)).toBe("9.99 ms");
    expect(fmtUs(9999.6)).toBe("10.0 ms");
    expect(fmtUs(999_949)).toBe("999.9 ms");
    expect(fmtUs(999_999)).toBe("1.00 s");
    expect(fmtUs(null)).toBe("–");
  });

  it("fmtUs keeps the sign of a negative difference, with the same units", () => {
    expect(fmtUs(-1500)).toBe("-1.50 ms");
    expect(fmtUs(-999.6)).toBe("-1.00 ms");
    expect(fmtUs(-12)).toBe("-12 µs");
  });
});

describe("the price model", () => {
  it("messages per 1,000 calls, requests at 20:1, USD per million calls; idle GB-s and USD per month", () => {
    const inflight = info("inflight-1", { group: "inflight", kind: "inflight", inFlight: 1 });
    const measured = (contender: string, sentFrames: number): Row => ({
      scenario: "inflight-1",
      contender,
      status: { kind: "ok" },
      blocks: [block(0, Array(1000).fill(300), { wire: { sentFrames, sentBytes: 0, recvFrames: sentFrames, recvBytes: 0 } })],
    });
    const idleSamples = (contender: string, evicted: boolean, sent: number) =>
      [0, 1].map((cycle) => ({
        contender,
        cycle,
        idleMs: 36_000,
        evicted,
        wokeDuringIdle: false,
        firstCallUs: 2000,
        warmCallUs: 500,
        idleSentFrames: sent,
        idleRecvFrames: sent,
      }));
    const idle: IdleRun = {
      settings: { idleSeconds: 36, connections: 1, cycles: 2 } as IdleRun["settings"],
      contenders: ["dorpc", "floor", "capnweb"],
      notRun: [],
      samples: [...idleSamples("dorpc", true, 1), ...idleSamples("floor", true, 0), ...idleSamples("capnweb", false, 2)],
    };
    const raw = run([inflight], [measured("dorpc", 1000), measured("capnweb", 3000), measured("floor", 1000)], { idle, serverCpu: false });
    const text = costsSection(raw, analyze(raw)).join("\n");
    // 3 frames a call ÷ 20 × $0.15 = $0.0225 per million calls (toFixed(3) of the binary float may print 0.022).
    expect(text).toMatch(/\| 1 \| 1,000 \(50\.0; \$0\.0075\) \| 3,000 \(150\.0; \$0\.02[23]\) \| 1,000 \(50\.0; \$0\.0075\) \|/);
    // capnweb, never evicted: 3,600 s × 0.128 GB = 460.8 GB-s an hour; × 730 h × 1,000 clients × $12.50 / 1e6 = $4,204.80.
    // Its 2 idle frames per 36 s reach the object: 2 × 100 / 20 = 10 requests an hour.
    expect(text).toMatch(
      /\| capnweb \| 2 \| 0 of 2 \| 0 of 2 \| 2\.0 \/ 2\.0 \| 10\.0 \| 460\.8 GB-s \(in memory the whole hour\) \| \$4,204\.80 \|/,
    );
    // dorpc, evicted and not woken: its idle frame never reached the object, nothing billed.
    expect(text).toMatch(/\| dorpc \| 2 \| 2 of 2 \| 0 of 2 \| 1\.0 \/ 1\.0 \| 0\.0 \| 0\.0 GB-s/);
  });
});

// ---------- a stored run ----------

describe("a stored run and its entry in docs/MEASUREMENTS.md", () => {
  const root = join(__dirname, "../..");
  const name = "2026-11-27T16-48-28Z-51e7b62c5a";
  const json = JSON.parse(readFileSync(join(root, `bench/results/${name}.json`), "utf8")) as RawRun & {
    format: string;
    note: string;
    analysis: { scenario: string; metric: ScenarioStats["metric"]; ratios: ScenarioStats["ratios"]; rows: ScenarioStats["rows"] }[];
    targets: Targets;
  };
  const { analysis, targets: storedTargets, format: _format, note: _note, ...raw } = json;
  const doc = readFileSync(join(root, "docs/MEASUREMENTS.md"), "utf8");
  const start = doc.indexOf(`## ${raw.startedAt}`);
  const next = doc.indexOf("\n## ", start + 1);
  const entry = doc.slice(start, next === -1 ? undefined : next);

  /**
   * The figures of each line, in order: what the report computed, whatever the wording around
   * them (the report's prose may be reworded after an entry was written). Lines not rendered
   * from the JSON are left out: the wall time and final load average (not in it), chart links.
   */
  const figures = (markdown: string) =>
    markdown
      .split("\n")
      .filter((line) => !/Wall time|load average|measurements\//.test(line))
      .map((line) => (line.match(/-?\d[\d,]*(?:\.\d+)?/g) ?? []).join(" "))
      .filter(Boolean)
      .sort();

  it("the entry's figures are the ones rendered from the run's stored analysis", () => {
    expect(start, `no entry for ${raw.startedAt}`).toBeGreaterThan(-1);
    const stats: ScenarioStats[] = analysis.map((a) => ({
      info: raw.scenarios.find((s) => s.id === a.scenario)!,
      metric: a.metric,
      ratios: a.ratios,
      rows: a.rows,
    }));
    const rendered = entryMarkdown(raw, stats, storedTargets, { json: "x", charts: [] }, [0, 0, 0], 0);
    const mine = figures(rendered);
    const theirs = figures(entry);
    const missing = mine.filter((line) => !theirs.includes(line));
    const extra = theirs.filter((line) => !mine.includes(line));
    expect({ missing: missing.slice(0, 5), extra: extra.slice(0, 5), lines: mine.length }).toEqual({
      missing: [],
      extra: [],
      lines: theirs.length,
    });
  });

  it("every verdict computed again from the samples agrees with the stored one", { timeout: 20_000 }, () => {
    const t = computeTargets(analyze(raw), raw.quick, raw.bundle);
    const flips: string[] = [];
    const keys = ["floorP50", "floorP99", "capnweb", "agents", "noRecordVsFloor", "twinP50", "twinP99"] as const;
    expect(t.matrix.map((r) => r.scenario)).toEqual(storedTargets.matrix.map((r) => r.scenario));
    t.matrix.forEach((r, i) => {
      for (const key of keys) {
        const stored = storedTargets.matrix[i]![key];
        if (r[key].met !== stored.met) flips.push(`${r.scenario} ${key}: ${stored.met} → ${r[key].met}`);
      }
    });
    expect(t.list.map((r) => r.label)).toEqual(storedTargets.list.map((r) => r.label));
    t.list.forEach((r, i) => {
      if (r.met !== storedTargets.list[i]!.met) flips.push(`${r.label}: ${storedTargets.list[i]!.met} → ${r.met}`);
    });
    expect(flips).toEqual([]);
  });
});

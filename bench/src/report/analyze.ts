/**
 * From raw blocks to the numbers the log shows. Nothing is estimated: every percentile is an
 * observed sample, every rate is calls counted over time measured, every ratio is formed per
 * round (same round = neighbouring blocks, so drift cancels) and summarised as median [min–max].
 */
import type { Block, Row, RowStatus } from "../measure.js";
import type { RawRun, ScenarioInfo } from "../raw.js";
import { relativeRange, spread, summarize, percentileSorted, sortedCopy, type Spread, type Summary } from "../stats.js";

export interface RowStats {
  contender: string;
  status: RowStatus;
  /** Latency over all samples of all rounds, µs (per sample: one call, or two for the pair). */
  latency: Summary | null;
  /** Handshake-only latency (connect scenarios), µs. */
  handshake: Summary | null;
  /** Calls per second: calls ÷ timed wall time (throughput: completed before the deadline ÷ duration). */
  callsPerSec: number | null;
  sentBytesPerCall: number | null;
  recvBytesPerCall: number | null;
  framesPerCall: number | null;
  sentFramesPerCall: number | null;
  recvFramesPerCall: number | null;
  cpuUsPerCall: number | null;
  /** The per-round metric (p50 µs, or calls/s for throughput scenarios), in round order. */
  perRound: (number | null)[];
  /** (max − min) / median of perRound. */
  roundSpread: number | null;
}

export interface Ratio {
  versus: string;
  spread: Spread | null;
}

export interface ScenarioStats {
  info: ScenarioInfo;
  /** Throughput scenarios compare calls/s (higher is better); the others p50 latency (lower is better). */
  metric: "p50" | "callsPerSec";
  rows: RowStats[];
  /** dorpc ÷ each comparison contender, per round. */
  ratios: Ratio[];
}

export function isThroughput(info: ScenarioInfo): boolean {
  return info.kind === "inflight" || info.kind === "clients";
}

function sum(blocks: Block[], pick: (b: Block) => number): number {
  return blocks.reduce((total, b) => total + pick(b), 0);
}

function blockMetric(info: ScenarioInfo, block: Block): number {
  if (isThroughput(info)) return block.calls / (block.wallNs / 1e9);
  return percentileSorted(sortedCopy(block.latUs), 50);
}

function rowStats(info: ScenarioInfo, row: Row, rounds: number): RowStats {
  const blocks = row.blocks;
  const empty = blocks.length === 0;
  const latency = empty ? null : summarize(blocks.flatMap((b) => b.latUs));
  const handshakeSamples = blocks.flatMap((b) => b.handshakeUs ?? []);
  const measured = sum(blocks, (b) => b.callsMeasured);
  const perCall = (v: number) => (measured > 0 ? v / measured : null);
  const perRound: (number | null)[] = Array.from({ length: rounds }, (_, r) => {
    const block = blocks.find((b) => b.round === r);
    return block ? blockMetric(info, block) : null;
  });
  return {
    contender: row.contender,
    status: row.status,
    latency,
    handshake: handshakeSamples.length ? summarize(handshakeSamples) : null,
    callsPerSec: empty ? null : sum(blocks, (b) => b.calls) / (sum(blocks, (b) => b.wallNs) / 1e9),
    sentBytesPerCall: perCall(sum(blocks, (b) => b.wire.sentBytes)),
    recvBytesPerCall: perCall(sum(blocks, (b) => b.wire.recvBytes)),
    framesPerCall: perCall(sum(blocks, (b) => b.wire.sentFrames + b.wire.recvFrames)),
    sentFramesPerCall: perCall(sum(blocks, (b) => b.wire.sentFrames)),
    recvFramesPerCall: perCall(sum(blocks, (b) => b.wire.recvFrames)),
    cpuUsPerCall: perCall(sum(blocks, (b) => b.cpuUs)),
    perRound,
    roundSpread: relativeRange(perRound.filter((v): v is number => v !== null)),
  };
}

/** The contenders dorpc is divided by, per contender set. */
export const COMPARISONS: Record<ScenarioInfo["set"], { subject: string; versus: string[] }> = {
  main: { subject: "dorpc", versus: ["capnweb", "floor"] },
  routing: { subject: "dorpc", versus: ["dorpc-direct"] },
};

export function analyze(raw: RawRun): ScenarioStats[] {
  return raw.scenarios.map((info) => {
    const rows = raw.rows.filter((r) => r.scenario === info.id).map((r) => rowStats(info, r, raw.rounds));
    const { subject, versus } = COMPARISONS[info.set];
    const subjectRow = rows.find((r) => r.contender === subject);
    const ratios = versus.map((name) => ({
      versus: name,
      spread: roundRatios(
        subjectRow,
        rows.find((r) => r.contender === name),
      ),
    }));
    return { info, metric: isThroughput(info) ? "callsPerSec" : "p50", rows, ratios };
  });
}

/**
 * `subject ÷ versus` as the median and range of per-round paired ratios, for pairs outside
 * `COMPARISONS` (e.g. dorpc-live in the targets).
 */
export function pairedRatio(s: ScenarioStats, subject: string, versus: string): Spread | null {
  return roundRatios(
    s.rows.find((r) => r.contender === subject),
    s.rows.find((r) => r.contender === versus),
  );
}

/** `a ÷ b` formed round by round (rounds where both have a value), as median and range; null unless both completed. */
function roundRatios(a: RowStats | undefined, b: RowStats | undefined): Spread | null {
  if (!a || !b || a.status.kind !== "ok" || b.status.kind !== "ok") return null;
  const paired: number[] = [];
  for (let r = 0; r < Math.min(a.perRound.length, b.perRound.length); r++) {
    const x = a.perRound[r];
    const y = b.perRound[r];
    if (x != null && y != null && y > 0) paired.push(x / y);
  }
  return spread(paired);
}

export interface Target {
  label: string;
  scenario: string;
  versus: string;
  /** "≤" for latency ratios, "≥" for throughput ratios, "works" for support. */
  op: "≤" | "≥" | "works";
  bound: number;
  /** The measured value (median ratio) and its per-round range. */
  value: Spread | null;
  met: boolean | null;
  note: string;
}

export function targets(stats: ScenarioStats[], quick: boolean): Target[] {
  const find = (id: string) => stats.find((s) => s.info.id === id);
  const counterId = (name: string) => (find(`counter-large-${name}`) ? `counter-large-${name}` : `counter-${name}`);
  const out: Target[] = [];
  const ratioTarget = (label: string, id: string, versus: string, op: "≤" | "≥", bound: number, subject = "dorpc") => {
    const s = find(id);
    const ratio =
      subject === "dorpc" ? (s?.ratios.find((r) => r.versus === versus)?.spread ?? null) : s ? pairedRatio(s, subject, versus) : null;
    const row = s?.rows.find((r) => r.contender === subject);
    const other = s?.rows.find((r) => r.contender === versus);
    let note = "";
    if (!s) note = "not measured in this mode";
    else if (row?.status.kind !== "ok")
      note = `${subject} ${row?.status.kind}: ${"reason" in (row?.status ?? {}) ? (row!.status as { reason: string }).reason : ""}`;
    else if (other?.status.kind !== "ok") note = `${versus} ${other?.status.kind}`;
    const met = ratio ? (op === "≤" ? ratio.median <= bound : ratio.median >= bound) : null;
    out.push({ label, scenario: id, versus, op, bound, value: ratio, met, note: note || (quick ? "quick run: small samples" : "") });
  };
  // The same targets for the default dorpc (floor: the hibernatable floor) and, when measured,
  // for `hibernation: false` (dorpc-live), whose like-for-like floor is floor-accept (Cap'n Web
  // also serves from an accepted, non-hibernatable socket).
  const subjects: [subject: string, floor: string, prefix: string][] = [["dorpc", "floor", ""]];
  if (stats.some((s) => s.rows.some((r) => r.contender === "dorpc-live"))) subjects.push(["dorpc-live", "floor-accept", "[live] "]);
  for (const [subject, floor, prefix] of subjects) {
    for (const [label, id] of [
      ["empty call p50", "payload-empty"],
      ["increment() p50", counterId("increment")],
      ["getValue() p50", counterId("getValue")],
      ["small string p50", "payload-small-string"],
    ] as const) {
      ratioTarget(`${prefix}${label} vs Cap'n Web`, id, "capnweb", "≤", 0.85, subject);
      ratioTarget(`${prefix}${label} vs ${floor}`, id, floor, "≤", 1.15, subject);
    }
    ratioTarget(`${prefix}nested object p50 vs Cap'n Web`, "payload-nested-object", "capnweb", "≤", 0.9, subject);
    ratioTarget(`${prefix}1,000 structs p50 vs Cap'n Web`, "payload-structs-1000", "capnweb", "≤", 0.9, subject);
    ratioTarget(`${prefix}Uint8Array 1 MiB p50 vs Cap'n Web`, "payload-u8-1m", "capnweb", "≤", 0.5, subject);
    ratioTarget(`${prefix}Uint8Array 10 MiB p50 vs Cap'n Web`, "payload-u8-10m", "capnweb", "≤", 0.5, subject);
    ratioTarget(`${prefix}throughput, 64 in flight, vs Cap'n Web`, "inflight-64", "capnweb", "≥", 1.5, subject);
  }
  for (const [subject, , prefix] of subjects) {
    // Exotic types vs plain JSON of about the same size, both through the same subject, same round.
    const rich = find("payload-rich");
    const plain = find("payload-rich-plain");
    const value = rich && plain ? crossScenarioRatio(rich, plain, subject) : null;
    out.push({
      label: `${prefix}rich value p50 vs its plain-JSON twin`,
      scenario: "payload-rich ÷ payload-rich-plain",
      versus: "payload-rich-plain",
      op: "≤",
      bound: 1.5,
      value,
      met: value ? value.median <= 1.5 : null,
      note: value ? (quick ? "quick run: small samples" : "") : "not measured in this mode",
    });
    out.push(p99Target(stats, subject, prefix, quick));
  }
  for (const [label, id] of [
    ["rich value works", "payload-rich"],
    ["cyclic graph works", "payload-cyclic"],
  ] as const) {
    const row = find(id)?.rows.find((r) => r.contender === "dorpc");
    const ok = row?.status.kind === "ok" && (row.latency?.n ?? 0) > 0;
    out.push({
      label,
      scenario: id,
      versus: "",
      op: "works",
      bound: 0,
      value: null,
      met: row ? ok : null,
      note: row && !ok ? `${row.status.kind}: ${"reason" in row.status ? row.status.reason : ""}` : "",
    });
  }
  return out;
}

/** `subject`'s per-round p50 in scenario `a` ÷ its per-round p50 in scenario `b`: median and range. */
export function crossScenarioRatio(a: ScenarioStats, b: ScenarioStats, subject: string): Spread | null {
  return roundRatios(
    a.rows.find((r) => r.contender === subject),
    b.rows.find((r) => r.contender === subject),
  );
}

/**
 * "p99 no worse than Cap'n Web's in any shared scenario": `subject`'s p99 ÷ Cap'n Web's p99 (all
 * samples of all rounds) in every latency scenario both completed. The value is the spread over
 * scenarios; met only when the largest is ≤ 1; the note names the scenarios above 1.
 */
function p99Target(stats: ScenarioStats[], subject: string, prefix: string, quick: boolean): Target {
  const perScenario: { id: string; ratio: number }[] = [];
  for (const s of stats) {
    if (s.metric !== "p50" || s.info.set !== "main") continue;
    const a = s.rows.find((r) => r.contender === subject);
    const b = s.rows.find((r) => r.contender === "capnweb");
    if (a?.status.kind !== "ok" || b?.status.kind !== "ok" || !a.latency || !b.latency || b.latency.p99 <= 0) continue;
    perScenario.push({ id: s.info.id, ratio: a.latency.p99 / b.latency.p99 });
  }
  const value = spread(perScenario.map((p) => p.ratio));
  const over = perScenario.filter((p) => p.ratio > 1).sort((x, y) => y.ratio - x.ratio);
  const notes = [
    `${perScenario.length} shared latency scenarios; median [min–max] over scenarios; met only if the max ≤ 1`,
    over.length > 0 ? `above 1 in ${over.length}: ${over.map((p) => `${p.id} ${p.ratio.toFixed(2)}`).join(", ")}` : "",
    quick ? "quick run: small samples" : "",
  ];
  return {
    label: `${prefix}p99 vs Cap'n Web's p99, every shared scenario`,
    scenario: "all latency scenarios",
    versus: "capnweb",
    op: "≤",
    bound: 1,
    value,
    met: value ? value.max <= 1 : null,
    note: notes.filter(Boolean).join("; "),
  };
}

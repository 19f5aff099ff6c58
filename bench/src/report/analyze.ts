/**
 * From raw blocks to the numbers the log shows. Nothing is estimated: every percentile is an
 * observed sample (pooled over every block of every round), every rate is calls counted over
 * time measured, every ratio is formed per round (same round = neighbouring blocks, so drift
 * cancels) and summarised as median [min–max]. The targets are in targets.ts.
 */
import type { Block, Row, RowStatus } from "../measure.js";
import type { RawRun, ScenarioInfo } from "../raw.js";
import { percentileSorted, relativeRange, sortedCopy, type Spread, spread, summarize, type Summary } from "../stats.js";

export interface RowStats {
  contender: string;
  status: RowStatus;
  /** Latency over all samples of all rounds, µs (per sample: one call, or several for multi-call samples). */
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
  /** CPU of the Worker's workerd process per call, µs (null: not measured). */
  serverCpuUsPerCall: number | null;
  /** CPU of wrangler dev's proxy workerd per call, µs. */
  proxyCpuUsPerCall: number | null;
  /** The per-round metric (p50 µs of every sample of the round, or calls/s for throughput), in round order. */
  perRound: (number | null)[];
  /** The in-block reference samples (scenarios with a `reference`), every round pooled, µs. */
  reference: Summary | null;
  /** p50 µs of the round's in-block reference samples (scenarios with a `reference`), in round order. */
  refPerRound: (number | null)[] | null;
  /** (max − min) / median of perRound. */
  roundSpread: number | null;
}

export interface Ratio {
  subject: string;
  versus: string;
  spread: Spread | null;
}

export interface ScenarioStats {
  info: ScenarioInfo;
  /** Throughput scenarios compare calls/s (higher is better); the others p50 latency (lower is better). */
  metric: "p50" | "callsPerSec";
  rows: RowStats[];
  /** The ratio columns of its contender set (RATIO_COLUMNS), per round. */
  ratios: Ratio[];
}

export function isThroughput(info: ScenarioInfo): boolean {
  return info.kind === "inflight" || info.kind === "clients";
}

function sum(blocks: Block[], pick: (b: Block) => number): number {
  return blocks.reduce((total, b) => total + pick(b), 0);
}

/** The round's value: p50 of all its samples (every pass pooled), or its calls ÷ its wall time. */
function roundMetric(info: ScenarioInfo, blocks: Block[]): number {
  if (isThroughput(info)) return sum(blocks, (b) => b.calls) / (sum(blocks, (b) => b.wallNs) / 1e9);
  return percentileSorted(sortedCopy(blocks.flatMap((b) => b.latUs)), 50);
}

function rowStats(info: ScenarioInfo, row: Row, rounds: number): RowStats {
  const blocks = row.blocks;
  const empty = blocks.length === 0;
  const handshakeSamples = blocks.flatMap((b) => b.handshakeUs ?? []);
  const measured = sum(blocks, (b) => b.callsMeasured);
  const perCall = (v: number) => (measured > 0 ? v / measured : null);
  const wire = blocks.some((b) => b.noWire) ? () => null : perCall;
  const server = blocks.every((b) => b.serverCpuUs !== undefined) && !empty;
  const perRound: (number | null)[] = Array.from({ length: rounds }, (_, r) => {
    const inRound = blocks.filter((b) => b.round === r);
    return inRound.length ? roundMetric(info, inRound) : null;
  });
  const hasRef = !empty && blocks.every((b) => b.refUs !== undefined);
  const refPerRound = hasRef
    ? Array.from({ length: rounds }, (_, r) => {
        const ref = blocks.filter((b) => b.round === r).flatMap((b) => b.refUs!);
        return ref.length ? percentileSorted(sortedCopy(ref), 50) : null;
      })
    : null;
  return {
    contender: row.contender,
    status: row.status,
    latency: empty ? null : summarize(blocks.flatMap((b) => b.latUs)),
    handshake: handshakeSamples.length ? summarize(handshakeSamples) : null,
    callsPerSec: empty ? null : sum(blocks, (b) => b.calls) / (sum(blocks, (b) => b.wallNs) / 1e9),
    sentBytesPerCall: wire(sum(blocks, (b) => b.wire.sentBytes)),
    recvBytesPerCall: wire(sum(blocks, (b) => b.wire.recvBytes)),
    framesPerCall: wire(sum(blocks, (b) => b.wire.sentFrames + b.wire.recvFrames)),
    sentFramesPerCall: wire(sum(blocks, (b) => b.wire.sentFrames)),
    recvFramesPerCall: wire(sum(blocks, (b) => b.wire.recvFrames)),
    cpuUsPerCall: perCall(sum(blocks, (b) => b.cpuUs)),
    serverCpuUsPerCall: server ? perCall(sum(blocks, (b) => b.serverCpuUs ?? 0)) : null,
    proxyCpuUsPerCall: server ? perCall(sum(blocks, (b) => b.proxyCpuUs ?? 0)) : null,
    perRound,
    reference: hasRef ? summarize(blocks.flatMap((b) => b.refUs!)) : null,
    refPerRound,
    roundSpread: relativeRange(perRound.filter((v): v is number => v !== null)),
  };
}

/** The ratio columns of each contender set's tables: [subject, versus], formed per round. */
export const RATIO_COLUMNS: Record<string, [string, string][]> = {
  main: [
    ["dorpc", "capnweb"],
    ["dorpc", "agents"],
    ["dorpc", "floor"],
  ],
  features: [
    ["dorpc", "capnweb"],
    ["dorpc", "agents"],
    ["dorpc", "floor"],
  ],
  ordering: [
    ["dorpc", "floor"],
    ["dorpc-sequential", "floor"],
    ["dorpc", "capnweb"],
  ],
  routing: [["dorpc", "dorpc-direct"]],
  "exactly-once": [["dorpc", "dorpc-at-most-once"]],
  schema: [["dorpc-schema", "dorpc"]],
};

export const NAMES: Record<string, string> = {
  capnweb: "Cap'n Web",
  agents: "Agents",
  floor: "floor",
  "dorpc-direct": "direct",
};

export function displayName(contender: string): string {
  return NAMES[contender] ?? contender;
}

export function analyze(raw: RawRun): ScenarioStats[] {
  return raw.scenarios.map((info) => {
    const rows = raw.rows.filter((r) => r.scenario === info.id).map((r) => rowStats(info, r, raw.rounds));
    const ratios = (RATIO_COLUMNS[info.set] ?? []).map(([subject, versus]) => ({
      subject,
      versus,
      spread: roundRatios(
        rows.find((r) => r.contender === subject),
        rows.find((r) => r.contender === versus),
      ),
    }));
    return { info, metric: isThroughput(info) ? "callsPerSec" : "p50", rows, ratios };
  });
}

/** `subject ÷ versus` in one scenario, as the median and range of per-round paired ratios. */
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

/** `subject`'s per-round p50 in scenario `a` ÷ its per-round p50 in scenario `b`: median and range. */
export function crossScenarioRatio(a: ScenarioStats, b: ScenarioStats, subject: string): Spread | null {
  return roundRatios(
    a.rows.find((r) => r.contender === subject),
    b.rows.find((r) => r.contender === subject),
  );
}

/**
 * `subject`'s per-round p50 ÷ the p50 of its in-block reference samples of the same round (the
 * same blocks, the same connections): median and range; null without reference samples.
 */
export function referenceRatio(s: ScenarioStats, subject: string): Spread | null {
  const row = s.rows.find((r) => r.contender === subject);
  if (row?.status.kind !== "ok" || !row.refPerRound) return null;
  const paired: number[] = [];
  for (let r = 0; r < row.perRound.length; r++) {
    const x = row.perRound[r];
    const y = row.refPerRound[r];
    if (x != null && y != null && y > 0) paired.push(x / y);
  }
  return spread(paired);
}

/** Why a row has no numbers ("pending: …", "unsupported: …"), or undefined when it ran. */
export function statusText(row: RowStats | undefined): string | undefined {
  if (!row) return "not in this run";
  if (row.status.kind === "ok") return undefined;
  if (row.status.kind === "pending") return `not run yet: ${row.status.reason}`;
  return `${row.status.kind}: ${row.status.reason}`;
}

/**
 * The measuring loop. For every scenario: check each contender once (supported? correct
 * answer?), warm it up, then run `rounds` rounds in which every contender runs one block, in the
 * order ABC in even rounds and CBA in odd ones, so drift (thermal, background load, workerd
 * state) hits every contender alike. gc() runs between blocks, never inside a timed region.
 * Every sample is kept.
 */
import type { Conn, Contender } from "./contenders/index.js";
import { structurallyEqual } from "./equal.js";
import type { ClientsScenario, ConnectScenario, InflightScenario, Scenario, SequenceScenario } from "./scenarios.js";
import { WireCounters, wireDelta, type WireSnapshot } from "./wire.js";

/** One block: one contender, one round, one timed region (or k connect samples). */
export interface Block {
  round: number;
  /** Position in the round's order (0 = first). */
  position: number;
  /** Latency samples in µs (per sample; a sample may be several calls). */
  latUs: number[];
  /** Handshake-only samples in µs (connect scenarios). */
  handshakeUs?: number[];
  /** Calls completed in the timed region. */
  calls: number;
  /** The calls that latency, CPU and wire counts are divided by (= calls). */
  callsMeasured: number;
  /** Length of the timed region in ns (throughput: the window, ≈ the fixed duration). */
  wallNs: number;
  /** Client CPU (user + system) in µs during the timed region. */
  cpuUs: number;
  wire: WireSnapshot;
}

export type RowStatus = { kind: "ok" } | { kind: "unsupported"; reason: string } | { kind: "error"; reason: string };

export interface Row {
  scenario: string;
  contender: string;
  status: RowStatus;
  blocks: Block[];
}

export type Progress = (line: string) => void;

const BLOCK_TIMEOUT_MS = 180_000;

declare const gc: (() => void) | undefined;

function collect(): void {
  if (typeof gc === "function") gc();
}

function now(): bigint {
  return process.hrtime.bigint();
}

function cpuUs(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return d.user + d.system;
}

/** A call or block that made no progress: always an error, never "unsupported". */
export class HangError extends Error {
  override name = "HangError";
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HangError(`${what}: no progress within ${ms / 1000} s (hang)`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === "string" ? ` ${code}` : ""}: ${error.message}`.slice(0, 300);
  }
  return String(error).slice(0, 300);
}

export interface RunContext {
  baseUrl: string;
  rounds: number;
  /** Unique per run, part of every instance name. */
  tag: string;
  progress: Progress;
}

function instanceName(ctx: RunContext, scenario: Scenario, contender: Contender, extra = ""): string {
  return `${scenario.id}-${contender.name}-${ctx.tag}${extra}`;
}

/** Checks support and correctness once and warms up; returns a status for the row. */
async function prepare(ctx: RunContext, scenario: Scenario, contender: Contender, value: unknown): Promise<RowStatus> {
  if (scenario.kind === "sequence" && scenario.payload) {
    const supported = contender.supports(scenario.payload);
    if (supported !== true) return { kind: "unsupported", reason: supported };
  }
  const counters = new WireCounters();
  let conn: Conn | undefined;
  try {
    conn = (await withTimeout(contender.connect(ctx.baseUrl, instanceName(ctx, scenario, contender, "-warm"), counters), 60_000, "connect"))
      .conn;
    if (scenario.kind === "sequence") {
      if (scenario.payload && value !== undefined) {
        let back: unknown;
        try {
          back = await withTimeout(conn.echo(value), 120_000, "echo");
        } catch (error) {
          if (error instanceof HangError) return { kind: "error", reason: describeError(error) };
          return { kind: "unsupported", reason: describeError(error) };
        }
        if (!structurallyEqual(back, value)) return { kind: "unsupported", reason: "wrong result: the echo differs from the value sent" };
      }
      for (let i = 0; i < scenario.warmupPerScenario; i++) await withTimeout(scenario.sample(conn, value), 120_000, "warm-up");
    } else {
      for (let i = 0; i < 50; i++) await conn.increment();
    }
    return { kind: "ok" };
  } catch (error) {
    return { kind: "error", reason: describeError(error) };
  } finally {
    await conn?.close().catch(() => {});
  }
}

async function sequenceBlock(ctx: RunContext, s: SequenceScenario, contender: Contender, value: unknown, round: number): Promise<Block> {
  const counters = new WireCounters();
  const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender), counters);
  try {
    for (let i = 0; i < s.warmupPerBlock; i++) await s.sample(conn, value);
    const lat = new Array<number>(s.samplesPerBlock);
    collect();
    const wire0 = counters.snapshot();
    const cpu0 = process.cpuUsage();
    const t0 = now();
    for (let i = 0; i < s.samplesPerBlock; i++) {
      const start = now();
      await s.sample(conn, value);
      lat[i] = Number(now() - start) / 1e3;
    }
    const wallNs = Number(now() - t0);
    const cpu = cpuUs(cpu0);
    const wire = wireDelta(wire0, counters.snapshot());
    const calls = s.samplesPerBlock * s.callsPerSample;
    return { round, position: 0, latUs: lat, calls, callsMeasured: calls, wallNs, cpuUs: cpu, wire };
  } finally {
    await conn.close();
  }
}

async function connectBlock(ctx: RunContext, s: ConnectScenario, contender: Contender, round: number): Promise<Block> {
  const lat: number[] = [];
  const handshake: number[] = [];
  const counters = new WireCounters();
  let wallNs = 0;
  let cpu = 0;
  collect();
  for (let i = 0; i < s.samplesPerBlock; i++) {
    const instance = instanceName(ctx, s, contender, s.newInstance ? `-r${round}-${i}` : "");
    const cpu0 = process.cpuUsage();
    const t0 = now();
    const connected = await contender.connect(ctx.baseUrl, instance, counters);
    wallNs += Number(now() - t0);
    cpu += cpuUs(cpu0);
    lat.push(connected.totalNs / 1e3);
    handshake.push(connected.handshakeNs / 1e3);
    await connected.conn.close();
  }
  // Counted bytes include the close of each connection; close frames are control frames and are not counted.
  return {
    round,
    position: 0,
    latUs: lat,
    handshakeUs: handshake,
    calls: s.samplesPerBlock,
    callsMeasured: s.samplesPerBlock,
    wallNs,
    cpuUs: cpu,
    wire: counters.snapshot(),
  };
}

/**
 * Closed loops on `conns` (each with `perConn` calls outstanding). The loops run `warmMs` before
 * the window opens, so the window sees the steady state, not the pipeline filling. The window
 * opens at the first completion after the warm period and closes at the first completion
 * `durationMs` later; throughput = completions inside ÷ the window's exact length, and latency,
 * CPU and wire counts cover the calls completed inside it.
 */
async function closedLoop(
  conns: Conn[],
  counters: WireCounters[],
  perConn: number,
  durationMs: number,
  warmMs: number,
  round: number,
): Promise<Block> {
  const lat: number[] = [];
  let stop = false;
  collect();
  const sumWire = () =>
    counters.reduce<WireSnapshot>(
      (sum, c) => {
        const s = c.snapshot();
        return {
          sentFrames: sum.sentFrames + s.sentFrames,
          sentBytes: sum.sentBytes + s.sentBytes,
          recvFrames: sum.recvFrames + s.recvFrames,
          recvBytes: sum.recvBytes + s.recvBytes,
        };
      },
      { sentFrames: 0, sentBytes: 0, recvFrames: 0, recvBytes: 0 },
    );
  const warmUntil = now() + BigInt(warmMs) * 1_000_000n;
  let windowStart = 0n;
  let windowEnd = 0n;
  let closedAt = 0n;
  let cpu0: NodeJS.CpuUsage | undefined;
  let cpu = 0;
  let wire0: WireSnapshot | undefined;
  let wire: WireSnapshot | undefined;
  const loop = async (conn: Conn) => {
    while (!stop) {
      const start = now();
      await conn.increment();
      const end = now();
      if (windowStart === 0n) {
        if (end >= warmUntil) {
          windowStart = end;
          windowEnd = end + BigInt(durationMs) * 1_000_000n;
          cpu0 = process.cpuUsage();
          wire0 = sumWire();
        }
        continue;
      }
      if (closedAt !== 0n) continue;
      if (end > windowEnd) {
        closedAt = end;
        cpu = cpuUs(cpu0!);
        wire = wireDelta(wire0!, sumWire());
        stop = true;
        continue;
      }
      lat.push(Number(end - start) / 1e3);
    }
  };
  const loops: Promise<void>[] = [];
  for (const conn of conns) for (let i = 0; i < perConn; i++) loops.push(loop(conn));
  await Promise.all(loops);
  const wallNs = Number(closedAt - windowStart);
  return { round, position: 0, latUs: lat, calls: lat.length, callsMeasured: lat.length, wallNs, cpuUs: cpu, wire: wire! };
}

async function inflightBlock(ctx: RunContext, s: InflightScenario, contender: Contender, round: number): Promise<Block> {
  const counters = new WireCounters();
  const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender), counters);
  try {
    await Promise.all(Array.from({ length: s.inFlight }, () => conn.increment()));
    return await closedLoop([conn], [counters], s.inFlight, s.durationMs, s.warmMs, round);
  } finally {
    await conn.close();
  }
}

async function clientsBlock(ctx: RunContext, s: ClientsScenario, contender: Contender, round: number): Promise<Block> {
  const conns: Conn[] = [];
  const counters: WireCounters[] = [];
  try {
    // Untimed setup: connect 16 at a time (each connect makes its first call), then one call each.
    const wanted: number[] = [];
    for (let d = 0; d < s.dos; d++) for (let c = 0; c < s.clientsPerDO; c++) wanted.push(d);
    for (let i = 0; i < wanted.length; i += 16) {
      const batch = await Promise.all(
        wanted.slice(i, i + 16).map(async (d) => {
          const wire = new WireCounters();
          const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender, `-do${d}`), wire);
          return { conn, wire };
        }),
      );
      for (const { conn, wire } of batch) {
        conns.push(conn);
        counters.push(wire);
      }
    }
    await Promise.all(conns.map((conn) => conn.increment()));
    return await closedLoop(conns, counters, 1, s.durationMs, s.warmMs, round);
  } finally {
    await Promise.all(conns.map((conn) => conn.close()));
  }
}

function runBlock(ctx: RunContext, scenario: Scenario, contender: Contender, value: unknown, round: number): Promise<Block> {
  switch (scenario.kind) {
    case "sequence":
      return sequenceBlock(ctx, scenario, contender, value, round);
    case "connect":
      return connectBlock(ctx, scenario, contender, round);
    case "inflight":
      return inflightBlock(ctx, scenario, contender, round);
    case "clients":
      return clientsBlock(ctx, scenario, contender, round);
  }
}

function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return "–";
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(0)} µs`;
}

function blockSummary(scenario: Scenario, block: Block): string {
  const sorted = [...block.latUs].sort((a, b) => a - b);
  const p50 = sorted[Math.max(0, Math.ceil(sorted.length / 2) - 1)] ?? NaN;
  if (scenario.kind === "inflight" || scenario.kind === "clients") {
    return `${Math.round(block.calls / (block.wallNs / 1e9))} calls/s, p50 ${fmtUs(p50)}`;
  }
  return `n=${block.latUs.length} p50 ${fmtUs(p50)}`;
}

/** Runs one scenario for `contenders`, interleaved; returns one row per contender. */
export async function runScenario(
  ctx: RunContext,
  scenario: Scenario,
  contenders: readonly Contender[],
  counter: { done: number; total: number },
): Promise<Row[]> {
  const value = scenario.kind === "sequence" ? scenario.payload?.make() : undefined;
  const rows: Row[] = [];
  for (const contender of contenders) {
    const status = await prepare(ctx, scenario, contender, value);
    rows.push({ scenario: scenario.id, contender: contender.name, status, blocks: [] });
    if (status.kind !== "ok") {
      ctx.progress(`${scenario.id} · ${contender.name} · ${status.kind}: ${status.reason}`);
      counter.done += ctx.rounds;
    }
  }
  for (let round = 0; round < ctx.rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    let position = 0;
    for (const contender of order) {
      const row = rows.find((r) => r.contender === contender.name)!;
      if (row.status.kind !== "ok") continue;
      counter.done++;
      collect();
      try {
        const block = await withTimeout(
          runBlock(ctx, scenario, contender, value, round),
          BLOCK_TIMEOUT_MS,
          `${scenario.id} ${contender.name}`,
        );
        block.position = position++;
        row.blocks.push(block);
        ctx.progress(
          `[${String(counter.done).padStart(4)}/${counter.total}] ${scenario.id} · ${contender.name} · round ${round + 1}/${ctx.rounds} · ${blockSummary(scenario, block)}`,
        );
      } catch (error) {
        row.status = { kind: "error", reason: describeError(error) };
        ctx.progress(
          `[${String(counter.done).padStart(4)}/${counter.total}] ${scenario.id} · ${contender.name} · round ${round + 1}/${ctx.rounds} · ERROR ${row.status.reason}`,
        );
      }
    }
  }
  collect();
  return rows;
}

/**
 * The measuring loop. For every scenario: check each contender once (supported? correct
 * answer?), warm it up, then run `rounds` rounds; a round is `repeats` passes, and in each pass
 * every contender runs one block, in the order ABC… in even passes and …CBA in odd ones, so drift
 * (thermal, background load, workerd state) hits every contender alike. gc() runs between
 * blocks, never inside a timed region. Every sample is kept. The blocks themselves are in
 * blocks.ts and blocks-features.ts.
 */
import { runBlock } from "./blocks.js";
import type { Conn, Contender } from "./contenders/index.js";
import { structurallyEqual } from "./equal.js";
import { type Block, collect, instanceName, type RunContext } from "./region.js";
import type { Scenario } from "./scenarios.js";
import { ServerGoneError } from "./server-cpu.js";
import { WireCounters } from "./wire.js";

export type { Block, RunContext } from "./region.js";

export type RowStatus =
  | { kind: "ok" }
  | { kind: "unsupported"; reason: string }
  | { kind: "pending"; reason: string }
  | { kind: "error"; reason: string };

export interface Row {
  scenario: string;
  contender: string;
  status: RowStatus;
  blocks: Block[];
}

const BLOCK_TIMEOUT_MS = 180_000;

/** A call or block that made no progress: always an error, never "unsupported". */
export class HangError extends Error {
  override name = "HangError";
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
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

export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === "string" ? ` ${code}` : ""}: ${error.message}`.slice(0, 300);
  }
  return String(error).slice(0, 300);
}

/** Whether `contender` runs `scenario` at all, before anything connects. */
function admission(scenario: Scenario, contender: Contender): RowStatus {
  if (contender.pending) return { kind: "pending", reason: contender.pending };
  if (scenario.feature) {
    const support = contender.feature(scenario.feature);
    if (support !== true)
      return "pending" in support ? { kind: "pending", reason: support.pending } : { kind: "unsupported", reason: support.unsupported };
  }
  if (scenario.kind === "oneshot" && scenario.transport === "http" && !contender.httpBatch) {
    return { kind: "unsupported", reason: "no HTTP client in the contender" };
  }
  if (scenario.kind === "sequence" && scenario.payload) {
    const supported = contender.supports(scenario.payload);
    if (supported !== true) return { kind: "unsupported", reason: supported };
  }
  return { kind: "ok" };
}

/** Checks support and correctness once and warms up; returns a status for the row. */
async function prepare(ctx: RunContext, scenario: Scenario, contender: Contender, value: unknown): Promise<RowStatus> {
  const admitted = admission(scenario, contender);
  if (admitted.kind !== "ok") return admitted;
  if (scenario.kind === "oneshot" && scenario.transport === "http") {
    try {
      const results = await withTimeout(
        contender.httpBatch!(ctx.baseUrl, instanceName(ctx, scenario, contender, "-warm"), scenario.calls),
        60_000,
        "http",
      );
      return results.length === scenario.calls && results.every((r) => typeof r === "number")
        ? { kind: "ok" }
        : { kind: "unsupported", reason: `wrong result: ${JSON.stringify(results).slice(0, 80)}` };
    } catch (error) {
      return { kind: "error", reason: describeError(error) };
    }
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
      const wrong = await withTimeout(scenario.check?.(conn, value) ?? Promise.resolve(undefined), 120_000, "check");
      if (wrong) return { kind: "error", reason: wrong };
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

function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return "–";
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(0)} µs`;
}

function blockSummary(scenario: Scenario, block: Block): string {
  const sorted = [...block.latUs].sort((a, b) => a - b);
  const p50 = sorted[Math.max(0, Math.ceil(sorted.length / 2) - 1)] ?? NaN;
  const server =
    block.serverCpuUs !== undefined && block.callsMeasured > 0 ? `, server ${fmtUs(block.serverCpuUs / block.callsMeasured)}/call` : "";
  if (scenario.kind === "inflight" || scenario.kind === "clients") {
    return `${Math.round(block.calls / (block.wallNs / 1e9))} calls/s, p50 ${fmtUs(p50)}${server}`;
  }
  return `n=${block.latUs.length} p50 ${fmtUs(p50)}${server}`;
}

/** Runs one scenario for `contenders`, interleaved; returns one row per contender. */
export async function runScenario(
  ctx: RunContext,
  scenario: Scenario,
  contenders: readonly Contender[],
  counter: { done: number; total: number },
): Promise<Row[]> {
  const value = scenario.kind === "sequence" ? scenario.payload?.make() : undefined;
  const blocksPerRow = ctx.rounds * scenario.repeats;
  const rows: Row[] = [];
  for (const contender of contenders) {
    const status = await prepare(ctx, scenario, contender, value);
    rows.push({ scenario: scenario.id, contender: contender.name, status, blocks: [] });
    if (status.kind !== "ok") {
      ctx.progress(`${scenario.id} · ${contender.name} · ${status.kind}: ${status.reason}`);
      counter.done += blocksPerRow;
    }
  }
  for (let round = 0; round < ctx.rounds; round++) {
    for (let pass = 0; pass < scenario.repeats; pass++) {
      const order = (round * scenario.repeats + pass) % 2 === 0 ? contenders : [...contenders].reverse();
      let position = 0;
      for (const contender of order) {
        const row = rows.find((r) => r.contender === contender.name)!;
        if (row.status.kind !== "ok") continue;
        counter.done++;
        collect();
        const where = `[${String(counter.done).padStart(4)}/${counter.total}] ${scenario.id} · ${contender.name} · round ${round + 1}/${ctx.rounds}${scenario.repeats > 1 ? ` pass ${pass + 1}/${scenario.repeats}` : ""}`;
        try {
          const block = await withTimeout(
            runBlock(ctx, scenario, contender, value, round, pass),
            BLOCK_TIMEOUT_MS,
            `${scenario.id} ${contender.name}`,
          );
          block.position = position++;
          row.blocks.push(block);
          ctx.progress(`${where} · ${blockSummary(scenario, block)}`);
        } catch (error) {
          // The server itself is gone: every later block would fail too, so the run stops here.
          if (error instanceof ServerGoneError) throw error;
          row.status = { kind: "error", reason: describeError(error) };
          ctx.progress(`${where} · ERROR ${row.status.reason}`);
        }
      }
    }
  }
  collect();
  return rows;
}

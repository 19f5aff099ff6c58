/**
 * What every block shares: the block record, the run context, and one timed region that reads
 * wall time, client CPU, workerd's CPU and the wire counters at its start and end, always in the
 * same order, so that no block kind measures differently.
 */
import type { Contender } from "./contenders/index.js";
import type { Scenario } from "./scenarios.js";
import { type ServerCpuMeter, serverCpuDelta } from "./server-cpu.js";
import { type WireCounters, type WireSnapshot, wireDelta } from "./wire.js";

/** One block: one contender, one pass of one round, one timed region (or k connect samples). */
export interface Block {
  round: number;
  /** Pass within the round (0 … repeats − 1). */
  pass: number;
  /** Position in the pass's order (0 = first). */
  position: number;
  /** Latency samples in µs (per sample; a sample may be several calls). */
  latUs: number[];
  /** Handshake-only samples in µs (connect scenarios). */
  handshakeUs?: number[];
  /**
   * The scenario's reference call timed on the block's own connection, outside the timed region
   * (sequence scenarios with a `reference`), µs: what a ratio target divides by.
   */
  refUs?: number[];
  /** Calls completed in the timed region. */
  calls: number;
  /** The calls that latency, CPU and wire counts are divided by (= calls). */
  callsMeasured: number;
  /** Length of the timed region in ns (throughput: the window, ≈ the fixed duration). */
  wallNs: number;
  /** Client CPU (user + system) in µs during the timed region. */
  cpuUs: number;
  /** CPU of the Worker's workerd process during the timed region, µs (absent: not measurable here). */
  serverCpuUs?: number;
  /** CPU of wrangler dev's proxy workerd during the timed region, µs. */
  proxyCpuUs?: number;
  wire: WireSnapshot;
  /** The block's traffic did not go through counting sockets (HTTP): its wire counts are not measurements. */
  noWire?: true;
}

export type Progress = (line: string) => void;

export interface RunContext {
  baseUrl: string;
  rounds: number;
  /** Unique per run, part of every instance name. */
  tag: string;
  progress: Progress;
  /** workerd's CPU counters, or null where they cannot be read. */
  server: ServerCpuMeter | null;
}

declare const gc: ((options?: { type?: "minor" | "major"; execution?: "sync" | "async" }) => void) | undefined;

/**
 * Between blocks, never inside a timed region: empties the young generation (a scavenge), so the
 * garbage one block left is not collected in the next block's timed region. A minor collection
 * on purpose: after a forced major one (`gc()`), every contender's client spent about twice the
 * CPU per call for the next several hundred calls (docs/performance.md, "Round eight"), so a
 * block timed after it measured a client no long-running process is.
 */
export function collect(): void {
  if (typeof gc === "function") gc({ type: "minor" });
}

export function now(): bigint {
  return process.hrtime.bigint();
}

export function instanceName(ctx: RunContext, scenario: Scenario, contender: Contender, extra = ""): string {
  return `${scenario.id}-${contender.name}-${ctx.tag}${extra}`;
}

/** The sum of several sockets' counters (a block with many connections). */
export function sumWire(counters: readonly WireCounters[]): WireSnapshot {
  const total: WireSnapshot = { sentFrames: 0, sentBytes: 0, recvFrames: 0, recvBytes: 0 };
  for (const c of counters) {
    total.sentFrames += c.sentFrames;
    total.sentBytes += c.sentBytes;
    total.recvFrames += c.recvFrames;
    total.recvBytes += c.recvBytes;
  }
  return total;
}

export type RegionTotals = Pick<Block, "wallNs" | "cpuUs" | "serverCpuUs" | "proxyCpuUs" | "wire">;

/**
 * Starts a timed region. `end()` reads the clock first, then client CPU, then workerd's CPU,
 * then the wire counters, so the extra reads never count as wall time.
 */
export function startRegion(ctx: RunContext, counters: readonly WireCounters[]): { end(): RegionTotals } {
  const wire0 = sumWire(counters);
  const server0 = ctx.server?.read();
  const cpu0 = process.cpuUsage();
  const t0 = now();
  return {
    end() {
      const wallNs = Number(now() - t0);
      const cpu = process.cpuUsage(cpu0);
      const server = server0 && ctx.server ? serverCpuDelta(server0, ctx.server.read()) : undefined;
      return {
        wallNs,
        cpuUs: cpu.user + cpu.system,
        serverCpuUs: server?.workerUs,
        proxyCpuUs: server?.proxyUs,
        wire: wireDelta(wire0, sumWire(counters)),
      };
    },
  };
}

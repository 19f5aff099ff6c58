/**
 * One block of each scenario kind: a connection (or several) opened untimed, one timed region,
 * everything closed untimed. The feature kinds (fan-out, one-shot, ordering) are in
 * blocks-features.ts.
 */
import { fanoutBlock, oneshotBlock, orderingBlock } from "./blocks-features.js";
import type { Conn, Contender } from "./contenders/index.js";
import { type Block, collect, instanceName, now, type RunContext, type RegionTotals, startRegion } from "./region.js";
import type { ClientsScenario, ConnectScenario, InflightScenario, Scenario, SequenceScenario } from "./scenarios.js";
import { WireCounters } from "./wire.js";

export function block(
  round: number,
  pass: number,
  latUs: number[],
  calls: number,
  totals: RegionTotals,
  extra: Partial<Block> = {},
): Block {
  return { round, pass, position: 0, latUs, calls, callsMeasured: calls, ...totals, ...extra };
}

async function sequenceBlock(
  ctx: RunContext,
  s: SequenceScenario,
  contender: Contender,
  value: unknown,
  round: number,
  pass: number,
): Promise<Block> {
  const counters = new WireCounters();
  const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender), counters);
  try {
    for (let i = 0; i < s.warmupPerBlock; i++) await s.sample(conn, value);
    const reference = s.reference;
    const refFirst = reference !== undefined && pass % 2 === 1;
    const refUs = refFirst ? await timeReference(conn, reference, s.samplesPerBlock) : undefined;
    const lat = new Array<number>(s.samplesPerBlock);
    collect();
    const region = startRegion(ctx, [counters]);
    for (let i = 0; i < s.samplesPerBlock; i++) {
      const start = now();
      await s.sample(conn, value);
      lat[i] = Number(now() - start) / 1e3;
    }
    const totals = region.end();
    const ref = reference && !refFirst ? await timeReference(conn, reference, s.samplesPerBlock) : refUs;
    return block(round, pass, lat, s.samplesPerBlock * s.callsPerSample, totals, ref ? { refUs: ref } : {});
  } finally {
    await conn.close();
  }
}

/** `n` samples of a scenario's reference call on `conn` (warmed up by a few first), µs. */
async function timeReference(conn: Conn, reference: NonNullable<SequenceScenario["reference"]>, n: number): Promise<number[]> {
  for (let i = 0; i < 5; i++) await reference.sample(conn);
  const lat = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const start = now();
    await reference.sample(conn);
    lat[i] = Number(now() - start) / 1e3;
  }
  return lat;
}

async function connectBlock(ctx: RunContext, s: ConnectScenario, contender: Contender, round: number, pass: number): Promise<Block> {
  const lat: number[] = [];
  const handshake: number[] = [];
  const counters = new WireCounters();
  const totals: RegionTotals = { wallNs: 0, cpuUs: 0, wire: { sentFrames: 0, sentBytes: 0, recvFrames: 0, recvBytes: 0 } };
  collect();
  for (let i = 0; i < s.samplesPerBlock; i++) {
    const instance = instanceName(ctx, s, contender, s.newInstance ? `-r${round}-p${pass}-${i}` : "");
    // Only the connect is timed; the close after it is not, so each sample is its own region.
    const region = startRegion(ctx, [counters]);
    const connected = await contender.connect(ctx.baseUrl, instance, counters);
    const part = region.end();
    totals.wallNs += part.wallNs;
    totals.cpuUs += part.cpuUs;
    if (part.serverCpuUs !== undefined) totals.serverCpuUs = (totals.serverCpuUs ?? 0) + part.serverCpuUs;
    if (part.proxyCpuUs !== undefined) totals.proxyCpuUs = (totals.proxyCpuUs ?? 0) + part.proxyCpuUs;
    lat.push(connected.totalNs / 1e3);
    handshake.push(connected.handshakeNs / 1e3);
    await connected.conn.close();
  }
  // Counted bytes include the close of each connection; close frames are control frames and are not counted.
  totals.wire = counters.snapshot();
  return block(round, pass, lat, s.samplesPerBlock, totals, { handshakeUs: handshake });
}

/**
 * Closed loops on `conns` (each with `perConn` calls outstanding). The loops run `warmMs` before
 * the window opens, so the window sees the steady state, not the pipeline filling. The window
 * opens at the first completion after the warm period and closes at the first completion
 * `durationMs` later; throughput = completions inside ÷ the window's exact length, and latency,
 * CPU and wire counts cover the calls completed inside it.
 */
async function closedLoop(
  ctx: RunContext,
  conns: Conn[],
  counters: WireCounters[],
  perConn: number,
  durationMs: number,
  warmMs: number,
  round: number,
  pass: number,
): Promise<Block> {
  const lat: number[] = [];
  let stop = false;
  collect();
  const warmUntil = now() + BigInt(warmMs) * 1_000_000n;
  let windowStart = 0n;
  let windowEnd = 0n;
  let closedAt = 0n;
  let region: ReturnType<typeof startRegion> | undefined;
  let totals: RegionTotals | undefined;
  const loop = async (conn: Conn) => {
    while (!stop) {
      const start = now();
      await conn.increment();
      const end = now();
      if (windowStart === 0n) {
        if (end >= warmUntil) {
          windowStart = end;
          windowEnd = end + BigInt(durationMs) * 1_000_000n;
          region = startRegion(ctx, counters);
        }
        continue;
      }
      if (closedAt !== 0n) continue;
      if (end > windowEnd) {
        closedAt = end;
        totals = region!.end();
        stop = true;
        continue;
      }
      lat.push(Number(end - start) / 1e3);
    }
  };
  const loops: Promise<void>[] = [];
  for (const conn of conns) for (let i = 0; i < perConn; i++) loops.push(loop(conn));
  await Promise.all(loops);
  return block(round, pass, lat, lat.length, { ...totals!, wallNs: Number(closedAt - windowStart) });
}

async function inflightBlock(ctx: RunContext, s: InflightScenario, contender: Contender, round: number, pass: number): Promise<Block> {
  const counters = new WireCounters();
  const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender), counters);
  try {
    await Promise.all(Array.from({ length: s.inFlight }, () => conn.increment()));
    return await closedLoop(ctx, [conn], [counters], s.inFlight, s.durationMs, s.warmMs, round, pass);
  } finally {
    await conn.close();
  }
}

/** Opens `instances.length` connections, 16 at a time (untimed), each with its own counters. */
export async function connectMany(
  ctx: RunContext,
  contender: Contender,
  instances: string[],
): Promise<{ conns: Conn[]; counters: WireCounters[] }> {
  const conns: Conn[] = [];
  const counters: WireCounters[] = [];
  try {
    for (let i = 0; i < instances.length; i += 16) {
      const batch = await Promise.all(
        instances.slice(i, i + 16).map(async (instance) => {
          const wire = new WireCounters();
          const { conn } = await contender.connect(ctx.baseUrl, instance, wire);
          return { conn, wire };
        }),
      );
      for (const { conn, wire } of batch) {
        conns.push(conn);
        counters.push(wire);
      }
    }
  } catch (error) {
    await Promise.all(conns.map((conn) => conn.close().catch(() => {})));
    throw error;
  }
  return { conns, counters };
}

async function clientsBlock(ctx: RunContext, s: ClientsScenario, contender: Contender, round: number, pass: number): Promise<Block> {
  const instances: string[] = [];
  for (let d = 0; d < s.dos; d++) for (let c = 0; c < s.clientsPerDO; c++) instances.push(instanceName(ctx, s, contender, `-do${d}`));
  const { conns, counters } = await connectMany(ctx, contender, instances);
  try {
    await Promise.all(conns.map((conn) => conn.increment()));
    return await closedLoop(ctx, conns, counters, 1, s.durationMs, s.warmMs, round, pass);
  } finally {
    await Promise.all(conns.map((conn) => conn.close()));
  }
}

export function runBlock(
  ctx: RunContext,
  scenario: Scenario,
  contender: Contender,
  value: unknown,
  round: number,
  pass: number,
): Promise<Block> {
  switch (scenario.kind) {
    case "sequence":
      return sequenceBlock(ctx, scenario, contender, value, round, pass);
    case "connect":
      return connectBlock(ctx, scenario, contender, round, pass);
    case "inflight":
      return inflightBlock(ctx, scenario, contender, round, pass);
    case "clients":
      return clientsBlock(ctx, scenario, contender, round, pass);
    case "fanout":
      return fanoutBlock(ctx, scenario, contender, round, pass);
    case "oneshot":
      return oneshotBlock(ctx, scenario, contender, round, pass);
    case "ordering":
      return orderingBlock(ctx, scenario, contender, round, pass);
  }
}

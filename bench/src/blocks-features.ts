/**
 * Blocks of the feature scenarios: fan-out to many listeners, one-shot clients, and fast calls
 * behind a slow one. Same rules as blocks.ts: setup and teardown untimed, one timed region.
 */
import { block, connectMany } from "./blocks.js";
import type { Conn, Contender } from "./contenders/index.js";
import { type Block, collect, instanceName, now, type RunContext, startRegion } from "./region.js";
import type { FanoutScenario, OneshotScenario, OrderingScenario } from "./scenarios.js";
import { WireCounters } from "./wire.js";

/** Resolves when every listener has received message `seq`; records when the last one did. */
class Arrivals {
  #seq = -1;
  #left = 0;
  #done: (() => void) | undefined;
  lastAt = 0n;

  expect(seq: number, listeners: number): Promise<void> {
    this.#seq = seq;
    this.#left = listeners;
    return new Promise((resolve) => (this.#done = resolve));
  }

  arrived(message: string): void {
    if (Number(message) !== this.#seq || this.#left === 0) return;
    if (--this.#left === 0) {
      this.lastAt = now();
      this.#done?.();
    }
  }
}

/**
 * One caller and `recipients` listeners on a fresh object (per round and pass, so no listener of
 * an earlier block is still registered). A sample is the time from calling fanOut(i) until the
 * last listener has message i; the caller's own reply is awaited too before the next sample.
 * Server CPU is reported per call; the report divides it by the recipients.
 */
export async function fanoutBlock(ctx: RunContext, s: FanoutScenario, contender: Contender, round: number, pass: number): Promise<Block> {
  const instance = instanceName(ctx, s, contender, `-r${round}-p${pass}`);
  const { conns, counters } = await connectMany(
    ctx,
    contender,
    Array.from({ length: s.recipients + 1 }, () => instance),
  );
  const [caller, ...listeners] = conns as [Conn, ...Conn[]];
  try {
    const arrivals = new Arrivals();
    await Promise.all(listeners.map((conn) => conn.listen!((message) => arrivals.arrived(message))));
    const send = async (seq: number) => {
      const all = arrivals.expect(seq, listeners.length);
      await Promise.all([caller.fanOut!(String(seq)), all]);
    };
    for (let i = 0; i < 3; i++) await send(-(i + 10));
    const lat = new Array<number>(s.samplesPerBlock);
    collect();
    const region = startRegion(ctx, counters);
    for (let i = 0; i < s.samplesPerBlock; i++) {
      const start = now();
      await send(i);
      lat[i] = Number(arrivals.lastAt - start) / 1e3;
    }
    return block(round, pass, lat, s.samplesPerBlock, region.end());
  } finally {
    await Promise.all(conns.map((conn) => conn.close()));
  }
}

/**
 * A client that comes, makes `calls` getValue() calls, and goes: over HTTP one new request
 * (`httpBatch`), over a WebSocket a new connection (whose first call is the first getValue) plus
 * the other calls at once. A sample ends at the last result; the WebSocket's close follows,
 * outside the sample but inside the block's CPU and wire totals.
 */
export async function oneshotBlock(ctx: RunContext, s: OneshotScenario, contender: Contender, round: number, pass: number): Promise<Block> {
  const instance = instanceName(ctx, s, contender);
  const counters = new WireCounters();
  const lat: number[] = [];
  collect();
  const region = startRegion(ctx, [counters]);
  for (let i = 0; i < s.samplesPerBlock; i++) {
    const start = now();
    if (s.transport === "http") {
      await contender.httpBatch!(ctx.baseUrl, instance, s.calls);
      lat.push(Number(now() - start) / 1e3);
    } else {
      const { conn } = await contender.connect(ctx.baseUrl, instance, counters);
      if (s.calls > 1) await Promise.all(Array.from({ length: s.calls - 1 }, () => conn.getValue()));
      lat.push(Number(now() - start) / 1e3);
      // Leaving is part of a one-shot client's cost (CPU, frames), not of its latency.
      await conn.close();
    }
  }
  return block(round, pass, lat, s.samplesPerBlock * s.calls, region.end(), s.transport === "http" ? { noWire: true } : {});
}

/**
 * slow(slowMs) is sent, then `fastCalls` getValue() calls right behind it (same tick); each fast
 * call's latency is one sample. With sequential ordering a fast call waits for the slow one;
 * with concurrent ordering it does not. The slow call is awaited before the next sample.
 */
export async function orderingBlock(
  ctx: RunContext,
  s: OrderingScenario,
  contender: Contender,
  round: number,
  pass: number,
): Promise<Block> {
  const counters = new WireCounters();
  const { conn } = await contender.connect(ctx.baseUrl, instanceName(ctx, s, contender), counters);
  try {
    await conn.slow(1);
    const lat: number[] = [];
    collect();
    const region = startRegion(ctx, [counters]);
    for (let i = 0; i < s.samplesPerBlock; i++) {
      const slow = conn.slow(s.slowMs);
      const fast = Array.from({ length: s.fastCalls }, () => {
        const start = now();
        return conn.getValue().then(() => Number(now() - start) / 1e3);
      });
      lat.push(...(await Promise.all(fast)));
      await slow;
    }
    return block(round, pass, lat, s.samplesPerBlock * (1 + s.fastCalls), region.end());
  } finally {
    await conn.close();
  }
}

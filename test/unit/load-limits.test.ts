/**
 * Many calls made in one turn against the limits (unit tier, in-memory pair with the real
 * dispatcher): 10,000 calls, 1,000 calls running at once, thousands of calls mixed with big
 * strings, byte arrays and Blobs, some over the receiver's `maxMessageBytes` either way, and
 * concurrent calls that each carry a function past `maxImports` / `maxExports`. Every call
 * settles, with its own answer or LIMIT; only the calls over a limit fail; the others run once,
 * in the order they were made; the connection stays; references held for refused calls are given
 * back. (frame-cuts-mixed.test.ts has seeded mixes of up to 600 calls; references-over-time.test.ts
 * has the single calls past maxImports and maxExports.)
 */
import { describe, expect, it, vi } from "vitest";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { createRpcClient, RpcError } from "../../packages/rpc/src/index.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { pairWith } from "../support/paired-transport.js";

/** What each call settled with: its value, or the code of the RpcError it rejected with. */
async function settled(calls: Promise<unknown>[]): Promise<unknown[]> {
  const outcomes = await Promise.allSettled(calls);
  return outcomes.map((o) => (o.status === "fulfilled" ? o.value : RpcError.is(o.reason) ? o.reason.code : String(o.reason)));
}

/** Records the calls it runs, in order. */
class Recorder {
  order: number[] = [];
  running = 0;
  mostRunning = 0;
  rec(i: number, _padding?: unknown): number {
    this.order.push(i);
    return i;
  }
  async slowRec(i: number): Promise<number> {
    this.order.push(i);
    this.mostRunning = Math.max(this.mostRunning, ++this.running);
    await new Promise((resolve) => setTimeout(resolve, 1));
    this.running--;
    return i;
  }
  /** A string of `n` characters, or `i` when `n` is 0. */
  make(i: number, n: number): string | number {
    return n > 0 ? "q".repeat(n) : i;
  }
  /** Holds a function passed to it for a moment: it counts among the object's imports meanwhile. */
  async holdFunction(fn: unknown): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return typeof fn;
  }
  takeFunction(fn: unknown): string {
    return typeof fn;
  }
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("many calls in one turn", () => {
  it("10,000 calls (client maxPendingCalls 20,000): each answered with its own value, run in the order made, frames of at most 256", {
    timeout: 60_000,
  }, async () => {
    const target = new Recorder();
    const paired = pairWith(target);
    using client = createRpcClient<Recorder>("R", "load-10k", {
      transport: paired.factory,
      limits: { maxPendingCalls: 20_000 },
      timeout: 60_000,
    });
    const calls = upTo(10_000).map((i) => client.rec(i));
    expect(await settled(calls)).toEqual(upTo(10_000));
    expect(target.order).toEqual(upTo(10_000));
    const frames = paired.connections[0]!.sentByClient.map((frame) => (readFrame(frame, DEFAULT_LIMITS)!.body as unknown[]).length);
    expect(Math.max(...frames)).toBeLessThanOrEqual(256);
    expect(frames.reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it("1,000 async calls, running at once (within the object's maxPendingCalls, 1,024): none refused", async () => {
    const target = new Recorder();
    using client = createRpcClient<Recorder>("R", "load-async", { transport: pairWith(target).factory, timeout: 60_000 });
    expect(await settled(upTo(1000).map((i) => client.slowRec(i)))).toEqual(upTo(1000));
    expect(target.order).toEqual(upTo(1000));
    // A frame's async calls start one event-loop turn apart (as native calls arrive, call-turns.ts),
    // each while the ones before it still await: many run at once, none refused.
    expect(target.mostRunning).toBeGreaterThan(1);
  });

  it("3,000 calls, some with 70 KB strings, 30 KB Blobs or 100 KB byte arrays: each answered, run in the order made", {
    timeout: 60_000,
  }, async () => {
    const target = new Recorder();
    using client = createRpcClient<Recorder>("R", "load-mix", {
      transport: pairWith(target).factory,
      limits: { maxPendingCalls: 5000 },
      timeout: 60_000,
    });
    const calls = upTo(3000).map((i) =>
      i % 97 === 5
        ? client.rec(i, "x".repeat(70_000 + i))
        : i % 131 === 7
          ? client.rec(i, new Blob([new Uint8Array(30_000 + i)]))
          : i % 211 === 3
            ? client.rec(i, new Uint8Array(100_000))
            : client.rec(i),
    );
    expect(await settled(calls)).toEqual(upTo(3000));
    expect(target.order).toEqual(upTo(3000));
  });
});

describe("calls and answers over maxMessageBytes among many", () => {
  it("the object's limit of 100,000: of 2,000 calls, those with 150 KB of text, bytes or a Blob are LIMIT and not run; the rest run in order", {
    timeout: 60_000,
  }, async () => {
    const target = new Recorder();
    const paired = pairWith(target, { limits: { maxMessageBytes: 100_000 } });
    using client = createRpcClient<Recorder>("R", "load-over-object", {
      transport: paired.factory,
      limits: { maxPendingCalls: 5000 },
      timeout: 30_000,
    });
    const big = new Set<number>();
    const calls = upTo(2000).map((i) => {
      if (i % 101 === 3) return (big.add(i), client.rec(i, "y".repeat(150_000)));
      if (i % 103 === 5) return (big.add(i), client.rec(i, new Uint8Array(150_000)));
      if (i % 107 === 7) return (big.add(i), client.rec(i, new Blob([new Uint8Array(150_000)])));
      if (i % 109 === 9) return client.rec(i, "z".repeat(90_000)); // within the limit
      return client.rec(i);
    });
    expect(await settled(calls)).toEqual(upTo(2000).map((i) => (big.has(i) ? "LIMIT" : i)));
    expect(target.order).toEqual(upTo(2000).filter((i) => !big.has(i)));
    expect(paired.connections).toHaveLength(1);
  });

  it("the client's limit of 100,000: of 1,000 answers, those of 150 KB are LIMIT; 60 KB ones and the rest are answered", {
    timeout: 60_000,
  }, async () => {
    const paired = pairWith(new Recorder());
    using client = createRpcClient<Recorder>("R", "load-over-client", {
      transport: paired.factory,
      limits: { maxMessageBytes: 100_000 },
      timeout: 30_000,
    });
    const size = (i: number) => (i % 50 === 1 ? 150_000 : i % 50 === 2 ? 60_000 : 0);
    const results = await settled(upTo(1000).map((i) => client.make(i, size(i))));
    expect(results.map((r) => (typeof r === "string" && r !== "LIMIT" ? r.length : r))).toEqual(
      upTo(1000).map((i) => (size(i) === 150_000 ? "LIMIT" : size(i) || i)),
    );
    expect(paired.connections).toHaveLength(1);
  });
});

describe("functions carried by concurrent calls, past maxImports and maxExports", () => {
  it("the object's maxImports 2: calls that each hold a function, four at once: the 3rd and 4th are LIMIT, and every import is given back", async () => {
    const paired = pairWith(new Recorder(), { limits: { maxImports: 2 } });
    using client = createRpcClient<Recorder>("R", "load-imports", { transport: paired.factory });
    // Calls that do not keep their function give it back when they return: three in a row pass.
    expect(await settled([() => 1, () => 2, () => 3].map((f) => client.takeFunction(f)))).toEqual(["function", "function", "function"]);
    expect(await settled([() => 4, () => 5, () => 6, () => 7].map((f) => client.holdFunction(f)))).toEqual([
      "function",
      "function",
      "LIMIT",
      "LIMIT",
    ]);
    await vi.waitFor(() => expect(paired.connections[0]!.server()!.imports.size).toBe(0));
    expect(await client.holdFunction(() => 8)).toBe("function");
  });

  it("the client's maxExports 100: 300 calls at once, each passing a new function: 100 run, 200 are LIMIT; then 100 more run", async () => {
    const paired = pairWith(new Recorder());
    using client = createRpcClient<Recorder>("R", "load-exports", { transport: paired.factory, limits: { maxExports: 100 } });
    const first = await settled(upTo(300).map((i) => client.holdFunction(() => i)));
    expect({ run: first.filter((r) => r === "function").length, refused: first.filter((r) => r === "LIMIT").length }).toEqual({
      run: 100,
      refused: 200,
    });
    // Each function is given back once its call ended: on the object, then on the client.
    await vi.waitFor(() =>
      expect({ imports: paired.connections[0]!.server()!.imports.size, exports: getRpcSession(client).exports.size }).toEqual({
        imports: 0,
        exports: 0,
      }),
    );
    expect(await settled(upTo(100).map((i) => client.holdFunction(() => i)))).toEqual(Array(100).fill("function"));
  });
});

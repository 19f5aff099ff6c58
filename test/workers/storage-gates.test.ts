/**
 * dorpc calls and the runtime's input gate. Native Durable Object calls arrive as separate
 * events, and the input gate delivers none while a storage operation is pending, so a method
 * that reads with `await storage.get(…)` and then writes is not interleaved at that read. dorpc
 * sends calls made in the same microtask in one frame, one event; with concurrent ordering (the
 * default) they now start as separate native calls would: after a call that awaits, the next
 * starts in a later event, which the gate holds while the storage read is pending
 * (packages/rpc/src/call-turns.ts; docs/reliability.md, Ordering).
 *
 * Written from review probes. The first failed before its fix: 20 such increments sent in one
 * frame all read the same count and all answered 1, where native RPC answers 1..20. The others
 * passed: many clients' increments lose none, and `blockConcurrencyWhile` holds every client's
 * calls until it ends.
 */
import { createTestClient, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter, KvCounter } from "./objects.js";

/** 1..n */
const upTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

/** Makes `count` calls in one microtask (dorpc sends them in one frame) and awaits them all. */
function together<T>(count: number, call: () => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, call));
}

describe("async read-modify-write methods (KV_COUNTER: await storage.get, then put) under concurrent ordering", { timeout: 30_000 }, () => {
  it("20 increments sent in one frame answer 1..20, as the same 20 calls over native RPC do", async () => {
    const native = env.KV_COUNTER.getByName(uniqueName("gates-native"));
    const name = uniqueName("gates-one");
    using client = createTestClient<KvCounter>(env.KV_COUNTER, name);
    const answers = {
      native: await together(20, () => native.increment(1)),
      dorpc: await together(20, () => client.increment(1)),
      storedCount: await env.KV_COUNTER.getByName(name).increment(0),
    };
    expect(answers).toEqual({ native: upTo(20), dorpc: upTo(20), storedCount: 20 });
  });

  it("5 clients sending 20 increments each: none lost, each answer given once, each client's answers rising", async () => {
    const name = uniqueName("gates-many");
    const clients = Array.from({ length: 5 }, () => createTestClient<KvCounter>(env.KV_COUNTER, name));
    try {
      const perClient = await Promise.all(clients.map((client) => together(20, () => client.increment(1))));
      const all = perClient.flat().sort((a, b) => a - b);
      expect(all, "every count from 1 to 100 answered once").toEqual(upTo(100));
      const notRising = perClient.filter((mine) => mine.some((value, i) => i > 0 && value <= mine[i - 1]!));
      expect(notRising, "clients whose answers did not rise in the order of their calls").toEqual([]);
      expect(await env.KV_COUNTER.getByName(name).increment(0)).toBe(100);
    } finally {
      for (const client of clients) client[Symbol.dispose]();
    }
  });
});

describe("blockConcurrencyWhile in the object", { timeout: 30_000 }, () => {
  it.each([
    ["concurrent", env.COUNTER],
    ["sequential", env.MY_COUNTER],
  ] as const)("%s ordering: holds the calls of every client until it ends; each client's calls run in order", async (label, namespace) => {
    const name = uniqueName(`gates-bcw-${label}`);
    using a = createTestClient<Counter>(namespace, name);
    using b = createTestClient<Counter>(namespace, name);
    expect([await a.getValue(), await b.getValue()]).toEqual([0, 0]); // both connected
    // The block (run inside the object, in this isolate) waits until the calls below are made,
    // then long enough for their frames to reach the object, where it holds them.
    const progress = { blocking: false, callsMade: false };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const blocking = runInObject(a, (_obj, state) =>
      state.blockConcurrencyWhile(async () => {
        progress.blocking = true;
        for (let i = 0; i < 1000 && !progress.callsMade; i++) await sleep(5);
        await sleep(200);
        state.storage.kv.put("count", 1000);
      }),
    );
    await vi.waitFor(() => expect(progress.blocking, "the block has started").toBe(true));
    const calls = Promise.all([a.increment(1), b.increment(10), a.increment(2), b.increment(20)]);
    progress.callsMade = true;
    await blocking;
    const [a1, b10, a2, b20] = await calls;
    const values = `a: ${a1}, ${a2}; b: ${b10}, ${b20}`;
    expect(Math.min(a1, b10, a2, b20), `a call ran before the block ended (${values})`).toBeGreaterThan(1000);
    expect(a2, `a's calls ran out of order (${values})`).toBeGreaterThan(a1);
    expect(b20, `b's calls ran out of order (${values})`).toBeGreaterThan(b10);
    expect(await a.getValue()).toBe(1033);
  });
});

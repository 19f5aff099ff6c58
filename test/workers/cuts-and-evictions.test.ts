/**
 * Exactly once and topics over time, under cuts and evictions: calls and events across
 * drops and evictions are neither lost nor doubled.
 */
import { rpcConnection, type RpcError, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Counter } from "./objects.js";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function member(room: string, name: string, options: RpcClientOptions = {}) {
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: { message: () => undefined, confirm: () => true, slow: async () => "x" } satisfies RoomClient,
    ...options,
  });
  return { client, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("regression: calls across drops and evictions", () => {
  it("bursts of increments, cut after every third reply frame and evicted now and then, are each run and answered once", async () => {
    for (const namespace of [env.COUNTER, env.MY_COUNTER] as DurableObjectNamespace<Counter>[]) {
      using c = createTestClient<Counter>(namespace, uniqueName("eo-ledger"));
      await c.getValue();
      const results: number[] = [];
      const errors: unknown[] = [];
      let replyFrames = 0;
      const cutAfterReplies = () =>
        testConnection(c).socket?.addEventListener("message", (event) => {
          if (typeof event.data === "string" && event.data.startsWith("\u001eR") && ++replyFrames % 3 === 0) {
            if (testConnection(c).socket) dropConnection(c);
          }
        });
      rpcConnection(c).onStateChange((state) => state === "open" && cutAfterReplies());
      cutAfterReplies();
      const all: Promise<void>[] = [];
      for (let round = 0; round < 20; round++) {
        for (let k = 0; k < 3; k++) {
          all.push(
            (round % 2 ? c.incrementSoon(1) : c.increment(1)).then(
              (v) => void results.push(v),
              (e) => void errors.push(e),
            ),
          );
        }
        await sleep(round % 4);
        if (round % 7 === 6 && rpcConnection(c).state === "open") await evictObject(c, { webSockets: round % 2 ? "close" : "hibernate" });
      }
      await Promise.all(all);
      expect(errors).toEqual([]);
      expect(results.sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(await c.getValue()).toBe(60);
      expect(testConnection(c).attempts.length).toBeGreaterThan(3); // it was cut several times
    }
  });

  it("a call made while reconnecting, then the client disposed: DISPOSED, and it never runs", async () => {
    const name = uniqueName("eo-disposed");
    const c = createTestClient<Counter>(env.COUNTER, name, { reconnect: { initialDelay: 200, maxDelay: 200, jitter: 0 } });
    await c.increment();
    dropConnection(c);
    const queued = c.increment(5).then(
      () => undefined,
      (e: unknown) => e,
    );
    await sleep(10);
    c[Symbol.dispose]();
    expect(((await queued) as RpcError).code).toBe("DISPOSED");
    using d = createTestClient<Counter>(env.COUNTER, name);
    await sleep(300);
    expect(await d.getValue()).toBe(1);
  });
});

describe("regression: topics across drops and evictions", () => {
  it("events published while a subscriber reconnects, over many drops and evictions, arrive once each, in order", async () => {
    const room = uniqueName("eo-many");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq), { onResync: () => void seen.push(-1) });
    await sub.ready;
    let n = 0;
    for (let round = 0; round < 6; round++) {
      await a.client.post(`m${++n}`);
      dropConnection(b.client);
      await a.client.post(`m${++n}`);
      if (round % 2) await evictObject(a.client);
      await waitForState(b.client, "open");
      await a.client.post(`m${++n}`);
    }
    await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(n));
    await b.client.connected();
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it("two subscriptions of one client across an eviction that closes the socket", async () => {
    const room = uniqueName("eo-two");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const chat: number[] = [];
    const ticks: number[] = [];
    using s1 = subscribe(b.client, "chat", (_e, info) => void chat.push(info.seq));
    using s2 = subscribe(b.client, "ticks", (_e, info) => void ticks.push(info.seq));
    await Promise.all([s1.ready, s2.ready]);
    await a.client.post("x");
    await evictObject(b.client, { webSockets: "close" });
    await a.client.post("y");
    await waitForState(b.client, "open");
    await a.client.post("z");
    await vi.waitFor(() => expect(chat).toEqual([1, 2, 3]));
    expect(ticks).toEqual([]);
  });

  it("closed while its replay is on the way, then subscribed again from a cursor", async () => {
    const room = uniqueName("eo-unsub");
    using a = member(room, "ann");
    for (let i = 1; i <= 5; i++) await a.client.post(`m${i}`);
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const first: number[] = [];
    subscribe(b.client, "chat", (_e, info) => void first.push(info.seq), { since: 0 }).close();
    const second: number[] = [];
    using s2 = subscribe(b.client, "chat", (_e, info) => void second.push(info.seq), { since: 3 });
    await s2.ready;
    await a.client.post("m6");
    await vi.waitFor(() => expect(second).toEqual([4, 5, 6]));
    expect(first).toEqual([]);
  });
});

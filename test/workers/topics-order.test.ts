/**
 * Topic events around subscribe replies, replays, reconnects and evictions: none lost, repeated
 * or out of order (docs/api.md, subscribe). Written from review probes; two of them failed
 * before their fixes: a subscription closed and replaced by one with an older `since` (the
 * closed one's events moved the new one's cursor past the events it asked for, which it then
 * dropped as seen), and a client whose `limits.maxPendingCalls` is below the 256 envelopes of
 * a frame (it refused every replay frame, and the subscription never became ready).
 */
import { rpcConnection, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, type TestClient, dropConnection, evictObject, runInObject, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

function member(room: string, name: string, options: RpcClientOptions = {}) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: { message: () => undefined, confirm: () => true, slow: async () => "x" } satisfies RoomClient,
    onError: (error) => errors.push(error),
    ...options,
  });
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** A new room where ann has posted "one", and bob, connected: the client under test. */
async function afterAnnsPost(prefix: string) {
  const room = uniqueName(prefix);
  const a = member(room, "ann");
  await a.client.post("one");
  const b = member(room, "bob");
  await b.client.connected();
  return {
    b,
    [Symbol.dispose]() {
      b[Symbol.dispose]();
      a[Symbol.dispose]();
    },
  };
}

/** Publishes events 1..`count` on the room's "ticks" topic, from inside the object. */
function publishTicks(client: TestClient<Room>, count: number): Promise<void> {
  return runInObject(client, (obj) => {
    for (let i = 1; i <= count; i++) rpcPublish(obj, "ticks", i);
  });
}

describe("topic events in order around replies, replays and reconnects", () => {
  it("subscribe (no since) then post in the same turn: the subscriber gets the post", async () => {
    using t = await afterAnnsPost("p8-same-frame");
    const { b } = t;
    const seen: [number, string][] = [];
    using sub = subscribe(b.client, "chat", (e, info) => void seen.push([info.seq, e.text]));
    const posted = b.client.post("two");
    await Promise.all([sub.ready, posted]);
    await b.client.connected();
    expect(seen).toEqual([[2, "two"]]);
  });

  it("subscribe (no since) then runInObject publish in the same turn: delivered", async () => {
    using t = await afterAnnsPost("p8-same-frame2");
    const { b } = t;
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq));
    const p = runInObject(b.client, (obj) => void rpcPublish(obj, "chat", { from: "s", text: "2" }));
    await Promise.all([sub.ready, p]);
    await b.client.connected();
    expect(seen).toEqual([2]);
  });

  it("two topics replayed in one turn, with live events in between: each in order, none lost", async () => {
    const room = uniqueName("p8-two-topics");
    using a = member(room, "ann");
    await runInObject(a.client, (obj) => {
      for (let i = 1; i <= 300; i++) {
        rpcPublish(obj, "ticks", i);
        if (i <= 5) rpcPublish(obj, "news", `n${i}`);
      }
    });
    using b = member(room, "bob");
    await b.client.connected();
    const ticks: number[] = [];
    const news: number[] = [];
    using s1 = subscribe(b.client, "ticks", (_e, info) => void ticks.push(info.seq), { since: 0 });
    using s2 = subscribe(b.client, "news", (_e, info) => void news.push(info.seq), { since: 2 });
    const p = runInObject(b.client, (obj) => {
      rpcPublish(obj, "ticks", 301);
      rpcPublish(obj, "news", "n6");
    });
    await Promise.all([s1.ready, s2.ready, p]);
    await b.client.connected();
    expect(news).toEqual([3, 4, 5, 6]);
    expect(ticks).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
  });

  it("more than 256 missed events, some bigger than 64 KiB, some with bytes: all replayed in order", { timeout: 20_000 }, async () => {
    const room = uniqueName("p8-big");
    using a = member(room, "ann");
    const big = "x".repeat(70 * 1024);
    await runInObject(a.client, (obj) => {
      for (let i = 1; i <= 600; i++) {
        const v = i % 97 === 0 ? { big, i } : i % 13 === 0 ? { bytes: new Uint8Array(70 * 1024).fill(i % 256), i } : i;
        rpcPublish(obj, "ticks", v as never);
      }
    });
    using b = member(room, "bob");
    await b.client.connected();
    const seen: number[] = [];
    using sub = subscribe(b.client, "ticks", (_e, info) => void seen.push(info.seq), { since: 10 });
    const blob = b.client.blob("b").then((x) => x.text());
    await Promise.all([sub.ready, blob]);
    await b.client.connected();
    expect(b.errors).toEqual([]);
    expect(seen).toEqual(Array.from({ length: 590 }, (_, i) => i + 11));
  });

  it("live events alternating bytes / no bytes while a Blob reply waits: in order", { timeout: 10_000 }, async () => {
    const room = uniqueName("p8-live-mix");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: number[] = [];
    using sub = subscribe(b.client, "ticks", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    const blob = b.client.blob("bb");
    const p = runInObject(a.client, (obj) => {
      for (let i = 1; i <= 20; i++) rpcPublish(obj, "ticks", (i % 2 ? i : { bytes: new Uint8Array([i]) }) as never);
    });
    await Promise.all([blob, p]);
    await vi.waitFor(() => expect(seen.length).toBe(20));
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("close then subscribe again with the cursor in the same turn: no event lost or repeated", async () => {
    const room = uniqueName("p8-reopen");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: number[] = [];
    const s1 = subscribe(b.client, "ticks", (_e, info) => void seen.push(info.seq), { since: 0 });
    await s1.ready;
    await publishTicks(a.client, 5);
    await vi.waitFor(() => expect(seen.length).toBe(5));
    const cursor = s1.cursor;
    s1.close();
    using s2 = subscribe(b.client, "ticks", (_e, info) => void seen.push(info.seq), { since: cursor });
    const p = runInObject(a.client, (obj) => void rpcPublish(obj, "ticks", 6));
    await Promise.all([s2.ready, p]);
    await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(6));
    await b.client.connected();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("events published while a subscriber is away and the object is evicted: replayed after reconnect", async () => {
    const room = uniqueName("p8-evict");
    using a = member(room, "ann");
    using b = member(room, "bob", { reconnect: { initialDelay: 200, maxDelay: 200, jitter: 0 } });
    const seen: number[] = [];
    using sub = subscribe(b.client, "ticks", (_e, info) => void seen.push(info.seq), { since: 0 });
    await sub.ready;
    await runInObject(a.client, (obj) => void rpcPublish(obj, "ticks", 1));
    await vi.waitFor(() => expect(seen).toEqual([1]));
    dropConnection(b.client);
    await runInObject(a.client, (obj) => {
      for (let i = 2; i <= 4; i++) rpcPublish(obj, "ticks", i);
    });
    await evictObject(a.client);
    await runInObject(a.client, (obj) => void rpcPublish(obj, "ticks", 5));
    await waitForState(b.client, "open");
    await runInObject(a.client, (obj) => void rpcPublish(obj, "ticks", 6));
    await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(6));
    await b.client.connected();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b.errors).toEqual([]);
  });

  it("since exactly latest, and since beyond latest", async () => {
    const room = uniqueName("p8-since-edges");
    using a = member(room, "ann");
    await publishTicks(a.client, 3);
    using b = member(room, "bob");
    const s1seen: number[] = [];
    const s2seen: number[] = [];
    const resyncs: unknown[] = [];
    using s1 = subscribe(b.client, "ticks", (_e, info) => void s1seen.push(info.seq), { since: 3, onResync: (i) => resyncs.push(i) });
    using s2 = subscribe(b.client, "news", (_e, info) => void s2seen.push(info.seq), { since: 9, onResync: (i) => resyncs.push(i) });
    await Promise.all([s1.ready, s2.ready]);
    await runInObject(a.client, (obj) => {
      rpcPublish(obj, "ticks", 4);
      rpcPublish(obj, "news", "n1");
    });
    await vi.waitFor(() => expect(s1seen.length + s2seen.length).toBe(2));
    expect({ s1seen, s2seen, resyncs }).toEqual({
      s1seen: [4],
      s2seen: [1],
      resyncs: [{ topic: "news", cursor: 9, oldest: 0, latest: 0 }],
    });
  });
  it("a drop after the first frame of a 600-event replay: the rest replayed on the new connection, once, in order", {
    timeout: 10_000,
  }, async () => {
    const room = uniqueName("p8-drop-mid-replay");
    using a = member(room, "ann");
    await publishTicks(a.client, 600);
    using b = member(room, "bob", { reconnect: { initialDelay: 100, maxDelay: 100, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const seen: number[] = [];
    let dropped = false;
    using sub = subscribe(
      b.client,
      "ticks",
      (_e, info) => {
        seen.push(info.seq);
        if (info.seq === 256 && !dropped) {
          dropped = true;
          dropConnection(b.client);
        }
      },
      { since: 0 },
    );
    await vi.waitFor(() => expect(dropped).toBe(true));
    await runInObject(a.client, (obj) => void rpcPublish(obj, "ticks", 601));
    await sub.ready;
    await waitForState(b.client, "open");
    await b.client.connected();
    expect(b.errors).toEqual([]);
    expect(seen).toEqual(Array.from({ length: 601 }, (_, i) => i + 1));
  });
});

describe("a subscription closed and opened again with an older since", () => {
  it("a pending subscription (since 3) closed, then one from since 1: the new one gets 2, 3, 4, 5", async () => {
    const room = uniqueName("p8-reopen-pending");
    using a = member(room, "ann");
    await publishTicks(a.client, 5);
    using b = member(room, "bob");
    await b.client.connected();
    const seen1: number[] = [];
    const s1 = subscribe(b.client, "ticks", (_e, info) => void seen1.push(info.seq), { since: 3 });
    s1.close();
    const seen2: number[] = [];
    using s2 = subscribe(b.client, "ticks", (_e, info) => void seen2.push(info.seq), { since: 1 });
    await s2.ready;
    await b.client.connected();
    expect({ seen1, seen2 }).toEqual({ seen1: [], seen2: [2, 3, 4, 5] });
  });

  it("a confirmed subscription closed right after the client's own post, then one from since 2: the new one gets 3..6 in order", async () => {
    const room = uniqueName("p8-reopen-live");
    using a = member(room, "ann");
    for (let i = 1; i <= 5; i++) await a.client.post(`${i}`); // chat keeps 5
    using b = member(room, "bob");
    const seen1: number[] = [];
    const s1 = subscribe(b.client, "chat", (_e, info) => void seen1.push(info.seq));
    await s1.ready;
    // One frame: post (6 is pushed to s1's registration), unsubscribe, subscribe from 2.
    const posted = b.client.post("6");
    s1.close();
    const seen2: number[] = [];
    using s2 = subscribe(b.client, "chat", (_e, info) => void seen2.push(info.seq), { since: 2 });
    await Promise.all([posted, s2.ready]);
    await b.client.connected();
    expect({ seen1, seen2 }).toEqual({ seen1: [], seen2: [3, 4, 5, 6] });
  });
});

describe("a client whose maxPendingCalls is below a frame of events", () => {
  it("a client with limits.maxPendingCalls 100 gets a replay of 300 missed events", { timeout: 10_000 }, async () => {
    const room = uniqueName("p8-limits");
    const errors: unknown[] = [];
    const expose = { message: () => undefined, confirm: () => true, slow: async () => "x" } satisfies RoomClient;
    using a = createTestClient<Room>(env.ROOM, room, { query: { name: "ann" }, expose });
    await publishTicks(a, 300);
    using b = createTestClient<Room>(env.ROOM, room, {
      query: { name: "bob" },
      expose,
      limits: { maxPendingCalls: 100 },
      reconnect: { initialDelay: 50, maxDelay: 50, jitter: 0 },
      onError: (e) => errors.push(e),
    });
    const seen: number[] = [];
    using sub = subscribe(b, "ticks", (_e, info) => void seen.push(info.seq), { since: 0 });
    const outcome = await Promise.race([
      sub.ready.then(
        () => "ready",
        (e) => `rejected ${String(e)}`,
      ),
      new Promise((r) => setTimeout(() => r("timeout"), 3000)),
    ]);
    expect({ outcome, count: seen.length, errors: errors.map(String).slice(0, 2) }).toEqual({ outcome: "ready", count: 300, errors: [] });
  });
});

describe("events reach a client that is running as many of the object's calls as it allows", () => {
  it("a topic event is delivered while limits.maxPendingCalls of the object's calls run on the client", async () => {
    const room = uniqueName("p8-running");
    using a = member(room, "ann");
    let started = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    using b = member(room, "bob", {
      limits: { maxPendingCalls: 2 },
      expose: {
        message: () => undefined,
        confirm: () => true,
        slow: async () => {
          started++;
          await gate;
          return "x";
        },
      } satisfies RoomClient,
    });
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (e) => void seen.push(e.text));
    await sub.ready;
    // The object calls bob's slow() twice: bob is now running maxPendingCalls of its calls.
    const asks = [b.client.askSlow(0), b.client.askSlow(0)];
    await vi.waitFor(() => expect(started).toBe(2));
    await a.client.post("two");
    await vi.waitFor(() => expect(seen).toEqual(["two"]));
    release();
    expect(await Promise.all(asks)).toEqual(["x", "x"]);
    expect(b.errors).toEqual([]);
  });
});

/**
 * Topics next to an app that uses all of its `limits.maxPendingCalls` (docs/api.md, limits table:
 * a topic event is never dropped for the app's running notifications, and a subscription's own
 * calls are not bounded by the client's limit). Written from review probes that failed before
 * their fixes: a topic event reaching a client that ran maxPendingCalls async broadcast handlers
 * was refused like a broadcast, and the cursor moved past it; an app with maxPendingCalls calls
 * queued lost its subscription on a reconnect (the resubscribe was refused with LIMIT), and a
 * `close()` made then never reached the object, which kept pushing the topic. On the object,
 * subscribes and unsubscribes have room of their own above the app's running calls.
 */
import { RpcError, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, runInObject, type TestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { rpcFailure, uniqueName } from "./helpers.js";

/** A gate the client's handlers wait on until the test opens it. */
function gate() {
  let open!: () => void;
  const closed = new Promise<void>((resolve) => (open = resolve));
  return { closed, open };
}

/** A member of `room` exposing RoomClient (overridable), collecting what reaches its onError. */
function member(room: string, name: string, options: RpcClientOptions & { expose?: Partial<RoomClient> } = {}) {
  const errors: unknown[] = [];
  const { expose, ...rest } = options;
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: { message: () => undefined, confirm: () => true, slow: async () => "x", ...expose } satisfies RoomClient,
    onError: (error) => errors.push(error),
    ...rest,
  });
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** An error as `CODE: message`, for assertions that show what went wrong. */
const described = (error: unknown) => (RpcError.is(error) ? `${error.code}: ${error.message}` : String(error));

/** The topics the object lists for `name`'s sockets. */
function topicsOf(client: TestClient<Room>, name: string): Promise<string[][]> {
  return runInObject(client, (_room, state) =>
    state
      .getWebSockets()
      .map((ws) => ws.deserializeAttachment() as { identity?: { name?: string }; topics?: string[] } | null)
      .filter((attachment) => attachment?.identity?.name === name)
      .map((attachment) => attachment?.topics ?? []),
  );
}

describe("topic events to a client whose async broadcast handlers are still running", () => {
  for (const [label, limit] of [
    ["limits.maxPendingCalls 4", 4],
    ["the default limit (1,024)", 1024],
  ] as const) {
    it(`with ${label} handlers waiting: each topic event arrives once, in order, without a resync`, { timeout: 20_000 }, async () => {
      const room = uniqueName("events-busy-handlers");
      using a = member(room, "ann");
      const handlers = gate();
      let started = 0;
      using b = member(room, "bob", {
        limits: limit === 1024 ? {} : { maxPendingCalls: limit },
        expose: {
          // A slow handler, e.g. one that saves each message before showing it.
          message: async () => {
            started++;
            await handlers.closed;
          },
        },
      });
      const seen: number[] = [];
      const resyncs: unknown[] = [];
      using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq), { onResync: (info) => resyncs.push(info) });
      await sub.ready;
      for (let sent = 0; sent < limit; sent += 256) {
        const count = Math.min(256, limit - sent);
        await Promise.all(Array.from({ length: count }, (_, i) => a.client.sayToOthers(`m${sent + i}`)));
      }
      await vi.waitFor(() => expect(started).toBe(limit));
      // bob runs `limit` handlers: the events are delivered all the same, while they still run.
      await a.client.post("e1");
      await a.client.post("e2");
      await vi.waitFor(() => expect(seen).toEqual([1, 2]));
      handlers.open();
      await a.client.post("e3");
      await vi.waitFor(() => expect(seen).toEqual([1, 2, 3]));
      expect(sub.cursor).toBe(3);
      expect(resyncs).toEqual([]);
      expect(b.errors.map(described)).toEqual([]);
    });
  }

  it("the app's own broadcasts stay bounded: one past the limit is dropped and reported, a topic event in the same state is not", async () => {
    const room = uniqueName("broadcasts-bounded");
    using a = member(room, "ann");
    const handlers = gate();
    const received: string[] = [];
    using b = member(room, "bob", {
      limits: { maxPendingCalls: 2 },
      expose: {
        message: async (m) => {
          received.push(m.text);
          await handlers.closed;
        },
      },
    });
    const seen: string[] = [];
    using sub = subscribe(b.client, "chat", (e) => void seen.push(e.text));
    await sub.ready;
    await a.client.sayToOthers("m1");
    await a.client.sayToOthers("m2");
    await vi.waitFor(() => expect(received).toEqual(["m1", "m2"]));
    await a.client.sayToOthers("m3");
    await a.client.post("event");
    await vi.waitFor(() => expect(seen).toEqual(["event"]));
    expect(received).toEqual(["m1", "m2"]);
    expect(b.errors.map(described)).toEqual([expect.stringMatching(/^LIMIT: .*maxPendingCalls \(2\) notifications are still running/)]);
    handlers.open();
  });
});

describe("a subscription of an app that has maxPendingCalls calls waiting", () => {
  it("a ready subscription survives a reconnect while the app has maxPendingCalls calls queued", async () => {
    const room = uniqueName("resubscribe-at-limit");
    using a = member(room, "ann");
    using b = member(room, "bob", { limits: { maxPendingCalls: 4 }, reconnect: { initialDelay: 50, jitter: 0 } });
    const seen: number[] = [];
    const ends: unknown[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq), { onEnd: (error) => ends.push(error) });
    await sub.ready;
    await a.client.post("1");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    dropConnection(b.client);
    // While offline the app queues as many calls as it may: the resubscribe comes on top of them.
    const queued = Array.from({ length: 4 }, () => b.client.connected());
    await rpcFailure(b.client.connected(), "LIMIT"); // the app's queue is full
    await Promise.all(queued);
    await a.client.post("2");
    await a.client.post("3");
    await vi.waitFor(() => expect(seen).toEqual([1, 2, 3]));
    expect(ends.map(described)).toEqual([]);
    expect(b.errors.map(described)).toEqual([]);
    expect(await topicsOf(a.client, "bob")).toEqual([["chat"]]);
  });

  it("close() while the app has maxPendingCalls calls waiting: the object stops listing it; subscribing again later works", async () => {
    const room = uniqueName("close-at-limit");
    using a = member(room, "ann");
    const answers = gate();
    let asked = 0;
    using b = member(room, "bob", {
      limits: { maxPendingCalls: 3 },
      expose: {
        slow: async () => {
          asked++;
          await answers.closed;
          return "x";
        },
      },
    });
    const first = subscribe(b.client, "chat", () => undefined);
    await first.ready;
    // Three calls of the app wait for the object, which waits for bob's answers.
    const busy = [b.client.askSlow(0), b.client.askSlow(0), b.client.askSlow(0)];
    await vi.waitFor(() => expect(asked).toBe(3));
    await rpcFailure(b.client.connected(), "LIMIT"); // the app's queue is full
    first.close();
    await vi.waitFor(async () => expect(await topicsOf(a.client, "bob")).toEqual([[]]));
    answers.open();
    expect(await Promise.all(busy)).toEqual(["x", "x", "x"]);
    const seen: number[] = [];
    using again = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq));
    await again.ready;
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    expect(b.errors.map(described)).toEqual([]);
  });

  it("with default limits, both ends at maxPendingCalls (1,024 calls of the app running on the object): subscribe is ready", {
    timeout: 20_000,
  }, async () => {
    const room = uniqueName("subscribe-both-full");
    using a = member(room, "ann");
    const answers = gate();
    let asked = 0;
    using b = member(room, "bob", {
      expose: {
        slow: async () => {
          asked++;
          await answers.closed;
          return "x";
        },
      },
    });
    await b.client.connected();
    // 1,024 askSlow calls: the app's queue is full, and so are the calls running on the object.
    const busy = Array.from({ length: 1024 }, () => b.client.askSlow(0));
    await vi.waitFor(() => expect(asked).toBe(1024), { timeout: 10_000 });
    await rpcFailure(b.client.connected(), "LIMIT");
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq));
    const outcome = await sub.ready.then(() => "ready", described);
    answers.open();
    expect(outcome).toBe("ready");
    expect(new Set(await Promise.all(busy))).toEqual(new Set(["x"]));
    await a.client.post("after");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    expect(b.errors.map(described)).toEqual([]);
  });
});

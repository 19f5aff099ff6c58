/**
 * The object's pushes over a connection's life, in the cases between the common ones that
 * push.test.ts covers: a broadcast one client cannot read or fails on, subscription handlers that
 * throw or close their subscription in the middle of a replay, a publish made while another call
 * holds a transaction open, pushes from a Workers RPC method or a caller's message that wakes a
 * hibernated object, the object's functions a client keeps across that hibernation, and a client
 * that calls the object back while answering it. Written from review probes; all passed.
 */
import { RpcError, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { rpcClient, rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, evictObject, runInObject, testConnection, type TestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { rejection, uniqueName } from "./helpers.js";

type Message = Parameters<RoomClient["message"]>[0];

/** A member of `room`, recording the broadcasts it gets (then running `onMessage`) and what reaches its onError. */
function member(room: string, name: string, options: RpcClientOptions & { team?: string; onMessage?: (m: Message) => unknown } = {}) {
  const inbox: string[] = [];
  const errors: [string, string][] = [];
  const { team = "none", onMessage, ...rest } = options;
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team },
    expose: {
      message: (m: Message) => {
        inbox.push(m.text);
        return onMessage?.(m) as undefined;
      },
      confirm: () => true,
      slow: async () => "x",
    } satisfies RoomClient,
    onError: (error, what) => errors.push([what, RpcError.is(error) ? `${error.code}: ${error.message}` : (error as Error).message]),
    ...rest,
  });
  return { client, inbox, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** Publishes `from`..`to` on the room's "ticks" topic, from inside the object. */
function publishTicks(client: TestClient<Room>, from: number, to: number): Promise<void> {
  return runInObject(client, (obj) => {
    for (let i = from; i <= to; i++) rpcPublish(obj, "ticks", i);
  });
}

describe("a broadcast one client cannot read or fails on", () => {
  it("over one client's maxMessageBytes: that client is told and skips it on the same connection; the others get it", async () => {
    const room = uniqueName("broadcast-too-big");
    using a = member(room, "ann");
    using b = member(room, "bob", { limits: { maxMessageBytes: 70_000 } });
    await Promise.all([a.client.connected(), b.client.connected()]);
    expect(await a.client.say("y".repeat(100_000))).toBe(2);
    await vi.waitFor(() => expect(a.inbox).toHaveLength(1));
    await vi.waitFor(() =>
      expect(b.errors).toEqual([["a push from the object", expect.stringMatching(/^LIMIT: .*maxMessageBytes \(70000\); it was skipped/)]]),
    );
    expect(b.inbox).toEqual([]);
    expect(await b.client.say("small")).toBe(2);
    expect(b.inbox).toEqual(["small"]); // a push arrives before the reply of the call that made it
    expect(testConnection(b.client).attempts).toHaveLength(1);
  });

  it("an exposed method whose promise rejects is reported to the client's onError; later broadcasts still run", async () => {
    using a = member(uniqueName("broadcast-rejects"), "ann", {
      onMessage: async (m) => {
        if (m.text === "x") throw new Error("boom in handler");
      },
    });
    expect(await a.client.say("x")).toBe(1);
    await vi.waitFor(() => expect(a.errors).toEqual([["a push from the object", "boom in handler"]]));
    expect(await a.client.say("y")).toBe(1);
    expect(a.inbox).toEqual(["x", "y"]);
    expect(testConnection(a.client).attempts).toHaveLength(1);
  });
});

describe("subscription handlers", () => {
  it("a handler that throws on every other event: each throw is reported, delivery goes on in order", async () => {
    const room = uniqueName("handler-throws");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: number[] = [];
    using sub = subscribe(b.client, "ticks", (_e, info) => {
      seen.push(info.seq);
      if (info.seq % 2) throw new Error(`bad ${info.seq}`);
    });
    await sub.ready;
    await publishTicks(a.client, 1, 6);
    await vi.waitFor(() => expect(seen).toEqual([1, 2, 3, 4, 5, 6]));
    expect(b.errors).toEqual(["bad 1", "bad 3", "bad 5"].map((message) => ['the subscription to "ticks"', message]));
    expect(sub.cursor).toBe(6);
  });

  it("a handler that closes its subscription during a replay gets no more events; the object stops pushing; the cursor resumes", async () => {
    const room = uniqueName("close-mid-replay");
    using a = member(room, "ann");
    await publishTicks(a.client, 1, 5);
    using b = member(room, "bob");
    const seen: number[] = [];
    const sub = subscribe(
      b.client,
      "ticks",
      (_e, info) => {
        seen.push(info.seq);
        if (info.seq === 2) sub.close();
      },
      { since: 0 },
    );
    // The replay comes before the subscribe's reply: closed first, `ready` rejects.
    const error = await rejection(sub.ready);
    expect(RpcError.is(error) && error.code).toBe("DISPOSED");
    await publishTicks(a.client, 6, 6);
    await b.client.connected(); // bob has received every push sent before this reply
    expect(seen).toEqual([1, 2]);
    expect(sub.cursor).toBe(2);
    const topics = await runInObject(a.client, (_obj, state) =>
      state
        .getWebSockets()
        .map((ws) => ws.deserializeAttachment() as { identity: { name: string }; topics?: string[] })
        .filter((attachment) => attachment.identity.name === "bob")
        .map((attachment) => attachment.topics ?? []),
    );
    expect(topics).toEqual([[]]);
    const rest: number[] = [];
    using again = subscribe(b.client, "ticks", (_e, info) => void rest.push(info.seq), { since: sub.cursor });
    await again.ready;
    expect(rest).toEqual([3, 4, 5, 6]);
    expect(b.errors).toEqual([]);
  });
});

describe("a publish while another call holds a transaction open", () => {
  it("a post made while an async transaction() is open, which then rolls back: the log and the subscriber agree, numbering goes on", async () => {
    const room = uniqueName("publish-next-to-transaction");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq), { since: 0 });
    await sub.ready;
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const transaction = runInObject(a.client, async (_obj, state) =>
      state.storage
        .transaction(async () => {
          opened();
          await new Promise((resolve) => setTimeout(resolve, 200));
          throw new Error("roll back");
        })
        .then(
          () => "committed",
          (error: Error) => error.message,
        ),
    );
    await open;
    const seq = await a.client.post("outside"); // an ordinary call, not part of the transaction
    expect(await transaction).toBe("roll back");
    const stored = await runInObject(a.client, (_obj, state) =>
      state.storage.sql
        .exec<{ seq: number }>("SELECT seq FROM _dorpc_events WHERE topic = 'chat' ORDER BY seq")
        .toArray()
        .map((row) => row.seq),
    );
    const next = await a.client.post("after");
    await b.client.connected();
    expect(stored).toEqual([seq]);
    expect(next).toBe(seq + 1);
    expect(seen).toEqual([seq, next]);
  });
});

describe("pushes from entry points that are not a dorpc call, and across hibernation", () => {
  it("publish and a broadcast from a Workers RPC method, as a fresh instance's first work, reach the clients", async () => {
    const room = uniqueName("workers-rpc-push");
    using a = member(room, "ann", { team: "red" });
    const seen: number[] = [];
    using sub = subscribe(a.client, "news", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    await evictObject(a.client);
    const stub = env.ROOM.getByName(room);
    expect(await stub.postNews("n1")).toBe(1);
    expect(await stub.sayToTeam("red", "hi")).toBe(1);
    await vi.waitFor(() => expect(seen).toEqual([1]));
    await vi.waitFor(() => expect(a.inbox).toEqual(["hi"]));
  });

  it("except: rpcCaller() leaves the caller out when its own message wakes the hibernated object", async () => {
    const room = uniqueName("except-after-eviction");
    using a = member(room, "ann");
    using b = member(room, "bob");
    await Promise.all([a.client.connected(), b.client.connected()]);
    await evictObject(a.client);
    expect(await a.client.sayToOthers("x")).toBe(1);
    expect(a.inbox).toEqual([]); // a push to ann would have come before this reply
    await vi.waitFor(() => expect(b.inbox).toEqual(["x"]));
  });

  it("the object's function a client kept (dup) across hibernation rejects REFERENCE_LOST; it never reaches the new instance's export", async () => {
    type Fn = (() => Promise<string>) & { dup(): Fn };
    type Keeper = { keep(fn: () => string): boolean };
    const kept: Fn[] = [];
    using client = createTestClient<Room>(env.ROOM, uniqueName("dup-across-hibernation"), {
      query: { name: "ann" },
      expose: { keep: (fn: Fn) => (kept.push(fn.dup()), true) },
    });
    await client.connected();
    /** Has the object pass the client a function returning `label`, which the client keeps. */
    const hand = (label: string) =>
      runInObject(client, (obj, state) => rpcClient<Keeper>(obj, state.getWebSockets()[0]!).keep(() => label));
    expect(await hand("old")).toBe(true);
    expect(await kept[0]!()).toBe("old");
    await evictObject(client);
    expect(await hand("new")).toBe(true); // the new instance's export, on the same socket
    expect(await kept[1]!()).toBe("new");
    const error = await rejection(kept[0]!());
    expect(RpcError.is(error) && error.code).toBe("REFERENCE_LOST");
    expect(await kept[1]!()).toBe("new");
  });
});

describe("a client that calls the object back while answering it", () => {
  it("a broadcast and a publish made from inside the client's answer: no deadlock, everything in order", async () => {
    const room = uniqueName("reentrant-answer");
    const order: string[] = [];
    let self: TestClient<Room> | undefined;
    using a = createTestClient<Room>(env.ROOM, room, {
      query: { name: "ann" },
      // Not `satisfies RoomClient`: this confirm answers with a promise (the object awaits it anyway).
      expose: {
        message: (m: Message) => void order.push(`message ${m.text}`),
        confirm: async (question: string) => {
          order.push(`confirm ${question}`);
          await self!.say("inside");
          await self!.post("inside");
          order.push("confirm done");
          return true;
        },
        slow: async () => "x",
      },
    });
    self = a;
    using sub = subscribe(a, "chat", (e, info) => void order.push(`event ${info.seq} ${e.text}`));
    await sub.ready;
    expect(await a.askMe("q")).toBe(true);
    order.push("askMe done");
    expect(order).toEqual(["confirm q", "message inside", "event 1 inside", "confirm done", "askMe done"]);
  });
});

/**
 * The object talking to many clients, attacked or misused: replays to a client with a small
 * limit, subscribe/unsubscribe storms that would replay the log again and again, a `where` that
 * returns a promise, and a broadcast object coerced or serialised.
 */
import { RpcError, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { rpcClients, rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, runInObject, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

type Message = Parameters<RoomClient["message"]>[0];

function member(room: string, name: string, options: RpcClientOptions & { team?: string } = {}) {
  const inbox: Message[] = [];
  const errors: [string, string][] = [];
  const { team = "none", ...rest } = options;
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team },
    expose: {
      message: (m: Message) => void inbox.push(m),
      confirm: () => true,
      slow: async (ms: number) => `slept ${ms}`,
    } satisfies RoomClient,
    onError: (error, what) => errors.push([what, RpcError.is(error) ? `${error.code}: ${error.message}` : String(error)]),
    ...rest,
  });
  return { client, inbox, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("a client with a maxMessageBytes below the 64 KiB frames envelopes share", () => {
  // docs/api.md (limits): each end groups envelopes into frames of up to 64 KiB, so a limit below
  // that can refuse a frame whose every envelope fits it; keep it at 64 KiB or more. The refusal
  // says so, naming the grouping, and the client goes on.
  it("a replay of five ~1.1 KB events to a subscriber with maxMessageBytes 4,000 is refused, naming the 64 KiB grouping", async () => {
    const room = uniqueName("p-replay-small");
    using a = member(room, "ann");
    for (let i = 1; i <= 5; i++) await a.client.post(`${i}`.repeat(1_000)); // chat keeps 5
    using b = member(room, "bob", { limits: { maxMessageBytes: 4_000 } });
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq), { since: 0 });
    await sub.ready;
    await b.client.connected();
    expect(seen).toEqual([]);
    expect(b.errors.map(([, message]) => message)).toEqual([
      expect.stringMatching(/^LIMIT: .*groups envelopes into frames of up to 65536 bytes/),
    ]);
    expect(await b.client.post("after")).toBeGreaterThan(0); // the connection goes on
  });
});

describe("replay amplification", () => {
  // security.md (Subscriptions): a connection subscribes to each topic "once (BAD_OPTION for a
  // repeat, which would replay the stored events again)"; topics.ts says repeats "would multiply
  // what one frame makes the object send". subscribe → unsubscribe → subscribe in one frame must
  // not get around the guard: one connection is replayed at most `keep` events of a topic.
  it("50 subscribe(since 0)/close pairs in one turn do not replay the 200 stored events 50 times", async () => {
    const room = uniqueName("p-amplify");
    using a = member(room, "ann");
    await a.client.connected();
    await runInObject(a.client, (obj) => {
      for (let i = 1; i <= 200; i++) rpcPublish(obj, "ticks", i);
    });
    let events = 0;
    testConnection(a.client).socket!.addEventListener("message", (m: MessageEvent) => {
      if (typeof m.data === "string") events += m.data.split('["event"').length - 1;
    });
    for (let i = 0; i < 50; i++) subscribe(a.client, "ticks", () => undefined, { since: 0 }).close();
    await a.client.connected();
    // The first replay of each event is free; replaying events again costs from a budget of
    // `keep` (1,000 by default) per topic and connection; past it a subscribe resyncs. So at most
    // 200 + 1,000 events here (it was 10,000: the whole log, 50 times).
    expect(events).toBeGreaterThanOrEqual(200); // the first ones were replayed
    expect(events).toBeLessThanOrEqual(1200);
  });
});

describe("broadcast selection", () => {
  // docs/api.md (rpcClients): "only those for which where returns true"; a where that is not a
  // function is BAD_OPTION. An async where returns a Promise (truthy), so every client is selected:
  // a message meant for no one (or one team) would reach everyone: it is refused (BAD_OPTION).
  it("an async where predicate that resolves false does not send to every client", async () => {
    const room = uniqueName("p-where-async");
    using a = member(room, "ann", { team: "red" });
    using b = member(room, "bob", { team: "blue" });
    await Promise.all([a.client.connected(), b.client.connected()]);
    const outcome = await runInObject(a.client, (obj) => {
      try {
        return rpcClients<RoomClient>(obj, { where: (async () => false) as never }).message({ from: "s", text: "secret", at: new Date(0) });
      } catch (e) {
        return RpcError.is(e) ? e.code : String(e);
      }
    });
    await a.client.connected();
    await b.client.connected();
    expect({ outcome, a: a.inbox.length, b: b.inbox.length }).toEqual({ outcome: "BAD_OPTION", a: 0, b: 0 });
  });

  // The broadcast proxy turns string properties into broadcasts, but not toJSON and
  // Symbol.toPrimitive: String(this.clients()) or JSON.stringify of an object holding it sends
  // nothing to the clients (like `then`, which returns undefined).
  it("String() / JSON.stringify of a broadcast object sends nothing to the clients", async () => {
    const room = uniqueName("p-tostring");
    using a = member(room, "ann");
    await a.client.connected();
    await runInObject(a.client, (obj) => String(rpcClients(obj)));
    await runInObject(a.client, (obj) => JSON.stringify({ b: rpcClients(obj) }));
    await a.client.connected();
    expect(a.errors).toEqual([]);
  });
});

/**
 * Topics over time: resubscribes whose answer was lost, a subscription replacing one just closed,
 * a subscribe slower than the client's timeout, events published in transactions that roll back.
 */
import { rpcConnection, subscribe, type RpcClientOptions } from "@dorpc/rpc";
import { rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, evictObject, runInObject, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

type Message = Parameters<RoomClient["message"]>[0];

function member(room: string, name: string, options: RpcClientOptions = {}) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: { message: (_m: Message) => undefined, confirm: () => true, slow: async () => "x" } satisfies RoomClient,
    onError: (error) => errors.push(error),
    ...options,
  });
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

describe("topics over time", () => {
  it("a resubscribe whose reply was lost after its replay arrived does not resync while the missed events are kept", async () => {
    const room = uniqueName("eo-resub");
    using a = member(room, "ann");
    for (let i = 1; i <= 8; i++) await a.client.post(`m${i}`); // chat keeps 5: 4..8
    using b = member(room, "bob", { reconnect: { initialDelay: 300, maxDelay: 300, jitter: 0 } });
    await rpcConnection(b.client).waitForOpen();
    const seen: number[] = [];
    const resyncs: unknown[] = [];
    let dropped = false;
    using sub = subscribe(
      b.client,
      "chat",
      (_e, info) => {
        seen.push(info.seq);
        if (info.seq === 8 && !dropped) {
          dropped = true;
          dropConnection(b.client); // the replay (4..8) arrived; the subscribe's reply, in the next frame, is lost
        }
      },
      { since: 3, onResync: (info) => resyncs.push(info) },
    );
    await vi.waitFor(() => expect(dropped).toBe(true));
    for (let i = 9; i <= 12; i++) await a.client.post(`m${i}`); // while bob reconnects; chat keeps 8..12
    await sub.ready;
    await waitForState(b.client, "open");
    await b.client.connected(); // everything the object sent bob before this reply has arrived
    expect({ seen, resyncs, errors: b.errors }).toEqual({ seen: [4, 5, 6, 7, 8, 9, 10, 11, 12], resyncs: [], errors: [] });
  });

  it("a closed subscription's replay is not delivered to a new subscription to the same topic made without since", async () => {
    const room = uniqueName("eo-resub-new");
    using a = member(room, "ann");
    for (let i = 1; i <= 5; i++) await a.client.post(`m${i}`);
    using b = member(room, "bob");
    await rpcConnection(b.client).waitForOpen();
    const first: number[] = [];
    subscribe(b.client, "chat", (_e, info) => void first.push(info.seq), { since: 0 }).close();
    const second: number[] = [];
    using s2 = subscribe(b.client, "chat", (_e, info) => void second.push(info.seq)); // only events from now on
    await s2.ready;
    await a.client.post("m6");
    await vi.waitFor(() => expect(second.at(-1)).toBe(6));
    expect({ first, second }).toEqual({ first: [], second: [6] });
  });

  it("a subscribe that times out while the connection stays open: ready settles (or the client subscribes again)", async () => {
    const room = uniqueName("eo-sub-timeout");
    using a = member(room, "ann");
    using b = member(room, "bob", { timeout: 100 });
    await b.client.connected();
    // A slow path for the subscribe frame only (a busy object or network): it arrives after the call timed out.
    const socket = testConnection(b.client).socket!;
    const send = socket.send.bind(socket);
    socket.send = (data: string | ArrayBuffer | ArrayBufferView) => {
      if (typeof data === "string" && data.includes('"subscribe"')) setTimeout(() => send(data), 300);
      else send(data);
    };
    const seen: number[] = [];
    using sub = subscribe(b.client, "chat", (_e, info) => void seen.push(info.seq));
    let state = "pending";
    sub.ready.then(
      () => (state = "resolved"),
      (e) => (state = `rejected: ${String(e)}`),
    );
    await new Promise((r) => setTimeout(r, 400));
    await a.client.post("one");
    await vi.waitFor(() => expect(seen).toEqual([1])); // the object did subscribe the socket
    // Not timed out: the subscribe waits for the object's answer (before: ready never settled).
    await vi.waitFor(() => expect(state).toBe("resolved"));
    expect(b.errors).toEqual([]);
  });

  it("an event published inside a transaction that rolls back is neither pushed nor reuses its sequence number", async () => {
    const room = uniqueName("eo-rollback");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const live: [number, string][] = [];
    using sub = subscribe(b.client, "chat", (e, info) => void live.push([info.seq, e.text]));
    await sub.ready;
    await a.client.post("one");
    await runInObject(a.client, (instance, state) => {
      try {
        state.storage.transactionSync(() => {
          rpcPublish(instance, "chat", { from: "x", text: "rolled back" });
          throw new Error("roll back");
        });
      } catch {
        // rolled back, as the app intended
      }
    });
    await evictObject(a.client);
    await a.client.post("two");
    await b.client.connected(); // bob has received every push sent before this reply
    using c = member(room, "cy");
    const log: [number, string][] = [];
    using s3 = subscribe(c.client, "chat", (e, info) => void log.push([info.seq, e.text]), { since: 0 });
    await s3.ready;
    expect(log).toEqual([
      [1, "one"],
      [2, "two"],
    ]);
    expect(live).toEqual(log);
  });

  it("an event published in a transaction is pushed once it commits; in one that rolls back (async, or nested), never", async () => {
    const room = uniqueName("eo-transactions");
    using a = member(room, "ann");
    using b = member(room, "bob");
    const live: [number, string][] = [];
    using sub = subscribe(b.client, "chat", (e, info) => void live.push([info.seq, e.text]));
    await sub.ready;
    await runInObject(a.client, (instance, state) =>
      state.storage.transactionSync(() => {
        rpcPublish(instance, "chat", { from: "x", text: "committed" });
        try {
          state.storage.transactionSync(() => {
            rpcPublish(instance, "chat", { from: "x", text: "inner, rolled back" });
            throw new Error("roll back the inner one");
          });
        } catch {
          // the outer one goes on
        }
      }),
    );
    await runInObject(a.client, async (instance, state) => {
      await state.storage
        .transaction(async () => {
          rpcPublish(instance, "chat", { from: "x", text: "async, rolled back" });
          throw new Error("roll back");
        })
        .catch(() => undefined);
    });
    await a.client.post("after");
    await b.client.connected();
    expect(live).toEqual([
      [1, "committed"],
      [2, "after"],
    ]);
  });

  it("events older than maxAge are neither kept nor replayed once the topic has gone quiet", async () => {
    const room = uniqueName("eo-max-age");
    using a = member(room, "ann");
    for (const text of ["old 1", "old 2", "newest"]) await a.client.postNews(text);
    // An hour passes with nothing published (maxAge is a minute): age the stored events.
    await runInObject(a.client, (_room, state) => {
      state.storage.sql.exec("UPDATE _dorpc_events SET at = at - 3600000 WHERE topic = 'news'");
    });
    using b = member(room, "bob");
    const seen: string[] = [];
    const resyncs: unknown[] = [];
    using sub = subscribe(b.client, "news", (text) => void seen.push(text), { since: 0, onResync: (info) => resyncs.push(info) });
    await sub.ready;
    await b.client.connected();
    // The newest always stays (sequence numbers never restart); the two older ones are gone.
    expect({ seen, resyncs }).toEqual({ seen: [], resyncs: [{ topic: "news", cursor: 0, oldest: 3, latest: 3 }] });
    const left = await runInObject(
      a.client,
      (_room, state) => state.storage.sql.exec("SELECT count(*) AS n FROM _dorpc_events WHERE topic = 'news'").one().n,
    );
    expect(left).toBe(1);
  });
});

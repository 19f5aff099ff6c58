/**
 * Edges of the object calling its clients, broadcasts and topics: cursor values, closing twice, events that cannot be encoded, methods not exposed.
 */
import { rpcConnection, RpcError, subscribe } from "@dorpc/rpc";
import { rpcPublish, rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { rejection, uniqueName } from "./helpers.js";

function member(room: string, name: string, expose?: object, extra: Record<string, unknown> = {}) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose,
    onError: (error) => errors.push(error),
    ...extra,
  });
  return { client, errors };
}

describe("subscribe since edge values", () => {
  it("refuses negative, NaN, fractional, infinite, unsafe and non-number cursors synchronously", async () => {
    const { client } = member(uniqueName("since-bad"), "ann");
    using _ = client;
    for (const since of [-1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, 2 ** 53, "3", null]) {
      let thrown: unknown;
      try {
        subscribe(client, "chat", () => undefined, { since: since as number });
      } catch (e) {
        thrown = e;
      }
      expect(RpcError.is(thrown) && thrown.code, String(since)).toBe("BAD_OPTION");
    }
  });

  it("a cursor far ahead of the log resyncs and then delivers new events", async () => {
    const room = uniqueName("since-huge");
    const { client } = member(room, "ann");
    using _ = client;
    await client.post("one");
    const resyncs: unknown[] = [];
    const seen: number[] = [];
    using sub = subscribe(client, "chat", (_e, info) => void seen.push(info.seq), {
      since: Number.MAX_SAFE_INTEGER,
      onResync: (info) => resyncs.push(info),
    });
    await sub.ready;
    expect(resyncs).toEqual([{ topic: "chat", cursor: Number.MAX_SAFE_INTEGER, oldest: 1, latest: 1 }]);
    expect(sub.cursor).toBe(1);
    await client.post("two");
    await vi.waitFor(() => expect(seen).toEqual([2]));
  });

  it("since 0 on an empty topic, then events", async () => {
    const { client } = member(uniqueName("since-zero"), "ann");
    using _ = client;
    const seen: number[] = [];
    const resyncs: unknown[] = [];
    using sub = subscribe(client, "chat", (_e, info) => void seen.push(info.seq), { since: 0, onResync: (i) => resyncs.push(i) });
    await sub.ready;
    await client.post("a");
    await vi.waitFor(() => expect(seen).toEqual([1]));
    expect(resyncs).toEqual([]);
  });

  it("closing twice, and after the client was disposed, is harmless; ready rejects DISPOSED", async () => {
    const { client } = member(uniqueName("close-twice"), "ann");
    const sub = subscribe(client, "chat", () => undefined);
    sub.close();
    sub.close();
    const error = await rejection(sub.ready);
    expect(RpcError.is(error) && error.code).toBe("DISPOSED");
    const sub2 = subscribe(client, "chat", () => undefined);
    await sub2.ready;
    client[Symbol.dispose]();
    sub2.close();
    sub2.close();
  });
});

describe("publishing", () => {
  it("an event that cannot be encoded throws ENCODE and does not take a sequence number", async () => {
    const room = uniqueName("publish-bad");
    const { client } = member(room, "ann");
    using _ = client;
    const seen: number[] = [];
    using sub = subscribe(client, "chat", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    expect(await client.post("one")).toBe(1);
    const code = await runInObject(client, (obj) => {
      try {
        rpcPublish(obj, "chat", { from: "x", text: (() => 1) as never });
        return "published";
      } catch (e) {
        return RpcError.is(e) ? e.code : String(e);
      }
    });
    expect(code).toBe("ENCODE");
    expect(await client.post("two")).toBe(2);
    await vi.waitFor(() => expect(seen).toEqual([1, 2]));
  });

  it("a binary event reaches live subscribers and is replayed from a cursor", async () => {
    const room = uniqueName("publish-binary");
    const { client } = member(room, "ann");
    using _ = client;
    const live: unknown[] = [];
    using sub = subscribe(client, "ticks", (e) => void live.push(e));
    await sub.ready;
    await runInObject(client, (obj) => rpcPublish(obj, "ticks", { bytes: new Uint8Array([1, 2, 3]), when: new Date(5) }));
    await vi.waitFor(() => expect(live).toHaveLength(1));
    expect(live[0]).toEqual({ bytes: new Uint8Array([1, 2, 3]), when: new Date(5) });
    const { client: other } = member(room, "bob");
    using __ = other;
    const replayed: unknown[] = [];
    using sub2 = subscribe(other, "ticks", (e) => void replayed.push(e), { since: 0 });
    await sub2.ready;
    expect(replayed).toEqual([{ bytes: new Uint8Array([1, 2, 3]), when: new Date(5) }]);
  });
});

describe("the object calling its clients", () => {
  it("a method the client does not expose is NOT_FOUND", async () => {
    const { client } = member(uniqueName("unexposed-method"), "ann", { message: () => undefined });
    using _ = client;
    const error = await rejection(client.askMe("q"));
    expect(RpcError.is(error) && error.code).toBe("NOT_FOUND");
  });

  it("a client exposing a class instance answers with its methods", async () => {
    class Answers {
      confirm(q: string): boolean {
        return q === "yes";
      }
      message(): void {}
      async slow(ms: number): Promise<string> {
        return `s${ms}`;
      }
    }
    const { client } = member(uniqueName("class-expose"), "ann", new Answers());
    using _ = client;
    expect(await client.askMe("yes")).toBe(true);
    expect(await client.askSlow(3)).toBe("s3");
  });

  it("a client that drops while the object awaits it: the object's await fails, the client's call gets an answer", async () => {
    const room = uniqueName("drop-mid");
    const { client } = member(room, "ann", {
      message: () => undefined,
      confirm: () => true,
      slow: (ms: number) => new Promise<string>((r) => setTimeout(() => r(`slept ${ms}`), ms)),
    } satisfies RoomClient);
    using _ = client;
    await client.connected();
    const asked = client.askSlow(300);
    await new Promise((r) => setTimeout(r, 50));
    dropConnection(client);
    const outcome = await rejection(asked);
    expect(RpcError.is(outcome) && outcome.code).toBe("DISCONNECTED");
    expect(rpcConnection(client).state).toBe("open");
    const sockets = await runInObject(client, (_o, state) => state.getWebSockets().map((ws) => rpcSocketInfo(ws)));
    expect(sockets.filter((s) => s && s.waiting > 0)).toEqual([]);
  });
});

describe("topic events a subscriber cannot read", () => {
  it("an event over the subscriber's limits is not skipped silently", async () => {
    const errors: unknown[] = [];
    using c = createTestClient<Room>(env.ROOM, uniqueName("event-limit"), {
      query: { name: "ann" },
      limits: { maxBigIntDigits: 10 },
      onError: (e, what) => errors.push([what, String(e)]),
    });
    const seen: number[] = [];
    using sub = subscribe(c, "ticks", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    await runInObject(c, (obj) => rpcPublish(obj, "ticks", 10n ** 30n));
    await runInObject(c, (obj) => rpcPublish(obj, "ticks", 2));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).not.toContain(1);
    expect(errors).toEqual([["a push from the object", expect.stringContaining("maxBigIntDigits")]]);
  });

  it("with default limits: an event of more nodes than maxNodes is not skipped silently", async () => {
    const errors: unknown[] = [];
    using c = createTestClient<Room>(env.ROOM, uniqueName("event-nodes"), {
      query: { name: "ann" },
      onError: (e, what) => errors.push([what, String(e)]),
    });
    const seen: number[] = [];
    using sub = subscribe(c, "ticks", (_e, info) => void seen.push(info.seq));
    await sub.ready;
    const published = await runInObject(c, (obj) => rpcPublish(obj, "ticks", new Array(1_100_000).fill(0) as never));
    expect(published).toBe(1);
    await runInObject(c, (obj) => rpcPublish(obj, "ticks", 2));
    await vi.waitFor(() => expect(seen).toContain(2));
    expect(seen).not.toContain(1);
    expect(errors).toEqual([["a push from the object", expect.stringContaining("maxNodes")]]);
  });
});

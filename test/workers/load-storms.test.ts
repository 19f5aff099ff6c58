/**
 * Load over real sockets in workerd: many calls made in one turn (10,000 increments; 3,000 with
 * the connection dropped while they run; big strings, byte arrays and Blobs among small calls),
 * broadcasts and topic events sent to many clients while they make calls, the object asking many
 * clients at once, and topic replays of ~20 KB events to a client whose maxMessageBytes is 64 KiB
 * (the smallest allowed: replay frames must be grouped by what that client measures). Every call
 * is answered once, with its own value, and runs once; every client gets every message, in the
 * order it was sent; no client reports an error. (stress-counter.test.ts and stress-room.test.ts
 * interleave faults at random; client-calls-errors.test.ts has the object's calls past the
 * limits.)
 */
import { type RpcClientOptions, subscribe } from "@dorpc/rpc";
import { rpcClients, rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, runInObject, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";
import type { Room, RoomClient } from "./push-objects.js";

/** A value's type and size (a number: itself). */
function describeValue(value: unknown): string {
  if (value instanceof Blob) return `Blob of ${value.size}`;
  if (value instanceof Uint8Array) return `Uint8Array of ${value.byteLength}`;
  if (typeof value === "string") return `string of ${value.length}`;
  return `${typeof value} ${String(value)}`;
}

describe("many calls in one turn over a socket", () => {
  it("10,000 increments (client maxPendingCalls 20,000): answered 1 to 10,000 in order; the count is 10,000", {
    timeout: 120_000,
  }, async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("load-10k"), { limits: { maxPendingCalls: 20_000 }, timeout: 60_000 });
    const values = await Promise.all(Array.from({ length: 10_000 }, () => client.increment()));
    expect(values).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
    expect(await client.getValue()).toBe(10_000);
  });

  it("3,000 increments, the connection dropped while they run: each answered once with its own value; the count is 3,000", {
    timeout: 120_000,
  }, async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("load-3k-drop"), {
      limits: { maxPendingCalls: 5000 },
      timeout: 60_000,
    });
    await client.getValue();
    const calls = Array.from({ length: 3000 }, () => client.increment());
    void calls[700]!.then(() => dropConnection(client));
    const outcomes = await Promise.allSettled(calls);
    const values = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect({ answered: values.length, distinct: new Set(values).size }).toEqual({ answered: 3000, distinct: 3000 });
    expect(await client.getValue()).toBe(3000);
    expect(testConnection(client).attempts.length).toBeGreaterThan(1); // the drop did cut the calls' connection
  });

  it("2,000 calls, some with 1 MB strings, 500 KB Blobs or 800 KB byte arrays: each answered in order, each value whole", {
    timeout: 120_000,
  }, async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("load-mix"), { limits: { maxPendingCalls: 5000 }, timeout: 60_000 });
    const calls: Promise<string>[] = [];
    const expected: string[] = [];
    let increments = 0;
    for (let i = 0; i < 2000; i++) {
      const [call, want] =
        i % 200 === 5
          ? [client.echo("s".repeat(1_000_000)), "string of 1000000"]
          : i % 300 === 7
            ? [client.echo(new Blob([new Uint8Array(500_000).fill(3)])), "Blob of 500000"]
            : i % 170 === 9
              ? [client.echo(new Uint8Array(800_000).fill(1)), "Uint8Array of 800000"]
              : [client.increment(), `number ${++increments}`];
      calls.push(Promise.resolve(call).then(describeValue));
      expected.push(want);
    }
    expect(await Promise.all(calls)).toEqual(expected);
  });
});

/** A client of `room` named `name`, keeping the messages it is sent in `seen` and its errors. */
function member(room: string, name: string, seen: string[] = [], options: RpcClientOptions = {}) {
  const errors: unknown[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name, team: "none" },
    expose: {
      message: (m) => void seen.push(`${m.from}:${m.text}`),
      confirm: () => true,
      slow: async () => "x",
    } satisfies RoomClient,
    onError: (error) => errors.push(error),
    timeout: 60_000,
    ...options,
  });
  return { client, errors, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** `count` members of a new room, connected; disposing the result disposes them all. */
async function members(prefix: string, count: number) {
  const room = uniqueName(prefix);
  const seen = Array.from({ length: count }, () => [] as string[]);
  const all = seen.map((inbox, i) => member(room, `m${i}`, inbox));
  await Promise.all(all.map((m) => m.client.connected()));
  return {
    all,
    seen,
    [Symbol.dispose]() {
      for (const m of all) m[Symbol.dispose]();
    },
  };
}

describe("broadcasts and topic events to many clients while they make calls", () => {
  it("8 clients each make 150 say() calls in one turn: each call reaches 8; each client gets all 1,200 messages, each sender's in order", {
    timeout: 60_000,
  }, async () => {
    using room = await members("storm-say", 8);
    const calls = room.all.flatMap((m) => Array.from({ length: 150 }, (_, k) => m.client.say(`${k}`)));
    expect(await Promise.all(calls)).toEqual(Array(1200).fill(8));
    await Promise.all(room.all.map((m) => m.client.connected())); // a round trip behind the last broadcast
    room.seen.forEach((inbox, i) => {
      expect(inbox, `client ${i}`).toHaveLength(1200);
      for (let from = 0; from < 8; from++) {
        const texts = inbox.filter((s) => s.startsWith(`m${from}:`)).map((s) => Number(s.slice(s.indexOf(":") + 1)));
        expect(texts, `client ${i}, from m${from}`).toEqual(Array.from({ length: 150 }, (_, k) => k));
      }
    });
    expect(room.all.flatMap((m) => m.errors)).toEqual([]);
  });

  it("2,000 events published in one turn to 6 subscribers, while each makes 100 calls: every event in order, every call answered", {
    timeout: 60_000,
  }, async () => {
    using room = await members("storm-publish", 6);
    const ticks = room.all.map(() => [] as number[]);
    const subscriptions = room.all.map((m, i) => subscribe(m.client, "ticks", (tick) => void ticks[i]!.push(tick)));
    try {
      await Promise.all(subscriptions.map((s) => s.ready));
      const published = runInObject(room.all[0]!.client, (obj) => {
        for (let i = 1; i <= 2000; i++) rpcPublish(obj, "ticks", i);
      });
      const calls = room.all.flatMap((m) => Array.from({ length: 100 }, () => m.client.connected()));
      await published;
      expect(await Promise.all(calls)).toEqual(Array(600).fill(6));
      await Promise.all(room.all.map((m) => m.client.connected()));
      expect(ticks).toEqual(room.all.map(() => Array.from({ length: 2000 }, (_, k) => k + 1)));
      expect(room.all.flatMap((m) => m.errors)).toEqual([]);
    } finally {
      for (const s of subscriptions) s[Symbol.dispose]();
    }
  });

  it("200 broadcasts of 60 KB sent from inside the object to 5 clients, while each makes 200 calls: all in order, every call answered", {
    timeout: 60_000,
  }, async () => {
    using room = await members("storm-big", 5);
    const sent = runInObject(room.all[0]!.client, (obj) => {
      for (let i = 0; i < 200; i++)
        rpcClients<RoomClient>(obj).message({ from: "big", text: `${i}:${"x".repeat(60_000)}`, at: new Date(0) });
    });
    const calls = room.all.flatMap((m) => Array.from({ length: 200 }, () => m.client.connected()));
    await sent;
    expect(await Promise.all(calls)).toEqual(Array(1000).fill(5));
    await Promise.all(room.all.map((m) => m.client.connected()));
    for (const inbox of room.seen) {
      const shape = inbox.map((s) => {
        const [from, k, text] = s.split(":");
        return `${from}:${k}:${text!.length}`;
      });
      expect(shape).toEqual(Array.from({ length: 200 }, (_, k) => `big:${k}:60000`));
    }
    expect(room.all.flatMap((m) => m.errors)).toEqual([]);
  });

  it("the object asks the 12 other clients at once, 30 times in one turn: all 360 answered", { timeout: 60_000 }, async () => {
    using room = await members("storm-ask", 13);
    const asks = Array.from({ length: 30 }, (_, k) => room.all[0]!.client.askOthers(`q${k}`));
    expect(await Promise.all(asks)).toEqual(Array(30).fill(Array(12).fill(true)));
    expect(room.all.flatMap((m) => m.errors)).toEqual([]);
  });
});

describe("a topic replay to a client whose maxMessageBytes is 64 KiB", () => {
  for (const kind of ["text", "bytes", "mixed"] as const) {
    it(`60 missed events of about 20 KB (${kind}): all replayed in order, none refused`, { timeout: 30_000 }, async () => {
      const room = uniqueName(`replay-64k-${kind}`);
      using publisher = member(room, "pub");
      await runInObject(publisher.client, (obj) => {
        for (let i = 1; i <= 60; i++) {
          // "é" is one UTF-16 unit and two UTF-8 bytes: a frame's size depends on how it is measured.
          const text = kind === "text" || (kind === "mixed" && i % 2 === 0);
          rpcPublish(obj, "news", (text ? { i, s: "é".repeat(20_000) } : { i, b: new Uint8Array(20_000) }) as never);
        }
      });
      using subscriber = member(room, "sub", [], { limits: { maxMessageBytes: 65_536 } });
      const seen: number[] = [];
      using subscription = subscribe(subscriber.client, "news", (event: unknown) => void seen.push((event as { i: number }).i), {
        since: 0,
      });
      await subscription.ready;
      await subscriber.client.connected();
      expect({ seen, errors: subscriber.errors }).toEqual({ seen: Array.from({ length: 60 }, (_, k) => k + 1), errors: [] });
    });
  }
});

/**
 * dorpc calls and the runtime's input gate. Native Durable Object calls arrive as separate
 * events, and the input gate delivers none while a storage operation is pending, so a method
 * that reads with `await storage.get(…)` and then writes is not interleaved at that read. dorpc
 * sends calls made in the same microtask in one frame, one event; with concurrent ordering (the
 * default) they now start as separate native calls would: after a call that awaits anything, or
 * that returns with a storage read or `blockConcurrencyWhile` still pending, the next starts in a
 * later event, which the gate holds while the read is pending; a call that pipelines on a call of
 * its frame starts the same way once that call settles (packages/rpc/src/call-turns.ts,
 * input-gate.ts; docs/reliability.md, Ordering). Each case compares with native RPC to the same
 * code where native RPC can make the calls; the unit tier is test/unit/input-gate.test.ts.
 *
 * Written from review probes. These failed before their fixes:
 * - 20 `increment` calls (await storage.get, then put) in one frame all read the same count and
 *   all answered 1, where native RPC answers 1..20;
 * - read-modify-writes that await something else before their read (an already-settled promise,
 *   an async helper, a digest, a write): the calls behind them started at once and read the same
 *   count, over a WebSocket and in an HTTP batch;
 * - a call that returns at once, leaving a read-modify-write or a `blockConcurrencyWhile` it
 *   did not await pending: the calls behind it started before it ended (10 background increments
 *   stored 1; the call after the block read the flag the block had not set yet);
 * - increments pipelined on one async call of their frame started back to back when it settled.
 * The others passed: many clients' increments lose none; `blockConcurrencyWhile` holds every
 * client's calls until it ends; read-modify-writes through `transaction`, `list` and
 * `getAlarm`; increments pipelined on a call that answered at once; and the storage methods dorpc
 * watches answer the same values and rejections as before it watched them.
 */
import { createRpcClient, httpTransport } from "@dorpc/rpc";
import { createTestClient, runInObject } from "@dorpc/testing";
import { runInDurableObject, SELF } from "cloudflare:test";
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A KvCounter instance, as the methods below see it. */
interface Host {
  ctx: DurableObjectState;
  flag?: string;
}

const readCount = async (host: Host, key = "count") => (await host.ctx.storage.get<number>(key)) ?? 0;

/** Read-modify-writes of a count whose first await is not their `storage.get`. */
const readModifyWrites = {
  /** Awaits an already-settled value first. */
  async afterSettledAwait(this: Host, by: number): Promise<number> {
    await null;
    const value = (await readCount(this)) + by;
    await this.ctx.storage.put("count", value);
    return value;
  },
  /** Waits for a load that is long done (`await this.loaded`), then writes without awaiting. */
  async afterLoaded(this: Host, by: number): Promise<number> {
    await Promise.resolve(true);
    const value = (await readCount(this)) + by;
    void this.ctx.storage.put("count", value);
    return value;
  },
  /** Hashes its key first (crypto.subtle answers without I/O). */
  async afterDigest(this: Host, by: number): Promise<number> {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode("count"));
    const key = `count-${new Uint8Array(digest)[0]}`;
    const value = (await readCount(this, key)) + by;
    await this.ctx.storage.put(key, value);
    return value;
  },
  /** Awaits a write of another key first. */
  async afterWrite(this: Host, by: number): Promise<number> {
    await this.ctx.storage.put("last", by);
    const value = (await readCount(this)) + by;
    await this.ctx.storage.put("count", value);
    return value;
  },
  async inTransaction(this: Host, by: number): Promise<number> {
    return this.ctx.storage.transaction(async (txn) => {
      const value = ((await txn.get<number>("count")) ?? 0) + by;
      await txn.put("count", value);
      return value;
    });
  },
  async fromList(this: Host, by: number): Promise<number> {
    const all = await this.ctx.storage.list<number>({ prefix: "count" });
    const value = (all.get("count") ?? 0) + by;
    await this.ctx.storage.put("count", value);
    return value;
  },
  /** Counts in the alarm time: `getAlarm`, then `setAlarm`. */
  async onAlarm(this: Host, by: number): Promise<number> {
    const base = 4_000_000_000_000;
    const next = ((await this.ctx.storage.getAlarm()) ?? base) + by;
    await this.ctx.storage.setAlarm(next);
    return next - base;
  },
};

const otherMethods = {
  /** Starts a read-modify-write it does not wait for, and answers at once. */
  bumpInBackground(this: Host): string {
    void this.ctx.storage.get<number>("count").then((count) => this.ctx.storage.put("count", (count ?? 0) + 1));
    return "started";
  },
  /** Blocks the object while it sets `flag`, without making the caller wait for it. */
  blockThenSet(this: Host, ms: number): string {
    this.flag = "setting up";
    void this.ctx.blockConcurrencyWhile(async () => {
      await sleep(ms);
      this.flag = "ready";
    });
    return "blocking";
  },
  readFlag(this: Host): string {
    return this.flag ?? "unset";
  },
  async slowOne(ms: number): Promise<number> {
    await sleep(ms);
    return 1;
  },
  syncOne(): number {
    return 1;
  },
};

type ReadModifyWrite = keyof typeof readModifyWrites;

/** KvCounter with the methods above, as its clients and its native stub see it. */
type Api = KvCounter & { [K in ReadModifyWrite]: (by: number) => Promise<number> } & {
  bumpInBackground(): string;
  blockThenSet(ms: number): string;
  readFlag(): string;
  slowOne(ms: number): Promise<number>;
  syncOne(): number;
};

/**
 * A new KV_COUNTER object whose class also has the methods above, so native RPC and dorpc reach
 * the same code. Native RPC serves only methods of the class prototype, not of a prototype given
 * to one instance: they are added to KvCounter.prototype (in this file's isolate), which keeps
 * its own methods. Returns the object's name.
 */
async function kvCounter(label: string): Promise<string> {
  const name = uniqueName(label);
  await runInDurableObject(env.KV_COUNTER.getByName(name), (instance: object) => {
    const proto = Object.getPrototypeOf(instance) as object;
    if (!Object.hasOwn(proto, "afterSettledAwait")) Object.assign(proto, readModifyWrites, otherMethods);
  });
  return name;
}

const nativeStub = (name: string) => env.KV_COUNTER.getByName(name) as unknown as Api;

const storedCount = (name: string) =>
  runInDurableObject(env.KV_COUNTER.getByName(name), (_instance, state) => state.storage.get<number>("count"));

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

describe("read-modify-writes whose first await is not their storage read, 10 calls in one frame", { timeout: 60_000 }, () => {
  it.each(Object.keys(readModifyWrites) as ReadModifyWrite[])(
    "%s: answers 1..10 over a dorpc WebSocket, as over native RPC",
    async (method) => {
      const native = nativeStub(await kvCounter(`gates-${method}-native`));
      using client = createTestClient<Api>(env.KV_COUNTER, await kvCounter(`gates-${method}`));
      const nativeAnswers = await together(10, () => native[method](1));
      const answers = { native: nativeAnswers.sort((a, b) => a - b), dorpc: await together(10, () => client[method](1)) };
      expect(answers).toEqual({ native: upTo(10), dorpc: upTo(10) });
    },
  );

  it.each(["afterSettledAwait", "inTransaction"] as const)("%s: answers 1..10 in an HTTP batch", async (method) => {
    using client = createRpcClient<Api>("KV_COUNTER", await kvCounter(`gates-${method}-http`), {
      transport: httpTransport({ fetch: (url, init) => SELF.fetch(url, init) }),
      baseUrl: "http://dorpc.test",
      timeout: 10_000,
    });
    expect(await together(10, () => client[method](1))).toEqual(upTo(10));
  });
});

describe("calls behind one that returned at once, leaving a storage read or a block pending", { timeout: 30_000 }, () => {
  it("10 calls in one frame that each start a read-modify-write they do not await store 10, as over native RPC", async () => {
    const nativeName = await kvCounter("gates-background-native");
    await together(10, async () => nativeStub(nativeName).bumpInBackground());
    const name = await kvCounter("gates-background");
    using client = createTestClient<Api>(env.KV_COUNTER, name);
    expect(await together(10, () => client.bumpInBackground())).toEqual(Array(10).fill("started"));
    await vi.waitFor(async () =>
      expect({ native: await storedCount(nativeName), dorpc: await storedCount(name) }).toEqual({ native: 10, dorpc: 10 }),
    );
  });

  it("a call after one that started a blockConcurrencyWhile without awaiting it runs after the block, as over native RPC", async () => {
    const native = nativeStub(await kvCounter("gates-block-native"));
    using client = createTestClient<Api>(env.KV_COUNTER, await kvCounter("gates-block"));
    const [, nativeFlag] = await Promise.all([native.blockThenSet(30), native.readFlag()]);
    const [, dorpcFlag] = await Promise.all([client.blockThenSet(30), client.readFlag()]);
    expect({ nativeFlag, dorpcFlag }).toEqual({ nativeFlag: "ready", dorpcFlag: "ready" });
  });
});

describe("increments pipelined on a call of their frame", { timeout: 30_000 }, () => {
  it("10 increments pipelined on one async call answer 1..10", async () => {
    using client = createTestClient<Api>(env.KV_COUNTER, await kvCounter("gates-pipelined"));
    const one = client.slowOne(20);
    expect(await together(10, () => client.increment(one))).toEqual(upTo(10));
  });

  it("10 increments pipelined on one call that answered at once answer 1..10", async () => {
    using client = createTestClient<Api>(env.KV_COUNTER, await kvCounter("gates-pipelined-sync"));
    const one = client.syncOne();
    expect(await together(10, () => client.increment(one))).toEqual(upTo(10));
  });
});

/** A value as text: a Map as its entries. */
const show = (value: unknown) => (value instanceof Map ? `Map ${JSON.stringify([...value])}` : String(JSON.stringify(value)));

/** The storage methods dorpc watches (input-gate.ts), and blockConcurrencyWhile, of the instance's `ctx`. */
const watched = (ctx: DurableObjectState) => [
  ctx.storage.get,
  ctx.storage.list,
  ctx.storage.getAlarm,
  ctx.storage.transaction,
  ctx.blockConcurrencyWhile,
];

/** Whether the object's storage is watched, and what its watched methods answer: `resolved …`, `rejected …` or `threw …`. */
function watchedAnswers(name: string) {
  return runInDurableObject(env.KV_COUNTER.getByName(name), async (instance) => {
    const { ctx } = instance as unknown as Host;
    const s = ctx.storage;
    const cases: [string, () => unknown][] = [
      ["get", () => s.get("count")],
      ["get of many keys", () => s.get(["count", "absent"])],
      ["get of a number key", () => Reflect.apply(s.get, s, [123])],
      ["list", () => s.list({ prefix: "co" })],
      ["getAlarm", () => s.getAlarm()],
      ["transaction", () => s.transaction((txn) => txn.get("count"))],
      ["transaction that throws", () => s.transaction(() => Promise.reject(new RangeError("rolled back")))],
      ["blockConcurrencyWhile", () => ctx.blockConcurrencyWhile(async () => "done")],
    ];
    const answers: Record<string, string> = {};
    for (const [label, run] of cases) {
      try {
        const result = run();
        answers[label] =
          result instanceof Promise
            ? await result.then(
                (value) => `resolved ${show(value)}`,
                (error) => `rejected ${String(error)}`,
              )
            : `returned ${show(result)}`;
      } catch (error) {
        answers[label] = `threw ${String(error)}`;
      }
    }
    return { watched: Object.hasOwn(s, "get"), answers };
  });
}

describe("the storage methods dorpc watches for the input gate", { timeout: 30_000 }, () => {
  it("answer the same values and rejections once watched as before", async () => {
    const name = uniqueName("gates-watched");
    await runInDurableObject(env.KV_COUNTER.getByName(name), (_instance, state) => state.storage.put("count", 5));
    const before = await watchedAnswers(name);
    using client = createTestClient<KvCounter>(env.KV_COUNTER, name);
    expect(await client.increment(0)).toBe(5);
    const after = await watchedAnswers(name);
    expect(before.watched, "watched before any dorpc connection").toBe(false);
    expect(after).toEqual({ watched: true, answers: before.answers });
  });

  it("are watched once: a second connection leaves them the same functions", async () => {
    const name = uniqueName("gates-watched-once");
    using a = createTestClient<KvCounter>(env.KV_COUNTER, name);
    await a.increment(1);
    let first: unknown[] = [];
    await runInDurableObject(env.KV_COUNTER.getByName(name), (instance) => {
      first = watched((instance as unknown as Host).ctx);
    });
    using b = createTestClient<KvCounter>(env.KV_COUNTER, name);
    expect(await b.increment(1)).toBe(2);
    const same = await runInDurableObject(env.KV_COUNTER.getByName(name), (instance) =>
      watched((instance as unknown as Host).ctx).map((method, i) => method === first[i]),
    );
    expect(same).toEqual([true, true, true, true, true]);
  });
});

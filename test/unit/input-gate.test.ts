/**
 * When the calls of a frame behind another wait for a later event (call-turns.ts, input-gate.ts),
 * on an object whose `ctx` has a storage: after a call that awaits anything — even an
 * already-settled promise, since a method may reach its storage read only after such steps (it
 * was interleaved there when dorpc decided by what was pending as the call returned: found by
 * probing); after a call that returns with a storage read or a `blockConcurrencyWhile` it did not
 * await still pending; and for calls that pipeline on an async call of their frame, which start
 * when it settles. Each case is a read-modify-write that native calls, separate events held by
 * the input gate, never interleave.
 *
 * Unit tier: raw frames into the real dispatcher, with a storage whose reads answer what was
 * stored when they were made, 5 ms later; outside workerd no runtime holds a turn back, so the
 * calls waiting for one wait out the gate themselves (the workerd case is
 * test/workers/storage-gates.test.ts).
 */
import { describe, expect, it, vi } from "vitest";
import { rawServer } from "./helpers.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A Durable Object's storage as far as the gate sees it: a read answers what was stored when it
 * was made, 5 ms later; writes land at once. Without the gate, reads made meanwhile answer the
 * same value.
 */
class SlowStorage {
  readonly data = new Map<string, unknown>();
  fail = false;
  async get(key: string): Promise<unknown> {
    const value = this.data.get(key);
    await sleep(5);
    if (this.fail) throw new Error("storage read failed");
    return value;
  }
  put(key: string, value: unknown): Promise<void> {
    this.data.set(key, value);
    return Promise.resolve();
  }
}

class GatedApi {
  log: string[] = [];
  readonly ctx = {
    storage: new SlowStorage(),
    blockConcurrencyWhile: async <T>(fn: () => Promise<T>): Promise<T> => fn(),
  };
  private readonly loaded = Promise.resolve();
  /** The textbook read-modify-write over async storage. */
  async increment(): Promise<number> {
    const count = ((await this.ctx.storage.get("n")) as number | undefined) ?? 0;
    void this.ctx.storage.put("n", count + 1);
    this.log.push(`wrote ${count + 1}`);
    return count + 1;
  }
  /** The same after waiting for a load that is long done: the read starts a microtask later. */
  async incrementWhenLoaded(): Promise<number> {
    await this.loaded;
    return this.increment();
  }
  /** The same in the background: returns at once, its read still pending. */
  bumpInBackground(): string {
    void this.ctx.storage.get("n").then((count) => this.ctx.storage.put("n", ((count as number | undefined) ?? 0) + 1));
    return "started";
  }
  /** Starts a block it does not await, which sets `flag` when it ends. */
  flag = "unset";
  blockThenSet(): void {
    this.flag = "setting up";
    void this.ctx.blockConcurrencyWhile(async () => {
      await sleep(5);
      this.flag = "ready";
    });
  }
  readFlag(): string {
    return this.flag;
  }
  async one(ms: number): Promise<number> {
    await sleep(ms);
    return 1;
  }
  async add(by: number): Promise<number> {
    const count = ((await this.ctx.storage.get("n")) as number | undefined) ?? 0;
    void this.ctx.storage.put("n", count + by);
    return count + by;
  }
  async blocked(tag: string): Promise<void> {
    await this.ctx.blockConcurrencyWhile(async () => {
      await sleep(5);
      this.log.push(`blocked ${tag}`);
    });
  }
  mark(tag: string): string {
    this.log.push(tag);
    return tag;
  }
}

/** Sends `calls` in one frame and returns the answers in id order once all have come. */
async function answers(server: ReturnType<typeof rawServer>, calls: unknown[][]): Promise<unknown[]> {
  server.sendCalls(calls);
  const replies = await vi.waitFor(
    async () => {
      const all = await server.replies();
      expect(all).toHaveLength(calls.length);
      return all;
    },
    { timeout: 5_000 },
  );
  return replies.sort((a, b) => (a[0] as number) - (b[0] as number)).map((r) => r[2]);
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("calls behind another, on an object with an input gate", () => {
  it.each(["increment", "incrementWhenLoaded"])("%s: 20 calls in one frame answer 1..20", async (method) => {
    const api = new GatedApi();
    const server = rawServer(api);
    expect(
      await answers(
        server,
        Array.from({ length: 20 }, (_, i) => [i + 1, [method, [0]]]),
      ),
    ).toEqual(upTo(20));
    expect(api.ctx.storage.data.get("n")).toBe(20);
  });

  it("calls that return with a read still pending: 10 in one frame store 10", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    await answers(
      server,
      Array.from({ length: 10 }, (_, i) => [i + 1, ["bumpInBackground", [0]]]),
    );
    await vi.waitFor(() => expect(api.ctx.storage.data.get("n")).toBe(10));
  });

  it("a call behind one that returned with a blockConcurrencyWhile running starts after the block", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    expect(
      await answers(server, [
        [1, ["blockThenSet", [0]]],
        [2, ["readFlag", [0]]],
      ]),
    ).toEqual([undefined, "ready"]);
  });

  it("behind an awaited blockConcurrencyWhile: the next call starts after the block", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    server.sendCalls([
      [1, ["blocked", [0, "a"]]],
      [2, ["mark", [0, "b"]]],
    ]);
    expect(api.log).toEqual([]);
    await vi.waitFor(() => expect(api.log).toEqual(["blocked a", "b"]));
  });

  it("10 calls pipelined on one async call of their frame answer 1..10", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    // The arguments `[x]`, x the PIPELINE record naming call 1's result.
    const one = [
      1,
      [
        [1, [1]],
        [30, [1]],
      ],
    ];
    const calls: unknown[][] = [[1, ["one", [0, 5]]], ...Array.from({ length: 10 }, (_, i) => [i + 2, ["add", one]])];
    expect(await answers(server, calls)).toEqual([1, ...upTo(10)]);
  });

  it("a watched read passes its value and its rejection through unchanged", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    expect(await answers(server, [[1, ["increment", [0]]]])).toEqual([1]);
    api.ctx.storage.fail = true;
    server.sendCalls([[2, ["increment", [0]]]]);
    const replies = await vi.waitFor(async () => {
      const all = await server.replies();
      expect(all).toHaveLength(2);
      return all;
    });
    expect(replies[1]![1]).toBe(2); // threw
    expect(JSON.stringify(replies[1])).toContain("storage read failed");
  });
});

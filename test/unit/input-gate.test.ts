/**
 * When the calls of a frame behind one that went async wait for a later event (call-turns.ts):
 * only while the object's input gate would hold a native call back — a storage operation or
 * `blockConcurrencyWhile` pending (input-gate.ts). Behind an await on anything else (a timer, a
 * `fetch`, another object) they start at once, in the frame's event: a native call would be
 * delivered then too, and a timer turn costs about a millisecond under `wrangler dev` (the
 * bench's ordering scenario: 2.1–2.6 × the floor with the turn, 1.06–1.27 without).
 *
 * Unit tier: raw frames into the real dispatcher, with an object whose `ctx` has a storage whose
 * reads resolve a few milliseconds later; outside workerd no runtime holds a turn back, so the
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
  async later(tag: string): Promise<string> {
    this.log.push(`start ${tag}`);
    await sleep(5);
    this.log.push(`end ${tag}`);
    return tag;
  }
  /** The textbook read-modify-write over async storage. */
  async increment(): Promise<number> {
    const count = ((await this.ctx.storage.get("n")) as number | undefined) ?? 0;
    void this.ctx.storage.put("n", count + 1);
    this.log.push(`wrote ${count + 1}`);
    return count + 1;
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

describe("calls behind an async call, on an object with an input gate", () => {
  it("behind an await the gate does not hold (a timer): the next calls start at once, in the frame's event", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    server.sendCalls([
      [1, ["later", [0, "a"]]],
      [2, ["mark", [0, "b"]]],
      [3, ["later", [0, "c"]]],
      [4, ["mark", [0, "d"]]],
    ]);
    expect(api.log, "started in the frame's event, before any later one").toEqual(["start a", "b", "start c", "d"]);
    await vi.waitFor(() => expect(api.log).toHaveLength(6));
    expect((await server.replies()).map((r) => r[0]).sort()).toEqual([1, 2, 3, 4]);
  });

  it("behind a pending storage read: the next call waits until it is done (20 increments in one frame answer 1..20)", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    server.sendCalls(Array.from({ length: 20 }, (_, i) => [i + 1, ["increment", [0]]]));
    expect(api.log).toEqual([]);
    await vi.waitFor(() => expect(api.log).toHaveLength(20), { timeout: 5_000 });
    const replies = await server.replies();
    expect(replies.sort((a, b) => (a[0] as number) - (b[0] as number)).map((r) => r[2])).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(api.ctx.storage.data.get("n")).toBe(20);
  });

  it("behind blockConcurrencyWhile: the next call starts after the block", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    server.sendCalls([
      [1, ["blocked", [0, "a"]]],
      [2, ["mark", [0, "b"]]],
    ]);
    expect(api.log).toEqual([]);
    await vi.waitFor(() => expect(api.log).toEqual(["blocked a", "b"]));
    await server.replies();
  });

  it("a watched read passes its value and its rejection through unchanged", async () => {
    const api = new GatedApi();
    const server = rawServer(api);
    server.sendCalls([[1, ["increment", [0]]]]);
    await vi.waitFor(() => expect(api.log).toEqual(["wrote 1"]));
    api.ctx.storage.fail = true;
    server.sendCalls([[2, ["increment", [0]]]]);
    const replies = await vi.waitFor(async () => {
      const all = await server.replies();
      expect(all).toHaveLength(2);
      return all;
    });
    expect(replies[0]).toEqual([1, 0, 1]);
    expect(replies[1]![1]).toBe(2); // threw
    expect(JSON.stringify(replies[1])).toContain("storage read failed");
  });
});

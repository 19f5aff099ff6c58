/**
 * Sequential ordering (MY_COUNTER, `ordering: "sequential"`) across cuts, an object reset and
 * evictions: the calls of one client run one at a time in the order made, each once. A call
 * resent after a cut waits on the object for its first run, and the calls behind it wait for it
 * in turn, new ones included. A held call the client gives up never runs, and the calls behind it
 * go on in order (docs/reliability.md, Abort). The increments answer the running count, so each
 * answer tells the order the calls ran in.
 */
import { withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, runInObject, type TestClient, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runningPerSocket } from "./cancel-support.js";
import { rejection, uniqueName } from "./helpers.js";
import type { MyCounter } from "./objects.js";

/** How long the first call runs: long enough to be cut, and given up around, while it runs. */
const SLOW_MS = 400;

/** A client of a new MY_COUNTER whose connection is open. */
async function sequentialClient(label: string, initialDelay = 0): Promise<TestClient<MyCounter>> {
  const client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName(label), { reconnect: { initialDelay, jitter: 0 } });
  expect(await client.getValue()).toBe(0);
  return client;
}

describe("sequential calls across cuts", () => {
  it.each([1, 2])("cut %i time(s) while the first call runs: it and the three held behind it each run once, in order", async (cuts) => {
    using client = await sequentialClient("order-cut");
    const first = client.addLater(0, 0, SLOW_MS);
    const held = [client.increment(1), client.increment(10), client.increment(100)];
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([4]));
    for (let cut = 0; cut < cuts; cut++) {
      dropConnection(client);
      await waitForState(client, "open");
      await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([4])); // all four resent
    }
    expect(await first).toBe(0);
    expect(await Promise.all(held)).toEqual([1, 11, 111]);
    expect(await client.getValue()).toBe(111);
  });

  it("a call made after the cut runs after the resend of the call running at the cut", async () => {
    using client = await sequentialClient("order-new");
    const first = client.addLater(0, 0, SLOW_MS);
    const settled: string[] = [];
    void first.then(() => settled.push("first"));
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([1]));
    dropConnection(client);
    const later = client.increment(1);
    void later.then(() => settled.push("later"));
    expect(await later).toBe(1);
    expect(settled).toEqual(["first", "later"]);
  });

  it("the object reset (ctx.abort) while the first call runs: the resent calls run in order, once each", async () => {
    using client = await sequentialClient("order-reset");
    const first = client.addLater(0, 0, SLOW_MS);
    const held = [client.increment(1), client.increment(10)];
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([3]));
    const reset = await rejection(runInObject(client, (_obj, state) => state.abort("reset by test")));
    expect(String(reset)).toContain("reset by test");
    expect(await first).toBe(0);
    expect(await Promise.all(held)).toEqual([1, 11]);
    expect(await client.getValue()).toBe(11);
  });

  it.each(["hibernate", "close"] as const)("evicted (webSockets: %s) between calls: the next calls run in order", async (webSockets) => {
    using client = await sequentialClient("order-evict");
    expect(await client.increment(1)).toBe(1);
    await evictObject(client, { webSockets });
    const first = client.addLater(0, 0, 100);
    const held = [client.increment(10), client.increment(100)];
    expect(await first).toBe(0);
    expect(await Promise.all(held)).toEqual([11, 111]);
  });
});

describe("a held call given up", () => {
  it("aborted while it waits behind a running call: it never runs; the calls before and after it run in order", async () => {
    using client = await sequentialClient("order-abort-held");
    const first = client.addLater(0, 0, SLOW_MS);
    const before = client.increment(1);
    const controller = new AbortController();
    const given = withCallOptions(client.increment(10), { signal: controller.signal });
    const after = client.increment(100);
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([4]));
    controller.abort(new Error("given up"));
    expect(((await rejection(given)) as Error).message).toBe("given up");
    expect(await first).toBe(0);
    expect([await before, await after]).toEqual([1, 101]);
    expect(await client.getValue()).toBe(101);
  });

  it("aborted while the client reconnects after a cut: it never runs; the call behind it runs after the first", async () => {
    using client = await sequentialClient("order-abort-cut", 100);
    const first = client.addLater(0, 0, SLOW_MS);
    const controller = new AbortController();
    const given = withCallOptions(client.increment(1), { signal: controller.signal });
    const after = client.increment(10);
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([3]));
    dropConnection(client);
    controller.abort(new Error("given up"));
    expect(((await rejection(given)) as Error).message).toBe("given up");
    expect(await first).toBe(0);
    expect(await after).toBe(10);
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([0]));
    expect(await client.getValue()).toBe(10);
  });
});

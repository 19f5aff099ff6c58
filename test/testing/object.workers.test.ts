/**
 * Helpers acting on the object behind a client: eviction (hibernating or closing sockets, and
 * what a call in flight does to it), running code inside it, reading its storage, running its
 * alarm.
 */
import { createTestClient, evictObject, readStorage, runAlarm, runInObject, testConnection, TestingError } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { failure, unique } from "./support.js";
import { Counter } from "./worker.js";

describe("evictObject", () => {
  it("hibernate (default): a new instance answers on the same connection, storage intact", async () => {
    using counter = createTestClient(env.COUNTER, unique("evict"));
    expect(await counter.increment(3)).toBe(3);
    const before = await counter.whoami();

    await evictObject(counter);

    expect(await counter.whoami()).not.toBe(before);
    expect(await counter.increment(1)).toBe(4);
    expect(testConnection(counter).attempts).toHaveLength(1);
    expect(testConnection(counter).attempts[0]!.closed).toBeUndefined();
  });

  it('{ webSockets: "close" }: resolves once the client saw the close; the next call reconnects', async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-close"));
    expect(await counter.increment(2)).toBe(2);

    await evictObject(counter, { webSockets: "close" });

    expect(testConnection(counter).attempts[0]!.closed).toBeDefined();
    expect(await counter.increment(1)).toBe(3);
    expect(testConnection(counter).attempts).toHaveLength(2);
  });

  it("an object that is not running cannot be evicted: RUNTIME, naming the object", async () => {
    const name = unique("evict-idle");
    using counter = createTestClient(env.COUNTER, name);
    const error = (await failure(evictObject(counter))) as TestingError;
    expect(error).toBeInstanceOf(TestingError);
    expect(error.code).toBe("RUNTIME");
    expect(error.message).toContain(`COUNTER/${name}`);
  });

  it("with a call in flight, the eviction waits for it: the call answers, then a new instance serves the next", async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-in-flight"));
    const before = await counter.whoami();
    const inFlight = counter.sleep(200);
    await vi.waitFor(async () => expect(await runInObject(counter, (instance) => instance.sleeping)).toBe(1));

    await evictObject(counter);

    expect(await inFlight).toBe(200);
    expect(await counter.whoami()).not.toBe(before);
  });

  it("a call in flight past evictObject's wait: RUNTIME names the request, and says the eviction may still happen", {
    timeout: 15_000,
  }, async () => {
    const counter = createTestClient(env.COUNTER, unique("evict-long-call"), { timeout: 10_000 });
    await counter.whoami();
    const inFlight = counter.sleep(5_000).catch(() => undefined); // outlasts the 3 s wait
    await vi.waitFor(async () => expect(await runInObject(counter, (instance) => instance.sleeping)).toBe(1));

    const error = (await failure(evictObject(counter))) as TestingError;

    expect(error).toBeInstanceOf(TestingError);
    expect(error.code).toBe("RUNTIME");
    expect(error.message).toContain("a call still in flight");
    expect(error.message).toContain("The eviction may still happen once that ends.");
    counter[Symbol.dispose](); // the sleeping call rejects DISPOSED; the object finishes it alone
    await inFlight;
  });

  it("an unknown webSockets value is refused", async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-bad"));
    const error = (await failure(evictObject(counter, { webSockets: "drop" as never }))) as TestingError;
    expect(error.code).toBe("BAD_OPTION");
    expect(error.message).toContain('"drop"');
  });
});

describe("runInObject", () => {
  it("runs inside the object with its instance and state, and returns the result", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-in"));
    await counter.increment(5);
    const seen = await runInObject(counter, (instance, state) => ({
      isCounter: instance instanceof Counter,
      value: instance.getValue(),
      sockets: state.getWebSockets().length,
    }));
    expect(seen).toEqual({ isCounter: true, value: 5, sockets: 1 });
  });

  it("writes made inside are what the client reads next", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-in-write"));
    await runInObject(counter, (_instance, state) => state.storage.kv.put("count", 41));
    expect(await counter.increment()).toBe(42);
  });
});

describe("readStorage", () => {
  it("reads one key, undefined when absent, and every entry as a Map", async () => {
    using counter = createTestClient(env.COUNTER, unique("storage"));
    await counter.increment(7);
    expect(await readStorage(counter, "count")).toBe(7);
    expect(await readStorage(counter, "missing")).toBeUndefined();
    const all = await readStorage(counter);
    expect(all).toBeInstanceOf(Map);
    expect(all.get("count")).toBe(7);
    expect(all.get("upgradePath")).toMatch(/^\/__rpc\/COUNTER\//);
  });

  it("a key that is not a string is refused", async () => {
    using counter = createTestClient(env.COUNTER, unique("storage-bad"));
    const error = (await failure(readStorage(counter, 1 as never))) as TestingError;
    expect(error.code).toBe("BAD_OPTION");
  });
});

describe("runAlarm", () => {
  it("runs a scheduled alarm now (true), and reports when none is scheduled (false)", async () => {
    using counter = createTestClient(env.COUNTER, unique("alarm"));
    await counter.scheduleAlarm();
    expect(await runAlarm(counter)).toBe(true);
    expect(await readStorage(counter, "alarmRan")).toBe(true);
    expect(await runAlarm(counter)).toBe(false);
  });
});

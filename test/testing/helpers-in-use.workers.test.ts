/**
 * The helpers used as tests use them, past the basics in client, connection and object tests:
 * evictions that overlap, repeat or hit several clients; callbacks that fail inside the object;
 * what readStorage shows (only the object's own keys); dropping a connection that is not open
 * yet or any more, or many times; many waiters; names that need escaping, direct and through the
 * Worker; alarms that throw; and what the object sees when a test client is disposed.
 */
import { rpcConnection } from "@dorpc/rpc";
import {
  createTestClient,
  dropConnection,
  evictObject,
  readStorage,
  runAlarm,
  runInObject,
  TestingError,
  testConnection,
  waitForState,
} from "@dorpc/testing";
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { catching, failure, unique } from "./support.js";

describe("evictObject", () => {
  it("two evictions at once both settle (a refused one with a TestingError); storage is intact", async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-two-at-once"));
    await counter.increment();
    const before = await counter.whoami();
    const results = await Promise.allSettled([evictObject(counter), evictObject(counter)]);
    for (const result of results) if (result.status === "rejected") expect(TestingError.is(result.reason)).toBe(true);
    expect(await counter.whoami()).not.toBe(before);
    expect(await counter.increment()).toBe(2);
  });

  it("a second eviction with no call in between is RUNTIME (not running), and the connection still serves", async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-twice"));
    await counter.increment();
    await evictObject(counter);
    const error = await failure(evictObject(counter));
    expect(TestingError.is(error) && error.code).toBe("RUNTIME");
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(1);
  });

  it('{ webSockets: "close" } on a client with reconnect: false leaves it idle; its next call connects again', async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-close-no-reconnect"), { reconnect: false });
    await counter.increment();
    await evictObject(counter, { webSockets: "close" });
    expect(rpcConnection(counter).state).toBe("idle");
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(2);
  });

  it('{ webSockets: "close" } closes every client of the object; each reconnects', async () => {
    const name = unique("evict-close-two");
    using a = createTestClient(env.COUNTER, name);
    using b = createTestClient(env.COUNTER, name);
    await a.increment();
    await b.increment();
    await evictObject(a, { webSockets: "close" });
    await vi.waitFor(() => expect(testConnection(b).attempts[0]!.closed).toBeDefined());
    expect(await b.increment()).toBe(3);
    expect(await a.increment()).toBe(4);
    expect(testConnection(b).attempts).toHaveLength(2);
  });

  it('{ webSockets: "close" } while the first connection is being opened: the call still answers once', async () => {
    using counter = createTestClient(env.COUNTER, unique("evict-while-connecting"));
    await runInObject(counter, () => undefined); // the object is running: it can be evicted
    let evicting: Promise<unknown> | undefined;
    const off = rpcConnection(counter).onStateChange((state) => {
      if (state === "connecting" && !evicting) {
        evicting = evictObject(counter, { webSockets: "close" }).catch((error: unknown) => error);
      }
    });
    const call = counter.increment();
    await vi.waitFor(() => expect(evicting).toBeDefined());
    off();
    const outcome = await evicting;
    if (outcome !== undefined) expect(TestingError.is(outcome)).toBe(true);
    expect(await call).toBe(1);
    expect(await counter.increment()).toBe(2);
  });
});

describe("runInObject with a callback that fails", () => {
  it("a throw rejects with that very error; the instance and the client go on", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-throw"));
    await counter.increment();
    const before = await counter.whoami();
    class Mine extends Error {}
    const error = await failure(
      runInObject(counter, () => {
        throw new Mine("boom");
      }),
    );
    expect(error).toBeInstanceOf(Mine);
    expect((error as Error).message).toBe("boom");
    expect(await counter.increment()).toBe(2);
    expect(await counter.whoami()).toBe(before);
    expect(await runInObject(counter, (instance) => instance.getValue())).toBe(2);
  });

  it("an async rejection rejects with that error", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-reject"));
    await counter.increment();
    const error = await failure(runInObject(counter, async () => Promise.reject(new TypeError("later"))));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe("later");
    expect(await counter.increment()).toBe(2);
  });

  it("a thrown value that is not an Error is what it rejects with", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-throw-string"));
    const error = await failure(
      runInObject(counter, () => {
        throw "plain";
      }),
    );
    expect(error).toBe("plain");
    expect(await counter.increment()).toBe(1);
  });

  it("before any call it wakes the object, which has no socket yet; after a call it has one", async () => {
    using counter = createTestClient(env.COUNTER, unique("run-first"));
    expect(await runInObject(counter, (_instance, state) => state.getWebSockets().length)).toBe(0);
    expect(await counter.increment()).toBe(1);
    expect(await runInObject(counter, (_instance, state) => state.getWebSockets().length)).toBe(1);
  });
});

describe("readStorage", () => {
  it("on an object never called: an empty Map", async () => {
    using counter = createTestClient(env.COUNTER, unique("read-untouched"));
    const all = await readStorage(counter);
    expect(all).toBeInstanceOf(Map);
    expect(all.size).toBe(0);
  });

  it("shows only the object's own keys after calls: dorpc keeps nothing of its own there", async () => {
    using counter = createTestClient(env.COUNTER, unique("read-own-keys"));
    await counter.increment(2);
    await counter.increment(2);
    const all = await readStorage(counter);
    expect([...all.keys()].sort()).toEqual(["count", "upgradeHeader", "upgradePath"]);
  });

  it("the empty string is a key like any other", async () => {
    using counter = createTestClient(env.COUNTER, unique("read-empty-key"));
    expect(await readStorage(counter, "")).toBeUndefined();
    await runInObject(counter, (_instance, state) => state.storage.put("", "empty"));
    expect(await readStorage(counter, "")).toBe("empty");
  });
});

describe("dropConnection when no connection is open", () => {
  it('while the first connection is being opened: NOT_CONNECTED naming "connecting"; the call still answers', async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-connecting"));
    let error: unknown;
    const off = rpcConnection(counter).onStateChange((state) => {
      if (state === "connecting" && error === undefined) error = catching(() => dropConnection(counter));
    });
    const call = counter.increment();
    expect(await call).toBe(1);
    off();
    expect(TestingError.is(error) && error.code).toBe("NOT_CONNECTED");
    expect((error as Error).message).toContain('state "connecting"');
    // It is connecting already: the advice is to wait for it, not to make it connect.
    expect((error as Error).message).toContain('await waitForState(client, "open")');
    expect((error as Error).message).not.toContain("connects on its first call");
  });

  it('right after a drop: NOT_CONNECTED naming "reconnecting"; the client reconnects once', async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-twice"));
    await counter.increment();
    dropConnection(counter);
    const error = catching(() => dropConnection(counter));
    expect(TestingError.is(error) && error.code).toBe("NOT_CONNECTED");
    expect((error as Error).message).toContain('state "reconnecting"');
    expect((error as Error).message).toContain('await waitForState(client, "open")');
    await waitForState(counter, "open");
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(2);
  });
});

describe("dropConnection's exactly-once resend", () => {
  it("with code 1000 (a normal close) a call in flight is still resent and answered once", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-1000"));
    await counter.increment();
    const inFlight = counter.sleep(100);
    await vi.waitFor(async () => expect(await runInObject(counter, (instance) => instance.sleeping)).toBe(1));
    dropConnection(counter, { code: 1000 });
    expect(await inFlight).toBe(100);
    expect(await counter.increment()).toBe(2);
  });

  it("increments cut at varied moments are each counted once and answered with their own value", { timeout: 20_000 }, async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-varied"));
    await counter.increment(0);
    for (let i = 1; i <= 40; i++) {
      const call = counter.increment(1);
      // 0–7 turns of the event loop: the cut lands before the frame went out, before the reply
      // came back, or after.
      for (let turn = 0; turn < i % 8; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
      dropConnection(counter);
      expect(await call).toBe(i);
      await waitForState(counter, "open");
    }
    expect(await counter.getValue()).toBe(40);
    expect(await readStorage(counter, "count")).toBe(40);
  });
});

describe("waitForState", () => {
  it("several waiters on a client disposed meanwhile all reject DISPOSED", async () => {
    const counter = createTestClient(env.COUNTER, unique("wait-many"));
    await counter.increment();
    const waits = Array.from({ length: 5 }, () => failure(waitForState(counter, "reconnecting")));
    counter[Symbol.dispose]();
    for (const error of await Promise.all(waits)) expect(TestingError.is(error) && error.code).toBe("DISPOSED");
  });
});

describe("names that need escaping in the URL", () => {
  for (const name of ["a b", "a/b", "ü-é", "x%41y", "a?b#c", "  lead"]) {
    it(`${JSON.stringify(name)} reaches the same object directly and through the Worker, as the helpers do`, async () => {
      const instance = unique(name);
      using direct = createTestClient(env.COUNTER, instance);
      expect(await direct.increment()).toBe(1);
      expect(await readStorage(direct, "count")).toBe(1);
      using viaWorker = createTestClient(env.COUNTER, instance, { worker: SELF });
      expect(await viaWorker.increment()).toBe(2);
      expect(await readStorage(viaWorker, "count")).toBe(2);
      expect(await env.COUNTER.getByName(instance).getValue()).toBe(2);
    });
  }
});

describe("runAlarm", () => {
  it("on an object never called: false", async () => {
    using counter = createTestClient(env.COUNTER, unique("alarm-untouched"));
    expect(await runAlarm(counter)).toBe(false);
  });

  it("a handler that throws: rejects with its error, the alarm is removed, the object still serves", async () => {
    using counter = createTestClient(env.COUNTER, unique("alarm-throws"));
    await counter.scheduleAlarm();
    await runInObject(counter, (instance) => {
      instance.alarm = () => {
        throw new Error("alarm boom");
      };
    });
    const error = await failure(runAlarm(counter));
    expect((error as Error).message).toBe("alarm boom");
    expect(await runInObject(counter, (_instance, state) => state.storage.getAlarm())).toBeNull();
    expect(await counter.increment()).toBe(1);
  });
});

describe("disposing a test client", () => {
  it("closes the object's socket with 4002 (its session ended): the object sees the close and holds no stale socket", async () => {
    const name = unique("dispose-close");
    {
      using counter = createTestClient(env.COUNTER, name);
      await counter.increment();
    }
    using other = createTestClient(env.COUNTER, name);
    await vi.waitFor(async () => expect(await other.closes()).toEqual([4002]));
    expect(await other.socketCount()).toBe(1);
  });
});

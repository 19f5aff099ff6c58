/**
 * Helpers on the client's connection: its record (attempts, socket), cutting it as a network
 * failure would, and waiting for a state.
 */
import { rpcConnection, RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, runInObject, testConnection, TestingError, waitForState } from "@dorpc/testing";
import { abortAllDurableObjects } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { failure, unique } from "./support.js";

describe("testConnection", () => {
  it("records each attempt and exposes the open socket (here: a heartbeat the runtime answers)", async () => {
    using counter = createTestClient(env.COUNTER, unique("record"));
    expect(testConnection(counter).attempts).toHaveLength(0);
    expect(testConnection(counter).socket).toBeUndefined();
    await counter.increment();
    const [attempt] = testConnection(counter).attempts;
    expect(attempt!.status).toBe(101);
    expect(testConnection(counter).socket).toBe(attempt!.socket);

    const socket = testConnection(counter).socket!;
    const pong = new Promise((resolve) => socket.addEventListener("message", (event) => resolve(event.data), { once: true }));
    socket.send("\u001eP");
    expect(await pong).toBe("\u001eQ");
  });

  it("its stub reaches the same object", async () => {
    using counter = createTestClient(env.COUNTER, unique("stub"));
    await counter.increment(9);
    expect(await (testConnection(counter).stub as DurableObjectStub<import("./worker.js").Counter>).getValue()).toBe(9);
  });
});

describe("dropConnection", () => {
  it("the client sees an abnormal close at once; with exactlyOnce: false a call in flight fails, and the next call reconnects", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop"), { exactlyOnce: false });
    expect(await counter.increment()).toBe(1);
    const inFlight = counter.sleep(200).then(
      () => "resolved",
      (error: unknown) => error,
    );
    // Sent and running on the object (a call made but still queued would go out on the next connection).
    await vi.waitFor(async () => expect(await runInObject(counter, (object) => object.sleeping)).toBe(1));

    dropConnection(counter);

    expect(rpcConnection(counter).state).toBe("reconnecting");
    expect(testConnection(counter).attempts[0]!.closed).toEqual({ code: 1006, reason: "connection dropped by test" });
    const error = (await inFlight) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error.code).toBe("DISCONNECTED");
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(2);
  });

  it("by default (exactly once) a call in flight is resent after the drop and answers once", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-resend"));
    expect(await counter.increment()).toBe(1);
    const inFlight = counter.sleep(100);
    await vi.waitFor(async () => expect(await runInObject(counter, (object) => object.sleeping)).toBe(1));
    dropConnection(counter);
    expect(await inFlight).toBe(100);
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(2);
  });

  it("the object sees its socket close (4006, standing in for 1006) and holds only the new one", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-server"));
    await counter.increment();
    dropConnection(counter);
    await vi.waitFor(async () => expect(await counter.closes()).toEqual([4006]));
    expect(await counter.socketCount()).toBe(1);
  });

  it("with reconnect: false the client goes idle, and its next call connects again", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-no-reconnect"), { reconnect: false });
    await counter.increment();
    dropConnection(counter, { code: 1011, reason: "server went away" });
    expect(rpcConnection(counter).state).toBe("idle");
    expect(testConnection(counter).attempts[0]!.closed).toEqual({ code: 1011, reason: "server went away" });
    expect(await counter.increment()).toBe(2);
  });

  it("reconnection is quick by default (5 ms, no jitter) instead of production's 250 ms backoff", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-quick"));
    await counter.increment();
    // Fake time, so the check is about the configured delay and not about how fast this machine is.
    vi.useFakeTimers();
    try {
      dropConnection(counter);
      vi.advanceTimersByTime(4);
      expect(testConnection(counter).attempts).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(testConnection(counter).attempts).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
    await waitForState(counter, "open");
  });

  it("options.reconnect replaces the quick default", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-own-backoff"), { reconnect: { initialDelay: 1_000, jitter: 0 } });
    await counter.increment();
    vi.useFakeTimers();
    try {
      dropConnection(counter);
      vi.advanceTimersByTime(999);
      expect(testConnection(counter).attempts).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(testConnection(counter).attempts).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a client without an open connection: NOT_CONNECTED, naming the state", () => {
    using counter = createTestClient(env.COUNTER, unique("drop-idle"));
    let error: unknown;
    try {
      dropConnection(counter);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TestingError);
    expect((error as TestingError).code).toBe("NOT_CONNECTED");
    expect((error as TestingError).message).toContain('state "idle"');
  });

  it("a close code outside 1000–4999 is refused", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-bad"));
    await counter.increment();
    expect(() => dropConnection(counter, { code: 99 })).toThrow(/1000 to 4999, got number 99/);
  });
});

describe("after the object is reset", () => {
  it("the client reconnects to the new instance (each attempt uses a fresh stub: the old one is broken)", async () => {
    using counter = createTestClient(env.COUNTER, unique("reset"));
    expect(await counter.increment()).toBe(1);
    await abortAllDurableObjects();
    await vi.waitFor(() => expect(testConnection(counter).attempts[0]!.closed).toBeDefined());
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts.map((attempt) => attempt.status)).toEqual([101, 101]);
  });
});

describe("waitForState", () => {
  it("resolves at once when the client is already in the state (within a few microtasks, no timer)", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-now"));
    let settled = false;
    void waitForState(counter, "idle").then(() => (settled = true));
    for (let i = 0; i < 5 && !settled; i++) await Promise.resolve();
    expect(settled).toBe(true);
  });

  it("resolves when the client reconnects after a drop", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-reconnect"));
    await counter.increment();
    dropConnection(counter);
    await waitForState(counter, "open");
    expect(testConnection(counter).attempts).toHaveLength(2);
  });

  it("times out with TIMEOUT listing the states seen, and says an idle client does not connect by itself", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-timeout"));
    const error = (await failure(waitForState(counter, "open", { timeout: 20 }))) as TestingError;
    expect(error).toBeInstanceOf(TestingError);
    expect(error.code).toBe("TIMEOUT");
    expect(error.message).toContain('did not reach state "open" within 20 ms (states seen: idle)');
    expect(error.message).toContain("only connects on a call");
  });

  it("rejects with DISPOSED when the client is disposed while waiting for another state", async () => {
    const counter = createTestClient(env.COUNTER, unique("wait-disposed"));
    const waiting = failure(waitForState(counter, "open"));
    counter[Symbol.dispose]();
    expect(((await waiting) as TestingError).code).toBe("DISPOSED");
  });

  it('waiting for "disposed" resolves when the client is disposed', async () => {
    const counter = createTestClient(env.COUNTER, unique("wait-for-disposed"));
    await counter.increment();
    const waiting = waitForState(counter, "disposed");
    counter[Symbol.dispose]();
    await waiting;
    expect(rpcConnection(counter).state).toBe("disposed");
  });

  it("an unknown state is refused", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-bad"));
    const error = (await failure(waitForState(counter, "closed" as never))) as TestingError;
    expect(error.code).toBe("BAD_OPTION");
    expect(error.message).toContain("idle, connecting, open, reconnecting, disposed");
  });
});

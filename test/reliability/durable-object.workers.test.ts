/**
 * Server-side faults in workerd (issue #6): hibernation/eviction, resets (abortAllDurableObjects,
 * ctx.abort() mid-call), a throwing constructor, ordering across awaits, and the heartbeat
 * auto-response. Each test uses its own Durable Object instance of `Reliable` (worker.ts).
 */
import { rpcConnection, type RpcError, withCallOptions } from "@dorpc/rpc";
import { abortAllDurableObjects, env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { go, rpcFailure } from "./outcomes.js";
import { connect, unique } from "./upgrade.js";
import { brokenConstructors, type Reliable } from "./worker.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function nextText(socket: WebSocket, accept: (data: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const listener = (event: MessageEvent) => {
      if (typeof event.data === "string" && accept(event.data)) {
        socket.removeEventListener("message", listener);
        resolve(event.data);
      }
    };
    socket.addEventListener("message", listener);
  });
}

describe("hibernation and eviction", () => {
  it("after eviction (sockets hibernated) the next call works on the same socket; attachment survived, constructor re-ran", async () => {
    const name = unique("evict");
    using c = connect<Reliable>(name, {}, "?who=alice");
    expect(await c.client.increment()).toBe(1);
    const before = await c.client.callerInfo();
    expect(before?.identity).toBe("alice");
    expect(before?.connectedAt).toBeGreaterThan(0);
    expect(await c.client.constructions()).toBe(1);
    const firstInstance = await c.client.whoami();

    await evictDurableObject(env.RELIABLE.getByName(name));

    expect(await c.client.increment()).toBe(2);
    expect(await c.client.callerInfo()).toEqual(before); // identity and connectedAt from the attachment
    expect(await c.client.constructions()).toBe(2);
    expect(await c.client.whoami()).not.toBe(firstInstance);
    expect(c.transport.attempts).toHaveLength(1);
    expect(c.transport.attempts[0]!.closed).toBeUndefined();
    expect(rpcConnection(c.client).state).toBe("open");
  });

  it("eviction while an async call is running: the call still settles (reply or DISCONNECTED), never hangs until its timeout", async () => {
    const name = unique("evict-mid-call");
    using c = connect<Reliable>(name, { timeout: 3_000 });
    await c.client.getValue();
    const running = go(c.client.sleep(300));
    await sleep(50); // the call is running on the object, awaiting its timer
    await evictDurableObject(env.RELIABLE.getByName(name));
    const outcome = await running.then(
      (value) => value,
      (error: RpcError) => error.code,
    );
    expect(outcome, "the call settled only by the client's own timeout: the object was evicted mid-call and the reply was lost").not.toBe(
      "TIMEOUT",
    );
  });

  it("repeated evictions between calls lose nothing", async () => {
    const name = unique("evict-many");
    using c = connect<Reliable>(name);
    for (let i = 1; i <= 5; i++) {
      expect(await c.client.increment()).toBe(i);
      await evictDurableObject(env.RELIABLE.getByName(name));
    }
    expect(await c.client.getValue()).toBe(5);
    expect(await c.client.constructions()).toBe(6);
    expect(c.transport.attempts).toHaveLength(1);
  });

  it("eviction that closes sockets: the client reconnects by itself and storage is intact", async () => {
    const name = unique("evict-close");
    using c = connect<Reliable>(name);
    expect(await c.client.increment(3)).toBe(3);
    await evictDurableObject(env.RELIABLE.getByName(name), { webSockets: "close" });
    await vi.waitFor(() => expect(c.transport.attempts[0]!.closed).toBeDefined(), { timeout: 3000, interval: 10 });
    expect(await c.client.increment()).toBe(4);
    expect(c.transport.attempts).toHaveLength(2);
  });
});

// At most once: what a client promises when it does not resend (exactlyOnce: false). The
// default, exactly once, is below.
describe("resets mid-call (exactlyOnce: false)", () => {
  it("abortAllDurableObjects() while a call is in flight: DISCONNECTED, then the next call reconnects and works", async () => {
    const name = unique("abort-all");
    using c = connect<Reliable>(name, { exactlyOnce: false });
    expect(await c.client.increment(2)).toBe(2);
    const slow = go(c.client.sleep(5_000));
    await sleep(50);
    await abortAllDurableObjects();
    const error = await rpcFailure(slow, "DISCONNECTED");
    expect(error.message).toContain("RELIABLE/");
    expect(await c.client.increment()).toBe(3); // storage survived the reset
    expect(c.transport.attempts.length).toBeGreaterThanOrEqual(2);
    expect(rpcConnection(c.client).state).toBe("open");
  });

  it("ctx.abort() inside a method: that call and other in-flight calls get DISCONNECTED; the object recovers", async () => {
    const name = unique("ctx-abort");
    using a = connect<Reliable>(name, { exactlyOnce: false });
    using b = connect<Reliable>(name, { exactlyOnce: false });
    expect(await a.client.increment()).toBe(1);
    const bystander = go(b.client.sleep(5_000));
    await sleep(50);
    const aborting = await rpcFailure(a.client.abortMe(), "DISCONNECTED");
    const other = await rpcFailure(bystander, "DISCONNECTED");
    for (const error of [aborting, other]) expect(error.message).toMatch(/before the reply arrived/);
    expect(await a.client.increment()).toBe(2);
    expect(await b.client.getValue()).toBe(2);
    expect(await a.client.constructions()).toBe(2);
  });

  it("a sent call is not replayed after the reset; an idempotent one is", async () => {
    const name = unique("abort-replay");
    using c = connect<Reliable>(name, { exactlyOnce: false });
    await c.client.getValue();
    const plain = go(c.client.logAfter("plain", 5_000));
    await sleep(50);
    await abortAllDurableObjects();
    await rpcFailure(plain, "DISCONNECTED");
    const idem = withCallOptions(c.client.logAfter("idem", 200), { idempotent: true });
    await sleep(50);
    await abortAllDurableObjects();
    expect(await idem).toBe(1);
    expect(await c.client.getLog()).toEqual(["idem"]);
  });

  it("the object's own socket close (1011) mid-call: DISCONNECTED naming the code, then reconnects", async () => {
    const name = unique("drop-me");
    using c = connect<Reliable>(name, { exactlyOnce: false });
    await c.client.increment();
    const error = await rpcFailure(c.client.dropMe(), "DISCONNECTED");
    expect(error.message).toContain("1011");
    expect(await c.client.increment()).toBe(2);
  });
});

describe("exactly once across drops, resets and evictions (the default)", () => {
  it("a call that ran and wrote, whose answer was lost with its socket, is answered from the record after the reconnect: it ran once", async () => {
    const name = unique("answer-lost");
    using c = connect<Reliable>(name);
    expect(await c.client.increment()).toBe(1);
    expect(await c.client.incrementThenDrop()).toBe(2);
    expect(await c.client.getValue()).toBe(2);
    expect(c.transport.attempts).toHaveLength(2);
    expect(c.transport.attempts[0]!.closed?.[0]).toBe(1011);
  });

  it("evicted between the run and the resend: the record is in storage, the new instance answers from it", async () => {
    const name = unique("evict-between");
    using c = connect<Reliable>(name, { reconnect: { initialDelay: 300, maxDelay: 300, jitter: 0 } });
    expect(await c.client.increment()).toBe(1);
    const lost = go(c.client.incrementThenDrop());
    await vi.waitFor(() => expect(c.transport.attempts[0]!.closed).toBeDefined(), { timeout: 3000, interval: 5 });
    await evictDurableObject(env.RELIABLE.getByName(name)); // before the client is back (300 ms)
    expect(await lost).toBe(2);
    expect(await c.client.getValue()).toBe(2);
    expect(await c.client.constructions()).toBe(2);
  });

  it("a resend of a call still running waits for it: one run, one answer", async () => {
    const name = unique("still-running");
    using c = connect<Reliable>(name, { reconnect: { initialDelay: 5, maxDelay: 5, jitter: 0 } });
    await c.client.getValue();
    const slow = go(c.client.countedSleep("slow", 300));
    await sleep(50);
    c.transport.attempts[0]!.socket!.close(1000, "test: client side drop"); // the object keeps running the call
    expect(await slow).toBe(1);
    expect(await c.client.runsOf("slow")).toBe(1);
  });

  it("abortAllDurableObjects() mid-call: the call never finished, so nothing was recorded and its resend runs it again (the documented limit for a method that writes before an await)", async () => {
    const name = unique("abort-resend");
    using c = connect<Reliable>(name);
    await c.client.getValue();
    const slow = go(c.client.countedSleep("reset", 200));
    await sleep(50);
    await abortAllDurableObjects();
    expect(await slow).toBe(2); // the first run's storage write survived; the call ran again after the reset
    expect(await c.client.runsOf("reset")).toBe(2);
  });
});

describe("a constructor that throws", () => {
  it("gives a clear CONNECT_FAILED error, and works again once fixed", async () => {
    const name = unique("broken-ctor");
    brokenConstructors.add(name);
    try {
      using c = connect<Reliable>(name);
      const error = await rpcFailure(c.client.increment(), "CONNECT_FAILED");
      expect(error.message).toContain("Reliable constructor failed on purpose"); // the cause reaches the client
      expect(rpcConnection(c.client).state).toBe("idle"); // never opened: no reconnect loop
      brokenConstructors.delete(name);
      expect(await c.client.increment()).toBe(1);
    } finally {
      brokenConstructors.delete(name);
    }
  });

  it("while the object cannot start, a connected client keeps retrying; once fixed it reconnects and queued calls go out once", async () => {
    const name = unique("broken-later");
    using c = connect<Reliable>(name);
    expect(await c.client.increment()).toBe(1);
    brokenConstructors.add(name);
    try {
      await abortAllDurableObjects();
      await vi.waitFor(() => expect(c.transport.attempts.length).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 10 });
      expect(rpcConnection(c.client).state).toBe("reconnecting");
      const queued = go(c.client.increment());
      brokenConstructors.delete(name);
      expect(await queued).toBe(2);
      expect(await c.client.getValue()).toBe(2);
    } finally {
      brokenConstructors.delete(name);
    }
  });
});

describe("ordering", () => {
  it("calls from one client run in the order sent even when earlier ones await a timer or storage", async () => {
    const name = unique("order");
    using c = connect<Reliable>(name);
    const results = await Promise.all([
      c.client.logAfter("a", 60),
      c.client.log("b"),
      c.client.logAfterStorage("c"),
      c.client.log("d"),
      c.client.logAfter("e", 5),
      c.client.log("f"),
    ]);
    expect(results).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await c.client.getLog()).toEqual(["a", "b", "c", "d", "e", "f"]);
  });

  it("order holds across frames sent while an earlier call is still awaiting", async () => {
    const name = unique("order-frames");
    using c = connect<Reliable>(name);
    await c.client.getValue();
    const first = go(c.client.logAfter("slow", 80));
    await sleep(10); // separate frame
    const second = go(c.client.log("fast"));
    await sleep(10);
    const third = go(c.client.logAfterStorage("storage"));
    expect(await Promise.all([first, second, third])).toEqual([1, 2, 3]);
    expect(await c.client.getLog()).toEqual(["slow", "fast", "storage"]);
  });
});

describe("heartbeat auto-response", () => {
  it("answers \\u001eP with \\u001eQ without invoking webSocketMessage, also while hibernated", async () => {
    const name = unique("heartbeat");
    using c = connect<Reliable>(name);
    expect(await c.client.messageCount()).toBe(1); // the client's Hello and this call: one message (Outbox.lead)
    const socket = c.transport.attempts[0]!.socket!;
    for (let i = 0; i < 3; i++) {
      const pong = nextText(socket, (data) => data === "\u001eQ");
      socket.send("\u001eP");
      expect(await pong).toBe("\u001eQ");
    }
    expect(await c.client.messageCount()).toBe(2); // the pings never reached webSocketMessage

    await evictDurableObject(env.RELIABLE.getByName(name));
    const pong = nextText(socket, (data) => data === "\u001eQ");
    socket.send("\u001eP");
    expect(await pong).toBe("\u001eQ");
    expect(await c.client.constructions()).toBe(2); // only this call woke the object
    expect(await c.client.messageCount()).toBe(4);
  });

  it("the client's own heartbeat keeps a hibernated connection open without waking the object", async () => {
    const name = unique("heartbeat-client");
    using c = connect<Reliable>(name, { heartbeat: { interval: 20, timeout: 500 } });
    expect(await c.client.increment()).toBe(1);
    await evictDurableObject(env.RELIABLE.getByName(name));
    await sleep(300);
    expect(rpcConnection(c.client).state).toBe("open");
    expect(c.transport.attempts).toHaveLength(1);
    expect(await c.client.constructions()).toBe(2);
    expect(await c.client.messageCount()).toBe(3); // Hello with increment, constructions, this one
  });
});

/**
 * Client-side reliability (issue #6), in Node: the real client session and the real
 * dispatcher, joined by an in-memory transport with injected faults (fault-transport.ts).
 * Timing-sensitive schedules (backoff, reset) run on fake timers, so they assert exact delays;
 * the rest run on real timers with small numbers and assert behaviour, with generous bounds.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, getRpcSession, rpcConnection, withCallOptions, type RpcClientOptions } from "../../packages/rpc/src/client.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { CloseCode } from "../../packages/rpc/src/envelopes.js";
import type { CallOptions, ClientSession, ConnectionState } from "../../packages/rpc/src/session.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { callIds, faulty, type Faults } from "./fault-transport.js";
import { Service } from "./service.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A client of `Service` over the fault transport. At-most-once by default (`exactlyOnce: false`):
 * this file specifies what a client promises when no delivery record answers its resends; the
 * exactly-once behaviour is in exactly-once.node.test.ts.
 */
function setup(options: Omit<RpcClientOptions, "transport"> = {}, serverOptions?: RpcServerOptions) {
  const service = new Service();
  const faults = faulty(service, serverOptions);
  const client = createRpcClient<Service>("SERVICE", "one", {
    heartbeat: false,
    exactlyOnce: false,
    ...options,
    reconnect: options.reconnect ?? { initialDelay: 10, maxDelay: 80 },
    transport: faults.factory,
  });
  const connection = rpcConnection(client);
  const states: ConnectionState[] = [];
  connection.onStateChange((state) => states.push(state));
  const session = getRpcSession(client);
  return { service, faults, client, connection, states, session, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** A call through the session itself, counting how often each settle callback runs. */
function rawCall(session: ClientSession, method: string, args: unknown[], options?: CallOptions) {
  const record = { resolved: 0, rejected: 0, value: undefined as unknown, error: undefined as unknown };
  const call = session.call({ kind: "root" }, [method], args, options);
  call.observed = true;
  // Synchronous, like the settlement itself: counts every time the call settles.
  call.whenSettled(() => {
    if (call.ok) {
      record.resolved++;
      record.value = call.value;
    } else {
      record.rejected++;
      record.error = call.error;
    }
  });
  return record;
}

/**
 * Sends a chain now. A dorpc chain is lazy (it goes out when awaited); `then` sends it. The
 * returned promise has a no-op handler attached so a test may await it later without an
 * unhandled-rejection report in between.
 */
function go<T>(chain: PromiseLike<T>): Promise<T> {
  const sent = Promise.resolve(chain.then((value) => value));
  sent.catch(() => {});
  return sent;
}

async function failure(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

async function rpcFailure(promise: PromiseLike<unknown>, code: RpcError["code"]): Promise<RpcError> {
  const error = await failure(promise);
  expect(error, String(error)).toBeInstanceOf(RpcError);
  expect((error as RpcError).code, (error as RpcError).message).toBe(code);
  return error as RpcError;
}

/** Delays between consecutive connection attempts after index `from`. */
function gaps(faults: Faults, from: number, since: number): number[] {
  const out: number[] = [];
  let previous = since;
  for (const at of faults.attempts.slice(from)) {
    out.push(at - previous);
    previous = at;
  }
  return out;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("reconnect", () => {
  it("after a cut the state goes open → reconnecting → open and the next call works on a new connection", async () => {
    using t = setup();
    expect(await t.client.increment()).toBe(1);
    t.faults.last.paired.cut();
    expect(t.connection.state).toBe("reconnecting");
    await t.connection.waitForOpen();
    expect(t.states).toEqual(["connecting", "open", "reconnecting", "open"]);
    expect(await t.client.increment()).toBe(2);
    expect(t.faults.connections).toHaveLength(2);
    expect(t.faults.connections[0]!.closed?.[0]).toBe(1006);
  });

  it("backoff delays grow by `factor` and are capped at maxDelay (fake timers, no jitter draw)", async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, "random").mockReturnValue(0); // delay = base × (1 − jitter × 0) = base
    using t = setup({ reconnect: { initialDelay: 10, maxDelay: 80, factor: 2, jitter: 0.5 } });
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await first).toBe(1);
    t.faults.failOpens = Infinity;
    const cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(10 + 20 + 40 + 80 + 80 + 80 + 5);
    expect(gaps(t.faults, 1, cutAt)).toEqual([10, 20, 40, 80, 80, 80]);
    expect(t.connection.state).toBe("reconnecting");
    t.faults.failOpens = 0;
    await vi.advanceTimersByTimeAsync(80);
    expect(t.connection.state).toBe("open");
    const next = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await next).toBe(2);
  });

  it("jitter takes up to `jitter` of each delay: delay = base × (1 − jitter × random)", async () => {
    vi.useFakeTimers();
    const draws = [1, 0.5, 0, 1, 0.5, 0.25];
    let i = 0;
    vi.spyOn(Math, "random").mockImplementation(() => draws[i++ % draws.length]!);
    using t = setup({ reconnect: { initialDelay: 10, maxDelay: 80, factor: 2, jitter: 0.5 } });
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    await first;
    t.faults.failOpens = Infinity;
    const cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(400);
    const bases = [10, 20, 40, 80, 80, 80];
    const expected = bases.map((base, k) => base * (1 - 0.5 * draws[k]!));
    expect(gaps(t.faults, 1, cutAt).slice(0, 6)).toEqual(expected.map((d) => Math.ceil(d)));
    // Never below half the base, never above the cap.
    for (const gap of gaps(t.faults, 1, cutAt)) expect(gap).toBeLessThanOrEqual(80);
  });

  it("with jitter, each delay stays within [base/2, base] (base capped at maxDelay), and capped delays are spread out", async () => {
    vi.useFakeTimers();
    const draws = [0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.05];
    let k = 0;
    vi.spyOn(Math, "random").mockImplementation(() => draws[k++ % draws.length]!);
    using t = setup({ reconnect: { initialDelay: 10, maxDelay: 80, factor: 2, jitter: 0.5 } });
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await first).toBe(1);
    t.faults.failOpens = Infinity;
    const cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(700);
    const delays = gaps(t.faults, 1, cutAt);
    // 10 + 20 + 40 + 80 … at most; jitter only shortens: at least 7 attempts in 700 ms.
    expect(delays.length).toBeGreaterThanOrEqual(7);
    const bases = [10, 20, 40, 80];
    delays.forEach((delay, n) => {
      const base = bases[Math.min(n, 3)]!;
      expect(delay).toBeGreaterThanOrEqual(base / 2);
      expect(delay).toBeLessThanOrEqual(base);
    });
    expect(new Set(delays.slice(3)).size).toBeGreaterThan(1);
    t.faults.failOpens = 0;
    await vi.advanceTimersByTimeAsync(100);
    expect(t.connection.state).toBe("open");
  });

  it("a connection that stays open for resetAfter resets the backoff; a shorter one does not", async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, "random").mockReturnValue(0);
    using t = setup({ reconnect: { initialDelay: 10, maxDelay: 80, factor: 2, jitter: 0.5, resetAfter: 100 } });
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    await first;
    // Three refused attempts, the fourth opens: 10, 20, 40, 80.
    t.faults.failOpens = 3;
    let cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(10 + 20 + 40 + 80 + 1);
    expect(gaps(t.faults, 1, cutAt)).toEqual([10, 20, 40, 80]);
    expect(t.connection.state).toBe("open");
    // Open for 50 ms (< resetAfter): the next delay continues the sequence (capped at 80).
    await vi.advanceTimersByTimeAsync(50);
    cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(81);
    expect(gaps(t.faults, 5, cutAt)).toEqual([80]);
    expect(t.connection.state).toBe("open");
    // Open for resetAfter: back to initialDelay.
    await vi.advanceTimersByTimeAsync(100);
    cutAt = Date.now();
    t.faults.last.paired.cut();
    await vi.advanceTimersByTimeAsync(11);
    expect(gaps(t.faults, 6, cutAt)).toEqual([10]);
    expect(t.connection.state).toBe("open");
  });

  it("a connection attempt that never opens nor fails does not leave the client reconnecting forever", async () => {
    // E.g. an upgrade accepted by a proxy that is still starting and never answered (seen with
    // `wrangler dev` restarts). `connectTimeout` abandons the attempt (close 4001) and the
    // normal backoff tries again.
    vi.useFakeTimers();
    using t = setup({ timeout: 5_000, connectTimeout: 200 } as Parameters<typeof setup>[0]);
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await first).toBe(1);
    const factory = t.faults.factory;
    let hung = 0;
    const closes: number[] = [];
    (t.session as unknown as { options: { transport: typeof factory } }).options.transport = (handler) => {
      if (hung++ === 0)
        return {
          open: () => new Promise<void>(() => {}),
          send() {},
          close: (code = 1000, reason = "") => {
            closes.push(code);
            handler.onClose(code, reason);
          },
        };
      return factory(handler);
    };
    t.faults.last.paired.cut();
    const call = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1_500);
    expect(t.connection.state, "still waiting on the first reconnection attempt").toBe("open");
    expect(await call).toBe(2);
    expect(closes).toEqual([4001]); // CloseCode.ConnectTimeout
  });

  it("reconnect: false leaves the client idle after a cut; the next call connects again", async () => {
    using t = setup({ reconnect: false });
    await t.client.increment();
    t.faults.last.paired.cut();
    expect(t.connection.state).toBe("idle");
    await sleep(30);
    expect(t.faults.attempts).toHaveLength(1);
    expect(await t.client.increment()).toBe(2);
    expect(t.faults.attempts).toHaveLength(2);
  });
});

describe("calls across a cut", () => {
  it("in-flight calls reject exactly once with DISCONNECTED and are never replayed", async () => {
    using t = setup({}, { ordering: "concurrent" }); // both calls start on the server at once
    await t.client.increment();
    const a = rawCall(t.session, "hold", ["a"]);
    const b = rawCall(t.session, "hold", ["b"]);
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(2));
    t.faults.last.paired.cut();
    for (const call of [a, b]) {
      expect(call).toMatchObject({ resolved: 0, rejected: 1 });
      expect((call.error as RpcError).code).toBe("DISCONNECTED");
      expect((call.error as RpcError).message).toContain("1006");
    }
    await t.connection.waitForOpen();
    expect(await t.client.increment()).toBe(2);
    t.service.releaseAll(); // the old calls finish on the server; their replies have nowhere to go
    await sleep(20);
    expect(a).toMatchObject({ resolved: 0, rejected: 1 });
    expect(b).toMatchObject({ resolved: 0, rejected: 1 });
    expect(t.service.runsOf("hold:a")).toBe(1);
    expect(t.service.runsOf("hold:b")).toBe(1);
    expect(callIds(t.faults.connections[1]!.paired.sentByClient)).toHaveLength(1); // just the increment
    expect(t.connection.pendingCalls).toBe(0);
  });

  it("a call queued but not yet sent when the connection drops is sent once on the next connection", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.last.paired.hold = true; // frames leave the client but never reach the server…
    const held = go(t.client.increment(10));
    await sleep(5);
    // …this one was handed to the transport: it counts as sent and is rejected, not replayed.
    t.faults.last.paired.cut();
    await rpcFailure(held, "DISCONNECTED");
    expect(t.service.runsOf("increment")).toBe(1);
  });

  it("calls made while reconnecting are queued and sent exactly once, in order, after open", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.failOpens = 2;
    t.faults.last.paired.cut();
    expect(t.connection.state).toBe("reconnecting");
    const calls = [1, 2, 3, 4, 5].map(() => go(t.client.increment()));
    expect(t.connection.pendingCalls).toBe(5);
    expect(await Promise.all(calls)).toEqual([2, 3, 4, 5, 6]);
    expect(t.faults.attempts).toHaveLength(4); // first, two refused, the one that opened
    expect(t.service.runsOf("increment")).toBe(6);
    const ids = callIds(t.faults.connections[1]!.paired.sentByClient);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
  });

  it("queue full: the call past limits.maxPendingCalls rejects at once with LIMIT; the rest go out", async () => {
    using t = setup({ limits: { maxPendingCalls: 4 } });
    await t.client.increment();
    t.faults.failOpens = 3;
    t.faults.last.paired.cut();
    const queued = [1, 2, 3, 4].map(() => go(t.client.increment()));
    const error = await rpcFailure(t.client.increment(), "LIMIT");
    expect(error.message).toContain("maxPendingCalls");
    expect(t.connection.pendingCalls).toBe(4);
    expect(await Promise.all(queued)).toEqual([2, 3, 4, 5]);
    expect(t.service.runsOf("increment")).toBe(5);
  });

  it("idempotent calls are re-sent after reconnecting; plain ones are not", async () => {
    using t = setup({}, { ordering: "concurrent" });
    await t.client.increment();
    const idem = withCallOptions(t.client.hold("idem"), { idempotent: true });
    const plain = go(t.client.hold("plain"));
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(2));
    t.faults.last.paired.cut();
    await rpcFailure(plain, "DISCONNECTED");
    await t.connection.waitForOpen();
    await vi.waitFor(() => expect(t.service.runsOf("hold:idem")).toBe(2));
    t.service.releaseAll();
    expect(await idem).toBe("idem");
    expect(t.service.runsOf("hold:plain")).toBe(1);
    const resent = callIds(t.faults.connections[1]!.paired.sentByClient);
    expect(resent).toHaveLength(1); // only the idempotent call went out again
  });

  it("an idempotent call is re-sent at most `retries` times, then rejects with DISCONNECTED", async () => {
    using t = setup();
    await t.client.increment();
    const idem = rawCall(t.session, "hold", ["r"], { idempotent: true, retries: 1 });
    await vi.waitFor(() => expect(t.service.runsOf("hold:r")).toBe(1));
    t.faults.last.paired.cut();
    await t.connection.waitForOpen();
    await vi.waitFor(() => expect(t.service.runsOf("hold:r")).toBe(2));
    expect(idem).toMatchObject({ resolved: 0, rejected: 0 });
    t.faults.last.paired.cut();
    expect(idem).toMatchObject({ resolved: 0, rejected: 1 });
    expect((idem.error as RpcError).code).toBe("DISCONNECTED");
    await t.connection.waitForOpen();
    await sleep(20);
    expect(t.service.runsOf("hold:r")).toBe(2);
  });
});

describe("timeouts and abort", () => {
  it("a timeout frees the pending entry; the late reply is ignored", async () => {
    using t = setup();
    await t.client.increment();
    const call = rawCall(t.session, "hold", ["late"], { timeout: 30 });
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    await vi.waitFor(() => expect(call.rejected).toBe(1));
    expect((call.error as RpcError).code).toBe("TIMEOUT");
    expect(t.connection.pendingCalls).toBe(0);
    t.service.releaseAll();
    await sleep(20);
    expect(call).toMatchObject({ resolved: 0, rejected: 1 });
    expect(t.connection.state).toBe("open"); // the stray reply did not upset the connection
    expect(await t.client.increment()).toBe(2);
  });

  it("the client-wide timeout applies too, with a clear message", async () => {
    using t = setup({ timeout: 25 });
    const error = await rpcFailure(t.client.hold("x"), "TIMEOUT");
    expect(error.message).toMatch(/No reply from SERVICE\/one within 25 ms/);
    expect(t.connection.pendingCalls).toBe(0);
  });

  it("an AbortSignal rejects the call with its reason, frees the entry and ignores the reply", async () => {
    using t = setup();
    await t.client.increment();
    const controller = new AbortController();
    const call = rawCall(t.session, "hold", ["abort"], { signal: controller.signal });
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    const reason = new Error("user went away");
    controller.abort(reason);
    expect(call).toMatchObject({ resolved: 0, rejected: 1 });
    expect(call.error).toBe(reason);
    expect(t.connection.pendingCalls).toBe(0);
    t.service.releaseAll();
    await sleep(20);
    expect(call).toMatchObject({ resolved: 0, rejected: 1 });
  });

  it("an already-aborted signal rejects without sending; aborting a queued call keeps it off the wire", async () => {
    using t = setup();
    await t.client.increment();
    const sentBefore = callIds(t.faults.last.paired.sentByClient).length;
    await expect(withCallOptions(t.client.increment(), { signal: AbortSignal.abort("no") })).rejects.toBe("no");
    await sleep(10);
    expect(callIds(t.faults.last.paired.sentByClient)).toHaveLength(sentBefore);

    t.faults.failOpens = 1;
    t.faults.last.paired.cut();
    const controller = new AbortController();
    const queued = withCallOptions(t.client.increment(100), { signal: controller.signal });
    controller.abort("changed my mind");
    await expect(queued).rejects.toBe("changed my mind");
    await t.connection.waitForOpen();
    expect(await t.client.increment()).toBe(2);
    expect(t.service.runsOf("increment")).toBe(2);
  });

  it("a call that times out while the client is reconnecting says it was never sent, and why", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.failOpens = Infinity;
    t.faults.last.paired.cut();
    const error = await rpcFailure(withCallOptions(t.client.increment(), { timeout: 60 }), "TIMEOUT");
    expect(error.message).toMatch(
      /the call was never sent, because the connection closed \(code 1006: [^)]*\) and (\d+ reconnect attempt\(s\) have not succeeded yet|the client has not tried to reconnect yet)( \(the next in \d+ ms\))?\./,
    );
  });

  it("calls that time out while reconnecting do not accumulate in the queue (memory bounded by maxPendingCalls)", async () => {
    // Session invariant: "queued + sent ≤ limits.maxPendingCalls: memory stays bounded".
    using t = setup({ limits: { maxPendingCalls: 4 } });
    await t.client.increment();
    t.faults.failOpens = Infinity;
    t.faults.last.paired.cut();
    for (let i = 0; i < 50; i++) {
      await rpcFailure(withCallOptions(t.client.echo("x".repeat(1000)), { timeout: 1 }), "TIMEOUT");
    }
    expect(t.connection.pendingCalls).toBe(0);
    const queue = (t.session.caller as unknown as { queue: unknown[] }).queue;
    expect(queue.length, "settled calls still held by the session's queue").toBeLessThanOrEqual(4);
  });
});

describe("heartbeat", () => {
  /** Starts a client on fake timers and makes its first call. */
  async function started(options: Parameters<typeof setup>[0]) {
    vi.useFakeTimers();
    const t = setup(options);
    const first = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await first).toBe(1);
    return t;
  }

  it("on a half-open connection the client closes with 4000 within interval + timeout and reconnects", async () => {
    using t = await started({ heartbeat: { interval: 30, timeout: 40 } });
    t.faults.halfOpen = true;
    const pending = go(t.client.increment()); // goes nowhere
    // A ping after at most one interval, then no answer within timeout (checked each interval).
    await vi.advanceTimersByTimeAsync(30 + 40 + 30);
    expect(t.faults.connections[0]!.closed?.[0]).toBe(4000);
    expect(t.session.lastCloseInfo?.code).toBe(4000);
    expect(t.faults.pings).toBeGreaterThanOrEqual(1);
    const error = await rpcFailure(pending, "DISCONNECTED");
    expect(error.message).toContain("stopped answering heartbeats");
    t.faults.halfOpen = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(t.connection.state).toBe("open");
    const next = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await next).toBe(2);
    expect(t.states).toEqual(["connecting", "open", "reconnecting", "open"]);
  });

  it("swallowed pings alone (the object never answers) also close the connection with 4000", async () => {
    using t = await started({ heartbeat: { interval: 20, timeout: 20 } });
    t.faults.swallowPings = true;
    await vi.advanceTimersByTimeAsync(20 + 20 + 20);
    expect(t.faults.connections[0]!.closed?.[0]).toBe(4000);
    t.faults.swallowPings = false;
    await vi.advanceTimersByTimeAsync(100);
    const next = go(t.client.increment());
    await vi.advanceTimersByTimeAsync(1);
    expect(await next).toBe(2);
  });

  it("answered pings keep an idle connection open", async () => {
    using t = await started({ heartbeat: { interval: 10, timeout: 30 } });
    await vi.advanceTimersByTimeAsync(200);
    expect(t.faults.pings).toBeGreaterThanOrEqual(3);
    expect(t.faults.connections).toHaveLength(1);
    expect(t.connection.state).toBe("open");
  });

  it("a half-open connection is detected even while the client keeps sending calls", async () => {
    // Outgoing calls must not count as a sign of life from the peer: nothing ever comes back.
    using t = await started({ heartbeat: { interval: 30, timeout: 40 }, timeout: 5_000 });
    t.faults.halfOpen = true;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 60 && t.faults.connections[0]!.closed === undefined; i++) {
      calls.push(t.client.increment().catch((error: unknown) => error));
      await vi.advanceTimersByTimeAsync(10);
    }
    const closed = t.faults.connections[0]!.closed;
    t.faults.halfOpen = false;
    t.client[Symbol.dispose]();
    await Promise.all(calls);
    expect(closed?.[0], "the client never declared the silent connection dead").toBe(4000);
  });
});

describe("backpressure", () => {
  it("frames wait while bufferedAmount is above highWaterMark, bounded by maxPendingCalls, and go out in order once it drains", async () => {
    using t = setup({ highWaterMark: 1_000, limits: { maxPendingCalls: 8 } });
    await t.client.increment();
    const sentBefore = callIds(t.faults.last.paired.sentByClient).length;
    t.faults.bufferedAmount = 1_000_000;
    const calls = Array.from({ length: 8 }, () => go(t.client.increment()));
    await sleep(40);
    expect(callIds(t.faults.last.paired.sentByClient)).toHaveLength(sentBefore); // nothing left the client
    expect(t.connection.pendingCalls).toBe(8);
    await rpcFailure(t.client.increment(), "LIMIT"); // memory stays bounded
    t.faults.bufferedAmount = 0;
    expect(await Promise.all(calls)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(t.service.runsOf("increment")).toBe(9);
  });
});

describe("close codes surface as clear messages", () => {
  it("1001 going away", async () => {
    using t = setup();
    await t.client.increment();
    const call = go(t.client.hold("x"));
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    t.faults.last.peerClose(1001, "deploy");
    const error = await rpcFailure(call, "DISCONNECTED");
    expect(error.message).toBe(
      "The Durable Object behind SERVICE/one went away (1001: deploy), e.g. it was reset or redeployed, before the reply arrived. The call had been sent, so it may have run.",
    );
  });

  it("1008 when the server refuses a frame (more calls in one frame than its maxPendingCalls)", async () => {
    using t = setup({}, { limits: { maxPendingCalls: 2 } });
    await t.client.increment();
    const calls = [go(t.client.increment()), go(t.client.increment()), go(t.client.increment())]; // one frame
    for (const call of calls) {
      const error = await rpcFailure(call, "DISCONNECTED");
      expect(error.message).toMatch(/^SERVICE\/one closed the connection because it refused a frame \(1008: dorpc: frame carries 3 calls/);
    }
    expect(t.faults.connections[0]!.paired.serverCloses[0]![0]).toBe(1008);
    await t.connection.waitForOpen();
    expect(await t.client.increment()).toBe(2);
  });

  it("a call too big for the server is answered LIMIT and not run; the connection stays", async () => {
    using t = setup({}, { limits: { maxMessageBytes: 200 } });
    await t.client.increment();
    const error = await rpcFailure(t.client.echo("x".repeat(1_000)), "LIMIT");
    expect(error.message).toContain("limits.maxMessageBytes (200)");
    expect(error.message).toContain("it was not run");
    expect(await t.client.increment()).toBe(2);
    expect(t.faults.connections).toHaveLength(1);
  });

  it("other codes name the code and reason", async () => {
    using t = setup();
    await t.client.increment();
    const call = go(t.client.hold("y"));
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    t.faults.last.peerClose(1011, "internal");
    const error = await rpcFailure(call, "DISCONNECTED");
    expect(error.message).toBe(
      "The connection to SERVICE/one closed (code 1011: internal) before the reply arrived. The call had been sent, so it may have run.",
    );
  });
});

describe("dispose", () => {
  it("dispose while reconnecting rejects queued calls with DISPOSED and stops reconnecting", async () => {
    const t = setup();
    await t.client.increment();
    t.faults.failOpens = Infinity;
    t.faults.last.paired.cut();
    const queued = [go(t.client.increment()), go(t.client.increment())];
    const waiting = t.connection.waitForOpen();
    await sleep(30);
    expect(t.connection.state).toBe("reconnecting");
    t.client[Symbol.dispose]();
    expect(t.connection.state).toBe("disposed");
    for (const call of queued) await rpcFailure(call, "DISPOSED");
    await rpcFailure(waiting, "DISPOSED");
    const attempts = t.faults.attempts.length;
    await sleep(200);
    expect(t.faults.attempts).toHaveLength(attempts);
    await rpcFailure(t.client.increment(), "DISPOSED");
    expect(t.service.runsOf("increment")).toBe(1);
  });

  it("dispose with calls in flight rejects each exactly once with DISPOSED; late replies are ignored", async () => {
    const t = setup();
    await t.client.increment();
    const call = rawCall(t.session, "hold", ["d"]);
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    t.client[Symbol.dispose]();
    expect(call).toMatchObject({ resolved: 0, rejected: 1 });
    expect((call.error as RpcError).code).toBe("DISPOSED");
    t.service.releaseAll();
    await sleep(20);
    expect(call).toMatchObject({ resolved: 0, rejected: 1 });
    expect(t.faults.connections[0]!.closed?.[0]).toBe(CloseCode.SessionEnded);
  });
});

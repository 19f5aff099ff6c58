/**
 * The client's connection lifecycle over its built-in WebSocket transport, with a scripted socket
 * as strict as the WHATWG one (scripted-websocket.ts), on fake timers: the heartbeat's schedule,
 * disposal in each state (every waiting call and waitForOpen rejects DISPOSED and no timer is
 * left behind), state listeners (a throwing one, one added while told, the same function
 * subscribed twice), and attempts that fail: a socket constructor that throws, a first attempt
 * that never opens, a later attempt with `reconnect: false`. The same behaviours over the fault
 * transport (backoff, resetAfter, half-open connections) are in
 * reliability/client-faults.node.test.ts.
 */
import { describe, expect, it, vi } from "vitest";
import { rpcConnection } from "../../packages/rpc/src/client.js";
import type { ConnectionState } from "../../packages/rpc/src/session.js";
import { expectRpcError } from "./helpers.js";
import { lastSocket, opened, ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";

withScriptedSockets();

describe("heartbeat", () => {
  it("pings after `interval` with nothing received (any received frame restarts the count) and closes with 4000 when a ping stays unanswered for `timeout`", async () => {
    const client = scriptedClient({ heartbeat: { interval: 1_000, timeout: 500 } });
    const socket = await opened(client);
    await vi.advanceTimersByTimeAsync(800);
    socket.deliver("\u001eQ"); // t = 800: traffic from the object
    await vi.advanceTimersByTimeAsync(999);
    expect(socket.pings(), "pinged although a frame arrived less than `interval` ago").toBe(0);
    await vi.advanceTimersByTimeAsync(1); // t = 1800
    expect(socket.pings()).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    socket.deliver("\u001eQ"); // t = 2000: the pong
    await vi.advanceTimersByTimeAsync(999);
    expect(socket.pings()).toBe(1);
    await vi.advanceTimersByTimeAsync(1); // t = 3000: quiet for `interval` again
    expect(socket.pings()).toBe(2);
    await vi.advanceTimersByTimeAsync(499);
    expect(socket.closeCalls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1); // t = 3500: no answer within `timeout`
    expect(socket.closeCalls.map(([code]) => code)).toEqual([4000]);
    expect(rpcConnection(client).state).toBe("reconnecting");
    rpcConnection(client).close();
  });

  it("with a `timeout` longer than `interval`, the ping after an answered one is due `interval` after the answer, not when `timeout` would have run out", async () => {
    const client = scriptedClient({ heartbeat: { interval: 100, timeout: 1_000 } });
    const socket = await opened(client);
    await vi.advanceTimersByTimeAsync(100); // t = 100: quiet for `interval`
    expect(socket.pings()).toBe(1);
    await vi.advanceTimersByTimeAsync(10);
    socket.deliver("\u001eQ"); // t = 110: the pong
    await vi.advanceTimersByTimeAsync(99);
    expect(socket.pings()).toBe(1);
    await vi.advanceTimersByTimeAsync(1); // t = 210: quiet for `interval` since the pong
    expect(socket.pings(), "the second ping waited for the first one's `timeout` (t = 1100)").toBe(2);
    expect(socket.closeCalls).toEqual([]);
    rpcConnection(client).close();
  });
});

describe("disposal", () => {
  /** A client in some state, with the promises that wait on it. */
  type Setup = () => Promise<{ client: ReturnType<typeof scriptedClient>; waiting: PromiseLike<unknown>[] }>;
  const states: [string, Setup][] = [
    [
      "connecting for the first time, with a call and waitForOpen waiting",
      async () => {
        const client = scriptedClient();
        const waiting = [client.f(), rpcConnection(client).waitForOpen()];
        await vi.advanceTimersByTimeAsync(0);
        expect(rpcConnection(client).state).toBe("connecting");
        return { client, waiting };
      },
    ],
    [
      "waiting out the backoff, with a sent call cut and a call queued",
      async () => {
        const client = scriptedClient({ timeout: 60_000 });
        await opened(client);
        const sent = client.f();
        track(sent);
        await vi.advanceTimersByTimeAsync(0);
        expect(lastSocket().callIds()).toEqual([1]);
        lastSocket().serverClose(1006);
        const waiting = [sent, client.g(), rpcConnection(client).waitForOpen()];
        await vi.advanceTimersByTimeAsync(10);
        expect(rpcConnection(client).state).toBe("reconnecting");
        return { client, waiting };
      },
    ],
    [
      "on a reconnect attempt that has not opened yet",
      async () => {
        const client = scriptedClient({ timeout: 60_000 });
        await opened(client);
        const sent = client.f();
        track(sent);
        await vi.advanceTimersByTimeAsync(0);
        lastSocket().serverClose(1006);
        await vi.advanceTimersByTimeAsync(100);
        expect(ScriptedSocket.all).toHaveLength(2);
        return { client, waiting: [sent, rpcConnection(client).waitForOpen()] };
      },
    ],
    [
      "open with the heartbeat on, with two calls waiting for replies",
      async () => {
        const client = scriptedClient({ timeout: 60_000, heartbeat: { interval: 1_000, timeout: 500 } });
        await opened(client);
        const waiting = [client.f(), client.g()];
        waiting.forEach(track);
        await vi.advanceTimersByTimeAsync(0);
        expect(lastSocket().callIds()).toEqual([1, 2]);
        return { client, waiting };
      },
    ],
  ];

  it.each(states)("while %s: everything waiting rejects DISPOSED and no timer is left", async (_state, setup) => {
    const { client, waiting } = await setup();
    const outcomes = waiting.map(track);
    rpcConnection(client).close();
    await vi.advanceTimersByTimeAsync(0);
    expect(rpcConnection(client).state).toBe("disposed");
    for (const outcome of outcomes) {
      expect(outcome.settled, "a call or waitForOpen never settled").toBe(true);
      expectRpcError(outcome.value, "DISPOSED");
    }
    expect(vi.getTimerCount(), "a timer outlived the disposed client").toBe(0);
  });
});

describe("state listeners", () => {
  it("a throwing listener stops neither later listeners nor the client; a listener added while listeners are told hears only later states", async () => {
    const client = scriptedClient();
    const conn = rpcConnection(client);
    const heard: ConnectionState[] = [];
    const late: ConnectionState[] = [];
    conn.onStateChange(() => {
      throw new Error("listener bug");
    });
    conn.onStateChange((state) => {
      heard.push(state);
      if (heard.length === 1) conn.onStateChange((later) => late.push(later));
    });
    await opened(client);
    conn.close();
    expect(heard).toEqual(["connecting", "open", "disposed"]);
    expect(late).toEqual(["open", "disposed"]);
  });

  it("the same function subscribed twice is two subscriptions: each unsubscribe removes one", async () => {
    const client = scriptedClient();
    const conn = rpcConnection(client);
    const heard: ConnectionState[] = [];
    const listener = (state: ConnectionState) => heard.push(state);
    const offFirst = conn.onStateChange(listener);
    const offSecond = conn.onStateChange(listener);
    await opened(client);
    expect(heard).toEqual(["connecting", "connecting", "open", "open"]);
    offFirst();
    offFirst(); // a second call of the same unsubscribe removes nothing more
    lastSocket().serverClose(1006);
    expect(heard.slice(4)).toEqual(["reconnecting"]);
    offSecond();
    conn.close();
    expect(heard.slice(5)).toEqual([]);
  });
});

describe("a socket constructor that throws", () => {
  it("on the first attempt: the call and waitForOpen fail CONNECT_FAILED, the client is idle, and the next call connects", async () => {
    ScriptedSocket.throwNext = 1;
    const client = scriptedClient({ timeout: 0 });
    const conn = rpcConnection(client);
    const first = track(client.f());
    const waiter = track(conn.waitForOpen());
    await vi.advanceTimersByTimeAsync(0);
    expectRpcError(first.value, "CONNECT_FAILED");
    expectRpcError(waiter.value, "CONNECT_FAILED");
    expect(conn.state).toBe("idle");
    expect(ScriptedSocket.all).toHaveLength(0);
    const second = track(client.g());
    await vi.advanceTimersByTimeAsync(0);
    lastSocket().accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(lastSocket().callIds()).toEqual([2]);
    expect(second.settled).toBe(false);
    conn.close();
  });

  it("while reconnecting: the client keeps backing off and retrying, and the queued call goes out once a socket opens", async () => {
    const client = scriptedClient({ timeout: 60_000 });
    const conn = rpcConnection(client);
    const states: ConnectionState[] = [];
    conn.onStateChange((state) => states.push(state));
    await opened(client);
    lastSocket().serverClose(1006);
    ScriptedSocket.throwNext = 2;
    const call = track(client.f());
    await vi.advanceTimersByTimeAsync(100); // attempt 1 throws
    await vi.advanceTimersByTimeAsync(200); // attempt 2 throws
    expect(conn.state).toBe("reconnecting");
    expect(ScriptedSocket.all).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(400); // attempt 3 makes a socket
    expect(ScriptedSocket.all).toHaveLength(2);
    lastSocket().accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(lastSocket().callIds()).toEqual([1]);
    expect(call.settled).toBe(false);
    expect(states).toEqual(["connecting", "open", "reconnecting", "open"]);
    conn.close();
  });
});

describe("an attempt that fails before it opens", () => {
  it("the first one, never opening: closed with 4001 after connectTimeout, the call fails CONNECT_FAILED naming connectTimeout", async () => {
    const client = scriptedClient({ timeout: 0, connectTimeout: 1_000 });
    const call = track(client.f());
    await vi.advanceTimersByTimeAsync(999);
    expect(call.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(ScriptedSocket.all[0]!.closeCalls.map(([code]) => code)).toEqual([4001]);
    const error = expectRpcError(call.value, "CONNECT_FAILED");
    expect(error.message).toContain("connectTimeout (1000 ms)");
    expect(rpcConnection(client).state).toBe("idle");
    rpcConnection(client).close();
  });

  it("with reconnect: false, a later attempt refused before it opens fails the queued call and waitForOpen with CONNECT_FAILED (nothing was sent)", async () => {
    const client = scriptedClient({ reconnect: false, timeout: 0 });
    const conn = rpcConnection(client);
    await opened(client);
    lastSocket().serverClose(1001, "redeploy");
    expect(conn.state).toBe("idle");
    // The next call connects again; this attempt is refused before it opens.
    const call = track(client.f());
    const waiter = track(conn.waitForOpen());
    await vi.advanceTimersByTimeAsync(0);
    expect(ScriptedSocket.all).toHaveLength(2);
    lastSocket().serverClose(1006);
    await vi.advanceTimersByTimeAsync(0);
    expect(conn.state).toBe("idle");
    expect(expectRpcError(call.value, "CONNECT_FAILED").message).toContain("nothing was sent");
    expectRpcError(waiter.value, "CONNECT_FAILED");
    conn.close();
  });

  it("a listener that calls waitForOpen on 'idle' after a failed first attempt: the earlier waitForOpen still rejects CONNECT_FAILED, and the client connects again", async () => {
    const client = scriptedClient();
    const conn = rpcConnection(client);
    let retried = false;
    conn.onStateChange((state) => {
      if (state === "idle" && !retried) {
        retried = true;
        void conn.waitForOpen().catch(() => {});
      }
    });
    const first = track(conn.waitForOpen());
    await vi.advanceTimersByTimeAsync(0);
    lastSocket().serverClose(1006);
    await vi.advanceTimersByTimeAsync(0);
    expectRpcError(first.value, "CONNECT_FAILED");
    expect(conn.state).toBe("connecting");
    expect(ScriptedSocket.all).toHaveLength(2);
    conn.close();
  });
});

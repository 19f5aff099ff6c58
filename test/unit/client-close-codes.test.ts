/**
 * What a close code does to the client's sent calls, over its built-in WebSocket transport with a
 * scripted socket as strict as the WHATWG one (scripted-websocket.ts), on fake timers:
 *  - a close from the object: a sent call is resent on the next connection (exactlyOnce, the
 *    default), except after 1008/1009, where the object refused a frame of the client's and would
 *    refuse it again: the call fails DISCONNECTED naming the code;
 *  - a frame the client refuses: it closes the socket itself with 4008 (unreadable) or 4009 (over
 *    its limits). The WHATWG close() throws for 1008/1009, which left the socket open while the
 *    client went on to reconnect;
 *  - a call that timed out while the reconnect waited is not resent.
 * The messages of these errors are checked in reliability/client-faults.node.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { rpcConnection, withCallOptions } from "../../packages/rpc/src/client.js";
import { expectRpcError } from "./helpers.js";
import { lastSocket, ScriptedSocket, scriptedClient, track } from "./scripted-websocket.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  ScriptedSocket.reset();
  vi.useRealTimers();
});

/** A client with call 1 (`f()`) sent on its open connection. */
async function withSentCall(options: Parameters<typeof scriptedClient>[0] = {}) {
  const client = scriptedClient({ timeout: 60_000, ...options });
  const call = track(client.f());
  await vi.advanceTimersByTimeAsync(0);
  lastSocket().accept();
  await vi.advanceTimersByTimeAsync(0);
  expect(lastSocket().callIds()).toEqual([1]);
  return { client, call, socket: lastSocket() };
}

/** Waits out the first backoff delay (100 ms) and accepts the reconnect. */
async function reconnected(): Promise<ScriptedSocket> {
  const count = ScriptedSocket.all.length;
  await vi.advanceTimersByTimeAsync(100);
  expect(ScriptedSocket.all, "the client did not reconnect").toHaveLength(count + 1);
  lastSocket().accept();
  await vi.advanceTimersByTimeAsync(0);
  return lastSocket();
}

describe("the object closes the connection while a call is in flight", () => {
  it.each([1000, 1001, 1011, 4002])("close %i: the call is resent on the next connection and answered there", async (code) => {
    const { client, call } = await withSentCall();
    lastSocket().serverClose(code, "bye");
    const next = await reconnected();
    expect(next.callIds()).toEqual([1]);
    expect(call.settled).toBe(false);
    next.deliver(`\u001eR${JSON.stringify([[1, 0, 7]])}`);
    await vi.advanceTimersByTimeAsync(0);
    expect(call).toMatchObject({ settled: true, ok: true, value: 7 });
    expect(rpcConnection(client).state).toBe("open");
    rpcConnection(client).close();
  });

  it.each([1008, 1009])(
    "close %i (the object refused a frame of ours): the call fails DISCONNECTED naming the code, is not resent, and the client reconnects",
    async (code) => {
      const { client, call } = await withSentCall();
      lastSocket().serverClose(code, "refused");
      const next = await reconnected();
      expect(next.callIds()).toEqual([]);
      expect(expectRpcError(call.value, "DISCONNECTED").message).toContain(String(code));
      expect(rpcConnection(client).state).toBe("open");
      rpcConnection(client).close();
    },
  );
});

describe("the client refuses a frame from the object", () => {
  it.each([
    ["a frame of an unknown kind with no ids (unreadable)", 4008, "\u001eZ[]"],
    ["a frame over the client's limits.maxMessageBytes whose replies cannot be made out", 4009, `\u001eR${"x".repeat(2_000)}`],
  ])("%s: the client closes the socket with %i and reconnects on a new one", async (_name, code, frame) => {
    const { client, socket } = await withSentCall({ limits: { maxMessageBytes: 1_000 } });
    socket.deliver(frame);
    await vi.advanceTimersByTimeAsync(0);
    // The close went through (a code close() refuses would have thrown, leaving it open).
    expect(socket.closeCalls.map(([closed]) => closed)).toEqual([code]);
    expect(socket.readyState).toBe(2);
    expect(rpcConnection(client).state).toBe("reconnecting");
    await reconnected();
    expect(rpcConnection(client).state).toBe("open");
    rpcConnection(client).close();
  });
});

describe("a call timeout while the reconnect waits", () => {
  it("a sent call that times out during the backoff fails TIMEOUT saying it may have run, and is not resent on the next connection", async () => {
    const client = scriptedClient({ timeout: 60_000, reconnect: { initialDelay: 5_000, maxDelay: 5_000, jitter: 0 } });
    const call = track(withCallOptions(client.f(), { timeout: 1_000 }));
    await vi.advanceTimersByTimeAsync(0);
    lastSocket().accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(lastSocket().callIds()).toEqual([1]);
    lastSocket().serverClose(1006);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expectRpcError(call.value, "TIMEOUT").message).toContain("may have run");
    await vi.advanceTimersByTimeAsync(4_000);
    expect(ScriptedSocket.all).toHaveLength(2);
    lastSocket().accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(lastSocket().callIds()).toEqual([]);
    rpcConnection(client).close();
  });
});

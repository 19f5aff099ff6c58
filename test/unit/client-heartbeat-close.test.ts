/**
 * What the client's heartbeat close (code 4000: a ping left unanswered for `timeout`) does to the
 * calls and the connection state, over the scripted socket on fake timers: without `reconnect`
 * the calls fail DISCONNECTED, each saying whether it was sent and why the connection ended, and
 * the client goes idle; with it, a call waiting for its reply is resent, flagged, on the next
 * connection and settles once. Also the documented ranges of the `heartbeat` and `reconnect`
 * settings (docs/api.md, HeartbeatOptions and ReconnectOptions), at their edges; the values they
 * refuse elsewhere are in reconnect-heartbeat-options.test.ts. (The heartbeat's schedule is in
 * client-lifecycle.test.ts; with the system clock set, in client-clock-jumps.test.ts.)
 */
import { describe, expect, it, vi } from "vitest";
import { type RpcClientOptions, rpcConnection } from "../../packages/rpc/src/client.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import type { ConnectionState } from "../../packages/rpc/src/session.js";
import { expectRpcError, expectThrowsCode } from "./helpers.js";
import { lastSocket, opened, ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";

withScriptedSockets();

/** Pings after 1 s of quiet, closes 500 ms later when nothing answered. */
const heartbeat = { interval: 1_000, timeout: 500 };

/** The bodies of the frames of `kind` ("H", "C" …) that `socket` carried, in order. */
function bodies(socket: ScriptedSocket, kind: string): unknown[] {
  return socket.sent.flatMap((data) => {
    const raw = readFrame(data as string, DEFAULT_LIMITS);
    return raw && raw.kind === kind.charCodeAt(0) ? [raw.body] : [];
  });
}

describe("a heartbeat close", () => {
  it("with reconnect: false, the sent call fails DISCONNECTED (may have run, not resent), the queued one DISCONNECTED (never sent); the client goes idle", async () => {
    const client = scriptedClient({ heartbeat, reconnect: false, timeout: 0 });
    const states: ConnectionState[] = [];
    rpcConnection(client).onStateChange((state) => states.push(state));
    const socket = await opened(client);
    const sent = track(client.f());
    await vi.advanceTimersByTimeAsync(0);
    expect(socket.callIds()).toEqual([1]);
    socket.bufferedAmount = 100 * 1024 * 1024; // over highWaterMark: the next call waits in the queue
    const queued = track(client.g());
    await vi.advanceTimersByTimeAsync(1_500);
    expect(socket.callIds()).toEqual([1]);
    expect(socket.closeCalls.map(([code]) => code)).toEqual([4000]);
    const sentError = expectRpcError(sent.value, "DISCONNECTED");
    expect(sentError.message).toContain("stopped answering heartbeats");
    expect(sentError.message).toContain("not resent");
    const queuedError = expectRpcError(queued.value, "DISCONNECTED");
    expect(queuedError.message).toContain("never sent");
    expect(states).toEqual(["connecting", "open", "idle"]);
    expect(rpcConnection(client).pendingCalls).toBe(0);
    rpcConnection(client).close();
  });

  it("with reconnect on, the call waiting for its reply is resent on the next connection, flagged Retry, and its reply settles it", async () => {
    const client = scriptedClient({ heartbeat, timeout: 0 });
    const states: ConnectionState[] = [];
    rpcConnection(client).onStateChange((state) => states.push(state));
    const socket = await opened(client);
    const sent = track(client.f());
    await vi.advanceTimersByTimeAsync(1_500);
    expect(socket.closeCalls.map(([code]) => code)).toEqual([4000]);
    expect(sent.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(100); // the first backoff
    expect(ScriptedSocket.all).toHaveLength(2);
    const second = lastSocket();
    second.accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(bodies(second, "H")).toEqual([[expect.any(String), 1, expect.any(Number)]]); // resending: 1, the session's age
    expect(bodies(second, "C")).toEqual([[[1, ["f", [0]], 0, 1]]]); // call 1, target the root, flags Retry
    second.deliver("\u001eR[[1,0,7]]");
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toMatchObject({ settled: true, ok: true, value: 7 });
    expect(rpcConnection(client).pendingCalls).toBe(0);
    expect(states).toEqual(["connecting", "open", "reconnecting", "open"]);
    rpcConnection(client).close();
  });
});

describe("heartbeat and reconnect settings at the edges of their documented ranges", () => {
  it.each<[string, RpcClientOptions]>([
    ["heartbeat at its lowest (10 ms each)", { heartbeat: { interval: 10, timeout: 10 } }],
    ["heartbeat at its highest (an hour each)", { heartbeat: { interval: 3_600_000, timeout: 3_600_000 } }],
    ["reconnect at its lowest", { reconnect: { initialDelay: 0, maxDelay: 0, factor: 1, jitter: 0, resetAfter: 0 } }],
    [
      "reconnect at its highest",
      { reconnect: { initialDelay: 3_600_000, maxDelay: 3_600_000, factor: 100, jitter: 1, resetAfter: 3_600_000 } },
    ],
  ])("%s: accepted", (_label, options) => {
    const client = scriptedClient(options);
    expect(rpcConnection(client).state).toBe("idle");
    rpcConnection(client).close();
  });

  it.each<[string, RpcClientOptions]>([
    ["heartbeat.interval 9", { heartbeat: { interval: 9 } }],
    ["heartbeat.timeout an hour and 1 ms", { heartbeat: { timeout: 3_600_001 } }],
    ["reconnect.factor 100.5", { reconnect: { factor: 100.5 } }],
    ["reconnect.resetAfter an hour and 1 ms", { reconnect: { resetAfter: 3_600_001 } }],
    ["reconnect.maxDelay an hour and 1 ms", { reconnect: { maxDelay: 3_600_001 } }],
  ])("%s: BAD_OPTION", (_label, options) => {
    expectThrowsCode(() => scriptedClient(options), "BAD_OPTION");
  });
});

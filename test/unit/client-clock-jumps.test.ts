/**
 * The client's timers when the system clock is set (fake timers, with `vi.setSystemTime` moving
 * `Date.now()` alone, as NTP, a user fixing the time or a resumed VM do): the heartbeat's ping and
 * close, call timeouts and an HTTP client's backoff keep their schedule, measured on a clock that
 * only moves forward (timers.ts `monotonic`). They measured spans with `Date.now()`: a clock set
 * back an hour delayed a heartbeat close, a call timeout or the end of a backoff by that hour, and a
 * clock stepped forward timed calls out early. Also what a call that times out while the client
 * reconnects says about the reconnection, whose "the next in N ms" is read on the same clock: it
 * counted the first backoff as "0 reconnect attempt(s) have not succeeded".
 */
import { describe, expect, it, vi } from "vitest";
import { createRpcClient, httpTransport, rpcConnection, withCallOptions } from "../../packages/rpc/src/index.js";
import { expectRpcError } from "./helpers.js";
import { lastSocket, opened, ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";

const HOUR = 3_600_000;

withScriptedSockets();

/** The codes the client closed `socket` with. */
const closeCodes = (socket: ScriptedSocket) => socket.closeCalls.map(([code]) => code);

describe("the heartbeat", () => {
  it("the clock set back an hour while the connection is quiet: the ping still goes after `interval`, the 4000 close `timeout` later", async () => {
    const client = scriptedClient({ heartbeat: { interval: 1_000, timeout: 500 } });
    const socket = await opened(client);
    await vi.advanceTimersByTimeAsync(100);
    vi.setSystemTime(Date.now() - HOUR);
    await vi.advanceTimersByTimeAsync(899);
    expect(socket.pings()).toBe(0);
    await vi.advanceTimersByTimeAsync(1); // t = 1000
    expect(socket.pings(), "no ping `interval` after the last frame: the quiet span was read on the wall clock").toBe(1);
    await vi.advanceTimersByTimeAsync(499);
    expect(closeCodes(socket)).toEqual([]);
    await vi.advanceTimersByTimeAsync(1); // t = 1500: nothing ever arrives (half-open)
    expect(closeCodes(socket), "the dead connection was not closed `timeout` after the ping").toEqual([4000]);
    rpcConnection(client).close();
  });

  it("the clock set back an hour while a ping waits for its answer: the 4000 close is not postponed", async () => {
    const client = scriptedClient({ heartbeat: { interval: 1_000, timeout: 500 } });
    const socket = await opened(client);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(socket.pings()).toBe(1);
    vi.setSystemTime(Date.now() - HOUR);
    await vi.advanceTimersByTimeAsync(499);
    expect(closeCodes(socket)).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(closeCodes(socket)).toEqual([4000]);
    rpcConnection(client).close();
  });
});

describe("call timeouts", () => {
  it("the clock set back an hour while a call waits: it times out `timeout` after it was made", async () => {
    const client = scriptedClient({ timeout: 1_000 });
    await opened(client);
    const call = track(client.f());
    await vi.advanceTimersByTimeAsync(100);
    vi.setSystemTime(Date.now() - HOUR);
    await vi.advanceTimersByTimeAsync(899);
    expect(call.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.settled, "the call still waits after its 1 s timeout").toBe(true);
    expectRpcError(call.value, "TIMEOUT");
    rpcConnection(client).close();
  });

  it("the clock stepped forward a minute: an earlier call's timeout does not take a later call with it", async () => {
    // One timer serves all calls: when it fires for `early`, every call past its deadline fails.
    const client = scriptedClient({ timeout: 30_000 });
    await opened(client);
    const early = track(client.f());
    await vi.advanceTimersByTimeAsync(29_000);
    const late = track(client.g());
    await vi.advanceTimersByTimeAsync(500);
    vi.setSystemTime(Date.now() + 60_000);
    await vi.advanceTimersByTimeAsync(500); // t = 30000: `early`'s deadline
    expectRpcError(early.value, "TIMEOUT");
    expect(late.settled, "a call made 1 s ago with a 30 s timeout timed out").toBe(false);
    await vi.advanceTimersByTimeAsync(28_999);
    expect(late.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1); // t = 59000: `late`'s deadline
    expectRpcError(late.value, "TIMEOUT");
    rpcConnection(client).close();
  });
});

describe("an HTTP client's backoff", () => {
  it("the clock set back an hour during a 100 ms backoff: a call made then goes out when the backoff ends", async () => {
    let posts = 0;
    // The first request is refused (503); later ones answer each call with its id.
    const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
      posts++;
      if (posts === 1) return new Response("busy", { status: 503 });
      const body = typeof init!.body === "string" ? init!.body : new TextDecoder().decode(init!.body as Uint8Array);
      const ids = (JSON.parse(body.slice(2)) as unknown[][]).map((call) => call[0] as number);
      return new Response(`\u001eR${JSON.stringify(ids.map((id) => [id, 0, id]))}`, { headers: { "Content-Type": "application/x-dorpc" } });
    };
    const client = createRpcClient<{ a(): number }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 100, maxDelay: 100, jitter: 0 },
      timeout: 0,
      exactlyOnce: false,
      onError: () => {},
    });
    const first = track(client.a());
    await vi.advanceTimersByTimeAsync(10);
    expect(posts).toBe(1);
    expectRpcError(first.value, "DISCONNECTED"); // sent, and not resent (exactlyOnce: false)
    expect(rpcConnection(client).state).toBe("reconnecting");
    vi.setSystemTime(Date.now() - HOUR);
    const second = track(client.a());
    await vi.advanceTimersByTimeAsync(89);
    expect(posts, "a request went out before the backoff ended").toBe(1);
    await vi.advanceTimersByTimeAsync(1); // t = 100
    expect(posts, "no request when the 100 ms backoff ended").toBe(2);
    expect(second).toMatchObject({ settled: true, ok: true, value: 2 });
    rpcConnection(client).close();
  });
});

describe("a call that times out while the client reconnects says how far the reconnection got", () => {
  it("during the first backoff: the client has not tried to reconnect yet, and when it will", async () => {
    const client = scriptedClient({ reconnect: { initialDelay: 10_000, maxDelay: 10_000, factor: 2, jitter: 0, resetAfter: 5_000 } });
    const socket = await opened(client);
    socket.serverClose(1006);
    expect(rpcConnection(client).state).toBe("reconnecting");
    const call = track(withCallOptions(client.f(), { timeout: 50 }));
    await vi.advanceTimersByTimeAsync(50);
    expect(ScriptedSocket.all, "a reconnect attempt was made").toHaveLength(1);
    const error = expectRpcError(call.value, "TIMEOUT");
    expect(error.message).toMatch(
      /within 50 ms: the call was never sent, because the connection closed \(code 1006\) and the client has not tried to reconnect yet \(the next in 9950 ms\)\.$/,
    );
    rpcConnection(client).close();
  });

  it("after two refused reconnect attempts: 2 attempts have not succeeded, and when the next is", async () => {
    const client = scriptedClient({ timeout: 0 }); // backoff 100, 200, 400 ms
    const socket = await opened(client);
    socket.serverClose(1006);
    await vi.advanceTimersByTimeAsync(100);
    expect(ScriptedSocket.all).toHaveLength(2);
    lastSocket().serverClose(1006);
    await vi.advanceTimersByTimeAsync(200);
    expect(ScriptedSocket.all).toHaveLength(3);
    lastSocket().serverClose(1006); // t = 300: the next attempt at t = 700
    const call = track(withCallOptions(client.f(), { timeout: 50 }));
    await vi.advanceTimersByTimeAsync(50);
    expect(ScriptedSocket.all).toHaveLength(3);
    const error = expectRpcError(call.value, "TIMEOUT");
    expect(error.message).toMatch(/and 2 reconnect attempt\(s\) have not succeeded yet \(the next in 350 ms\)\.$/);
    rpcConnection(client).close();
  });

  it("the clock set back an hour during the backoff: the time to the next attempt is still right", async () => {
    const client = scriptedClient({ reconnect: { initialDelay: 10_000, maxDelay: 10_000, factor: 2, jitter: 0, resetAfter: 5_000 } });
    const socket = await opened(client);
    socket.serverClose(1006);
    await vi.advanceTimersByTimeAsync(1_000);
    vi.setSystemTime(Date.now() - HOUR);
    const call = track(withCallOptions(client.f(), { timeout: 50 }));
    await vi.advanceTimersByTimeAsync(50);
    const error = expectRpcError(call.value, "TIMEOUT");
    expect(error.message).toMatch(/the client has not tried to reconnect yet \(the next in 8950 ms\)\.$/);
    rpcConnection(client).close();
  });
});

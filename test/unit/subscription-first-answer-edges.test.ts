/**
 * Edges of a subscription's first subscribe (made without `since`) on the client, with the test
 * playing the object over scripted sockets: the first connection never opening, a refusal or a
 * DISCONNECTED answer where an answer was due, an object replaying odd sequence numbers before
 * its answer, and a subscription closed while its first subscribe waits to be resent. The last
 * cases (the object closing the connection with 1008 or 1009 on the frame that held both the
 * subscribe and its unsubscribe) failed before the fix: the subscribe was resent, its unsubscribe
 * was not, and the object kept the closed subscription. Main cases: subscription-first-answer.test.ts.
 */
import { describe, expect, it, vi } from "vitest";
import { type RpcError, subscribe } from "../../packages/rpc/src/index.js";
import { lastSocket, opened, ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";
import { answer, calls, event, failed, reconnect } from "./scripted-object.js";

withScriptedSockets();

/** A client that reconnects 10 ms after a drop, reporting to `errors`. */
function quickClient(errors: unknown[] = []) {
  return scriptedClient({ timeout: 0, reconnect: { initialDelay: 10, maxDelay: 10, jitter: 0 }, onError: (e) => errors.push(e) });
}

describe("a first subscribe that gets no answer", () => {
  it("made while the first connection opens, which fails: ready rejects CONNECT_FAILED, nothing retries, a new subscription connects again", async () => {
    const client = scriptedClient({ timeout: 0 });
    const sub = subscribe(client as never, "t" as never, () => {});
    const ready = track(sub.ready);
    await vi.advanceTimersByTimeAsync(0);
    lastSocket().serverClose(1006);
    await vi.advanceTimersByTimeAsync(100);
    expect(ready).toMatchObject({ settled: true, ok: false, value: { code: "CONNECT_FAILED" } });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ScriptedSocket.all).toHaveLength(1);
    const again = subscribe(client as never, "t" as never, () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(ScriptedSocket.all).toHaveLength(2);
    again.close();
  });

  it("refused (LIMIT) when resent after a drop: ready rejects with it, and the next connection does not send it again", async () => {
    const client = quickClient();
    const first = await opened(client);
    const sub = subscribe(client as never, "t" as never, () => {});
    const ready = track(sub.ready);
    await vi.advanceTimersByTimeAsync(0);
    first.serverClose(1006);
    const second = await reconnect();
    expect(calls(second)).toEqual([[1, "subscribe", ["t", null, 1]]]);
    second.deliver(failed(1, "LIMIT", "A connection may subscribe to at most 32 topics."));
    await vi.advanceTimersByTimeAsync(0);
    expect(ready).toMatchObject({ settled: true, ok: false, value: { code: "LIMIT" } });
    second.serverClose(1006);
    const third = await reconnect();
    expect(calls(third)).toEqual([]);
  });

  it("answered DISCONNECTED on an open connection: not sent again there (no loop), made again on the next connection", async () => {
    const errors: unknown[] = [];
    const client = quickClient(errors);
    const first = await opened(client);
    const sub = subscribe(client as never, "t" as never, () => {});
    const ready = track(sub.ready);
    await vi.advanceTimersByTimeAsync(0);
    first.deliver(failed(1, "DISCONNECTED", "odd"));
    await vi.advanceTimersByTimeAsync(60_000);
    expect({ sent: calls(first), settled: ready.settled, errors }).toEqual({
      sent: [[1, "subscribe", ["t", null, 1]]],
      settled: false,
      errors: [],
    });
    first.serverClose(1006);
    const second = await reconnect();
    const sent = calls(second);
    expect(sent.map(([, method, args]) => [method, args])).toEqual([["subscribe", ["t", null, 1]]]);
    second.deliver(answer(sent[0]![0], { seq: 3 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect(sub.cursor).toBe(3);
  });
});

describe("a replay before the first answer", () => {
  it("drops repeated and older events, reports a sequence number of 0, and an answer below the last event does not move the cursor back", async () => {
    const errors: unknown[] = [];
    const client = quickClient(errors);
    const first = await opened(client);
    const seen: number[] = [];
    const sub = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void seen.push(info.seq));
    await vi.advanceTimersByTimeAsync(0);
    first.serverClose(1006);
    const second = await reconnect();
    second.deliver(event("t", 0, "zero")); // taken as the cursor, it would be refused as `since` later
    second.deliver(event("t", 5, "e5"));
    second.deliver(event("t", 5, "e5 again"));
    second.deliver(event("t", 3, "e3 late"));
    second.deliver(answer(1, { seq: 4 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    second.deliver(event("t", 6, "e6"));
    await vi.advanceTimersByTimeAsync(0);
    expect({ seen, cursor: sub.cursor, codes: errors.map((e) => (e as RpcError).code) }).toEqual({
      seen: [5, 6],
      cursor: 6,
      codes: ["PROTOCOL"],
    });
  });
});

describe("a subscription closed while its first subscribe waits to be resent", () => {
  it("subscribed again before the reconnect: subscribe, unsubscribe, then the new one under its own number; the closed one's replay reaches neither", async () => {
    const errors: unknown[] = [];
    const client = quickClient(errors);
    const first = await opened(client);
    const closedSeen: number[] = [];
    const closed = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void closedSeen.push(info.seq));
    const closedReady = track(closed.ready);
    await vi.advanceTimersByTimeAsync(0);
    first.serverClose(1006);
    closed.close();
    const seen: number[] = [];
    const sub = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void seen.push(info.seq));
    const second = await reconnect();
    expect(calls(second)).toEqual([
      [1, "subscribe", ["t", null, 1]],
      [2, "unsubscribe", ["t"]],
      [3, "subscribe", ["t", null, 2]],
    ]);
    second.deliver(event("t", 5, "the closed one's replay"));
    second.deliver(answer(1, { seq: 5 }));
    second.deliver(answer(2, null));
    second.deliver(answer(3, { seq: 5 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    second.deliver(event("t", 6, "e6"));
    await vi.advanceTimersByTimeAsync(0);
    expect({ closedReady, closedSeen, seen, cursor: sub.cursor }).toMatchObject({
      closedReady: { settled: true, ok: false, value: { code: "DISPOSED" } },
      closedSeen: [],
      seen: [6],
      cursor: 6,
    });
    client[Symbol.dispose]();
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toEqual([]);
  });

  for (const code of [1008, 1009]) {
    it(`closed in the frame of its subscribe, which the object refuses (${code}): the next connection gets the subscribe and its unsubscribe (failed before the fix)`, async () => {
      const client = quickClient();
      const first = await opened(client);
      const sub = subscribe(client as never, "t" as never, () => {});
      sub.close();
      await vi.advanceTimersByTimeAsync(0);
      expect(calls(first)).toEqual([
        [1, "subscribe", ["t", null, 1]],
        [2, "unsubscribe", ["t"]],
      ]);
      first.serverClose(code, "refused");
      const second = await reconnect();
      expect(calls(second).map(([, method, args]) => [method, args])).toEqual([
        ["subscribe", ["t", null, 1]],
        ["unsubscribe", ["t"]],
      ]);
    });
  }
});

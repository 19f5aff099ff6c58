/**
 * A subscription made without `since` whose first answer is lost with its connection (the
 * client's side; test/workers/topics-first-answer.test.ts is the object's). Its first subscribe
 * carries the subscription's number and is resent as it was, in its place among the calls cut by the drop: ahead
 * of the calls made after it. Events the object replays before that answer are delivered. A first
 * answer that comes more than 23 hours after the subscription was made (by either clock: a
 * machine that slept, or one whose clock was set back) is reported as a resync, since the object
 * keeps a start for a day — unless its answer says `resumed: true` (it went on from the start it
 * kept). That holds under `reconnect: false` too, and after a replay that was itself cut: both
 * cases skipped the rule before it was fixed (the two "a day later" tests marked below failed).
 */
import { describe, expect, it, vi } from "vitest";
import { type RpcClientOptions, subscribe, type ResyncInfo } from "../../packages/rpc/src/index.js";
import { lastSocket, opened, ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";
import { answer, calls, event, reconnect } from "./scripted-object.js";

const HOUR = 3_600_000;

withScriptedSockets();

/** A client subscribed to "t" without since, whose first subscribe was sent and whose connection then dropped. */
async function cutAfterFirstSubscribe(onResync: (info: ResyncInfo) => void, options: RpcClientOptions = {}) {
  const client = scriptedClient({ timeout: 0, reconnect: { initialDelay: 10, maxDelay: 10, jitter: 0 }, ...options });
  const first = await opened(client);
  const seen: number[] = [];
  const sub = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void seen.push(info.seq), { onResync });
  const later = track(client.f()); // made after subscribe(): it must not overtake it when resent
  await vi.advanceTimersByTimeAsync(0);
  const sentFirst = calls(first);
  first.serverClose(1006);
  return { client, sub, seen, later, sentFirst };
}

describe("a first subscribe whose answer was lost", () => {
  it("is resent as it was (its number), ahead of the call made after it; the object's replay before its answer is delivered", async () => {
    const resyncs: ResyncInfo[] = [];
    const { sub, seen, later, sentFirst } = await cutAfterFirstSubscribe((info) => resyncs.push(info));
    const [subscribeCall, fCall] = sentFirst;
    expect(subscribeCall).toEqual([1, "subscribe", ["t", null, 1]]); // the subscription's number: the object keeps its start under it
    expect(fCall?.[1]).toBe("f");
    const socket = await reconnect();
    expect(calls(socket), "the subscribe goes first, unchanged; the call made after it follows").toEqual([subscribeCall, fCall]);
    // The object kept where the first subscribe started (4): it replays 5 and 6 before answering.
    socket.deliver(event("t", 5, "e5"));
    socket.deliver(event("t", 6, "e6"));
    socket.deliver(answer(1, { seq: 6 }));
    socket.deliver(answer(2, "f"));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ seen, cursor: sub.cursor, resyncs, later: later.value }).toEqual({ seen: [5, 6], cursor: 6, resyncs: [], later: "f" });
  });

  it("a first answer that comes a day after the subscription was made (the machine slept) is reported as a resync", async () => {
    const resyncs: ResyncInfo[] = [];
    const { sub, seen } = await cutAfterFirstSubscribe((info) => resyncs.push(info));
    vi.setSystemTime(Date.now() + 24 * HOUR); // the wall clock moved; the monotonic one did not
    const socket = await reconnect();
    socket.deliver(answer(1, { seq: 9 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ seen, cursor: sub.cursor, resyncs }).toEqual({
      seen: [],
      cursor: 9,
      resyncs: [{ topic: "t", cursor: undefined, oldest: 9, latest: 9 }],
    });
  });

  it("the same when the clock was set back meanwhile (the monotonic clock says a day)", async () => {
    const resyncs: ResyncInfo[] = [];
    const { sub } = await cutAfterFirstSubscribe((info) => resyncs.push(info));
    await vi.advanceTimersByTimeAsync(24 * HOUR); // attempts that never open, for a day…
    vi.setSystemTime(Date.now() - 24 * HOUR);
    const socket = lastSocket();
    socket.accept();
    await vi.advanceTimersByTimeAsync(0);
    socket.deliver(answer(1, { seq: 3 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect(resyncs).toEqual([{ topic: "t", cursor: undefined, oldest: 3, latest: 3 }]);
  });

  it("a first answer on the first connection is never a resync, however late; each subscription has its own number", async () => {
    const resyncs: ResyncInfo[] = [];
    const client = scriptedClient({ timeout: 0 });
    const socket = await opened(client);
    const sub = subscribe(client as never, "t" as never, () => {}, { onResync: (info) => resyncs.push(info) });
    const other = subscribe(client as never, "u" as never, () => {});
    const withSince = subscribe(client as never, "v" as never, () => {}, { since: 4 });
    await vi.advanceTimersByTimeAsync(0);
    const sent = calls(socket);
    expect(sent.map(([, , args]) => args)).toEqual([
      ["t", null, 1],
      ["u", null, 2],
      ["v", 4],
    ]);
    vi.setSystemTime(Date.now() + 48 * HOUR);
    socket.deliver(answer(1, { seq: 2 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ resyncs, cursor: sub.cursor }).toEqual({ resyncs: [], cursor: 2 });
    other.close();
    withSince.close();
  });

  it("under reconnect: false, a first answer a day later, on the connection the next call opens, is a resync (failed before the fix)", async () => {
    const resyncs: ResyncInfo[] = [];
    const { client, sub, seen, later } = await cutAfterFirstSubscribe((info) => resyncs.push(info), { reconnect: false });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ScriptedSocket.all).toHaveLength(1); // nothing reconnects by itself; the cut call failed
    expect(later).toMatchObject({ settled: true, ok: false, value: { code: "DISCONNECTED" } });
    vi.setSystemTime(Date.now() + 25 * HOUR);
    const next = track(client.g()); // the app's next call opens a connection
    await vi.advanceTimersByTimeAsync(0);
    const socket = lastSocket();
    socket.accept();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls(socket), "the subscription is made again under its number").toEqual([
      [3, "g", []],
      [4, "subscribe", ["t", null, 1]],
    ]);
    // The object no longer kept the start: it starts the subscription now, at 9, replaying nothing.
    socket.deliver(answer(3, "g"));
    socket.deliver(answer(4, { seq: 9 }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ seen, cursor: sub.cursor, resyncs, next: next.value }).toEqual({
      seen: [],
      cursor: 9,
      resyncs: [{ topic: "t", cursor: undefined, oldest: 9, latest: 9 }],
      next: "g",
    });
  });

  /** Cut twice: the resent first subscribe's replay (5, 6) arrives, then that connection drops too. */
  async function cutDuringReplay(onResync: (info: ResyncInfo) => void) {
    const cut = await cutAfterFirstSubscribe(onResync);
    const second = await reconnect();
    expect(calls(second)[0]).toEqual([1, "subscribe", ["t", null, 1]]);
    second.deliver(event("t", 5, "e5"));
    second.deliver(event("t", 6, "e6"));
    await vi.advanceTimersByTimeAsync(0);
    second.serverClose(1006);
    expect(cut.seen).toEqual([5, 6]);
    vi.setSystemTime(Date.now() + 25 * HOUR); // away a day (the machine slept)
    const third = await reconnect();
    expect(calls(third)[0], "still the first subscribe: no cursor was confirmed").toEqual([1, "subscribe", ["t", null, 1]]);
    return { ...cut, third };
  }

  it("after a replay that was cut, a first answer a day later that did not resume is a resync from the last event seen (failed before the fix)", async () => {
    const resyncs: ResyncInfo[] = [];
    const { sub, seen, third } = await cutDuringReplay((info) => resyncs.push(info));
    third.deliver(answer(1, { seq: 8 })); // the start was dropped: started now, 7 and 8 never sent
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ seen, cursor: sub.cursor, resyncs }).toEqual({
      seen: [5, 6],
      cursor: 8,
      resyncs: [{ topic: "t", cursor: 6, oldest: 8, latest: 8 }],
    });
  });

  it("the same a day later, answered with resumed: true after the rest of the replay, is not a resync", async () => {
    const resyncs: ResyncInfo[] = [];
    const { sub, seen, third } = await cutDuringReplay((info) => resyncs.push(info));
    // The object still had the start (4): it replays 5..8 again; 5 and 6 were seen already.
    for (const seq of [5, 6, 7, 8]) third.deliver(event("t", seq, `e${seq}`));
    third.deliver(answer(1, { seq: 8, resumed: true }));
    await vi.advanceTimersByTimeAsync(0);
    await sub.ready;
    expect({ seen, cursor: sub.cursor, resyncs }).toEqual({ seen: [5, 6, 7, 8], cursor: 8, resyncs: [] });
  });
});

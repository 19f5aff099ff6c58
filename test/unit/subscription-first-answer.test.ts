/**
 * A subscription made without `since` whose first answer is lost with its connection (the
 * client's side; test/workers/topics-first-answer.test.ts is the object's). Its first subscribe
 * carries the subscription's number and is resent as it was, in its place among the calls cut by the drop: ahead
 * of the calls made after it. Events the object replays before that answer are delivered. A first
 * answer that comes more than 23 hours after the subscription was made (by either clock: a
 * machine that slept, or one whose clock was set back) is reported as a resync, since the object
 * keeps a start for a day.
 */
import { describe, expect, it, vi } from "vitest";
import { subscribe, type ResyncInfo } from "../../packages/rpc/src/index.js";
import { lastSocket, opened, type ScriptedSocket, scriptedClient, track, withScriptedSockets } from "./scripted-websocket.js";

const HOUR = 3_600_000;

withScriptedSockets();

/** The calls `socket` carried: [id, method, arguments] (C frames, in order). */
function calls(socket: ScriptedSocket): [number, string, unknown[]][] {
  return socket.sent
    .filter((data): data is string => typeof data === "string" && data.startsWith("\u001eC"))
    .flatMap((data) => JSON.parse(data.slice(2)) as [number, [string, [number, ...unknown[]]]][])
    .map(([id, [method, [, ...args]]]) => [id, method, args]);
}

/** The answer frame for call `id`. */
const answer = (id: number, value: unknown) => `\u001eR${JSON.stringify([[id, 0, value]])}`;
const event = (topic: string, seq: number, value: unknown) => `\u001eC${JSON.stringify([[0, ["event", [0, topic, seq, value]], 0, 2]])}`;

/** A client subscribed to "t" without since, whose first subscribe was sent and whose connection then dropped. */
async function cutAfterFirstSubscribe(onResync: (info: ResyncInfo) => void) {
  const client = scriptedClient({ timeout: 0, reconnect: { initialDelay: 10, maxDelay: 10, jitter: 0 } });
  const first = await opened(client);
  const seen: number[] = [];
  const sub = subscribe(client as never, "t" as never, (_e: unknown, info: { seq: number }) => void seen.push(info.seq), { onResync });
  const later = track(client.f()); // made after subscribe(): it must not overtake it when resent
  await vi.advanceTimersByTimeAsync(0);
  const sentFirst = calls(first);
  first.serverClose(1006);
  return { client, sub, seen, later, sentFirst };
}

/** Lets the client reconnect: the next socket is accepted; returns it once its resends left. */
async function reconnect(): Promise<ScriptedSocket> {
  const before = lastSocket();
  await vi.advanceTimersByTimeAsync(10);
  const socket = lastSocket();
  expect(socket).not.toBe(before);
  socket.accept();
  await vi.advanceTimersByTimeAsync(0);
  return socket;
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
});

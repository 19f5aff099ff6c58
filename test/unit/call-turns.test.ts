/**
 * Calls of a frame that wait for their turn behind a call that went async (concurrent ordering,
 * call-turns.ts): once a call awaits, the calls after it, and the calls of later frames, start
 * in later events, in the order they were sent (unit tier, raw frames into the real dispatcher,
 * and the paired transport with a delivery record for the cut). Covered here: a queued call
 * cancelled before its turn never runs and its dependent is answered; cancelling the async call
 * at the head does not stall the queue; notifications (id 0) and calls of later frames keep
 * their place; a call waiting on a slow dependency does not hold back the calls after it; and
 * calls still waiting for their turn when the connection is cut run exactly once.
 * The order of a frame's calls without any of these is in test/unit/dispatcher.test.ts
 * (ordering).
 */
import { describe, expect, it, vi } from "vitest";
import { resendSetup } from "../support/resend-harness.js";
import { rawServer } from "./helpers.js";

class Api {
  log: string[] = [];
  /** Ends the pending `slow` / `slowObj` calls. */
  release: (() => void)[] = [];
  async slowObj(tag: string): Promise<{ v: string }> {
    return { v: await this.slow(tag) };
  }
  async slow(tag: string): Promise<string> {
    this.log.push(`start ${tag}`);
    await new Promise<void>((r) => this.release.push(r));
    this.log.push(`end ${tag}`);
    return tag;
  }
  mark(tag: string): string {
    this.log.push(tag);
    return tag;
  }
  echo(v: unknown): unknown {
    this.log.push(`echo ${String(v)}`);
    return v;
  }
}

/** The ids the replies answer, sorted. */
const ids = (replies: unknown[][]) => replies.map((r) => r[0] as number).sort((a, b) => a - b);

/** `echo(x)` where x is the PIPELINE record naming call `id`'s result. */
const echoOf = (id: number) => [
  "echo",
  [
    1,
    [
      [1, [1]],
      [30, [id]],
    ],
  ],
];

/** Lets the queued calls start, then ends every `slow` call that started. */
async function runAll(api: Api, started: number): Promise<void> {
  await vi.waitFor(() => expect(api.release).toHaveLength(started));
  for (const release of api.release) release();
}

describe("calls waiting for their turn behind an async call", () => {
  it("a queued call cancelled before its turn never runs; the call pipelining on it is answered with the cancel; the rest run", async () => {
    const api = new Api();
    const s = rawServer(api);
    s.sendCalls([
      [1, ["slow", [0, "a"]]],
      [2, ["mark", [0, "b"]]],
      [3, echoOf(2)],
      [4, ["mark", [0, "d"]]],
    ]);
    s.dispatch("\u001eK[2]"); // call 2 waits for its turn: cancelled there
    s.sendCalls([[5, ["mark", [0, "e"]]]]);
    await vi.waitFor(() => expect(api.log).toContain("e"));
    await runAll(api, 1);
    const replies = await s.replies();
    expect(api.log).toEqual(["start a", "d", "e", "end a"]);
    expect(ids(replies), "a cancelled call gets no reply").toEqual([1, 3, 4, 5]);
    const dependent = await s.outcome(3);
    expect(dependent.kind, "call 3 is answered with the cancel, not run").toBe("threw");
    expect((dependent as { error: Error }).error.name).toBe("AbortError");
  });

  it("cancelling the async call at the head: the calls after it still start, in order, and later frames after them", async () => {
    const api = new Api();
    const s = rawServer(api);
    s.sendCalls([
      [1, ["slow", [0, "a"]]],
      [2, ["mark", [0, "b"]]],
      [3, ["slow", [0, "c"]]],
      [4, ["mark", [0, "d"]]],
    ]);
    s.dispatch("\u001eK[1]");
    s.sendCalls([[5, ["mark", [0, "e"]]]]);
    await vi.waitFor(() => expect(api.log).toContain("e"));
    await runAll(api, 2);
    const replies = await s.replies();
    expect(api.log).toEqual(["start a", "b", "start c", "d", "e", "end a", "end c"]);
    expect(ids(replies)).toEqual([2, 3, 4, 5]);
  });

  it("a call on a slow call's result waits for it without holding back the call after it", async () => {
    const api = new Api();
    const s = rawServer(api);
    // Call 2 reads `.v` of call 1's result (target -1: the call before it).
    s.sendCalls([
      [1, ["slowObj", [0, "a"]]],
      [2, ["v"], -1],
      [3, ["mark", [0, "c"]]],
    ]);
    await vi.waitFor(() => expect(api.log).toContain("c"));
    await runAll(api, 1);
    const replies = await s.replies();
    expect(api.log).toEqual(["start a", "c", "end a"]);
    expect(replies.map((r) => [r[0], r[2]]).sort()).toEqual([
      [1, { v: "a" }],
      [2, "a"],
      [3, "c"],
    ]);
  });

  it("notifications (id 0) in the queue start in their place, one that goes async included; a later frame's call starts after them", async () => {
    const api = new Api();
    const s = rawServer(api);
    s.sendCalls([
      [1, ["slow", [0, "a"]]],
      [0, ["mark", [0, "n1"]]],
      [0, ["slow", [0, "n2"]]],
      [0, ["mark", [0, "n3"]]],
      [2, ["mark", [0, "b"]]],
    ]);
    s.sendCalls([[3, ["mark", [0, "c"]]]]);
    await vi.waitFor(() => expect(api.log).toContain("c"));
    await runAll(api, 2);
    const replies = await s.replies();
    expect(api.log).toEqual(["start a", "n1", "start n2", "n3", "b", "c", "end a", "end n2"]);
    expect(ids(replies), "notifications get no reply").toEqual([1, 2, 3]);
  });
});

describe("calls waiting for their turn when the connection is cut", () => {
  it("[slow, echo, getValue] in one frame, cut while echo and getValue wait: each runs once, on the next connection, and all are answered", async () => {
    const { target, paired, rpc } = resendSetup("turns-cut", 3000);
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const conn = paired.connections[0]!;
    conn.hold = true;
    const calls = [rpc.slow(), rpc.echo(5), rpc.getValue()].map((p) => Promise.resolve(p).catch((e: unknown) => e));
    await vi.waitFor(() => expect(conn.held).toHaveLength(1));
    let runsAtCut: Record<string, number> | undefined;
    conn.release();
    // In the same timer phase as the frame's delivery, before the next event: slow has started,
    // echo and getValue wait for their turn.
    setTimeout(() => {
      runsAtCut = Object.fromEntries(target.runs);
      conn.cut();
    }, 0);
    await vi.waitFor(() => expect(paired.connections).toHaveLength(2));
    expect(runsAtCut).toEqual({ fast: 1, slow: 1 });
    await vi.waitFor(() => expect(Object.fromEntries(target.runs)).toEqual({ fast: 1, slow: 1, echo: 1, getValue: 1 }));
    for (const gate of target.gates.splice(0)) gate();
    expect(await Promise.all(calls)).toEqual(["slow", 5, 7]);
    expect(Object.fromEntries(target.runs), "a call ran twice").toEqual({ fast: 1, slow: 1, echo: 1, getValue: 1 });
  });
});

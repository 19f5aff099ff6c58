/**
 * `rpcCaller()` in calls that start in a later event: the calls of a frame after one that went
 * async wait for their turn (call-turns.ts) and start outside the frame's event, yet each still
 * sees its own caller, over a WebSocket and in an HTTP batch (Counter's `callerInfo`). The order
 * and the other behaviour of such calls are covered in test/unit/call-turns.test.ts.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { replyEnvelopes, uniqueName } from "./helpers.js";
import { calls, openSocket } from "./record-support.js";

/** `[addLater(1, 2, 20), callerInfo(), callerInfo()]`: the two callerInfo calls wait for their turn. */
const frame = calls([
  [1, ["addLater", [0, 1, 2, 20]]],
  [2, ["callerInfo", [0]]],
  [3, ["callerInfo", [0]]],
]);

describe("rpcCaller() in calls that waited for their turn behind an async call", { timeout: 20_000 }, () => {
  it("over a WebSocket: each sees the socket caller", async () => {
    const s = await openSocket("COUNTER", uniqueName("turns-caller-ws"));
    s.send(frame);
    const [r2, r3, r1] = [await s.reply(2), await s.reply(3), await s.reply(1)];
    expect({ r1, r2, r3 }).toEqual({
      r1: [1, 0, 3],
      r2: [2, 0, { socket: true, connectedAt: true, signal: true }],
      r3: [3, 0, { socket: true, connectedAt: true, signal: true }],
    });
    await s.close();
  });

  it("in an HTTP batch: each sees the batch's caller (no socket)", async () => {
    const response = await SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${uniqueName("turns-caller-http")}`, {
      method: "POST",
      body: frame,
      headers: { "Content-Type": "application/x-dorpc" },
    });
    expect(response.status).toBe(200);
    const replies = await replyEnvelopes(response);
    expect(replies.sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([
      [1, 0, 3],
      [2, 0, { socket: false, connectedAt: true, signal: true }],
      [3, 0, { socket: false, connectedAt: true, signal: true }],
    ]);
  });
});

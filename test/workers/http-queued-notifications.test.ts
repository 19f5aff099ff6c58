/**
 * An HTTP batch answers once every call of its request has, including the calls that waited for
 * their turn behind an async call (call-turns.ts) and notifications (id 0), which get no reply.
 * `[incrementSoon(1), notification increment(10)]` was answered, and its connection closed,
 * before the notification had its turn, and the notification was dropped without a word;
 * `whenIdle` now also waits for the calls still queued (server-callee.ts). The same frame over
 * a WebSocket, where the connection stays, is the control.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { replyEnvelopes, uniqueName } from "./helpers.js";
import { calls, openSocket } from "./record-support.js";

/** POSTs one call frame of `envelopes` to a Counter; the response's status and reply envelopes. */
async function batch(name: string, envelopes: unknown[]): Promise<{ status: number; replies: unknown[][] }> {
  const response = await SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${name}`, {
    method: "POST",
    body: calls(envelopes),
    headers: { "Content-Type": "application/x-dorpc" },
  });
  return { status: response.status, replies: await replyEnvelopes(response) };
}

describe("an HTTP batch with calls queued behind an async call", { timeout: 20_000 }, () => {
  it("[incrementSoon(1), increment(10), getValue()]: every call is answered, each seeing the ones before it", async () => {
    const r = await batch(uniqueName("queued-http-calls"), [
      [1, ["incrementSoon", [0, 1]]],
      [2, ["increment", [0, 10]]],
      [3, ["getValue", [0]]],
    ]);
    expect(r.status).toBe(200);
    expect(r.replies.map((e) => [e[0], e[2]]).sort()).toEqual([
      [1, 1],
      [2, 11],
      [3, 11],
    ]);
  });

  it("[incrementSoon(1), notification increment(10)]: the notification has run when the response arrives", async () => {
    const name = uniqueName("queued-http-notification");
    const r = await batch(name, [
      [1, ["incrementSoon", [0, 1]]],
      [0, ["increment", [0, 10]]],
    ]);
    expect(r).toEqual({ status: 200, replies: [[1, 0, 1]] });
    expect(await env.COUNTER.getByName(name).getValue(), "the notification was dropped").toBe(11);
  });

  it("[addLater(1, 2, 20), notification increment(10)] (a timer, not a microtask): the notification has run when the response arrives", async () => {
    const name = uniqueName("queued-http-notification-timer");
    const r = await batch(name, [
      [1, ["addLater", [0, 1, 2, 20]]],
      [0, ["increment", [0, 10]]],
    ]);
    expect(r).toEqual({ status: 200, replies: [[1, 0, 3]] });
    expect(await env.COUNTER.getByName(name).getValue(), "the notification was dropped").toBe(10);
  });

  it("control, over a WebSocket: [incrementSoon(1), notification increment(10), getValue()]: the notification runs before getValue", async () => {
    const s = await openSocket("COUNTER", uniqueName("queued-ws-notification"));
    s.send(
      calls([
        [1, ["incrementSoon", [0, 1]]],
        [0, ["increment", [0, 10]]],
        [2, ["getValue", [0]]],
      ]),
    );
    expect(await s.reply(2)).toEqual([2, 0, 11]);
    await s.close();
  });
});

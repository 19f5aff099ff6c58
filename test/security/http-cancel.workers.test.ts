/**
 * A cancel from one connection of a session does not stop an unstarted call of another: an HTTP
 * batch whose pipelined call a socket of its session cancels still answers (raw frames and a raw
 * HTTP batch, in workerd).
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Victim } from "./objects.js";
import { call, MARK, openRaw, routeUrl } from "./raw.js";

let serial = 0;
const uniqueName = (label: string): string => `${label}-${Date.now().toString(36)}-${serial++}`;
const hello = (session: string, resending: 0 | 1, age?: number): string =>
  `${MARK}H${JSON.stringify(age === undefined ? [session, resending] : [session, resending, age])}`;

async function until(check: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

function within<T>(promise: Promise<T>, ms: number): Promise<T | "timed out"> {
  return Promise.race([promise, new Promise<"timed out">((r) => setTimeout(() => r("timed out"), ms))]);
}

describe("a cancel reaching a run of the same session on another connection", () => {
  // an HTTP batch answers once its calls have (protocol.md / http-batch.ts: "the response carries
  // their replies once every call of the request has answered"; callee.ts: "Every call with an id
  // gets exactly one reply, unless the caller cancelled it"), and a call cancelled before it ran
  // settles so that nothing waits for it (Callee.settleUnstarted). Found: a cancel on ANOTHER
  // connection of the session (ServerCallee.cancel → records.cancel → RunningCalls.cancel) only
  // sets `cancelled` on the HTTP request's call 2, which had not started (it pipelines on call 1).
  // When call 1 ends, Callee.start returns at `if (call.cancelled)`: call 2 never completes, stays
  // in the request's running set and in the record's running calls, so `whenIdle` never resolves
  // and the request never answers (its connection, and the record's entry for call 2 — which any
  // later resend of it waits for — are never freed).
  it("an HTTP batch whose pipelined call 2 is cancelled from a socket of its session still answers", async () => {
    const name = uniqueName("cross-cancel");
    const session = "httpCancelSession000001";
    const stub = env.VICTIM.getByName(name);
    const body = `${MARK}C${JSON.stringify([
      [1, ["park", [0]]],
      [
        2,
        [
          "echo",
          [
            1,
            [
              [1, [1]],
              [30, [1]],
            ],
          ],
        ],
      ], // echo(result of call 1), pipelined
    ])}`;
    const answered = SELF.fetch(routeUrl("VICTIM", name), {
      method: "POST",
      headers: { "Content-Type": "application/x-dorpc", "X-Dorpc-Session": session },
      body,
    });
    // Call 1 is parked (the request's frame was read and both calls admitted).
    expect(
      await until(() => runInDurableObject(stub, (instance: Victim) => (instance as unknown as { gate?: unknown }).gate !== undefined)),
    ).toBe(true);
    const socket = await openRaw(routeUrl("VICTIM", name));
    try {
      socket.send(hello(session, 0));
      socket.send(`${MARK}K[2]`);
      socket.send(call(50, "getValue", [0]));
      await socket.reply(50);
      await runInDurableObject(stub, (instance: Victim) => instance.release());
      const response = await within(answered, 5000);
      expect(response, "the HTTP batch never answered").not.toBe("timed out");
      expect((response as Response).status).toBe(200);
      await (response as Response).arrayBuffer();
    } finally {
      socket.close();
    }
  }, 30_000);
});

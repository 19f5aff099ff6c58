/**
 * Sequential ordering (MY_COUNTER, `ordering: "sequential"`) after a half-open cut whose old
 * socket closes later. The client's connection drops as after a heartbeat timeout (code 4000)
 * but the object does not hear the close: it keeps the old socket and goes on running a slow
 * call there, with two calls held behind it. The client reconnects and resends all three; each
 * resend waits on the object for the old connection's copy of the same call. Then the old socket
 * closes while the slow call still runs: its held copies are released without running, so their
 * resends run on the new connection.
 *
 * Written from a review probe, which failed before its fix: when the first released resend was a
 * synchronous method (`increment`), it ran at once but the calls held behind it were never
 * started, and the connection answered nothing more (server-callee.ts: releasing a resend now
 * drains the calls held behind it). An async method (`incrementSoon`) is the control: it already
 * passed.
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, type TestClient, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runningPerSocket } from "./cancel-support.js";
import { uniqueName } from "./helpers.js";
import type { MyCounter } from "./objects.js";

/** How long the slow call runs: it still runs on the old socket when that socket closes. */
const SLOW_MS = 1500;

/** How long the calls may take to answer once the slow call has ended: a bound on a hang, not a speed check. */
const HANG_MS = 10_000;

/**
 * Cuts the client's side only: its socket's close() is made a no-op, so the object keeps the old
 * connection. Returns a function that closes the old socket for real, with `code`.
 */
function halfOpenCut(client: TestClient<unknown>): (code: number) => void {
  const socket = testConnection(client).socket!;
  const close = socket.close.bind(socket);
  socket.close = () => {};
  dropConnection(client, { code: 4000, reason: "heartbeat timeout (test)" });
  return (code) => close(code, "old socket closed (test)");
}

/**
 * What each call settled with (its value, or "rejected CODE"), or "still pending" for those that
 * have not settled within `HANG_MS`: a hang shows as the calls it left pending.
 */
async function outcomes(calls: Record<string, PromiseLike<unknown>>): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {};
  const settled = Object.entries(calls).map(([label, call]) => {
    seen[label] = "still pending";
    return Promise.resolve(call).then(
      (value) => void (seen[label] = value),
      (error: unknown) => void (seen[label] = `rejected ${RpcError.is(error) ? error.code : String(error)}`),
    );
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.all(settled), new Promise((resolve) => (timer = setTimeout(resolve, HANG_MS)))]);
  if (timer !== undefined) clearTimeout(timer);
  return { ...seen };
}

describe("sequential calls held on the old socket of a half-open cut that then closes", { timeout: 30_000 }, () => {
  it.each([
    [4000, "increment"],
    [1000, "increment"],
    [4000, "incrementSoon"],
  ] as const)(
    "the old socket closes (code %i) while the slow call runs: the resent %s and the call behind it run, in order, and the connection goes on",
    async (code, method) => {
      using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("seq-half-open"), {
        reconnect: { initialDelay: 0, jitter: 0 },
      });
      expect(await client.getValue()).toBe(0);
      const slow = client.addLater(0, 1, SLOW_MS); // ignores its signal: it runs on to the end
      let slowEnded = false;
      void slow.then(() => (slowEnded = true));
      const held = client[method](1);
      const behind = client.increment(10);
      await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([3]));
      const closeOld = halfOpenCut(client);
      await waitForState(client, "open");
      await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([3, 3])); // all three resent, waiting
      closeOld(code);
      await vi.waitFor(async () => expect(await runningPerSocket(client)).toHaveLength(1)); // the object heard the close
      expect(slowEnded, "the slow call ended before the old socket closed: its held calls ran there").toBe(false);
      expect(await slow).toBe(1); // the resend gets the old run's answer
      const later = client.getValue();
      expect(await outcomes({ held, behind, later })).toEqual({ held: 1, behind: 11, later: 11 });
    },
  );
});

/**
 * Cancelling a call after a half-open cut. The client's connection drops as after a heartbeat
 * timeout (code 4000) but the object never hears the close: it keeps the old socket open and goes
 * on running, or holding, that connection's calls. The client reconnects and resends them, and
 * the object makes each resend wait for the old connection's copy of the same call.
 *
 * A call held on the old connection (behind a slow call with sequential ordering, or pipelining
 * on a slow call) that the client then aborts or that times out must never run (docs/reliability.md,
 * Abort: "a call that has not started never runs"). It used to run once the call before it
 * finished: the cancel reached the resend only, not the old connection's held copy. Without a
 * cancel, the held call runs once there and its resend gets that answer.
 */
import { withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, type TestClient, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runningPerSocket } from "./cancel-support.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

/** How long the slow call runs: it is still running on the old connection while the test gives up the call after it. */
const SLOW_MS = 800;

/**
 * Cuts the client's side only: its socket's close() is made a no-op, so the object never hears
 * the close and keeps the old connection. Disposing the result closes the old socket for real.
 */
function halfOpenCut(client: TestClient<unknown>): Disposable {
  const socket = testConnection(client).socket!;
  const close = socket.close.bind(socket);
  socket.close = () => {};
  dropConnection(client, { code: 4000, reason: "heartbeat timeout (test)" });
  return { [Symbol.dispose]: () => close(1000, "test over") };
}

type Held = "sequential" | "pipelined";

/**
 * A slow call and a call held behind it on one connection: with sequential ordering (MY_COUNTER)
 * `increment(1)` waits for the slow call to end; pipelined (COUNTER) `increment(slow)` waits for
 * its result. Either way the held call answers 1 when it runs. Resolves once both are on the
 * object.
 */
async function slowAndHeld(held: Held) {
  const namespace = held === "sequential" ? env.MY_COUNTER : env.COUNTER;
  const client = createTestClient<Counter>(namespace, uniqueName(`half-open-${held}`), { reconnect: { initialDelay: 0, jitter: 0 } });
  await client.getValue();
  const slow = client.addLater(0, 1, SLOW_MS); // ignores its signal: it runs on to the end
  const call = held === "sequential" ? client.increment(1) : client.increment(slow);
  const controller = new AbortController();
  const abortable = withCallOptions(call, { signal: controller.signal }); // applied before it leaves
  abortable.catch(() => {});
  await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([2]));
  return { client, slow, call, abortable, controller };
}

/** Both calls resent on the new connection and waiting there for the old connection's copies. */
async function resentAndWaiting(client: TestClient<Counter>): Promise<void> {
  await waitForState(client, "open");
  await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([2, 2]));
}

/** Once the slow call has ended and nothing runs on either socket: how often the held call ran. */
async function heldRuns(client: TestClient<Counter>, slow: PromiseLike<number>): Promise<number> {
  expect(await slow).toBe(1); // the resend is answered with the old connection's run
  await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([0, 0]));
  return client.getValue();
}

const heldKinds = [
  { held: "sequential", label: "behind a slow call (sequential ordering)" },
  { held: "pipelined", label: "pipelining on a slow call" },
] as const;

describe("a call held on the old connection of a half-open cut", () => {
  it.each(heldKinds)("$label, not given up: it runs once, and its resend gets that answer", async ({ held }) => {
    const { client, slow, call } = await slowAndHeld(held);
    using _client = client;
    using _old = halfOpenCut(client);
    await resentAndWaiting(client);
    expect(await call).toBe(1);
    expect(await heldRuns(client, slow)).toBe(1);
  });

  it.each(heldKinds)("$label, aborted once its resend waits on the object: it rejects with the reason and never runs", async ({ held }) => {
    const { client, slow, abortable, controller } = await slowAndHeld(held);
    using _client = client;
    using _old = halfOpenCut(client);
    await resentAndWaiting(client);
    controller.abort(new Error("given up"));
    expect(((await rejection(abortable)) as Error).message).toBe("given up");
    expect(await heldRuns(client, slow)).toBe(0);
  });

  it.each(heldKinds)("$label, timing out once its resend waits on the object: TIMEOUT, and it never runs", async ({ held }) => {
    const { client, slow, call } = await slowAndHeld(held);
    using _client = client;
    using _old = halfOpenCut(client);
    await resentAndWaiting(client);
    // A timeout counts from when it is applied (docs/api.md, CallOptions): it fires now.
    await rpcFailure(withCallOptions(call, { timeout: 1 }), "TIMEOUT");
    await rpcFailure(call, "TIMEOUT");
    expect(await heldRuns(client, slow)).toBe(0);
  });

  it.each(heldKinds)(
    "$label, aborted while the client reconnects (the cancel goes on the next connection): it never runs",
    async ({ held }) => {
      const { client, slow, abortable, controller } = await slowAndHeld(held);
      using _client = client;
      using _old = halfOpenCut(client);
      expect(testConnection(client).socket).toBeUndefined(); // not connected again yet
      controller.abort(new Error("given up"));
      expect(((await rejection(abortable)) as Error).message).toBe("given up");
      await waitForState(client, "open");
      expect(await heldRuns(client, slow)).toBe(0);
    },
  );
});

describe("a call running on the old connection of a half-open cut", () => {
  it("aborted once its resend waits on the object: the old run's signal aborts", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("half-open-running"), { reconnect: { initialDelay: 0, jitter: 0 } });
    await client.getValue();
    const controller = new AbortController();
    const call = withCallOptions(client.waitOrCancel(60_000), { signal: controller.signal });
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([1]));
    using _old = halfOpenCut(client);
    await waitForState(client, "open");
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([1, 1]));
    controller.abort(new Error("given up"));
    expect(((await rejection(call)) as Error).message).toBe("given up");
    await vi.waitFor(async () => expect(await client.waitOutcome()).toBe("cancelled: AbortError"));
  });
});

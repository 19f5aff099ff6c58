/**
 * Cancelling a call around a cut of its connection (the client's connection drops and the object
 * sees it close). A cut is not a cancellation, but a call the client gives up while it
 * reconnects, or once its resend waits on the object for the first run, is cancelled there
 * (docs/api.md, CallOptions `signal` and `timeout`): the object's rpcCaller().signal aborts. An
 * abort made in the same turn as the drop, before it, used to be lost with the connection: its
 * cancel frame was only queued, and the object's run went on to the end.
 *
 * A call pipelining on a call that is aborted or times out rejects with that same error and never
 * runs (docs/api.md, withCallOptions): with no cut, and while both wait to be resent, when it
 * rejects at once (it used to wait for the reconnect).
 */
import { rpcConnection, withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, type TestClient, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runningPerSocket } from "./cancel-support.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

/** Waits until the object has nothing running or waiting on any socket. */
async function nothingRunning(client: TestClient<unknown>): Promise<void> {
  await vi.waitFor(async () => expect((await runningPerSocket(client)).every((n) => n === 0)).toBe(true));
}

/** Resolves once the object outcome of `waitOrCancel` says its signal aborted. */
async function runCancelled(client: TestClient<Counter>): Promise<void> {
  await vi.waitFor(async () => expect(await client.waitOutcome()).toBe("cancelled: AbortError"));
}

describe("a call given up around a cut is cancelled on the object", () => {
  it.each([
    { order: "aborted, then its connection dropped", abortFirst: true },
    { order: "its connection dropped, then aborted", abortFirst: false },
  ])(
    "in one turn, $order: it rejects with the reason, and the object's run is cancelled (the cancel goes on the next connection)",
    async ({ abortFirst }) => {
      using client = createTestClient<Counter>(env.COUNTER, uniqueName("cut-same-turn"), { reconnect: { initialDelay: 0, jitter: 0 } });
      const controller = new AbortController();
      const call = withCallOptions(client.waitOrCancel(60_000), { signal: controller.signal });
      // Calls of one connection start in order: once this answers, the call above is running.
      expect(await client.getValue()).toBe(0);
      if (abortFirst) controller.abort(new Error("given up"));
      dropConnection(client);
      if (!abortFirst) controller.abort(new Error("given up"));
      expect(((await rejection(call)) as Error).message).toBe("given up");
      await waitForState(client, "open");
      await runCancelled(client);
    },
  );

  it("timing out while the client reconnects: TIMEOUT saying it may have run, and the object's run is cancelled", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("cut-timeout"), { reconnect: { initialDelay: 200, jitter: 0 } });
    const call = client.waitOrCancel(60_000);
    expect(await client.getValue()).toBe(0);
    dropConnection(client);
    // A timeout counts from when it is applied (docs/api.md, CallOptions): it fires while reconnecting.
    const error = await rpcFailure(withCallOptions(call, { timeout: 1 }), "TIMEOUT");
    expect(error.message).toContain("may have run");
    await waitForState(client, "open");
    await runCancelled(client);
  });

  it("sequential: aborted while its resend waits for the first run: that run is cancelled, and the call held behind it runs", async () => {
    using client = createTestClient<Counter>(env.MY_COUNTER, uniqueName("cut-sequential"), { reconnect: { initialDelay: 0, jitter: 0 } });
    const before = client.getValue();
    const controller = new AbortController();
    const call = withCallOptions(client.waitOrCancel(60_000), { signal: controller.signal });
    const held = client.increment(1);
    expect(await before).toBe(0); // sequential: the wait started once this answered
    dropConnection(client);
    await waitForState(client, "open");
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([2])); // both resends on the object
    controller.abort(new Error("given up"));
    expect(((await rejection(call)) as Error).message).toBe("given up");
    expect(await held).toBe(1); // not held until the wait's 60 s are up
    await runCancelled(client);
  });

  it("one signal for a running call and a call made while reconnecting: both reject with its reason; the run is cancelled, the other never runs", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("cut-shared-signal"), { reconnect: { initialDelay: 0, jitter: 0 } });
    const controller = new AbortController();
    const running = withCallOptions(client.waitOrCancel(60_000), { signal: controller.signal });
    expect(await client.getValue()).toBe(0);
    dropConnection(client);
    const queued = withCallOptions(client.increment(5), { signal: controller.signal });
    controller.abort("given up"); // a reason that is not an Error arrives as it is
    expect(await rejection(running)).toBe("given up");
    expect(await rejection(queued)).toBe("given up");
    await waitForState(client, "open");
    await runCancelled(client);
    expect(await client.getValue()).toBe(0);
  });
});

describe("a call pipelining on a call given up", () => {
  it.each([
    { turn: "same turn", laterTurn: false },
    { turn: "later turn", laterTurn: true },
  ])("made in the $turn as a running call that is then aborted: it rejects with the same reason and never runs", async ({ laterTurn }) => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("pipe-aborted"));
    const controller = new AbortController();
    const first = client.addLater(1, 2, 300); // ignores its signal: it runs on to the end
    withCallOptions(first, { signal: controller.signal }).catch(() => {});
    let pipelined = laterTurn ? undefined : client.increment(first);
    expect(await client.getValue()).toBe(0); // `first` is running
    pipelined ??= client.increment(first);
    controller.abort("given up");
    expect(await rejection(pipelined)).toBe("given up");
    await nothingRunning(client); // `first` has ended on the object
    expect(await client.getValue()).toBe(0);
  });

  /** Gives up `first` (already given `signal`), and returns the promise that rejects with its error. */
  type GiveUp = (first: PromiseLike<string>, abortable: Promise<string>, controller: AbortController) => Promise<string>;
  it.each([
    { how: "aborted", giveUp: ((_first, abortable, controller) => (controller.abort("given up"), abortable)) satisfies GiveUp },
    // A timeout counts from when it is applied (docs/api.md, CallOptions): it fires while reconnecting.
    { how: "timing out", giveUp: ((first) => withCallOptions(first, { timeout: 1 })) satisfies GiveUp },
  ])("on a call $how while both wait to be resent: it rejects at once with the same error, and never runs", async ({ giveUp }) => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("pipe-outage"), { reconnect: { initialDelay: 500, jitter: 0 } });
    const controller = new AbortController();
    const first = client.waitOrCancel(60_000);
    const abortable = withCallOptions(first, { signal: controller.signal });
    abortable.catch(() => {});
    // Were it run, it would add the string `first` answers to the count.
    const pipelined = client.increment(first as unknown as number);
    expect(await client.getValue()).toBe(0); // `first` is running; `pipelined` waits for it on the object
    dropConnection(client);
    const error = await rejection(giveUp(first, abortable, controller));
    expect(await rejection(pipelined)).toBe(error);
    expect(rpcConnection(client).state).toBe("reconnecting"); // it did not wait for the next connection
    await waitForState(client, "open");
    await runCancelled(client);
    await nothingRunning(client);
    expect(await client.getValue()).toBe(0);
  });
});

/**
 * Per-call options (timeout, signal) and cancellation: on a path of a call that already left,
 * on calls held back by sequential ordering, and on calls that pipeline on a cancelled one.
 */
import { type RpcError, withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection } from "@dorpc/testing";
import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter, MyCounter } from "./objects.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("per-call options on a path of a call already sent", () => {
  it("timeout applies to a path read on a call that left earlier", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("path-timeout"));
    void client.addLater(0, 0, 400); // sequential: holds back the next call for 400 ms
    const user = client.users.get("a");
    await tick(); // `user` has left
    // Without its own bound the read would wait for `user` and resolve "a".
    const error = await rpcFailure(withCallOptions(user.id, { timeout: 50 }), "TIMEOUT");
    expect(error.message).toContain("within 50 ms");
    expect(await user).toMatchObject({ id: "a" }); // the call itself is not affected
  });

  it("signal applies to a path read on a call that left earlier", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("path-signal"));
    void client.addLater(0, 0, 400);
    const user = client.users.get("a");
    await tick();
    const controller = new AbortController();
    const read = withCallOptions(user.id, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("gave up")), 20);
    const error = await rejection(read);
    expect((error as Error).message).toBe("gave up");
    expect(await user).toMatchObject({ id: "a" });
  });

  it("an already-aborted signal rejects a path read on a sent call at once", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("path-aborted"));
    void client.addLater(0, 0, 400);
    const user = client.users.get("a");
    await tick();
    const error = await rejection(withCallOptions(user.id, { signal: AbortSignal.abort(new Error("already")) }));
    expect((error as Error).message).toBe("already");
    expect(await user).toMatchObject({ id: "a" });
  });
});

describe("cancellation", () => {
  it("a call aborted before it leaves is never run", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("abort-unsent"));
    await client.getValue();
    const controller = new AbortController();
    const call = withCallOptions(client.increment(5), { signal: controller.signal });
    controller.abort(new Error("stop"));
    expect(((await rejection(call)) as Error).message).toBe("stop");
    await tick();
    expect(await client.getValue()).toBe(0);
  });

  it("sequential: a call aborted by signal no longer holds back later calls", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("abort-seq"));
    const controller = new AbortController();
    const slow = withCallOptions(client.addLater(1, 1, 10_000), { signal: controller.signal });
    const after = client.getValue();
    await tick();
    controller.abort(new Error("stop"));
    await rejection(slow);
    expect(await after).toBe(0);
  });

  it("sequential: a call timed out while held back (queued on the object) does not run later", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("seq-queued"));
    const slow = client.addLater(1, 1, 300);
    const inc = withCallOptions(client.increment(7), { timeout: 50 });
    await rpcFailure(inc, "TIMEOUT");
    expect(await slow).toBe(2);
    await tick();
    expect(await client.getValue()).toBe(0);
  });

  it("timeout option 0 on a call disables the client's default timeout", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("timeout-zero"), { timeout: 50 });
    expect(await withCallOptions(client.addLater(1, 2, 150), { timeout: 0 })).toBe(3);
  });

  it("a negative or NaN per-call timeout disables it (docs: any value not > 0)", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("timeout-neg"), { timeout: 50 });
    expect(await withCallOptions(client.addLater(1, 2, 150), { timeout: -1 })).toBe(3);
    expect(await withCallOptions(client.addLater(1, 2, 150), { timeout: Number.NaN })).toBe(3);
  });

  it("calls made and not awaited, then the client disposed: each reported to onError as DISPOSED", async () => {
    const errors: unknown[] = [];
    const client = createTestClient<Counter>(env.COUNTER, uniqueName("dispose-unawaited"), { onError: (e) => errors.push(e) });
    void client.increment(1);
    void client.addLater(1, 2, 100);
    client[Symbol.dispose]();
    await tick();
    expect(errors.length).toBe(2);
    for (const e of errors) expect((e as RpcError).code).toBe("DISPOSED");
  });

  it("a timed-out call's late reply is ignored and the next calls still work", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("late-reply"));
    await rpcFailure(withCallOptions(client.addLater(1, 2, 100), { timeout: 20 }), "TIMEOUT");
    await new Promise((r) => setTimeout(r, 150));
    expect(await client.addLater(2, 2, 1)).toBe(4);
  });

  it("a timeout changed after the call left is honoured (from when the options are applied)", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("late-options"));
    const call = client.addLater(1, 2, 400);
    await tick();
    const error = await rpcFailure(withCallOptions(call, { timeout: 30 }), "TIMEOUT");
    expect(error.message).toContain("within 30 ms");
  });
});

describe("a call pipelined on a call that is cancelled before it starts", () => {
  it("sequential: the pipelined call does not hold the connection after the call it uses was cancelled", async () => {
    using client = createTestClient<MyCounter>(env.MY_COUNTER, uniqueName("pipe-cancel"));
    const slow = client.addLater(1, 1, 300); // holds back A and B on the object
    const a = client.users.get("a");
    const aTimed = withCallOptions(a, { timeout: 50 });
    const b = withCallOptions(a.id, { timeout: 3000 });
    b.catch(() => undefined);
    await rpcFailure(aTimed, "TIMEOUT");
    expect(await slow).toBe(2);
    // Before: B waited forever for A (cancelled before it ran) and held every later call.
    const c = await withCallOptions(client.getValue(), { timeout: 10_000 }).then(
      (v) => v,
      (e: RpcError) => e.code,
    );
    expect(c).toBe(0);
    expect(((await rejection(b)) as RpcError).code).toBe("TIMEOUT");
  });

  it("a call pipelined on a call that timed out rejects with that error promptly (docs: it rejects with the same error), not at its own timeout", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("pipe-cancel-c"));
    const x = client.addLater(1, 1, 300);
    const a = client.echo(x) as unknown as { foo: PromiseLike<unknown> } & PromiseLike<unknown>; // waits on the object for x
    const aTimed = withCallOptions(a, { timeout: 50 }); // cancelled before it starts
    const b = withCallOptions(a.foo, { timeout: 3000 }); // pipelined on a, same frame
    const aError = await rejection(aTimed);
    expect((aError as RpcError).code).toBe("TIMEOUT");
    // A's own error (within 50 ms), not B's timeout of 3000 ms.
    expect(await rejection(b)).toBe(aError);
  });
});

describe("a cut is not a cancellation", () => {
  it("a call running when the connection is cut runs on (its signal not aborted); the resend gets its answer", async () => {
    using c = createTestClient<Counter>(env.COUNTER, uniqueName("cut-runs-on"));
    await c.getValue();
    const outcome = c.waitOrCancel(200);
    await new Promise((r) => setTimeout(r, 50));
    dropConnection(c); // a network blip: the client reconnects and resends at once
    expect(await outcome).toBe("finished");
    expect(await c.waitOutcome()).toBe("finished");
  });

  it("a client that closes (disposed) does cancel it: the object's signal aborts", async () => {
    const name = uniqueName("dispose-aborts");
    const c = createTestClient<Counter>(env.COUNTER, name);
    await c.getValue();
    const outcome = c.waitOrCancel(10_000);
    outcome.then(
      () => undefined,
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 50));
    c[Symbol.dispose]();
    using again = createTestClient<Counter>(env.COUNTER, name);
    await vi.waitFor(async () => expect(await again.waitOutcome()).toBe("cancelled: AbortError"));
  });
});

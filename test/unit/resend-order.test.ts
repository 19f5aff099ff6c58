/**
 * Resends keep the order calls were sent in (caller.ts connectionLost, OutgoingCall.order) and
 * every call that pipelines on another travels in that call's frame: lazy reads and chains cut
 * twice, idempotent and Retry resends mixed, a Blob not read yet at the cut, a call made during
 * the outage on a resend; and an argument over 64 KiB (where the frame is cut by size) with a
 * call pipelining on it made in the same turn.
 */
import { describe, expect, it } from "vitest";
import { withCallOptions } from "../../packages/rpc/src/client.js";
import { resendSetup, wait } from "../support/resend-harness.js";

const setup = (timeout = 2000) => resendSetup("resend-order", timeout);

describe("resends and frames keep what pipelines together", () => {
  it("lazy read argument cut twice", async () => {
    const { target, paired, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    target.cuts = 2;
    const r = await rpc.echo(rpc.config as never).catch((e: unknown) => e);
    expect(r).toEqual({ a: 1 });
    expect(paired.connections.length).toBeGreaterThanOrEqual(2);
  });

  it("nested echo chain cut twice", async () => {
    const { target, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    target.cuts = 2;
    const r = await rpc.echo(rpc.echo(rpc.getValue()) as never).catch((e: unknown) => e);
    expect(r).toBe(7);
    expect(target.runs.get("getValue")).toBe(1);
  });

  it("idempotent resend mixed with Retry resends and a lazy read", async () => {
    const { target, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const idem = <T>(p: T): T => {
      void withCallOptions(p as PromiseLike<unknown>, { idempotent: true }).catch(() => {});
      return p;
    };
    target.cuts = 2;
    const a = rpc.echo(rpc.config as never);
    const v = idem(rpc.getValue());
    const b = rpc.echo(v as never);
    const c = idem(rpc.echo(rpc.config as never));
    const d = idem(rpc.echo(rpc.getValue() as never));
    const e = rpc.echo(d as never);
    const r = await Promise.all([a, b, c, d, e].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
    expect(r).toEqual([{ a: 1 }, 7, { a: 1 }, 7, 7]);
  });

  it("a Blob argument over 64 KiB and a call pipelining on that call, made in the same turn: both answered", async () => {
    // api.md, Pipelining: "Made in the same turn as the call it uses, it travels in the same
    // frame, and the object runs it on the result without a round trip." (protocol.md: PIPELINE
    // names "the sender's call callId, made earlier in the same frame").
    // The frame is cut after the blob's envelope (MAX_SHARED_FRAME, 64 KiB). The second call was
    // sent alone and the object refused it ("A call pipelines on call 2, which is not an earlier
    // call of the same frame"); the caller now cuts where the outbox would, and holds the second
    // call until the first has answered (api.md: "a call cut off from the call it uses is held").
    const { rpc } = setup();
    using _ = rpc;
    const a = rpc.echo(new Blob([new Uint8Array(70_000).fill(3)]) as never);
    const b = rpc.echo(a as never);
    const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r[1]).toBeInstanceOf(Blob);
  });

  it("a string argument over 64 KiB and a call pipelining on that call, made in the same turn: both answered", async () => {
    // Same promise as above, without a Blob.
    const { rpc } = setup();
    using _ = rpc;
    const big = "x".repeat(70_000);
    const a = rpc.echo(big as never);
    const b = rpc.echo(a as never);
    const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => String(x))));
    expect(r).toEqual([big, big]);
  });

  it("a Blob argument not ready when cut, with a call pipelining on it: both resent and answered", async () => {
    // reliability.md: "Resent on the next connection (`Retry` flag) and answered once [...]
    // Resends go out before the calls queued during the outage, in their original order."
    const { paired, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const a = rpc.echo(new Blob([new Uint8Array(1000).fill(3)]) as never);
    const b = rpc.echo(a as never);
    await Promise.resolve();
    await Promise.resolve();
    await Promise.resolve();
    paired.connections.at(-1)!.cut();
    const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r[1]).toBeInstanceOf(Blob);
    expect(paired.connections.length).toBe(2);
  });

  it("call made during the outage pipelining on a resend", async () => {
    const { target, paired, rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    target.cuts = 1;
    const v = rpc.getValue();
    await wait(1); // the cut happens
    const e = rpc.echo(v as never);
    const r = await Promise.resolve(e).catch((x: unknown) => x);
    expect(r).toBe(7);
    expect(paired.connections.length).toBe(2);
  });
});

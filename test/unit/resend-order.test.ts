/**
 * Resends keep the order calls were sent in (caller.ts connectionLost, OutgoingCall.order) and
 * every call that pipelines on another travels in that call's frame: lazy reads and chains cut
 * twice, idempotent and Retry resends mixed, a Blob not read yet at the cut, a call made during
 * the outage on a resend; and an argument over 64 KiB (where the frame is cut by size) with a
 * call pipelining on it made in the same turn; a Blob argument read in a later task (its size
 * counted before it is read, and its frame starting after the calls queued before it).
 */
import { describe, expect, it } from "vitest";
import { withCallOptions } from "../../packages/rpc/src/client.js";
import { resendSetup, wait } from "../support/resend-harness.js";

const setup = (timeout = 2000) => resendSetup("resend-order", timeout);

/** A Blob whose bytes are read in a later task, as a browser reads one, not within the turn. */
class SlowBlob extends Blob {
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await wait(20);
    return super.arrayBuffer();
  }
}

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

  it("a slow Blob over 64 KiB and a call pipelining on that call: the size counts before the bytes are read", async () => {
    // As above, with a Blob read in a task (as browsers read one), not by the caller's flush: its
    // bytes were counted as 0 when the caller cut the frame, so the second call was not held and
    // the outbox, cutting after the read, sent it alone (PROTOCOL).
    const { rpc, target } = setup();
    using _ = rpc;
    const a = rpc.echo(new SlowBlob([new Uint8Array(70_000).fill(3)]) as never);
    const b = rpc.echo(a as never);
    const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r[1]).toBeInstanceOf(Blob);
    expect(await (r[1] as Blob).bytes()).toEqual(new Uint8Array(70_000).fill(3));
    expect(target.runs.get("echo")).toBe(2);
  });

  it("a call with a Blob argument that pipelines on a call made before it in the same turn: both answered", async () => {
    // protocol.md, Blob bytes: what was queued before a call whose Blob is being read leaves at
    // once, so that call starts a frame; it pipelined on the call before it and was refused
    // (PROTOCOL, "not an earlier call of the same frame"). It is now held until that result arrives.
    for (const blob of [new Blob([new Uint8Array(10).fill(1)]), new SlowBlob([new Uint8Array(10).fill(1)])]) {
      const { rpc, target, paired } = setup();
      using _ = rpc;
      const a = rpc.getValue();
      const b = rpc.echo([a, blob] as never);
      const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
      expect(r[0]).toBe(7);
      expect((r[1] as unknown[])[0]).toBe(7);
      expect(await ((r[1] as unknown[])[1] as Blob).bytes()).toEqual(new Uint8Array(10).fill(1));
      expect(target.runs.get("getValue")).toBe(1);
      expect(paired.connections).toHaveLength(1);
    }
  });

  it("two calls with slow Blob arguments, the second pipelining on the first: both answered", async () => {
    const { rpc } = setup();
    using _ = rpc;
    const a = rpc.echo(new SlowBlob([new Uint8Array(10).fill(1)]) as never);
    const b = rpc.echo([a, new SlowBlob([new Uint8Array(10).fill(2)])] as never);
    const r = await Promise.all([a, b].map((p) => Promise.resolve(p).catch((x: unknown) => x)));
    expect(r[0]).toBeInstanceOf(Blob);
    expect(await ((r[1] as unknown[])[0] as Blob).bytes()).toEqual(new Uint8Array(10).fill(1));
    expect(await ((r[1] as unknown[])[1] as Blob).bytes()).toEqual(new Uint8Array(10).fill(2));
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

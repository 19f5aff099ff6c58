/**
 * The client cuts its calls into frames exactly where its outbox will send them apart, so that a
 * call that pipelines on another is only sent in that call's frame (protocol.md, Pipelining: a
 * PIPELINE record or negative target naming a call that is not earlier in the same frame is
 * `PROTOCOL`) and otherwise is held until the result arrives (api.md, Pipelining).
 *
 * Each case here was refused with `PROTOCOL` before the caller's frame tally (call-sending.ts,
 * FrameTally) and the outbox's frame boundaries (outbox.ts, `cut`) agreed: frames cut by the
 * caller and then joined behind a Blob being read and cut again by size or count; a lazy read made
 * when a held call is encoded again, counted without its path. The rest pin the neighbouring cases.
 */
import { describe, expect, it } from "vitest";
import { withCallOptions } from "../../packages/rpc/src/client.js";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { resendSetup, wait } from "../support/resend-harness.js";

const setup = (timeout = 3000) => resendSetup("frame-cuts", timeout);

/** A Blob read in a later task (as a browser reads one), not within the turn it was passed in. */
class SlowBlob extends Blob {
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await wait(20);
    return super.arrayBuffer();
  }
}

/** A Blob whose bytes cannot be read (a browser File changed on disk). */
class FailingBlob extends Blob {
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await wait(10);
    throw new Error("read failed");
  }
}

const settleAll = (ps: unknown[]) => Promise.all(ps.map((p) => Promise.resolve(p).catch((x: unknown) => x)));
const codeOf = (x: unknown) => (x instanceof Error ? (x as { code?: string }).code : x);
const messageOf = (x: unknown) => (x instanceof Error ? x.message : String(x));

describe("frames cut by the caller stay cut behind a Blob being read", () => {
  for (const kind of ["Blob", "File"] as const) {
    it(`${kind} of 60,000 bytes, then 100 calls and two calls pipelining on them, in one turn`, async () => {
      // The caller cut after about 20 calls (its estimate is conservative); the outbox, waiting for
      // the bytes, joined the frames and put about 80 in the binary frame: the echo of the 30th
      // was sent in the next frame and refused.
      const { rpc, target } = setup();
      using _ = rpc;
      expect(await rpc.fast()).toBe("fast");
      const bytes = new Uint8Array(60_000).fill(4);
      const b = rpc.echo((kind === "Blob" ? new Blob([bytes]) : new File([bytes], "a.bin")) as never);
      const values: unknown[] = [];
      for (let i = 0; i < 100; i++) values.push(rpc.getValue());
      const e30 = rpc.echo(values[30] as never);
      const e80 = rpc.echo(values[80] as never);
      const r = await settleAll([b, ...values, e30, e80]);
      expect(r[0]).toBeInstanceOf(Blob);
      expect(r.slice(1)).toEqual(Array(102).fill(7));
      expect(target.runs.get("getValue")).toBe(100);
    });
  }

  it("calls of a later turn, cut by size: a small call, a 25,000-character string, a call on the first", async () => {
    const { rpc, target } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const b = rpc.echo(new SlowBlob([new Uint8Array(10).fill(1)]) as never);
    await wait(1);
    const d1 = rpc.getValue();
    const d2 = rpc.echo("x".repeat(25_000) as never);
    const d3 = rpc.echo(d1 as never);
    const r = await settleAll([b, d1, d2, d3]);
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r.slice(1)).toEqual([7, "x".repeat(25_000), 7]);
    expect(target.runs.get("getValue")).toBe(1);
  });

  it("calls of a later turn, cut by count: 256 calls, the last on the first", async () => {
    const { rpc, target } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const b = rpc.echo(new SlowBlob([new Uint8Array(10).fill(1)]) as never);
    await wait(1);
    const first = rpc.getValue();
    const middle: unknown[] = [];
    for (let i = 0; i < 254; i++) middle.push(rpc.fast());
    const last = rpc.echo(first as never);
    const r = await settleAll([b, first, ...middle, last]);
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r.slice(1)).toEqual([7, ...Array(254).fill("fast"), 7]);
    expect(target.runs.get("getValue")).toBe(1);
  });

  it("the same turn: a slow Blob, then 300 echoes each on the one before", async () => {
    const { rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const b = rpc.echo(new SlowBlob([new Uint8Array(10).fill(1)]) as never);
    const chain: unknown[] = [rpc.getValue()];
    for (let i = 0; i < 300; i++) chain.push(rpc.echo(chain[chain.length - 1] as never));
    const r = await settleAll([b, ...chain]);
    expect(r[0]).toBeInstanceOf(Blob);
    expect(r.slice(1)).toEqual(Array(301).fill(7));
  });
});

describe("a lazy read made when a held call is encoded again counts its whole path", () => {
  const names = Array.from({ length: 8 }, (_, i) => `segment_with_a_fairly_long_property_name_${i}`);
  class Api {
    gates: (() => void)[] = [];
    get deep(): Record<string, unknown> {
      let v: unknown = 42;
      for (let i = names.length - 1; i >= 0; i--) v = { [names[i]!]: v };
      return v as Record<string, unknown>;
    }
    slow(): Promise<number> {
      return new Promise((resolve) => this.gates.push(() => resolve(7)));
    }
    echo(v: unknown): unknown {
      return v;
    }
  }
  type Deep = { [name: string]: Deep };

  /** A call held behind `slow()` reads a path of ~350 characters when it is encoded again, right behind a call of `size` characters. */
  async function heldCallWithLongRead(size: number): Promise<unknown[]> {
    const api = new Api();
    const paired = pairWith(api);
    const rpc = createRpcClient<Api>("API", "frame-cuts-lazy", { transport: paired.factory, heartbeat: false, timeout: 5000 });
    using _ = rpc;
    const v = rpc.slow();
    await wait(5); // v left and is not answered
    const first = rpc.echo([v, "x".repeat(size)]);
    let path = rpc.deep as unknown as Deep;
    for (const name of names) path = path[name]!;
    const held = rpc.echo([v, path]);
    await wait(5);
    api.gates.shift()!();
    return await settleAll([v, first, held]);
  }

  it("right behind a call that nearly fills the frame", async () => {
    expect(await heldCallWithLongRead(65_080)).toEqual([7, [7, "x".repeat(65_080)], [7, 42]]);
  });

  it("across the sizes where the frame is cut", async () => {
    const wrong: string[] = [];
    for (let size = 64_950; size <= 65_500; size += 10) {
      const r = await heldCallWithLongRead(size);
      if (JSON.stringify(r[2]) !== "[7,42]" || r[1] instanceof Error) wrong.push(`${size}: ${messageOf(r[1])} / ${messageOf(r[2])}`);
    }
    expect(wrong).toEqual([]);
  }, 60_000);
});

describe("a Blob that cannot be read, or a call given up while its Blob is read", () => {
  it("calls pipelining on it reject with the read's error; the calls around it are answered", async () => {
    const { rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const before = rpc.getValue();
    const b = rpc.echo(new FailingBlob([new Uint8Array(10)]) as never);
    const c = rpc.echo(b as never);
    const x = rpc.getValue();
    const d = rpc.echo([c, 1] as never);
    const y = rpc.fast();
    const r = await settleAll([before, b, c, x, d, y]);
    expect(r[0]).toBe(7);
    for (const i of [1, 2, 4]) {
      expect(codeOf(r[i])).toBe("ENCODE");
      expect(messageOf(r[i])).toMatch(/read failed/);
    }
    expect([r[3], r[5]]).toEqual([7, "fast"]);
    expect(await settleAll([rpc.getValue(), rpc.echo("z" as never)])).toEqual([7, "z"]);
  });

  it("a slow Blob call pipelining on a failing one, and a property of a failing call's result", async () => {
    const { rpc } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const b = rpc.echo(new FailingBlob([new Uint8Array(10)]) as never);
    const c = rpc.echo([b, new SlowBlob([new Uint8Array(5).fill(2)])] as never);
    const o = rpc.echo({ blob: new FailingBlob([new Uint8Array(10)]), n: 3 } as never) as unknown as { n: unknown };
    const n = rpc.echo(o.n as never);
    const x = rpc.getValue();
    const r = await settleAll([b, c, o, n, x]);
    for (const i of [0, 1, 2, 3]) expect(messageOf(r[i])).toMatch(/read failed/);
    expect(r[4]).toBe(7);
  });

  it("aborted while its Blob is read: the calls on it reject as it does, the others are answered once", async () => {
    const { rpc, target } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const controller = new AbortController();
    const a = rpc.getValue();
    const b = rpc.echo([a, new SlowBlob([new Uint8Array(8)])] as never);
    void withCallOptions(b as PromiseLike<unknown>, { signal: controller.signal }).catch(() => {});
    const c = rpc.echo(b as never);
    const d = rpc.getValue();
    const e = rpc.echo([d, c] as never);
    const f = rpc.echo(d as never);
    setTimeout(() => controller.abort(), 5);
    const r = await settleAll([a, b, c, d, e, f]);
    expect(r[1]).toBeInstanceOf(Error);
    expect(codeOf(r[1])).not.toBe("PROTOCOL");
    expect([codeOf(r[2]), codeOf(r[4])]).toEqual([codeOf(r[1]), codeOf(r[1])]);
    expect([r[0], r[3], r[5]]).toEqual([7, 7, 7]);
    expect(target.runs.get("getValue")).toBe(2);
  });

  it("timed out while its Blob is read: the call on it times out too, and the Blob's call never runs", async () => {
    const { rpc, target } = setup();
    using _ = rpc;
    expect(await rpc.fast()).toBe("fast");
    const b = rpc.echo(new SlowBlob([new Uint8Array(8)]) as never);
    void withCallOptions(b as PromiseLike<unknown>, { timeout: 5 }).catch(() => {});
    const c = rpc.echo(b as never);
    const d = rpc.getValue();
    const r = await settleAll([b, c, d]);
    expect([codeOf(r[0]), codeOf(r[1]), r[2]]).toEqual(["TIMEOUT", "TIMEOUT", 7]);
    expect(target.runs.get("echo") ?? 0).toBe(0);
  });
});

/**
 * The outbox (packages/rpc/src/outbox.ts) driven directly: random scripts of envelopes (two kinds,
 * some large, some with blobs, some waiting for Blob bytes that become ready, are replaced or are
 * dropped, in any order), frame boundaries (`cut`), nested holds, flushes, turns and `clear`; then
 * every frame is read back and checked against the invariants in outbox.ts: each envelope sent
 * once, in order, none after the `clear` that dropped it, none across a boundary, one kind and one
 * envelope's blobs per frame, at most MAX_ENVELOPES, shared text frames within MAX_SHARED_FRAME.
 * A review probe wrote these; `clear` during a Blob read once let the dropped envelope out, or
 * stalled the envelopes after it (the "clear" cases below). Whole frames (`addFrame`: stored
 * replies and topic events) take their place in the same order.
 */
import { describe, expect, it } from "vitest";
import { readFrame, writeFrame } from "../../packages/rpc/src/frame.js";
import { MAX_ENVELOPES, MAX_SHARED_FRAME, Outbox } from "../../packages/rpc/src/outbox.js";

const LIMITS = { maxMessageBytes: 1 << 30, maxBlobs: 1 << 20 } as never;
type Sent = { kind: number; ids: number[]; blobs: number; bytes: number; len: number; at: number };

function rig() {
  const frames: Sent[] = [];
  let clock = 0;
  const outbox = new Outbox((f) => {
    const raw = readFrame(f, LIMITS)!;
    const body = raw.body as unknown[][];
    frames.push({
      kind: raw.kind,
      ids: body.map((e) => e[0] as number),
      blobs: raw.blobs.length,
      bytes: typeof f === "string" ? f.length : f.byteLength,
      len: body.length,
      at: clock,
    });
  });
  return { frames, outbox, tick: () => ++clock, now: () => clock };
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const defer = <T>() => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};
const task = () => new Promise((r) => setTimeout(r, 0));

/** Runs a random script; checks every invariant at the end. */
async function fuzz(seed: number, opts: { clears: boolean }) {
  const r = rng(seed);
  const { frames, outbox, tick, now } = rig();
  let id = 0;
  const added: { id: number; kind: number; blobs: number; dropped: boolean; replaced: boolean; epoch: number; addedAt: number }[] = [];
  const cuts: { before: number; epoch: number }[] = []; // boundary after id `before`
  const pend: { resolve: (v: string | null | undefined) => void; id: number }[] = [];
  const clears: number[] = []; // clock at each clear
  let epoch = 0;
  let holds = 0;
  for (let step = 0; step < 400; step++) {
    const x = r();
    if (x < 0.5) {
      const n = 1 + Math.floor(r() * (r() < 0.1 ? 300 : 20));
      for (let k = 0; k < n; k++) {
        const kind = r() < 0.8 ? 1 : 2;
        const big = r() < 0.05 ? Math.floor(r() * 40_000) : Math.floor(r() * 50);
        const withBlob = r() < 0.08;
        const withReady = withBlob && r() < 0.5;
        const i = ++id;
        const entry = {
          id: i,
          kind,
          blobs: withBlob ? 1 + Math.floor(r() * 2) : 0,
          dropped: false,
          replaced: false,
          epoch,
          addedAt: now(),
        };
        added.push(entry);
        const blobs = Array.from({ length: entry.blobs }, () => new Uint8Array(Math.floor(r() * 30_000)));
        const json = `[${i},"${"x".repeat(big)}"]`;
        if (withReady) {
          const d = defer<string | null | undefined>();
          pend.push({ resolve: d.resolve, id: i });
          outbox.add(kind, json, blobs, d.promise);
        } else if (r() < 0.04) outbox.addFrame(writeFrame(kind, `[${json}]`, blobs));
        else outbox.add(kind, json, blobs);
      }
    } else if (x < 0.62) {
      cuts.push({ before: id, epoch });
      outbox.cut();
    } else if (x < 0.68) {
      outbox.hold();
      holds++;
    } else if (x < 0.74 && holds > 0) {
      holds--;
      outbox.release();
    } else if (x < 0.78) {
      outbox.flush();
    } else if (x < 0.88 && pend.length) {
      const p = pend.splice(Math.floor(r() * pend.length), 1)[0]!;
      const y = r();
      const e = added.find((a) => a.id === p.id)!;
      if (y < 0.5) p.resolve(undefined);
      else if (y < 0.75) {
        e.replaced = true;
        p.resolve(`[${p.id},"replaced"]`);
      } else {
        e.dropped = true;
        p.resolve(null);
      }
    } else if (x < 0.95) {
      tick();
      await turns(1 + Math.floor(r() * 3));
    } else if (x < 0.97 && opts.clears) {
      tick();
      clears.push(now());
      epoch++;
      outbox.clear();
      tick();
    } else {
      tick();
      await task();
    }
  }
  while (holds-- > 0) outbox.release();
  for (const p of pend) p.resolve(undefined);
  await outbox.drain();
  await task();
  outbox.flush();

  const problems: string[] = [];
  const sentIds = frames.flatMap((f) => f.ids);
  // exactly once
  const seen = new Map<number, number>();
  for (const s of sentIds) seen.set(s, (seen.get(s) ?? 0) + 1);
  for (const [s, n] of seen) if (n > 1) problems.push(`id ${s} sent ${n} times`);
  // in order
  for (let i = 1; i < sentIds.length; i++) if (sentIds[i]! <= sentIds[i - 1]!) problems.push(`order: ${sentIds[i - 1]} then ${sentIds[i]}`);
  // everything of the last epoch, not dropped, was sent; nothing of an earlier epoch sent after its clear
  const byId = new Map(added.map((a) => [a.id, a]));
  for (const a of added) if (a.epoch === epoch && !a.dropped && !seen.has(a.id)) problems.push(`id ${a.id} lost`);
  for (const a of added) if (a.dropped && seen.has(a.id)) problems.push(`id ${a.id} sent though dropped`);
  for (const f of frames)
    for (const s of f.ids) {
      const a = byId.get(s)!;
      const clearAfter = clears[a.epoch];
      if (clearAfter !== undefined && f.at >= clearAfter)
        problems.push(`id ${s} (added before clear #${a.epoch + 1}) sent after it (frame at ${f.at}, clear at ${clearAfter})`);
    }
  // frames
  for (const f of frames) {
    if (f.len > MAX_ENVELOPES) problems.push(`frame of ${f.len} envelopes`);
    for (const s of f.ids)
      if (byId.get(s)!.kind !== f.kind) problems.push(`id ${s} of kind ${byId.get(s)!.kind} in frame of kind ${f.kind}`);
    const withBlobs = f.ids.filter((s) => byId.get(s)!.blobs > 0 && !byId.get(s)!.replaced);
    if (withBlobs.length > 1) problems.push(`frame [${f.ids[0]}..${f.ids.at(-1)}] carries blobs of ${withBlobs.length} envelopes`);
    if (f.len > 1 && f.bytes > MAX_SHARED_FRAME + 64 && f.blobs === 0) problems.push(`shared text frame of ${f.bytes} chars`);
    for (const c of cuts) {
      if (f.ids[0]! <= c.before && f.ids.at(-1)! > c.before)
        problems.push(`frame [${f.ids[0]}..${f.ids.at(-1)}] crosses the cut after ${c.before}`);
    }
  }
  return { problems: [...new Set(problems)].slice(0, 12), frames: frames.length, sent: sentIds.length, added: added.length };
}

describe("the outbox under random scripts", () => {
  it("200 seeds without clear: every envelope once, in order, boundaries and limits kept", async () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 200; seed++) {
      const r = await fuzz(seed, { clears: false });
      if (r.problems.length) bad.push(`seed ${seed}: ${r.problems.join("; ")}`);
    }
    expect(bad.slice(0, 10)).toEqual([]);
  }, 60_000);

  it("200 seeds with clear: nothing dropped by a clear is sent after it, nothing after it is stalled", async () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 200; seed++) {
      const r = await fuzz(seed, { clears: true });
      if (r.problems.length) bad.push(`seed ${seed}: ${r.problems.join("; ")}`);
    }
    expect(bad.slice(0, 10)).toEqual([]);
  }, 60_000);
});

describe("the outbox: boundaries, clear and waiting envelopes", () => {
  const envelope = (i: number) => `[${i}]`;
  it("a cut recorded before clear() does not cut the next batch", async () => {
    const { frames, outbox } = rig();
    outbox.hold();
    outbox.add(1, envelope(1));
    outbox.add(1, envelope(2));
    outbox.cut(); // cuts = [2]
    outbox.clear();
    outbox.release();
    outbox.add(1, envelope(3));
    outbox.add(1, envelope(4));
    outbox.add(1, envelope(5));
    await turns(2);
    expect(frames.map((f) => f.ids)).toEqual([[3, 4, 5]]);
  });

  it("a cut at one envelope, that envelope flushed alone: no leak into the next batch", async () => {
    const { frames, outbox } = rig();
    outbox.add(1, envelope(1));
    outbox.cut(); // cuts = [1] with count 1
    outbox.flush();
    outbox.add(1, envelope(2));
    outbox.add(1, envelope(3));
    outbox.add(1, envelope(4));
    outbox.flush();
    expect(frames.map((f) => f.ids)).toEqual([[1], [2, 3, 4]]);
  });

  it("cut, then a Blob read starts: what was queued leaves with its cut; later cuts wait in line", async () => {
    const { frames, outbox } = rig();
    outbox.hold();
    outbox.add(1, envelope(1));
    outbox.add(1, envelope(2));
    outbox.cut();
    outbox.add(1, envelope(3));
    const d = defer<undefined>();
    outbox.add(1, envelope(4), [new Uint8Array(3)], d.promise);
    outbox.add(1, envelope(5));
    outbox.cut();
    outbox.add(1, envelope(6));
    outbox.add(1, envelope(7));
    outbox.release();
    d.resolve(undefined);
    await outbox.drain();
    expect(frames.map((f) => f.ids)).toEqual([[1, 2], [3], [4, 5], [6, 7]]);
  });

  it("clear() while a Blob is read, then a new Blob envelope: the dropped envelope is not sent", async () => {
    const { frames, outbox } = rig();
    const d1 = defer<undefined>();
    outbox.add(1, envelope(1), [new Uint8Array(3)], d1.promise);
    outbox.add(1, envelope(2));
    outbox.clear(); // connection gone
    const d2 = defer<undefined>();
    outbox.add(1, envelope(10), [new Uint8Array(3)], d2.promise);
    outbox.add(1, envelope(11));
    d1.resolve(undefined);
    d2.resolve(undefined);
    await outbox.drain();
    await task();
    expect(frames.map((f) => f.ids)).toEqual([[10, 11]]);
  });

  it("clear() while a Blob is read, then a new Blob envelope: the new ones are sent even if the old read never ends", async () => {
    const { frames, outbox } = rig();
    const d1 = defer<undefined>();
    outbox.add(1, envelope(1), [new Uint8Array(3)], d1.promise);
    outbox.clear();
    const d2 = defer<undefined>();
    outbox.add(1, envelope(10), [new Uint8Array(3)], d2.promise);
    outbox.add(1, envelope(11));
    d2.resolve(undefined);
    await task();
    await task();
    expect(frames.map((f) => f.ids)).toEqual([[10, 11]]);
  });

  it("ready → null / string / undefined keeps order and drops or replaces", async () => {
    const { frames, outbox } = rig();
    const a = defer<string | null | undefined>();
    const b = defer<string | null | undefined>();
    const c = defer<string | null | undefined>();
    outbox.add(1, envelope(1));
    outbox.add(1, envelope(2), [new Uint8Array(1)], a.promise);
    outbox.add(1, envelope(3), [new Uint8Array(1)], b.promise);
    outbox.cut();
    outbox.add(1, envelope(4), [new Uint8Array(1)], c.promise);
    outbox.add(1, envelope(5));
    c.resolve(undefined);
    b.resolve(`[3,"r"]`);
    a.resolve(null);
    await outbox.drain();
    expect(frames.map((f) => f.ids)).toEqual([[1], [3], [4, 5]]);
  });

  it("cuts with several kinds, many envelopes: cut index counted across kinds", () => {
    const { frames, outbox } = rig();
    outbox.hold();
    for (let i = 1; i <= 3; i++) outbox.add(2, envelope(i));
    for (let i = 4; i <= 300; i++) outbox.add(1, envelope(i));
    outbox.cut();
    for (let i = 301; i <= 310; i++) outbox.add(1, envelope(i));
    outbox.release();
    expect(frames.map((f) => [f.ids[0], f.ids.at(-1)])).toEqual([
      [1, 3],
      [4, 259],
      [260, 300],
      [301, 310],
    ]);
  });

  it("a whole frame added behind an envelope waiting for its bytes leaves in its place, not before it", async () => {
    const { frames, outbox } = rig();
    const bytes = defer<string | null | undefined>();
    outbox.add(1, envelope(1));
    outbox.add(2, envelope(2), [new Uint8Array(3)], bytes.promise);
    outbox.add(1, envelope(3));
    outbox.addFrame(writeFrame(1, `[${envelope(4)}]`, [new Uint8Array(2)]));
    outbox.addFrame(`\u001e\u0001[${envelope(5)}]`);
    outbox.add(1, envelope(6));
    await turns(3);
    expect(frames.map((f) => f.ids)).toEqual([[1]]);
    bytes.resolve(undefined);
    await outbox.drain();
    expect(frames.map((f) => f.ids)).toEqual([[1], [2], [3], [4], [5], [6]]);
    expect(frames.map((f) => f.blobs)).toEqual([0, 1, 0, 1, 0, 0]);
  });

  it("with nothing waiting, a whole frame leaves at once, after what was queued", () => {
    const { frames, outbox } = rig();
    outbox.add(1, envelope(1));
    outbox.addFrame(writeFrame(1, `[${envelope(2)}]`, [new Uint8Array(2)]));
    expect(frames.map((f) => f.ids)).toEqual([[1], [2]]);
  });
});

/** The outbox: order, frames cut by kind, blobs and size (packages/rpc/src/outbox.ts). */
import { describe, expect, it } from "vitest";
import { FrameKind } from "../../packages/rpc/src/envelopes.js";
import { MAX_ENVELOPES, MAX_SHARED_FRAME, Outbox } from "../../packages/rpc/src/outbox.js";

function capture() {
  const frames: (string | Uint8Array)[] = [];
  const outbox = new Outbox((frame) => frames.push(frame));
  return { frames, outbox };
}

/** The envelopes of a text frame, as parsed JSON. */
const envelopes = (frame: string | Uint8Array): unknown[] => JSON.parse((frame as string).slice(2)) as unknown[];

describe("Outbox", () => {
  it("sends a lone envelope as a frame of one, then a turn of several as one frame, in order", async () => {
    const { frames, outbox } = capture();
    outbox.add(FrameKind.Replies, "[1,0,1]", []);
    await Promise.resolve();
    expect(frames).toEqual(["\u001eR[[1,0,1]]"]);
    expect(outbox.idle).toBe(true);
    outbox.add(FrameKind.Replies, "[2,0,2]", []);
    expect(outbox.idle).toBe(false);
    outbox.add(FrameKind.Replies, "[3,0,3]", []);
    outbox.add(FrameKind.Replies, "[4,0,4]", []);
    await Promise.resolve();
    expect(frames.slice(1)).toEqual(["\u001eR[[2,0,2],[3,0,3],[4,0,4]]"]);
    outbox.add(FrameKind.Replies, "[5,0,5]", []);
    outbox.clear();
    outbox.flush();
    expect(frames).toHaveLength(2);
    expect(outbox.idle).toBe(true);
  });

  it(`cuts a turn's envelopes into frames of at most ${MAX_ENVELOPES}, in order`, async () => {
    const { frames, outbox } = capture();
    const n = 2 * MAX_ENVELOPES + 88;
    for (let i = 1; i <= n; i++) outbox.add(FrameKind.Calls, `[0,["event",[0,${i}]]]`, []);
    await Promise.resolve();
    await Promise.resolve();
    expect(frames.map((f) => envelopes(f).length)).toEqual([MAX_ENVELOPES, MAX_ENVELOPES, 88]);
    const order = frames.flatMap((f) => envelopes(f).map((e) => ((e as [number, [string, [number, number]]])[1][1] as number[])[1]));
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it(`envelopes share a frame up to about ${MAX_SHARED_FRAME} bytes; a larger one goes alone`, () => {
    const { frames, outbox } = capture();
    const answer = (id: number, bytes: number) => `[${id},0,"${"x".repeat(bytes)}"]`;
    for (let i = 1; i <= 6; i++) outbox.add(FrameKind.Replies, answer(i, 20_000), []);
    outbox.add(FrameKind.Replies, answer(7, MAX_SHARED_FRAME * 2), []);
    outbox.add(FrameKind.Replies, answer(8, 10), []);
    outbox.flush();
    expect(frames.map((f) => envelopes(f).map((e) => (e as number[])[0]))).toEqual([[1, 2, 3], [4, 5, 6], [7], [8]]);
    for (const f of frames) if (envelopes(f).length > 1) expect((f as string).length).toBeLessThanOrEqual(MAX_SHARED_FRAME + 8);
  });

  it("keeps one frame per kind change, and a frame of exactly the maximum whole", async () => {
    const { frames, outbox } = capture();
    for (let i = 0; i < MAX_ENVELOPES; i++) outbox.add(FrameKind.Replies, `[${i + 1},0,1]`, []);
    outbox.add(FrameKind.Calls, `[0,["x",[0]]]`, []);
    outbox.flush();
    expect(frames.map((f) => [(f as string).charCodeAt(1), envelopes(f).length])).toEqual([
      [FrameKind.Replies, MAX_ENVELOPES],
      [FrameKind.Calls, 1],
    ]);
  });
});

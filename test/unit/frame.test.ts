/**
 * Binary frames, byte for byte: writeFrame lays a frame out exactly as envelopes.ts documents it
 * (the hand-built reference of test/support/binary-frame.ts, aligned), for ASCII, non-ASCII and
 * long headers alike; readFrame reads each back, from a buffer or a view at an offset, and
 * refuses a header that is not UTF-8 whatever its length. A faster writer or reader (e.g. one that copies ASCII headers itself) must pass
 * these unchanged.
 */
import { describe, expect, it } from "vitest";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { readFrame, writeFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { binaryFrame } from "../support/binary-frame.js";

const blobs = [new Uint8Array([1, 2, 3]), new Uint8Array(300).fill(7)];
const headers: [string, string][] = [
  ["short ASCII", '[[5,0,["Uint8Array",0]]]'],
  ["non-ASCII", '[[5,0,{"naïve ✓ 🙂":["Uint8Array",1]}]]'],
  ["ASCII longer than 1,024 characters", `[[5,0,${JSON.stringify("x".repeat(2000))}]]`],
  ["exactly 1,024 ASCII characters", `[${" ".repeat(1022)}]`],
  // The writer and reader copy ASCII headers of up to 512 characters themselves: both sides of that line.
  ["exactly 512 ASCII characters", `[${" ".repeat(510)}]`],
  ["513 ASCII characters", `[${" ".repeat(511)}]`],
  ["short, with one non-ASCII character last", '["abc","\u00e9"]'],
];

describe("binary frames", () => {
  for (const [name, json] of headers) {
    it(`writes a ${name} header exactly as the reference layout`, () => {
      const frame = writeFrame(0x52, json, blobs) as Uint8Array;
      expect(frame).toEqual(binaryFrame(json, blobs, { kind: 0x52, align: true }));
    });

    it(`reads a ${name} header back, blobs as views of the frame`, () => {
      const frame = writeFrame(0x43, json, blobs) as Uint8Array;
      const raw = readFrame(frame.slice().buffer, DEFAULT_LIMITS)!;
      expect(raw.kind).toBe(0x43);
      expect(raw.body).toEqual(JSON.parse(json));
      expect(raw.blobs.map((b) => [...b])).toEqual(blobs.map((b) => [...b]));
    });
  }

  it("reads a header that is a view at an offset of a larger buffer", () => {
    const frame = writeFrame(0x43, "[1]", [new Uint8Array([9])]) as Uint8Array;
    const padded = new Uint8Array(frame.byteLength + 8);
    padded.set(frame, 5);
    const raw = readFrame(padded.subarray(5, 5 + frame.byteLength), DEFAULT_LIMITS)!;
    expect(raw.body).toEqual([1]);
    expect([...raw.blobs[0]!]).toEqual([9]);
  });

  for (const [name, size] of [
    ["short", 8],
    ["long", 1500],
  ] as const) {
    it(`refuses a ${name} header that is not valid UTF-8 with DECODE`, () => {
      const header = new Uint8Array(size).fill(0x20);
      header[0] = 0x5b; // [
      header[1] = 0xff; // never valid in UTF-8
      header[size - 1] = 0x5d; // ]
      const error = (() => {
        try {
          readFrame(binaryFrame(header), DEFAULT_LIMITS);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(RpcError);
      expect(error).toMatchObject({ code: "DECODE", message: "Binary frame header is not valid UTF-8." });
    });
  }

  it("reads a header with multi-byte UTF-8 characters through the decoder", () => {
    const raw = readFrame(binaryFrame('["é","日本"]'), DEFAULT_LIMITS)!;
    expect(raw.body).toEqual(["é", "日本"]);
  });
});

/**
 * Bytes: the direct bytes path (value tag 4) for a lone ArrayBuffer, typed array or DataView,
 * resizable buffers, and views that can no longer be read (out of bounds, detached).
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode } from "../../packages/rpc/src/index.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import { pairWith } from "../support/paired-transport.js";
import { binaryFrame } from "../support/binary-frame.js";
import { expectRejectsCode, expectSame, expectThrowsCode, rawServer } from "./helpers.js";

const KiB = 1024;

function bytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
}

/** The header ([tag, payload]) and blobs of an encoded value frame. */
function frameOf(frame: string | Uint8Array): { body: unknown[]; blobs: readonly Uint8Array[] } {
  const raw = readFrame(frame, DEFAULT_LIMITS)!;
  return { body: raw.body as unknown[], blobs: raw.blobs };
}

class Echo {
  received: unknown[] = [];
  echo(value: unknown) {
    this.received.push(value);
    return value;
  }
}

const LONE: [string, () => ArrayBuffer | ArrayBufferView, string][] = [
  ["a 1 KiB Uint8Array", () => bytes(KiB), "Uint8Array"],
  ["a 64 KiB Uint8Array", () => bytes(64 * KiB), "Uint8Array"],
  ["an ArrayBuffer", () => bytes(KiB).buffer as ArrayBuffer, "ArrayBuffer"],
  ["a DataView", () => new DataView(bytes(16).buffer, 4, 8), "DataView"],
  ["a Float64Array", () => new Float64Array([1.5, -0, NaN]), "Float64Array"],
  ["a BigInt64Array", () => new BigInt64Array([-1n, 2n ** 62n]), "BigInt64Array"],
  ["an Int16Array at an offset of a larger buffer", () => new Int16Array(bytes(64).buffer, 8, 4), "Int16Array"],
  ["an empty Uint8Array", () => new Uint8Array(0), "Uint8Array"],
];

describe("the bytes path for a lone bytes value", () => {
  it.each(LONE)("encodes %s as [4, [type, blob]] with exactly its bytes as the one blob", (_name, make, type) => {
    const value = make();
    const { body, blobs } = frameOf(encode(value));
    expect(body).toEqual([4, [type, 0]]);
    expect(blobs).toHaveLength(1);
    const view = ArrayBuffer.isView(value) ? value : new Uint8Array(value);
    expect([...blobs[0]!]).toEqual([...new Uint8Array(view.buffer, view.byteOffset, view.byteLength)]);
  });

  it.each(LONE)("round-trips %s, as a copy that owns its buffer", (_name, make) => {
    const value = make();
    const back = decode(encode(value)) as ArrayBufferView | ArrayBuffer;
    expectSame(back, value);
    if (ArrayBuffer.isView(back)) {
      expect(back.byteOffset).toBe(0);
      expect(back.buffer.byteLength).toBe(back.byteLength);
    }
  });

  it.each([
    ["a 1 KiB Uint8Array", () => bytes(KiB)],
    ["a 64 KiB Uint8Array", () => bytes(64 * KiB)],
    ["a DataView", () => new DataView(bytes(32).buffer, 8, 8)],
  ])("sends %s as the one argument in a [4, …] step and gets it back in a status-4 reply", async (_name, make) => {
    const value = make();
    const target = new Echo();
    const paired = pairWith(target);
    using client = createRpcClient<Echo>("E", "bytes", { transport: paired.factory });
    const result = await client.echo(value as never);
    expectSame(target.received[0], value);
    expectSame(result, value);
    const [connection] = paired.connections;
    const call = readFrame(connection!.sentByClient[0]!, DEFAULT_LIMITS)!.body as [number, unknown[]][];
    expect((call[0]![1][1] as unknown[])[0]).toBe(4);
    const reply = readFrame(connection!.sentByServer[0]!, DEFAULT_LIMITS)!.body as unknown[][];
    expect(reply[0]![1]).toBe(4);
  });

  it.each([1, 7, 16, 1000])("starts the first blob at a multiple of 16 bytes (header padded with spaces), %i-byte value", (n) => {
    for (const value of [bytes(n), { nested: bytes(n), name: "x".repeat(n % 13) }]) {
      const frame = encode(value) as Uint8Array;
      const view = new DataView(frame.buffer, frame.byteOffset);
      const blobs = view.getUint32(4, true);
      const headerLength = view.getUint32(8, true);
      expect((12 + 4 * blobs + headerLength) % 16).toBe(0);
      expectSame(decode(frame), value);
    }
  });

  it("uses the record table when the bytes are not alone (two arguments, or inside an object)", () => {
    expect(frameOf(encode({ b: bytes(8) })).body[0]).toBe(1);
    expect(frameOf(encode([bytes(8)])).body[0]).toBe(1);
  });

  it.each([
    ["an unknown type name", ["Image", 0]],
    ["a type name that is no view (constructor)", ["constructor", 0]],
    ["a blob index past the frame's blobs", ["Uint8Array", 1]],
    ["a negative blob index", ["Uint8Array", -1]],
    ["a payload that is not a pair", ["Uint8Array"]],
    ["a Float64Array whose byte count is not a multiple of 8", ["Float64Array", 0]],
  ])("refuses a bytes value with %s with DECODE", (_name, payload) => {
    const frame = binaryFrame(JSON.stringify([4, payload]), [new Uint8Array(5)], { kind: 0x56 });
    expectThrowsCode(() => decode(frame), "DECODE");
  });

  it("refuses a bytes argument step with a wrong shape as PROTOCOL, running nothing", async () => {
    let ran = 0;
    const server = rawServer(
      new (class {
        take() {
          ran++;
        }
      })(),
    );
    server.sendCalls([[1, ["take", [4, ["Uint8Array", 0], "extra"]]]]);
    expect(await server.outcome(1)).toMatchObject({ kind: "failed", code: "PROTOCOL" });
    expect(ran).toBe(0);
  });
});

/** A resizable buffer of `length` bytes that may grow to `max`. */
function resizable(length: number, max: number): ArrayBuffer {
  const buffer = new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer)(length, {
    maxByteLength: max,
  });
  new Uint8Array(buffer).set(bytes(length));
  return buffer;
}

describe("resizable ArrayBuffers", () => {
  it("keep resizable and maxByteLength (record 21), and can still grow after decoding", () => {
    const back = decode(encode(resizable(16, 1024))) as ArrayBuffer & {
      resizable: boolean;
      maxByteLength: number;
      resize(n: number): void;
    };
    expect(back.resizable).toBe(true);
    expect(back.maxByteLength).toBe(1024);
    expect([...new Uint8Array(back)]).toEqual([...bytes(16)]);
    back.resize(1024);
    expect(back.byteLength).toBe(1024);
  });

  it("keep the whole buffer under a view (not trimmed), with the view's offset", () => {
    const buffer = resizable(16, 64);
    const back = decode(encode(new Uint8Array(buffer, 4, 8))) as Uint8Array;
    expect(back.byteOffset).toBe(4);
    expect((back.buffer as unknown as { maxByteLength: number }).maxByteLength).toBe(64);
    expect([...back]).toEqual([...bytes(16).subarray(4, 12)]);
  });

  it("refuse a maxByteLength above limits.maxMessageBytes with LIMIT: a buffer reserves its maximum", () => {
    const frame = encode(resizable(4, 4096));
    expect(() => decode(frame, { maxMessageBytes: 4096 })).not.toThrow();
    expectThrowsCode(() => decode(frame, { maxMessageBytes: 4095 }), "LIMIT");
  });

  it.each([
    ["below its length", [[21, [0, 2]]]],
    ["not a number", [[21, [0, "big"]]]],
    ["without a blob", [[21, [3, 16]]]],
  ])("refuse a maxByteLength %s with DECODE", (_name, table) => {
    expectThrowsCode(() => decode(binaryFrame(JSON.stringify([1, table]), [new Uint8Array(4)], { kind: 0x56 })), "DECODE");
  });
});

describe("views that can no longer be read", () => {
  function shrunkUnder<T>(make: (buffer: ArrayBuffer) => T): T {
    const buffer = resizable(16, 1024);
    const view = make(buffer);
    (buffer as unknown as { resize(n: number): void }).resize(0);
    return view;
  }

  it.each([
    ["a typed array whose resizable buffer shrank under it", () => shrunkUnder((b) => new Uint8Array(b, 8))],
    ["a DataView whose resizable buffer shrank under it", () => shrunkUnder((b) => new DataView(b, 8))],
    ["a length-tracking typed array past its shrunk buffer", () => shrunkUnder((b) => new Uint8Array(b, 4))],
  ])("refuse %s with ENCODE (alone and inside a value), never an empty array or a raw TypeError", (_name, make) => {
    expect(expectThrowsCode(() => encode(make()), "ENCODE").message).toMatch(/out of bounds/);
    expect(expectThrowsCode(() => encode({ nested: [make()] }), "ENCODE").message).toMatch(/value\.nested\[0\]/);
  });

  it("refuse a detached ArrayBuffer and a view of one with ENCODE", () => {
    const buffer = bytes(8).buffer;
    const view = new Uint8Array(buffer);
    (buffer as unknown as { transfer(): ArrayBuffer }).transfer();
    expectThrowsCode(() => encode(buffer), "ENCODE");
    expectThrowsCode(() => encode(view), "ENCODE");
    expectThrowsCode(() => encode({ view }), "ENCODE");
  });

  it("rejects a call with an out-of-bounds argument with ENCODE, sending nothing", async () => {
    const paired = pairWith(new Echo());
    using client = createRpcClient<Echo>("E", "oob", { transport: paired.factory });
    await expectRejectsCode(client.echo(shrunkUnder((b) => new DataView(b, 8)) as never), "ENCODE");
    for (const connection of paired.connections) expect(connection.sentByClient).toEqual([]);
  });
});

describe("bytes are rebuilt without the page's constructors", () => {
  /** Runs `fn` with ArrayBuffer's and Uint8Array's species replaced, as a hostile page could. */
  function withSpecies<T>(fn: () => T): { result: T; used: number } {
    let used = 0;
    class Steered extends ArrayBuffer {
      constructor(length: number) {
        super(length);
        used++;
      }
    }
    class SteeredView extends Uint8Array {
      constructor(buffer: ArrayBuffer, byteOffset?: number, length?: number) {
        super(buffer, byteOffset, length);
        used++;
      }
    }
    const buffer = Object.getOwnPropertyDescriptor(ArrayBuffer, Symbol.species)!;
    const view = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array), Symbol.species)!;
    Object.defineProperty(ArrayBuffer, Symbol.species, { configurable: true, get: () => Steered });
    Object.defineProperty(Object.getPrototypeOf(Uint8Array), Symbol.species, { configurable: true, get: () => SteeredView });
    try {
      return { result: fn(), used };
    } finally {
      Object.defineProperty(ArrayBuffer, Symbol.species, buffer);
      Object.defineProperty(Object.getPrototypeOf(Uint8Array), Symbol.species, view);
    }
  }

  it.each([
    ["a lone Uint8Array (the bytes path)", () => bytes(64)],
    ["an ArrayBuffer inside a value (the record path)", () => ({ b: bytes(64).buffer })],
  ])("decodes %s as plain ArrayBuffers, never through a replaced Symbol.species", (_name, make) => {
    const value = make();
    const frame = encode(value);
    const { result, used } = withSpecies(() => decode(frame));
    expect(used).toBe(0);
    expectSame(result, value);
    const buffer = result instanceof Uint8Array ? result.buffer : (result as { b: ArrayBuffer }).b;
    expect(Object.getPrototypeOf(buffer)).toBe(ArrayBuffer.prototype);
  });
});

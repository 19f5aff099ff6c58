/**
 * Views and RegExps are read from their internal slots, as structuredClone reads them, never
 * through properties a value can override: an own `byteOffset`, `buffer`, `byteLength` or
 * `length` property, or a subclass getter, must not change the bytes that travel (nor make
 * `encode` throw a raw RangeError), and an overridden flag getter must not change a RegExp's
 * flags. Before the fix the encoder read these through the properties: a view arrived with
 * another buffer's bytes, silently, and a /v RegExp with an own `unicode` getter was sent with
 * flags "uv", which the receiver refused.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectSame } from "./helpers.js";

/** `view` with an own data property `key` (shadowing the prototype's getter). */
function withOwn<T extends object>(view: T, key: string, value: unknown): T {
  return Object.defineProperty(view, key, { value });
}

/** A buffer of `bytes`, for views at an offset into it. */
const bufferOf = (...bytes: number[]): ArrayBuffer => new Uint8Array(bytes).buffer;

/** The view's real buffer, read through the prototype's getter (what structuredClone reads). */
function slotBuffer(view: ArrayBufferView): ArrayBufferLike {
  const proto = view instanceof DataView ? DataView.prototype : Object.getPrototypeOf(Uint8Array.prototype);
  return Object.getOwnPropertyDescriptor(proto, "buffer")!.get!.call(view) as ArrayBufferLike;
}

class ZeroOffset extends Uint8Array {
  override get byteOffset() {
    return 0;
  }
}
class OtherBuffer extends Uint8Array {
  override get buffer(): ArrayBuffer {
    return new ArrayBuffer(4);
  }
}
class NoLength extends Float64Array {
  override get length() {
    return 0;
  }
}
class LongBytes extends Uint16Array {
  override get byteLength() {
    return 1000;
  }
}
class LyingDataView extends DataView<ArrayBuffer> {
  override get byteOffset() {
    return 0;
  }
  override get byteLength() {
    return 8;
  }
}

const TAMPERED_VIEWS: [string, () => ArrayBufferView][] = [
  ["an own byteOffset property", () => withOwn(new Uint8Array(bufferOf(0, 0, 0, 0, 5, 6, 7, 8), 4, 2), "byteOffset", 0)],
  ["an own buffer property", () => withOwn(new Uint8Array([1, 2]), "buffer", new ArrayBuffer(2))],
  ["an own byteLength property larger than the buffer", () => withOwn(new Uint8Array([1, 2, 3, 4]), "byteLength", 100)],
  ["an own byteLength property smaller than the view", () => withOwn(new Uint8Array([1, 2, 3, 4]), "byteLength", 1)],
  ["an own length property", () => withOwn(new Uint8Array([1, 2, 3, 4]), "length", 100)],
  ["a DataView with an own byteOffset property", () => withOwn(new DataView(bufferOf(0, 0, 0, 0, 5, 6, 7, 8), 4, 2), "byteOffset", 0)],
  ["a DataView with an own byteLength property", () => withOwn(new DataView(bufferOf(1, 2, 3, 4)), "byteLength", 100)],
  ["a subclass whose byteOffset getter says 0", () => new ZeroOffset(bufferOf(0, 0, 5, 6), 2, 2)],
  ["a subclass whose buffer getter gives another buffer", () => new OtherBuffer([1, 2, 3, 4])],
  ["a subclass whose length getter says 0", () => new NoLength([1.5, 2.5])],
  ["a subclass whose byteLength getter says 1000", () => new LongBytes([1, 2])],
  ["a DataView subclass whose byteOffset and byteLength getters lie", () => new LyingDataView(bufferOf(0, 0, 5, 6, 0, 0, 0, 0), 2, 2)],
];

class Taker {
  received: unknown[][] = [];
  take(...values: unknown[]) {
    this.received.push(values);
    return values.length;
  }
}

const POSITIONS: [string, (view: ArrayBufferView) => unknown][] = [
  ["alone (the bytes path)", (view) => view],
  ["inside an object (the view's own bytes travel)", (view) => ({ view })],
  ["beside its whole buffer (the buffer travels, the view keeps its offset)", (view) => ({ view, buffer: slotBuffer(view) })],
];

describe("views are read from their internal slots", () => {
  for (const [position, place] of POSITIONS) {
    it.each(TAMPERED_VIEWS)(`a view with %s arrives with the bytes structuredClone gives, ${position}`, (_name, make) => {
      const value = place(make());
      expectSame(decode(encode(value)), structuredClone(value));
    });
  }

  it("a call's arguments holding every such view arrive with the bytes structuredClone gives", async () => {
    const target = new Taker();
    using client = createRpcClient<Taker>("API", "slots", { transport: pairWith(target).factory });
    const views = TAMPERED_VIEWS.map(([, make]) => make());
    expect(await client.take(...views)).toBe(views.length);
    expectSame(target.received[0], structuredClone(views));
  });
});

class NotGlobal extends RegExp {
  override get global() {
    return false;
  }
}
class NoFlags extends RegExp {
  override get flags() {
    return "";
  }
}
class OtherSource extends RegExp {
  override get source() {
    return "b";
  }
}

/** `new RegExp(source, flags)`: the /v flag cannot be written as a literal for this project's TypeScript target. */
const withFlags = (source: string, flags: string): RegExp => new RegExp(source, flags);

const TAMPERED_REGEXPS: [string, () => RegExp, string, string][] = [
  ["a subclass whose global getter says false", () => new NotGlobal("a", "g"), "a", "g"],
  ["a subclass whose flags getter says none", () => new NoFlags("a", "gi"), "a", "gi"],
  ["a subclass whose source getter gives another source", () => new OtherSource("a", "y"), "a", "y"],
  ["a /v RegExp with an own unicode getter", () => Object.defineProperty(withFlags("a", "v"), "unicode", { get: () => true }), "a", "v"],
  ["an own global property", () => Object.defineProperty(/a/, "global", { value: true }), "a", ""],
  ["an own flags property", () => Object.defineProperty(/a/gim, "flags", { value: "" }), "a", "gim"],
  ["an own source property that is not a pattern", () => Object.defineProperty(/a/, "source", { value: "(" }), "a", ""],
];

describe("RegExp source and flags are read from their internal slots", () => {
  it.each(TAMPERED_REGEXPS)("%s arrives with its real source and flags", (_name, make, source, flags) => {
    const regexp = make();
    const cloned = structuredClone(regexp);
    expect([cloned.source, cloned.flags]).toEqual([source, flags]);
    for (const decoded of [decode(encode(regexp)) as RegExp, (decode(encode({ regexp })) as { regexp: RegExp }).regexp]) {
      expect(Object.getPrototypeOf(decoded)).toBe(RegExp.prototype);
      expect([decoded.source, decoded.flags]).toEqual([source, flags]);
    }
  });
});

/**
 * Hand-built input to `decode` at edges hostile.test.ts, hostile-records.test.ts, blobs.test.ts
 * and the fuzz tests do not pin: records that refer to themselves, Date and BigInt payloads just
 * outside what they accept, error records that claim to be an AggregateError or an RpcError,
 * Blob and File fields the platform would normalise, and `decode` given something that is not
 * a frame or limits that are not limits. Each is refused with a typed RpcError, or accepted as
 * structuredClone (or the Blob and File constructors) would build it.
 */
import { describe, expect, it } from "vitest";
import { decode, RpcError } from "../../packages/rpc/src/index.js";
import { binaryFrame } from "../support/binary-frame.js";
import { expectThrowsCode } from "./helpers.js";

/** A text value frame carrying a record table. */
const records = (table: unknown): string => "\u001eV" + JSON.stringify([1, table]);
/** A binary value frame carrying a record table and one 3-byte blob. */
const withBlob = (table: unknown): Uint8Array => binaryFrame(JSON.stringify([1, table]), [new Uint8Array([1, 2, 3])], { kind: 0x56 });

describe("records that refer to themselves", () => {
  it("refuses an object whose key is the object itself with DECODE", () => {
    expectThrowsCode(() => decode(records([[2, [[0, 0]]]])), "DECODE");
  });

  it("refuses an Error whose prop key is the error itself with DECODE", () => {
    expectThrowsCode(() => decode(records([[7, { name: "Error", message: "m", props: [[0, 0]] }]])), "DECODE");
  });

  it("accepts an Error that is its own cause and a Map that is its own key and value", () => {
    const error = decode(records([[7, { name: "Error", message: "m", cause: 0 }]])) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.cause).toBe(error);
    const map = decode(records([[5, [[0, 0]]]])) as Map<unknown, unknown>;
    expect([...map.keys()]).toEqual([map]);
    expect(map.get(map)).toBe(map);
  });
});

describe("Date and BigInt payloads", () => {
  it.each<[string, unknown]>([
    ["the string Infinity", "Infinity"],
    ["a time value past the Date range", 1e300],
    ["a time value just before the Date range", -8.64e15 - 1],
  ])("decodes a Date payload of %s as an Invalid Date", (_name, payload) => {
    const date = decode(records([[3, payload]])) as Date;
    expect(date).toBeInstanceOf(Date);
    expect(date.getTime()).toBeNaN();
  });

  it.each([
    ["in exponent notation", "1e5"],
    ["that is only a minus sign", "-"],
    ["with a plus sign", "+1"],
    ["with a trailing n", "1n"],
    ["in other digits than 0-9", "\u0663"],
  ])("refuses a BigInt %s with DECODE", (_name, payload) => {
    expectThrowsCode(() => decode(records([[8, payload]])), "DECODE");
  });
});

describe("error records that claim a special error", () => {
  it("decodes an AggregateError whose errors prop is not an array, keeping that prop (non-enumerable)", () => {
    const error = decode(
      records([
        [7, { name: "AggregateError", message: "m", props: [[1, 2]] }],
        [0, "errors"],
        [0, 5],
      ]),
    ) as AggregateError;
    expect(error).toBeInstanceOf(AggregateError);
    expect(error.message).toBe("m");
    expect(error.errors).toBe(5);
    expect(Object.keys(error)).toEqual([]);
  });

  it("rebuilds an error named RpcError as an RpcError only when its code is one of dorpc's codes", () => {
    const errorWithCode = (code: string) =>
      decode(
        records([
          [7, { name: "RpcError", message: "m", props: [[1, 2]] }],
          [0, "code"],
          [0, code],
        ]),
      ) as Error & { code?: unknown };
    const known = errorWithCode("LIMIT");
    expect(known).toBeInstanceOf(RpcError);
    expect([known.code, known.message]).toEqual(["LIMIT", "m"]);
    for (const code of ["toString", "constructor", "__proto__", "limit"]) {
      const other = errorWithCode(code);
      expect(RpcError.is(other), code).toBe(false);
      expect(Object.getPrototypeOf(other), code).toBe(Error.prototype);
      expect([other.name, other.code], code).toEqual(["RpcError", code]);
    }
  });
});

describe("Blob and File fields", () => {
  it.each([
    ["control characters and a noncharacter", "\u0000\uffff"],
    ["a lone surrogate", "a\ud800"],
    ["upper case", "Text/HTML"],
  ])("decodes a Blob type with %s as the Blob constructor makes it", (_name, type) => {
    const blob = decode(withBlob([[22, [0, type]]])) as Blob;
    expect(blob).toBeInstanceOf(Blob);
    expect(blob.type).toBe(new Blob([], { type }).type);
    expect(blob.size).toBe(3);
  });

  it("decodes a File name with a lone surrogate as the File constructor makes it (U+FFFD)", () => {
    const file = decode(withBlob([[23, [0, "t", "a\ud800b", 1]]])) as File;
    expect(file).toBeInstanceOf(File);
    expect(file.name).toBe(new File([], "a\ud800b").name);
    expect(file.name).toBe("a\ufffdb");
  });

  it.each([1e300, -1e300])("decodes a File whose lastModified (%d) is far outside the Date range", (lastModified) => {
    const file = decode(withBlob([[23, [0, "t", "n", lastModified]]])) as File;
    expect(file).toBeInstanceOf(File);
    expect([file.name, file.type, file.size]).toEqual(["n", "t", 3]);
    expect(typeof file.lastModified).toBe("number");
  });
});

describe("what decode is given", () => {
  it.each<[string, unknown]>([
    ["null", null],
    ["a number", 5],
    ["a plain object", {}],
    ["a Blob (a socket whose binaryType is not arraybuffer)", new Blob(["\u001eV[0,1]"])],
  ])("refuses %s, which is neither text nor bytes, with DECODE", (_name, data) => {
    expectThrowsCode(() => decode(data as never), "DECODE");
  });

  it.each<[string, object]>([
    ["a negative maxDepth", { maxDepth: -1 }],
    ["a fractional maxNodes", { maxNodes: 1.5 }],
    ["an unknown limit", { maxFrames: 1 }],
  ])("refuses %s with BAD_OPTION, even for a valid frame", (_name, limits) => {
    expect(decode("\u001eV[0,1]")).toBe(1);
    expectThrowsCode(() => decode("\u001eV[0,1]", limits as never), "BAD_OPTION");
  });
});

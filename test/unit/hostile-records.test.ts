/**
 * Hostile tables using the record types added for structured-clone conformance: arrays with
 * named properties (20), resizable buffers (21), Blob (22) and File (23). Each malformed shape is
 * refused before anything is built; hostile.test.ts covers the older types.
 */
import { describe, expect, it } from "vitest";
import { decode } from "../../packages/rpc/src/index.js";
import type { RpcErrorCode } from "../../packages/rpc/src/errors.js";
import { binaryFrame } from "../support/binary-frame.js";
import { expectThrowsCode } from "./helpers.js";

const records = (table: unknown): string => "\u001eV" + JSON.stringify([1, table]);
const withBlob = (table: unknown): Uint8Array => binaryFrame(JSON.stringify([1, table]), [new Uint8Array(8)], { kind: 0x56 });

describe("arrays with named properties (record 20)", () => {
  it("decodes a well-formed one: elements, holes and named properties", () => {
    const back = decode(
      records([
        [20, [3, [0, 1], [[2, 3]]]],
        [0, "a"],
        [0, "name"],
        [0, "x"],
      ]),
    ) as unknown[] & { name?: string };
    expect(back).toHaveLength(3);
    expect(back[0]).toBe("a");
    expect(1 in back).toBe(false);
    expect(back.name).toBe("x");
  });

  it.each<[string, unknown[], RpcErrorCode]>([
    [
      "a length key, which would truncate the array",
      [
        [20, [1, [], [[1, 1]]]],
        [0, "length"],
      ],
      "DECODE",
    ],
    [
      "an index key, which is an element, not a name",
      [
        [20, [1, [], [[1, 1]]]],
        [0, "0"],
      ],
      "DECODE",
    ],
    [
      "an index key past the length, which would grow it",
      [
        [20, [1, [], [[1, 1]]]],
        [0, "4294967294"],
      ],
      "DECODE",
    ],
    [
      "a __proto__ key",
      [
        [20, [1, [], [[1, 1]]]],
        [0, "__proto__"],
      ],
      "DECODE",
    ],
    [
      "a key that is not a string",
      [
        [20, [1, [], [[1, 1]]]],
        [0, 5],
      ],
      "DECODE",
    ],
    [
      "an element index outside the length",
      [
        [20, [1, [1, 1], []]],
        [0, 5],
      ],
      "DECODE",
    ],
    ["an odd element list", [[20, [1, [0], []]]], "DECODE"],
    ["a payload that is not a triple", [[20, [1, []]]], "DECODE"],
    ["a length above maxNodes", [[20, [2_000_000, [], []]]], "LIMIT"],
  ])("refuses one with %s", (_name, table, code) => {
    expectThrowsCode(() => decode(records(table)), code);
  });

  it("counts named properties in the depth walk: a chain through them is refused past maxDepth", () => {
    const n = 10;
    const table: unknown[] = [];
    for (let i = 0; i < n; i++) table.push([20, [0, [], [[n + 1, i + 1]]]]);
    table[n] = [0, 1];
    table.push([0, "next"]);
    expect(() => decode(records(table), { maxDepth: n })).not.toThrow();
    expectThrowsCode(() => decode(records(table), { maxDepth: n - 1 }), "LIMIT");
  });
});

describe("views over resizable buffers (records 18 + 21)", () => {
  it("decodes a view over a resizable buffer record", () => {
    const back = decode(
      withBlob([
        [18, ["Uint8Array", 1, 2, 4]],
        [21, [0, 64]],
      ]),
    ) as Uint8Array;
    expect(back.byteOffset).toBe(2);
    expect((back.buffer as unknown as { resizable: boolean }).resizable).toBe(true);
  });

  it("refuses a view that does not fit the resizable buffer's bytes", () => {
    expectThrowsCode(
      () =>
        decode(
          withBlob([
            [18, ["Uint8Array", 1, 4, 8]],
            [21, [0, 64]],
          ]),
        ),
      "DECODE",
    );
  });
});

describe("an error record's props never carry what the record itself does", () => {
  it("props naming name, message, stack or cause are ignored: the record's own stay", () => {
    const error = decode(
      records([
        [
          7,
          {
            name: "TypeError",
            message: "real",
            props: [
              [1, 2],
              [3, 4],
              [5, 6],
              [7, 8],
            ],
          },
        ],
        [0, "name"],
        [0, 5],
        [0, "message"],
        [0, 6],
        [0, "stack"],
        [0, 7],
        [0, "extra"],
        [0, "kept"],
      ]),
    ) as TypeError & { extra?: unknown };
    expect(error).toBeInstanceOf(TypeError);
    expect({ name: error.name, message: error.message, extra: error.extra }).toEqual({ name: "TypeError", message: "real", extra: "kept" });
    expect(typeof error.stack === "string" || error.stack === undefined).toBe(true);
  });
});

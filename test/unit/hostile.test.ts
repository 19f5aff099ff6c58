import { describe, expect, it } from "vitest";
import { decode, encode } from "../../packages/rpc/src/index.js";
import type { RpcError, RpcErrorCode } from "../../packages/rpc/src/errors.js";
import { DEFAULT_LIMITS, type RpcLimits } from "../../packages/rpc/src/limits.js";
import { callFrame, expectRpcError, expectThrowsCode, rawServer, thrownBy } from "./helpers.js";
import { binaryFrame as buildBinaryFrame, type BinaryLayout } from "../support/binary-frame.js";

// ---------------------------------------------------------------------------------------------
// Frame builders
// ---------------------------------------------------------------------------------------------

const VALUE = 0x56; // "V"

/** A text value frame carrying a record table. */
const records = (table: unknown): string => "\u001eV" + JSON.stringify([1, table]);
/** A text value frame carrying JSON (the fast path), given as raw JSON text. */
const jsonText = (text: string): string => `\u001eV[0,${text}]`;

/** A binary value frame (kind "V") as frame.ts lays it out, with optional lies in its length fields. */
const binaryFrame = (header: string | Uint8Array, blobs: Uint8Array[], layout: BinaryLayout = {}): Uint8Array =>
  buildBinaryFrame(header, blobs, { kind: VALUE, ...layout });

/** A binary value frame whose records refer to `blobs`. */
const recordsWithBlobs = (table: unknown, blobs: Uint8Array[]): Uint8Array => binaryFrame(JSON.stringify([1, table]), blobs);

/** Decoding `data` throws an RpcError with exactly `code`. */
function expectDecodeError(data: string | Uint8Array, code: RpcErrorCode, limits?: Partial<RpcLimits>): RpcError {
  return expectThrowsCode(() => decode(data, limits), code);
}

/** Object.prototype's own names and a probe, to prove nothing was polluted. */
function prototypeSnapshot(): string {
  return Object.getOwnPropertyNames(Object.prototype).sort().join(",") + `|${String(({} as Record<string, unknown>).polluted)}`;
}

// ---------------------------------------------------------------------------------------------
// Record types
// ---------------------------------------------------------------------------------------------

describe("unknown record types", () => {
  it.each<[string, unknown[]]>([
    ["99", [99, 1]],
    ["9 (ungap's reserved SYMBOL)", [9, "x"]],
    ["-2", [-2]],
    ["1.5", [1.5, []]],
    ['"0" (a string, not the number)', ["0", 1]],
    ["null", [null, 1]],
    ["an array", [[], 1]],
    ["an object", [{}, 1]],
    ['"Function"', ["Function", "return 1"]],
    ['"WebSocket"', ["WebSocket", "ws://evil"]],
    ['"EventSource"', ["EventSource", "http://evil"]],
    ['"eval"', ["eval", "1"]],
    ['"Object"', ["Object", {}]],
    ['"Symbol"', ["Symbol", "x"]],
    ['"Promise"', ["Promise", 1]],
    ['"Uint8Array" with a giant length (ungap layout)', ["Uint8Array", 67108864]],
    ['"ArrayBuffer" with a giant length', ["ArrayBuffer", 67108864]],
    ['"__proto__"', ["__proto__", {}]],
    ['"constructor"', ["constructor", 1]],
  ])("refuses record type %s with DECODE", (_name, record) => {
    expectDecodeError(records([record]), "DECODE");
  });

  it("refuses a giant typed array without allocating it", () => {
    const before = process.memoryUsage().arrayBuffers;
    for (const table of [
      [["Uint8Array", 67108864]],
      [["Float64Array", [67108864]]],
      [
        [18, ["Uint8Array", 1, 0, 67108864]],
        [17, 0],
      ],
      [
        [18, ["Float64Array", 1, 0, 2 ** 31]],
        [17, 0],
      ],
    ]) {
      const data = table[0]![0] === 18 ? recordsWithBlobs(table, [new Uint8Array(8)]) : records(table);
      expectDecodeError(data, "DECODE");
    }
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(grown).toBeLessThan(32 * 1024 * 1024);
  });

  it("refuses a sparse array longer than maxNodes with LIMIT", () => {
    expectDecodeError(records([[19, [2 ** 32 - 1]]]), "LIMIT");
    expectDecodeError(records([[19, [11]]]), "LIMIT", { maxNodes: 10 });
  });

  it.each<[string, unknown[]]>([
    ["an undefined record with a payload", [[-1, 1]]],
    ["a -0 record with a payload", [["-0", 0]]],
    ["a primitive record holding an object", [[0, { a: 1 }]]],
    ["a primitive record holding an array", [[0, [1]]]],
    ["an empty record", [[]]],
    ["a record with three elements", [[0, 1, 2]]],
    ["a record that is not an array", [{ 0: 0, 1: 1 }]],
    ["a Date with an object payload", [[3, {}]]],
    ["a Date with a long string", [[3, "x".repeat(65)]]],
    ["a NaN/Infinity record with another string", [[16, "1"]]],
    ["a boxed Number holding a string", [["Number", "1"]]],
    ["a boxed String holding a number", [["String", 1]]],
    ["a boxed Boolean holding a number", [["Boolean", 1]]],
    ["a BigInt that is not an integer", [[8, "1.5"]]],
    ["a BigInt in hex", [[8, "0x10"]]],
    ["an empty BigInt", [[8, ""]]],
    ["a BigInt with spaces", [[8, " 1"]]],
    ["a BigInt that is a number", [[8, 1]]],
    ["an Error without a payload", [[7]]],
    ["an Error with a numeric name", [[7, { name: 1, message: "m" }]]],
    ["an Error with a numeric message", [[7, { name: "Error", message: 1 }]]],
    ["an Error with a long name", [[7, { name: "E".repeat(257), message: "" }]]],
    ["an Error with a non-string stack", [[7, { name: "Error", message: "", stack: 1 }]]],
    ["an Error whose props are not pairs", [[7, { name: "Error", message: "", props: [1] }]]],
    ["an Array whose payload is not an array", [[1, { 0: 0 }]]],
    [
      "an Object whose entries are not pairs",
      [
        [2, [[0]]],
        [0, "k"],
      ],
    ],
    ["a Map whose payload is an object", [[5, {}]]],
    ["a sparse array with an even payload", [[19, [3, 0]]]],
    ["a sparse array with a negative length", [[19, [-1]]]],
    ["a view with a short payload", [[18, ["Uint8Array", 1, 0]]]],
    ["an empty table", []],
  ])("refuses %s with DECODE", (_name, table) => {
    expectDecodeError(records(table), "DECODE");
  });

  it.each<[string, unknown]>([
    ["a table that is an object", { 0: [0, 1] }],
    ["a table that is a string", "[[0,1]]"],
    ["a table that is null", null],
  ])("refuses %s with DECODE", (_name, table) => {
    expectDecodeError(records(table), "DECODE");
  });

  it("rebuilds an Error record naming a non-error global as a plain Error", () => {
    for (const name of ["Function", "WebSocket", "eval", "constructor", "__proto__", "toString"]) {
      const decoded = decode(records([[7, { name, message: "m" }]])) as Error;
      expect(Object.getPrototypeOf(decoded), name).toBe(Error.prototype);
      expect(decoded.name).toBe(name);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Indexes
// ---------------------------------------------------------------------------------------------

describe("references between records", () => {
  const BAD_INDEXES: [string, unknown][] = [
    ["past the end", 9],
    ["negative", -1],
    ["fractional", 1.5],
    ["a string", "1"],
    ["null (what JSON makes of NaN)", null],
    ["a huge number", 1e300],
  ];

  const HOLDERS: [string, (bad: unknown) => unknown[]][] = [
    [
      "an array element",
      (bad) => [
        [1, [bad]],
        [0, 1],
      ],
    ],
    [
      "a set entry",
      (bad) => [
        [6, [bad]],
        [0, 1],
      ],
    ],
    [
      "an object key",
      (bad) => [
        [2, [[bad, 1]]],
        [0, "k"],
      ],
    ],
    [
      "an object value",
      (bad) => [
        [2, [[1, bad]]],
        [0, "k"],
      ],
    ],
    [
      "a map key",
      (bad) => [
        [5, [[bad, 1]]],
        [0, "k"],
      ],
    ],
    [
      "a map value",
      (bad) => [
        [5, [[1, bad]]],
        [0, "k"],
      ],
    ],
    ["an error cause", (bad) => [[7, { name: "Error", message: "", cause: bad }]]],
    [
      "an error prop",
      (bad) => [
        [7, { name: "Error", message: "", props: [[1, bad]] }],
        [0, "k"],
      ],
    ],
    [
      "a sparse array element",
      (bad) => [
        [19, [2, 0, bad]],
        [0, 1],
      ],
    ],
    [
      "a sparse array index",
      (bad) => [
        [19, [2, bad, 1]],
        [0, 1],
      ],
    ],
  ];

  for (const [holder, make] of HOLDERS) {
    it.each(BAD_INDEXES)(`refuses ${holder} index that is %s with DECODE`, (_name, bad) => {
      expectDecodeError(records(make(bad)), "DECODE");
    });
  }

  it("refuses a sparse array index at or past its length with DECODE", () => {
    expectDecodeError(
      records([
        [19, [2, 2, 1]],
        [0, 1],
      ]),
      "DECODE",
    );
  });

  it.each<[string, unknown[]]>([
    ["a number", [0, 5]],
    ["a boolean", [0, true]],
    ["null", [0, null]],
    ["undefined", [-1]],
    ["an object", [2, []]],
    ["a boxed string", ["String", "k"]],
    ["a BigInt", [8, "1"]],
  ])("refuses an object key that is %s with DECODE", (_name, keyRecord) => {
    expectDecodeError(records([[2, [[1, 1]]], keyRecord]), "DECODE");
  });

  it("accepts a record that refers to itself (a cycle) and an index shared by many holders", () => {
    const decoded = decode(
      records([
        [1, [0, 1, 1]],
        [0, "x"],
      ]),
    ) as unknown[];
    expect(decoded[0]).toBe(decoded);
    expect(decoded.slice(1)).toEqual(["x", "x"]);
  });
});

// ---------------------------------------------------------------------------------------------
// __proto__ and prototype pollution
// ---------------------------------------------------------------------------------------------

describe("__proto__ keys", () => {
  const CASES: [string, string][] = [
    ["a JSON value", jsonText('{"__proto__":{"polluted":true}}')],
    ["a JSON value nested in an array", jsonText('[1,[{"a":{"__proto__":{"polluted":true}}}]]')],
    ["a JSON value with an escaped key", jsonText('{"\\u005f_proto__":{"polluted":true}}')],
    [
      "an object record",
      records([
        [2, [[1, 2]]],
        [0, "__proto__"],
        [2, [[3, 4]]],
        [0, "polluted"],
        [0, true],
      ]),
    ],
    [
      "an object record nested in a Map",
      records([
        [5, [[1, 2]]],
        [0, "k"],
        [2, [[3, 1]]],
        [0, "__proto__"],
      ]),
    ],
    [
      "an error record's props",
      records([
        [7, { name: "Error", message: "", props: [[1, 2]] }],
        [0, "__proto__"],
        [2, [[3, 4]]],
        [0, "polluted"],
        [0, true],
      ]),
    ],
  ];

  it.each(CASES)("refuses a __proto__ key in %s with DECODE, leaving Object.prototype untouched", (_name, data) => {
    const before = prototypeSnapshot();
    expectDecodeError(data, "DECODE");
    expect(prototypeSnapshot()).toBe(before);
  });

  it("accepts the string __proto__ as a Map key and as a value (no object property is made)", () => {
    const map = decode(
      records([
        [5, [[1, 1]]],
        [0, "__proto__"],
      ]),
    ) as Map<string, string>;
    expect(map.get("__proto__")).toBe("__proto__");
    expect(decode(jsonText('["__proto__",{"k":"__proto__"}]'))).toEqual(["__proto__", { k: "__proto__" }]);
  });

  it("never changes a prototype through Object.assign of anything decoded", () => {
    const before = prototypeSnapshot();
    const samples = [
      jsonText('{"constructor":{"prototype":{"polluted":true}},"prototype":{"polluted":true}}'),
      records([
        [
          2,
          [
            [1, 2],
            [3, 4],
          ],
        ],
        [0, "constructor"],
        [2, [[5, 6]]],
        [0, "prototype"],
        [2, [[7, 8]]],
        [0, "prototype"],
        [2, [[7, 8]]],
        [0, "polluted"],
        [0, true],
      ]),
      encode({ nested: { toString: "x", valueOf: "y", hasOwnProperty: "z" } }),
      encode(new Map([["__proto__", { polluted: true }]])),
      encode(Object.assign(new Error("e"), { constructor: "c" })),
    ];
    for (const data of samples) {
      const decoded = decode(data);
      const copy = Object.assign({}, decoded);
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
      if (typeof decoded === "object" && decoded !== null && !(decoded instanceof Error) && !(decoded instanceof Map)) {
        expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
      }
      const spread = { ...(decoded as object) };
      expect(Object.getPrototypeOf(spread)).toBe(Object.prototype);
    }
    expect(prototypeSnapshot()).toBe(before);
  });

  it("refuses a __proto__ key in call arguments with DECODE and does not run the method", async () => {
    let ran = 0;
    const server = rawServer(
      new (class {
        take(_value: unknown) {
          ran++;
        }
      })(),
    );
    server.dispatch('\u001eC[[1,["take",[0,{"__proto__":{"polluted":true}}]]]]');
    server.sendCalls([
      [
        2,
        [
          "take",
          [
            1,
            [
              [1, [1]],
              [2, [[2, 3]]],
              [0, "__proto__"],
              [0, 1],
            ],
          ],
        ],
      ],
    ]);
    const first = await server.outcome(1);
    const second = await server.outcome(2);
    expect(first).toMatchObject({ kind: "failed", code: "DECODE" });
    expect(second).toMatchObject({ kind: "failed", code: "DECODE" });
    expect(ran).toBe(0);
    expect(server.closes).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Depth, size and count limits
// ---------------------------------------------------------------------------------------------

/** `n` nested arrays, the innermost holding the number 1, as JSON text. */
const nestedJson = (n: number): string => "[".repeat(n) + "1" + "]".repeat(n);

/** `n` nested arrays, the innermost holding the number 1, as a record table. */
function nestedRecords(n: number): unknown[] {
  const table: unknown[] = [];
  for (let i = 0; i < n; i++) table.push([1, [i + 1]]);
  table.push([0, 1]);
  return table;
}

describe("depth", () => {
  it("accepts nesting up to maxDepth and refuses one more with LIMIT (JSON path)", () => {
    expect(() => decode(jsonText(nestedJson(8)), { maxDepth: 8 })).not.toThrow();
    expectDecodeError(jsonText(nestedJson(9)), "LIMIT", { maxDepth: 8 });
  });

  it("accepts nesting up to maxDepth and refuses one more with LIMIT (records path)", () => {
    expect(() => decode(records(nestedRecords(8)), { maxDepth: 8 })).not.toThrow();
    expectDecodeError(records(nestedRecords(9)), "LIMIT", { maxDepth: 8 });
  });

  // The root lists the chain's records deepest first, so a walk that only counts how deep it
  // first meets each record sees depth 2 everywhere; the chain itself is n + 1 levels deep, and
  // anything that walks the result without tracking identity recurses that deep.
  function shallowlyListedChain(n: number): unknown[] {
    const chain = nestedRecords(n).slice(0, n); // records 0..n-1; record n is the leaf
    const table: unknown[] = [[1, Array.from({ length: n }, (_, i) => n - i)]];
    for (const [type, [child]] of chain as [number, number[]][]) table.push([type, [child! + 1]]);
    table.push([0, 1]);
    return table;
  }

  it("counts a shared record at its deepest path, not where the walk first met it (records path)", () => {
    // Chain of n nested arrays under a root: n + 1 levels.
    expect(() => decode(records(shallowlyListedChain(7)), { maxDepth: 8 })).not.toThrow();
    expectDecodeError(records(shallowlyListedChain(8)), "LIMIT", { maxDepth: 8 });
    expectDecodeError(records(shallowlyListedChain(5_000)), "LIMIT");
  });

  it("refuses nesting past the default maxDepth with LIMIT (both paths)", () => {
    const past = DEFAULT_LIMITS.maxDepth + 1;
    expect(() => decode(jsonText(nestedJson(past - 1)))).not.toThrow();
    expect(() => decode(records(nestedRecords(past - 1)))).not.toThrow();
    expectDecodeError(jsonText(nestedJson(past)), "LIMIT");
    expectDecodeError(records(nestedRecords(past)), "LIMIT");
  });

  it("refuses 100,000 nested JSON arrays without overflowing the stack", () => {
    const error = thrownBy(() => decode(jsonText(nestedJson(100_000))));
    expectRpcError(error, "LIMIT");
  });

  it("refuses a chain of 100,000 nested records with LIMIT, without overflowing the stack", () => {
    expectDecodeError(records(nestedRecords(100_000)), "LIMIT");
  });

  it("refuses a deep chain reached through a shortcut (the root lists every link) with LIMIT", () => {
    // Every link is a direct child of the root, so a breadth-first depth looks like 2, but the
    // value is as deep as the chain for anything that walks it.
    const n = DEFAULT_LIMITS.maxDepth + 1;
    const table: unknown[] = [[1, Array.from({ length: n }, (_, i) => i + 1)]];
    for (let k = 1; k <= n; k++) table.push([1, k < n ? [k + 1] : []]);
    expectDecodeError(records(table), "LIMIT");
  });

  it("refuses the same shortcut with 100,000 links with LIMIT, not a stack overflow", () => {
    const n = 100_000;
    const table: unknown[] = [[1, Array.from({ length: n }, (_, i) => i + 1)]];
    for (let k = 1; k <= n; k++) table.push([1, k < n ? [k + 1] : []]);
    expectDecodeError(records(table), "LIMIT");
  });

  it("refuses a shortcut chain through Map values and error causes with LIMIT", () => {
    const n = 100;
    const table: unknown[] = [[6, Array.from({ length: n }, (_, i) => i + 1)]];
    for (let k = 1; k <= n; k++) {
      table.push(k % 2 ? [5, k < n ? [[k + 1, k + 1]] : []] : [7, { name: "Error", message: "", ...(k < n ? { cause: k + 1 } : {}) }]);
    }
    expectDecodeError(records(table), "LIMIT");
  });
});

describe("node counts", () => {
  it("refuses a JSON value with more than maxNodes nodes with LIMIT", () => {
    expect(() => decode(jsonText(JSON.stringify(Array.from({ length: 8 }, () => 1))), { maxNodes: 10 })).not.toThrow();
    expectDecodeError(jsonText(JSON.stringify(Array.from({ length: 20 }, () => 1))), "LIMIT", { maxNodes: 10 });
    expectDecodeError(jsonText(JSON.stringify(Array.from({ length: 20 }, () => ({})))), "LIMIT", { maxNodes: 10 });
  });

  it("refuses a record table with more than maxNodes records with LIMIT", () => {
    const table = [[1, Array.from({ length: 20 }, (_, i) => i + 1)], ...Array.from({ length: 20 }, (_, i) => [0, i])];
    expectDecodeError(records(table), "LIMIT", { maxNodes: 10 });
  });

  it("refuses nested aliases that expand exponentially (billion laughs) with LIMIT", () => {
    // Record k is [k+1, k+1]: 60 records, 2^60 nodes when walked as a tree.
    const n = 60;
    const table: unknown[] = [];
    for (let k = 0; k < n; k++) table.push([1, [k + 1, k + 1]]);
    table.push([0, "lol"]);
    expectDecodeError(records(table), "LIMIT");
  });

  it("counts the nodes of every argument of a call against one budget", async () => {
    let ran = 0;
    const server = rawServer(
      new (class {
        take(..._values: unknown[]) {
          ran++;
        }
      })(),
      { limits: { maxNodes: 10 } },
    );
    const six = [1, 2, 3, 4, 5, 6];
    server.sendCalls([[1, ["take", [0, six, six]]]]);
    expect(await server.outcome(1)).toMatchObject({ kind: "failed", code: "LIMIT" });
    expect(ran).toBe(0);
  });
});

describe("BigInt and RegExp limits", () => {
  it("accepts a BigInt of exactly maxBigIntDigits digits and refuses one more with LIMIT", () => {
    expect(decode(records([[8, "-" + "9".repeat(100)]]), { maxBigIntDigits: 100 })).toBe(-(10n ** 100n - 1n));
    expectDecodeError(records([[8, "1".repeat(101)]]), "LIMIT", { maxBigIntDigits: 100 });
    expectDecodeError(records([["BigInt", "1".repeat(101)]]), "LIMIT", { maxBigIntDigits: 100 });
    expectDecodeError(records([[8, "1".repeat(10_001)]]), "LIMIT");
  });

  it.each([
    ["an unbalanced source", "(", ""],
    ["a dangling escape", "\\", ""],
    ["a bad quantifier", "*", ""],
    ["a bad unicode escape with u", "\\u{110000}", "u"],
  ])("refuses a RegExp with %s with DECODE", (_name, source, flags) => {
    expectDecodeError(records([[4, { source, flags }]]), "DECODE");
  });

  it.each([
    ["an unknown flag", "x"],
    ["a repeated flag", "gg"],
    ["u and v together", "uv"],
    ["a flag in upper case", "G"],
    ["a non-string", 1],
  ])("refuses RegExp flags that are %s with DECODE", (_name, flags) => {
    expectDecodeError(records([[4, { source: "a", flags }]]), "DECODE");
  });

  it("refuses a RegExp without a string source with DECODE", () => {
    expectDecodeError(records([[4, { source: 1, flags: "" }]]), "DECODE");
    expectDecodeError(records([[4, "a"]]), "DECODE");
  });

  it("refuses a RegExp source over maxRegExpSource with LIMIT", () => {
    expect(decode(records([[4, { source: "a".repeat(50), flags: "" }]]), { maxRegExpSource: 50 })).toBeInstanceOf(RegExp);
    expectDecodeError(records([[4, { source: "a".repeat(51), flags: "" }]]), "LIMIT", { maxRegExpSource: 50 });
    expectDecodeError(records([[4, { source: "a".repeat(10_001), flags: "" }]]), "LIMIT");
  });
});

// ---------------------------------------------------------------------------------------------
// Bytes: views and blobs
// ---------------------------------------------------------------------------------------------

describe("views and blobs", () => {
  const blob16 = () => [new Uint8Array(16)];

  it("accepts a well-formed view (control)", () => {
    const view = decode(
      recordsWithBlobs(
        [
          [18, ["Float64Array", 1, 8, 1]],
          [17, 0],
        ],
        blob16(),
      ),
    ) as Float64Array;
    expect(view).toBeInstanceOf(Float64Array);
    expect(view.byteOffset).toBe(8);
  });

  it.each<[string, unknown[]]>([
    [
      "a Float64Array at a misaligned offset (3)",
      [
        [18, ["Float64Array", 1, 3, 1]],
        [17, 0],
      ],
    ],
    [
      "an Int32Array at a misaligned offset (2)",
      [
        [18, ["Int32Array", 1, 2, 1]],
        [17, 0],
      ],
    ],
    [
      "a view past the end of its buffer",
      [
        [18, ["Uint8Array", 1, 8, 9]],
        [17, 0],
      ],
    ],
    [
      "a view starting past the end",
      [
        [18, ["Uint8Array", 1, 17, 0]],
        [17, 0],
      ],
    ],
    [
      "a Float64Array longer than its buffer",
      [
        [18, ["Float64Array", 1, 0, 3]],
        [17, 0],
      ],
    ],
    [
      "a view over a primitive record",
      [
        [18, ["Uint8Array", 1, 0, 1]],
        [0, 5],
      ],
    ],
    [
      "a view over an array record",
      [
        [18, ["Uint8Array", 1, 0, 1]],
        [1, []],
      ],
    ],
    [
      "a view over another view",
      [
        [18, ["Uint8Array", 1, 0, 1]],
        [18, ["Uint8Array", 2, 0, 1]],
        [17, 0],
      ],
    ],
    ["a view over itself", [[18, ["Uint8Array", 0, 0, 1]]]],
    [
      "a view of an unknown type",
      [
        [18, ["Float128Array", 1, 0, 1]],
        [17, 0],
      ],
    ],
    [
      "a view type named toString",
      [
        [18, ["toString", 1, 0, 1]],
        [17, 0],
      ],
    ],
    [
      "a view type named __proto__",
      [
        [18, ["__proto__", 1, 0, 1]],
        [17, 0],
      ],
    ],
    [
      "a view type named SharedArrayBuffer",
      [
        [18, ["SharedArrayBuffer", 1, 0, 1]],
        [17, 0],
      ],
    ],
    [
      "a view with a negative offset",
      [
        [18, ["Uint8Array", 1, -1, 1]],
        [17, 0],
      ],
    ],
    [
      "a view with a fractional length",
      [
        [18, ["Uint8Array", 1, 0, 1.5]],
        [17, 0],
      ],
    ],
    ["an ArrayBuffer with a blob index out of range", [[17, 1]]],
    ["an ArrayBuffer with a negative blob index", [[17, -1]]],
    ["an ArrayBuffer with a string blob index", [[17, "0"]]],
  ])("refuses %s with DECODE", (_name, table) => {
    expectDecodeError(recordsWithBlobs(table, blob16()), "DECODE");
  });

  it("refuses an ArrayBuffer record in a text frame (no blobs) with DECODE", () => {
    expectDecodeError(records([[17, 0]]), "DECODE");
  });

  it("copies blob bytes: the decoded buffer does not alias the frame", () => {
    const frame = recordsWithBlobs([[17, 0]], [new Uint8Array([1, 2, 3])]);
    const buffer = decode(frame) as ArrayBuffer;
    frame[frame.length - 1] = 99;
    expect([...new Uint8Array(buffer)]).toEqual([1, 2, 3]);
    expect(buffer.byteLength).toBe(3);
  });
});

// ---------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------

describe("binary frame layout", () => {
  const header = JSON.stringify([1, [[17, 0]]]);
  const blob = new Uint8Array([1, 2, 3, 4]);

  it("accepts a well-formed binary frame (control)", () => {
    expect(new Uint8Array(decode(binaryFrame(header, [blob])) as ArrayBuffer)).toEqual(blob);
  });

  it.each<[string, () => Uint8Array]>([
    ["blob lengths that add up to more than the frame", () => binaryFrame(header, [blob], { lengths: [5] })],
    ["blob lengths that add up to less than the frame", () => binaryFrame(header, [blob], { lengths: [3] })],
    ["a header length past the end", () => binaryFrame(header, [blob], { headerLength: 10_000 })],
    ["a header length that eats the blob", () => binaryFrame(header, [blob], { headerLength: header.length + 4 })],
    ["a blob count larger than the length table", () => binaryFrame(header, [blob], { blobCount: 3 })],
    ["a giant blob length", () => binaryFrame(header, [blob], { lengths: [0xffffffff] })],
    ["a frame truncated to its first 11 bytes", () => binaryFrame(header, [blob]).slice(0, 11)],
    ["a frame of just the mark and kind", () => new Uint8Array([0x1e, VALUE])],
    ["a frame cut in the middle of its blob", () => binaryFrame(header, [blob]).slice(0, -2)],
    ["a header that is not UTF-8", () => binaryFrame(new Uint8Array([0x5b, 0x30, 0x2c, 0xff, 0xfe, 0x5d]), [])],
    ["a header that is a lone UTF-8 continuation byte", () => binaryFrame(new Uint8Array([0x80]), [])],
    ["a header that is not JSON", () => binaryFrame("[0,", [])],
    ["a binary frame of another kind", () => binaryFrame(JSON.stringify([0, 1]), [], { kind: 0x43 })],
  ])("refuses %s with DECODE", (_name, make) => {
    expectDecodeError(make(), "DECODE");
  });

  it("refuses more blobs than maxBlobs with LIMIT", () => {
    const blobs = Array.from({ length: 3 }, () => new Uint8Array(1));
    expectDecodeError(binaryFrame(header, blobs), "LIMIT", { maxBlobs: 2 });
  });

  it("refuses a huge declared blob count with LIMIT before reading the length table", () => {
    expectDecodeError(binaryFrame(header, [], { blobCount: 0xffffffff }), "LIMIT");
  });

  it("accepts a frame given as an ArrayBuffer or as a view at an offset", () => {
    const frame = binaryFrame(header, [blob]);
    expect(decode(frame.slice().buffer)).toBeInstanceOf(ArrayBuffer);
    const padded = new Uint8Array(frame.length + 5);
    padded.set(frame, 5);
    expect(new Uint8Array(decode(padded.subarray(5)) as ArrayBuffer)).toEqual(blob);
  });
});

describe("text frames", () => {
  it.each<[string, string]>([
    ["bad JSON", "\u001eV[0,"],
    ["an empty body", "\u001eV"],
    ["trailing garbage", "\u001eV[0,1]x"],
    ["a body that is not [tag, payload]", "\u001eV[0]"],
    ["a body with three elements", "\u001eV[0,1,2]"],
    ["a body that is an object", '\u001eV{"0":0,"1":1}'],
    ["an unknown value tag", "\u001eV[2,1]"],
    ["a string value tag", '\u001eV["0",1]'],
    ["a call frame", '\u001eC[[1,["x"]]]'],
    ["a reply frame", "\u001eR[[1]]"],
    ["just the mark", "\u001e"],
  ])("refuses %s with DECODE", (_name, data) => {
    expectDecodeError(data, "DECODE");
  });

  it("refuses a frame over maxMessageBytes with LIMIT before parsing it", () => {
    const tooBigAndBroken = "\u001eV[0," + "x".repeat(200);
    expectDecodeError(tooBigAndBroken, "LIMIT", { maxMessageBytes: 100 });
    const binary = binaryFrame("not json at all", [new Uint8Array(200)]);
    expectDecodeError(binary, "LIMIT", { maxMessageBytes: 100 });
  });

  it("accepts a frame of exactly maxMessageBytes", () => {
    const data = jsonText(JSON.stringify("x".repeat(90)));
    expect(() => decode(data, { maxMessageBytes: data.length })).not.toThrow();
    expectDecodeError(data, "LIMIT", { maxMessageBytes: data.length - 1 });
  });

  it.each<[string, string | Uint8Array]>([
    ["plain text", "hello"],
    ["JSON", '{"a":1}'],
    ["an empty string", ""],
    ["bytes without the mark", new Uint8Array([1, 2, 3])],
    ["empty bytes", new Uint8Array(0)],
  ])("refuses a non-dorpc message (%s) in decode with DECODE, while dispatchFrame returns false", (_name, data) => {
    expectDecodeError(data, "DECODE");
    const server = rawServer({});
    expect(server.dispatch(data)).toBe(false);
    expect(server.closes).toEqual([]);
    expect(server.sent).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Hostile frames into the dispatcher
// ---------------------------------------------------------------------------------------------

describe("hostile frames into the dispatcher", () => {
  class Victim {
    ran = 0;
    take(..._values: unknown[]) {
      this.ran++;
      return "took";
    }
  }

  it.each<[string, unknown]>([
    [
      "an unknown record type",
      [
        1,
        [
          [1, [1]],
          ["Function", "return process"],
        ],
      ],
    ],
    ["an out-of-range index", [1, [[1, [5]]]]],
    [
      "a misaligned view",
      [
        1,
        [
          [1, [1]],
          [18, ["Float64Array", 2, 3, 1]],
          [17, 0],
        ],
      ],
    ],
    [
      "an invalid RegExp",
      [
        1,
        [
          [1, [1]],
          [4, { source: "(", flags: "" }],
        ],
      ],
    ],
    ["arguments that are not an array", [1, [[2, []]]]],
  ])("answers a call whose arguments hold %s with an error reply, runs nothing, and keeps the connection", async (_name, step) => {
    const victim = new Victim();
    const server = rawServer(victim);
    server.sendCalls([
      [1, ["take", step]],
      [2, ["take", [0, "fine"]]],
    ]);
    const bad = await server.outcome(1);
    expect(bad.kind).toBe("failed");
    expect(["DECODE", "PROTOCOL"]).toContain((bad as { code: string }).code);
    expect(await server.outcome(2)).toEqual({ kind: "ok", value: "took" });
    expect(victim.ran).toBe(1);
    expect(server.closes).toEqual([]);
  });

  it("answers arguments nested past maxDepth with LIMIT", async () => {
    const victim = new Victim();
    const server = rawServer(victim, { limits: { maxDepth: 4 } });
    server.dispatch(`\u001eC[[1,["take",[0,${nestedJson(10)}]]]]`);
    expect(await server.outcome(1)).toMatchObject({ kind: "failed", code: "LIMIT" });
    expect(victim.ran).toBe(0);
  });

  it.each<[string, string | Uint8Array, number]>([
    ["bad JSON", "\u001eC[[1,", 1008],
    ["a non-UTF-8 binary header", binaryFrame(new Uint8Array([0xff]), [], { kind: 0x43 }), 1008],
    ["a truncated binary frame", new Uint8Array([0x1e, 0x43, 0, 0]), 1008],
    ["a binary frame whose lengths do not add up", binaryFrame("[]", [new Uint8Array(4)], { kind: 0x43, lengths: [9] }), 1008],
  ])("closes the connection for %s with %d and runs nothing", (_name, data, code) => {
    const victim = new Victim();
    const server = rawServer(victim);
    expect(server.dispatch(data)).toBe(true);
    expect(server.closes.map((c) => c[0])).toEqual([code]);
    expect(victim.ran).toBe(0);
  });

  it("closes with 1009 for a frame over maxMessageBytes without parsing it", () => {
    const server = rawServer(new Victim(), { limits: { maxMessageBytes: 64 } });
    expect(server.dispatch("\u001eC" + "[".repeat(100))).toBe(true);
    expect(server.closes.map((c) => c[0])).toEqual([1009]);
  });

  it("leaves Object.prototype untouched after a barrage of hostile frames", () => {
    const before = prototypeSnapshot();
    const server = rawServer(new Victim());
    server.dispatch(callFrame([[1, ["__proto__", "polluted"]]]));
    server.dispatch(callFrame([[2, ["constructor", "prototype", "polluted"]]]));
    server.dispatch('\u001eC[[3,["take",[0,{"__proto__":{"polluted":true}}]]]]');
    server.dispatch(
      callFrame([
        [
          4,
          [
            "take",
            [
              1,
              [
                [1, [1]],
                [2, [[2, 3]]],
                [0, "__proto__"],
                [2, []],
              ],
            ],
          ],
        ],
      ]),
    );
    expect(prototypeSnapshot()).toBe(before);
  });
});

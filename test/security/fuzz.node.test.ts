/**
 * Fuzzing the receive side in Node (issue #5): random and mutated frames fed to `decode`
 * (value.ts) and to `dispatchFrame` (dispatcher.ts, over a fake channel), plus a few exact
 * decoder/dispatcher checks that pin the protections one by one.
 *
 * Starting points are valid: `encode` of random structured-clone values, and call frames built
 * the way the client builds them (names, `[0, ...json]` / `[1, records]` call steps, binary
 * frames when bytes travel). Mutations: flipped bytes/characters, spliced JSON tokens, swapped
 * record types, changed indexes/lengths/offsets, lies in the binary header, truncation.
 *
 * Properties:
 *  - `decode` returns or throws an RpcError, nothing else;
 *  - `dispatchFrame` never throws, answers only with reply frames or closes with 1008/1009,
 *    and every refusal carries a documented code;
 *  - nothing decoded (returned by `decode`, or passed to a method) exceeds the limits: object
 *    depth, distinct nodes, nodes when shared references are expanded;
 *  - no prototype is touched: Object.prototype, Array.prototype and Function.prototype keep
 *    exactly their own keys, and a sentinel property never appears;
 *  - forbidden members of the target never run.
 *
 * Imports from source, so it runs without a build (and sees a mutated source at once).
 */
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { isJsonSafe, toRecords } from "../../packages/rpc/src/codec.js";
import { dispatchFrame, resolveServerOptions, type ReplyChannel } from "../../packages/rpc/src/dispatcher.js";
import { isRpcErrorCode, RpcError } from "../../packages/rpc/src/errors.js";
import { readFrame, writeFrame, type WireFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS, resolveLimits, type RpcLimits } from "../../packages/rpc/src/limits.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { decode, encode } from "../../packages/rpc/src/value.js";

// ---------------------------------------------------------------------------------------------
// Limits small enough that random frames hit them
// ---------------------------------------------------------------------------------------------

const LIMITS: Partial<RpcLimits> = {
  maxDepth: 8,
  maxNodes: 400,
  maxExpandedNodes: 2_000,
  maxChainLength: 6,
  maxArgs: 8,
  maxPendingCalls: 16,
  maxBigIntDigits: 200,
  maxRegExpSource: 200,
  maxBlobs: 8,
  maxMessageBytes: 64 * 1024,
};
const RESOLVED = resolveLimits(LIMITS);

// ---------------------------------------------------------------------------------------------
// Prototype integrity
// ---------------------------------------------------------------------------------------------

const SENTINEL = "polluted";

function protoState(): string {
  const keys = (o: object) => [...Object.getOwnPropertyNames(o), ...Object.getOwnPropertySymbols(o).map(String)].sort().join(",");
  const probe = [
    ({} as Record<string, unknown>)[SENTINEL],
    ([] as unknown as Record<string, unknown>)[SENTINEL],
    ((() => 0) as unknown as Record<string, unknown>)[SENTINEL],
    Object.prototype.toString === Object.prototype.toString,
  ];
  return `${keys(Object.prototype)}|${keys(Array.prototype)}|${keys(Function.prototype)}|${String(probe)}|${typeof Object.prototype.toString}`;
}

const PROTO_BEFORE = protoState();
const expectPrototypesIntact = (): void => expect(protoState()).toBe(PROTO_BEFORE);

// ---------------------------------------------------------------------------------------------
// Measuring decoded values
// ---------------------------------------------------------------------------------------------

/** Children of a container, as the decoder's shape check sees them (keys not counted). */
function childrenOf(v: unknown): unknown[] | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  if (Array.isArray(v)) return Object.keys(v).map((k) => (v as unknown as Record<string, unknown>)[k]);
  if (v instanceof Map) return [...v].flat();
  if (v instanceof Set) return [...v];
  if (v instanceof Error) {
    const out: unknown[] = Object.keys(v).map((k) => (v as unknown as Record<string, unknown>)[k]);
    if (Object.hasOwn(v, "cause")) out.push((v as { cause?: unknown }).cause);
    if (v instanceof AggregateError && !Object.keys(v).includes("errors")) out.push(v.errors);
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return Object.keys(v).map((k) => (v as Record<string, unknown>)[k]);
  return undefined; // Date, RegExp, ArrayBuffer, views, boxed primitives: leaves
}

interface Measure {
  /** Deepest nesting of non-empty containers along any path (the decoder's notion of depth). */
  depth: number;
  /** Whether some path comes back to a container already on it. */
  cyclic: boolean;
  /** Distinct objects. */
  objects: number;
  /** Nodes when every shared reference is followed again (capped). */
  expanded: number;
}

function measure(value: unknown, cap: number): Measure {
  const seen = new Set<object>();
  let depth = 0;
  let expanded = 0;
  let cyclic = false;
  const onPath = new Set<object>();
  const walk = (v: unknown, level: number): void => {
    expanded++;
    if (expanded > cap) return;
    if (typeof v === "object" && v !== null) seen.add(v);
    const kids = childrenOf(v);
    if (!kids || kids.length === 0) return;
    const obj = v as object;
    if (onPath.has(obj)) {
      cyclic = true; // a cycle: counted once, as the decoder does
      return;
    }
    depth = Math.max(depth, level);
    onPath.add(obj);
    for (const kid of kids) walk(kid, level + 1);
    onPath.delete(obj);
  };
  walk(value, 1);
  return { depth, cyclic, objects: seen.size, expanded };
}

function expectWithinLimits(value: unknown, limits: RpcLimits = RESOLVED): void {
  const m = measure(value, limits.maxExpandedNodes * 4);
  // Every path of an acyclic value is within maxDepth: that is how deep code recurses that walks
  // it without tracking identity. A cyclic value cannot be walked that way at all, and its
  // longest simple path is not what any walk follows (finding it is NP-hard), so its depth is the
  // decoder's walk's (checked by the decoder itself, in its own order) and is not re-measured here.
  if (!m.cyclic) expect(m.depth, "depth").toBeLessThanOrEqual(limits.maxDepth);
  expect(m.objects, "distinct objects").toBeLessThanOrEqual(limits.maxNodes);
  expect(m.expanded, "expanded nodes").toBeLessThanOrEqual(Math.max(limits.maxExpandedNodes, limits.maxNodes));
}

// ---------------------------------------------------------------------------------------------
// Generators: valid starting points
// ---------------------------------------------------------------------------------------------

const KEYS = ["a", "b", "__proto__", "constructor", "prototype", "toString", "0", "length", "then", "polluted"];

const leaf = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, "", "x", "__proto__", true, false, null, undefined),
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
  fc.date({ noInvalidDate: false }),
  fc.constantFrom(/a+/g, /(a+)+$/, /x/imsuy),
  fc.uint8Array({ maxLength: 6 }).map((a) => a.buffer),
  fc.uint8Array({ maxLength: 6 }),
  fc.float64Array({ maxLength: 3 }),
  fc.constantFrom(new DataView(new ArrayBuffer(4), 1, 2), new Int16Array([1, -1])),
  fc.constantFrom(Object(1), Object("s"), Object(false), Object(10n)),
);

const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS.filter((k) => k !== "__proto__")), tie("value"), { maxKeys: 4 }),
    fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 3 }).map((e) => new Map(e)),
    fc.array(tie("value"), { maxLength: 3 }).map((e) => new Set(e)),
    fc
      .tuple(
        fc.constantFrom("Error", "TypeError", "RangeError", "constructor", "__proto__", "AggregateError"),
        fc.string({ maxLength: 6 }),
        tie("value"),
      )
      .map(([name, message, cause]) => {
        const e = name === "AggregateError" ? new AggregateError([cause], message) : new Error(message, { cause });
        if (name !== "AggregateError") e.name = name;
        return e;
      }),
    fc.sparseArray(tie("value"), { maxLength: 6, maxNumElements: 2 }),
  ),
}));

/** A value with aliases and a cycle, so the record form (not the JSON fast path) is exercised. */
const sharedArb = fc.tuple(valueArb, valueArb).map(([a, b]) => {
  const holder: Record<string, unknown> = { a, b, again: a };
  holder.self = holder;
  return [holder, [a, a]];
});

/** `encode` output for a random value (values that cannot be encoded are skipped). */
const encodedArb = fc
  .oneof(
    valueArb,
    sharedArb,
    fc.anything({
      maxDepth: 3,
      withBigInt: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withTypedArray: true,
      withSparseArray: true,
      withNullPrototype: true,
      withBoxedValues: true,
    }),
  )
  .map((v) => {
    try {
      return encode(v);
    } catch (error) {
      expect(RpcError.is(error), String(error)).toBe(true);
      return encode(null);
    }
  });

const NAMES = [
  "getValue",
  "echo",
  "record",
  "tools",
  "peek",
  "data",
  "list",
  "_private",
  "ctx",
  "env",
  "constructor",
  "__proto__",
  "then",
  "toString",
  "call",
  "apply",
  "bind",
  "fetch",
  "alarm",
  "0",
  "length",
  "secretField",
  "arrowField",
  "storage",
];

/** One call step before encoding: a name, JSON arguments, or arguments that need records. */
type StepSpec = string | { json: unknown[] } | { values: unknown[] };

const stepArb: fc.Arbitrary<StepSpec> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 2, arbitrary: fc.array(fc.oneof(valueArb, sharedArb), { maxLength: 3 }).map((values) => ({ values })) },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }).map((json) => ({ json })) },
);

/**
 * A call frame encoded as the client encodes it (client.ts encodeChain + flush): each call step
 * is `[0, ...args]` when the arguments are JSON-safe, else `[1, records]`, with the bytes of all
 * calls in the frame's blobs (indexes are per frame); text unless some value carries bytes.
 */
const callFrameArb = fc
  .array(fc.tuple(fc.integer({ min: 1, max: 40 }), fc.array(stepArb, { minLength: 1, maxLength: 5 })), { minLength: 1, maxLength: 6 })
  .map((envelopes): WireFrame => {
    const blobs: Uint8Array[] = [];
    const encoded = envelopes.map(([id, steps]) => [
      id,
      steps.map((step) => {
        if (typeof step === "string") return step;
        if ("json" in step) return [0, ...step.json];
        const mark = blobs.length;
        try {
          return isJsonSafe(step.values) ? [0, ...step.values] : [1, toRecords(step.values, { blobs, stack: false })];
        } catch {
          blobs.length = mark; // not encodable (e.g. an own __proto__ key): the client would refuse it
          return [0];
        }
      }),
    ]);
    return writeFrame(0x43, JSON.stringify(encoded), blobs);
  });

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

const TOKENS = [
  "[",
  "]",
  "{",
  "}",
  ",",
  ":",
  '"',
  "-1",
  "0",
  "1e309",
  "1.5",
  "null",
  "true",
  '"__proto__"',
  '"constructor"',
  '{"__proto__":{"polluted":1}}',
  "[17,0]",
  '[18,["Uint8Array",0,0,99999]]',
  "[19,[4294967295]]",
  '["Function",0]',
  '["WebSocket",{}]',
  "99",
  "4294967295",
  '"-0"',
  '[8,"1e5"]',
  '[4,{"source":"(","flags":""}]',
  "[0,",
  "[1,",
];
const RECORD_TYPES: unknown[] = [
  -1,
  0,
  1,
  2,
  3,
  4,
  5,
  6,
  7,
  8,
  16,
  17,
  18,
  19,
  20,
  99,
  "-0",
  "Number",
  "BigInt",
  "String",
  "Boolean",
  "Uint8Array",
  "Function",
  "WebSocket",
  "EventSource",
  "Object",
  "__proto__",
  null,
];
const BAD_NUMBERS: unknown[] = [-1, 0, 1, 2, 3, 1.5, 1e9, 2 ** 32, 4294967295, 67108864, -0.5, "1", null, [], {}];

type Mutation =
  | { kind: "flip"; at: number; bit: number }
  | { kind: "splice"; at: number; del: number; token: string }
  | { kind: "truncate"; at: number }
  | { kind: "retype"; pick: number; type: unknown }
  | { kind: "renumber"; pick: number; value: unknown }
  | { kind: "header"; field: 4 | 8 | 12; value: number }
  | { kind: "dup"; at: number; length: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("splice" as const), at: fc.nat(), del: fc.integer({ min: 0, max: 4 }), token: fc.constantFrom(...TOKENS) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("retype" as const), pick: fc.nat(), type: fc.constantFrom(...RECORD_TYPES) }),
  fc.record({ kind: fc.constant("renumber" as const), pick: fc.nat(), value: fc.constantFrom(...BAD_NUMBERS) }),
  fc.record({
    kind: fc.constant("header" as const),
    field: fc.constantFrom(4 as const, 8 as const, 12 as const),
    value: fc.constantFrom(0, 1, 7, 9, 4096, 0xffffffff, 0x7fffffff),
  }),
  fc.record({ kind: fc.constant("dup" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
);

/** Every array in a parsed JSON tree that looks like a record `[type, payload]`, and every number slot. */
function collect(root: unknown): { records: unknown[][]; numbers: [unknown[] | Record<string, unknown>, string | number][] } {
  const records: unknown[][] = [];
  const numbers: [unknown[] | Record<string, unknown>, string | number][] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      if (v.length >= 1 && v.length <= 2 && (typeof v[0] === "number" || typeof v[0] === "string")) records.push(v);
      v.forEach((x, i) => {
        if (typeof x === "number") numbers.push([v, i]);
        walk(x);
      });
    } else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (typeof x === "number") numbers.push([v as Record<string, unknown>, k]);
        walk(x);
      }
    }
  };
  walk(root);
  return { records, numbers };
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** Applies `m` to a frame; structural mutations work on the JSON body and keep the layout. */
function mutate(frame: WireFrame, m: Mutation): WireFrame {
  const binary = typeof frame !== "string";
  switch (m.kind) {
    case "flip": {
      if (binary) {
        const out = frame.slice();
        if (out.length) out[m.at % out.length]! ^= 1 << m.bit;
        return out;
      }
      if (!frame.length) return frame;
      const at = m.at % frame.length;
      return frame.slice(0, at) + String.fromCharCode(frame.charCodeAt(at) ^ (1 << m.bit)) + frame.slice(at + 1);
    }
    case "truncate": {
      const len = binary ? frame.length : frame.length;
      const at = len ? m.at % len : 0;
      return binary ? frame.slice(0, at) : frame.slice(0, at);
    }
    case "dup": {
      if (binary) {
        const at = frame.length ? m.at % frame.length : 0;
        const piece = frame.slice(at, at + m.length);
        const out = new Uint8Array(frame.length + piece.length);
        out.set(frame.subarray(0, at));
        out.set(piece, at);
        out.set(frame.subarray(at), at + piece.length);
        return out;
      }
      const at = frame.length ? m.at % frame.length : 0;
      return frame.slice(0, at) + frame.slice(at, at + m.length) + frame.slice(at);
    }
    case "header": {
      if (!binary || frame.length < m.field + 4) return frame;
      const out = frame.slice();
      new DataView(out.buffer).setUint32(m.field, m.value, true);
      return out;
    }
    case "splice":
    case "retype":
    case "renumber":
      return mutateBody(frame, m);
  }
}

/** Mutations of the JSON body (text after the mark and kind, or the binary frame's header). */
function mutateBody(frame: WireFrame, m: Extract<Mutation, { kind: "splice" | "retype" | "renumber" }>): WireFrame {
  let json: string;
  let rebuild: (json: string) => WireFrame;
  if (typeof frame === "string") {
    json = frame.slice(2);
    rebuild = (j) => frame.slice(0, 2) + j;
  } else {
    if (frame.length < 12) return frame;
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    const count = view.getUint32(4, true);
    const headerLength = view.getUint32(8, true);
    const start = 12 + 4 * count;
    if (start + headerLength > frame.length) return frame;
    json = textDecoder.decode(frame.subarray(start, start + headerLength));
    rebuild = (j) => {
      const head = textEncoder.encode(j);
      const out = new Uint8Array(frame.length - headerLength + head.length);
      out.set(frame.subarray(0, start));
      new DataView(out.buffer).setUint32(8, head.length, true);
      out.set(head, start);
      out.set(frame.subarray(start + headerLength), start + head.length);
      return out;
    };
  }
  if (m.kind === "splice") {
    const at = json.length ? m.at % json.length : 0;
    return rebuild(json.slice(0, at) + m.token + json.slice(at + m.del));
  }
  let body: unknown;
  try {
    body = JSON.parse(json);
  } catch {
    return frame;
  }
  const { records, numbers } = collect(body);
  if (m.kind === "retype") {
    if (!records.length) return frame;
    records[m.pick % records.length]![0] = m.type;
  } else {
    if (!numbers.length) return frame;
    const [holder, key] = numbers[m.pick % numbers.length]!;
    (holder as Record<string | number, unknown>)[key] = m.value;
  }
  return rebuild(JSON.stringify(body));
}

// ---------------------------------------------------------------------------------------------
// decode
// ---------------------------------------------------------------------------------------------

/** decode either returns a value within limits or throws an RpcError; prototypes untouched. */
function checkDecode(frame: WireFrame): void {
  let value: unknown;
  let threw = false;
  try {
    value = decode(frame, LIMITS);
  } catch (error) {
    threw = true;
    expect(RpcError.is(error), `decode threw a non-RpcError: ${String(error)}`).toBe(true);
    expect(error).toBeInstanceOf(RpcError);
    expect(["DECODE", "LIMIT"]).toContain((error as RpcError).code);
  }
  if (!threw) expectWithinLimits(value);
  expectPrototypesIntact();
}

describe("fuzz: decode", () => {
  it("valid encodings of random values decode (or hit a limit) and stay within limits", () => {
    fc.assert(
      fc.property(encodedArb, (frame) => checkDecode(frame)),
      { numRuns: 400 },
    );
  });

  it("mutated encodings (flips, spliced tokens, swapped types, bad indexes/lengths, header lies, truncation) only ever throw RpcError", () => {
    fc.assert(
      fc.property(encodedArb, fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (frame, mutations) => {
        let f = frame;
        for (const m of mutations) f = mutate(f, m);
        checkDecode(f);
      }),
      { numRuns: 4000 },
    );
  }, 30_000);

  it("hand-built record tables from random records only ever throw RpcError", () => {
    const record = fc.oneof(
      fc.tuple(
        fc.constantFrom(...RECORD_TYPES),
        fc.oneof(
          fc.jsonValue({ maxDepth: 2 }),
          fc.array(fc.integer({ min: -1, max: 8 }), { maxLength: 4 }),
          fc.array(fc.tuple(fc.integer({ min: -1, max: 8 }), fc.integer({ min: -1, max: 8 })), { maxLength: 3 }),
        ),
      ),
      fc.tuple(fc.constantFrom(...RECORD_TYPES)),
    );
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 8 }),
        fc.array(fc.uint8Array({ maxLength: 16 }), { maxLength: 2 }),
        (table, blobs) => {
          checkDecode(writeFrame(0x56, JSON.stringify([1, table]), blobs));
        },
      ),
      { numRuns: 4000 },
    );
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// dispatchFrame
// ---------------------------------------------------------------------------------------------

/** What a target's forbidden members would do if a chain ever reached them. */
const breaches: string[] = [];
/** Every argument any method received, to check against the limits. */
const received: unknown[] = [];

class Tools extends RpcTarget {
  peek(...args: unknown[]): unknown {
    received.push(args);
    return args;
  }
  _private(): void {
    breaches.push("tools._private");
  }
}

class Target {
  ctx = { storage: { deleteAll: () => breaches.push("ctx.storage.deleteAll") } };
  env = { SECRET: "s3cr3t" };
  secretField = "field";
  arrowField = (): void => {
    breaches.push("arrowField");
  };
  getValue(): number {
    return 7;
  }
  echo(...args: unknown[]): unknown {
    received.push(args);
    return args[0];
  }
  record(...args: unknown[]): number {
    received.push(args);
    return args.length;
  }
  async slow(...args: unknown[]): Promise<unknown> {
    received.push(args);
    await Promise.resolve();
    return args;
  }
  get tools(): Tools {
    return new Tools();
  }
  get data(): unknown {
    return { list: [1, { deep: true }], fn: () => breaches.push("data.fn") };
  }
  get storage(): unknown {
    return this.ctx.storage;
  }
  _private(): void {
    breaches.push("_private");
  }
  fetch(): void {
    breaches.push("fetch");
  }
  alarm(): void {
    breaches.push("alarm");
  }
  webSocketMessage(): void {
    breaches.push("webSocketMessage");
  }
}

const SERVER = resolveServerOptions({ limits: LIMITS, ordering: "concurrent" });
const SEQUENTIAL = resolveServerOptions({ limits: LIMITS });

interface FakeChannel extends ReplyChannel {
  sent: WireFrame[];
  closes: [number | undefined, string | undefined][];
}

function fakeChannel(): FakeChannel {
  const channel: FakeChannel = {
    sent: [],
    closes: [],
    send(frame) {
      channel.sent.push(frame);
    },
    close(code, reason) {
      channel.closes.push([code, reason]);
    },
  };
  return channel;
}

/** Lets every queued microtask run (replies are flushed in a microtask). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** Feeds `frame` to dispatchFrame and checks everything that came back. */
async function checkDispatch(frame: WireFrame, sequential = false): Promise<void> {
  const channel = fakeChannel();
  received.length = 0;
  let handled: boolean | undefined;
  expect(() => {
    handled = dispatchFrame(frame, new Target(), sequential ? SEQUENTIAL : SERVER, channel);
  }).not.toThrow();
  expect(typeof handled).toBe("boolean");
  await settle();
  for (const [code] of channel.closes) expect([1008, 1009]).toContain(code);
  for (const out of channel.sent) {
    if (out === "\u001eQ") continue; // the heartbeat answer to a ping frame
    // Text or binary (a reply carrying bytes): either way a well-formed reply frame.
    const parsed = readFrame(out, DEFAULT_LIMITS);
    expect(parsed?.kind, "only reply frames").toBe(0x52);
    for (const reply of parsed!.body as unknown[][]) {
      expect(typeof reply[0]).toBe("number");
      if (reply[1] === 3) expect(isRpcErrorCode(reply[2]), String(reply[2])).toBe(true);
      expect(JSON.stringify(reply)).not.toContain("s3cr3t");
    }
  }
  for (const args of received) expectWithinLimits(args);
  const breached = breaches.splice(0);
  expect(breached, "a forbidden member ran").toEqual([]);
  expectPrototypesIntact();
}

describe("fuzz: dispatchFrame", () => {
  it("valid call frames with random chains never throw, never reach a forbidden member, answer within the protocol", async () => {
    await fc.assert(
      fc.asyncProperty(callFrameArb, fc.boolean(), (frame, sequential) => checkDispatch(frame, sequential)),
      { numRuns: 500 },
    );
  }, 30_000);

  it("mutated call frames never throw and never reach a forbidden member", async () => {
    await fc.assert(
      fc.asyncProperty(callFrameArb, fc.array(mutationArb, { minLength: 1, maxLength: 4 }), async (frame, mutations) => {
        let f = frame;
        for (const m of mutations) f = mutate(f, m);
        await checkDispatch(f);
      }),
      { numRuns: 2500 },
    );
  }, 30_000);

  it("random JSON bodies in every frame kind never throw", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("C", "R", "P", "Q", "V", "Z"), fc.jsonValue({ maxDepth: 4 }), (kind, body) =>
        checkDispatch(`\u001e${kind}${JSON.stringify(body)}`),
      ),
      { numRuns: 400 },
    );
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// Exact checks, one protection each (the mutation check in docs/security.md relies on these)
// ---------------------------------------------------------------------------------------------

const recordsFrame = (table: unknown, blobs: Uint8Array[] = []): WireFrame => writeFrame(0x56, JSON.stringify([1, table]), blobs);

function decodeError(frame: WireFrame, limits?: Partial<RpcLimits>): RpcError {
  try {
    decode(frame, limits);
  } catch (error) {
    expect(RpcError.is(error), `expected an RpcError, got ${String(error)}`).toBe(true);
    return error as RpcError;
  }
  throw new Error("expected decode to throw");
}

/** Runs one call frame on a fresh channel: the replies (by id) and the closes. */
async function dispatch(frame: WireFrame, options = SERVER): Promise<{ replies: unknown[][]; closes: FakeChannel["closes"] }> {
  const channel = fakeChannel();
  dispatchFrame(frame, new Target(), options, channel);
  await settle();
  const replies = channel.sent.flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[][]);
  return { replies, closes: channel.closes };
}

const callText = (id: number, ...chain: unknown[]): string => `\u001eC${JSON.stringify([[id, chain]])}`;

describe("decoder protections, exactly", () => {
  it('an own "__proto__" key in an object record is DECODE, and nothing is polluted', () => {
    expect(
      decodeError(
        recordsFrame([
          [2, [[1, 2]]],
          [0, "__proto__"],
          [2, [[3, 4]]],
          [0, SENTINEL],
          [0, true],
        ]),
      ).code,
    ).toBe("DECODE");
    expect(decodeError('\u001eV[0,{"__proto__":{"polluted":true}}]').code).toBe("DECODE");
    expectPrototypesIntact();
  });

  it("record types outside the allowlist are DECODE (live objects, functions, unknown numbers)", () => {
    for (const type of ["WebSocket", "EventSource", "Function", "Object", "__proto__", "constructor", 9, 15, 20, 99, -2, null]) {
      expect(decodeError(recordsFrame([[type, {}]])).code, String(type)).toBe("DECODE");
    }
  });

  it('error names resolve through a null-prototype allowlist: "constructor", "toString", "__proto__" build a plain Error', () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "Function", "Object"]) {
      const value = decode(recordsFrame([[7, { name, message: "m" }]]));
      expect(value, name).toBeInstanceOf(Error);
      expect(Object.getPrototypeOf(value), name).toBe(Error.prototype);
      expect((value as Error).name).toBe(name);
      expect((value as Error).message).toBe("m");
    }
  });

  it("views are bounds-checked against their blob before construction: DECODE, never a RangeError", () => {
    const blob = [new Uint8Array(8)];
    expect(
      decodeError(
        recordsFrame(
          [
            [18, ["Uint8Array", 1, 0, 67108864]],
            [17, 0],
          ],
          blob,
        ),
      ).code,
    ).toBe("DECODE");
    expect(
      decodeError(
        recordsFrame(
          [
            [18, ["Float64Array", 1, 8, 1]],
            [17, 0],
          ],
          blob,
        ),
      ).code,
    ).toBe("DECODE");
    expect(
      decodeError(
        recordsFrame(
          [
            [18, ["DataView", 1, 4, 5]],
            [17, 0],
          ],
          blob,
        ),
      ).code,
    ).toBe("DECODE");
    expect(
      decodeError(
        recordsFrame(
          [
            [18, ["Uint32Array", 1, 2, 1]],
            [17, 0],
          ],
          blob,
        ),
      ).code,
    ).toBe("DECODE");
    expect(decodeError(recordsFrame([[18, ["Uint8Array", 0, 0, 1]]], blob)).code).toBe("DECODE");
  });

  it("nesting deeper than maxDepth is LIMIT on both the record and the JSON path", () => {
    const past = DEFAULT_LIMITS.maxDepth + 1;
    const table = [...Array.from({ length: past }, (_, i) => [1, [i + 1]]), [0, 0]];
    expect(decodeError(recordsFrame(table)).code).toBe("LIMIT");
    const json = "[".repeat(past) + "0" + "]".repeat(past);
    expect(decodeError(`\u001eV[0,${json}]`).code).toBe("LIMIT");
    // Exactly at the limit is fine.
    const ok = [...Array.from({ length: 7 }, (_, i) => [1, [i + 1]]), [0, 0]];
    expect(() => decode(recordsFrame(ok), { maxDepth: 8 })).not.toThrow();
  });

  it("a DAG that expands to 2^60 nodes is LIMIT via maxExpandedNodes, though it is 60 records", () => {
    const table = [...Array.from({ length: 59 }, (_, i) => [1, [i + 1, i + 1]]), [0, "leaf"]];
    const error = decodeError(recordsFrame(table));
    expect(error.code).toBe("LIMIT");
    expect(error.message).toContain("maxExpandedNodes");
  });

  it("giant lengths are LIMIT or DECODE before allocation: sparse arrays, BigInts, RegExp sources, blob counts", () => {
    expect(decodeError(recordsFrame([[19, [4294967295]]])).code).toBe("LIMIT");
    expect(decodeError(recordsFrame([[19, [1e300]]])).code).toBe("LIMIT");
    expect(decodeError(recordsFrame([[8, "9".repeat(10_001)]])).code).toBe("LIMIT");
    expect(decodeError(recordsFrame([[4, { source: "a".repeat(10_001), flags: "" }]])).code).toBe("LIMIT");
    expect(decodeError(recordsFrame([[4, { source: "(", flags: "" }]])).code).toBe("DECODE");
  });

  it("a catastrophic RegExp source decodes as an inert RegExp (dorpc never runs it)", () => {
    const value = decode(recordsFrame([[4, { source: "(a+)+$", flags: "" }]]));
    expect(value).toBeInstanceOf(RegExp);
    expect((value as RegExp).source).toBe("(a+)+$");
  });

  it("a frame over maxMessageBytes is LIMIT before it is parsed (text and binary)", () => {
    expect(decodeError(`\u001eV[0,"${"x".repeat(200)}"]`, { maxMessageBytes: 100 }).code).toBe("LIMIT");
    expect(decodeError(writeFrame(0x56, "[1,[[17,0]]]", [new Uint8Array(200)]), { maxMessageBytes: 100 }).code).toBe("LIMIT");
    // Not even parsed: invalid JSON over the limit is LIMIT, not DECODE.
    expect(decodeError(`\u001eV${"[".repeat(200)}`, { maxMessageBytes: 100 }).code).toBe("LIMIT");
  });
});

describe("dispatcher protections, exactly", () => {
  beforeEach(() => {
    breaches.length = 0;
  });

  it("never-names are NOT_FOUND even when the target's own class defines them (constructor, lifecycle, then)", async () => {
    const names = ["constructor", "fetch", "alarm", "webSocketMessage", "then", "toString", "hasOwnProperty", "__proto__", "ctx", "env"];
    for (const name of names) {
      const { replies } = await dispatch(callText(1, name, [0]));
      expect(replies[0]?.slice(0, 3), name).toEqual([1, 3, "NOT_FOUND"]);
    }
    expect(breaches).toEqual([]);
  });

  it("_-prefixed names, instance fields and arrow fields are NOT_FOUND", async () => {
    for (const chain of [
      ["_private", [0]],
      ["tools", "_private", [0]],
      ["secretField"],
      ["arrowField", [0]],
      ["ctx", "storage", "deleteAll", [0]],
    ]) {
      const { replies } = await dispatch(callText(1, ...chain));
      expect(replies[0]?.slice(0, 3), JSON.stringify(chain)).toEqual([1, 3, "NOT_FOUND"]);
    }
    expect(breaches).toEqual([]);
  });

  it("plain data exposes data only: a function-valued property is NOT_FOUND, a data property works", async () => {
    expect((await dispatch(callText(1, "data", "fn", [0]))).replies[0]?.slice(0, 3)).toEqual([1, 3, "NOT_FOUND"]);
    expect((await dispatch(callText(1, "data", "list", "1", "deep"))).replies[0]).toEqual([1, 0, true]);
    expect(breaches).toEqual([]);
  });

  it("a frame with more calls than maxPendingCalls closes with 1008 and runs none", async () => {
    received.length = 0;
    const body = Array.from({ length: 17 }, (_, i) => [i + 1, ["record", [0, i]]]);
    const { replies, closes } = await dispatch(`\u001eC${JSON.stringify(body)}`);
    expect(closes).toHaveLength(1);
    expect(closes[0]![0]).toBe(1008);
    expect(replies).toEqual([]);
    expect(received).toEqual([]);
  });

  it("a frame over maxMessageBytes: its call is answered LIMIT without being parsed; one whose calls cannot be made out closes with 1009", async () => {
    const over = await dispatch(callText(1, "echo", [0, "x".repeat(70_000)]));
    expect(over.closes).toEqual([]);
    expect(over.replies).toEqual([[1, 3, "LIMIT", expect.stringContaining("maxMessageBytes")]]);
    const garbage = await dispatch(`\u001eC[[1,${"[".repeat(70_000)}`);
    expect(garbage.closes).toEqual([[1009, expect.stringContaining("maxMessageBytes")]]);
  });

  it("a reply-kind frame naming a running id does not free its pending slot", async () => {
    const channel = fakeChannel();
    const target = new Target();
    const running = `\u001eC${JSON.stringify(Array.from({ length: 16 }, (_, i) => [i + 1, ["slow", [0]]]))}`;
    dispatchFrame(running, target, SERVER, channel);
    dispatchFrame(`\u001eR${JSON.stringify(Array.from({ length: 16 }, (_, i) => [i + 1]))}`, target, SERVER, channel);
    dispatchFrame(callText(100, "record", [0]), target, SERVER, channel);
    await settle();
    const replies = channel.sent.flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[][]);
    expect(replies.find((r) => r[0] === 100)?.slice(0, 3)).toEqual([100, 3, "LIMIT"]);
  });
});

/**
 * Hostile inputs against real Durable Objects in workerd (issue #5, "Secure by default").
 *
 * Most cases speak the wire protocol by hand over a raw socket (raw.ts), sending frames the
 * dorpc client would never produce; some go through the real client. Every case checks:
 *  (a) the exact answer: an `[id, 3, code, message]` refusal with the exact code, or the exact
 *      close code (1003/1008/1009) and reason where closing is the documented answer
 *      (dispatcher.ts: a frame with no answerable id closes the connection);
 *  (b) afterwards the connection still serves a normal `getValue` call, or, where it was
 *      closed, that it is closed and a new connection to the same object works;
 *  (c) the object's storage (every kv key and value) is exactly what it was before;
 *  (d) the env SECRET never appears in any reply, close reason or error message.
 *
 * Wire reminders (packages/rpc/src/envelopes.ts): a text call frame is "\u001eC" + JSON of
 * `[[id, chain], …]`; a chain step is a string (property read), `[0, ...jsonArgs]` or
 * `[1, recordTable]` (a call); replies are "\u001eR" + JSON of `[[id, status, …]]`.
 */
import { createRpcClient, DEFAULT_LIMITS, RpcError, type RpcErrorCode } from "@dorpc/rpc";
import { env, evictDurableObject, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Victim } from "./objects.js";
import { binaryFrame, call, calls, openRaw, routeUrl, upgradeTransport, type RawConnection } from "./raw.js";

const SECRET = "s3cr3t-dorpc-value";
/** Id of the probe call that checks a connection is still usable. */
const PROBE = 9_999;
/** What every object holds before a case; `count` is what `getValue` returns. */
const SEED: Record<string, unknown> = { count: 7, note: "keep-me", nested: { list: [1, 2, 3], flag: true } };

type Binding = "VICTIM" | "TIGHT" | "ALLOW_LIST" | "ALLOW_FN" | "TRUSTED" | "IDENT";
type Frame = string | Uint8Array;

let serial = 0;
const uniqueName = (label: string): string => `${label.replace(/[^a-z0-9]+/gi, "-").slice(0, 40)}-${Date.now().toString(36)}-${serial++}`;
const stubOf = (binding: Binding, name: string) => (env[binding] as DurableObjectNamespace<Victim>).getByName(name);

async function seed(binding: Binding, name: string): Promise<void> {
  await runInDurableObject(stubOf(binding, name), (_instance: Victim, state) => {
    for (const [key, value] of Object.entries(SEED)) state.storage.kv.put(key, value);
  });
}

/** Every kv key and value of the object, sorted by key. */
async function snapshot(binding: Binding, name: string): Promise<[string, unknown][]> {
  return runInDurableObject(stubOf(binding, name), (_instance: Victim, state) =>
    [...state.storage.kv.list()].sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

/** The in-memory count of `record` calls of the live instance. */
async function recordedCalls(binding: Binding, name: string): Promise<number> {
  return runInDurableObject(stubOf(binding, name), (instance: Victim) => instance.recorded);
}

/** (d): no text the client could see holds the secret. */
function expectNoSecret(...texts: unknown[]): void {
  for (const text of texts) {
    const s = typeof text === "string" ? text : describeError(text);
    expect(s.includes(SECRET), `secret leaked in: ${s.slice(0, 300)}`).toBe(false);
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return JSON.stringify(error) ?? String(error);
  return `${error.name} ${error.message} ${error.stack ?? ""} ${describeError(error.cause ?? "")}`;
}

/** (b) on a connection that must still be open. */
async function expectUsable(conn: RawConnection): Promise<void> {
  expect(conn.closed, "connection should still be open").toBeUndefined();
  conn.send(call(PROBE, "getValue", [0]));
  expect(await conn.reply(PROBE)).toEqual([PROBE, 0, 7]);
}

/** (b) after a documented close: a fresh connection to the same object works. */
async function expectReconnectable(binding: Binding, name: string): Promise<void> {
  const fresh = await openRaw(routeUrl(binding, name));
  try {
    await expectUsable(fresh);
    expectNoSecret(...fresh.texts);
  } finally {
    fresh.close();
  }
}

interface HostileCase {
  name: string;
  binding?: Binding;
  /** Frames sent in order on one raw connection. */
  frames: Frame[] | (() => Frame[]);
  /** Expected refusals, `[id, code]`: the first reply for each id must be `[id, 3, code, message]`. */
  failed?: [number, RpcErrorCode][];
  /** Expected close instead: code and reason (substring or pattern). No call of the frame may be answered. */
  close?: [number, string | RegExp];
  /** More checks on the connection (after `failed`/`close`, before the probe). */
  check?: (conn: RawConnection, name: string) => Promise<void>;
  /** `record` must not have run (its in-memory counter stays 0). Default true. */
  nothingRecorded?: boolean;
}

async function runCase(c: HostileCase): Promise<void> {
  const binding = c.binding ?? "VICTIM";
  const name = uniqueName(c.name);
  await seed(binding, name);
  const before = await snapshot(binding, name);
  const conn = await openRaw(routeUrl(binding, name));
  try {
    for (const frame of typeof c.frames === "function" ? c.frames() : c.frames) conn.send(frame);
    // (a)
    for (const [id, code] of c.failed ?? []) {
      const reply = await conn.reply(id);
      expect(reply.slice(0, 3), `reply to ${id}: ${JSON.stringify(reply).slice(0, 300)}`).toEqual([id, 3, code]);
      expect(typeof reply[3]).toBe("string");
      expect(reply).toHaveLength(4);
    }
    if (c.close) {
      const closed = await conn.closedWithin(5000);
      expect(closed, "expected the server to close the connection").toBeDefined();
      expect(closed![0], `close reason: ${closed![1]}`).toBe(c.close[0]);
      if (typeof c.close[1] === "string") expect(closed![1]).toContain(c.close[1]);
      else expect(closed![1]).toMatch(c.close[1]);
      expect(
        conn.replies.filter((r) => r[0] !== PROBE),
        "a closed frame answers no call",
      ).toEqual([]);
    }
    await c.check?.(conn, name);
    // (b)
    if (c.close) await expectReconnectable(binding, name);
    else await expectUsable(conn);
    // (c)
    expect(await snapshot(binding, name)).toEqual(before);
    if (c.nothingRecorded !== false) expect(await recordedCalls(binding, name)).toBe(0);
    // (d)
    expectNoSecret(...conn.texts, conn.closed?.[1] ?? "");
  } finally {
    conn.close();
  }
}

const cases = (list: HostileCase[]): void => {
  for (const c of list) it(c.name, () => runCase(c), 30_000);
};

/** `[1, table]`: a call step whose arguments array is a record table. */
const recordArgs = (table: unknown[]): unknown[] => [1, table];
/** A table whose root is an arguments array holding record 1. */
const oneArg = (...rest: unknown[]): unknown[] => recordArgs([[1, [1]], ...rest]);

// ---------------------------------------------------------------------------------------------
// Traversal: what a chain can never reach
// ---------------------------------------------------------------------------------------------

describe("traversal: names a chain can never reach are NOT_FOUND, and nothing runs", () => {
  cases([
    { name: "reading __proto__ is NOT_FOUND", frames: [call(1, "__proto__")], failed: [[1, "NOT_FOUND"]] },
    { name: "reading constructor is NOT_FOUND", frames: [call(1, "constructor")], failed: [[1, "NOT_FOUND"]] },
    {
      name: 'constructor.constructor("return 1")() is NOT_FOUND before anything runs',
      frames: [call(1, "constructor", "constructor", [0, "return 1"], [0])],
      failed: [[1, "NOT_FOUND"]],
    },
    {
      name: "ctx.storage.deleteAll() is NOT_FOUND and storage is untouched",
      frames: [call(1, "ctx", "storage", "deleteAll", [0])],
      failed: [[1, "NOT_FOUND"]],
    },
    { name: "env.SECRET is NOT_FOUND", frames: [call(1, "env", "SECRET")], failed: [[1, "NOT_FOUND"]] },
    ...(["fetch", "alarm", "webSocketMessage", "webSocketClose", "webSocketError"] as const).map(
      (method): HostileCase => ({
        name: `calling the lifecycle method ${method} is NOT_FOUND`,
        frames: [call(1, method, [0, "http://x/", 1000, "bye"])],
        failed: [[1, "NOT_FOUND"]],
      }),
    ),
    {
      name: "_private() is NOT_FOUND (it would wipe storage)",
      frames: [call(1, "_private", [0])],
      failed: [[1, "NOT_FOUND"]],
    },
    {
      name: "a getter returning this.ctx.storage, then .deleteAll(), is NOT_FOUND and storage is untouched",
      frames: [
        call(1, "storage", "deleteAll", [0]),
        call(2, "storage", "kv", "get", [0, "count"]),
        call(3, "storage", "sql", "exec", [0, "DELETE FROM _cf_KV"]),
      ],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
    },
    {
      name: "a getter returning this.ctx.storage, read whole, is ENCODE: storage is not a value",
      frames: [call(1, "storage")],
      failed: [[1, "ENCODE"]],
    },
    {
      name: "a getter returning this.env, then .SECRET, never yields the secret",
      frames: [call(1, "environment", "SECRET")],
      failed: [[1, "NOT_FOUND"]],
    },
    {
      name: "a getter returning this.env, read whole, never yields the secret",
      frames: [call(1, "environment")],
      failed: [[1, "ENCODE"]],
    },
    { name: "then is NOT_FOUND (no thenable tricks)", frames: [call(1, "then", [0])], failed: [[1, "NOT_FOUND"]] },
    { name: "toString() is NOT_FOUND", frames: [call(1, "toString", [0])], failed: [[1, "NOT_FOUND"]] },
    { name: "valueOf() is NOT_FOUND", frames: [call(1, "valueOf", [0])], failed: [[1, "NOT_FOUND"]] },
    {
      name: "hasOwnProperty, __defineGetter__ and __lookupGetter__ are NOT_FOUND",
      frames: [
        call(1, "hasOwnProperty", [0, "count"]),
        call(2, "__defineGetter__", [0, "x", null]),
        call(3, "__lookupGetter__", [0, "storage"]),
      ],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
    },
    ...(["call", "apply", "bind"] as const).map(
      (name): HostileCase => ({
        name: `record.${name}(…) on a method is NOT_FOUND and record never runs`,
        frames: [call(1, "record", name, [0, null, [1, 2]])],
        failed: [[1, "NOT_FOUND"]],
      }),
    ),
    { name: "an instance field is NOT_FOUND", frames: [call(1, "secretField")], failed: [[1, "NOT_FOUND"]] },
    { name: "an arrow-function field is NOT_FOUND", frames: [call(1, "arrowField", [0])], failed: [[1, "NOT_FOUND"]] },
    {
      name: "an RpcTarget's constructor, __proto__ and Function constructor are NOT_FOUND (peek still works)",
      frames: [
        call(1, "tools", "constructor", "constructor", [0, "return 1"], [0]),
        call(2, "tools", "__proto__"),
        call(3, "tools", "peek", [0]),
      ],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
      ],
      check: async (conn) => expect(await conn.reply(3)).toEqual([3, 0, "peek"]),
    },
    {
      name: "a method's own properties (name, length, prototype) are NOT_FOUND",
      frames: [call(1, "getValue", "name"), call(2, "getValue", "length"), call(3, "getValue", "prototype")],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
    },
    {
      name: "a chain ending at a method, calling a getter's value, or calling twice is NOT_CALLABLE",
      frames: [call(1, "getValue"), call(2, "tools", [0]), call(3, "getValue", [0], [0])],
      failed: [
        [1, "NOT_CALLABLE"],
        [2, "NOT_CALLABLE"],
        [3, "NOT_CALLABLE"],
      ],
    },
    {
      // JSON has no symbols: a step is a string, an array, or something else (PROTOCOL). A string
      // such as "Symbol(Symbol.iterator)" is only ever a string key, never the symbol.
      name: "symbols cannot be sent: an object step is PROTOCOL and a symbol-looking string is a plain (missing) name",
      frames: [call(1, "tools", { description: "Symbol.iterator" }), call(2, "Symbol(Symbol.iterator)"), call(3, "@@iterator")],
      failed: [
        [1, "PROTOCOL"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
    },
    {
      name: "a number as a step (first or later) is PROTOCOL, never coerced to a key",
      frames: [call(1, 0), call(2, "tools", 0), call(3, "echo", [0, [5]], 0)],
      failed: [
        [1, "PROTOCOL"],
        [2, "PROTOCOL"],
        [3, "PROTOCOL"],
      ],
    },
    {
      name: "plain data returned by a method exposes data only: __proto__/constructor/toString on it are NOT_FOUND",
      frames: [
        call(1, "echo", [0, { a: 1 }], "__proto__"),
        call(2, "echo", [0, { a: 1 }], "constructor"),
        call(3, "echo", [0, [1, 2]], "toString", [0]),
        call(4, "echo", [0, { a: 1 }], "a"),
      ],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
      check: async (conn) => expect(await conn.reply(4)).toEqual([4, 0, 1]),
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Decoder bombs
// ---------------------------------------------------------------------------------------------

/** 60 array records, each holding the next one twice: 60 records, 2^60 nodes as a tree. */
function dagTable(levels = 60): unknown[] {
  const table: unknown[] = [];
  for (let i = 0; i < levels - 1; i++) table.push([1, [i + 1, i + 1]]);
  table.push([0, "leaf"]);
  return table;
}

describe("decoder bombs: refused per call before anything is built", () => {
  cases([
    { name: "an unknown record type is DECODE", frames: [call(1, "record", oneArg([99, "x"]))], failed: [[1, "DECODE"]] },
    ...(["WebSocket", "EventSource", "Function", "Promise", "SharedArrayBuffer"] as const).map(
      (tag): HostileCase => ({
        name: `a live-object record type "${tag}" is DECODE`,
        frames: [call(1, "record", oneArg([tag, {}]))],
        failed: [[1, "DECODE"]],
      }),
    ),
    {
      name: 'an ungap-style ["Uint8Array", 67108864] record is DECODE (typed arrays only travel as views over blobs)',
      frames: [call(1, "record", oneArg(["Uint8Array", 67108864]))],
      failed: [[1, "DECODE"]],
    },
    {
      name: "a view of 67,108,864 elements over an 8-byte blob is DECODE (view bounds checked before construction)",
      frames: () => [
        binaryFrame(
          JSON.stringify([
            [
              1,
              [
                "record",
                [
                  1,
                  [
                    [1, [1]],
                    [18, ["Uint8Array", 2, 0, 67108864]],
                    [17, 0],
                  ],
                ],
              ],
            ],
          ]),
          [new Uint8Array(8)],
        ),
      ],
      failed: [[1, "DECODE"]],
    },
    {
      name: "a Float64Array view at a misaligned offset is DECODE",
      frames: () => [
        binaryFrame(
          JSON.stringify([
            [
              1,
              [
                "record",
                [
                  1,
                  [
                    [1, [1]],
                    [18, ["Float64Array", 2, 3, 1]],
                    [17, 0],
                  ],
                ],
              ],
            ],
          ]),
          [new Uint8Array(16)],
        ),
      ],
      failed: [[1, "DECODE"]],
    },
    {
      name: "a sparse array claiming 4,294,967,295 elements is LIMIT",
      frames: [call(1, "record", oneArg([19, [4294967295]]))],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "a record index outside the table is DECODE",
      frames: [
        call(
          1,
          "record",
          recordArgs([
            [1, [1, 1e9]],
            [0, 1],
          ]),
        ),
      ],
      failed: [[1, "DECODE"]],
    },
    {
      name: "nested JSON arguments one level past the default maxDepth are LIMIT, checked without recursion",
      // Written as text: JSON.stringify itself overflows long before 20,000 levels.
      // The argument list is not a level: the argument itself is maxDepth + 1 deep.
      frames: () => [
        `\u001eC[[1,["record",[0,${"[".repeat(DEFAULT_LIMITS.maxDepth + 1) + "0" + "]".repeat(DEFAULT_LIMITS.maxDepth + 1)}]]]]`,
      ],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "nested records one level past the default maxDepth are LIMIT, checked without recursion",
      frames: () => [
        // Record 0 is the argument list; the argument under it is maxDepth + 1 deep.
        call(1, "record", recordArgs([...Array.from({ length: DEFAULT_LIMITS.maxDepth + 2 }, (_, i) => [1, [i + 1]]), [0, 0]])),
      ],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "a DAG of 60 records each referencing the next twice (2^60 nodes expanded) is LIMIT via maxExpandedNodes",
      frames: () => [call(1, "record", recordArgs(dagTable()))],
      failed: [[1, "LIMIT"]],
      check: async (conn) => {
        const reply = await conn.reply(1);
        expect(reply[3]).toContain("maxExpandedNodes");
      },
    },
    {
      name: "a BigInt of 20,000 digits is LIMIT (maxBigIntDigits 10,000)",
      frames: [call(1, "record", oneArg([8, "9".repeat(20_000)]))],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "a BigInt record that is not an integer string is DECODE",
      frames: [call(1, "record", oneArg([8, "0x10"])), call(2, "record", oneArg(["BigInt", "1e9"]))],
      failed: [
        [1, "DECODE"],
        [2, "DECODE"],
      ],
    },
    {
      name: "an invalid RegExp source or flags is DECODE",
      frames: [call(1, "record", oneArg([4, { source: "(", flags: "" }])), call(2, "record", oneArg([4, { source: "a", flags: "gx" }]))],
      failed: [
        [1, "DECODE"],
        [2, "DECODE"],
      ],
    },
    {
      name: "a RegExp source longer than maxRegExpSource is LIMIT",
      frames: [call(1, "record", oneArg([4, { source: "a".repeat(10_001), flags: "" }]))],
      failed: [[1, "LIMIT"]],
    },
    {
      // dorpc decodes a RegExp as an inert object and never executes it; only user code that
      // runs it against input could hang (docs/security.md).
      name: 'a catastrophic RegExp "(a+)+$" decodes as an inert RegExp and the object does not hang',
      frames: [
        call(1, "kindOf", oneArg([4, { source: "(a+)+$", flags: "" }])),
        call(2, "echo", oneArg([4, { source: "(a+)+$", flags: "" }])),
      ],
      check: async (conn) => {
        expect(await conn.reply(1)).toEqual([1, 0, "[object RegExp]"]);
        expect(await conn.reply(2)).toEqual([2, 1, [[4, { source: "(a+)+$", flags: "" }]]]);
      },
    },
    {
      name: "a __proto__ key in JSON arguments is DECODE (no prototype pollution)",
      frames: ['\u001eC[[1,["echo",[0,{"__proto__":{"polluted":true}}]]]]', '\u001eC[[2,["echo",[0,[{"a":{"__proto__":{"x":1}}}]]]]]'],
      failed: [
        [1, "DECODE"],
        [2, "DECODE"],
      ],
      check: async () => expect(({} as Record<string, unknown>).polluted).toBeUndefined(),
    },
    {
      name: "a __proto__ key in an object record or in an Error's own properties is DECODE",
      frames: [
        call(1, "echo", oneArg([2, [[2, 3]]], [0, "__proto__"], [2, []])),
        call(2, "echo", oneArg([7, { name: "Error", message: "m", props: [[2, 3]] }], [0, "__proto__"], [0, 1])),
      ],
      failed: [
        [1, "DECODE"],
        [2, "DECODE"],
      ],
    },
    {
      name: "an Error record naming constructor/Function/__proto__ builds a plain Error carrying that name, nothing else",
      frames: [
        call(1, "kindOf", oneArg([7, { name: "constructor", message: "m" }])),
        call(2, "kindOf", oneArg([7, { name: "Function", message: "m" }])),
        call(3, "kindOf", oneArg([7, { name: "__proto__", message: "m" }])),
      ],
      check: async (conn) => {
        for (const id of [1, 2, 3]) expect(await conn.reply(id)).toEqual([id, 0, "[object Error]"]);
      },
    },
    {
      name: "a text frame whose record needs a binary blob (ArrayBuffer record) is DECODE",
      frames: [call(1, "record", oneArg([17, 0]))],
      failed: [[1, "DECODE"]],
    },
    {
      name: "frame-level bad JSON closes with 1008 (no id can be answered)",
      frames: ['\u001eC[[1,["record",[0]]]', '\u001eC[[NaN,["record",[0]]]]'],
      close: [1008, "Frame is not valid JSON"],
    },
    {
      // The text's bytes 4-7 ("1,[\"") read as a blob count of 576,400,433: more than maxBlobs,
      // which docs/protocol.md (server step 3) answers with 1009, before the layout is checked.
      name: "a text call frame sent as a binary message closes with 1009 (its bytes claim 576,400,433 blobs), nothing runs",
      frames: () => [new TextEncoder().encode(call(1, "record", [0]))],
      close: [1009, "Frame carries 576400433 blobs, more than limits.maxBlobs (4096)"],
    },
    {
      name: "a binary frame declaring more than maxBlobs blobs closes with 1009 before any length is read",
      frames: () => [binaryFrame("[]", [], { blobCount: 4097 })],
      close: [1009, "more than limits.maxBlobs (4096)"],
    },
    {
      name: "a binary frame whose declared lengths do not add up closes with 1008",
      frames: () => [binaryFrame(JSON.stringify([[1, ["record", [0]]]]), [new Uint8Array(4)], { lengths: [0xffffffff] })],
      close: [1008, "Binary frame declares"],
    },
    {
      name: "a binary frame whose JSON header is not UTF-8 closes with 1008",
      frames: () => [binaryFrame(new Uint8Array([0x5b, 0xff, 0xfe, 0x5d]))],
      close: [1008, "not valid UTF-8"],
    },
    {
      name: "a binary frame shorter than its fixed header closes with 1008",
      frames: () => [new Uint8Array([0x1e, 0x43, 0, 0])],
      close: [1008, "shorter than its fixed header"],
    },
    {
      name: "a binary frame with the right layout and no blobs is read like a text frame (and runs nothing hostile)",
      frames: () => [
        binaryFrame(
          JSON.stringify([
            [1, ["getValue", [0]]],
            [2, ["ctx", "storage", "deleteAll", [0]]],
          ]),
        ),
      ],
      failed: [[2, "NOT_FOUND"]],
      check: async (conn) => expect(await conn.reply(1)).toEqual([1, 0, 7]),
    },
    {
      name: "garbage that is not a dorpc frame (text or binary) closes with 1003",
      frames: () => [new Uint8Array([0xde, 0xad, 0xbe, 0xef])],
      close: [1003, "not a dorpc frame"],
    },
    {
      name: "a text message without the frame mark closes with 1003",
      frames: ['[[1,["record",[0]]]]'],
      close: [1003, "not a dorpc frame"],
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Protocol violations
// ---------------------------------------------------------------------------------------------

describe("protocol violations", () => {
  cases([
    {
      name: "a duplicate id while the first call is running is PROTOCOL; the original still completes",
      frames: [
        calls([
          [5, ["slow", [0]]],
          [5, ["record", [0]]],
        ]),
      ],
      check: async (conn) => {
        const replies = await conn.repliesFor(5, 2);
        expect(replies[0]!.slice(0, 3)).toEqual([5, 3, "PROTOCOL"]);
        expect(replies[1]).toEqual([5, 0, 7]);
      },
    },
    ...(
      [
        ["negative", -1],
        ["fractional", 1.5],
        ["string", "1"],
        ["unsafe-integer", 2 ** 53],
        ["null", null],
      ] as const
    ).map(
      ([label, id]): HostileCase => ({
        name: `a ${label} call id closes with 1008 and runs nothing`,
        frames: [calls([[id, ["record", [0]]]])],
        close: [1008, "positive integer id"],
      }),
    ),
    {
      name: "an unknown argument tag or a records step without its table is PROTOCOL",
      frames: [call(1, "record", [2, 5]), call(2, "record", [1]), call(3, "record", [1, [[1, []]], "extra"])],
      failed: [
        [1, "PROTOCOL"],
        [2, "PROTOCOL"],
        [3, "PROTOCOL"],
      ],
    },
    {
      name: "arguments whose record table is not an array are PROTOCOL",
      frames: [call(1, "record", recordArgs([[2, []]])), call(2, "record", recordArgs([[0, "x"]]))],
      failed: [
        [1, "PROTOCOL"],
        [2, "PROTOCOL"],
      ],
    },
    {
      // Replies are a legitimate kind both ways (the object calls its clients); replies to calls
      // the object never made are ignored and change nothing.
      name: "a reply-kind frame naming calls the object never made is ignored: no answer, nothing runs",
      frames: ['\u001eR[[3,0,1],[4,3,"NOT_FOUND","x"],[5]]'],
      check: async (conn) => {
        await expectUsable(conn);
        expect(conn.replies.filter((r) => r[0] === 3 || r[0] === 4 || r[0] === 5)).toEqual([]);
      },
    },
    {
      name: "a reply-kind frame whose body is not an array closes with 1008",
      frames: ["\u001eR{}"],
      close: [1008, "reply frame's body must be an array"],
    },
    {
      name: "an unknown-kind frame without any recoverable id closes with 1008",
      frames: ["\u001eZ[]"],
      close: [1008, "unknown frame kind"],
    },

    {
      name: "an unknown frame kind carrying call envelopes is PROTOCOL per id and runs nothing",
      frames: ['\u001eZ[[1,["record",[0]]]]'],
      failed: [[1, "PROTOCOL"]],
    },
    {
      name: "a chain that is not an array, an empty chain and a 3-element envelope are PROTOCOL",
      frames: [
        calls([
          [1, "record"],
          [2, []],
          [3, ["record", [0]], "x"],
          [4, { 0: "record" }],
        ]),
      ],
      failed: [
        [1, "PROTOCOL"],
        [2, "PROTOCOL"],
        [3, "PROTOCOL"],
        [4, "PROTOCOL"],
      ],
    },
    {
      name: "a call body that is not an array of calls closes with 1008",
      frames: ['\u001eC{"1":["record",[0]]}'],
      close: [1008, "must be an array of calls"],
    },
    {
      name: "a call frame with no body closes with 1008",
      frames: ["\u001eC"],
      close: [1008, "must be an array of calls"],
    },
    {
      name: "an envelope that is not an array closes with 1008",
      frames: [calls([7])],
      close: [1008, "positive integer id"],
    },
    {
      name: "a chain of 33 steps is LIMIT (maxChainLength 32) before any step runs",
      frames: () => [call(1, "record", [0], ...Array.from({ length: 31 }, () => "x"))],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "a call with 65 arguments is LIMIT (maxArgs 64), JSON or records",
      frames: () => [
        call(1, "record", [0, ...Array.from({ length: 65 }, (_, i) => i)]),
        call(
          2,
          "record",
          recordArgs([
            [1, Array.from({ length: 65 }, () => 1)],
            [0, 0],
          ]),
        ),
      ],
      failed: [
        [1, "LIMIT"],
        [2, "LIMIT"],
      ],
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Resource exhaustion
// ---------------------------------------------------------------------------------------------

describe("resource exhaustion", () => {
  cases([
    {
      name: "a call in a frame over limits.maxMessageBytes is answered LIMIT before anything is parsed, and not run",
      binding: "TIGHT",
      frames: () => [call(1, "record", [0, "x".repeat(70_000)])],
      failed: [[1, "LIMIT"]],
    },
    {
      name: "a frame over limits.maxMessageBytes whose calls cannot be made out closes with 1009",
      binding: "TIGHT",
      frames: () => [`\u001eC[[1,${"[".repeat(70_000)}`],
      close: [1009, "exceeds limits.maxMessageBytes (65536)"],
    },
    {
      name: "more than 1,024 pending calls: the excess is LIMIT, the 1,024 complete once released",
      frames: () => [
        calls(Array.from({ length: 1024 }, (_, i) => [i + 1, ["park", [0]]])),
        calls(Array.from({ length: 8 }, (_, i) => [5000 + i, ["record", [0]]])),
      ],
      failed: Array.from({ length: 8 }, (_, i): [number, RpcErrorCode] => [5000 + i, "LIMIT"]),
      check: async (conn, name) => {
        await runInDurableObject(stubOf("VICTIM", name), (instance: Victim) => instance.release());
        const last = await conn.reply(1024, 10_000);
        expect(last).toEqual([1024]);
        expect(conn.replies.filter((r) => r.length === 1)).toHaveLength(1024);
      },
    },
    {
      // Replies settle the receiver's own calls only: a reply-kind frame naming the client's running
      // call ids must not free their slots, or maxPendingCalls would be unbounded.
      name: "a reply-kind frame naming running ids does not free pending slots: the excess is still LIMIT",
      frames: () => [
        calls(Array.from({ length: 1024 }, (_, i) => [i + 1, ["park", [0]]])),
        `\u001eR${JSON.stringify(Array.from({ length: 1024 }, (_, i) => [i + 1, 0, null]))}`,
        calls(Array.from({ length: 8 }, (_, i) => [5000 + i, ["record", [0]]])),
      ],
      failed: Array.from({ length: 8 }, (_, i): [number, RpcErrorCode] => [5000 + i, "LIMIT"]),
      check: async (conn, name) => {
        await runInDurableObject(stubOf("VICTIM", name), (instance: Victim) => instance.release());
        const replies = await conn.repliesFor(1024, 1, 10_000);
        expect(replies).toEqual([[1024]]);
      },
    },
    {
      name: "one frame of 100,000 calls closes with 1008 without running any of them",
      frames: () => [calls(Array.from({ length: 100_000 }, (_, i) => [i + 1, ["record", [0]]]))],
      close: [1008, "100000 calls, more than limits.maxPendingCalls (1024)"],
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Access options
// ---------------------------------------------------------------------------------------------

describe("access options narrow, and unsafeTrustedCaller still keeps the never-names", () => {
  cases([
    {
      name: "allow list: unlisted methods are NOT_FOUND; listed _private and ctx stay NOT_FOUND (allow never widens)",
      binding: "ALLOW_LIST",
      frames: [
        call(1, "record", [0]),
        call(2, "_private", [0]),
        call(3, "ctx", "storage", "deleteAll", [0]),
        call(4, "tools", "peek", [0]),
        call(5, "increment", [0, 1000]),
      ],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
        [5, "NOT_FOUND"],
      ],
      check: async (conn) => expect(await conn.reply(4)).toEqual([4, 0, "peek"]),
    },
    {
      name: "allow predicate: a refused path is NOT_FOUND; the built-in rules still apply to allowed paths",
      binding: "ALLOW_FN",
      frames: [call(1, "record", [0]), call(2, "tools", "peek", [0]), call(3, "constructor"), call(4, "echo", [0, "ok"])],
      failed: [
        [1, "NOT_FOUND"],
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
      ],
      check: async (conn) => expect(await conn.reply(4)).toEqual([4, 0, "ok"]),
    },
    {
      name: "unsafeTrustedCaller: ctx.storage.kv.get works; constructor, __proto__, prototype, lifecycle and Function.prototype names stay NOT_FOUND",
      binding: "TRUSTED",
      frames: [
        call(1, "ctx", "storage", "kv", "get", [0, "count"]),
        call(2, "constructor"),
        call(3, "__proto__"),
        call(4, "ctx", "storage", "constructor", "constructor", [0, "return 1"]),
        call(5, "ctx", "storage", "deleteAll", "call", [0, null]),
        call(6, "fetch", [0, "http://x/"]),
        call(7, "webSocketClose", [0, null, 1000, ""]),
        call(8, "secretField", "__proto__"),
        call(9, "record", "prototype"),
      ],
      failed: [
        [2, "NOT_FOUND"],
        [3, "NOT_FOUND"],
        [4, "NOT_FOUND"],
        [5, "NOT_FOUND"],
        [6, "NOT_FOUND"],
        [7, "NOT_FOUND"],
        [8, "NOT_FOUND"],
        [9, "NOT_FOUND"],
      ],
      check: async (conn) => expect(await conn.reply(1)).toEqual([1, 0, 7]),
    },
    {
      name: "default policy: the same ctx.storage.kv.get chain is NOT_FOUND without unsafeTrustedCaller",
      frames: [call(1, "ctx", "storage", "kv", "get", [0, "count"])],
      failed: [[1, "NOT_FOUND"]],
    },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Through the real client
// ---------------------------------------------------------------------------------------------

// biome-ignore lint/suspicious/noExplicitAny: the tests build chains the types forbid
type Loose = any;

function client(binding: Binding, name: string, query = "", headers: Record<string, string> = {}) {
  const transport = upgradeTransport(routeUrl(binding, name, query), headers);
  const c = createRpcClient<Victim>(binding, name, { transport, timeout: 10_000, reconnect: false, heartbeat: false });
  return { client: c as unknown as Loose, transport };
}

async function failure(promise: PromiseLike<unknown>, code: RpcErrorCode): Promise<RpcError> {
  let error: unknown;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  expect(error, "expected the call to reject").toBeInstanceOf(RpcError);
  expect((error as RpcError).code, (error as RpcError).message).toBe(code);
  expectNoSecret(error);
  return error as RpcError;
}

describe("the same attacks through the real client", () => {
  const attacks: [string, (c: Loose) => PromiseLike<unknown>, RpcErrorCode][] = [
    ["client.ctx.storage.deleteAll()", (c) => c.ctx.storage.deleteAll(), "NOT_FOUND"],
    ["client.env.SECRET", (c) => c.env.SECRET, "NOT_FOUND"],
    ["client.environment.SECRET", (c) => c.environment.SECRET, "NOT_FOUND"],
    ['client.constructor.constructor("return 1")()', (c) => c.constructor.constructor("return 1")(), "NOT_FOUND"],
    ["client._private()", (c) => c._private(), "NOT_FOUND"],
    ["client.storage.deleteAll()", (c) => c.storage.deleteAll(), "NOT_FOUND"],
    ["client.record.call(null)", (c) => c.record.call(null), "NOT_FOUND"],
    ["client.webSocketMessage(null, 'x')", (c) => c.webSocketMessage(null, "x"), "NOT_FOUND"],
    ["client.arrowField()", (c) => c.arrowField(), "NOT_FOUND"],
  ];
  for (const [label, attack, code] of attacks) {
    it(`${label} rejects with ${code}; the client keeps working, storage is unchanged`, async () => {
      const name = uniqueName(label);
      await seed("VICTIM", name);
      const before = await snapshot("VICTIM", name);
      const { client: c, transport } = client("VICTIM", name);
      try {
        await failure(attack(c), code);
        expect(await c.getValue()).toBe(7);
        expect(await snapshot("VICTIM", name)).toEqual(before);
        expect(await recordedCalls("VICTIM", name)).toBe(0);
        expect(transport.closes).toEqual([]);
      } finally {
        c[Symbol.dispose]();
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------------------------

describe("identity: only the routing hook can vouch for the caller", () => {
  it("a ?token= authenticated by onBeforeConnect reaches the method as rpcCaller().identity", async () => {
    const name = uniqueName("ident-alice");
    await seed("IDENT", name);
    const before = await snapshot("IDENT", name);
    const { client: c } = client("IDENT", name, "?token=token-alice");
    try {
      expect(await c.whoami()).toEqual({ user: "alice" });
      expect(await c.getValue()).toBe(7);
      expect(await snapshot("IDENT", name)).toEqual(before);
    } finally {
      c[Symbol.dispose]();
    }
  });

  it("a client-sent X-Dorpc-Identity header is stripped: anonymous without a token, the hook's identity with one", async () => {
    const name = uniqueName("ident-forged");
    await seed("IDENT", name);
    const before = await snapshot("IDENT", name);
    const forged = { "X-Dorpc-Identity": JSON.stringify({ user: "admin" }) };
    const anonymous = client("IDENT", name, "", forged);
    const withToken = client("IDENT", name, "?token=token-bob", forged);
    try {
      expect(await anonymous.client.whoami()).toBeNull();
      expect(await withToken.client.whoami()).toEqual({ user: "bob" });
      expect(await anonymous.client.getValue()).toBe(7);
      expect(await snapshot("IDENT", name)).toEqual(before);
    } finally {
      anonymous.client[Symbol.dispose]();
      withToken.client[Symbol.dispose]();
    }
  });

  it("an unknown token gets 401 from the hook and no socket", async () => {
    const name = uniqueName("ident-bad");
    await seed("IDENT", name);
    const before = await snapshot("IDENT", name);
    const response = await SELF.fetch(routeUrl("IDENT", name, "?token=nope"), {
      headers: { Upgrade: "websocket", "X-Dorpc-Identity": JSON.stringify({ user: "admin" }) },
    });
    expect(response.status).toBe(401);
    expect(response.webSocket).toBeNull();
    expectNoSecret(await response.text());
    expect(await snapshot("IDENT", name)).toEqual(before);
  });

  it("the identity survives evictDurableObject (it lives in the socket attachment)", async () => {
    const name = uniqueName("ident-evict");
    await seed("IDENT", name);
    const before = await snapshot("IDENT", name);
    const conn = await openRaw(routeUrl("IDENT", name, "?token=token-alice"));
    try {
      conn.send(call(1, "whoami", [0]));
      expect(await conn.reply(1)).toEqual([1, 0, { user: "alice" }]);
      await evictDurableObject(stubOf("IDENT", name));
      conn.send(call(2, "whoami", [0]));
      expect(await conn.reply(2)).toEqual([2, 0, { user: "alice" }]);
      await expectUsable(conn);
      expect(await snapshot("IDENT", name)).toEqual(before);
      expectNoSecret(...conn.texts);
    } finally {
      conn.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Origin allowlist
// ---------------------------------------------------------------------------------------------

describe("Origin allowlist (cross-site WebSocket hijacking)", () => {
  it("an upgrade from https://evil.example gets 403 and no socket; nothing reaches the object", async () => {
    const name = uniqueName("origin-evil");
    await seed("VICTIM", name);
    const before = await snapshot("VICTIM", name);
    const response = await SELF.fetch(routeUrl("VICTIM", name), { headers: { Upgrade: "websocket", Origin: "https://evil.example" } });
    expect(response.status).toBe(403);
    expect(response.webSocket).toBeNull();
    const body = await response.text();
    expect(body).toContain("https://evil.example");
    expectNoSecret(body);
    expect(await snapshot("VICTIM", name)).toEqual(before);
  });

  it("look-alike origins (other scheme, port, subdomain, trailing slash) get 403 too", async () => {
    const name = uniqueName("origin-lookalike");
    for (const origin of [
      "http://good.example",
      "https://good.example:8443",
      "https://evil.good.example",
      "https://good.example.evil.example",
      "null",
    ]) {
      const response = await SELF.fetch(routeUrl("VICTIM", name), { headers: { Upgrade: "websocket", Origin: origin } });
      expect(response.status, origin).toBe(403);
      expect(response.webSocket).toBeNull();
      await response.text();
    }
  });

  it("an upgrade from https://good.example works", async () => {
    const name = uniqueName("origin-good");
    await seed("VICTIM", name);
    const before = await snapshot("VICTIM", name);
    const conn = await openRaw(routeUrl("VICTIM", name), { Origin: "https://good.example" });
    try {
      await expectUsable(conn);
      expect(await snapshot("VICTIM", name)).toEqual(before);
      expectNoSecret(...conn.texts);
    } finally {
      conn.close();
    }
  });
});

describe("notifications", () => {
  it("a zero call id is a notification: it runs once, under the same rules, and is never answered", async () => {
    const name = uniqueName("notification");
    await seed("VICTIM", name);
    const conn = await openRaw(routeUrl("VICTIM", name));
    try {
      conn.send(calls([[0, ["record", [0]]]]));
      conn.send(calls([[0, ["env", "SECRET"]]]));
      await expectUsable(conn);
      expect(conn.replies.filter((r) => r[0] === 0)).toEqual([]);
      expect(await recordedCalls("VICTIM", name)).toBe(1);
      expectNoSecret(...conn.texts);
    } finally {
      conn.close();
    }
  });
});

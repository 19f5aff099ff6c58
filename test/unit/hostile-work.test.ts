/**
 * A hostile client (raw frames) against the server's newer paths: the work of cancels and of
 * pipelined arguments stays linear, platform state held in errors is refused, and EXPIRED
 * answers are written as one batch. The real dispatcher (and a real DeliveryRecord on
 * node:sqlite) fed raw frames through the paired transport's `inject`.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TransportHandler } from "../../packages/rpc/src/index.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith, type PairedConnection } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

const MARK = "\u001e";
const callsFrame = (body: unknown): string => `${MARK}C${JSON.stringify(body)}`;
const helloFrame = (session: string, resending: 0 | 1, age?: number): string =>
  `${MARK}H${JSON.stringify(age === undefined ? [session, resending] : [session, resending, age])}`;
const SESSION = "hostileWorkSession0000";

/** A server connection with no client: frames go in with `inject`, replies are collected. */
function serverOnly(target: object, records?: DeliveryRecord): { conn: PairedConnection; received: string[] } {
  const paired = pairWith(target, undefined, records ? { records } : {});
  const received: string[] = [];
  const handler: TransportHandler = {
    onMessage: (data) => void received.push(typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer)),
    onClose: () => {},
  };
  void paired.factory(handler).open();
  return { conn: paired.connections[0]!, received };
}

function recordOf() {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery({})!, writes);
  return { sql, records };
}

/** Counts `next()` calls of Map iterators (for…of over a Map) while `fn` runs. */
function countMapSteps(fn: () => void): number {
  const proto = Object.getPrototypeOf(new Map().entries()) as { next: () => unknown };
  const original = proto.next;
  let steps = 0;
  proto.next = function (this: unknown) {
    steps++;
    return original.call(this);
  };
  try {
    fn();
  } finally {
    proto.next = original;
  }
  return steps;
}

/** Counts `next()` calls of Array iterators (for…of over an array) while `fn` runs. */
function countArraySteps(fn: () => void): number {
  const proto = Object.getPrototypeOf([][Symbol.iterator]()) as { next: () => unknown };
  const original = proto.next;
  let steps = 0;
  proto.next = function (this: unknown) {
    steps++;
    return original.call(this);
  };
  try {
    fn();
  } finally {
    proto.next = original;
  }
  return steps;
}

class Parker {
  parked = 0;
  /** Never settles: a recorded call that stays running. */
  park(): Promise<void> {
    this.parked++;
    return new Promise<void>(() => {});
  }
  /** A plain result of `n` numbers. */
  numbers(n: number): number[] {
    return Array.from({ length: n }, (_, i) => i);
  }
  /** How many items its argument has (the reply stays small). */
  size(v: unknown[]): number {
    return v.length;
  }
  getValue(): number {
    return 0;
  }
}

afterEach(async () => {
  await settle();
});

describe("a cancel frame's work (delivery-running.ts)", () => {
  // a cancel of N ids costs O(N) (docs/security.md: "a hostile frame costs bounded memory and
  // work"; every other per-id path of a cancel is a Map lookup). Found: for each id not running on
  // this connection, ServerCallee.cancel calls records.cancel(session, id), and RunningCalls.cancel
  // walks EVERY running call of the session to find that one id. With the session's 1,024 parked
  // calls (one connection's maxPendingCalls) a cancel frame of N made-up ids costs N × 1,024 steps:
  // a 1 MiB frame of "7," is ~500,000 ids → ~5 × 10^8 steps. The cancel frame's length is bounded
  // by nothing but maxMessageBytes (32 MiB).
  it("a cancel frame of 2,000 made-up ids with 1,024 recorded calls running walks the running calls once per id", async () => {
    const { records } = recordOf();
    const target = new Parker();
    const { conn } = serverOnly(target, records);
    conn.inject(helloFrame(SESSION, 0));
    conn.inject(callsFrame(Array.from({ length: 1024 }, (_, i) => [i + 1, ["park", [0]]])));
    // The frame's calls start one turn apart once the first awaits (call-turns.ts).
    await vi.waitFor(() => expect(target.parked).toBe(1024));
    const ids = Array.from({ length: 2000 }, () => 999_999);
    const steps = countMapSteps(() => conn.inject(`${MARK}K${JSON.stringify(ids)}`));
    // Linear would be a few steps per id at most (plus one walk of the running calls).
    expect(steps, `Map iterator steps for a cancel of ${ids.length} ids`).toBeLessThanOrEqual(4 * ids.length + 1024);
  });
});

describe("pipelined arguments checked for platform state (callee-references.ts)", () => {
  // a frame's work is bounded by its size (docs/security.md: "a hostile frame costs bounded memory
  // and work"; maxNodes bounds "values decoded from one frame"). Found: each PIPELINE record of an
  // argument table runs heldForbidden over the WHOLE result it names (ArgumentRefs.build →
  // heldForbidden, a fresh `seen` set per record), so K pipeline records naming one result of S
  // items cost K × S steps: call 1 = numbers(S), call 2 = size([P1, P1, …]) with K distinct
  // PIPELINE records. With S = K = 500,000 (within maxNodes of one frame, a few MB of text) that is
  // 2.5 × 10^11 steps; before the check a pipeline record cost O(1).
  it("2,000 pipeline records naming one result of 2,000 items walk that result 2,000 times", async () => {
    const target = new Parker();
    const { conn, received } = serverOnly(target);
    conn.inject(helloFrame(SESSION, 0));
    const S = 2000;
    const K = 2000;
    // Record table of call 2's argument list: [ [P1, P1, …] ] — record 0 the argument list, record
    // 1 the array, records 2..K+1 PIPELINE [1] (each its own record).
    const table: unknown[] = [[1, [1]], [1, Array.from({ length: K }, (_, i) => i + 2)], ...Array.from({ length: K }, () => [30, [1]])];
    const frame = callsFrame([
      [1, ["numbers", [0, S]]],
      [2, ["size", [1, table]]],
    ]);
    const steps = countArraySteps(() => conn.inject(frame));
    await settle();
    expect(received.join("")).toContain(`[2,0,${K}]`); // the call itself is fine
    // Linear in the frame: a generous constant per node of the frame and of the result.
    expect(steps, `Array iterator steps for one frame of ${K} pipeline records on ${S} items`).toBeLessThanOrEqual(50 * (S + K));
  });
});

describe("EXPIRED answers of a forgotten session (delivery.ts decide)", () => {
  // (docs/reliability.md, Rows written: "calls that write storage: one row per incoming frame of
  // them … calls that wrote nothing: one row per burst"; delivery.ts: the answers of a frame are
  // written together): the EXPIRED answers a frame of resends of a forgotten session gets are
  // written together. Found: decide() saves each EXPIRED answer with `save(…)` while no run of the
  // call is registered, so `save` flushes at once: one INSERT into _dorpc_replies (a billed row
  // write) per refused resend. A hostile client (a resending hello of a made-up session) makes the
  // object write 1,024 rows per ~30 KB frame, and a real client back after maxAge writes one row
  // per call it resends.
  it("a frame of 200 resends of a made-up session writes its 200 EXPIRED answers as one batch row", async () => {
    const { sql, records } = recordOf();
    const { conn, received } = serverOnly(new Parker(), records);
    conn.inject(helloFrame(SESSION, 1)); // resending, no age: unknown → expired session
    const before = sql.statements.filter((q) => q.startsWith("INSERT INTO _dorpc_replies")).length;
    conn.inject(callsFrame(Array.from({ length: 200 }, (_, i) => [i + 1, ["getValue", [0]], 0, 1])));
    await settle();
    expect(received.join("")).toContain('"EXPIRED"');
    const inserts = sql.statements.filter((q) => q.startsWith("INSERT INTO _dorpc_replies")).length - before;
    expect(inserts, "INSERT statements into _dorpc_replies for one frame of 200 refused resends").toBeLessThanOrEqual(2);
  });
});

class WithEnv {
  /** As a Durable Object keeps it: platform state, never sent and never passed on. */
  readonly env = { SECRET: "s3cr3t", BUCKET: { name: "bucket-binding" } };
  ran = 0;
  /** An app slip: a result that holds env (a round trip refuses it with ENCODE). */
  plainOops(): unknown {
    return { config: this.env };
  }
  errorOops(): unknown {
    return new Error("config failed", { cause: this.env });
  }
  errorPropOops(): unknown {
    return Object.assign(new Error("config failed"), { config: this.env });
  }
  kindOf(v: unknown): string {
    this.ran++;
    return Object.prototype.toString.call(v);
  }
}

describe("a pipelined result holding env inside an Error (callee-references.ts heldForbidden)", () => {
  // (docs/security.md "References are capabilities": "a pipelined result passed as an argument that
  // is or holds what a result may not carry (the object, its env, its ctx and what they hold) is
  // refused with ENCODE before the method runs"; a round trip of such an Error is ENCODE,
  // protocol.md: "anywhere in a result"). Found: heldForbidden steps only into plain objects,
  // arrays, Maps and Sets, so an Error whose cause (or own property) is env is passed on to the
  // method as is: the method runs and holds env. (Control: the same env in a plain object is
  // refused.)
  for (const method of ["errorOops", "errorPropOops"] as const) {
    it(`${method}(): its result pipelined into kindOf() is refused with ENCODE before kindOf runs`, async () => {
      const target = new WithEnv();
      const { conn, received } = serverOnly(target);
      conn.inject(helloFrame(SESSION, 0));
      // Control: a round trip of the result is ENCODE.
      conn.inject(callsFrame([[9, [method, [0]]]]));
      conn.inject(
        callsFrame([
          [1, [method, [0]]],
          [
            2,
            [
              "kindOf",
              [
                1,
                [
                  [1, [1]],
                  [30, [1]],
                ],
              ],
            ],
          ],
        ]),
      );
      conn.inject(
        callsFrame([
          [3, ["plainOops", [0]]],
          [
            4,
            [
              "kindOf",
              [
                1,
                [
                  [1, [1]],
                  [30, [3]],
                ],
              ],
            ],
          ],
        ]),
      );
      await settle();
      const text = received.join("");
      expect(text).toMatch(/\[9,3,"ENCODE"/); // a round trip refuses it
      expect(text).toMatch(/\[4,3,"ENCODE"/); // plain data holding env: refused as an argument
      expect(text, "call 2 (pipelined Error holding env)").toMatch(/\[2,3,"ENCODE"/);
      expect(target.ran).toBe(0);
    });
  }
});

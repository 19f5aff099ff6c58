/**
 * Acknowledged answers (docs/protocol.md "Acknowledged answers"): a client with an exactly-once
 * session says, in the `answered` field of the calls it sends, below which id it has had every
 * reply; the object's delivery record then keeps only markers for those answers still waiting in
 * memory. The record alone on Node's SQLite (fake clock), then a real client and dispatcher.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, withCallOptions } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { CallFlags, FrameKind } from "../../packages/rpc/src/envelopes.js";
import { writeFrame } from "../../packages/rpc/src/frame.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { type NodeSql, nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRpcError, settle } from "./helpers.js";

const A = "AAAAAAAAAAAAAAAAAAAAAA";
const B = "BBBBBBBBBBBBBBBBBBBBBB";
const BIG = "x".repeat(64 * 1024);

/** The frame that carries answer `id` (a text reply of `value`). */
const reply = (id: number, value: string) => `\u001eR[[${id},0,${JSON.stringify(value)}]]`;

/** Bytes of answers stored, and how many answers, over every batch row. */
function stored(sql: NodeSql, session?: string): { bytes: number; answers: number } {
  const rows = (
    session
      ? sql.exec("SELECT ids, frames FROM _dorpc_replies WHERE session = ?", session)
      : sql.exec("SELECT ids, frames FROM _dorpc_replies")
  ).toArray();
  return {
    bytes: rows.reduce((n, row) => n + (row.frames as ArrayBuffer).byteLength, 0),
    answers: rows.reduce((n, row) => n + (JSON.parse(row.ids as string) as unknown[]).length, 0),
  };
}

/** Statements that wrote answers. */
function writes(sql: NodeSql): number {
  return sql.statements.filter((query) => query.startsWith("INSERT INTO _dorpc_replies")).length;
}

function record() {
  const sql = nodeSql();
  const watch = watchWrites({ sql });
  const records = new DeliveryRecord(watch.sql, resolveDelivery({})!, watch);
  records.hello(A, false);
  /** Call `id` of `session` ran, wrote nothing, and answered `value`. */
  const answer = (id: number, value = BIG, session = A) => {
    expect(records.decide(session, id, 0, true, false)).toEqual({ kind: "run", record: true });
    records.started(session, id);
    records.save(session, id, reply(id, value), true);
  };
  return { sql, records, answer };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the delivery record keeps markers for acknowledged answers", () => {
  it("an acknowledged 64 KiB answer is written as a marker; an unacknowledged one whole", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, records, answer } = record();
    for (const id of [1, 2, 3]) answer(id);
    records.acknowledge(A, 3); // the client has had the replies of 1 and 2
    vi.advanceTimersByTime(10); // quiet: the rows are written
    expect(stored(sql)).toEqual({ answers: 3, bytes: new TextEncoder().encode(reply(3, BIG)).byteLength });
    // A copy of an acknowledged call is refused and not run; the unacknowledged one is answered.
    const copy = records.decide(A, 1, CallFlags.Retry, true, false);
    expect(copy).toMatchObject({ kind: "refuse", error: { code: "DISCONNECTED" } });
    expect((copy as { error: Error }).error.message).toContain("acknowledged");
    expect(records.decide(A, 3, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: reply(3, BIG) });
  });

  it("large answers acknowledged one by one never force a write in the middle of a burst", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, records, answer } = record();
    // 40 × 64 KiB: without acknowledgements 1 MiB of waiting answers writes them at once (16 calls).
    for (let id = 1; id <= 40; id++) {
      if (id > 1) records.acknowledge(A, id); // each call acknowledges the one before it
      answer(id);
      vi.advanceTimersByTime(1); // the object stays busy
    }
    expect(writes(sql)).toBe(0);
    vi.advanceTimersByTime(10);
    expect(writes(sql)).toBe(1);
    expect(stored(sql).answers).toBe(40);
    expect(stored(sql).bytes).toBe(new TextEncoder().encode(reply(40, BIG)).byteLength);
  });

  it("without acknowledgements the same burst writes its answers whole (the control)", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, answer } = record();
    for (let id = 1; id <= 40; id++) {
      answer(id);
      vi.advanceTimersByTime(1);
    }
    expect(writes(sql)).toBeGreaterThan(0);
    vi.advanceTimersByTime(10);
    expect(stored(sql).bytes).toBeGreaterThan(40 * 64 * 1024);
  });

  it("an acknowledgement covers its own session only, and only ids below it", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, records, answer } = record();
    records.hello(B, false);
    answer(1, "a1");
    answer(1, "b1", B);
    answer(2, "a2");
    records.acknowledge(A, 2);
    vi.advanceTimersByTime(10);
    expect(records.decide(B, 1, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: reply(1, "b1") });
    expect(records.decide(A, 2, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: reply(2, "a2") });
    expect(records.decide(A, 1, CallFlags.Retry, true, false)).toMatchObject({ kind: "refuse" });
    expect(stored(sql, B).bytes).toBe(reply(1, "b1").length);
  });

  it("rows already written keep their answers: an acknowledgement after the write changes nothing", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, records, answer } = record();
    answer(1, "one");
    vi.advanceTimersByTime(10);
    records.acknowledge(A, 2);
    expect(records.decide(A, 1, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: reply(1, "one") });
    expect(writes(sql)).toBe(1);
  });

  it("a late copy of an acknowledged call (no Retry flag, an HTTP request overtaken) is refused, not run", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { records, answer } = record();
    answer(1, "one");
    answer(2, "two");
    records.acknowledge(A, 3);
    vi.advanceTimersByTime(10);
    expect(records.decide(A, 1, 0, true, false)).toMatchObject({ kind: "refuse", error: { code: "DISCONNECTED" } });
  });
});

class Api {
  gate: (() => void) | undefined;
  big(): string {
    return BIG;
  }
  slow(): Promise<string> {
    return new Promise((resolve) => (this.gate = () => resolve("slow")));
  }
  fast(): string {
    return "fast";
  }
}

/** The envelopes of a calls frame as sent. */
function envelopes(frame: string | Uint8Array): unknown[][] {
  return JSON.parse((frame as string).slice(2)) as unknown[][];
}

function client(target = new Api()) {
  const sql = nodeSql();
  const watch = watchWrites({ sql });
  const records = new DeliveryRecord(watch.sql, resolveDelivery({})!, watch);
  const paired = pairWith(target, undefined, { records });
  const rpc = createRpcClient<Api>("A", "ack", { transport: paired.factory, heartbeat: false, timeout: 0 });
  return { sql, target, paired, rpc };
}

describe("the client says which replies it has had", () => {
  it("sequential calls each acknowledge the one before; the object stores one 64 KiB answer, not ten", async () => {
    const { sql, paired, rpc } = client();
    using _ = rpc;
    for (let i = 0; i < 10; i++) expect(await rpc.big()).toBe(BIG);
    const sent = paired.connections[0]!.sentByClient.map(envelopes);
    expect(sent[0]).toEqual([[1, ["big", [0]]]]); // nothing below 1
    for (let i = 1; i < 10; i++) expect(sent[i]).toEqual([[i + 1, ["big", [0]], 0, 0, i + 1]]);
    await new Promise((resolve) => setTimeout(resolve, 30)); // quiet: the rows are written
    expect(stored(sql)).toEqual({ answers: 10, bytes: new TextEncoder().encode(reply(10, BIG)).byteLength });
  });

  it("with a call still waiting, `answered` stays at its id; once it is given up, the next call moves past it", async () => {
    const { paired, rpc, target } = client();
    using _ = rpc;
    await rpc.fast(); // call 1
    const slow = withCallOptions(rpc.slow(), { timeout: 50 }); // call 2, will be given up
    const caught = slow.catch((error: unknown) => error);
    await settle();
    expect(await rpc.fast()).toBe("fast"); // call 3: 2 still waits
    expect(await rpc.fast()).toBe("fast"); // call 4: nothing new to say
    expectRpcError(await caught, "TIMEOUT");
    expect(await rpc.fast()).toBe("fast"); // call 5: 2 to 4 are done
    target.gate?.();
    const calls = new Map(
      paired.connections[0]!.sentByClient.flatMap((frame) => (String(frame).startsWith("\u001eC") ? envelopes(frame) : [])).map((e) => [
        e[0],
        e,
      ]),
    );
    expect(calls.get(2)).toEqual([2, ["slow", [0]], 0, 0, 2]);
    expect(calls.get(3)).toEqual([3, ["fast", [0]]]);
    expect(calls.get(4)).toEqual([4, ["fast", [0]]]);
    expect(calls.get(5)).toEqual([5, ["fast", [0]], 0, 0, 5]);
  });
});

describe("a hostile `answered` is refused with the call", () => {
  for (const answered of ["0", "-1", "1.5", '"3"', "null", "4"]) {
    it(`[3, chain, 0, 0, ${answered}]: PROTOCOL, the method does not run`, async () => {
      const target = new Api();
      let ran = 0;
      target.fast = () => String(++ran);
      const { paired, rpc } = client(target);
      using _ = rpc;
      await rpc.big(); // opens the connection (and the session)
      const conn = paired.connections[0]!;
      const before = conn.sentByServer.length;
      conn.inject(`\u001eC[[3,["fast",[0]],0,0,${answered}]]`);
      await settle();
      const replies = conn.sentByServer.slice(before).map((frame) => JSON.parse((frame as string).slice(2)) as unknown[][]);
      expect(replies).toEqual([[[3, 3, "PROTOCOL", "A call's answered must be an integer from 1 to the call's id."]]]);
      expect(ran).toBe(0);
    });
  }

  it("a valid `answered` on an injected call is taken (the call runs)", async () => {
    const { paired, rpc } = client();
    using _ = rpc;
    await rpc.big();
    const conn = paired.connections[0]!;
    const before = conn.sentByServer.length;
    conn.inject('\u001eC[[3,["fast",[0]],0,0,3]]');
    await settle();
    expect(conn.sentByServer.slice(before)).toEqual(['\u001eR[[3,0,"fast"]]']);
  });
});

describe("a text answer that may or may not fit maxResultBytes is measured when it is written", () => {
  // Its length is between a third of the limit and the limit: only its UTF-8 size tells, and
  // counting that per call cost as much as the call (a 64 KiB answer); most are acknowledged first.
  function small(max: number) {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const sql = nodeSql();
    const watch = watchWrites({ sql });
    const records = new DeliveryRecord(watch.sql, resolveDelivery({ maxResultBytes: max })!, watch);
    records.hello(A, false);
    return { sql, records };
  }

  it("two-byte characters past the limit: a marker (the resend is told it ran); ASCII of the same length: kept", () => {
    const { records } = small(1000);
    const wide = reply(1, "é".repeat(600)); // about 1,200 bytes of UTF-8 in 612 characters
    const narrow = reply(2, "e".repeat(600));
    for (const [id, frame] of [
      [1, wide],
      [2, narrow],
    ] as const) {
      records.decide(A, id, 0, true, false);
      records.started(A, id);
      records.save(A, id, frame, true);
    }
    vi.advanceTimersByTime(10);
    expect(records.decide(A, 1, CallFlags.Retry, true, false)).toMatchObject({ kind: "refuse", error: { code: "DISCONNECTED" } });
    expect(records.decide(A, 2, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: narrow });
  });

  it("dorpc's own refusal past the limit is kept short, measured at the write too", () => {
    const { records } = small(1000);
    const refusal = `\u001eR[${JSON.stringify([1, 3, "BAD_REQUEST", "é".repeat(600)])}]`;
    records.decide(A, 1, 0, true, false);
    records.started(A, 1);
    records.save(A, 1, refusal, "always");
    vi.advanceTimersByTime(10);
    const decision = records.decide(A, 1, CallFlags.Retry, true, false) as { kind: string; frame: string };
    expect(decision.kind).toBe("replay");
    expect(decision.frame.startsWith('\u001eR[[1,3,"BAD_REQUEST","éé')).toBe(true);
    expect(new TextEncoder().encode(decision.frame).byteLength).toBeLessThanOrEqual(1000);
  });
});

describe("a binary answer is handed to the record unbuilt, and built only if it is written", () => {
  const json = '[[1,0,[4,["Uint8Array",0]]]]';
  const bytes = (n: number) => [Uint8Array.from({ length: n }, (_, i) => i % 251)];

  it("written: the stored frame is the one the reply was sent as; acknowledged: nothing is built or stored", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { sql, records } = record();
    for (const id of [1, 2]) {
      records.decide(A, id, 0, true, false);
      records.started(A, id);
      records.save(A, id, { json: json.replace("[[1,", `[[${id},`), blobs: bytes(1024) }, true);
    }
    records.acknowledge(A, 2);
    vi.advanceTimersByTime(10);
    const sent = writeFrame(FrameKind.Replies, json.replace("[[1,", "[[2,"), bytes(1024)) as Uint8Array;
    expect(records.decide(A, 2, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame: sent });
    expect(stored(sql).bytes).toBe(sent.byteLength);
  });

  it("one whose largest possible size passes maxResultBytes is built at once and measured exactly", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const sql = nodeSql();
    const watch = watchWrites({ sql });
    const frame = writeFrame(FrameKind.Replies, json, bytes(1000)) as Uint8Array;
    // The limit is the frame's exact size: the bound (3 bytes a JSON character) passes it.
    const records = new DeliveryRecord(watch.sql, resolveDelivery({ maxResultBytes: frame.byteLength })!, watch);
    records.hello(A, false);
    records.decide(A, 1, 0, true, false);
    records.started(A, 1);
    records.save(A, 1, { json, blobs: bytes(1000) }, true);
    vi.advanceTimersByTime(10);
    expect(records.decide(A, 1, CallFlags.Retry, true, false)).toEqual({ kind: "replay", frame });
  });
});

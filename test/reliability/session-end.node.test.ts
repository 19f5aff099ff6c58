/**
 * A session that ends: a disposed client closes its socket with 4002 (`CloseCode.SessionEnded`),
 * and the object's delivery record lets go of what it kept of that session only to answer a
 * resend — its answers and its row still waiting in memory — without writing them. A cut (any
 * other code) keeps them. On Node's SQLite, with the real client over a paired transport.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { WaitingAnswers } from "../../packages/rpc/src/delivery-waiting.js";
import { NOT_KEPT } from "../../packages/rpc/src/delivery-batches.js";
import { CloseCode } from "../../packages/rpc/src/envelopes.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { faulty } from "./fault-transport.js";
import { Service } from "./service.js";

const SESSION = "AAAAAAAAAAAAAAAAAAAAAA";
const OTHER = "BBBBBBBBBBBBBBBBBBBBBB";

/** A record watching its storage (rows of calls that wrote nothing wait in memory), as in workerd. */
function watchedRecord() {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery({ flushAfter: 60_000 })!, writes);
  return { sql, records, writes: () => sql.statements.filter((q) => !q.startsWith("SELECT")) };
}

/** Call `id` of `session` decided, run and answered with `value`; it wrote nothing. */
function answer(records: DeliveryRecord, session: string, id: number, value: number): void {
  expect(records.decide(session, id, 0, true, false)).toMatchObject({ kind: "run", record: true });
  records.started(session, id);
  records.save(session, id, `\u001eR[[${id},0,${value}]]`, true);
}

/** Answers recorded for `session` (0 when the tables were never made). */
function answers(sql: ReturnType<typeof nodeSql>, session: string): number {
  try {
    return sql.exec("SELECT coalesce(sum(json_array_length(ids)), 0) AS n FROM _dorpc_replies WHERE session = ?", session).toArray()[0]!
      .n as number;
  } catch {
    return 0;
  }
}

function sessionRows(sql: ReturnType<typeof nodeSql>, session: string): number {
  try {
    return sql.exec("SELECT count(*) AS n FROM _dorpc_sessions WHERE session = ?", session).toArray()[0]!.n as number;
  } catch {
    return 0;
  }
}

describe("the delivery record when a session ends", () => {
  it("writes nothing of a session that ended before its rows were written: no answers, no session row, no tables", () => {
    const t = watchedRecord();
    t.records.hello(SESSION, false, undefined, true);
    for (let id = 1; id <= 3; id++) answer(t.records, SESSION, id, id * 10);
    t.records.ended(SESSION);
    t.records.flush(); // what a storage write or the timer would do
    expect(t.writes()).toEqual([]);
    expect(answers(t.sql, SESSION)).toBe(0);
  });

  it("without the end (a cut), the same rows are written: the session row and one batch of three answers", () => {
    const t = watchedRecord();
    t.records.hello(SESSION, false, undefined, true);
    for (let id = 1; id <= 3; id++) answer(t.records, SESSION, id, id * 10);
    t.records.flush();
    expect(answers(t.sql, SESSION)).toBe(3);
    expect(sessionRows(t.sql, SESSION)).toBe(1);
  });

  it("keeps the other sessions' waiting rows, and writes them", () => {
    const t = watchedRecord();
    t.records.hello(SESSION, false, undefined, true);
    t.records.hello(OTHER, false, undefined, true);
    answer(t.records, SESSION, 1, 1);
    answer(t.records, OTHER, 1, 2);
    answer(t.records, SESSION, 2, 3);
    answer(t.records, OTHER, 2, 4);
    t.records.ended(SESSION);
    t.records.flush();
    expect(answers(t.sql, SESSION)).toBe(0);
    expect(sessionRows(t.sql, SESSION)).toBe(0);
    expect(answers(t.sql, OTHER)).toBe(2);
    expect(sessionRows(t.sql, OTHER)).toBe(1);
  });

  it("leaves the rows it had written already; an answer that comes after the end is recorded as before", () => {
    const t = watchedRecord();
    t.records.hello(SESSION, false, undefined, true);
    answer(t.records, SESSION, 1, 1);
    t.records.flush();
    answer(t.records, SESSION, 2, 2);
    t.records.started(SESSION, 3); // still running when the client leaves
    t.records.ended(SESSION);
    t.records.save(SESSION, 3, "\u001eR[[3,0,3]]", true);
    t.records.flush();
    // Call 1 was written before the end, call 2 waited and was dropped, call 3 answered after it.
    expect(answers(t.sql, SESSION)).toBe(2);
    const ids = t.sql.exec("SELECT ids FROM _dorpc_replies WHERE session = ?", SESSION).toArray();
    expect(ids.flatMap((row) => (JSON.parse(row.ids as string) as [number][]).map(([id]) => id))).toEqual([1, 3]);
  });
});

describe("WaitingAnswers.drop", () => {
  it("takes out one session's rows, keeps the others in order, and keeps the byte count of what is left", () => {
    const waiting = new WaitingAnswers();
    const row = (session: string, id: number, size: number) => ({ session, id, stored: `x${id}`, size });
    waiting.add(row(SESSION, 1, 100));
    waiting.add(row(OTHER, 1, 7));
    waiting.add(row(SESSION, 2, 50));
    waiting.add({ session: SESSION, id: 3, stored: NOT_KEPT, size: 0 });
    waiting.add(row(OTHER, 2, 5));
    expect(waiting.bytes).toBe(162);
    waiting.drop(SESSION);
    expect(waiting.count).toBe(2);
    expect(waiting.bytes).toBe(12);
    waiting.acknowledge(SESSION, 10); // nothing of it is held any more
    expect(waiting.bytes).toBe(12);
    expect(waiting.take().map((r) => [r.session, r.id])).toEqual([
      [OTHER, 1],
      [OTHER, 2],
    ]);
  });
});

describe("a disposed client ends its session", () => {
  it("closes with 4002, and the object writes nothing of a session that made its calls and left", async () => {
    const t = watchedRecord();
    const faults = faulty(new Service(), undefined, { records: t.records });
    const client = createRpcClient<Service>("SERVICE", "one", { heartbeat: false, transport: faults.factory });
    expect(await client.echo(1)).toBe(1);
    expect(await client.echo(2)).toBe(2);
    client[Symbol.dispose]();
    expect(faults.last.closed?.[0]).toBe(CloseCode.SessionEnded);
    t.records.flush(); // what a storage write or the timer would do
    expect(t.writes()).toEqual([]);
  });

  it("a cut instead keeps them: the same calls, the connection dropped, and the rows are written", async () => {
    const t = watchedRecord();
    const faults = faulty(new Service(), undefined, { records: t.records });
    using client = createRpcClient<Service>("SERVICE", "one", { heartbeat: false, reconnect: false, transport: faults.factory });
    expect(await client.echo(1)).toBe(1);
    expect(await client.echo(2)).toBe(2);
    faults.last.paired.cut();
    t.records.flush();
    expect(t.writes().length).toBeGreaterThan(0);
    expect(t.sql.exec("SELECT coalesce(sum(json_array_length(ids)), 0) AS n FROM _dorpc_replies").toArray()[0]!.n).toBe(2);
  });
});

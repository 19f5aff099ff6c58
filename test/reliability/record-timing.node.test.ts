/**
 * When the delivery record writes the rows of calls that wrote nothing (packages/rpc/src/delivery.ts):
 * once the object has answered no recorded call for `flushAfter` ms, after at most a second of
 * unbroken traffic, or at once when 4,096 rows wait. The record alone on Node's SQLite, with
 * fake timers and clock, so every moment is exact.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { type NodeSql, nodeSql } from "../support/node-sql.js";

const SESSION = "AAAAAAAAAAAAAAAAAAAAAA";

/** Answers written so far, whatever batch rows they came in. */
function answersWritten(sql: NodeSql): number {
  return sql.log
    .filter((entry) => entry.query.startsWith("INSERT INTO _dorpc_replies"))
    .reduce((n, entry) => n + (JSON.parse(entry.bindings[3] as string) as unknown[]).length, 0);
}

function record(flushAfter?: number) {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(flushAfter === undefined ? {} : { flushAfter })!, writes);
  records.hello(SESSION, false);
  let id = 0;
  /** One recorded call that wrote nothing answers now. */
  const answer = () => {
    id++;
    records.started(SESSION, id);
    records.save(SESSION, id, `\u001eR[[${id},0,${id}]]`, true);
  };
  return { sql, records, answer, written: () => answersWritten(sql) };
}

// Every test here runs on a fake clock.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the rows of calls that wrote nothing", () => {
  it("are written once no recorded call has answered for flushAfter ms (default 10), not flushAfter ms after the first", () => {
    const t = record();
    t.answer(); // t = 0
    vi.advanceTimersByTime(8);
    t.answer(); // t = 8: the object is busy
    vi.advanceTimersByTime(9); // t = 17: the first row has waited 17 ms, but the object answered 9 ms ago
    expect(t.written()).toBe(0);
    vi.advanceTimersByTime(1); // t = 18: quiet for 10 ms
    expect(t.written()).toBe(2);
    // The next burst waits again, in one batch row.
    t.answer();
    t.answer();
    vi.advanceTimersByTime(9);
    expect(t.written()).toBe(2);
    vi.advanceTimersByTime(1);
    expect(t.written()).toBe(4);
  });

  it("under unbroken traffic are written after at most one second, then wait again", () => {
    const t = record(10);
    for (let ms = 0; ms < 995; ms += 5) {
      t.answer();
      vi.advanceTimersByTime(5);
    }
    expect(t.written()).toBe(0); // t = 995: 199 calls, never 10 ms apart
    t.answer(); // t = 995
    vi.advanceTimersByTime(5); // t = 1000: the first row has waited a second
    expect(t.written()).toBe(200);
    t.answer();
    vi.advanceTimersByTime(9);
    expect(t.written()).toBe(200);
    vi.advanceTimersByTime(1);
    expect(t.written()).toBe(201);
  });

  it("with flushAfter longer than a second, that is also the longest wait", () => {
    const t = record(5_000);
    for (let ms = 0; ms < 4_000; ms += 100) {
      t.answer();
      vi.advanceTimersByTime(100);
    }
    expect(t.written()).toBe(0); // t = 4,000: busy, and under flushAfter
    t.answer();
    vi.advanceTimersByTime(999);
    expect(t.written()).toBe(0);
    vi.advanceTimersByTime(1); // t = 5,000
    expect(t.written()).toBe(41);
  });

  it("at most 4,096 rows wait (the session's row counts): the next is written at once, with them", () => {
    const t = record(60_000);
    for (let i = 0; i < 4_094; i++) t.answer();
    expect(t.written()).toBe(0);
    t.answer(); // 4,095 answers + the session's row
    expect(t.written()).toBe(4_095);
    const statements = t.sql.statements.filter((q) => q.startsWith("INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?)"));
    expect(statements).toHaveLength(1);
    expect(t.sql.exec("SELECT count(*) AS n FROM _dorpc_replies").one().n).toBe(1); // one batch row
  });

  it("a storage write in between has them written in the same run of JavaScript (its transaction), and the timer has nothing left to do", async () => {
    const t = record();
    t.answer();
    t.answer();
    t.sql.exec("CREATE TABLE kept (n INTEGER)"); // through the watched storage, as code outside any call would
    await Promise.resolve(); // microtasks run before the turn ends, so before its implicit transaction commits
    expect(t.written()).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("what the record keeps in memory per session", () => {
  it("an object that stays awake while thousands of short-lived sessions come and go keeps only the recent ones", () => {
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({})!, writes);
    const memory = (records as unknown as { memory: { size: number } }).memory;
    let n = 0;
    /** A new client session: its hello and one recorded call. */
    const visit = () => {
      const session = `session${String(n++).padStart(15, "0")}`;
      records.hello(session, false);
      records.started(session, 1);
      records.save(session, 1, "\u001eR[[1,0,1]]", true);
    };
    for (let minute = 0; minute < 60; minute++) {
      for (let i = 0; i < 100; i++) visit();
      vi.advanceTimersByTime(60_000);
    }
    // 6,000 sessions over an hour; the ones of the last ~10–15 minutes are remembered.
    expect(memory.size).toBeGreaterThan(0);
    expect(memory.size).toBeLessThanOrEqual(1_500);
    // A session seen again after being forgotten is recorded as before: its resend is answered.
    const again = "session000000000000000";
    records.hello(again, false);
    records.started(again, 2);
    records.save(again, 2, "\u001eR[[2,0,2]]", true);
    records.flush();
    expect(records.decide(again, 2, 1, true, false)).toEqual({ kind: "replay", frame: "\u001eR[[2,0,2]]" });
  });
});

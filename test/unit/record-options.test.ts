/**
 * Edge values of the exactly-once record's options (window, maxAge, maxResultBytes, flushAfter),
 * driven on Node's SQLite as test/reliability/record-*.node.test.ts do: a short maxAge never
 * forgets an active session, a late copy past the window is refused, sizes are UTF-8 bytes.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";

const S = "AAAAAAAAAAAAAAAAAAAAAA";
const RETRY = 1;

function record(options: object) {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(options)!, writes);
  /** Call `id` of S runs (decided as a new call) and answers `frame`. */
  const call = (id: number, frame = `\u001eR[[${id},0,${id}]]`) => {
    expect(records.decide(S, id, 0, true, false)).toEqual({ kind: "run", record: true });
    records.started(S, id);
    records.save(S, id, frame, true);
  };
  return { sql, records, call };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("exactlyOnce.maxAge shorter than five minutes", () => {
  it("a session active every second is not forgotten after maxAge: its resends are answered", () => {
    const t = record({ maxAge: 10_000 });
    t.records.hello(S, false);
    for (let id = 1; id <= 60; id++) {
      t.call(id);
      vi.advanceTimersByTime(1_000);
    }
    t.records.flush();
    // The connection drops 1 s after the session's last answer; the client says hello again,
    // resending (its session is 60 s old). It was idle 1 s, far less than maxAge (10 s).
    expect(t.records.hello(S, true, 60_000)).toBe(true);
  });
});

describe("exactlyOnce.window", () => {
  it("a late (non-Retry) copy of a call older than the window is refused like its resend, not run again", () => {
    const t = record({ window: 16, flushAfter: 0 });
    t.records.hello(S, false);
    for (let id = 1; id <= 40; id++) t.call(id);
    // Its resend is refused: 40 - 5 >= window.
    expect(t.records.decide(S, 5, RETRY, true, false)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    // The same call arriving late without Retry (an HTTP request, an old socket's last frame):
    // it ran, its row was pruned with the window; running it again breaks exactly-once.
    expect(t.records.decide(S, 5, 0, true, false)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
  });
});

describe("exactlyOnce.maxResultBytes", () => {
  it("counts bytes, not UTF-16 code units: a text answer of more bytes than the limit keeps only a marker", () => {
    const t = record({ maxResultBytes: 100, flushAfter: 0 });
    t.records.hello(S, false);
    const frame = `\u001eR[[1,0,"${"é".repeat(80)}"]]`; // 92 code units, 172 bytes as stored (UTF-8)
    expect(frame.length).toBeLessThanOrEqual(100);
    expect(new TextEncoder().encode(frame).byteLength).toBeGreaterThan(100);
    t.call(1, frame);
    t.call(2);
    expect(t.records.decide(S, 1, RETRY, true, false)).toMatchObject({ kind: "refuse", error: { code: "DISCONNECTED" } });
  });
});

describe("exactlyOnce.maxAge shorter than five minutes, at the hourly sweep", () => {
  it("the sweep does not delete the answers of a session that answered a second ago (its resend is not run again)", () => {
    const t = record({ maxAge: 10_000 });
    t.records.hello(S, false);
    // One call a second for just over an hour: the sweep runs again with a write after the hour.
    for (let id = 1; id <= 3_610; id++) {
      t.call(id);
      vi.advanceTimersByTime(1_000);
    }
    t.records.flush();
    // A call answered 15 s ago (well inside the window, the session never idle): its resend must
    // be answered from the record.
    expect(t.records.decide(S, 3_595, RETRY, true, false)).toEqual({ kind: "replay", frame: "\u001eR[[3595,0,3595]]" });
  });
});

/**
 * Which resends the delivery record still trusts after `ctx.storage.deleteAll()`
 * (packages/rpc/src/delivery-wipe.ts): the record alone on Node's SQLite, a `deleteAll` that drops
 * every table as workerd's does, and a fake clock. (wipe.workers.test.ts runs the same through
 * the real client and workerd.)
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { CallFlags } from "../../packages/rpc/src/envelopes.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";

const OLD = "OOOOOOOOOOOOOOOOOOOOOO";
const NEW = "NNNNNNNNNNNNNNNNNNNNNN";
const HOUR = 3_600_000;
const MAX_AGE = 24 * HOUR;

function object() {
  const sql = nodeSql();
  const storage = {
    sql,
    /** As in a SQLite-backed object: every table goes at once. */
    deleteAll: () => {
      for (const { name } of sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray()) sql.exec(`DROP TABLE "${name}"`);
      return Promise.resolve();
    },
  };
  const writes = watchWrites(storage);
  const open = () => new DeliveryRecord(writes.sql, resolveDelivery({})!, writes);
  const records = open();
  /** `session` ran call `id`, a recorded call that wrote nothing, and its answer was written. */
  const ran = (session: string, id: number) => {
    records.started(session, id);
    records.save(session, id, `\u001eR[[${id},0,${id}]]`, true);
    records.flush();
  };
  return { sql, storage, records, open, ran };
}

const resend = (records: DeliveryRecord, session: string, id: number) => records.decide(session, id, CallFlags.Retry, true, false);

describe("resends after the object's storage was wiped", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a session older than the wipe: an answer recorded since is replayed, a call with no row is refused, never run", async () => {
    const t = object();
    t.records.hello(OLD, false);
    t.ran(OLD, 1);
    await t.storage.deleteAll();
    t.ran(OLD, 2); // after the wipe
    vi.advanceTimersByTime(5_000);
    expect(t.records.hello(OLD, true, 60_000)).toBe(true);
    expect(resend(t.records, OLD, 1)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    expect(resend(t.records, OLD, 2)).toEqual({ kind: "replay", frame: "\u001eR[[2,0,2]]" });
    expect(resend(t.records, OLD, 3)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    expect((resend(t.records, OLD, 1) as { error: Error }).error.message).toContain("deleteAll()");
  });

  it("a resending hello that does not say its age counts as older than the wipe", async () => {
    const t = object();
    t.ran(OLD, 1);
    await t.storage.deleteAll();
    t.records.hello(NEW, true);
    expect(resend(t.records, NEW, 1)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
  });

  it("a session that began more than a minute after the wipe is trusted as before: a call with no row runs", async () => {
    const t = object();
    t.ran(OLD, 1);
    await t.storage.deleteAll();
    vi.advanceTimersByTime(120_000);
    t.records.hello(NEW, true, 30_000); // began 90 s after the wipe
    expect(resend(t.records, NEW, 1)).toEqual({ kind: "run", record: true });
    // Began 50 s after it: within the margin, so treated as older.
    t.records.hello(NEW, true, 70_000);
    expect(resend(t.records, NEW, 1)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
  });

  it("the wipe is remembered across an eviction (its row), and forgotten after maxAge", async () => {
    const t = object();
    t.ran(OLD, 1);
    await t.storage.deleteAll();
    const woken = t.open(); // a new instance over the same storage
    woken.hello(OLD, true, 10_000);
    expect(resend(woken, OLD, 1)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    vi.advanceTimersByTime(MAX_AGE + HOUR);
    const later = t.open();
    later.hello(OLD, true, 10_000);
    expect(resend(later, OLD, 1)).toEqual({ kind: "run", record: true });
  });

  it("the sessions noted as older than the wipe stay bounded (4,096, the newest), and are forgotten once the wipe is older than maxAge", async () => {
    const t = object();
    t.ran(OLD, 1);
    await t.storage.deleteAll();
    const session = (i: number) => `S${String(i).padStart(21, "0")}`;
    for (let i = 0; i < 5_000; i++) t.records.hello(session(i), true);
    const spanning = (t.records as unknown as { wipes: { spanning: Set<string> } }).wipes.spanning;
    expect(spanning.size).toBe(4_096);
    expect(resend(t.records, session(4_999), 1)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    vi.advanceTimersByTime(MAX_AGE + HOUR);
    t.records.hello(NEW, true);
    expect(spanning.size).toBe(0);
  });

  it("no wipe on record: resends are decided as always", () => {
    const t = object();
    t.ran(OLD, 1);
    t.records.hello(OLD, true, 10_000);
    expect(resend(t.records, OLD, 2)).toEqual({ kind: "run", record: true });
    expect(t.sql.exec("SELECT session FROM _dorpc_sessions WHERE session = '#wiped'").toArray()).toEqual([]);
  });
});

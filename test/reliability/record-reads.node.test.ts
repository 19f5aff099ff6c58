/**
 * What the delivery record reads and deletes for a connection, on Node's SQLite: nothing it does
 * not need. A new connection's hello that resends nothing reads nothing; a session that says it
 * has sent no call before (hello `[session, 2]`, its first connection) has its first call run
 * without a lookup; a session with fewer calls than the window prunes nothing. The lookups that
 * are needed stay: a session's first call after a reconnect is still checked against the record.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { type NodeSql, nodeSql } from "../support/node-sql.js";
import { faulty } from "./fault-transport.js";
import { Service } from "./service.js";

const SESSION = "AAAAAAAAAAAAAAAAAAAAAA";
const OTHER = "BBBBBBBBBBBBBBBBBBBBBB";

/**
 * A record watching the object's storage, as in workerd, whose tables exist (another session
 * wrote a row), and the statements run from here on.
 */
function recordWithTables(delivery?: Parameters<typeof resolveDelivery>[0]) {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(delivery)!, writes);
  records.hello(OTHER, false);
  records.started(OTHER, 1);
  records.save(OTHER, 1, "\u001eR[[1,0,1]]", true);
  records.flush();
  const from = sql.statements.length;
  return { sql, records, since: () => sql.statements.slice(from) };
}

const reads = (statements: readonly string[]) => statements.filter((q) => q.startsWith("SELECT"));

describe("what the delivery record reads for a new connection", () => {
  it("a hello that resends nothing reads (and writes) nothing, and the session is still accepted", () => {
    const t = recordWithTables();
    expect(t.records.hello(SESSION, false)).toBe(true);
    expect(t.since()).toEqual([]);
  });

  it("a session's first call after a plain hello is looked up: an earlier instance may have answered it", () => {
    const t = recordWithTables();
    t.records.hello(SESSION, false);
    expect(t.records.decide(SESSION, 1, 0, true, false)).toMatchObject({ kind: "run", record: true });
    expect(reads(t.since()).length).toBeGreaterThan(0);
  });

  it("a fresh session's first call runs without a lookup, and a repeat of its id is still refused or replayed", () => {
    const t = recordWithTables();
    expect(t.records.hello(SESSION, false, undefined, true)).toBe(true);
    expect(t.records.decide(SESSION, 1, 0, true, false)).toMatchObject({ kind: "run", record: true });
    expect(reads(t.since())).toEqual([]);
    t.records.started(SESSION, 1);
    t.records.save(SESSION, 1, "\u001eR[[1,0,7]]", true);
    // The same id again (a late duplicate) is checked against what ran: its answer, not a second run.
    expect(t.records.decide(SESSION, 1, 0, true, false)).toMatchObject({ kind: "replay" });
  });

  it("a resending hello that also says fresh is read as resending (the lookups stay)", () => {
    const t = recordWithTables();
    t.records.hello(SESSION, true, 5, true);
    expect(t.records.decide(SESSION, 1, 1, true, false)).toMatchObject({ kind: "run" });
    expect(reads(t.since()).length).toBeGreaterThan(0);
  });

  it("the real client says fresh on its first connection only: one lookup-free first call, then plain hellos", async () => {
    // The tables exist already (an earlier client), so a lookup would show as a statement.
    const { sql, records } = recordWithTables();
    const faults = faulty(new Service(), undefined, { records });
    using client = createRpcClient<Service>("SERVICE", "one", {
      heartbeat: false,
      reconnect: { initialDelay: 1, maxDelay: 20 },
      transport: faults.factory,
    });
    const from = sql.statements.length;
    expect(await client.increment()).toBe(1);
    expect(reads(sql.statements.slice(from))).toEqual([]);
    expect(faults.last.paired.hellos.map((h) => JSON.parse(h.slice(2))[1])).toEqual([2]);
    // Cut: the next connection's hello is a plain one, and its first call is looked up again.
    faults.last.paired.cut();
    expect(await client.increment()).toBe(2);
    expect(faults.last.paired.hellos.map((h) => JSON.parse(h.slice(2))[1])).toEqual([0]);
  });
});

describe("what the delivery record deletes", () => {
  /** The statements that prune one session's old batches. */
  const prunes = (sql: NodeSql) => sql.statements.filter((q) => q.startsWith("DELETE FROM _dorpc_replies WHERE session = ?"));

  it("a session with fewer calls than the window prunes nothing; past the window it prunes its old batches", () => {
    const t = recordWithTables({ window: 16 });
    const before = prunes(t.sql).length;
    t.records.hello(SESSION, false, undefined, true);
    /** Calls `from`…`to` of SESSION run and answered, each batch written. */
    const answer = (from: number, to: number) => {
      for (let id = from; id <= to; id++) {
        t.records.decide(SESSION, id, 0, true, false);
        t.records.started(SESSION, id);
        t.records.save(SESSION, id, `\u001eR[[${id},0,${id}]]`, true);
        t.records.flush();
      }
    };
    answer(1, 16);
    expect(prunes(t.sql).length).toBe(before);
    answer(17, 24);
    expect(prunes(t.sql).length).toBeGreaterThan(before);
    const batches = t.sql.exec("SELECT last FROM _dorpc_replies WHERE session = ? ORDER BY last", SESSION).toArray();
    expect(batches.map((row) => row.last)).not.toContain(1);
  });
});

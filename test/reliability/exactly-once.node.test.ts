/**
 * Exactly-once delivery across reconnects (issue 12), in Node: the real client session and the
 * real dispatcher with a real delivery record (packages/rpc/src/delivery.ts) on Node's SQLite,
 * joined by the fault transport. Every run of every method is counted, so a call that ran twice
 * shows.
 */
import { describe, expect, it, vi } from "vitest";
import { createRpcClient, rpcConnection, type RpcClientOptions } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import type { RpcError } from "../../packages/rpc/src/errors.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { type NodeSql, nodeSql } from "../support/node-sql.js";
import { callIds, faulty } from "./fault-transport.js";
import { Service } from "./service.js";

class Ledger extends Service {
  /** Set by `setup`: the object's storage, for a method that writes it. */
  storage: NodeSql | undefined;
  /** Writes the object's storage, then answers. */
  store(n: number): number {
    this.runs.set("store", (this.runs.get("store") ?? 0) + 1);
    this.storage!.exec("CREATE TABLE IF NOT EXISTS kept (n INTEGER)");
    this.storage!.exec("INSERT INTO kept VALUES (?)", n);
    return n;
  }
  /** `store`, from an `async` method that does no I/O: it answers a few microtasks after its write. */
  async storeSoon(n: number): Promise<number> {
    return this.store(n);
  }
  /** A read: its resends run again, and it writes no record. */
  peek = rpcMethod({ readOnly: true }, () => {
    this.runs.set("peek", (this.runs.get("peek") ?? 0) + 1);
    return this.value;
  });
  /** Keeps no answer in the record, only a marker that it ran. */
  bulk = rpcMethod({ record: false }, (n: number) => {
    this.runs.set("bulk", (this.runs.get("bulk") ?? 0) + 1);
    return "x".repeat(n);
  });
}

function setup(options: Omit<RpcClientOptions, "transport"> = {}, delivery?: Parameters<typeof resolveDelivery>[0]) {
  const service = new Ledger();
  const sql = nodeSql();
  service.storage = sql;
  // As in workerd: the record watches the object's storage and writes its own rows unwatched.
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(delivery)!, writes);
  const faults = faulty(service, undefined, { records });
  const client = createRpcClient<Ledger>("LEDGER", "one", {
    heartbeat: false,
    reconnect: { initialDelay: 1, maxDelay: 20 },
    ...options,
    transport: faults.factory,
  });
  return { service, sql, records, faults, client, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Answers one statement writes: the record writes the answers of a flush as one batch row per session. */
function answersIn(entry: NodeSql["log"][number]): number {
  if (!entry.query.startsWith("INSERT INTO _dorpc_replies")) return 0;
  return (JSON.parse(entry.bindings[3] as string) as unknown[]).length;
}

/** Answers written by the statements of `sql` so far, whatever rows they came in. */
function callRows(sql: NodeSql): number {
  return sql.log.reduce((n, entry) => n + answersIn(entry), 0);
}

/** Batch rows of `_dorpc_replies` written so far (statements that write one). */
function batchRows(sql: NodeSql): number {
  return sql.log.filter((entry) => answersIn(entry) > 0).length;
}

describe("a call cut by a dropped connection runs once and is answered once", () => {
  it("cut after the object ran it and before the answer arrived: answered from the record, not run again", async () => {
    using t = setup();
    expect(await t.client.increment()).toBe(1);
    t.faults.cutOnReply = 1; // the next answer is lost with its connection
    expect(await t.client.increment()).toBe(2);
    expect(t.service.runsOf("increment")).toBe(2);
    expect(t.faults.connections).toHaveLength(2);
    // The second connection carried the resend of call 2, flagged Retry.
    expect(t.faults.connections[1]!.paired.sentByClient).toEqual(['\u001eC[[2,["increment",[0]],0,1]]']);
  });

  it("cut before the call reached the object: resent, it runs once", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.last.paired.hold = true;
    const pending = t.client.increment(5);
    await sleep(5);
    t.faults.last.paired.cut(); // the held frame never arrives
    expect(await pending).toBe(6);
    expect(t.service.runsOf("increment")).toBe(2);
  });

  it("a new session's first connection cut before anything arrived: its resent calls run (the session is not taken for expired)", async () => {
    using t = setup();
    t.faults.halfOpen = true; // the Hello and the call are lost on the way
    const pending = t.client.increment(5);
    await vi.waitFor(() => expect(t.faults.connections).toHaveLength(1));
    await sleep(5);
    t.faults.halfOpen = false;
    t.faults.last.paired.cut();
    expect(await pending).toBe(5);
    expect(t.service.runsOf("increment")).toBe(1);
    // The Hello of the second connection says it resends, with the session's age: a young
    // session the object does not know is not taken for one it forgot, so its resends run.
    expect(t.faults.connections[1]!.paired.hellos).toEqual([expect.stringMatching(/^\u001eH\[".+",1,\d+\]$/)]);
  });

  it("a resend of a call still running waits for it and gets its answer; the method runs once", async () => {
    using t = setup({}, undefined);
    await t.client.increment();
    const held = t.client.hold("slow");
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    t.faults.last.paired.cut();
    await rpcConnection(t.client).waitForOpen();
    await sleep(10); // the resend has arrived and waits
    expect(t.service.runsOf("hold:slow")).toBe(1);
    t.service.releaseAll();
    expect(await held).toBe("slow");
    expect(t.service.runsOf("hold:slow")).toBe(1);
  });

  it("several calls of one frame, answers lost: all resent together, each runs once, each answered once", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.cutOnReply = 1;
    const results = await Promise.all([t.client.increment(), t.client.increment(), t.client.echo("e")]);
    expect(results).toEqual([2, 3, "e"]);
    expect(t.service.runsOf("increment")).toBe(3);
    expect(t.service.runsOf("echo")).toBe(1);
  });

  it("a pipelined call whose dependency was answered before the drop is resent with the value", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.last.paired.hold = true;
    const first = t.client.increment();
    const second = t.client.echo(first);
    await sleep(5);
    t.faults.last.paired.release();
    t.faults.cutOnReply = 1;
    expect(await Promise.all([first, second])).toEqual([2, 2]);
    expect(t.service.runsOf("increment")).toBe(2);
  });
});

/** The record's own upkeep: its tables, the sweep and its mark. */
function isHousekeeping(query: string): boolean {
  return (
    query.startsWith("CREATE TABLE IF NOT EXISTS _dorpc") ||
    query.startsWith("DROP TABLE IF EXISTS _dorpc") ||
    query.startsWith("SELECT") ||
    query.startsWith("DELETE") ||
    query.includes("VALUES ('', ?)")
  );
}

describe("when the record is written, against the reply", () => {
  /** For each row the record writes, how many frames the object had sent by then. */
  function watchRows(t: ReturnType<typeof setup>): number[] {
    const sentAtWrite: number[] = [];
    const log = t.sql.log;
    const push = log.push.bind(log);
    log.push = (...entries: NodeSql["log"]) => {
      for (const entry of entries)
        for (let answer = answersIn(entry); answer > 0; answer--) sentAtWrite.push(t.faults.last.paired.sentByServer.length);
      return push(...entries);
    };
    return sentAtWrite;
  }
  const NEVER = { flushAfter: 60_000 }; // the timer cannot write the rows during a test

  it("a call during which nothing was written: its reply leaves at once and its row waits in memory, written within flushAfter ms", async () => {
    using t = setup();
    await t.client.increment(); // the connection is open: its frames are counted from here
    await vi.waitFor(() => expect(callRows(t.sql)).toBe(1));
    const sentAtWrite = watchRows(t);
    const before = t.faults.last.paired.sentByServer.length;
    expect(await t.client.increment()).toBe(2); // Service.increment changes memory only
    expect(sentAtWrite).toEqual([]); // answered; no row written (no storage commit of its own)
    await vi.waitFor(() => expect(sentAtWrite).toEqual([before + 1]));
  });

  it("a resend of a call whose row still waits in memory is answered from the record, not run again", async () => {
    using t = setup({}, NEVER);
    await t.client.increment();
    t.faults.cutOnReply = 1;
    expect(await t.client.increment()).toBe(2);
    expect(t.service.runsOf("increment")).toBe(2);
  });

  it("the next storage write: the waiting rows are written with the writing call's answer, one batch row, in the same turn (so in the same transaction)", async () => {
    using t = setup({}, NEVER);
    await t.client.increment();
    await t.client.increment();
    const rows = () => callRows(t.sql);
    expect(rows()).toBe(0);
    const from = t.sql.log.length;
    expect(await t.client.store(7)).toBe(7);
    const order = t.sql.log
      .slice(from)
      .filter((entry) => !isHousekeeping(entry.query))
      .map((entry) =>
        entry.query.startsWith("INSERT INTO _dorpc_replies")
          ? `answers: ${answersIn(entry)}`
          : entry.query.startsWith("INSERT INTO _dorpc_sessions")
            ? "session"
            : entry.query.split(" (")[0],
      );
    // store's own writes, then the session's row and the two waiting answers with store's own
    // (it wrote, so it is not kept waiting) as one batch row, all before store's turn ends.
    expect(order).toEqual(["CREATE TABLE IF NOT EXISTS kept", "INSERT INTO kept VALUES", "session", "answers: 3"]);
  });

  it("an async method that writes and does no I/O after it takes the waiting rows into its row too", async () => {
    using t = setup({}, NEVER);
    await t.client.increment();
    await t.client.increment();
    const rows = batchRows(t.sql);
    expect(await t.client.storeSoon(7)).toBe(7);
    expect(batchRows(t.sql) - rows).toBe(1);
    expect(callRows(t.sql)).toBe(3);
  });

  it("a method that wrote storage: its row is written in the turn of its reply, just after it (in workerd the gate holds the reply for the method's writes, and the row joins their transaction)", async () => {
    using t = setup({}, NEVER);
    await t.client.store(1);
    const sentAtWrite = watchRows(t);
    const before = t.faults.last.paired.sentByServer.length;
    expect(await t.client.store(7)).toBe(7);
    expect(sentAtWrite).toEqual([before + 1]);
    t.faults.cutOnReply = 1;
    expect(await t.client.store(8)).toBe(8);
    expect(t.service.runsOf("store")).toBe(3);
    expect(t.sql.exec("SELECT n FROM kept").toArray()).toEqual([{ n: 1 }, { n: 7 }, { n: 8 }]);
  });

  it("calls of one frame that wrote storage: their answers share one row, written in the turn of their replies, after the reply frame", async () => {
    using t = setup({}, NEVER);
    await t.client.store(1);
    const sentAtWrite = watchRows(t);
    const rowsBefore = batchRows(t.sql);
    const before = t.faults.last.paired.sentByServer.length;
    expect(await Promise.all([t.client.store(2), t.client.store(3), t.client.store(4)])).toEqual([2, 3, 4]);
    // Written already (the timer cannot have: flushAfter is a minute), after the one reply frame.
    expect(sentAtWrite).toEqual([before + 1, before + 1, before + 1]);
    expect(batchRows(t.sql) - rowsBefore).toBe(1);
    t.faults.cutOnReply = 1;
    expect(await Promise.all([t.client.store(5), t.client.store(6)])).toEqual([5, 6]); // answered from the record
    expect(t.service.runsOf("store")).toBe(6);
  });

  it("flushAfter: 0 writes every row in the turn of its reply, just after it", async () => {
    using t = setup({}, { flushAfter: 0 });
    await t.client.increment();
    const sentAtWrite = watchRows(t);
    const before = t.faults.last.paired.sentByServer.length;
    expect(await t.client.increment()).toBe(2);
    expect(sentAtWrite).toEqual([before + 1]);
  });

  it("a recorded call whose caller left before it answered: its row is still written (for the resend on the next connection)", async () => {
    using t = setup();
    await t.client.increment();
    await vi.waitFor(() => expect(callRows(t.sql)).toBe(1));
    const sentAtWrite = watchRows(t);
    t.faults.cutOnReply = 1;
    expect(await t.client.increment()).toBe(2);
    await vi.waitFor(() => expect(sentAtWrite).toHaveLength(1));
    expect(t.service.runsOf("increment")).toBe(2);
  });

  it("calls of one frame: one reply frame, then their rows, written together", async () => {
    using t = setup();
    await t.client.increment();
    await vi.waitFor(() => expect(callRows(t.sql)).toBe(1));
    const sentAtWrite = watchRows(t);
    const before = t.faults.last.paired.sentByServer.length;
    expect(await Promise.all([t.client.increment(), t.client.increment(), t.client.increment()])).toEqual([2, 3, 4]);
    await vi.waitFor(() => expect(sentAtWrite).toEqual([before + 1, before + 1, before + 1]));
  });

  it("a new connection's hello writes nothing: the session's row waits with the rows, and is written first", async () => {
    using t = setup({}, NEVER);
    expect(await t.client.increment()).toBe(1);
    // Only reads so far: the first reply was not held for a commit of the record's.
    expect(t.sql.statements.filter((q) => !q.startsWith("SELECT"))).toEqual([]);
    t.records.flush();
    const written = t.sql.statements.filter((q) => q.startsWith("INSERT INTO _dorpc"));
    expect(written.map((q) => q.slice(0, 25))).toEqual([
      "INSERT INTO _dorpc_sessio", // the sweep's mark (a new object's first write)
      "INSERT INTO _dorpc_sessio", // the session
      "INSERT INTO _dorpc_replie",
    ]);
    expect(t.sql.exec("SELECT count(*) AS n FROM _dorpc_sessions WHERE session <> ''").one().n).toBe(1);
  });

  it("exactlyOnce.flushAfter is checked", () => {
    expect(() => resolveDelivery({ flushAfter: -1 })).toThrow(/flushAfter must be an integer ≥ 0 and ≤ 60000, got -1/);
    expect(() => resolveDelivery({ flushAfter: 60_001 })).toThrow(/flushAfter/);
    expect(resolveDelivery(undefined)!.flushAfter).toBe(10);
  });
});

describe("the record's age limit (maxAge) and its sweep", () => {
  const HOUR = 3_600_000;
  const sessionA = "AAAAAAAAAAAAAAAAAAAAAA";
  const sessionB = "BBBBBBBBBBBBBBBBBBBBBB";
  /** The sweep's deletes (not the pruning of a session's old batches, which names one session). */
  const deletes = (statements: readonly string[]) =>
    statements.filter((q) => q.startsWith("DELETE") && !q.includes("WHERE session = ?")).length;

  it("a session idle longer than maxAge is forgotten by the next sweep: its resends are EXPIRED, never run", () => {
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const options = resolveDelivery({ maxAge: 2 * HOUR })!;
    const records = new DeliveryRecord(sql, options);
    expect(records.hello(sessionA, false)).toBe(true);
    records.started(sessionA, 1);
    records.save(sessionA, 1, "\u001eR[[1,0,1]]", true);
    expect(records.decide(sessionA, 1, 1, true, false)).toMatchObject({ kind: "replay" });
    // Three hours later another session connects: the sweep forgets A (and its answers).
    now.mockReturnValue(1_003 * HOUR);
    records.hello(sessionB, false);
    expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies").one().n).toBe(0);
    // A comes back resending: unknown, so its calls cannot be trusted.
    expect(records.hello(sessionA, true)).toBe(false);
    expect(records.decide(sessionA, 1, 1, true, true)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } });
    now.mockRestore();
  });

  it("a session last seen longer than maxAge ago that resends is EXPIRED even before a sweep has deleted it (the next write may sweep its slots)", () => {
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ maxAge: 2 * HOUR, flushAfter: 60_000 })!, writes);
    records.hello(sessionA, false);
    records.started(sessionA, 1);
    records.save(sessionA, 1, "\u001eR[[1,0,1]]", true);
    records.flush();
    now.mockReturnValue(1_000 * HOUR + 30 * 60_000); // half an hour later: no sweep due yet
    records.hello(sessionB, false);
    records.flush();
    expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies WHERE session = ?", sessionA).one().n).toBe(1);
    now.mockReturnValue(1_003 * HOUR); // A comes back three hours after it was last seen
    expect(records.hello(sessionA, true)).toBe(false);
    now.mockRestore();
  });

  it("a session the object does not know that resends, and says it began less than maxAge ago, is not EXPIRED: its row was lost before any commit of its own", () => {
    const options = resolveDelivery({ maxAge: 2 * HOUR })!;
    const records = new DeliveryRecord(nodeSql(), options);
    expect(records.hello(sessionA, true, 5_000)).toBe(true); // runs its resends (nothing of it was committed)
    expect(records.decide(sessionA, 1, 1, true, false)).toEqual({ kind: "run", record: true });
    expect(records.hello(sessionB, true, 1.9 * HOUR)).toBe(false); // within a tenth of maxAge: could have been swept
    expect(records.hello("CCCCCCCCCCCCCCCCCCCCCC", true)).toBe(false); // no age said: as before
  });

  it("an original request that arrives after its resend was answered and the object was evicted is answered from the record, not run again", () => {
    const sql = nodeSql();
    const options = resolveDelivery({})!;
    const before = new DeliveryRecord(sql, options);
    before.hello(sessionA, false);
    expect(before.decide(sessionA, 1, 0, true, false)).toEqual({ kind: "run", record: true });
    before.started(sessionA, 1);
    before.save(sessionA, 1, "\u001eR[[1,0,1]]", true);
    // Call 2's first request is held on the way; its resend runs and is answered.
    expect(before.decide(sessionA, 2, 1, true, false)).toEqual({ kind: "run", record: true });
    before.started(sessionA, 2);
    before.save(sessionA, 2, "\u001eR[[2,0,6]]", true);
    before.flush();
    // Evicted: a new instance, with the same storage and nothing in memory. The original arrives.
    const after = new DeliveryRecord(sql, options);
    expect(after.decide(sessionA, 2, 0, true, false)).toEqual({ kind: "replay", frame: "\u001eR[[2,0,6]]" });
    // A call that is new to the record still runs.
    expect(after.decide(sessionA, 3, 0, true, false)).toEqual({ kind: "run", record: true });
  });

  it("a session's row is written with any write that could commit its calls' effects: in the same run of JavaScript", async () => {
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ flushAfter: 60_000 })!, writes);
    const sessionRow = () => sql.statements.some((q) => q.startsWith("INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?)"));
    records.hello(sessionA, false);
    expect(sessionRow()).toBe(false);
    sql.exec("CREATE TABLE mine (n INTEGER)"); // the object's own write (watched), outside any call
    await Promise.resolve(); // microtasks run before the turn ends, so before its implicit transaction commits
    expect(sessionRow()).toBe(true);
  });

  it("before a transaction the object opens itself, the waiting rows are written at once (inside it they would roll back with it)", () => {
    const sql = nodeSql();
    const storage = { sql, transactionSync: <T>(fn: () => T): T => fn() };
    const writes = watchWrites(storage);
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ flushAfter: 60_000 })!, writes);
    records.hello(sessionA, false);
    let inside = -1;
    storage.transactionSync(() => {
      inside = sql.statements.length;
      sql.exec("CREATE TABLE mine (n INTEGER)");
    });
    const session = sql.statements.findIndex((q) => q.startsWith("INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?)"));
    expect(session).toBeGreaterThanOrEqual(0);
    expect(session).toBeLessThan(inside);
  });

  it("sweeps at most once an hour per object, across restarts (an object that wakes often does not scan each time)", () => {
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const options = resolveDelivery(undefined)!;
    new DeliveryRecord(sql, options).hello(sessionA, false);
    expect(deletes(sql.statements)).toBe(2); // the first sweep
    now.mockReturnValue(1_000 * HOUR + 10 * 60_000);
    new DeliveryRecord(sql, options).hello(sessionB, false); // a new instance, 10 minutes later
    expect(deletes(sql.statements)).toBe(2);
    now.mockReturnValue(1_001 * HOUR + 1);
    new DeliveryRecord(sql, options).hello(sessionB, false); // and one more, an hour after the sweep
    expect(deletes(sql.statements)).toBe(4);
    now.mockRestore();
  });
});

describe("what the record refuses", () => {
  it("a resend whose record slot was reused by a later call is EXPIRED, never run twice", async () => {
    using t = setup({}, { window: 16 });
    for (let i = 0; i < 40; i++) await t.client.increment();
    const conn = t.faults.last.paired;
    const before = conn.sentByServer.length;
    conn.inject('\u001eC[[3,["increment",[0]],0,1]]'); // call 3 again, as a resend
    await sleep(5);
    const replies = conn.sentByServer.slice(before).flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[][]);
    expect(replies).toEqual([[3, 3, "EXPIRED", expect.stringContaining("delivery record expired")]]);
    expect(t.service.runsOf("increment")).toBe(40);
  });

  it.each([
    [
      "is EXPIRED (its record may have been swept while it was away)",
      '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",1]',
      [7, 3, "EXPIRED", expect.any(String)],
      1,
    ],
    [
      "and says it is young runs its resends (its row was lost in a reset, with everything it did)",
      '\u001eH["AAAAAAAAAAAAAAAAAAAAAA",1,250]',
      [7, 0, 2],
      2,
    ],
  ])("a session unknown to the object that resends %s", async (_name, hello, reply, runs) => {
    using t = setup();
    await t.client.increment();
    // A connection of another client, whose first frame is this hello (one per connection).
    t.faults.halfOpen = true;
    t.faults.last.peerClose(1006);
    await vi.waitFor(() => expect(t.faults.connections.length).toBe(2));
    const conn = t.faults.last.paired;
    const before = conn.sentByServer.length;
    conn.inject(hello);
    conn.inject('\u001eC[[7,["increment",[0]],0,1]]');
    await sleep(5);
    const replies = conn.sentByServer.slice(before).flatMap((f) => JSON.parse((f as string).slice(2)) as unknown[][]);
    expect(replies).toEqual([reply]);
    expect(t.service.runsOf("increment")).toBe(runs);
  });

  it("record: false keeps only a marker: a resend of a call that ran fails with DISCONNECTED saying it ran", async () => {
    using t = setup();
    await t.client.increment();
    t.faults.cutOnReply = 1;
    const error = (await t.client.bulk(10).catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe("DISCONNECTED");
    expect(error.message).toContain("ran before the connection dropped, but its result was not kept");
    expect(t.service.runsOf("bulk")).toBe(1);
  });

  it("a read (readOnly) is not recorded: its resend simply runs again", async () => {
    using t = setup();
    await t.client.increment();
    const writesBefore = callRows(t.sql);
    expect(await t.client.peek()).toBe(1);
    expect(callRows(t.sql)).toBe(writesBefore);
    t.faults.cutOnReply = 1;
    expect(await t.client.peek()).toBe(1);
    expect(t.service.runsOf("peek")).toBe(3);
  });

  it("each recorded call costs at most one row write; the record stays bounded by the window", async () => {
    using t = setup({}, { window: 16, flushAfter: 0 });
    for (let i = 0; i < 100; i++) await t.client.increment();
    // flushAfter: 0 writes each answer in the turn of its reply: one batch row per call.
    expect([callRows(t.sql), batchRows(t.sql)]).toEqual([100, 100]);
    // Batches older than the window go every window / 4 calls: 16 to 20 rows stay, never fewer
    // than the window's calls.
    const rows = t.sql.exec("SELECT count(*) AS n FROM _dorpc_replies").one().n as number;
    expect(rows).toBeGreaterThanOrEqual(16);
    expect(rows).toBeLessThanOrEqual(16 + 4);
    expect(t.sql.exec("SELECT min(last) AS n FROM _dorpc_replies").one().n).toBeLessThanOrEqual(100 - 16 + 1);
  });

  it("answers waiting in memory are written as one batch row per session, bounded by the window", async () => {
    using t = setup({}, { window: 16, flushAfter: 60_000 });
    for (let i = 0; i < 100; i++) await t.client.increment();
    await t.client.store(1); // its write has the waiting answers written with its own, one batch row
    expect([callRows(t.sql), batchRows(t.sql)]).toEqual([101, 1]);
    for (let i = 0; i < 40; i++) await t.client.store(1); // one row each; the old ones are pruned
    const kept = t.sql.exec("SELECT first, last FROM _dorpc_replies ORDER BY last").toArray();
    expect(kept.length).toBeLessThanOrEqual(16 + 4);
    expect(kept.some((row) => row.first === 1)).toBe(false); // the 100-answer batch fell out of the window
    t.faults.cutOnReply = 1;
    expect(await t.client.increment()).toBe(101); // still answered from the record after a cut
    expect(t.service.runsOf("increment")).toBe(101);
  });
});

describe("batch rows", () => {
  const session = "AAAAAAAAAAAAAAAAAAAAAA";
  const RETRY = 1;

  it("answers are found whichever batch holds them, when a slow call's batch overlaps faster ones; text, bytes and markers", () => {
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ flushAfter: 60_000 })!, writes);
    records.hello(session, false);
    for (const id of [1, 2, 3]) records.started(session, id);
    records.save(session, 1, "\u001eR[[1,0,1]]", true);
    records.save(session, 3, '\u001eR[[3,0,"é✓"]]', false); // ran, answer not kept
    records.flush(); // batch {1, 3}: its range covers 2, which is still running
    records.started(session, 4);
    const bytes = new Uint8Array([1, 2, 3, 250]);
    records.save(session, 2, bytes, true);
    records.save(session, 4, '\u001eR[[4,0,"é✓"]]', true);
    records.flush(); // batch {2, 4}
    expect(sql.exec("SELECT first, last FROM _dorpc_replies ORDER BY last").toArray()).toEqual([
      { first: 1, last: 3 },
      { first: 2, last: 4 },
    ]);
    expect(records.decide(session, 1, RETRY, true, false)).toEqual({ kind: "replay", frame: "\u001eR[[1,0,1]]" });
    expect(records.decide(session, 2, RETRY, true, false)).toEqual({ kind: "replay", frame: bytes });
    expect(records.decide(session, 3, RETRY, true, false)).toMatchObject({ kind: "refuse", error: { code: "DISCONNECTED" } });
    expect(records.decide(session, 4, RETRY, true, false)).toEqual({ kind: "replay", frame: '\u001eR[[4,0,"é✓"]]' });
    expect(records.decide(session, 5, RETRY, true, false)).toEqual({ kind: "run", record: true }); // never ran
    expect(records.decide("BBBBBBBBBBBBBBBBBBBBBB", 4, RETRY, true, false)).toEqual({ kind: "run", record: true }); // another session's
  });

  it("a batch row holds at most about 1 MiB of answers: more are cut into several rows", () => {
    const sql = nodeSql();
    const options = resolveDelivery({ flushAfter: 60_000, maxResultBytes: 400_000 })!;
    const records = new DeliveryRecord(sql, options, watchWrites({ sql }));
    records.hello(session, false);
    const big = `\u001eR[[0,0,"${"x".repeat(300_000)}"]]`;
    for (let id = 1; id <= 3; id++) {
      records.started(session, id);
      records.save(session, id, big, true);
    }
    expect(callRows(sql)).toBe(0); // waiting (under 1 MiB)
    records.started(session, 4);
    records.save(session, 4, big, true); // 1.2 MB waiting: written at once, in two rows
    const rows = sql.exec("SELECT first, last, length(frames) AS bytes FROM _dorpc_replies ORDER BY last").toArray();
    expect(rows.map((row) => [row.first, row.last, row.bytes])).toEqual([
      [1, 3, 3 * big.length], // the fourth would pass 1 MiB
      [4, 4, big.length],
    ]);
    for (let id = 1; id <= 4; id++) expect(records.decide(session, id, RETRY, true, false)).toEqual({ kind: "replay", frame: big });
  });
});

describe("when the client gives up", () => {
  it("with reconnect off, a cut call fails with DISCONNECTED saying it was sent and may have run", async () => {
    using t = setup({ reconnect: false });
    await t.client.increment();
    const held = t.client.hold("x");
    await vi.waitFor(() => expect(t.service.gates).toHaveLength(1));
    t.faults.last.paired.cut();
    const error = (await held.catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe("DISCONNECTED");
    expect(error.message).toContain("may have run");
  });

  it("with exactlyOnce: false the client does not resend: DISCONNECTED at once", async () => {
    using t = setup({ exactlyOnce: false });
    await t.client.increment();
    t.faults.cutOnReply = 1;
    const error = (await t.client.increment().catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe("DISCONNECTED");
    expect(t.service.runsOf("increment")).toBe(2);
  });
});

describe("the ledger (Node, in-memory transport)", () => {
  it("20 clients × 200 increments with random cuts, some after the object ran a call: the count is exact, nothing is DISCONNECTED", async () => {
    const service = new Ledger();
    const records = new DeliveryRecord(nodeSql(), resolveDelivery(undefined)!);
    const faults = faulty(service, undefined, { records });
    const clients = Array.from({ length: 20 }, () =>
      createRpcClient<Ledger>("LEDGER", "one", {
        heartbeat: false,
        reconnect: { initialDelay: 1, maxDelay: 10 },
        transport: faults.factory,
      }),
    );
    let cuts = 0;
    const chaos = setInterval(() => {
      const open = faults.connections.filter((c) => !c.closed);
      const victim = open[Math.floor(Math.random() * open.length)];
      if (!victim) return;
      cuts++;
      if (Math.random() < 0.5)
        faults.cutOnReply = 1; // the next answer is lost: after the object ran the call
      else victim.paired.cut();
    }, 3);
    const failures: unknown[] = [];
    await Promise.all(
      clients.map(async (client) => {
        for (let i = 0; i < 200; i++) await client.increment().catch((e: unknown) => failures.push(e));
      }),
    );
    clearInterval(chaos);
    for (const client of clients) client[Symbol.dispose]();
    expect(failures).toEqual([]);
    expect(cuts).toBeGreaterThan(10);
    expect(service.value).toBe(20 * 200);
    expect(service.runsOf("increment")).toBe(20 * 200);
    expect(callIds(faults.connections.flatMap((c) => c.paired.sentByClient)).length).toBeGreaterThanOrEqual(20 * 200);
  }, 60_000);
});

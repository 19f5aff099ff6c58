/**
 * What the exactly-once record costs in storage, as workerd counts it (the `rowsRead` /
 * `rowsWritten` of every SQL statement dorpc runs, the figures Durable Objects are billed by):
 * docs/reliability.md quotes these numbers.
 */
import { createTestClient, dropConnection } from "@dorpc/testing";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter, PatientCounter } from "./objects.js";

interface Tally {
  statements: number;
  rowsRead: number;
  rowsWritten: number;
}

/** Cursors of the `_dorpc_` statements run through each `ctx.storage.sql` object of this isolate. */
type Cursors = Map<object, SqlStorageCursor<Record<string, SqlStorageValue>>[]>;

/**
 * Counts the rows of every statement dorpc runs through `name`'s `ctx.storage.sql`, from its
 * construction on: the record watches the storage from the object's constructor (capturing
 * `exec` there), so the count is taken one level down, on the prototype every object of this
 * isolate shares, patched from another object before `name`'s is made.
 */
async function tally(
  name: string,
  namespace: DurableObjectNamespace<Counter> | DurableObjectNamespace<PatientCounter> = env.COUNTER,
): Promise<() => Promise<Tally>> {
  await runInDurableObject(namespace.getByName(`${name}-probe`), (_instance, state) => {
    const global = globalThis as { __dorpcCursors?: Cursors };
    if (global.__dorpcCursors) return;
    const cursors: Cursors = new Map();
    global.__dorpcCursors = cursors;
    const proto = Object.getPrototypeOf(state.storage.sql) as { exec: SqlStorage["exec"] };
    const exec = proto.exec;
    proto.exec = function (this: SqlStorage, query: string, ...bindings: unknown[]) {
      const cursor = exec.call(this, query, ...bindings);
      if (query.includes("_dorpc_")) {
        const list = cursors.get(this) ?? [];
        list.push(cursor);
        cursors.set(this, list);
      }
      return cursor;
    } as SqlStorage["exec"];
  });
  return () =>
    runInDurableObject(namespace.getByName(name), (_instance, state) => {
      const cursors = (globalThis as { __dorpcCursors?: Cursors }).__dorpcCursors!.get(state.storage.sql) ?? [];
      return {
        statements: cursors.length,
        rowsRead: cursors.reduce((sum, c) => sum + c.rowsRead, 0),
        rowsWritten: cursors.reduce((sum, c) => sum + c.rowsWritten, 0),
      };
    });
}

describe("the delivery record's storage cost", () => {
  it("each recorded call writes one row and reads none; a new connection (its Hello) writes one more", async () => {
    const name = uniqueName("cost");
    const read = await tally(name);
    using first = createTestClient<Counter>(env.COUNTER, name);
    await first.getValue(); // creates the tables, sweeps (at most hourly), records the session
    // getValue() wrote nothing: its row waits in memory; increment()'s write writes it first.
    await first.increment();
    const start = await read();
    for (let i = 0; i < 100; i++) await first.increment();
    const calls = await read();
    using second = createTestClient<Counter>(env.COUNTER, name);
    await second.increment();
    const connection = await read();
    const delta = (a: Tally, b: Tally): Tally => ({
      statements: b.statements - a.statements,
      rowsRead: b.rowsRead - a.rowsRead,
      rowsWritten: b.rowsWritten - a.rowsWritten,
    });
    // 100 increments: one upsert each, written with the increment's own write (KV, not counted here).
    expect(delta(start, calls)).toEqual({ statements: 100, rowsRead: 0, rowsWritten: 100 });
    // A new session's first connection: its Hello reads nothing and its session row is an
    // upsert written with its first call's answer (one more upsert). It says it has sent nothing
    // before, so its first call is not looked up (no late original can exist), and with fewer
    // calls than the window there is nothing of it to prune.
    expect(delta(calls, connection)).toEqual({ statements: 2, rowsRead: 0, rowsWritten: 2 });
    console.log(
      `record cost: per call ${JSON.stringify(delta(start, calls))} for 100 calls; a new connection and its first call ${JSON.stringify(delta(calls, connection))}; first use of the object ${JSON.stringify(start)}`,
    );
  });
});

describe("a session that ends", () => {
  /** Waits until the object has no socket left: the client's close has reached it. */
  const closedAtObject = (name: string) =>
    vi.waitFor(
      async () => {
        const open = await runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => state.getWebSockets().length);
        expect(open).toBe(0);
      },
      { timeout: 5_000, interval: 10 },
    );

  it("writes nothing when its client is disposed before its rows are written: a connection with 3 calls that wrote nothing costs 0 rows", async () => {
    const name = uniqueName("ended");
    const read = await tally(name, env.PATIENT_COUNTER);
    {
      using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
      for (let i = 0; i < 3; i++) expect(await client.getValue()).toBe(0);
    } // disposed: closes with 4002
    await closedAtObject(name);
    // A write of the object's own: the waiting rows, had they been kept, would be written with it.
    await runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => {
      state.storage.kv.put("after", 1);
    });
    expect(await read()).toEqual({ statements: 0, rowsRead: 0, rowsWritten: 0 });
  });

  it("a connection cut instead keeps them: the same calls' answers are written with the next write (with the tables and the session row)", async () => {
    const name = uniqueName("cut");
    const read = await tally(name, env.PATIENT_COUNTER);
    // No reconnect: a new connection would only blur what the cut left (and its dispose would end the session).
    const client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name, { reconnect: false });
    for (let i = 0; i < 3; i++) expect(await client.getValue()).toBe(0);
    dropConnection(client); // the object sees a cut (4006): a client may come back and resend
    await closedAtObject(name);
    await runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => {
      state.storage.kv.put("after", 1);
    });
    expect((await read()).rowsWritten).toBeGreaterThan(0);
    const answers = await runInDurableObject(
      env.PATIENT_COUNTER.getByName(name),
      (_instance, state) => state.storage.sql.exec<{ n: number }>(ANSWERS).one().n,
    );
    expect(answers).toBe(3);
    client[Symbol.dispose]();
  });
});

describe("the answers of calls that wrote storage", () => {
  it("share one row when they came in one frame: 64 increment() calls made in one turn write 1 row of answers", async () => {
    const name = uniqueName("cost-frame");
    const read = await tally(name);
    using client = createTestClient<Counter>(env.COUNTER, name);
    await client.increment(); // the tables, the sweep, the session: written now
    const before = await read();
    const values = await Promise.all(Array.from({ length: 64 }, () => client.increment()));
    expect(values).toEqual(Array.from({ length: 64 }, (_, i) => i + 2));
    const after = await read();
    // Each increment() wrote the counter (KV, not counted here); the 64 answers: one upsert.
    expect({ statements: after.statements - before.statements, rowsWritten: after.rowsWritten - before.rowsWritten }).toEqual({
      statements: 1,
      rowsWritten: 1,
    });
  });
});

/** Answers recorded in `_dorpc_replies` (a SELECT: it does not count as a write). */
const ANSWERS = "SELECT coalesce(sum(json_array_length(ids)), 0) AS n FROM _dorpc_replies";

describe("rows of calls that write nothing", () => {
  /** Answers recorded in the object, 0 before its tables exist. */
  const rows = (name: string) =>
    runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => {
      try {
        return state.storage.sql.exec<{ n: number }>(ANSWERS).one().n;
      } catch {
        return 0; // no table yet
      }
    });

  it("are written as one row: 100 calls that wrote nothing, then a write, cost 1 row written (their answers with the write's own)", async () => {
    const name = uniqueName("patient-batch");
    const read = await tally(name, env.PATIENT_COUNTER);
    using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
    await client.increment(); // the tables, the sweep, the session: written now
    const before = await read();
    for (let i = 0; i < 100; i++) await client.getValue();
    await client.increment(); // its write has the 100 waiting answers written with its own answer, as one row
    const after = await read();
    expect({ statements: after.statements - before.statements, rowsWritten: after.rowsWritten - before.rowsWritten }).toEqual({
      statements: 1,
      rowsWritten: 1,
    });
    expect(await rows(name)).toBe(102);
  });

  it("an async method that writes and does no I/O after it also takes them into its own row: 1 row written", async () => {
    const name = uniqueName("patient-async");
    const read = await tally(name, env.PATIENT_COUNTER);
    using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
    await client.increment();
    const before = await read();
    for (let i = 0; i < 10; i++) await client.getValue();
    expect(await client.incrementSoon()).toBe(2);
    const after = await read();
    expect({ statements: after.statements - before.statements, rowsWritten: after.rowsWritten - before.rowsWritten }).toEqual({
      statements: 1,
      rowsWritten: 1,
    });
    expect(await rows(name)).toBe(12);
  });

  it("a storage method taken out in a subclass's constructor (after super()) is watched too: its write has them written with it", async () => {
    const name = uniqueName("patient-bound");
    using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
    await client.increment(); // the tables, the sweep, the session: written now
    const before = await rows(name);
    for (let i = 0; i < 3; i++) await client.getValue();
    expect(await rows(name)).toBe(before); // waiting: flushAfter is a minute
    await client.putBound("k", 1);
    expect(await rows(name)).toBe(before + 4); // the three waiting answers, then putBound's own
  });

  it("wait in memory, and any write made through ctx.storage — here by code outside any call, as an alarm would — has them written in its transaction", async () => {
    const name = uniqueName("patient");
    using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
    await client.getValue();
    await client.echo("a");
    await client.getValue();
    expect(await rows(name)).toBe(0);
    await runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => {
      state.storage.kv.put("persisted-later", 1);
    });
    expect(await rows(name)).toBe(3);
  });

  it("every kind of write has them written in its transaction: KV, the async API, SQL (a SELECT does not), alarms", async () => {
    const writes: [string, (storage: DurableObjectStorage) => unknown][] = [
      ["kv.delete", (s) => s.kv.delete("nothing")],
      ["put", (s) => s.put("k", 1)],
      ["delete", (s) => s.delete("k")],
      ["sql INSERT", (s) => s.sql.exec("CREATE TABLE IF NOT EXISTS mine (n INTEGER)")],
      ["setAlarm", (s) => s.setAlarm(Date.now() + 3_600_000)],
      ["deleteAlarm", (s) => s.deleteAlarm()],
      ["transactionSync", (s) => s.transactionSync(() => s.kv.put("t", 1))],
    ];
    const name = uniqueName("patient-kinds");
    using client = createTestClient<PatientCounter>(env.PATIENT_COUNTER, name);
    let expected = 0;
    for (const [what, write] of writes) {
      await client.echo(what);
      expected++;
      await runInDurableObject(env.PATIENT_COUNTER.getByName(name), (_instance, state) => {
        state.storage.sql.exec("SELECT 1"); // a read: writes nothing
      });
      expect(await rows(name), `before ${what}`).toBe(expected - 1);
      await runInDurableObject(env.PATIENT_COUNTER.getByName(name), async (_instance, state) => {
        await write(state.storage);
      });
      expect(await rows(name), `after ${what}`).toBe(expected);
    }
  });

  it("are written once the object has been quiet for flushAfter (the default, 10 ms) when nothing else writes", async () => {
    const name = uniqueName("cost-flush");
    using client = createTestClient<Counter>(env.COUNTER, name);
    for (let i = 0; i < 20; i++) await client.getValue();
    await vi.waitFor(async () => {
      const n = await runInDurableObject(
        env.COUNTER.getByName(name),
        (_instance, state) => state.storage.sql.exec<{ n: number }>(ANSWERS).one().n,
      );
      expect(n).toBe(20);
    });
  });
});

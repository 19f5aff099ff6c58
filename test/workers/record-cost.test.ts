/**
 * What the exactly-once record costs in storage, as workerd counts it (the `rowsRead` /
 * `rowsWritten` of every SQL statement dorpc runs, the figures Durable Objects are billed by):
 * docs/reliability.md quotes these numbers.
 */
import { createTestClient } from "@dorpc/testing";
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

interface Tally {
  statements: number;
  rowsRead: number;
  rowsWritten: number;
}

/** Counts the rows of every statement run through this object's `ctx.storage.sql` from now on. */
async function tally(name: string): Promise<() => Promise<Tally>> {
  await runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => {
    const sql = state.storage.sql;
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    const exec = sql.exec.bind(sql);
    (sql as { exec: typeof sql.exec }).exec = ((query: string, ...bindings: unknown[]) => {
      const cursor = exec(query, ...bindings);
      if (query.includes("_dorpc_")) cursors.push(cursor);
      return cursor;
    }) as typeof sql.exec;
    (globalThis as { __tally?: () => Tally }).__tally = () => ({
      statements: cursors.length,
      rowsRead: cursors.reduce((sum, c) => sum + c.rowsRead, 0),
      rowsWritten: cursors.reduce((sum, c) => sum + c.rowsWritten, 0),
    });
  });
  return () => runInDurableObject(env.COUNTER.getByName(name), () => (globalThis as { __tally?: () => Tally }).__tally!());
}

describe("the delivery record's storage cost", () => {
  it("each recorded call writes one row and reads none; a new connection (its Hello) writes one more", async () => {
    const name = uniqueName("cost");
    const read = await tally(name);
    using first = createTestClient<Counter>(env.COUNTER, name);
    await first.getValue(); // creates the tables, sweeps (at most hourly), records the session and the call
    const start = await read();
    for (let i = 0; i < 100; i++) await first.increment();
    const calls = await read();
    using second = createTestClient<Counter>(env.COUNTER, name);
    await second.getValue();
    const connection = await read();
    const delta = (a: Tally, b: Tally): Tally => ({
      statements: b.statements - a.statements,
      rowsRead: b.rowsRead - a.rowsRead,
      rowsWritten: b.rowsWritten - a.rowsWritten,
    });
    // 100 increments: one upsert each (their counts are KV writes, not counted here).
    expect(delta(start, calls)).toEqual({ statements: 100, rowsRead: 0, rowsWritten: 100 });
    // A new session's Hello (a lookup and an upsert of its session row) and its first call.
    expect(delta(calls, connection)).toEqual({ statements: 3, rowsRead: 0, rowsWritten: 2 });
    console.log(
      `record cost: per call ${JSON.stringify(delta(start, calls))} for 100 calls; a new connection and its first call ${JSON.stringify(delta(calls, connection))}; first use of the object ${JSON.stringify(start)}`,
    );
  });
});

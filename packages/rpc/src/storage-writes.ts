/**
 * Which writes reach a Durable Object's storage, so the delivery record can keep the rows of
 * calls that wrote nothing in memory for a moment and still have them committed no later than
 * anything written after those calls (delivery.ts, "Rows of calls that wrote nothing").
 *
 * `watchWrites(storage)` replaces, on that storage object and its `kv` and `sql` objects (each is
 * one object for the life of the instance), every method that writes with a wrapper that counts
 * the write and first runs `before` — the record's flush, whose rows then join the implicit
 * transaction of the write that follows. Reads are not wrapped; a SQL statement counts as a write
 * unless it starts with SELECT. Writes made inside `transaction()` / `transactionSync()` are
 * counted once, when the transaction starts. `deleteAll()` (which in a SQLite-backed object drops
 * every table at once) runs inside the watch's `wipe`, when it has one, so the record can tell
 * what the deletion took (delivery-wipe.ts).
 *
 * Internal module.
 */
import type { Sql } from "./sql.js";

/** What the delivery record reads of the watch. */
export interface StorageWrites {
  /** Writes made through the watched storage since it was watched. */
  readonly count: number;
  /** Runs before each of them. */
  before: (() => void) | undefined;
  /** Runs `deleteAll()` (the `deleteAll` argument) and returns what it returned. */
  wipe: ((deleteAll: () => unknown) => unknown) | undefined;
  /** The storage's SQL, unwatched: dorpc's own rows do not count as the object's writes. */
  readonly sql: Sql;
}

type Methods = Record<string, unknown>;

/** Methods that write, per object. */
const WRITERS = {
  storage: ["put", "delete", "deleteAll", "setAlarm", "deleteAlarm", "transaction", "transactionSync"],
  kv: ["put", "delete"],
} as const;

const READ = /^\s*select\b/i;

const watched = new WeakMap<object, StorageWrites>();

/** Watches `storage` (once per object; later calls return the same watch). */
export function watchWrites(storage: { sql: Sql; kv?: object }): StorageWrites {
  const existing = watched.get(storage);
  if (existing) return existing;
  const sql = storage.sql;
  const exec = sql.exec;
  const watch = {
    count: 0,
    before: undefined as (() => void) | undefined,
    wipe: undefined as ((deleteAll: () => unknown) => unknown) | undefined,
    sql: { exec: (query: string, ...bindings: unknown[]) => exec.call(sql, query, ...bindings) },
  };
  const wrote = () => {
    watch.count++;
    watch.before?.();
  };
  const wrap = (target: Methods, name: string) => {
    const original = target[name];
    if (typeof original !== "function") return;
    target[name] =
      name === "deleteAll"
        ? function (this: unknown, ...args: unknown[]) {
            wrote();
            const run = () => original.apply(this, args);
            return watch.wipe ? watch.wipe(run) : run();
          }
        : function (this: unknown, ...args: unknown[]) {
            wrote();
            return original.apply(this, args);
          };
  };
  for (const name of WRITERS.storage) wrap(storage as unknown as Methods, name);
  if (storage.kv) for (const name of WRITERS.kv) wrap(storage.kv as Methods, name);
  (sql as { exec: Sql["exec"] }).exec = function (this: unknown, query: string, ...bindings: unknown[]) {
    if (!READ.test(query)) wrote();
    return exec.call(this, query, ...bindings);
  };
  watched.set(storage, watch);
  return watch;
}

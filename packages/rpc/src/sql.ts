/**
 * The part of a Durable Object's SQL API (`ctx.storage.sql`) dorpc uses, typed structurally so
 * the modules that keep records (delivery.ts, topics.ts) stay runtime-neutral and run in Node
 * tests over `node:sqlite` too.
 *
 * Internal module.
 */

/** A value a row holds. */
export type SqlValue = string | number | ArrayBuffer | null;

export interface SqlCursor {
  toArray(): Record<string, SqlValue>[];
  one(): Record<string, SqlValue>;
}

export interface Sql {
  exec(query: string, ...bindings: unknown[]): SqlCursor;
}

/** The SQL storage of a Durable Object instance, if it has one (SQLite-backed classes). */
export function sqlOf(target: object): Sql | undefined {
  const storage = (target as { ctx?: { storage?: { sql?: Sql } } }).ctx?.storage;
  return storage?.sql;
}

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

/** The storage of a Durable Object instance as dorpc reads it (`sql` only on SQLite-backed classes). */
export interface ObjectStorage {
  sql?: Sql;
  kv?: object;
}

/** The storage of a Durable Object instance (`ctx.storage`), if it has one. */
export function storageOf(target: object): ObjectStorage | undefined {
  return (target as { ctx?: { storage?: ObjectStorage } }).ctx?.storage;
}

/** The SQL storage of a Durable Object instance, if it has one (SQLite-backed classes). */
export function sqlOf(target: object): Sql | undefined {
  return storageOf(target)?.sql;
}

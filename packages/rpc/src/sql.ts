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

/** Per `ctx.storage.sql` object: whether it runs statements (see `sqlOf`). */
const enabled = new WeakMap<object, boolean>();

/**
 * The SQL storage of a Durable Object instance, if it has one (SQLite-backed classes). An object
 * on the key-value backend has a `ctx.storage.sql` too, whose every statement throws ("SQL is not
 * enabled for this Durable Object class"): it is tried once per instance, with a statement that
 * reads no row.
 */
export function sqlOf(target: object): Sql | undefined {
  let sql: Sql | undefined;
  try {
    sql = storageOf(target)?.sql;
  } catch {
    return undefined;
  }
  if (!sql) return undefined;
  let works = enabled.get(sql);
  if (works === undefined) {
    try {
      sql.exec("SELECT 1");
      works = true;
    } catch {
      works = false;
    }
    enabled.set(sql, works);
  }
  return works ? sql : undefined;
}

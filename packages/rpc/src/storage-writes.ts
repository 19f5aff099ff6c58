/**
 * Which writes reach a Durable Object's storage, so the delivery record can keep the rows of
 * calls that wrote nothing in memory for a moment and still have them committed no later than
 * anything written after those calls (delivery-writer.ts says when each row is written); and
 * when the whole storage is deleted, so that dorpc's own tables survive it in a consistent state.
 *
 * `watchWrites(storage)` replaces, on that storage object and its `kv` and `sql` objects (each is
 * one object for the life of the instance), every method that writes with a wrapper that counts
 * the write and first runs `before` — where the record sees to it that its waiting rows join the
 * implicit transaction of that write (delivery-writer.ts, `objectWrites`). Reads are not wrapped; a SQL
 * string counts as a write unless it is one statement starting with SELECT (`exec` runs every
 * statement of a string, so
 * `SELECT …; INSERT …` writes; a `;` inside a SELECT's string literal makes it count as a write
 * too, which costs only an earlier flush). Writes made inside `transaction()` /
 * `transactionSync()` are counted once, when the transaction starts.
 *
 * `onDeleteAll(storage, hook)`: in a SQLite-backed object `deleteAll()` drops every table at
 * once, dorpc's with the object's. Each hook runs just before the deletion (after the watch has
 * counted it and the record has written its waiting rows) and returns what to run just after it,
 * in the same turn, so in the same commit: the delivery record (delivery-wipe.ts) and the topic
 * log (topics.ts) make their tables again there and carry over what must survive.
 *
 * `afterTransaction(storage, fn)`: inside an explicit transaction (`transactionSync()`, or the
 * closure of `transaction()`), runs `fn(committed)` when the outermost one ends — `false` when
 * the one it was made in threw (its writes rolled back); returns false outside one. The topic
 * log defers pushing an event published in a transaction until it is committed.
 *
 * Internal module.
 */
import type { Sql } from "./sql.js";

/** What the delivery record reads of the watch. */
export interface StorageWrites {
  /** Writes made through the watched storage since it was watched. */
  readonly count: number;
  /** Runs before each of them; `transaction`: the write is a transaction the object opens (`transaction()`, `transactionSync()`). */
  before: ((transaction: boolean) => void) | undefined;
  /** The storage's SQL, unwatched: dorpc's own rows do not count as the object's writes. */
  readonly sql: Sql;
  /** `onDeleteAll` on the watched storage. */
  onDeleteAll(hook: WipeHook): void;
}

/** Runs just before `deleteAll()` and returns what to run just after it. */
export type WipeHook = () => () => void;

type Methods = Record<string, unknown>;

/** Methods that write, per object (`deleteAll` is wrapped by `wipeHooksOf`). */
const WRITERS = {
  storage: ["put", "delete", "setAlarm", "deleteAlarm", "transaction", "transactionSync"],
  kv: ["put", "delete"],
} as const;

const SELECT = /^\s*select\b/i;
/** A `;` with more text after it: the string holds another statement. */
const MORE = /;\s*\S/;

/** Whether `query` only reads (see the module comment). */
function reads(query: string): boolean {
  return SELECT.test(query) && !MORE.test(query);
}

const watched = new WeakMap<object, StorageWrites>();
/** Per watched storage: counts a write and runs `before`. */
const writers = new WeakMap<object, (transaction?: boolean) => void>();
const wipeHooks = new WeakMap<object, Set<WipeHook>>();

/** Watches `storage` (once per object; later calls return the same watch). */
export function watchWrites(storage: { sql: Sql; kv?: object }): StorageWrites {
  const existing = watched.get(storage);
  if (existing) return existing;
  const sql = storage.sql;
  const exec = sql.exec;
  const watch: StorageWrites & { count: number } = {
    count: 0,
    before: undefined,
    sql: { exec: (query: string, ...bindings: unknown[]) => exec.call(sql, query, ...bindings) },
    onDeleteAll: (hook) => onDeleteAll(storage, hook),
  };
  const wrote = (transaction = false) => {
    watch.count++;
    watch.before?.(transaction);
  };
  const wrap = (target: Methods, name: string) => {
    const original = target[name];
    if (typeof original !== "function") return;
    const transaction = name === "transaction" || name === "transactionSync";
    target[name] = function (this: unknown, ...args: unknown[]) {
      wrote(transaction);
      return original.apply(this, args);
    };
  };
  for (const name of WRITERS.storage) wrap(storage as unknown as Methods, name);
  if (storage.kv) for (const name of WRITERS.kv) wrap(storage.kv as Methods, name);
  (sql as { exec: Sql["exec"] }).exec = function (this: unknown, query: string, ...bindings: unknown[]) {
    if (!reads(query)) wrote();
    return exec.call(this, query, ...bindings);
  };
  writers.set(storage, wrote);
  wipeHooksOf(storage);
  watched.set(storage, watch);
  return watch;
}

/** Runs `hook` around every `deleteAll()` of `storage` from now on (see the module comment). */
export function onDeleteAll(storage: object, hook: WipeHook): void {
  wipeHooksOf(storage).add(hook);
}

/** The hooks of `storage`'s `deleteAll`, which is wrapped the first time they are asked for. */
function wipeHooksOf(storage: object): Set<WipeHook> {
  let hooks = wipeHooks.get(storage);
  if (hooks) return hooks;
  const all = new Set<WipeHook>();
  hooks = all;
  wipeHooks.set(storage, all);
  const original = (storage as Methods).deleteAll;
  if (typeof original === "function") {
    (storage as Methods).deleteAll = function (this: unknown, ...args: unknown[]) {
      writers.get(storage)?.(true); // the waiting rows now: after the deletion there is nothing to join
      const after = [...all].map((hook) => hook());
      const result = original.apply(this, args);
      for (const done of after) done();
      return result;
    };
  }
  return all;
}

/** Explicit transactions open on a storage, innermost last, each with what waits for its end. */
const openTransactions = new WeakMap<object, ((committed: boolean) => void)[][]>();

/** Tracks `storage`'s explicit transactions (once; see `afterTransaction`). */
export function trackTransactions(storage: object): void {
  if (openTransactions.has(storage)) return;
  const open: ((committed: boolean) => void)[][] = [];
  openTransactions.set(storage, open);
  const end = (committed: boolean) => {
    const done = open.pop()!;
    // Committed inside another one: it is committed when that one is.
    if (committed && open.length > 0) open[open.length - 1]!.push(...done);
    else for (const fn of done) fn(committed);
  };
  const methods = storage as Methods;
  const sync = methods.transactionSync;
  if (typeof sync === "function") {
    methods.transactionSync = function (this: unknown, ...args: unknown[]) {
      open.push([]);
      let result: unknown;
      try {
        result = sync.apply(this, args);
      } catch (error) {
        end(false);
        throw error;
      }
      end(true);
      return result;
    };
  }
  const async = methods.transaction;
  if (typeof async === "function") {
    methods.transaction = function (this: unknown, closure: unknown, ...rest: unknown[]) {
      if (typeof closure !== "function") return async.call(this, closure, ...rest);
      return async.call(
        this,
        async (...inner: unknown[]) => {
          open.push([]);
          try {
            const value = await closure(...inner);
            end(true);
            return value;
          } catch (error) {
            end(false);
            throw error;
          }
        },
        ...rest,
      );
    };
  }
}

/** See the module comment. */
export function afterTransaction(storage: object, fn: (committed: boolean) => void): boolean {
  const open = openTransactions.get(storage);
  if (!open?.length) return false;
  open[open.length - 1]!.push(fn);
  return true;
}

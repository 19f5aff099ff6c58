/**
 * Exactly-once delivery, the object's half: a record of the calls that ran and what they
 * answered, in the object's own SQLite storage, written in the same turn as the method's result
 * (so in the same implicit transaction as the writes the method made in that turn; the output
 * gate holds the reply until both are committed).
 *
 * A client session names itself with a random id (the Hello frame) and numbers its calls; after a
 * reconnect it resends every call it sent and got no answer for, flagged `Retry`. For each:
 *  - recorded → the stored answer is sent again, the method does not run;
 *  - still running (its first connection dropped while it ran) → answered when it finishes;
 *  - never ran → it runs now;
 *  - cannot be known (its record slot was reused, or the whole session expired) → `EXPIRED`.
 *
 * The record is bounded without a per-call scan: each session has `window` slots, call `id` goes
 * to slot `id % window` and a slot keeps the highest id written to it, so an old record is
 * overwritten, never searched for. Sessions idle for `maxAge` are swept at most once an hour
 * (per object, across restarts).
 *
 * Internal module (workerd only: `ctx.storage.sql`).
 */
import type { ResolvedDelivery } from "./delivery-options.js";
import { CallFlags } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { WireFrame } from "./frame.js";
import { type Sql, sqlOf } from "./sql.js";

/** What to do with an incoming call, before it runs. */
export type Decision =
  | { readonly kind: "run"; readonly record: boolean }
  | { readonly kind: "replay"; readonly frame: WireFrame }
  | { readonly kind: "wait"; readonly until: Promise<void> }
  | { readonly kind: "refuse"; readonly error: RpcError };

const RUN_RECORDED: Decision = { kind: "run", record: true };
const RUN_UNRECORDED: Decision = { kind: "run", record: false };

/** The marker stored for a call whose answer is not kept (record: false, or too large). */
const NOT_KEPT = "";

const SWEEP_EVERY = 3_600_000;

/** One object's delivery record. */
export class DeliveryRecord {
  private created = false;
  /** Recorded calls still running, by `session:id`: a resend waits for them. */
  private readonly running = new Map<string, { done: Promise<void>; finish: () => void }>();
  /** When each session's `last_at` was last written (to write it at most every few minutes). */
  private readonly touched = new Map<string, number>();
  /** When the record was last swept, read from storage once per instance (`undefined`: not read yet). */
  private lastSweep: number | undefined;

  constructor(
    private readonly sql: Sql,
    readonly options: ResolvedDelivery,
  ) {}

  private ensure(): void {
    if (this.created) return;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS _dorpc_calls (session TEXT NOT NULL, slot INTEGER NOT NULL, id INTEGER NOT NULL, frame BLOB NOT NULL, PRIMARY KEY (session, slot)) WITHOUT ROWID",
    );
    this.sql.exec("CREATE TABLE IF NOT EXISTS _dorpc_sessions (session TEXT PRIMARY KEY, last_at INTEGER NOT NULL) WITHOUT ROWID");
    this.created = true;
  }

  /**
   * A session said hello on a new connection. Returns false when the session is unknown although
   * it is resending calls: its record expired, so none of those resends can be trusted.
   */
  hello(session: string, resending: boolean): boolean {
    this.ensure();
    const now = Date.now();
    this.sweep(now);
    const known = this.sql.exec("SELECT 1 FROM _dorpc_sessions WHERE session = ?", session).toArray().length > 0;
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      session,
      now,
    );
    this.touched.set(session, now);
    return known || !resending;
  }

  /** Decides what an incoming call of `session` does. `record` false: the method keeps no record. */
  decide(session: string, id: number, flags: number, record: boolean, expiredSession: boolean): Decision {
    const retry = (flags & CallFlags.Retry) !== 0;
    if (!retry) return record ? RUN_RECORDED : RUN_UNRECORDED;
    if (!record) return RUN_UNRECORDED; // a read: running it again is what it would have done
    if (expiredSession) return { kind: "refuse", error: expired(id) };
    const key = `${session}:${id}`;
    const running = this.running.get(key);
    if (running) return { kind: "wait", until: running.done };
    this.ensure();
    const row = this.sql
      .exec("SELECT id, frame FROM _dorpc_calls WHERE session = ? AND slot = ?", session, id % this.options.window)
      .toArray()[0];
    if (!row || (row.id as number) < id) return RUN_RECORDED; // never ran: ids only grow
    if ((row.id as number) > id) return { kind: "refuse", error: expired(id) };
    const frame = row.frame;
    if (frame === NOT_KEPT) {
      return {
        kind: "refuse",
        error: new RpcError(
          "DISCONNECTED",
          `Call ${id} ran before the connection dropped, but its result was not kept (record: false, or larger than exactlyOnce.maxResultBytes); it was not run again.`,
        ),
      };
    }
    return { kind: "replay", frame: typeof frame === "string" ? frame : new Uint8Array(frame as ArrayBuffer) };
  }

  /** A recorded call is about to run: resends of it wait until `save`. */
  started(session: string, id: number): void {
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    this.running.set(`${session}:${id}`, { done, finish });
  }

  /** A recorded call answered: store the frame that carries its answer (or a marker). */
  save(session: string, id: number, frame: WireFrame, keep: boolean): void {
    this.ensure();
    const size = typeof frame === "string" ? frame.length : frame.byteLength;
    const stored = !keep || size > this.options.maxResultBytes ? NOT_KEPT : typeof frame === "string" ? frame : frame.slice().buffer;
    this.sql.exec(
      "INSERT INTO _dorpc_calls (session, slot, id, frame) VALUES (?, ?, ?, ?) ON CONFLICT(session, slot) DO UPDATE SET id = excluded.id, frame = excluded.frame WHERE excluded.id > _dorpc_calls.id",
      session,
      id % this.options.window,
      id,
      stored,
    );
    const now = Date.now();
    if (now - (this.touched.get(session) ?? 0) > 300_000) {
      this.sql.exec("UPDATE _dorpc_sessions SET last_at = ? WHERE session = ?", now, session);
      this.touched.set(session, now);
    }
    this.release(session, id);
  }

  /** A recorded call ended without an answer to keep (cancelled before it ran): let waiters re-decide. */
  release(session: string, id: number): void {
    const key = `${session}:${id}`;
    const running = this.running.get(key);
    if (!running) return;
    this.running.delete(key);
    running.finish();
  }

  /**
   * Forgets sessions idle longer than `maxAge`, at most once an hour per object — across
   * restarts too: the time of the last sweep is kept as the `last_at` of the session row named
   * "" (no session id is empty), so an object that hibernates often does not scan on every wake.
   */
  private sweep(now: number): void {
    if (this.lastSweep === undefined) {
      const row = this.sql.exec("SELECT last_at FROM _dorpc_sessions WHERE session = ''").toArray()[0];
      this.lastSweep = row ? (row.last_at as number) : 0;
    }
    if (now - this.lastSweep < SWEEP_EVERY) return;
    this.lastSweep = now;
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES ('', ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      now,
    );
    const cutoff = now - this.options.maxAge;
    this.sql.exec("DELETE FROM _dorpc_calls WHERE session IN (SELECT session FROM _dorpc_sessions WHERE last_at < ?)", cutoff);
    this.sql.exec("DELETE FROM _dorpc_sessions WHERE last_at < ?", cutoff);
  }
}

function expired(id: number): RpcError {
  return new RpcError(
    "EXPIRED",
    `Call ${id} was resent after its delivery record expired, so whether it ran cannot be known; it was not run again.`,
  );
}

const records = new WeakMap<object, DeliveryRecord | null>();

/** The delivery record of `target`, or `undefined` when it has no SQLite storage or it is off. */
export function deliveryOf(target: object, options: ResolvedDelivery | undefined): DeliveryRecord | undefined {
  if (!options) return undefined;
  let record = records.get(target);
  if (record === undefined) {
    const sql = sqlOf(target);
    record = sql ? new DeliveryRecord(sql, options) : null;
    records.set(target, record);
  }
  return record ?? undefined;
}

/**
 * When and how the delivery record (delivery.ts) writes its rows: the answers of recorded calls
 * and the sessions' own rows, kept in memory for a moment and written together.
 *
 * The answers are written in batches (their format: delivery-batches.ts): one row of
 * `_dorpc_replies` per session and write holds the answers of every call of that session written
 * then (a batch of the ≤ `flushAfter` ms of calls that wrote nothing is one row, not one per call:
 * rows written are what Durable Objects bill). A session keeps the batches of its last `window`
 * calls: a batch whose newest call is `window` or more calls older than the session's newest
 * recorded call is deleted (checked every `window / 4` calls, so the record holds at most about
 * 1.25 × `window` calls' answers plus one batch's). Sessions idle for `maxAge` are swept with the
 * record's writes, at most once an hour (per object, across restarts: delivery-sessions.ts).
 *
 * When a call's row is written (see `save`): a call during which the object's storage was written
 * (by it or by anything else) has its row written at once, in the same turn as its reply, so in
 * the implicit transaction of those writes. A call during which nothing was written — a read, an
 * empty call, a change to memory only — has its row kept in memory and written by the next write
 * made through `ctx.storage` (in the same transaction, with the writing call's own answer when it
 * answers in the same run: `objectWrites`), or when
 * `FLUSH_ROWS` rows or `FLUSH_BYTES` of answers wait, or once the object has been quiet for
 * `exactlyOnce.flushAfter` ms (default 10; at most a second under unbroken traffic:
 * delivery-schedule.ts says when and why) — whichever comes first. A commit of its own per call,
 * the cost that made calls that write nothing 1.3–1.6 × slower, is so shared by every call of the
 * burst. A session's own row (`_dorpc_sessions`: that the object knows it, and when it was last
 * seen) waits with them, so a new connection's first reply is not held for a commit either.
 *
 * Invariants (what delivery.ts relies on to answer a resend):
 *  - No storage commit that follows a call is committed without the call's row.
 *  - A session's row is written before (or with) the first commit that includes anything of the
 *    session's: `flush` writes the sessions first.
 *  - Every write of the record starts with `beforeWrite`: its tables exist, and a sweep that is
 *    due runs in the same commit.
 *
 * Internal module (delivery.ts).
 */
import { CREATE_REPLIES, deleteAnswersUpTo, writeAnswers } from "./delivery-batches.js";
import type { ResolvedDelivery } from "./delivery-options.js";
import type { RunningCalls } from "./delivery-running.js";
import { FlushSchedule } from "./delivery-schedule.js";
import { type SessionMemory, SessionSweep } from "./delivery-sessions.js";
import { type Row, WaitingAnswers } from "./delivery-waiting.js";
import type { Sql } from "./sql.js";
import type { StorageWrites } from "./storage-writes.js";

/**
 * Microtask hops the waiting rows wait at most, after a storage write, for the call that wrote
 * to answer and take them into its row: an `async` method that resolves without I/O answers
 * within a few. Every hop is a microtask, so all of them run before the turn's commit.
 */
const MERGE_HOPS = 8;

/** Rows of calls that wrote nothing are written at once when this many wait, or this many bytes of answers. */
const FLUSH_ROWS = 4096;
const FLUSH_BYTES = 1 << 20;

/** Writes one object's delivery record: its tables, its batch rows and its session rows. */
export class RecordWriter {
  private created = false;
  /** Answers not written yet, in the order they were saved. */
  private readonly pending = new WaitingAnswers();
  /** Answers wait that must be written before this turn ends (see `save`'s `inFlush`). */
  private due = false;
  /** A microtask will write the waiting rows (see `objectWrites`). */
  private flushQueued = false;
  /** Session rows not written yet: session → the `last_at` to write. */
  private readonly sessions = new Map<string, number>();
  /** When the rows waiting in memory are written if no storage write takes them first. */
  private readonly schedule: FlushSchedule;
  /** Forgets sessions idle for `maxAge` (delivery-sessions.ts). */
  private readonly sweep: SessionSweep;

  /**
   * `running` and `memory` are the record's own (shared, not copied): whether a call that wrote is
   * still running, when a session's row is due and when its batches are pruned. `writes`: the watch
   * on the object's storage. Without one every row is written at once, in the turn of its reply.
   */
  constructor(
    private readonly sql: Sql,
    private readonly options: ResolvedDelivery,
    private readonly running: RunningCalls,
    private readonly memory: SessionMemory,
    private readonly writes?: StorageWrites,
  ) {
    this.schedule = new FlushSchedule(options.flushAfter, () => this.flushLater());
    this.sweep = new SessionSweep(sql, options.maxAge);
    if (writes) writes.before = (transaction) => this.objectWrites(transaction);
  }

  /**
   * The object is about to write its storage, and the rows waiting in memory must commit with
   * that write. They are written before this run of JavaScript ends, so before the turn's implicit
   * transaction commits: with the answer of the call that writes, as one batch row, when it
   * answers in the same run (a synchronous method does, an `async` one that does no I/O after the
   * write too), else by a microtask queued now (`MERGE_HOPS`). Before a
   * transaction the object opens itself they are written at once: inside it they would roll back
   * with it.
   */
  private objectWrites(transaction: boolean): void {
    if (transaction) this.flush();
    else if (!this.flushQueued && (this.pending.count > 0 || this.sessions.size > 0)) {
      this.flushQueued = true;
      this.queueFlush(MERGE_HOPS);
    }
  }

  /** Writes the waiting rows in a microtask: up to `hops` later while a call that wrote has not answered. */
  private queueFlush(hops: number): void {
    queueMicrotask(() => {
      if (!this.flushQueued) return; // written already, with an answer
      if (hops > 0 && this.writerRunning()) this.queueFlush(hops - 1);
      else this.flushLater();
    });
  }

  /** Whether a recorded call admitted before the latest storage write is still running. */
  private writerRunning(): boolean {
    return this.running.startedBefore(this.writes?.count ?? 0);
  }

  /**
   * Whether the record's tables exist, found with a read (creating them is a write, and a write
   * holds every reply until it commits): a new object's first hello and resends read nothing.
   */
  tablesExist(): boolean {
    if (this.created) return true;
    const row = this.sql
      .exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('_dorpc_replies', '_dorpc_sessions')")
      .toArray()[0];
    this.created = row?.n === 2;
    return this.created;
  }

  /** Creates the record's tables unless it made them (or found them) already. */
  ensure(): void {
    if (this.created) return;
    this.sql.exec(CREATE_REPLIES); // delivery-batches.ts: one row per session and write
    // The one-row-per-call table of earlier versions (0.1), if the object has one.
    this.sql.exec("DROP TABLE IF EXISTS _dorpc_calls");
    this.sql.exec("CREATE TABLE IF NOT EXISTS _dorpc_sessions (session TEXT PRIMARY KEY, last_at INTEGER NOT NULL) WITHOUT ROWID");
    this.created = true;
  }

  /** The object's `deleteAll()` took the tables: the next write makes them again (delivery-wipe.ts). */
  tablesDropped(): void {
    this.created = false;
  }

  /** Whether `session`'s row waits in memory (so the object knows it, and saw it just now). */
  sessionWaiting(session: string): boolean {
    return this.sessions.has(session);
  }

  /**
   * Keeps a recorded call's answer `row` until it is written: in this turn when the storage was
   * written while the call ran (`mark`: the writes counted when it was admitted, `undefined` when
   * it was not; also when there is no watch, or `flushAfter` is 0) — at once, or with `inFlush` at
   * the `flushDue()` that ends the outbox's flush this save runs in, together with the answers of
   * the other calls of that flush — else in memory until the next write or a quiet `flushAfter` ms
   * (see the module comment). Writes the session's row too when it is due again.
   */
  save(row: Row, mark: number | undefined, inFlush: boolean): void {
    this.pending.add(row);
    const now = Date.now();
    this.schedule.activity(now);
    if (!this.writes || mark === undefined || mark !== this.writes.count || this.options.flushAfter === 0) {
      if (inFlush) this.due = true;
      else this.flush();
    } else this.waitOrFlush(now);
    if (this.memory.rowDue(row.session, now)) this.touch(row.session, now);
  }

  /** The waiting rows are written on the schedule's timer at the latest (if nothing writes them first). */
  writeOnTimer(now: number): void {
    this.schedule.waiting(now);
  }

  /** See `DeliveryRecord.acknowledge`: the waiting answers of those calls become markers. */
  acknowledge(session: string, below: number): void {
    this.pending.acknowledge(session, below);
  }

  /** Writes what `save(…, inFlush: true)` left for the end of the flush it ran in. */
  flushDue(): void {
    if (this.due) this.flush(); // flush() clears `due`
  }

  /** Writes every row kept in memory (before a storage write, a resend's lookup, or on the timer). */
  flush(): void {
    this.due = false;
    this.flushQueued = false;
    this.running.compact();
    this.schedule.cancel();
    if (this.sessions.size > 0) {
      // Sessions first: a call row is never committed without its session's row.
      const sessions = [...this.sessions];
      this.sessions.clear();
      for (const [session, lastAt] of sessions) this.writeSession(session, lastAt);
    }
    if (this.pending.count === 0) return;
    const rows = this.pending.take();
    const only = rows[0]!.session;
    if (rows.every((row) => row.session === only)) {
      // The common case (one client, or one session's calls): no grouping.
      this.writeBatch(only, rows);
      return;
    }
    const bySession = new Map<string, Row[]>();
    for (const row of rows) {
      const list = bySession.get(row.session);
      if (list) list.push(row);
      else bySession.set(row.session, [row]);
    }
    for (const [session, list] of bySession) this.writeBatch(session, list);
  }

  /** `session` is over (see `DeliveryRecord.ended`): its rows waiting in memory are dropped, unwritten. */
  sessionEnded(session: string): void {
    this.sessions.delete(session);
    this.pending.drop(session);
    if (this.pending.count === 0 && this.sessions.size === 0) this.schedule.cancel();
  }

  /** Notes that `session` was seen at `now`: its row is written with the waiting rows. */
  touch(session: string, now: number): void {
    this.memory.rowWritten(session, now);
    if (!this.writes || this.options.flushAfter === 0) {
      this.writeSession(session, now);
      return;
    }
    this.sessions.set(session, now);
    this.schedule.activity(now);
    this.waitOrFlush(now);
  }

  /** Flushes when too much waits, else leaves the rows to the schedule. */
  private waitOrFlush(now: number): void {
    if (this.pending.count + this.sessions.size >= FLUSH_ROWS || this.pending.bytes >= FLUSH_BYTES) this.flush();
    else this.schedule.waiting(now);
  }

  /** The schedule's write: the waiting rows, now. */
  private flushLater(): void {
    try {
      this.flush();
    } catch (error) {
      // As if the object had been reset before the rows were committed: their resends run again.
      console.error("dorpc: the delivery record could not write its rows:", error);
    }
  }

  /** Every write of the record starts here: the tables, then the sweep when one is due. */
  beforeWrite(): void {
    this.ensure();
    this.sweep.run(Date.now(), () => this.tablesExist());
  }

  private writeSession(session: string, lastAt: number): void {
    this.beforeWrite();
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      session,
      lastAt,
    );
  }

  /** Writes the answers of one session (delivery-batches.ts), then prunes its old ones when due. */
  private writeBatch(session: string, rows: readonly Row[]): void {
    this.beforeWrite();
    this.prune(session, writeAnswers(this.sql, session, rows));
  }

  /**
   * Deletes `session`'s batches older than its window: at its first write in this instance (an
   * object that hibernates between calls forgets when it last did) or after it was idle for
   * minutes (delivery-sessions.ts), then once every `window / 4` calls.
   */
  private prune(session: string, last: number): void {
    if (!this.memory.pruneDue(session, last, Math.max(1, Math.floor(this.options.window / 4)))) return;
    // Call ids start at 1: a session that has not made `window` calls has nothing to prune (a new
    // connection's session, mostly), and the statement would cost a write's work for nothing.
    if (last - this.options.window < 1) return;
    deleteAnswersUpTo(this.sql, session, last - this.options.window);
  }
}

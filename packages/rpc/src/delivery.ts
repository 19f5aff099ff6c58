/**
 * Exactly-once delivery, the object's half: a record of the calls that ran and what they
 * answered, in the object's own SQLite storage.
 *
 * A client session names itself with a random id (the Hello frame) and numbers its calls; after a
 * reconnect it resends every call it sent and got no answer for, flagged `Retry`. For each:
 *  - recorded → the stored answer is sent again, the method does not run;
 *  - still running (its first connection dropped while it ran) → answered when it finishes;
 *  - never ran → it runs now;
 *  - cannot be known (`window` or more later calls of its session were recorded since, or the
 *    whole session expired) → `EXPIRED`.
 *
 * The answers are written in batches (their format: delivery-batches.ts): one row of
 * `_dorpc_replies` per session and write holds the answers of every call of that session written
 * then (a batch of the ≤ `flushAfter` ms of calls that wrote nothing is one row, not one per call:
 * rows written are what Durable Objects bill). A session keeps the batches of its last `window`
 * calls: a batch whose newest call is `window` or more calls older than the session's newest
 * recorded call is deleted (checked every `window / 4` calls, so the record holds at most about
 * 1.25 × `window` calls' answers plus one batch's), and a resend of a call that old is refused (EXPIRED), whether
 * or not its batch is still there.
 * Sessions idle for `maxAge` are swept at most once an hour (per object, across restarts).
 *
 * When a call's row is written (see `save`): a call during which the object's storage was written
 * (by it or by anything else) has its row written at once, in the same turn as its reply, so in
 * the implicit transaction of those writes. A call during which nothing was written — a read, an
 * empty call, a change to memory only — has its row kept in memory and written by the next write
 * made through `ctx.storage` (in the same transaction, with the writing call's own answer when it
 * answers in the same run: `objectWrites`), or when
 * `FLUSH_ROWS` rows or `FLUSH_BYTES` of answers wait, or once the object has been quiet for
 * `exactlyOnce.flushAfter` ms (default 10; at most a second under unbroken traffic:
 * delivery-schedule.ts says when and why) — whichever comes first. Either way no storage commit
 * that follows the call can be committed without its row, which is what a resend relies on; and
 * a commit of its own per call, the cost that made calls that write nothing 1.3–1.6 × slower, is
 * shared by every call of the burst.
 *
 * A session's own row (`_dorpc_sessions`: that the object knows it, and when it was last seen)
 * waits with them, so a new connection's first reply is not held for a commit either. The row is
 * always written before (or with) the first commit that includes anything of the session's, so
 * a session the object does not know after a reset has no committed effect: a resend of it that
 * is not older than `maxAge` (the client says how old it is in its hello) runs again instead of
 * being refused as EXPIRED, exactly like a resend of a call whose row was still waiting.
 *
 * Internal module (workerd, and Node tests over `node:sqlite`; delivery-binding.ts binds it to an object).
 */
import {
  ACKNOWLEDGED,
  CREATE_REPLIES,
  deleteAnswersUpTo,
  findAnswer,
  keptAnswer,
  NOT_KEPT,
  newestAnswer,
  type Unbuilt,
  writeAnswers,
} from "./delivery-batches.js";
import type { ResolvedDelivery } from "./delivery-options.js";
import { FlushSchedule } from "./delivery-schedule.js";
import { type Row, WaitingAnswers } from "./delivery-waiting.js";
import { SessionMemory, SessionSweep } from "./delivery-sessions.js";
import { acknowledgedError, expired, notKept, wipedError } from "./delivery-refusals.js";
import { Wipes } from "./delivery-wipe.js";
import { ForgottenSessions } from "./delivery-forgotten.js";
import { CallFlags, FrameKind, ReplyStatus } from "./envelopes.js";
import { type Cancellable, RunningCalls } from "./delivery-running.js";
import type { RpcError } from "./errors.js";
import { type WireFrame, writeFrame } from "./frame.js";
import type { Sql } from "./sql.js";
import type { StorageWrites } from "./storage-writes.js";

/** What to do with an incoming call, before it runs. */
export type Decision =
  | { readonly kind: "run"; readonly record: boolean }
  | { readonly kind: "replay"; readonly frame: WireFrame }
  | { readonly kind: "wait"; readonly until: Promise<void> }
  | { readonly kind: "refuse"; readonly error: RpcError };

const RUN_RECORDED: Decision = { kind: "run", record: true };
const RUN_UNRECORDED: Decision = { kind: "run", record: false };

/**
 * Microtask hops the waiting rows wait at most, after a storage write, for the call that wrote
 * to answer and take them into its row: an `async` method that resolves without I/O answers
 * within a few. Every hop is a microtask, so all of them run before the turn's commit.
 */
const MERGE_HOPS = 8;

/** Rows of calls that wrote nothing are written at once when this many wait, or this many bytes of answers. */
const FLUSH_ROWS = 4096;
const FLUSH_BYTES = 1 << 20;

/** One object's delivery record. */
export class DeliveryRecord {
  private created = false;
  /** Recorded calls still running (delivery-running.ts): a resend waits for them. */
  private readonly running = new RunningCalls();
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
  /** Per session: when its row was written, when its old answers are pruned (delivery-sessions.ts). */
  private readonly memory: SessionMemory;
  /** Forgets sessions idle for `maxAge` (delivery-sessions.ts). */
  private readonly sweep: SessionSweep;
  /** The last `deleteAll()` of the object's storage, and the sessions that may be older (delivery-wipe.ts). */
  private readonly wipes: Wipes;
  /** Sessions it forgot and that came back resending (delivery-forgotten.ts). */
  private readonly forgottenSessions: ForgottenSessions;

  /**
   * `writes`: the watch on the object's storage. Without one every row is written at once, in the
   * turn of its reply.
   */
  constructor(
    private readonly sql: Sql,
    readonly options: ResolvedDelivery,
    private readonly writes?: StorageWrites,
  ) {
    this.schedule = new FlushSchedule(options.flushAfter, () => this.flushLater());
    this.wipes = new Wipes(sql, options.maxAge);
    this.forgottenSessions = new ForgottenSessions(
      sql,
      () => this.beforeWrite(),
      () => this.tablesExist(),
    );
    this.sweep = new SessionSweep(sql, options.maxAge);
    this.memory = new SessionMemory(options.maxAge);
    if (writes) {
      writes.before = (transaction) => this.objectWrites(transaction);
      writes.onDeleteAll(() => this.wiping());
    }
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

  /** The object's `deleteAll()` is about to take the record's tables too (delivery-wipe.ts). */
  private wiping(): () => void {
    const recorded = this.tablesExist();
    return () => {
      this.created = false;
      this.memory.clear();
      if (recorded) {
        this.ensure();
        this.wipes.wiped(Date.now());
      }
    };
  }

  /**
   * Whether the record's tables exist, found with a read (creating them is a write, and a write
   * holds every reply until it commits): a new object's first hello and resends read nothing.
   */
  private tablesExist(): boolean {
    if (this.created) return true;
    const row = this.sql
      .exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('_dorpc_replies', '_dorpc_sessions')")
      .toArray()[0];
    this.created = row?.n === 2;
    return this.created;
  }

  private ensure(): void {
    if (this.created) return;
    this.sql.exec(CREATE_REPLIES); // delivery-batches.ts: one row per session and write
    // The one-row-per-call table of earlier versions (0.1), if the object has one.
    this.sql.exec("DROP TABLE IF EXISTS _dorpc_calls");
    this.sql.exec("CREATE TABLE IF NOT EXISTS _dorpc_sessions (session TEXT PRIMARY KEY, last_at INTEGER NOT NULL) WITHOUT ROWID");
    this.created = true;
  }

  /**
   * A session said hello on a new connection. Returns false when the session is unknown although
   * it is resending calls and does not say it is younger than `maxAge`: its record may have been
   * swept, so none of those resends can be trusted. A resending session that may have begun
   * before the object's storage was wiped (delivery-wipe.ts) is noted: its resends are only
   * answered from the record, never run again.
   *
   * `age`: how long ago the client's session began, in ms by the client's clock (sent with a
   * resending hello). A session younger than `maxAge` cannot have been swept (it was last seen
   * after it began), so if the object does not know it, its row never reached a commit, and
   * neither did anything its calls did (every write commits the waiting rows with it). A tenth of
   * `maxAge` is kept as margin for the two clocks.
   */
  hello(session: string, resending: boolean, age?: number): boolean {
    const now = Date.now();
    // A row older than maxAge counts as gone whether or not a sweep has deleted it yet: the sweep
    // runs with the record's next write, which may come before this session's resends are decided.
    const inMemory = this.sessions.has(session);
    let lastAt: number | undefined = inMemory ? now : undefined;
    if (resending) {
      // One statement reads the session's row and whether it was forgotten (delivery-forgotten.ts).
      if (!inMemory || !this.forgottenSessions.isKnown(session)) {
        const read = this.forgottenSessions.read(session);
        if (!inMemory) lastAt = read.lastAt;
      }
    } else if (!inMemory && this.tablesExist()) {
      lastAt = this.sql.exec("SELECT last_at FROM _dorpc_sessions WHERE session = ?", session).toArray()[0]?.last_at as number | undefined;
    }
    const known = lastAt !== undefined && lastAt >= now - this.options.maxAge;
    const accepted = known || !resending || (age !== undefined && age < this.options.maxAge * 0.9);
    this.wipes.hello(session, resending, now, age, () => this.tablesExist());
    // Forgotten: what it resends from before now is refused, here and on any later connection.
    if (!accepted) this.forgottenSessions.forget(session, now);
    else this.touch(session, now);
    return accepted;
  }

  /** Decides what an incoming call of `session` does. `record` false: the method keeps no record. */
  decide(session: string, id: number, flags: number, record: boolean, expiredSession: boolean): Decision {
    const retry = (flags & CallFlags.Retry) !== 0;
    if (!record) return RUN_UNRECORDED; // a read: running it again is what it would have done
    // A new call, unless its id was seen (see SessionMemory.arrivedBefore): then it is checked
    // like a resend, except that a call with no row simply never ran.
    const seen = this.memory.arrivedBefore(session, id);
    // First call of the session in this instance: an earlier instance may have answered its
    // resend (an HTTP request overtaken by it, then an eviction), so the record tells.
    const late = !retry && (seen === true || (seen === undefined && this.sessionAnsweredFrom(session, id)));
    if (!retry && !late) {
      this.forgottenSessions.newCall(session, id, Date.now());
      return RUN_RECORDED;
    }
    // Still running from an earlier connection: its answer comes when it ends.
    const running = this.running.get(session, id);
    if (running) return { kind: "wait", until: this.running.ended(running) };
    if (expiredSession && retry) {
      // Kept as the call's answer: a resend of it on a later connection is told the same, and
      // never run (the session's row is written with it).
      const error = expired(id);
      // Written with the other answers of the frame's flush (one row), not one row each.
      this.save(
        session,
        id,
        writeFrame(FrameKind.Replies, `[${JSON.stringify([id, ReplyStatus.Failed, error.code, error.message])}]`, []),
        "always",
        true,
      );
      this.schedule.waiting(Date.now()); // written with the frame's flush, or on the timer at the latest
      return { kind: "refuse", error };
    }
    this.flush();
    if (!this.tablesExist()) return RUN_RECORDED;
    if (late) {
      const newest = newestAnswer(this.sql, session);
      if (newest !== undefined && newest - id >= this.options.window) return { kind: "refuse", error: expired(id) };
      const frame = findAnswer(this.sql, session, id);
      if (frame === undefined) return RUN_RECORDED;
      return frame === NOT_KEPT || frame === ACKNOWLEDGED ? { kind: "refuse", error: markerRefusal(frame, id) } : { kind: "replay", frame };
    }
    const newest = newestAnswer(this.sql, session);
    // A session older than the last wipe, or forgotten: a call without a row may have run.
    const forgotten = this.forgottenSessions.covers(session, id);
    const spans = forgotten || this.wipes.spans(session);
    if (!spans && (newest === undefined || newest < id)) return RUN_RECORDED; // never ran: ids only grow
    if (newest !== undefined && newest - id >= this.options.window) return { kind: "refuse", error: expired(id) };
    const frame = newest === undefined ? undefined : findAnswer(this.sql, session, id);
    if (frame === undefined) return spans ? { kind: "refuse", error: forgotten ? expired(id) : wipedError(id) } : RUN_RECORDED; // else a later call was recorded, this one never was
    if (frame === NOT_KEPT || frame === ACKNOWLEDGED) return { kind: "refuse", error: markerRefusal(frame, id) };
    return { kind: "replay", frame };
  }

  /** Whether the record holds an answer of `session` to call `id` or a later one. */
  private sessionAnsweredFrom(session: string, id: number): boolean {
    // (Answers waiting in memory are of sessions this instance has seen: none of this one's.)
    if (!this.tablesExist()) return false;
    const newest = newestAnswer(this.sql, session);
    return newest !== undefined && newest >= id;
  }

  /** A recorded call is about to run: resends of it wait until `save`. */
  started(session: string, id: number, run?: Cancellable): void {
    this.running.started(session, id, this.writes?.count ?? 0, run);
  }

  /** See `RunningCalls.cancel`. */
  cancel(session: string, id?: number): void {
    this.running.cancel(session, id);
  }

  /**
   * A recorded call answered: store the frame that carries its answer (or a marker). Written in
   * this turn when the storage was written while the call ran (or there is no watch, or
   * `flushAfter` is 0) — at once, or with `inFlush` at the `flushDue()` that ends the outbox's
   * flush this save runs in, together with the answers of the other calls of that flush — else
   * kept in memory until the next write or a quiet `flushAfter` ms (see the module comment). A
   * binary frame is kept as it is, not copied: the caller hands it over, or hands over an Unbuilt
   * one (server-callee.ts), built only if it is written (`keptAnswer` says what is kept).
   */
  save(session: string, id: number, frame: WireFrame | Unbuilt, keep: boolean | "always", inFlush = false): void {
    const row: Row = { session, id, ...keptAnswer(frame, keep, this.options.maxResultBytes) };
    this.pending.add(row);
    const running = this.running.get(session, id);
    const now = Date.now();
    this.schedule.activity(now);
    if (!this.writes || !running || running.mark !== this.writes.count || this.options.flushAfter === 0) {
      if (inFlush) this.due = true;
      else this.flush();
    } else this.waitOrFlush(now);
    if (this.memory.rowDue(session, now)) this.touch(session, now);
    this.release(session, id);
  }

  /**
   * The client of `session` has had the replies of all its calls below `below` (or gave them up
   * and never resends them): of their answers still waiting in memory, only a marker is written
   * (ACKNOWLEDGED: a duplicate is refused, never run). A read-heavy session so writes no answers
   * but those of the calls it had not acknowledged when the rows were written; and large answers
   * no longer fill the rows (nor, past `FLUSH_BYTES`, force a write in the middle of a burst).
   * Rows already written keep their answers until pruned. Costs the session's waiting rows.
   */
  acknowledge(session: string, below: number): void {
    this.pending.acknowledge(session, below);
  }

  /** Writes what `save(…, inFlush: true)` left for the end of the flush it ran in. */
  flushDue(): void {
    if (this.due) this.flush(); // flush() clears `due`
  }

  /** A recorded call ended without an answer to keep (cancelled before it ran): let waiters re-decide. */
  release(session: string, id: number): void {
    this.running.release(session, id);
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

  /** Notes that `session` was seen at `now`: its row is written with the waiting rows. */
  private touch(session: string, now: number): void {
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
  private beforeWrite(): void {
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
    deleteAnswersUpTo(this.sql, session, last - this.options.window);
  }
}

/** The refusal of a call whose row is a marker. */
function markerRefusal(marker: string | Uint8Array, id: number): RpcError {
  return marker === ACKNOWLEDGED ? acknowledgedError(id) : notKept(id);
}

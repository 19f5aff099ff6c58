/**
 * Exactly-once delivery, the object's half: a record of the calls that ran and what they
 * answered, in the object's own SQLite storage. This file decides what an incoming call does;
 * when and how the record's rows are written is delivery-writer.ts.
 *
 * A client session names itself with a random id (the Hello frame) and numbers its calls; after a
 * reconnect it resends every call it sent and got no answer for, flagged `Retry`. For each:
 *  - recorded → the stored answer is sent again, the method does not run;
 *  - still running (its first connection dropped while it ran) → answered when it finishes;
 *  - never ran → it runs now;
 *  - cannot be known (`window` or more later calls of its session were recorded since, or the
 *    whole session expired) → `EXPIRED`.
 *
 * A session's batches of answers older than its last `window` calls are pruned (delivery-writer.ts),
 * and a resend of a call that old is refused (EXPIRED), whether or not its batch is still there.
 *
 * The writer (delivery-writer.ts) commits a call's row no later than any storage write that
 * follows the call, and a session's own row no later than anything of the session's. So a session
 * the object does not know after a reset has no committed effect: a resend of it that is not older than `maxAge` (the
 * client says how old it is in its hello) runs again instead of being refused as EXPIRED, exactly
 * like a resend of a call whose row was still waiting.
 *
 * Internal module (workerd, and Node tests over `node:sqlite`; delivery-binding.ts binds it to an object).
 */
import { ACKNOWLEDGED, findAnswer, keptAnswer, NOT_KEPT, newestAnswer, type Unbuilt } from "./delivery-batches.js";
import type { ResolvedDelivery } from "./delivery-options.js";
import { SessionMemory } from "./delivery-sessions.js";
import type { Row } from "./delivery-waiting.js";
import { acknowledgedError, expired, notKept, wipedError } from "./delivery-refusals.js";
import { Wipes } from "./delivery-wipe.js";
import { ForgottenSessions } from "./delivery-forgotten.js";
import { RecordWriter } from "./delivery-writer.js";
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

/** One object's delivery record. */
export class DeliveryRecord {
  /** Recorded calls still running (delivery-running.ts): a resend waits for them. */
  private readonly running = new RunningCalls();
  /** Per session: when its row was written, when its old answers are pruned (delivery-sessions.ts). */
  private readonly memory: SessionMemory;
  /** When and how the rows are written (delivery-writer.ts); the tables are its to make. */
  private readonly writer: RecordWriter;
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
    this.memory = new SessionMemory(options.maxAge);
    this.writer = new RecordWriter(sql, options, this.running, this.memory, writes);
    this.wipes = new Wipes(sql, options.maxAge);
    this.forgottenSessions = new ForgottenSessions(
      sql,
      () => this.writer.beforeWrite(),
      () => this.writer.tablesExist(),
    );
    writes?.onDeleteAll(() => this.wiping());
  }

  /** The object's `deleteAll()` is about to take the record's tables too (delivery-wipe.ts). */
  private wiping(): () => void {
    const recorded = this.writer.tablesExist();
    return () => {
      this.writer.tablesDropped();
      this.memory.clear();
      if (recorded) {
        this.writer.ensure();
        this.wipes.wiped(Date.now());
      }
    };
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
  hello(session: string, resending: boolean, age?: number, fresh = false): boolean {
    const now = Date.now();
    // A row older than maxAge counts as gone whether or not a sweep has deleted it yet: the sweep
    // runs with the record's next write, which may come before this session's resends are decided.
    const inMemory = this.writer.sessionWaiting(session);
    let lastAt: number | undefined = inMemory ? now : undefined;
    if (resending) {
      // One statement reads the session's row and whether it was forgotten (delivery-forgotten.ts).
      if (!inMemory || !this.forgottenSessions.isKnown(session)) {
        const read = this.forgottenSessions.read(session);
        if (!inMemory) lastAt = read.lastAt;
      }
    }
    // A hello that resends nothing is accepted whatever the record knows of its session: nothing
    // is read for it (its row is written with the next rows, touch below).
    const known = lastAt !== undefined && lastAt >= now - this.options.maxAge;
    const accepted = known || !resending || (age !== undefined && age < this.options.maxAge * 0.9);
    this.wipes.hello(session, resending, now, age, () => this.writer.tablesExist());
    // Forgotten: what it resends from before now is refused, here and on any later connection.
    if (!accepted) this.forgottenSessions.forget(session, now);
    else this.writer.touch(session, now);
    // No call of it left before: none can have been answered by an earlier instance, so its
    // first call here is not looked up in storage (see `decide`).
    if (fresh && !resending) this.memory.fresh(session);
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
      this.writer.writeOnTimer(Date.now()); // written with the frame's flush, or on the timer at the latest
      return { kind: "refuse", error };
    }
    this.writer.flush(); // the lookup reads storage: what waits in memory first
    if (!this.writer.tablesExist()) return RUN_RECORDED;
    if (late) {
      const newest = newestAnswer(this.sql, session);
      if (newest !== undefined && newest - id >= this.options.window) return { kind: "refuse", error: expired(id) };
      const frame = findAnswer(this.sql, session, id);
      // No row: it never ran — unless it had arrived before a wipe, which took its row.
      if (frame === undefined) return this.memory.arrivedBeforeWipe(session, id) ? { kind: "refuse", error: wipedError(id) } : RUN_RECORDED;
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
    if (!this.writer.tablesExist()) return false;
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
   * A recorded call answered: store the frame that carries its answer (or a marker), and let the
   * resends waiting for it decide again. A binary frame is kept as it is, not copied: the caller
   * hands it over, or hands over an Unbuilt one (server-callee.ts), built only if it is written
   * (`keptAnswer` says what is kept). When it is written — in this turn (with `inFlush`, at the
   * `flushDue()` that ends the outbox's flush this save runs in) or later with the next write —
   * is the writer's to say (`RecordWriter.save`, delivery-writer.ts).
   */
  save(session: string, id: number, frame: WireFrame | Unbuilt, keep: boolean | "always", inFlush = false): void {
    const row: Row = { session, id, ...keptAnswer(frame, keep, this.options.maxResultBytes) };
    this.writer.save(row, this.running.get(session, id)?.mark, inFlush);
    this.release(session, id);
  }

  /**
   * The client of `session` has had the replies of all its calls below `below` (or gave them up
   * and never resends them): of their answers still waiting in memory, only a marker is written
   * (ACKNOWLEDGED: a duplicate is refused, never run). A read-heavy session so writes no answers
   * but those of the calls it had not acknowledged when the rows were written; and large answers
   * no longer fill the rows (nor, past `FLUSH_BYTES` in delivery-writer.ts, force a write in the
   * middle of a burst). Rows already written keep their answers until pruned. Costs the session's
   * waiting rows.
   */
  acknowledge(session: string, below: number): void {
    this.writer.acknowledge(session, below);
  }

  /** Writes what `save(…, inFlush: true)` left for the end of the flush it ran in. */
  flushDue(): void {
    this.writer.flushDue();
  }

  /**
   * `session` is over: its client was disposed (close code 4002) and never resends. What the
   * record kept of it only to answer a resend — its answers and its row still waiting in memory,
   * what it remembers of its ids — is let go; nothing of it is written. A session that connects,
   * calls and leaves within `flushAfter` of its last answer so writes no row at all. Its rows
   * already written stay until they are pruned or swept (deleting them would be a write too). A
   * call of it still running answers into the record as before.
   */
  ended(session: string): void {
    this.writer.sessionEnded(session);
    this.memory.forget(session);
  }

  /** A recorded call ended without an answer to keep (cancelled before it ran): let waiters re-decide. */
  release(session: string, id: number): void {
    this.running.release(session, id);
  }

  /** Writes every row kept in memory (the writer's `flush`). */
  flush(): void {
    this.writer.flush();
  }
}

/** The refusal of a call whose row is a marker. */
function markerRefusal(marker: string | Uint8Array, id: number): RpcError {
  return marker === ACKNOWLEDGED ? acknowledgedError(id) : notKept(id);
}

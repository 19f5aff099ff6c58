/**
 * What the delivery record (delivery.ts) keeps in memory per client session, and for how long:
 *  - when the session's row (`_dorpc_sessions.last_at`) was last written, so that a busy session
 *    writes it at most every `ROW_EVERY` ms;
 *  - the call id at which its old answers are next pruned (every `window / 4` calls).
 *
 * Both are only shortcuts: a session with no entry writes its row at its next answer and prunes
 * at its next batch (one DELETE that may find nothing). So the entries of sessions not seen for
 * a while are dropped — checked at most once per `ROW_EVERY` — and an object that stays awake
 * for days serving a stream of short-lived clients (each page load is a new session) keeps
 * memory for the sessions of the last few minutes, not for every session it ever saw.
 *
 * Internal module.
 */

/** A session's row is written again when it was last written longer ago than this (ms). */
const ROW_EVERY = 300_000;

/** Entries of sessions not seen for this long (ms) are dropped. */
const FORGET_AFTER = 2 * ROW_EVERY;

export class SessionMemory {
  /** Per session: when its row was last written (the object's clock, ms). */
  private readonly rowAt = new Map<string, number>();
  /** Per session: the call id from which its next batch prunes. */
  private readonly pruneFrom = new Map<string, number>();
  private trimmedAt = 0;

  /** Sessions with entries now (for tests and diagnostics). */
  get size(): number {
    return this.rowAt.size;
  }

  /** Whether `session`'s row should be written again at `now`. */
  rowDue(session: string, now: number): boolean {
    return now - (this.rowAt.get(session) ?? 0) > ROW_EVERY;
  }

  /** `session`'s row is being written at `now`. */
  rowWritten(session: string, now: number): void {
    this.rowAt.set(session, now);
    if (now - this.trimmedAt < ROW_EVERY) return;
    this.trimmedAt = now;
    for (const [other, at] of this.rowAt) {
      if (now - at <= FORGET_AFTER) continue;
      this.rowAt.delete(other);
      this.pruneFrom.delete(other);
    }
  }

  /**
   * Whether a batch of `session` whose newest call is `last` should prune the older ones (and if
   * so, notes when the next one should): at its first batch in this instance, then every `every`
   * calls.
   */
  pruneDue(session: string, last: number, every: number): boolean {
    const from = this.pruneFrom.get(session);
    if (from !== undefined && last < from) return false;
    this.pruneFrom.set(session, last + every);
    return true;
  }

  /** Forgets everything (the record's tables are gone). */
  clear(): void {
    this.rowAt.clear();
    this.pruneFrom.clear();
  }
}

/**
 * How long the delivery record (delivery.ts) keeps what it knows of a client session.
 *
 * In storage (`SessionSweep`): a session idle for `maxAge` is deleted with its answers.
 *
 * In memory (`SessionMemory`), per session:
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
import type { Sql } from "./sql.js";

/** Sessions idle for `maxAge` are looked for at most this often per object (ms). */
const SWEEP_EVERY = 3_600_000;

/**
 * Forgets sessions idle longer than `maxAge`, at most once an hour per object — across restarts
 * too: the time of the last sweep is kept as the `last_at` of the session row named "" (no
 * session id is empty), so an object that hibernates often does not scan on every wake. Run when
 * the record writes (its writes share that commit), never in a hello.
 */
export class SessionSweep {
  /** When the record was last swept, read from storage once per instance (`undefined`: not read yet). */
  private last: number | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly maxAge: number,
  ) {}

  /** Sweeps when due. `tables`: whether the record's tables exist (so there is a last sweep to read). */
  run(now: number, tables: () => boolean): void {
    if (this.last === undefined) {
      const row = tables() ? this.sql.exec("SELECT last_at FROM _dorpc_sessions WHERE session = ''").toArray()[0] : undefined;
      this.last = row ? (row.last_at as number) : 0;
    }
    if (now - this.last < SWEEP_EVERY) return;
    this.last = now;
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES ('', ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      now,
    );
    const cutoff = now - this.maxAge;
    this.sql.exec("DELETE FROM _dorpc_replies WHERE session IN (SELECT session FROM _dorpc_sessions WHERE last_at < ?)", cutoff);
    this.sql.exec("DELETE FROM _dorpc_sessions WHERE last_at < ?", cutoff);
  }
}

/** A session's row is written again when it was last written longer ago than this (ms). */
const ROW_EVERY = 300_000;

/** Entries of sessions not seen for this long (ms) are dropped. */
const FORGET_AFTER = 2 * ROW_EVERY;

export class SessionMemory {
  /** Per session: when its row was last written (the object's clock, ms). */
  private readonly rowAt = new Map<string, number>();
  /** Per session: the call id from which its next batch prunes. */
  private readonly pruneFrom = new Map<string, number>();
  /** Per session: the highest call id that arrived without the Retry flag (see `arrivedBefore`). */
  private readonly highest = new Map<string, number>();
  /** Per session: the highest call id that had arrived when the storage was last wiped (see `clear`). */
  private readonly beforeWipe = new Map<string, number>();
  private trimmedAt = 0;

  /**
   * `maxAge`: how long an idle session is kept. Its row is rewritten at most every `ROW_EVERY`
   * ms, and at least ten times per `maxAge`, so a session active within `maxAge` never looks
   * idle to a hello or to the sweep.
   */
  constructor(maxAge: number) {
    this.rowEvery = Math.min(ROW_EVERY, Math.floor(maxAge / 10));
  }

  private readonly rowEvery: number;

  /** Sessions with entries now (for tests and diagnostics). */
  get size(): number {
    return this.rowAt.size;
  }

  /** Whether `session`'s row should be written again at `now`. */
  rowDue(session: string, now: number): boolean {
    return now - (this.rowAt.get(session) ?? 0) > this.rowEvery;
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
    for (const other of this.highest.keys()) {
      if (this.rowAt.has(other)) continue;
      this.highest.delete(other);
      this.beforeWipe.delete(other);
    }
  }

  /**
   * Whether call `id` of `session` may have arrived before: its id is not above every id seen so
   * far, resends included (it is noted when it is). Over WebSockets a session's
   * new calls arrive in order; an HTTP request (or an old socket's last frame) can arrive after
   * the resend of its calls on a newer one, and must then not run them a second time.
   * `undefined`: the session's first call in this instance — the memory cannot tell (an
   * evicted instance may have answered later calls: the caller asks the record).
   */
  arrivedBefore(session: string, id: number): boolean | undefined {
    const top = this.highest.get(session);
    if (top !== undefined && id <= top) return true;
    this.highest.set(session, id);
    return top === undefined ? undefined : false;
  }

  /**
   * `session` said it has sent no call before (its first connection): its first call is known to
   * be new without asking the record (`arrivedBefore` answers false, not `undefined`). A client
   * that says so falsely only gives up its own calls' guarantee.
   */
  fresh(session: string): void {
    if (!this.highest.has(session)) this.highest.set(session, 0);
  }

  /** `session` is over (its client was disposed): nothing of it is needed any more. */
  forget(session: string): void {
    this.rowAt.delete(session);
    this.pruneFrom.delete(session);
    this.highest.delete(session);
    this.beforeWipe.delete(session);
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

  /**
   * Whether call `id` of `session` had arrived when the storage was last wiped: it may have run
   * then, so finding no row for it since proves nothing.
   */
  arrivedBeforeWipe(session: string, id: number): boolean {
    const top = this.beforeWipe.get(session);
    return top !== undefined && id <= top;
  }

  /**
   * The record's tables are gone (a wipe): what was about its rows is forgotten. The ids seen
   * are kept, and noted as seen before the wipe: an original that arrives late (after its resend
   * ran, before the wipe) finds no row now, and must not run again.
   */
  clear(): void {
    this.rowAt.clear();
    this.pruneFrom.clear();
    for (const [session, top] of this.highest) this.beforeWipe.set(session, top);
  }
}

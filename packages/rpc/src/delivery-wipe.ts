/**
 * The delivery record (delivery.ts) across `ctx.storage.deleteAll()`.
 *
 * In a SQLite-backed object `deleteAll()` drops every table at once, the record's with the
 * object's own. Two things follow:
 *  - the record must create its tables again before its next write (it remembers that it made
 *    them; storage-writes.ts tells it when they went);
 *  - the record can no longer tell, for a call answered before the wipe, that it ran. A client
 *    resending such a call (its reply was lost in a disconnect) would have it run again on the
 *    wiped state. So the wipe leaves one row, the time it happened (`_dorpc_sessions`, under a
 *    name no session id can have), written in the same turn as the deletion, so in its commit.
 *    A session that may have begun before that time (its hello says how old it is) has its
 *    resends answered from the record when a row written since holds them, and refused
 *    (`EXPIRED`: whether they ran cannot be known) when none does, never run again. The row is
 *    written only when the record had tables
 *    before the wipe (else no call was ever recorded), and the record's sweep deletes it once it
 *    is older than `maxAge`, like an idle session's row, after which no session that began
 *    before it can resend anyway.
 *
 * Internal module.
 */
import type { Sql } from "./sql.js";

/** The row's name in `_dorpc_sessions` (session ids are `[A-Za-z0-9_-]{16,64}`; "" is the sweep's row). */
const WIPE_ROW = "#wiped";

/**
 * A session whose start falls within this long after the wipe is treated as older than it: the
 * start is reckoned as the hello's arrival minus the age the client sent, so it is late by the
 * hello's transit time. Generous, because erring costs little: such a session's resends are
 * still answered from rows written since the wipe; only one that finds no row is refused.
 */
const MARGIN_MS = 60_000;

/**
 * One object's record of its last wipe, and of the sessions that may be older than it.
 * `sql` is the record's own (unwatched) SQL; the record's tables exist whenever a row is read or
 * written here (the record creates them first, or says they do not exist).
 */
/** Most sessions kept as possibly older than the last wipe. */
const MAX_SPANNING = 4_096;

export class Wipes {
  /** When the storage was last wiped (ms, the object's clock; 0: none on record), read once per instance. */
  private at: number | undefined;
  /** Sessions resending since a hello that says they may have begun before the wipe (the newest `MAX_SPANNING`). */
  private readonly spanning = new Set<string>();

  constructor(
    private readonly sql: Sql,
    private readonly maxAge: number,
  ) {}

  /** The storage was wiped at `now` and the record's tables made again: notes it in the same commit. */
  wiped(now: number): void {
    this.at = now;
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      WIPE_ROW,
      now,
    );
  }

  /**
   * A session said hello at `now`: `resending`, `age` ms old by its own account (`undefined`: it
   * did not say). `tables`: whether the record's tables exist (else no wipe is on record).
   */
  hello(session: string, resending: boolean, now: number, age: number | undefined, tables: () => boolean): void {
    if (resending) {
      if (this.at === undefined) {
        const row = tables() ? this.sql.exec("SELECT last_at FROM _dorpc_sessions WHERE session = ?", WIPE_ROW).toArray()[0] : undefined;
        this.at = row ? (row.last_at as number) : 0;
      }
      const at = this.at;
      if (at !== 0 && at < now - this.maxAge) this.spanning.clear(); // no session can span it any more
      if (at !== 0 && at >= now - this.maxAge && (age === undefined || now - age <= at + MARGIN_MS)) {
        this.spanning.delete(session);
        this.spanning.add(session);
        // Bounded: a client opening connection after connection under new session ids must not
        // grow it without end (the oldest goes; its resends are then decided as any session's).
        if (this.spanning.size > MAX_SPANNING) this.spanning.delete(this.spanning.values().next().value as string);
        return;
      }
      // Its own age says it began after the wipe.
      this.spanning.delete(session);
    }
    // A hello that is not resending leaves the mark: a session that began before the wipe still
    // did, and over HTTP every request is a hello, while only the first of a resend's requests
    // says it resends (the calls of one turn can be cut into several).
  }

  /** Whether `session`'s resends may be of calls answered before the wipe. */
  spans(session: string): boolean {
    return this.spanning.size > 0 && this.spanning.has(session);
  }
}

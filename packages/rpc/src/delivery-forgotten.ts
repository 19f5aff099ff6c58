/**
 * Sessions the delivery record (delivery.ts) forgot: idle past `maxAge`, swept, and then back,
 * resending. Their calls' answers are gone, so a resend of a call made before the session was
 * refused must never run — on this connection or any later one, whatever the session does in
 * between (its next calls write its row again, so "unknown" no longer tells). Calls it makes
 * after the refusal are its own again: from the first one on, resends are decided as any
 * session's.
 *
 * Kept in `_dorpc_sessions`, swept with it after `maxAge`:
 *  - `<session>#forgotten` (written at the refusal): the session was forgotten;
 *  - `<session>#forgotten:<id>` (written at its first call after that): calls from `id` on are new.
 * (Session ids are `[A-Za-z0-9_-]{16,64}`: never a "#".) In memory, the newest `MAX_KNOWN`
 * answers are kept, forgotten or not, so a session's resends read the rows once.
 *
 * Internal module.
 */
import type { Sql } from "./sql.js";

const MARK = "#forgotten";
/** The character after ":" : the upper bound of a session's marker rows. */
const AFTER_MARK_ROWS = ";";
/** Sessions whose answer is kept in memory (a client making up session ids cannot grow it). */
const MAX_KNOWN = 4096;

/** Whether a session was forgotten, and from which call id its calls are new. */
interface Forgotten {
  readonly forgotten: boolean;
  from: number | undefined;
}

const NOT_FORGOTTEN: Forgotten = { forgotten: false, from: undefined };

export class ForgottenSessions {
  private readonly known = new Map<string, Forgotten>();

  constructor(
    private readonly sql: Sql,
    /** Before a write: the record's tables (and its sweep). */
    private readonly beforeWrite: () => void,
    /** Whether the record's tables exist. */
    private readonly tables: () => boolean,
  ) {}

  /** The rows of `session` and its markers, in one statement (a resending hello reads it anyway). */
  read(session: string): { lastAt: number | undefined } {
    if (!this.tables()) {
      this.remember(session, NOT_FORGOTTEN);
      return { lastAt: undefined };
    }
    let lastAt: number | undefined;
    const entry: Forgotten = { forgotten: false, from: undefined };
    for (const row of this.sql
      .exec(
        "SELECT session, last_at FROM _dorpc_sessions WHERE session = ? OR (session >= ? AND session < ?)",
        session,
        session + MARK,
        session + MARK + AFTER_MARK_ROWS,
      )
      .toArray()) {
      const name = row.session as string;
      if (name === session) lastAt = row.last_at as number;
      else {
        (entry as { forgotten: boolean }).forgotten = true;
        const from = name.length > session.length + MARK.length ? Number(name.slice(session.length + MARK.length + 1)) : undefined;
        if (from !== undefined && Number.isSafeInteger(from) && (entry.from === undefined || from < entry.from)) entry.from = from;
      }
    }
    this.remember(session, entry.forgotten ? entry : NOT_FORGOTTEN);
    return { lastAt };
  }

  /** Whether `session`'s rows were read (or it was forgotten) in this instance. */
  isKnown(session: string): boolean {
    return this.known.has(session);
  }

  /** `session` resent after it was forgotten: refused, and remembered as forgotten. */
  forget(session: string, now: number): void {
    this.beforeWrite();
    this.write(session + MARK, now);
    this.remember(session, { forgotten: true, from: undefined });
  }

  /** A new call `id` of `session`: the first one after it was forgotten marks where its own calls begin. */
  newCall(session: string, id: number, now: number): void {
    const entry = this.known.get(session);
    if (!entry?.forgotten || entry.from !== undefined) return;
    entry.from = id;
    this.beforeWrite();
    this.write(`${session}${MARK}:${id}`, now);
  }

  /** Whether a resend of call `id` of `session` may be of a call made before it was forgotten. */
  covers(session: string, id: number): boolean {
    let entry = this.known.get(session);
    if (!entry) {
      this.read(session);
      entry = this.known.get(session)!;
    }
    return entry.forgotten && (entry.from === undefined || id < entry.from);
  }

  private write(name: string, now: number): void {
    this.sql.exec(
      "INSERT INTO _dorpc_sessions (session, last_at) VALUES (?, ?) ON CONFLICT(session) DO UPDATE SET last_at = excluded.last_at",
      name,
      now,
    );
  }

  private remember(session: string, entry: Forgotten): void {
    this.known.delete(session);
    this.known.set(session, entry.forgotten ? entry : NOT_FORGOTTEN);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
  }
}

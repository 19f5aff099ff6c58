/**
 * The answers the delivery record keeps in memory until it writes them (delivery-writer.ts says when):
 * in the order they were saved, with what they weigh, and per session the ones that still hold an
 * answer, so that an acknowledgement (the client has had those replies: the `answered` field of
 * its calls) turns them into markers without walking the other sessions' rows.
 *
 * Invariants:
 *  - `bytes` is the sum of the `size` of the rows that still hold an answer (a marker weighs 0).
 *  - A row acknowledged stays in place (its call ran: the marker is written) with `stored`
 *    ACKNOWLEDGED; only the rows of the acknowledging session with lower ids change.
 *
 * Internal module.
 */
import { ACKNOWLEDGED, type Answer, NOT_KEPT } from "./delivery-batches.js";

/** An answer waiting in memory for its batch to be written. */
export interface Row extends Answer {
  readonly session: string;
  /** Replaced by a marker when the client acknowledges the reply. */
  stored: Answer["stored"];
  /** What it weighs in memory (bytes of a binary frame, characters of a text one, at most). */
  readonly size: number;
}

export class WaitingAnswers {
  private rows: Row[] = [];
  /** Per session, its rows that still hold an answer. */
  private readonly held = new Map<string, Row[]>();
  /** See the invariants. */
  bytes = 0;

  get count(): number {
    return this.rows.length;
  }

  add(row: Row): void {
    this.rows.push(row);
    if (row.stored === NOT_KEPT) return;
    this.bytes += row.size;
    const list = this.held.get(row.session);
    if (list) list.push(row);
    else this.held.set(row.session, [row]);
  }

  /** Every call of `session` below `below` has had its reply: their answers become markers. */
  acknowledge(session: string, below: number): void {
    const list = this.held.get(session);
    if (!list) return;
    let kept = 0;
    for (const row of list) {
      if (row.id < below) {
        this.bytes -= row.size;
        row.stored = ACKNOWLEDGED;
      } else list[kept++] = row;
    }
    if (kept === 0) this.held.delete(session);
    else list.length = kept;
  }

  /** Forgets every row of `session` (it ended: see `RecordWriter.sessionEnded`). */
  drop(session: string): void {
    const held = this.held.get(session);
    if (held) {
      for (const row of held) this.bytes -= row.size;
      this.held.delete(session);
    }
    let kept = 0;
    const rows = this.rows;
    for (const row of rows) if (row.session !== session) rows[kept++] = row;
    rows.length = kept;
  }

  /** Hands over every row, in the order they were saved, and forgets them. */
  take(): Row[] {
    const rows = this.rows;
    this.rows = [];
    this.bytes = 0;
    this.held.clear();
    return rows;
  }
}

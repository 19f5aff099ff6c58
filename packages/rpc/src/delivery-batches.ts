/**
 * How the delivery record keeps answers in storage: batch rows of `_dorpc_replies`.
 *
 * One row holds the answers of one session written at one time (delivery-writer.ts decides when):
 *  - `frames`: the answers' bytes one after another (a text frame as UTF-8, a binary frame as it
 *    is, a marker as nothing: a call whose answer was not kept, or whose client had acknowledged
 *    its reply before the row was written);
 *  - `ids`: JSON `[[id, kind, bytes], …]` in the order of `frames` (kind: `Kept`), so an answer is
 *    found by summing the lengths before it;
 *  - `first` / `last`: the lowest and highest call id in the row. `last` is the row's key with the
 *    session: a call is recorded once, so two rows never share it, except when a resend that runs
 *    again is recorded again, and then its row replaces the earlier one.
 *
 * Rows of one session can overlap in id range (a slow call is written after faster later ones),
 * so a lookup reads the `ids` of every row whose range covers the id. A row is cut past
 * `BATCH_BYTES` (a Durable Object row holds at most 2 MB). An answer is measured as stored
 * (`utf8Bytes`), and a refusal too long to keep whole is kept short (`shortRefusal`).
 *
 * Internal module (workerd, and Node tests over `node:sqlite`).
 */
import { type WireFrame, writeFrame } from "./frame.js";
import { FrameKind } from "./envelopes.js";
import type { Sql } from "./sql.js";

/** What the record keeps for a call whose answer is not kept (record: false, or too large). */
export const NOT_KEPT = "";

/**
 * What the record keeps for a call whose client acknowledged its reply before the row was written
 * (delivery.ts `acknowledge`): it ran and was answered; a duplicate of it is refused, never run.
 * Told by identity (a binary answer is never empty: it has a frame header).
 */
export const ACKNOWLEDGED: Uint8Array = new Uint8Array(0);

/**
 * A binary reply frame not built yet: its JSON body (the envelopes in brackets) and its blobs
 * (the reply's own copies). The record builds it only if it writes it: most answers are
 * acknowledged first, and building costs a copy of the bytes.
 */
export interface Unbuilt {
  readonly json: string;
  readonly blobs: readonly Uint8Array[];
}

/**
 * An answer waiting to be written: the frame that carried it (kept as handed over, or Unbuilt),
 * NOT_KEPT or ACKNOWLEDGED.
 */
export interface Answer {
  readonly id: number;
  readonly stored: string | Uint8Array | Unbuilt;
  /**
   * Set for a text frame that may or may not fit this many bytes of UTF-8 (its length is between
   * a third of it and all of it): measured when it is encoded to be written, since most answers
   * are acknowledged before that and never are; kept only if it fits (else a marker, or with
   * `always` its short refusal).
   */
  readonly limit?: number;
  readonly always?: boolean;
}

/** How an answer is kept in a row's `frames` (the kind in its `ids` entry). */
enum Kept {
  Text = 0,
  Binary = 1,
  NotKept = 2,
  Acknowledged = 3,
}

/** A batch row's answers are cut into several rows past this many bytes. */
const BATCH_BYTES = 1 << 20;

const EMPTY = new Uint8Array(0);

/** One encoder for every write (in workerd each `new TextEncoder()` is a runtime object of its own). */
const encoder = new TextEncoder();

/** The table, created by the record's first write. */
export const CREATE_REPLIES =
  "CREATE TABLE IF NOT EXISTS _dorpc_replies (session TEXT NOT NULL, last INTEGER NOT NULL, first INTEGER NOT NULL, ids TEXT NOT NULL, frames BLOB NOT NULL, PRIMARY KEY (session, last)) WITHOUT ROWID";

/**
 * Writes `answers` of `session` as batch rows (one, unless they pass BATCH_BYTES) and returns
 * the highest id written.
 */
export function writeAnswers(sql: Sql, session: string, answers: readonly Answer[]): number {
  let newest = 0;
  let start = 0;
  while (start < answers.length) {
    const entries: [number, Kept, number][] = [];
    const parts: Uint8Array[] = [];
    let bytes = 0;
    let first = Number.MAX_SAFE_INTEGER;
    let last = 0;
    let end = start;
    for (; end < answers.length; end++) {
      const answer = answers[end]!;
      const id = answer.id;
      let stored = answer.stored;
      if (typeof stored === "object" && !(stored instanceof Uint8Array)) stored = writeFrame(FrameKind.Replies, stored.json, stored.blobs);
      let part = stored === NOT_KEPT ? EMPTY : typeof stored === "string" ? encoder.encode(stored) : stored;
      if (answer.limit !== undefined && part.byteLength > answer.limit) {
        stored = answer.always ? shortRefusal(stored, answer.limit) : NOT_KEPT;
        part = stored === NOT_KEPT ? EMPTY : encoder.encode(stored as string);
      }
      if (end > start && bytes + part.byteLength > BATCH_BYTES) break;
      const kind =
        stored === NOT_KEPT
          ? Kept.NotKept
          : stored === ACKNOWLEDGED
            ? Kept.Acknowledged
            : typeof stored === "string"
              ? Kept.Text
              : Kept.Binary;
      entries.push([id, kind, part.byteLength]);
      parts.push(part);
      bytes += part.byteLength;
      if (id < first) first = id;
      if (id > last) last = id;
    }
    const frames = new Uint8Array(bytes);
    let offset = 0;
    for (const part of parts) {
      frames.set(part, offset);
      offset += part.byteLength;
    }
    sql.exec(
      // COALESCE: a batch of markers only has no bytes, which some SQLite bindings pass as NULL.
      "INSERT INTO _dorpc_replies (session, last, first, ids, frames) VALUES (?, ?, ?, ?, COALESCE(?, x'')) ON CONFLICT(session, last) DO UPDATE SET first = excluded.first, ids = excluded.ids, frames = excluded.frames",
      session,
      last,
      first,
      JSON.stringify(entries),
      frames.buffer,
    );
    if (last > newest) newest = last;
    start = end;
  }
  return newest;
}

/** The highest call id recorded for `session`, or `undefined` when none is. */
export function newestAnswer(sql: Sql, session: string): number | undefined {
  const n = sql.exec("SELECT max(last) AS n FROM _dorpc_replies WHERE session = ?", session).toArray()[0]?.n;
  return typeof n === "number" ? n : undefined;
}

/** The recorded answer of call `id`: its frame, NOT_KEPT or ACKNOWLEDGED for a marker, `undefined` when no row holds it. */
export function findAnswer(sql: Sql, session: string, id: number): WireFrame | typeof NOT_KEPT | typeof ACKNOWLEDGED | undefined {
  const candidates = sql
    .exec("SELECT last, ids FROM _dorpc_replies WHERE session = ? AND last >= ? AND first <= ?", session, id, id)
    .toArray();
  for (const candidate of candidates) {
    const entries = JSON.parse(candidate.ids as string) as [id: number, kind: Kept, bytes: number][];
    let offset = 0;
    for (const [entryId, kind, bytes] of entries) {
      if (entryId === id) {
        if (kind === Kept.NotKept) return NOT_KEPT;
        if (kind === Kept.Acknowledged) return ACKNOWLEDGED;
        const frames = sql.exec("SELECT frames FROM _dorpc_replies WHERE session = ? AND last = ?", session, candidate.last).one()
          .frames as ArrayBuffer;
        const answer = new Uint8Array(frames, offset, bytes);
        return kind === Kept.Text ? new TextDecoder().decode(answer) : answer.slice();
      }
      offset += bytes;
    }
  }
  return undefined;
}

/** What the record keeps of an answer, and what that weighs in memory until it is written. */
export interface KeptAnswer {
  readonly stored: Answer["stored"];
  readonly size: number;
  readonly limit?: number;
  readonly always?: boolean;
}

/**
 * What the record keeps of the answer carried by `frame`: the frame when it fits `max` bytes, a
 * marker (NOT_KEPT) when the method keeps no result or it does not fit — "always" (dorpc's own
 * refusal) keeps its short form instead, so a resend is told what happened. A text frame that
 * may or may not fit is measured when written (`Answer.limit`); an Unbuilt one is kept unbuilt
 * when even its largest possible size fits.
 */
export function keptAnswer(frame: WireFrame | Unbuilt, keep: boolean | "always", max: number): KeptAnswer {
  if (!keep) return { stored: NOT_KEPT, size: 0 };
  const always = keep === "always";
  if (typeof frame === "string") {
    if (frame.length * 3 <= max) return { stored: frame, size: frame.length }; // fits whatever it holds
    if (frame.length > max) return cutAnswer(frame, always, max); // cannot fit: a character is a byte or more
    return { stored: frame, size: frame.length, limit: max, always };
  }
  if (frame instanceof Uint8Array)
    return frame.byteLength <= max ? { stored: frame, size: frame.byteLength } : cutAnswer(frame, always, max);
  // Built, it takes at most: the fixed header, the blob table, the JSON (≤ 3 bytes a character)
  // and its padding (< 16 bytes), then the blobs.
  let bound = 12 + 4 * frame.blobs.length + 3 * frame.json.length + 15;
  for (const blob of frame.blobs) bound += blob.byteLength;
  if (bound <= max) return { stored: frame, size: bound };
  return keptAnswer(writeFrame(FrameKind.Replies, frame.json, frame.blobs), keep, max);
}

/** An answer that does not fit: a marker, or dorpc's own refusal (`always`) kept short. */
function cutAnswer(whole: WireFrame, always: boolean, max: number): KeptAnswer {
  const short = always ? shortRefusal(whole, max) : NOT_KEPT;
  return { stored: short, size: typeof short === "string" ? short.length : short.byteLength };
}

/** Deletes `session`'s rows whose newest call is at or below `last`. */
export function deleteAnswersUpTo(sql: Sql, session: string, last: number): void {
  sql.exec("DELETE FROM _dorpc_replies WHERE session = ? AND last <= ?", session, last);
}

/**
 * Measures `text` as UTF-8 (as it is stored) against `max`: a number at most `max` when it fits
 * (its length when it fits whatever it holds, else its UTF-8 size), else a number above `max`
 * (counting stops there: a 1 MiB string is not walked to learn that it does not fit).
 */
export function utf8Bytes(text: string, max: number): number {
  if (text.length * 3 <= max) return text.length; // under the limit whatever it holds
  if (text.length > max) return text.length; // over it whatever it holds: a character is a byte or more
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= max; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? (i++, 4) : 3;
  }
  return bytes;
}

/**
 * A refusal too long to keep whole (issues quoting a client's input): its code and the start of
 * its message, so a resend is still told what happened. A binary frame is not a refusal: a marker.
 */
export function shortRefusal(frame: WireFrame, max: number): WireFrame | typeof NOT_KEPT {
  if (typeof frame !== "string") return NOT_KEPT;
  try {
    const [[id, status, code, message]] = JSON.parse(frame.slice(2)) as [[number, number, string, string]];
    const write = (text: string) => writeFrame(FrameKind.Replies, `[${JSON.stringify([id, status, code, text])}]`, []) as string;
    // Within maxResultBytes when it can be (at most six bytes a character, escaped), else the
    // code alone: a few dozen bytes, kept whatever the limit.
    const cut = write(String(message).slice(0, Math.max(0, Math.floor((max - 64) / 6))));
    return utf8Bytes(cut, max) <= max ? cut : write("");
  } catch {
    return NOT_KEPT;
  }
}

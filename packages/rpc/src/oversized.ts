/**
 * Frames larger than the receiver's `limits.maxMessageBytes`, or carrying more than its
 * `limits.maxBlobs` blobs.
 *
 * Size is checked before anything is parsed, and such a frame is never parsed. But closing the
 * connection for it, as for a frame that cannot be read, loops: the peer sends the same bytes
 * again on the next connection (a delivery record replays the answer to the resent call, a topic
 * replays its events from the subscriber's cursor), the receiver closes again, and so on. So the
 * ids of the frame's envelopes are recovered by a scan that builds nothing (brackets and string
 * quotes only), and each is refused where it belongs:
 *  - an answer fails the call waiting for it with `LIMIT` (the call ran; it is not resent);
 *  - a call is answered with `LIMIT` and does not run; a notification (push, topic event) is
 *    reported as the receiver reports failed notifications;
 * and the connection stays open. A frame whose ids cannot be recovered (not dorpc's shape, more
 * envelopes than `limits.maxPendingCalls`, another kind) is still refused by closing (1009).
 *
 * What the skipped envelopes handed out by reference stays counted on the peer until the
 * connection ends (their EXPORT records were not read).
 *
 * Internal module.
 */
import type { Connection } from "./connection.js";
import { FRAME_MARK, FrameKind, ReplyStatus } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { IncomingData } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import { MAX_SHARED_FRAME } from "./outbox.js";

const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Bytes before the blob-length table in a binary frame (frame.ts). */
const FIXED_HEADER = 12;

export interface Oversized {
  kind: number;
  /** What is over which limit, for messages: "was N bytes, more than …". */
  over: string;
  /** The id of each envelope, in order (0: a notification). */
  ids: number[];
}

/** What an oversized frame carries, or `undefined` when it is not one or its ids cannot be recovered. */
export function scanOversized(data: IncomingData, limits: Readonly<RpcLimits>): Oversized | undefined {
  if (typeof data === "string") {
    if (data.length <= limits.maxMessageBytes || data.charCodeAt(0) !== FRAME_MARK) return undefined;
    const ids = envelopeIds((i) => data.charCodeAt(i), 2, data.length, limits.maxPendingCalls);
    return ids && { kind: data.charCodeAt(1), over: bytesOver(data.length, limits), ids };
  }
  if (!ArrayBuffer.isView(data) && !(data instanceof ArrayBuffer)) return undefined;
  const bytes = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
  if (bytes[0] !== FRAME_MARK || bytes.byteLength < FIXED_HEADER) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blobCount = view.getUint32(4, true);
  const over =
    bytes.byteLength > limits.maxMessageBytes
      ? bytesOver(bytes.byteLength, limits)
      : blobCount > limits.maxBlobs
        ? `carried ${blobCount} blobs, more than this end's limits.maxBlobs (${limits.maxBlobs})`
        : undefined;
  if (over === undefined) return undefined;
  const start = FIXED_HEADER + 4 * blobCount;
  const end = start + view.getUint32(8, true);
  if (end > bytes.byteLength) return undefined;
  const ids = envelopeIds((i) => bytes[i]!, start, end, limits.maxPendingCalls);
  return ids && { kind: bytes[1]!, over, ids };
}

function bytesOver(size: number, limits: Readonly<RpcLimits>): string {
  // Envelopes share frames up to MAX_SHARED_FRAME bytes: a limit below that can refuse a frame
  // whose every envelope fits it.
  const grouped =
    limits.maxMessageBytes < MAX_SHARED_FRAME && size <= MAX_SHARED_FRAME
      ? ` (the other end groups envelopes into frames of up to ${MAX_SHARED_FRAME} bytes: keep that limit at least that large)`
      : "";
  return `was ${size} bytes, more than this end's limits.maxMessageBytes (${limits.maxMessageBytes})${grouped}`;
}

/**
 * The leading id of each element of the JSON array of arrays in `[start, end)`: `[[3,…],[4,…]]`
 * → `[3, 4]`. `undefined` for anything else, or more than `max` elements.
 */
function envelopeIds(at: (i: number) => number, start: number, end: number, max: number): number[] | undefined {
  const ids: number[] = [];
  let depth = 0;
  for (let i = start; i < end; i++) {
    const c = at(i);
    if (c === QUOTE) {
      for (i++; i < end; i++) {
        const d = at(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN) {
      if (++depth !== 2) continue;
      let id = 0;
      let j = i + 1;
      for (; j < end && j - i <= 16; j++) {
        const d = at(j);
        if (d < DIGIT_0 || d > DIGIT_9) break;
        id = id * 10 + (d - DIGIT_0);
      }
      if (j === i + 1 || j - i > 16 || ids.length >= max) return undefined;
      ids.push(id);
      i = j - 1;
    } else if (c === CLOSE) {
      if (--depth === 0) return ids;
    } else if (depth === 0) return undefined;
  }
  return undefined;
}

/** Refuses what an oversized frame carried (see the module comment). Returns false when it cannot. */
export function refuseOversized(conn: Connection, over: Oversized, label: string): boolean {
  const size = over.over;
  if (over.kind === FrameKind.Replies) {
    for (const id of over.ids) {
      const call = id > 0 ? conn.caller.waiting(id) : undefined;
      if (!call || call.sentOn !== conn) continue;
      conn.caller.settleReply(
        id,
        false,
        new RpcError(
          "LIMIT",
          `The frame carrying the answer from ${label} ${size}: the call ran, but its answer could not be read, and it is not sent again. Raise that limit or return less.`,
        ),
      );
    }
    return true;
  }
  if (over.kind === FrameKind.Calls) {
    let notified = false;
    for (const id of over.ids) {
      if (id > 0) {
        const message = `The frame carrying this call ${size} of the receiver; it was not run.`;
        conn.outbox.add(FrameKind.Replies, JSON.stringify([id, ReplyStatus.Failed, "LIMIT", message]));
      } else if (!notified) {
        notified = true;
        conn.callee.refusedNotification(new RpcError("LIMIT", `A frame of pushes or events from ${label} ${size}; it was skipped.`));
      }
    }
    conn.outbox.flush();
    return true;
  }
  return false;
}

/**
 * Replies kept in the delivery record, given again: a resend answered from the record sends the
 * stored frame after everything queued, and a later call of its frame that pipelines on it reads
 * its outcome back from that frame. Owned by the object's callee (server-callee.ts).
 *
 * Internal module.
 */
import { decodeContext, fromRecords, readValue } from "./codec.js";
import type { Connection } from "./connection.js";
import { ReplyStatus } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { readFrame, type WireFrame } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import { ownError } from "./refusals.js";
import { asRpcError, failure, type Outcome } from "./replies.js";

/**
 * Sends a frame stored earlier (a recorded reply) after everything queued: a text frame joins the
 * outbox, a binary one goes whole in its place (behind a reply still reading its Blob, too).
 */
export function sendStored(conn: Connection, frame: WireFrame): void {
  if (typeof frame === "string") conn.outbox.add(frame.charCodeAt(1), frame.slice(3, -1));
  else conn.outbox.addFrame(frame);
}

/** The outcome carried by a stored reply frame (for calls that pipeline on a replayed call). */
export function storedOutcome(frame: WireFrame, limits: RpcLimits): Outcome {
  try {
    const parsed = readFrame(frame, limits);
    const reply = (parsed?.body as unknown[][] | undefined)?.[0];
    if (!parsed || !reply) throw new RpcError("INTERNAL", "A stored reply could not be read.");
    const ctx = decodeContext(parsed.blobs, limits);
    if (reply.length === 1) return { ok: true, value: undefined };
    switch (reply[1]) {
      case ReplyStatus.OkJson:
      case ReplyStatus.OkRecords:
      case ReplyStatus.OkBytes:
        return { ok: true, value: readValue(reply[1], reply[2], ctx) };
      case ReplyStatus.Threw:
        return { ok: false, error: fromRecords(reply[2], ctx) };
      default:
        return { ok: false, error: ownError(failure(reply[2], reply[3], reply[4], undefined)) };
    }
  } catch (error) {
    return { ok: false, error: ownError(asRpcError(error)) };
  }
}

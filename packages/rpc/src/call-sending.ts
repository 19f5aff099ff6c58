/**
 * How a call leaves: its envelope put in a connection's outbox, with what the envelope says
 * besides the call (`answered`: below which id every call of this caller has settled), the
 * order calls were sent in (resends keep it), and, for a call whose Blob bytes are still being
 * read, what the outbox waits for; and where the outbox will cut the frame (`FrameTally`). The
 * caller (caller.ts) decides which calls go and when.
 *
 * Invariants:
 *  - `answered` is never above the lowest id of a call not settled: a call that may still be
 *    resent is never acknowledged. It is sent only when it has grown.
 *  - An envelope the outbox drops (its Blob could not be read, or the call settled first) gives
 *    back what it handed out by reference.
 *  - `FrameTally.cutsBefore` is true wherever the outbox would start a new frame before the call
 *    (or earlier than that, never later): a call never names a call of another frame.
 *
 * Internal module.
 */
import { envelope } from "./call-writer.js";
import type { Connection } from "./connection.js";
import { FrameKind } from "./envelopes.js";
import { frameSize, MAX_ENVELOPES, MAX_SHARED_FRAME } from "./outbox.js";
import type { OutgoingCall } from "./outgoing-call.js";
import type { ExportTable } from "./references.js";

/** More than the characters an envelope adds to its chain (id, target, flags, answered, brackets). */
const ENVELOPE_SLACK = 64;

/** What sending needs of the caller. */
export interface SendingHost {
  /** Calls made and not settled, by id. */
  readonly pending: { has(id: number): boolean };
  /** The id the next call will get. */
  readonly nextId: number;
  /** Fails `call` (its Blob could not be read). */
  fail(call: OutgoingCall, error: unknown): void;
}

export class CallSending {
  /** Every call with a lower id has settled (advanced lazily, see `answeredBelow`). */
  private low = 0;
  /** The last `answered` sent. */
  private acked = 0;
  /** Counts the calls put in frames (`OutgoingCall.order`). */
  private putCount = 0;

  /**
   * `exports`: what the caller's end hands out by reference. `acknowledge`: put `answered` in
   * the envelopes (a client with an exactly-once session).
   */
  constructor(
    private readonly host: SendingHost,
    private readonly exports: ExportTable,
    private readonly acknowledge: boolean,
  ) {}

  /** The first call has id `id`: nothing below it is to acknowledge. */
  start(id: number): void {
    this.low = this.acked = id;
  }

  /** Puts `call` in the outbox's current frame (number `frame`) on `conn`. */
  put(call: OutgoingCall, conn: Connection, frame: number): void {
    let answered = 0;
    if (this.acknowledge) {
      const low = this.answeredBelow();
      if (low > this.acked) answered = this.acked = low;
    }
    if (call.ready) conn.outbox.add(FrameKind.Calls, envelope(call, answered), call.blobs, this.whenReady(call, conn));
    else conn.outbox.add(FrameKind.Calls, envelope(call, answered), call.blobs);
    call.sentOn = conn;
    call.onStub = undefined;
    if (call.exports) this.exports.sent(call.exports);
    call.frame = frame;
    call.order = ++this.putCount;
  }

  /**
   * The lowest id of a call not settled yet (every call below it has had its reply, failed or
   * was given up: none of them is ever sent again), or the next id when all have. Ids are given
   * in order, so it only moves up: each id is stepped over once.
   */
  private answeredBelow(): number {
    const { pending, nextId } = this.host;
    while (this.low < nextId && !pending.has(this.low)) this.low++;
    return this.low;
  }

  /**
   * What the outbox waits for before it sends `call`, whose Blob bytes are being read: `undefined`
   * once they are; `null` (the envelope is dropped) when they cannot be read (the call fails with
   * that error, and so do the calls pipelining on it) or when the call settled first (timed out,
   * aborted: it must not hold back the calls after it). A dropped envelope never reached the peer:
   * what it handed out by reference is given back here (after a cut it was put back to be resent
   * and pinned again: the caller unpins it when it settles).
   */
  private whenReady(call: OutgoingCall, conn: Connection): Promise<null | undefined> {
    return new Promise((resolve) => {
      let decided = false;
      const drop = (): void => {
        if (decided) return;
        decided = true;
        if (call.sentOn === conn && call.exports) {
          for (const id of call.exports) this.exports.release(id, 1);
          call.exports = undefined;
        }
        resolve(null);
      };
      call.ready!.then(
        () => {
          if (decided) return;
          decided = true;
          resolve(undefined);
        },
        (error: unknown) => {
          drop();
          this.host.fail(call, error);
        },
      );
      call.whenSettled(drop);
    });
  }
}

/**
 * The frame the caller is filling, as the outbox will measure it (outbox.ts), so that the caller
 * cuts where the outbox would and a call that pipelines on one before the cut knows it must wait.
 * One per caller, started again for each frame (no object per flush).
 */
export class FrameTally {
  /** The caller's number of this frame (`OutgoingCall.frame`). */
  number = 0;
  private calls = 0;
  private chars = 0;
  private blobs = 0;
  private blobBytes = 0;

  constructor(private readonly sending: CallSending) {}

  /** A new, empty frame numbered `number`. */
  start(number: number): void {
    this.number = number;
    this.calls = this.chars = this.blobs = this.blobBytes = 0;
  }

  /** Puts `call` in this frame on `conn`. */
  put(call: OutgoingCall, conn: Connection): void {
    this.sending.put(call, conn, this.number);
    this.calls++;
    this.chars += call.chain.length + ENVELOPE_SLACK;
    this.blobs += call.blobs.length;
    this.blobBytes += call.blobBytes;
  }

  /**
   * True when `call` (with the lazy reads it still has to send in front of it) cannot join this
   * frame, because the outbox would send them apart: the frame would pass MAX_ENVELOPES or
   * MAX_SHARED_FRAME with it, both carry blobs (a frame carries one envelope's), or its Blob bytes
   * are still being read (the outbox sends what came before such a call at once). A call that
   * pipelines on one already in the frame must then wait for its result.
   */
  cutsBefore(call: OutgoingCall): boolean {
    if (this.calls === 0) return false;
    let lazy = 0;
    let chars = call.chain.length + ENVELOPE_SLACK;
    if (call.lazyReads)
      for (const read of call.lazyReads.values())
        if (!read.sentOn && !read.settled) {
          lazy++;
          chars += read.chain.length + ENVELOPE_SLACK;
        }
    return (
      this.calls + lazy >= MAX_ENVELOPES ||
      (call.blobs.length > 0 && this.blobs > 0) ||
      call.ready !== undefined ||
      frameSize(this.chars + chars, this.blobs + call.blobs.length, this.blobBytes + call.blobBytes) > MAX_SHARED_FRAME
    );
  }
}

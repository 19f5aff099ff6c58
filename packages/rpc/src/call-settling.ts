/**
 * How a caller's calls settle: the base of `Caller` (caller.ts), which makes and sends them. It
 * holds the calls made and not settled (`pending`) and those not yet handed to a connection
 * (`queue`), and settles them: with a reply's outcome, with a failure (timeout, abort, refusal),
 * and many at once when their connection is lost (each sent call is resent, sent again or
 * failed) or their owner is disposed. A call that settles gives back what it held: the exports
 * it pinned, its abort listener, its deadline.
 *
 * Invariants:
 *  - Every call settles exactly once: reply, timeout, abort, connection loss, disposal. A reply
 *    that arrives after that is ignored; a call that was sent when it timed out or was aborted
 *    is cancelled on the other end (`Cancel` frame), or on the next connection when it was
 *    waiting to be resent.
 *  - A failure nobody awaited within the turn is reported (`onUnobservedError`).
 *
 * Internal module.
 */
import type { CallerOptions } from "./caller.js";
import type { CallTimeouts } from "./call-timeouts.js";
import type { Connection } from "./connection.js";
import { CallFlags } from "./envelopes.js";
import { clearDeadline } from "./call-options.js";
import { IdMap } from "./id-map.js";
import type { OutgoingCall } from "./outgoing-call.js";

export abstract class CallSettling {
  /** Calls made and not settled (queued or waiting for a reply), by id. */
  readonly pending = new IdMap<OutgoingCall>();
  /** Calls not yet handed to a connection, in order. */
  protected queue: OutgoingCall[] = [];
  /** The open connection calls go out on, if any. */
  protected conn: Connection | undefined;
  /** Ids of calls given up while waiting to be resent: cancelled on the next connection. */
  protected cancelNext: number[] | undefined;

  /** Cancels a connection could not send before it ended: the next connection sends them. */
  cancelOnNext(ids: readonly number[]): void {
    (this.cancelNext ??= []).push(...ids);
  }
  /** One timer for every call's timeout (made by the caller: it needs the whole caller). */
  protected abstract readonly timeouts: CallTimeouts;

  constructor(protected readonly options: CallerOptions) {}

  /** Sends what is queued at the end of the turn (caller.ts). */
  protected abstract scheduleFlush(): void;

  /** Settles call `id` with a reply's outcome; unknown ids (timed out, cancelled) are ignored. */
  settleReply(id: number, ok: boolean, outcome: unknown): void {
    const call = this.pending.get(id);
    if (call) this.finish(call, ok, outcome);
  }

  /** The call with `id`, if it is waiting for a reply. */
  waiting(id: number): OutgoingCall | undefined {
    return this.pending.get(id);
  }

  /** Fails `call` now (timeout, abort, refusal); a sent call is cancelled on the other end. */
  fail(call: OutgoingCall, reason: unknown): void {
    if (call.settled) return;
    // Sent, now or on a connection that was cut (then waiting to be resent).
    const sent = call.sentOn !== undefined || call.sentBefore;
    if (call.sentOn && call.sentOn === this.conn && call.id > 0) this.conn.cancel(call.id);
    // Sent on a connection that was cut, and waiting to be resent: its run may still go on
    // there (the delivery record keeps it for the resend), so the next connection cancels it.
    else if (!call.sentOn && call.sentBefore && call.id > 0) (this.cancelNext ??= []).push(call.id);
    this.finish(call, false, reason);
    // Sent calls that pipeline on it (waiting to be resent too) reject with the same error at
    // once, and are cancelled, as they would had it failed on the other end; queued ones see it
    // when they are written.
    if (sent && call.dependedOn)
      for (const other of [...this.pending.values()])
        if ((other.sentOn || other.sentBefore) && other.deps?.includes(call)) this.fail(other, reason);
  }

  protected finish(call: OutgoingCall, ok: boolean, outcome: unknown): void {
    if (!call.settle(ok, outcome)) return;
    call.onStub = undefined;
    if (call.held) {
      // It held the calls after it (its async schema had not answered): they may go now.
      call.held = false;
      this.scheduleFlush();
    }
    this.pending.delete(call.id);
    if (!call.sentOn) this.unpin(call);
    clearDeadline(call);
    if (call.onAbort) {
      call.signal!.removeEventListener("abort", call.onAbort);
      call.onAbort = undefined;
    }
    if (this.pending.size === 0) this.timeouts.idle();
    if (!ok && !call.observed) {
      // Nobody awaited it (yet): report it unless someone does within this turn of the loop.
      setTimeout(() => {
        if (!call.observed) this.options.onUnobservedError(outcome);
      }, 0);
    }
  }

  /** A call that could not be encoded: the reads of lazy paths it made for it are not sent. */
  protected dropLazyReads(call: OutgoingCall, error: unknown): void {
    if (!call.lazyReads) return;
    for (const read of call.lazyReads.values()) if (!read.sentOn) this.finish(read, false, error);
    call.lazyReads = undefined;
  }

  protected unpin(call: OutgoingCall): void {
    if (call.exports) {
      this.options.exports.dropped(call.exports);
      call.exports = undefined;
    }
  }

  /**
   * The connection calls went out on ended. `decide(call)` says what happens to a call that was
   * sent on it and not answered: "retry" puts it back in front of the queue flagged as a resend
   * (the object's delivery record answers it if it ran), "resend" puts it back as a new send (an
   * idempotent call), "fail" fails it with `error(call)`.
   */
  connectionLost(
    lost: Connection,
    decide: (call: OutgoingCall) => "retry" | "resend" | "fail",
    error: (call: OutgoingCall) => unknown,
  ): void {
    if (this.conn === lost) this.conn = undefined;
    if (this.pending.size === 0) this.timeouts.stop(); // a kept timer goes with the connection
    const again: OutgoingCall[] = [];
    for (const call of [...this.pending.values()]) {
      if (call.sentOn !== lost) continue;
      const what = decide(call);
      if (what === "fail") {
        this.finish(call, false, error(call));
        continue;
      }
      call.sentOn = undefined;
      call.sentBefore = true;
      if (what === "retry") call.flags |= CallFlags.Retry;
      if (call.exports) this.options.exports.repin(call.exports);
      again.push(call);
    }
    // In the order they were sent: a call that pipelines on a lazy read it made (a higher id, sent
    // before it) must follow that read again, in the same frame.
    again.sort((a, b) => a.order - b.order);
    this.queue = [...again, ...this.queue];
  }

  /** Fails every call (queued or waiting) with `error`. */
  failAll(error: unknown): void {
    for (const call of [...this.pending.values()]) this.finish(call, false, error);
    this.queue = [];
  }

  /** Takes every queued (unsent) call that is still waiting out of the queue; they stay pending. */
  takeQueued(): OutgoingCall[] {
    const calls = this.queue.filter((call) => !call.settled);
    this.queue = [];
    return calls;
  }

  /** Fails every queued (unsent) call with `error`. */
  failQueued(error: unknown): void {
    for (const call of this.queue) this.finish(call, false, error);
    this.queue = [];
  }
}

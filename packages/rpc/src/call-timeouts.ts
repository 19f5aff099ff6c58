/**
 * Call timeouts: one timer for all of a caller's calls, armed for the earliest deadline (a timer
 * per call cost about a third of the client's own CPU per call). Each call keeps its own deadline
 * (`OutgoingCall.deadline`, 0: none); when the timer fires, every call past its deadline fails
 * with `TIMEOUT` (cancelled on the other end if it was sent, see `Caller.fail`) and the timer is
 * armed again for the earliest deadline left. Owned by the caller (caller.ts).
 *
 * Invariant: while a waiting call has a deadline, the timer is armed for that deadline or an
 * earlier one (a call that settles or gets a later deadline leaves it as it is: at worst it fires
 * for nothing and is armed again). When no call is waiting it is cleared — unless the owner keeps
 * it (`keepArmed`, a client over a socket): then it stays until it fires, finds nothing past its
 * deadline and is not armed again, or until the connection ends. Sequential calls then share one
 * timer instead of setting and clearing one each; a Durable Object clears it, since a pending
 * timer keeps an object from hibernating.
 *
 * Over HTTP requests (`perCall`) each call has a timer of its own, cleared when it settles: a
 * client a Worker shares between its requests makes calls from each, and workerd cancels a
 * request's timers when it ends — one shared timer, set by a request that ended, would never fire
 * for the calls of the next one. (HTTP calls are few and each is a request: the cost is noise.)
 *
 * Internal module.
 */
import type { Caller, CallerOptions } from "./caller.js";
import { RpcError } from "./errors.js";
import type { OutgoingCall } from "./outgoing-call.js";
import { clear, monotonic, unref } from "./timers.js";

export class CallTimeouts {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires (on the `monotonic` clock); Infinity while it is not armed. */
  private at = Infinity;

  constructor(
    private readonly caller: Caller,
    /** The caller's options: `unsentBecause` says why a call that timed out was never sent. */
    private readonly options: CallerOptions,
  ) {}

  /** `call` times out `timeout` ms from now. */
  arm(call: OutgoingCall, timeout: number): void {
    call.timeout = timeout;
    call.deadline = monotonic() + timeout;
    if (this.options.timerPerCall) {
      clear(call.timer);
      call.timer = unref(
        setTimeout(() => {
          call.timer = undefined;
          if (call.deadline !== 0 && this.caller.pending.get(call.id) === call) this.timedOut(call);
        }, timeout),
      );
      return;
    }
    this.armFor(call.deadline);
  }

  /** `call` is past its deadline: it fails with `TIMEOUT`. */
  private timedOut(call: OutgoingCall): void {
    // A call put back to be resent was sent before: it may be running, so never "never sent".
    const sent = call.sentOn !== undefined || call.sentBefore;
    const because = sent ? undefined : this.options.unsentBecause?.();
    const message = `No reply from ${this.caller.label} within ${call.timeout} ms${because ? `: the call was never sent, ${because}` : sent && !call.sentOn ? ": it was sent, its connection closed before the answer, and it may have run." : "."}`;
    this.caller.fail(call, new RpcError("TIMEOUT", message));
  }

  private armFor(deadline: number): void {
    if (deadline >= this.at) return;
    clear(this.timer);
    this.at = deadline;
    // Unref'd: the socket keeps a process alive while calls wait; this timer must not.
    this.timer = unref(setTimeout(() => this.expire(), Math.max(0, deadline - monotonic())));
  }

  private expire(): void {
    this.timer = undefined;
    this.at = Infinity;
    const caller = this.caller;
    const now = monotonic();
    let next = Infinity;
    for (const call of [...caller.pending.values()]) {
      if (call.deadline === 0) continue;
      if (call.deadline <= now) this.timedOut(call);
      else if (call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity) this.armFor(next);
  }

  /**
   * A call's deadline was dropped or moved (`withCallOptions`): an owner that does not keep the
   * timer armed follows the earliest deadline left, so a timer no call needs does not keep a
   * Durable Object from hibernating (a call to a client that waits for a person, `timeout: 0`).
   */
  reconsider(): void {
    if (this.timer === undefined || this.options.keepArmed || this.options.timerPerCall) return;
    let next = Infinity;
    for (const call of this.caller.pending.values()) if (call.deadline !== 0 && call.deadline < next) next = call.deadline;
    if (next === this.at) return;
    this.stop();
    if (next !== Infinity) this.armFor(next);
  }

  /** No call is waiting any more: clears the timer, unless the owner keeps it armed. */
  idle(): void {
    if (!this.options.keepArmed) this.stop();
  }

  /** Clears the timer (the owner is being disposed, or nothing waits). */
  stop(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Infinity;
  }
}

/**
 * The caller half of a connection: the calls this end makes. One implementation for both ends:
 * a client's session owns one for its whole life (calls survive reconnects), a Durable Object
 * has one per socket (pushes and callbacks it calls on that client). It makes calls and sends
 * them; how they settle (replies, failures, a lost connection) is call-settling.ts, which it
 * extends. What a call is on the wire (its chain, arguments and the references they carry) is
 * written by call-writer.ts, and put in a connection's outbox by call-sending.ts; the timer
 * behind every call's timeout is call-timeouts.ts.
 *
 * Invariants:
 *  - A call is sent when it is made: encoded at once (so later mutation of an argument does not
 *    change what is sent), queued, and flushed at the end of the microtask turn with every other
 *    call of that turn, in order, in one frame (more only when bytes force a cut, see outbox.ts).
 *  - A call that pipelines on another call (uses its result as target or argument) travels in
 *    the same frame as that call, so the receiver resolves it without a round trip. When that is
 *    not possible (the other call left in an earlier frame and is still waiting), it is held,
 *    with every call after it, until the other call settles, then encoded with the result.
 *  - `queued + waiting ≤ limits.maxPendingCalls`.
 *  - A call the client-side schemas refuse is never sent; one whose schema is async is held,
 *    with every call after it (order is kept), until the schema has answered.
 *
 * Internal module.
 */
import { DEFER, lostReference, writeCall } from "./call-writer.js";
import { CallSending, FrameTally } from "./call-sending.js";
import { CallSettling } from "./call-settling.js";
import type { Connection } from "./connection.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { type Base, depsInFrame, failedCall, OutgoingCall } from "./outgoing-call.js";
import type { CallMaker } from "./proxy.js";
import { applyCallOptions, type CallOptions, type OptionsHost } from "./call-options.js";
import type { ExportTable } from "./references.js";
import { CallTimeouts } from "./call-timeouts.js";
import { microtask } from "./timers.js";

export interface CallerOptions {
  /** Default per-call timeout in ms; 0 disables. */
  timeout: number;
  /**
   * The first call id, asked at the first call (default 1): on a Durable Object's socket that
   * outlived an eviction, after the ids an earlier instance may still have waiting on the client.
   */
  firstId?: () => number;
  limits: Readonly<RpcLimits>;
  /** Describes the other end in error messages. */
  label: string;
  /** What this end hands out by reference. */
  exports: ExportTable;
  /** A call nobody awaited failed. */
  onUnobservedError: (error: unknown) => void;
  /** Why calls cannot be made right now (disposed), or undefined. */
  refuse?: () => RpcError | undefined;
  /** A call was queued while there is no connection: the owner may connect. */
  onQueued?: () => void;
  /** Backpressure: true while the connection has too much unsent; calls then stay queued. */
  congested?: () => boolean;
  /** What to add to a TIMEOUT message for a call that was never sent (why it could not be). */
  unsentBecause?: () => string | undefined;
  /** Keep the timeout timer armed when no call waits (a client; see call-timeouts.ts). */
  keepArmed?: boolean;
  /**
   * Tell the other end, in the calls it sends, below which id every call has had its reply
   * (the envelope's `answered`): a client with an exactly-once session, whose object may then
   * drop the answers it holds for them.
   */
  acknowledge?: boolean;
  /** A timeout timer per call instead of one for all (HTTP requests; see call-timeouts.ts). */
  timerPerCall?: boolean;
}

/**
 * Client-side argument schemas (client-schemas.ts): for a call on the root following `path`, the
 * refusal, a promise of it for an async schema (`undefined`: accepted), or `undefined`.
 */
export type ArgsCheck = (path: readonly string[], args: readonly unknown[]) => RpcError | Promise<RpcError | undefined> | undefined;

export class Caller extends CallSettling implements CallMaker {
  /** The id the next call gets; 0 until the first call asks `options.firstId`. */
  nextId = 0;
  private flushScheduled = false;
  /** The backpressure retry (see `retryWhenDrained`). */
  private drainTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly flushBound = () => this.flush();
  private readonly flushNext = () => microtask(this.flushBound);
  /** Numbers the frames calls are put in (`OutgoingCall.frame`): a call's deps must share its frame. */
  private frameCount = 0;
  /** How calls are put in the outbox (call-sending.ts). */
  private readonly sending: CallSending;
  /** The frame `flush` fills, measured as the outbox will measure it. */
  private readonly frame: FrameTally;
  /** Client-side argument schemas (the client's `validate` option). */
  private argsCheck: ArgsCheck | undefined;
  /** One timer for every call's timeout. */
  protected readonly timeouts: CallTimeouts;
  /** What per-call options need of this caller (call-options.ts). */
  private readonly host: OptionsHost;

  constructor(options: CallerOptions) {
    super(options);
    this.timeouts = new CallTimeouts(this, options);
    this.sending = new CallSending(this, options.exports, options.acknowledge === true);
    this.frame = new FrameTally(this.sending);
    this.host = {
      timeout: options.timeout,
      arm: (call, timeout) => this.timeouts.arm(call, timeout),
      fail: (call, reason) => this.fail(call, reason),
      reconsider: () => this.timeouts.reconsider(),
    };
  }

  /** Checks the arguments of every call on the root with `check` before it is sent. */
  checkArgsWith(check: ArgsCheck): void {
    this.argsCheck = check;
  }

  get label(): string {
    return this.options.label;
  }

  /** Calls are waiting for the end of the turn to be sent. */
  get queued(): boolean {
    return this.queue.length > 0;
  }

  get connection(): Connection | undefined {
    return this.conn;
  }

  /** Calls go out on `conn` from now on (undefined: hold them). */
  attach(conn: Connection | undefined): void {
    this.conn = conn;
    if (conn && this.cancelNext) {
      for (const id of this.cancelNext) conn.cancel(id);
      this.cancelNext = undefined;
    }
    if (conn && this.queue.length) this.scheduleFlush();
  }

  // ---------------------------------------------------------------------------------------------
  // Making calls
  // ---------------------------------------------------------------------------------------------

  call(base: Base, path: readonly string[], args: readonly unknown[] | undefined, options?: CallOptions): OutgoingCall {
    const refused = this.options.refuse?.();
    if (refused) return failedCall(refused);
    if (options?.signal?.aborted) return failedCall(options.signal.reason);
    const { limits } = this.options;
    // dorpc's own calls (a subscription's subscribe and unsubscribe) are not the app's to bound:
    // refused, a subscription would end, or an unsubscribe be lost, because the app's calls wait.
    if (this.pending.size >= limits.maxPendingCalls && base.kind !== "system") {
      return failedCall(
        new RpcError(
          "LIMIT",
          `${this.pending.size} calls are already queued or waiting for a reply on ${this.label} (limits.maxPendingCalls).`,
        ),
      );
    }
    // Calls settled while queued (timeouts while reconnecting) leave the queue at the next flush;
    // compact now and then so a long outage cannot grow it without bound.
    if (this.queue.length >= limits.maxPendingCalls) this.queue = this.queue.filter((c) => !c.settled);
    const checked = args && base.kind === "root" && this.argsCheck ? this.argsCheck(path, args) : undefined;
    if (checked instanceof RpcError) return failedCall(checked);
    if (this.nextId === 0) this.sending.start((this.nextId = this.options.firstId?.() ?? 1));
    const call = new OutgoingCall(this.nextId++);
    let failed: { error: unknown } | undefined;
    try {
      writeCall(this, this.options, call, base, path, args);
      // Encoding and the schema ran the caller's code (getters, validate), which may have
      // disposed of the client: the call is not in `pending` yet, so nothing else would settle it.
      const late = this.options.refuse?.();
      if (late) failed = { error: late };
    } catch (error) {
      failed = { error };
    }
    if (failed) {
      this.unpin(call);
      this.dropLazyReads(call, failed.error);
      call.settle(false, failed.error);
      call.observed = true; // the proxy hands it out: a failure to encode is seen by whoever awaits
      return call;
    }
    this.pending.set(call.id, call);
    if (base.kind === "stub") call.onStub = base.stub;
    if (options) this.configure(call, options);
    else if (this.options.timeout > 0) this.timeouts.arm(call, this.options.timeout);
    if (checked) this.hold(call, checked);
    this.queue.push(call);
    this.scheduleFlush();
    return call;
  }

  configure(call: OutgoingCall, options: CallOptions): void {
    applyCallOptions(call, options, this.host);
  }

  /** Holds `call` (and the calls after it) until its async client-side schema has answered. */
  private hold(call: OutgoingCall, checked: Promise<RpcError | undefined>): void {
    call.held = true;
    checked.then((refusal) => {
      call.held = false;
      if (refusal) this.finish(call, false, refusal);
      this.scheduleFlush();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Sending
  // ---------------------------------------------------------------------------------------------

  /**
   * Flushes two microtask hops from now: `await handle` and `Promise.all([...handles])` call the
   * handles' `then` in a promise job queued in this turn, so a property read awaited there is
   * still made before the flush and shares the frame with the calls made in this turn.
   */
  protected scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    microtask(this.flushNext);
  }

  /** Hands every queued call that can go to the connection, in order, and sends the frame. */
  flush(): void {
    this.flushScheduled = false;
    const conn = this.conn;
    if (this.queue.length === 0) return;
    if (!conn) {
      // Connect only for calls still alive at the end of the turn (not for one aborted at once,
      // nor one its async client-side schema may yet refuse: its answer flushes again).
      if (this.queue.some((c) => !c.settled && !c.held)) this.options.onQueued?.();
      return;
    }
    if (this.options.congested?.()) {
      this.retryWhenDrained();
      return;
    }
    const queue = this.queue;
    const outbox = conn.outbox;
    const frame = this.frame;
    frame.start(++this.frameCount);
    let i = 0;
    // Held: the frame leaves at `release`, not again in a microtask of its own.
    outbox.hold();
    // A frame of its own: the outbox would otherwise join it to what is queued before it (calls
    // of an earlier flush behind a Blob being read, a broadcast or topic events added while the
    // outbox is held) and cut the whole where this tally did not.
    outbox.cut();
    try {
      for (; i < queue.length; i++) {
        const call = queue[i]!;
        if (call.settled || call.sentOn) continue; // timed out, aborted or failed while queued; sent ahead of its turn
        if (call.held) break; // its client-side schema has not answered: it and every later call wait
        if (call.deferred || (call.deps && !depsInFrame(call, frame.number))) {
          if (!call.deps!.every((d) => d.settled)) {
            // Wait (and keep every later call waiting: order is kept) until they have settled.
            for (const dep of call.deps!) if (!dep.settled) dep.whenSettled(() => this.scheduleFlush());
            break;
          }
          // Encode again with the results that arrived.
          const { base, path, args } = call.source!;
          this.unpin(call);
          try {
            writeCall(this, this.options, call, base, path, args);
          } catch (error) {
            this.fail(call, error === DEFER ? new RpcError("INTERNAL", "A pipelined call could not be encoded.") : error);
            continue;
          }
          if (call.deferred) {
            i--; // depends on something else now: wait for it on the next pass
            continue;
          }
        }
        if (call.conn && call.conn !== conn) {
          this.fail(call, lostReference(this.label, call.conn.caller !== this, call.sentBefore));
          continue;
        }
        if (frame.cutsBefore(call)) {
          // Sent now (unless bytes are being read): backpressure can then stop the rest (below).
          outbox.cut();
          outbox.flush();
          frame.start(++this.frameCount);
          // Backpressure between frames too: the rest waits while the socket is full.
          if (this.options.congested?.()) break;
          if (call.deps?.some((d) => d.sentOn)) {
            i--; // it pipelines on a call of the frame just sent: it waits for it (above)
            continue;
          }
        }
        // Lazy paths it reads that were only read now (they were after a deferral point) go
        // first, in this frame: the call names them.
        if (call.lazyReads) for (const read of call.lazyReads.values()) if (!read.sentOn && !read.settled) frame.put(read, conn);
        frame.put(call, conn);
      }
      this.queue = i === queue.length ? [] : queue.slice(i);
    } finally {
      outbox.release();
    }
    if (this.queue.length && this.options.congested?.()) this.retryWhenDrained();
  }

  /** Under backpressure: one timer (whoever else flushes meanwhile) tries again shortly. */
  private retryWhenDrained(): void {
    if (this.drainTimer !== undefined) return;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = undefined;
      this.flush();
    }, 5);
  }

  /** Clears every timer (the owner is being disposed). */
  stopTimers(): void {
    this.timeouts.stop();
    if (this.drainTimer !== undefined) clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
  }
}

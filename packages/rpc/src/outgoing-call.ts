/**
 * One call this end made: its wire form while it waits to be sent, and its outcome once settled.
 * The proxy hands it out wrapped in a pipelining handle (proxy.ts); the caller (caller.ts) owns
 * its life.
 *
 * Invariant: it settles exactly once. Its promise is made only when someone awaits it, so a call
 * nobody awaits costs no promise; a failure nobody observed is reported (see `Caller`).
 *
 * Internal module.
 */
import type { Connection } from "./connection.js";
import { RpcError } from "./errors.js";

const NO_BLOBS: Uint8Array[] = [];

/** Where a chain starts, as the proxy sees it. */
export type Base =
  | { readonly kind: "root" }
  | { readonly kind: "system" }
  | { readonly kind: "stub"; readonly stub: object }
  | { readonly kind: "call"; readonly call: OutgoingCall };

/** What a deferred call needs to be encoded again once its dependencies settled. */
export interface CallSource {
  readonly base: Base;
  readonly path: readonly string[];
  readonly args: readonly unknown[] | undefined;
}

export class OutgoingCall {
  // --- outcome -------------------------------------------------------------------------------
  settled = false;
  ok = false;
  value: unknown;
  error: unknown;
  /** Someone awaited it, chained on it or passed it along: a failure is theirs to see. */
  observed = false;
  private _promise: Promise<unknown> | undefined;
  private resolveFn: ((value: unknown) => void) | undefined;
  private rejectFn: ((reason: unknown) => void) | undefined;
  /** Run once when it settles (dependents waiting to be encoded, stub bookkeeping). */
  private waiters: (() => void)[] | undefined;

  // --- wire form -----------------------------------------------------------------------------
  /** 0: the root; > 0: the receiver's export; < 0: -(id of a call earlier in the same frame). */
  target = 0;
  /** JSON of the chain steps; empty while deferred. */
  chain = "";
  /** Blobs its records refer to (numbered from 0 for this call). */
  blobs: Uint8Array[] = NO_BLOBS;
  /** Their bytes in all, Blob and File bytes still being read counted at their size. */
  blobBytes = 0;
  /** `CallFlags` to send with it. */
  flags = 0;
  /** Ids of this end's exports it carries (pinned until sent or dropped). */
  exports: number[] | undefined;
  /** The connection whose stubs it carries: it can be sent on that connection only. */
  conn: Connection | undefined;
  /** Some call pipelines on it (see `Caller.fail`: only then are its dependents looked for). */
  dependedOn = false;
  /** Calls whose results it pipelines on; they must travel in the same frame. */
  deps: OutgoingCall[] | undefined;
  /** The caller's number of the frame it was last put in (0: none yet), for `deps` checks. */
  frame = 0;
  /**
   * When it was last put in a frame, counted over the caller's calls: resends go out in this
   * order, not by id (a lazy read a call makes gets a higher id and goes before it).
   */
  order = 0;
  /**
   * The reads it made of lazy paths passed as arguments (`client.config` in `f(client.config)`),
   * by the path: encoding it again uses the same read, never a second one.
   */
  lazyReads: Map<object, OutgoingCall> | undefined;
  /** Kept when the call may have to be encoded again (it pipelines on other calls). */
  source: CallSource | undefined;
  /** It depends on a call sent in an earlier frame: it is encoded again when that one settles. */
  deferred = false;
  /** Blob bytes it carries are still being read; its frame waits for them. */
  ready: Promise<void> | undefined;
  /** Its async client-side schema has not answered yet: it is not sent, nor any call after it. */
  held = false;

  // --- life ----------------------------------------------------------------------------------
  /** The connection it was last sent on, or undefined while queued. */
  sentOn: Connection | undefined;
  /** Sent on a connection that was lost, and queued to go again (it may have run). */
  sentBefore = false;
  /**
   * The stub it is made on, held until it leaves: a stub nobody else holds any more must not be
   * collected (and released) while a call on it waits in the queue.
   */
  onStub: object | undefined = undefined;
  /** Timeout deadline (on the `monotonic` clock, timers.ts), or 0. */
  deadline = 0;
  /** Its own timeout timer, over HTTP requests (call-timeouts.ts `timerPerCall`). */
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  timeout = 0;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /**
   * Failed (`DISCONNECTED`), not resent, when its connection drops: its maker sends a new one with
   * arguments that are current then (a subscribe and its cursor, subscriptions.ts).
   */
  remade = false;
  /** May run twice: re-sent as a fresh call after a drop (at most `retries` times). */
  idempotent = false;
  retries = 0;

  constructor(
    /** The call id; 0 for a notification. */
    readonly id: number,
  ) {}

  /** The promise of its outcome, made on first use. */
  get promise(): Promise<unknown> {
    if (!this._promise) {
      if (this.settled) this._promise = this.ok ? Promise.resolve(this.value) : Promise.reject(this.error);
      else
        this._promise = new Promise((resolve, reject) => {
          this.resolveFn = resolve;
          this.rejectFn = reject;
        });
    }
    return this._promise;
  }

  /** Runs `fn` when it settles (at once if it has). */
  whenSettled(fn: () => void): void {
    if (this.settled) fn();
    else (this.waiters ??= []).push(fn);
  }

  /** Settles it; returns false if it had already settled. */
  settle(ok: boolean, outcome: unknown): boolean {
    if (this.settled) return false;
    if (ok && thenable(outcome)) {
      ok = false;
      outcome = unawaitable();
    }
    this.settled = true;
    this.ok = ok;
    if (ok) this.value = outcome;
    else this.error = outcome;
    if (this.resolveFn) {
      if (ok) this.resolveFn(outcome);
      else this.rejectFn!(outcome);
      this.resolveFn = this.rejectFn = undefined;
    }
    const waiters = this.waiters;
    this.waiters = undefined;
    if (waiters) for (const fn of waiters) fn();
    return true;
  }
}

/**
 * An answer that is `thenable` cannot settle a call: a promise resolved with it would call its
 * `then`, and a stub of the peer's function there would be called with this end's resolve and
 * reject (the peer would settle the call).
 */
export function unawaitable(): RpcError {
  return new RpcError("DECODE", "The answer has a `then` that is a function, so it cannot be awaited: return it under another name.");
}

/** Whether `value` is an object or function whose `then` is a function (a promise would call it). */
export function thenable(value: unknown): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === "function";
  } catch {
    return true; // a `then` that throws when read: not something to resolve a promise with
  }
}

/** Whether every call `call` pipelines on went into frame `frame` (so it can go there too). */
export function depsInFrame(call: OutgoingCall, frame: number): boolean {
  for (const dep of call.deps!) if (dep.frame !== frame) return false;
  return true;
}

/** A call that failed before it could be made. */
export function failedCall(reason: unknown): OutgoingCall {
  const call = new OutgoingCall(0);
  call.settle(false, reason);
  call.observed = true;
  return call;
}

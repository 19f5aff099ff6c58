/**
 * Per-call options (`withCallOptions`): a timeout of its own, an `AbortSignal`, and whether a
 * call may simply be sent again after a drop (`idempotent`). How they apply to a call the caller
 * made (caller.ts), and how they bound the wait for a path read on a result that already left
 * (proxy.ts).
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import type { OutgoingCall } from "./outgoing-call.js";
import { clear, unref } from "./timers.js";

/** Per-call options; see `withCallOptions`. */
export interface CallOptions {
  /** Timeout in ms for this call; 0 disables. */
  timeout?: number;
  /** Abort the call: it rejects with the signal's reason, and the other end is told to stop. */
  signal?: AbortSignal;
  /**
   * The call may safely run twice: if its connection drops before the reply, send it again on
   * the next connection as a new call (without asking the object whether it already ran).
   */
  idempotent?: boolean;
  /** How many times an idempotent call may be re-sent. Default 3. */
  retries?: number;
}

/** What applying options needs of the caller that made the call. */
export interface OptionsHost {
  /** The caller's default timeout (ms; 0: none). */
  readonly timeout: number;
  /** Arms `call`'s timeout for `timeout` ms from now. */
  arm(call: OutgoingCall, timeout: number): void;
  /** Fails `call` now (its signal aborted). */
  fail(call: OutgoingCall, reason: unknown): void;
  /** A call's deadline was dropped or moved: the shared timer follows the earliest one left. */
  reconsider(): void;
}

/** Applies `options` to `call` (still queued or waiting): its timeout, signal and idempotency. */
export function applyCallOptions(call: OutgoingCall, options: CallOptions, host: OptionsHost): void {
  if (call.settled) return;
  const timeout = options.timeout ?? host.timeout;
  const before = call.deadline;
  clearDeadline(call);
  if (timeout > 0) host.arm(call, timeout);
  // Dropped or moved later: the shared timer may have been armed for this call alone.
  if (before !== 0 && (call.deadline === 0 || call.deadline > before)) host.reconsider();
  if (options.signal && options.signal !== call.signal) {
    if (call.onAbort) call.signal!.removeEventListener("abort", call.onAbort);
    const signal = options.signal;
    if (signal.aborted) {
      host.fail(call, signal.reason);
      return;
    }
    call.signal = signal;
    call.onAbort = () => host.fail(call, signal.reason);
    signal.addEventListener("abort", call.onAbort, { once: true });
  }
  if (options.idempotent !== undefined) {
    call.idempotent = options.idempotent;
    call.retries = options.idempotent ? (options.retries ?? 3) : 0;
  }
}

/** `call` has no timeout any more (settled, or about to get another). */
export function clearDeadline(call: OutgoingCall): void {
  call.deadline = 0;
  if (call.timer !== undefined) {
    clearTimeout(call.timer);
    call.timer = undefined;
  }
}

/** `promise`, rejected with `TIMEOUT` after `options.timeout` ms or with the signal's reason on abort. */
export function bounded(promise: Promise<unknown>, options: CallOptions, label: string): Promise<unknown> {
  const { signal, timeout } = options;
  const limited = typeof timeout === "number" && timeout > 0;
  if (!signal && !limited) return promise;
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = () => {
      clear(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal!.reason);
    };
    if (limited) {
      timer = unref(
        setTimeout(() => {
          done();
          reject(new RpcError("TIMEOUT", `No reply from ${label} within ${timeout} ms.`));
        }, timeout),
      );
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        done();
        resolve(value);
      },
      (error) => {
        done();
        reject(error);
      },
    );
  });
}

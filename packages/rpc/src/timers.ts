/**
 * Timer helpers for the core's clocks (call timeouts on both ends; the client's heartbeats and
 * reconnects), the same in browsers, Node and workerd.
 *
 * Internal module.
 */

/**
 * Milliseconds on a clock that only moves forward, for every span a timer is armed from
 * (deadlines, heartbeats, backoffs): `Date.now()` jumps when the system clock is set, and a span
 * measured across the jump would fire a timer an hour early or late.
 */
export const monotonic = (): number => performance.now();

/** Clears `timer` if there is one. */
export const clear = (timer: ReturnType<typeof setTimeout> | undefined) => {
  if (timer !== undefined) clearTimeout(timer);
};

/** Lets a Node process exit while only `timer` is pending (elsewhere a no-op); returns it. */
export const unref = (timer: ReturnType<typeof setTimeout>) => {
  (timer as { unref?: () => void }).unref?.();
  return timer;
};

/**
 * The longest a timer can wait: browsers, Node and workerd fire a longer `setTimeout` at once
 * (after 1 ms), so a longer timeout option is refused rather than firing immediately.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The refusal of a milliseconds option longer than a timer can wait, or `undefined`. */
export const timerTooLong = (name: string, ms: number): string | undefined =>
  ms > MAX_TIMER_MS ? `${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest a timer can wait), got ${ms}.` : undefined;

const RESOLVED = Promise.resolve();

/**
 * Runs `fn` in a microtask, like `queueMicrotask` (the same queue, the same order), but as a
 * promise job: Node's `queueMicrotask` makes an async resource and a bound function for each
 * call, several times the cost, and the client queues two to three per call.
 */
export const microtask = (fn: () => void): void => {
  RESOLVED.then(fn);
};

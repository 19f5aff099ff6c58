/**
 * Timer helpers for the core's clocks (call timeouts on both ends; the client's heartbeats and
 * reconnects), the same in browsers, Node and workerd.
 *
 * Internal module.
 */

/** Clears `timer` if there is one. */
export const clear = (timer: ReturnType<typeof setTimeout> | undefined) => {
  if (timer !== undefined) clearTimeout(timer);
};

/** Lets a Node process exit while only `timer` is pending (elsewhere a no-op); returns it. */
export const unref = (timer: ReturnType<typeof setTimeout>) => {
  (timer as { unref?: () => void }).unref?.();
  return timer;
};

const RESOLVED = Promise.resolve();

/**
 * Runs `fn` in a microtask, like `queueMicrotask` (the same queue, the same order), but as a
 * promise job: Node's `queueMicrotask` makes an async resource and a bound function for each
 * call, several times the cost, and the client queues two to three per call.
 */
export const microtask = (fn: () => void): void => {
  RESOLVED.then(fn);
};

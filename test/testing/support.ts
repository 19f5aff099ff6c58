/** Small helpers shared by the testing project's tests. */

let serial = 0;

/** A fresh instance name, so tests never share a Durable Object by accident. */
export function unique(label: string): string {
  return `${label}-${Date.now().toString(36)}-${(serial++).toString(36)}`;
}

/** Awaits `promise` and returns what it rejected with (fails the test if it resolved). */
export async function failure(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection, but the promise resolved");
}

/** Runs `fn` and returns what it threw (fails the test if it did not throw). */
export function catching(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

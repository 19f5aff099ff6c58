/**
 * What a Durable Object's input gate is holding for, as far as dorpc can see: its storage reads
 * in flight (`get`, `list`, `getAlarm` of `ctx.storage`, and `transaction()`, whose closure reads)
 * and a running `ctx.blockConcurrencyWhile`. While one is pending the runtime delivers no new
 * event to the object, so a native call made meanwhile would start only after it. Writes are not
 * counted: they land in the storage's cache at once, and what their promises wait for is the
 * output gate's.
 *
 * call-turns.ts asks `busy` when a call of a frame has returned without awaiting: a call that
 * left a read pending (`void storage.get(k).then(…)`) or a `blockConcurrencyWhile` running holds
 * the calls after it back to a later event as one that awaits does; and outside workerd, where
 * no runtime holds that event back, the turn itself waits while the gate holds.
 *
 * Each watched method returns a promise of its own that settles as the runtime's does (one
 * microtask later), so a rejection nobody handles is still reported. Code that kept a method of
 * the storage from before dorpc watched it (`const get = ctx.storage.get.bind(ctx.storage)` in
 * the constructor) is not seen.
 *
 * Internal module (workerd; an object run in Node whose `ctx` has a `storage` gets the same view).
 */

/** The methods of `ctx.storage` whose pending promise holds the input gate. */
const STORAGE_READS = ["get", "list", "getAlarm", "transaction"];

/** The view of one object's input gate. */
export interface InputGate {
  /** Whether a storage read or `blockConcurrencyWhile` is pending. */
  readonly busy: boolean;
}

const gates = new WeakMap<object, InputGate>();

/** Watches `ctx` (once per object; later calls return the same view), or `undefined` when it is no Durable Object's state. */
export function watchInputGate(ctx: unknown): InputGate | undefined {
  if (typeof ctx !== "object" || ctx === null) return undefined;
  const storage = (ctx as { storage?: unknown }).storage;
  if (typeof storage !== "object" || storage === null) return undefined;
  const existing = gates.get(ctx);
  if (existing) return existing;
  let pending = 0;
  const gate: InputGate = {
    get busy() {
      return pending > 0;
    },
  };
  const settled = (value: unknown) => {
    pending--;
    return value;
  };
  const failed = (error: unknown) => {
    pending--;
    throw error;
  };
  const watch = (target: Record<string, unknown>, name: string) => {
    const original = target[name];
    if (typeof original !== "function") return;
    try {
      target[name] = function (this: unknown, ...args: unknown[]) {
        const result = original.apply(this, args);
        if (!(result instanceof Promise)) return result;
        pending++;
        return result.then(settled, failed);
      };
    } catch {
      // A frozen object: not watched.
    }
  };
  for (const name of STORAGE_READS) watch(storage as Record<string, unknown>, name);
  watch(ctx as Record<string, unknown>, "blockConcurrencyWhile");
  gates.set(ctx, gate);
  return gate;
}

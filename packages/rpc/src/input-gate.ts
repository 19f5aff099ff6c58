/**
 * What a Durable Object's input gate is holding for, as far as dorpc can see: its storage
 * operations in flight (the methods of `ctx.storage` that return a promise) and a running
 * `ctx.blockConcurrencyWhile`. While any is pending the runtime delivers no new event to the
 * object, so a native call made meanwhile would start only after it.
 *
 * call-turns.ts asks `busy` when a call of a frame has gone async: only then do the calls after
 * it wait for a later event (a timer turn, which the gate holds back); behind an await on
 * anything else (a timer, a `fetch`, another object) native calls would be delivered at once,
 * and so they start at once, in the frame's event, without paying for a timer turn.
 *
 * Each watched method returns a promise of its own that settles as the runtime's does (one
 * microtask later), so a rejection nobody handles is still reported. Code that kept a method of
 * the storage from before dorpc watched it (`const get = ctx.storage.get.bind(ctx.storage)` in
 * the constructor) is not seen; calls behind it then start at once, as they did before call
 * turns existed.
 *
 * Internal module (workerd; a Node object with no `ctx` has no gate, and its calls always wait).
 */

/** The methods of `ctx.storage` that may return a promise. */
const STORAGE_METHODS = ["get", "list", "put", "delete", "deleteAll", "getAlarm", "setAlarm", "deleteAlarm", "transaction", "sync"];

/** The view of one object's input gate. */
export interface InputGate {
  /** Whether a storage operation or `blockConcurrencyWhile` is pending. */
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
      // A frozen object: not watched (its calls behind an await start at once).
    }
  };
  for (const name of STORAGE_METHODS) watch(storage as Record<string, unknown>, name);
  watch(ctx as Record<string, unknown>, "blockConcurrencyWhile");
  gates.set(ctx, gate);
  return gate;
}

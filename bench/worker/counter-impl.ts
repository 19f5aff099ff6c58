/**
 * The one counter every contender serves, so that every contender does the same work against
 * the same state: synchronous `ctx.storage.kv` (SQLite-backed Durable Objects).
 */
export class CounterImpl {
  constructor(private readonly storage: DurableObjectStorage) {}

  increment(by = 1): number {
    const n = (this.storage.kv.get<number>("n") ?? 0) + by;
    this.storage.kv.put("n", n);
    return n;
  }

  getValue(): number {
    return this.storage.kv.get<number>("n") ?? 0;
  }

  /** Does nothing: the "empty call" scenario measures a call with no argument and no result. */
  noop(): void {}

  /** Returns its argument: the payload scenarios measure the wire, not the method. */
  echo<T>(value: T): T {
    return value;
  }
}

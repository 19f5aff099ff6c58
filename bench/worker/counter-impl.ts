/**
 * The one counter every contender serves, so that every contender does the same work against
 * the same state: synchronous `ctx.storage.kv` (SQLite-backed Durable Objects).
 */
export class CounterImpl {
  /**
   * When this instance was constructed (the object's clock, ms). The idle scenarios compare it
   * with the time a client went idle: a later value means the object was evicted and built
   * again. Kept in memory only, so that no contender's first call after a wake-up pays for a write.
   */
  readonly #bornAt = Date.now();

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

  bornAt(): number {
    return this.#bornAt;
  }

  /** A call that takes `ms` on the server without holding the CPU (the ordering scenario's slow call). */
  async slow(ms: number): Promise<void> {
    await new Promise<void>((done) => setTimeout(done, Math.min(Math.max(0, ms), 10_000)));
  }
}

/** The dorpc contenders and the README's quick-start Durable Object. */
import { RpcDurableObject } from "@dorpc/rpc/server";
import { CounterImpl } from "./counter-impl.js";

export class Counter extends RpcDurableObject<Env> {
  static rpcOptions = { exposeErrorStack: true };
  readonly #impl = new CounterImpl(this.ctx.storage);

  increment(by = 1): number {
    return this.#impl.increment(by);
  }

  getValue(): number {
    return this.#impl.getValue();
  }

  noop(): void {
    this.#impl.noop();
  }

  echo<T>(value: T): T {
    return this.#impl.echo(value);
  }

  bornAt(): number {
    return this.#impl.bornAt();
  }

  slow(ms: number): Promise<void> {
    return this.#impl.slow(ms);
  }
}

/**
 * The same Counter served with `hibernation: false`: sockets are `accept()`ed, so every message
 * is handled inside the invocation that accepted the socket instead of being its own invocation
 * (the bench's `dorpc-live` contender; compare it with `floor-accept`).
 */
export class CounterLive extends Counter {
  static override rpcOptions = { exposeErrorStack: true, hibernation: false };
}

/**
 * The same Counter with `ordering: "concurrent"`: a call that awaits does not hold back the
 * calls sent after it on the same connection (the ordering scenario's `dorpc-concurrent`).
 */
export class CounterConcurrent extends Counter {
  static override rpcOptions = { exposeErrorStack: true, ordering: "concurrent" as const };
}

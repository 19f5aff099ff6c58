/** The dorpc contenders and the README's quick-start Durable Object. */
import { RpcDurableObject, rpcCaller } from "@dorpc/rpc/server";
import { CounterImpl } from "./counter-impl.js";

/** What the object may call on its clients (the bench's fan-out listeners expose it). */
export interface BenchClient {
  fan(message: string): void;
}

export class Counter extends RpcDurableObject<Env, BenchClient> {
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

  /** Calls the client's function `times` times (all at once) and returns the sum of its answers. */
  async callback(fn: (i: number) => number, times: number): Promise<number> {
    const answers = await Promise.all(Array.from({ length: times }, (_, i) => fn(i)));
    return answers.reduce((sum, value) => sum + value, 0);
  }

  /** Sends `message` to every other connected client (encoded once); returns how many. */
  fanOut(message: string): number {
    return this.clients({ except: rpcCaller() }).fan(message);
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
 * The same Counter with `ordering: "sequential"`: a call that awaits holds back the calls sent
 * after it on the same connection (the ordering scenario's `dorpc-sequential`; the default is
 * concurrent, as native Durable Object calls).
 */
export class CounterSequential extends Counter {
  static override rpcOptions = { exposeErrorStack: true, ordering: "sequential" as const };
}

/**
 * The same Counter without the exactly-once record (`exactlyOnce: false`): nothing is written
 * per call, and a call cut by a dropped connection is refused when resent, not answered from the
 * record (the guarantee scenario's `dorpc-at-most-once`, the baseline of what the record costs).
 */
export class CounterAtMostOnce extends Counter {
  static override rpcOptions = { exposeErrorStack: true, exactlyOnce: false };
}

/**
 * The Counter of the bench's `dorpc-schema` contender (issue 15): the same methods and options as
 * `Counter` (counter.ts), but `echo` declares a Valibot schema of the 3-field record the
 * `guarantee-schema` scenario sends (`SMALL_RECORD` in ../src/scenarios-features.ts), so the ratio
 * to the plain `dorpc` contender is what argument validation costs a small call.
 *
 * Its own class rather than a subclass of Counter: `echo` must be an `rpcMethod` field, and a
 * field cannot override a method in TypeScript.
 */
import { RpcDurableObject, rpcMethod } from "@dorpc/rpc/server";
import * as v from "valibot";
import { CounterImpl } from "./counter-impl.js";

/** `{ id, name, active }`, as one argument. */
const SMALL_RECORD_ARGS = v.strictTuple([v.object({ id: v.number(), name: v.string(), active: v.boolean() })]);

export class CounterSchema extends RpcDurableObject<Env> {
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

  echo = rpcMethod(SMALL_RECORD_ARGS, (record) => this.#impl.echo(record));

  bornAt(): number {
    return this.#impl.bornAt();
  }

  slow(ms: number): Promise<void> {
    return this.#impl.slow(ms);
  }
}

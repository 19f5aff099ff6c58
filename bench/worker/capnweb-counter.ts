/**
 * The Cap'n Web contender: a Durable Object whose fetch hands the request to capnweb's
 * `newWorkersRpcResponse`, exposing the shared CounterImpl through an RpcTarget. This is the
 * way capnweb's README serves a Durable Object (a non-hibernatable `server.accept()` socket).
 */
import { DurableObject } from "cloudflare:workers";
import { newWorkersRpcResponse, RpcTarget } from "capnweb";
import { CounterImpl } from "./counter-impl.js";

export class CounterApi extends RpcTarget {
  readonly #impl: CounterImpl;

  constructor(impl: CounterImpl) {
    super();
    this.#impl = impl;
  }

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
}

export class CapnwebCounter extends DurableObject<Env> {
  readonly #api = new CounterApi(new CounterImpl(this.ctx.storage));

  override fetch(request: Request): Promise<Response> {
    return newWorkersRpcResponse(request, this.#api);
  }
}

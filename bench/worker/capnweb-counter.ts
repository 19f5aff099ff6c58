/**
 * The Cap'n Web contender: a Durable Object whose fetch hands the request to capnweb's
 * `newWorkersRpcResponse` (WebSocket upgrades and HTTP batch POSTs alike), exposing the shared
 * CounterImpl through an RpcTarget. This is the way capnweb's README serves a Durable Object
 * (a non-hibernatable `server.accept()` socket).
 */
import { DurableObject } from "cloudflare:workers";
import { newWorkersRpcResponse, RpcTarget, type RpcStub } from "capnweb";
import { CounterImpl } from "./counter-impl.js";

type Listener = RpcStub<(message: string) => void>;

export class CounterApi extends RpcTarget {
  readonly #impl: CounterImpl;
  /** Fan-out listeners of every session of this object (duplicated stubs: they outlive subscribe()). */
  readonly #listeners = new Set<Listener>();

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

  bornAt(): number {
    return this.#impl.bornAt();
  }

  slow(ms: number): Promise<void> {
    return this.#impl.slow(ms);
  }

  /** Calls the client's function `times` times (all at once) and returns the sum of its answers. */
  async callback(fn: RpcStub<(i: number) => number>, times: number): Promise<number> {
    const answers = await Promise.all(Array.from({ length: times }, (_, i) => fn(i)));
    return answers.reduce((sum, value) => sum + value, 0);
  }

  /** Keeps the client's function for later fan-outs (`dup()`: a parameter stub dies when the call returns). */
  subscribe(listener: Listener): void {
    this.#listeners.add(listener.dup());
  }

  /**
   * Calls every stored listener with `message` and does not wait for their answers, as capnweb's
   * README calls a stored callback; returns how many were called.
   */
  fanOut(message: string): number {
    for (const listener of this.#listeners) listener(message);
    return this.#listeners.size;
  }
}

export class CapnwebCounter extends DurableObject<Env> {
  readonly #api = new CounterApi(new CounterImpl(this.ctx.storage));

  override fetch(request: Request): Promise<Response> {
    return newWorkersRpcResponse(request, this.#api);
  }
}

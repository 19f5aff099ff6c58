/**
 * The Agents SDK contender: an `Agent` (agents 0.32) whose `@callable()` methods wrap the shared
 * CounterImpl. Agents accept every WebSocket with the hibernation API and speak JSON text frames:
 * a call is `{"type":"rpc","id":<uuid>,"method":…,"args":[…]}` and its reply
 * `{"type":"rpc","id":…,"success":true,"result":…,"done":true}`; on connect the Agent sends its
 * identity (and its state when it has one) before any call. Reached through `routeAgentRequest`
 * at /agents/agents-counter/<instance>, as the Agents docs route it.
 *
 * The decorators are TC39 decorators; wrangler's esbuild lowers them (no Babel needed outside Vite).
 */
import { Agent, callable, getCurrentAgent } from "agents";
import { CounterImpl } from "./counter-impl.js";

export class AgentsCounter extends Agent<Env> {
  readonly #impl = new CounterImpl(this.ctx.storage);

  @callable()
  increment(by = 1): number {
    return this.#impl.increment(by);
  }

  @callable()
  getValue(): number {
    return this.#impl.getValue();
  }

  @callable()
  noop(): void {
    this.#impl.noop();
  }

  @callable()
  echo(value: unknown): unknown {
    return this.#impl.echo(value);
  }

  @callable()
  bornAt(): number {
    return this.#impl.bornAt();
  }

  @callable()
  slow(ms: number): Promise<void> {
    return this.#impl.slow(ms);
  }

  /**
   * Fan-out the Agents way: `broadcast` sends one string to every connection of the object, here
   * without the caller's own connection.
   */
  @callable()
  fanOut(message: string): void {
    const caller = getCurrentAgent().connection;
    this.broadcast(JSON.stringify({ type: "bench_fan", message }), caller ? [caller.id] : undefined);
  }
}

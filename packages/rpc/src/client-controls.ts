/**
 * What is done to a client from outside it: every member name of a client is a path on its
 * Durable Object (`client.close()` calls the object's `close`), so what belongs to the client
 * itself cannot be a member. These functions take the client (or a chain, or a stub) instead:
 *  - `rpcConnection`: its connection — state, state changes, waiting until open, closing;
 *  - `withCallOptions`: options for one call (timeout, signal, idempotent, retries), checked
 *    before its frame leaves;
 *  - `rpcDispose`: closing a client or releasing a stub where `Symbol.dispose` is missing;
 *  - `subscribe`: a topic of its object, typed by the topics the class declares.
 *
 * A client is known by the symbol-keyed session its root proxy answers (`SESSION`, given by
 * `createRpcClient` in client.ts, which re-exports these functions: the public API and the tests
 * import them from there); anything else is refused with `BAD_OPTION`.
 */
import { RpcError } from "./errors.js";
import type { CallOptions } from "./call-options.js";
import { proxyInfo, settledValue, stubHolder } from "./proxy.js";
import { releaseHolder } from "./stub-release.js";
import type { ClientSession, ConnectionState } from "./session.js";
import { type EventInfo, type SubscribeOptions, type Subscription, subscriptionsOf } from "./subscriptions.js";
import type { Arrived, TOPICS } from "./types.js";
import { timerTooLong } from "./timers.js";

/** Symbol-keyed handle on the session behind a client; see {@link getRpcSession}. */
export const SESSION = Symbol("dorpc.session");

/** The session behind a client. Internal: tests use it; users use {@link rpcConnection}. */
export function getRpcSession(client: object): ClientSession {
  const session =
    (typeof client === "object" || typeof client === "function") && client !== null
      ? (client as { [SESSION]?: ClientSession })[SESSION]
      : undefined;
  if (!session) throw new RpcError("BAD_OPTION", "Not a dorpc client.");
  return session;
}

/** The connection of a client, as {@link rpcConnection} shows it. */
export interface RpcConnection {
  /** `idle` (not connected yet), `connecting`, `open`, `reconnecting` or `disposed`. */
  readonly state: ConnectionState;
  /** Calls queued or waiting for a reply. */
  readonly pendingCalls: number;
  /** Calls `listener` on every state change; returns the function that unsubscribes. */
  onStateChange(listener: (state: ConnectionState) => void): () => void;
  /** Resolves once the connection is open (connecting first if idle); rejects if disposed. */
  waitForOpen(): Promise<void>;
  /**
   * Closes the connection and rejects every waiting call with `DISPOSED`; the client cannot be
   * used again. The same as `client[Symbol.dispose]()`, for runtimes without `Symbol.dispose`
   * (Safari) and for code that does not use `using`. Idempotent.
   */
  close(): void;
}

/**
 * The connection behind `client`: its state, a state-change subscription and a way to wait
 * until it is open. Member names of the client itself all belong to the Durable Object, so
 * connection control lives here instead.
 */
export function rpcConnection(client: object): RpcConnection {
  const session = getRpcSession(client);
  return {
    get state() {
      return session.state;
    },
    get pendingCalls() {
      return session.pendingCount;
    },
    onStateChange: (listener) => session.onStateChange(listener),
    waitForOpen: () => session.waitForOpen(),
    close: () => session.dispose(),
  };
}

/**
 * Applies per-call options to a call or property read made on a client, e.g. a longer timeout or
 * an AbortSignal: `await withCallOptions(client.slowJob(), { timeout: 60_000 })`. A call is sent
 * when it is made, so pass it straight in: the options reach it before its frame leaves.
 */
export function withCallOptions<V>(chain: PromiseLike<V>, options: CallOptions): Promise<V> {
  const info = proxyInfo(chain);
  if (info?.kind !== "path") return Promise.reject(new RpcError("BAD_OPTION", "withCallOptions needs a chain made on a dorpc client."));
  // A refused option fails the call too when it is one made on the chain (it has not left yet):
  // the caller sees a failure, so it must not run.
  const refuse = (message: string): Promise<V> => {
    const error = new RpcError("BAD_OPTION", message);
    if (info.base.kind === "call" && info.path.length === 0) {
      info.base.call.observed = true;
      info.maker.configure(info.base.call, { signal: AbortSignal.abort(error) });
    }
    return Promise.reject(error);
  };
  if (typeof options !== "object" || options === null) {
    return refuse(`withCallOptions needs an options object, got ${options === null ? "null" : typeof options}.`);
  }
  const { signal } = options;
  if (
    signal !== undefined &&
    (typeof signal !== "object" ||
      signal === null ||
      typeof signal.addEventListener !== "function" ||
      typeof signal.removeEventListener !== "function" ||
      typeof signal.aborted !== "boolean")
  ) {
    return refuse("withCallOptions({ signal }) must be an AbortSignal (e.g. controller.signal, not the controller).");
  }
  const { timeout, idempotent, retries } = options;
  if (timeout !== undefined && typeof timeout !== "number") {
    return refuse(`withCallOptions({ timeout }) must be a number of milliseconds (0: none), got ${describeValue(timeout)}.`);
  }
  const tooLong = timeout !== undefined ? timerTooLong("withCallOptions({ timeout })", timeout) : undefined;
  if (tooLong) return refuse(tooLong);
  if (idempotent !== undefined && typeof idempotent !== "boolean") {
    return refuse(`withCallOptions({ idempotent }) must be a boolean, got ${describeValue(idempotent)}.`);
  }
  if (retries !== undefined && !(Number.isSafeInteger(retries) && retries >= 0)) {
    return refuse(`withCallOptions({ retries }) must be a whole number ≥ 0, got ${describeValue(retries)}.`);
  }
  return settledValue(info, options) as Promise<V>;
}

/** A value named in a `BAD_OPTION` message (a bigint or a symbol cannot go through a template). */
function describeValue(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value === "bigint" ? `${value}n` : String(value as never);
}

/**
 * Disposes a client or a stub without `Symbol.dispose` (Safari, older runtimes): a client is
 * closed (as `rpcConnection(client).close()`), a stub released. Anything else is refused.
 */
export function rpcDispose(value: object): void {
  const info = proxyInfo(value);
  const holder = stubHolder(value);
  if (info?.kind === "root") info.dispose();
  else if (holder) releaseHolder(holder);
  else throw new RpcError("BAD_OPTION", "rpcDispose needs a dorpc client or stub.");
}

/** The topics a client's object declares. */
type ClientTopics<C> = typeof TOPICS extends keyof C ? (C extends { readonly [TOPICS]?: infer X } ? NonNullable<X> : never) : never;

/** The topic names `subscribe` accepts for `C`: none for anything that is not a client. */
export type TopicName<C> = [ClientTopics<C>] extends [never] ? never : keyof ClientTopics<C> & string;

/** The event type of `topic` on `client`, as it arrives. */
export type TopicEvent<C, K extends TopicName<C>> = Arrived<ClientTopics<C>[K]>;

/**
 * Subscribes `client` to `topic` of its Durable Object: `onEvent` gets every event published on
 * it, in order, each once — across reconnects and the object's hibernation (events missed while
 * away are replayed from the object's storage). See `SubscribeOptions` for resuming from a saved
 * cursor and for what happens when too much was missed.
 */
export function subscribe<C extends object, K extends TopicName<C>>(
  client: C,
  topic: K,
  onEvent: (event: TopicEvent<C, K>, info: EventInfo) => void,
  options?: SubscribeOptions,
): Subscription {
  return subscriptionsOf(client, getRpcSession).add(topic, onEvent as (event: unknown, info: EventInfo) => void, options);
}

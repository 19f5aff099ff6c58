/**
 * `createRpcClient`: a Proxy that records property reads and calls as an operation chain and
 * sends the chain when it is awaited.
 *
 * Hot path: a root-level member (`client.increment`) is one cached proxy; a call creates one
 * chain node and one proxy; awaiting hands resolve/reject straight to the session, so no extra
 * promise sits between the reply and the caller.
 */
import { RpcError } from "./errors.js";
import { resolveLimits, type RpcLimits } from "./limits.js";
import {
  ClientSession,
  type CallOptions,
  type ChainNode,
  type ConnectionState,
  type HeartbeatOptions,
  type ReconnectOptions,
} from "./session.js";
import type { TransportFactory } from "./transport.js";
import type { RpcClient } from "./types.js";
import { webSocketTransport, type WebSocketConstructor } from "./websocket-transport.js";

/** Options for {@link createRpcClient}. Validated when the client is created. */
export interface RpcClientOptions {
  /**
   * Origin of the Worker that routes to the Durable Object, e.g. `https://app.example.com`.
   * `http(s)` becomes `ws(s)`. Default: `location.origin` where it exists (browsers).
   */
  baseUrl?: string;
  /** Path prefix `routeDORequest` listens on. Default `/__rpc`. */
  prefix?: string;
  /** Per-call timeout in ms; 0 disables. Default 30,000. */
  timeout?: number;
  /** WebSocket constructor for runtimes without a global one. */
  WebSocket?: WebSocketConstructor;
  /** Extra query parameters for the connect URL (e.g. an auth token). */
  query?: Record<string, string>;
  /** Receive-side limits for replies. */
  limits?: Partial<RpcLimits>;
  /** Replace the WebSocket transport (tests, custom channels). `baseUrl` is then not needed. */
  transport?: TransportFactory;
  /**
   * Re-open a connection that closed unexpectedly, with capped, jittered exponential backoff;
   * `false` disables. Calls made meanwhile wait (bounded by `limits.maxPendingCalls`) and go out
   * once the connection is open again. Calls already sent are rejected with `DISCONNECTED`
   * unless made with `{ idempotent: true }` (see `withCallOptions`).
   */
  reconnect?: ReconnectOptions | false;
  /**
   * Dead-peer detection: ping after `interval` ms without traffic, close and reconnect when no
   * answer comes within `timeout` ms. Answered by the runtime, so it never wakes a hibernating
   * Durable Object. `false` disables. Default `{ interval: 30_000, timeout: 10_000 }`.
   */
  heartbeat?: HeartbeatOptions | false;
  /** Keep calls queued while the socket has more than this many bytes unsent. Default 16 MiB. */
  highWaterMark?: number;
  /** Abandon (and retry, with backoff) a connection attempt still pending after this many ms. Default 10,000. */
  connectTimeout?: number;
}

const RECONNECT_DEFAULTS: Required<ReconnectOptions> = {
  initialDelay: 250,
  maxDelay: 10_000,
  factor: 2,
  jitter: 0.5,
  resetAfter: 5_000,
};
const HEARTBEAT_DEFAULTS: Required<HeartbeatOptions> = { interval: 30_000, timeout: 10_000 };

/** Merges `given` over `defaults`, rejecting unknown keys and values outside [min, max]. */
function numericOptions<T extends object>(
  name: string,
  given: Partial<T> | undefined,
  defaults: Required<T>,
  ranges: Record<keyof T, [number, number]>,
): Required<T> {
  if (given === undefined) return defaults;
  if (typeof given !== "object" || given === null) throw new RpcError("BAD_OPTION", `${name} must be an object or false.`);
  const out = { ...defaults } as Record<string, number>;
  for (const [key, value] of Object.entries(given)) {
    const range = (ranges as Record<string, [number, number]>)[key];
    if (!range) throw new RpcError("BAD_OPTION", `Unknown option ${name}.${key}; known: ${Object.keys(ranges).join(", ")}.`);
    if (value === undefined) continue;
    if (typeof value !== "number" || !(value >= range[0] && value <= range[1])) {
      throw new RpcError("BAD_OPTION", `${name}.${key} must be a number from ${range[0]} to ${range[1]}, got ${String(value)}.`);
    }
    out[key] = value;
  }
  return out as Required<T>;
}

const DEFAULT_PREFIX = "/__rpc";
const DEFAULT_TIMEOUT = 30_000;

/** Symbol-keyed handle on the session behind a client; see {@link getRpcSession}. */
const SESSION = Symbol("dorpc.session");

/**
 * A typed client for the Durable Object `instance` of the namespace bound as `binding`.
 * Connects lazily on the first call. `T` is the Durable Object class or its instance type.
 *
 * ```ts
 * await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
 * await counter.increment(2);
 * ```
 */
export function createRpcClient<T>(binding: string, instance: string, options: RpcClientOptions = {}): RpcClient<T> {
  if (typeof binding !== "string" || binding === "" || binding.includes("/")) {
    throw new RpcError("BAD_OPTION", `binding must be a non-empty string without "/", got ${JSON.stringify(binding)}.`);
  }
  if (typeof instance !== "string" || instance === "") {
    throw new RpcError("BAD_OPTION", `instance must be a non-empty string, got ${JSON.stringify(instance)}.`);
  }
  const timeout = options.timeout ?? DEFAULT_TIMEOUT;
  if (typeof timeout !== "number" || !(timeout >= 0) || !Number.isFinite(timeout)) {
    throw new RpcError("BAD_OPTION", `timeout must be a finite number of milliseconds ≥ 0, got ${String(timeout)}.`);
  }
  const limits = resolveLimits(options.limits);
  checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  let transport = options.transport;
  let label = `${binding}/${instance}`;
  if (!transport) {
    const url = connectUrl(binding, instance, options);
    label = url;
    const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (typeof WebSocketImpl !== "function") {
      throw new RpcError("BAD_OPTION", 'No global WebSocket in this runtime: pass options.WebSocket (e.g. from the "ws" package).');
    }
    transport = webSocketTransport(url, WebSocketImpl);
  }
  const reconnect =
    options.reconnect === false
      ? false
      : numericOptions<ReconnectOptions>("reconnect", options.reconnect, RECONNECT_DEFAULTS, {
          initialDelay: [0, 3_600_000],
          maxDelay: [0, 3_600_000],
          factor: [1, 100],
          jitter: [0, 1],
          resetAfter: [0, 3_600_000],
        });
  const heartbeat =
    options.heartbeat === false
      ? false
      : numericOptions<HeartbeatOptions>("heartbeat", options.heartbeat, HEARTBEAT_DEFAULTS, {
          interval: [10, 3_600_000],
          timeout: [10, 3_600_000],
        });
  const highWaterMark = options.highWaterMark ?? 16 * 1024 * 1024;
  if (typeof highWaterMark !== "number" || !(highWaterMark > 0)) {
    throw new RpcError("BAD_OPTION", `highWaterMark must be a positive number of bytes, got ${String(highWaterMark)}.`);
  }
  const connectTimeout = options.connectTimeout ?? 10_000;
  if (typeof connectTimeout !== "number" || !(connectTimeout > 0) || !Number.isFinite(connectTimeout)) {
    throw new RpcError("BAD_OPTION", `connectTimeout must be a positive number of milliseconds, got ${String(connectTimeout)}.`);
  }
  const session = new ClientSession({ transport, timeout, limits, label, reconnect, heartbeat, highWaterMark, connectTimeout });
  return rootProxy(session) as RpcClient<T>;
}

/** The connect URL for a client: `${baseUrl}${prefix}/${binding}/${instance}` over ws(s). */
export function connectUrl(binding: string, instance: string, options: RpcClientOptions): string {
  const base = options.baseUrl ?? (globalThis as { location?: { origin?: string } }).location?.origin;
  if (typeof base !== "string" || base === "") {
    throw new RpcError("BAD_OPTION", 'baseUrl is required outside browsers, e.g. { baseUrl: "http://127.0.0.1:8787" }.');
  }
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new RpcError("BAD_OPTION", `baseUrl ${JSON.stringify(base)} is not a valid URL.`);
  }
  const scheme = { "http:": "ws:", "https:": "wss:", "ws:": "ws:", "wss:": "wss:" }[url.protocol];
  if (!scheme) throw new RpcError("BAD_OPTION", `baseUrl must be http(s) or ws(s), got ${JSON.stringify(url.protocol)}.`);
  const prefix = checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  const path = `${url.pathname.replace(/\/$/, "")}${prefix}/${encodeURIComponent(binding)}/${encodeURIComponent(instance)}`;
  const query = options.query ? `?${new URLSearchParams(options.query).toString()}` : "";
  return `${scheme}//${url.host}${path}${query}`;
}

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== "string" || !prefix.startsWith("/") || prefix.endsWith("/")) {
    throw new RpcError("BAD_OPTION", `prefix must start with "/" and not end with one, got ${JSON.stringify(prefix)}.`);
  }
  return prefix;
}

/** The session behind a client. Internal: tests use it; users use {@link rpcConnection}. */
export function getRpcSession(client: object): ClientSession {
  const session = (client as { [SESSION]?: ClientSession })[SESSION];
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
 * Runs `chain` (a call or property read made on a client) with per-call options, e.g. a longer
 * timeout or an AbortSignal: `await withCallOptions(client.slowJob(), { timeout: 60_000 })`.
 */
export function withCallOptions<V>(chain: PromiseLike<V>, options: CallOptions): Promise<V> {
  const info = (chain as { [CHAIN]?: { session: ClientSession; node: ChainNode } })[CHAIN];
  if (!info) return Promise.reject(new RpcError("BAD_OPTION", "withCallOptions needs a chain made on a dorpc client."));
  return new Promise<V>((resolve, reject) => info.session.call(info.node, resolve as (value: unknown) => void, reject, options));
}

const CHAIN = Symbol("dorpc.chain");

/** A function target so that the `apply` trap works; never called itself. */
function chainTarget(): void {}

function rootProxy(session: ClientSession): object {
  const members = new Map<string, unknown>();
  const dispose = () => session.dispose();
  const asyncDispose = async () => session.dispose();
  return new Proxy(chainTarget, {
    get(_target, key) {
      if (typeof key === "symbol") {
        if (key === Symbol.dispose) return dispose;
        if (key === Symbol.asyncDispose) return asyncDispose;
        if (key === SESSION) return session;
        return undefined;
      }
      // A client is not itself awaitable: `await client` or returning it from an async
      // function must not send anything.
      if (key === "then") return undefined;
      // Cached (the hot path reads `client.increment` on every call), so this proxy must not
      // remember a result: awaiting `client.someGetter` reads the property afresh each time.
      let member = members.get(key);
      if (member === undefined) {
        member = chainProxy(session, { parent: undefined, key, args: undefined }, false);
        members.set(key, member);
      }
      return member;
    },
    apply() {
      throw new RpcError("NOT_CALLABLE", "A dorpc client is not a function; call one of its methods.");
    },
    set() {
      throw new RpcError("NOT_CALLABLE", "Properties of a dorpc client cannot be assigned; call a method instead.");
    },
  });
}

function chainProxy(session: ClientSession, node: ChainNode, once = true): unknown {
  // A chain is sent once, when first awaited; awaiting it again yields the same result, like
  // any promise (`const p = c.increment(); await p; await p;` increments once). The cached
  // root members (`once` false) are the exception: each await of `client.prop` reads again.
  let sent: Promise<unknown> | undefined;
  const send = once
    ? () => (sent ??= new Promise((resolve, reject) => session.call(node, resolve, reject)))
    : () => new Promise((resolve, reject) => session.call(node, resolve, reject));
  return new Proxy(chainTarget, {
    get(_target, key) {
      if (typeof key === "symbol") return key === CHAIN ? { session, node } : undefined;
      switch (key) {
        case "then":
          return (onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) =>
            send().then(onFulfilled, onRejected);
        case "catch":
          return (onRejected?: (reason: unknown) => unknown) => send().catch(onRejected);
        case "finally":
          return (onFinally?: () => void) => send().finally(onFinally);
      }
      return chainProxy(session, { parent: node, key, args: undefined });
    },
    apply(_target, _this, args: unknown[]) {
      return chainProxy(session, { parent: node, key: undefined, args });
    },
    set() {
      throw new RpcError("NOT_CALLABLE", "Remote properties cannot be assigned; call a method instead.");
    },
  });
}

/**
 * `createRpcClient`: the public face of a client session. Validates options, builds the session
 * (session.ts) and hands out the client proxy (proxy.ts). What is done to a client once made
 * (`rpcConnection`, `withCallOptions`, `rpcDispose`, `subscribe`) is client-controls.ts',
 * re-exported here.
 */
import { DEFAULT_POLICY } from "./access.js";
import { type ClientSchemas, clientArgsCheck, resolveClientSchemas } from "./client-schemas.js";
import { checkPrefix, connectUrl, DEFAULT_PREFIX, DOT_SEGMENT, queryString } from "./client-url.js";
import { checkOptionKeys } from "./option-keys.js";
import { RpcError } from "./errors.js";
import { resolveLimits, type RpcLimits } from "./limits.js";
import { proxyInfo, rootProxy } from "./proxy.js";
import { ClientSession, type HeartbeatOptions, type ReconnectOptions } from "./session.js";
import type { TransportFactory } from "./transport.js";
import type { RpcClient } from "./types.js";
import { timerTooLong } from "./timers.js";
import { type WebSocketConstructor, webSocketTransport } from "./websocket-transport.js";
import { SESSION } from "./client-controls.js";

export {
  getRpcSession,
  type RpcConnection,
  rpcConnection,
  rpcDispose,
  subscribe,
  type TopicEvent,
  type TopicName,
  withCallOptions,
} from "./client-controls.js";

/**
 * Options for {@link createRpcClient}. Validated when the client is created. `T` (the object's
 * class) only types the keys of `validate`.
 */
export interface RpcClientOptions<T = unknown> {
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
  /**
   * How calls travel. `"websocket"` (default): one WebSocket, calls both ways, pushes,
   * subscriptions. `httpTransport()`: each turn's calls are one `POST` (an HTTP batch) — for
   * scripts, cron jobs and Workers that make a few calls and leave; no pushes, no callbacks, no
   * stubs after the request. Or a `TransportFactory` of your own (tests, custom channels).
   */
  transport?: "websocket" | TransportFactory;
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
  /**
   * What the Durable Object may call on this client: one object whose own methods (or, for a
   * class instance, its class's methods) become callable by the object (`this.clients()`,
   * `this.client(caller)`), under the same access rules as the object's own members. Without
   * it, the object's calls to this client are refused with `NOT_FOUND`.
   */
  expose?: object;
  /**
   * Called with failures nobody else will see: a call that was never awaited, an exposed
   * method that threw while handling a push. Default: `console.error`.
   */
  onError?: (error: unknown, what: string) => void;
  /**
   * `true` (default): a call whose connection drops before its answer is resent on the next
   * connection; the object answers it from its delivery record, so it runs exactly once and the
   * caller sees one result. `false`: such calls fail with `DISCONNECTED` (unless idempotent).
   */
  exactlyOnce?: boolean;
  /**
   * Client-side validation (off by default): argument schemas by method name, or by dotted path
   * for a method reached through properties (`"users.get"`). A call on the client whose
   * arguments fail its schema is refused with `INVALID_ARGUMENT` (the same error and issues the
   * object would give) and nothing is sent; an async schema holds that call, and the calls made
   * after it, until it answers. What is sent is what you passed: the object validates again
   * (and transforms). Pass the same schemas the object declares, from a module both import.
   */
  validate?: ClientSchemas<T>;
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
  const proto = typeof given === "object" && given !== null ? Object.getPrototypeOf(given) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    // An array, a Date or a class instance has no option of its own: its defaults would be used silently.
    const what = Array.isArray(given) ? "an array" : typeof given === "object" && given !== null ? "not a plain object" : String(given);
    throw new RpcError("BAD_OPTION", `${name} must be a plain object or false, got ${what}.`);
  }
  const out = { ...defaults } as Record<string, number>;
  for (const [key, value] of Object.entries(given)) {
    const range = Object.hasOwn(ranges, key) ? (ranges as Record<string, [number, number]>)[key] : undefined;
    if (!range) throw new RpcError("BAD_OPTION", `Unknown option ${name}.${key}; known: ${Object.keys(ranges).join(", ")}.`);
    if (value === undefined) continue;
    if (typeof value !== "number" || !(value >= range[0] && value <= range[1])) {
      throw new RpcError("BAD_OPTION", `${name}.${key} must be a number from ${range[0]} to ${range[1]}, got ${String(value)}.`);
    }
    out[key] = value;
  }
  return out as Required<T>;
}

const DEFAULT_TIMEOUT = 30_000;

/** The keys of `RpcClientOptions`: the compiler checks that it names each one, and no other. */
const CLIENT_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({
    baseUrl: true,
    prefix: true,
    timeout: true,
    WebSocket: true,
    query: true,
    limits: true,
    transport: true,
    reconnect: true,
    heartbeat: true,
    highWaterMark: true,
    connectTimeout: true,
    expose: true,
    onError: true,
    exactlyOnce: true,
    validate: true,
  } satisfies Record<keyof RpcClientOptions, true>),
);

/**
 * A typed client for the Durable Object `instance` of the namespace bound as `binding`.
 * Connects lazily on the first call. `T` is the Durable Object class or its instance type.
 *
 * ```ts
 * await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
 * await counter.increment(2);
 * ```
 */
export function createRpcClient<T>(binding: string, instance: string, options: RpcClientOptions<T> = {}): RpcClient<T> {
  if (typeof options !== "object" || options === null) {
    throw new RpcError("BAD_OPTION", `options must be an object (or left out), got ${options === null ? "null" : typeof options}.`);
  }
  checkOptionKeys(options, CLIENT_OPTIONS, "options");
  if (typeof binding !== "string" || binding === "" || binding.includes("/") || DOT_SEGMENT.test(binding)) {
    throw new RpcError(
      "BAD_OPTION",
      `binding must be a non-empty string without "/", and not "." or "..", got ${JSON.stringify(binding)}.`,
    );
  }
  if (typeof instance !== "string" || instance === "") {
    throw new RpcError("BAD_OPTION", `instance must be a non-empty string, got ${JSON.stringify(instance)}.`);
  }
  if (DOT_SEGMENT.test(instance)) {
    // URLs resolve a "." or ".." segment away (encoded as %2E too): the request would reach another path.
    throw new RpcError(
      "BAD_OPTION",
      `instance ${JSON.stringify(instance)} cannot be a URL path segment: URLs resolve it away. Choose another name.`,
    );
  }
  const timeout = options.timeout ?? DEFAULT_TIMEOUT;
  if (typeof timeout !== "number" || !(timeout >= 0) || !Number.isFinite(timeout)) {
    throw new RpcError("BAD_OPTION", `timeout must be a finite number of milliseconds ≥ 0, got ${String(timeout)}.`);
  }
  const tooLong = timerTooLong("timeout", timeout) ?? timerTooLong("connectTimeout", Number(options.connectTimeout ?? 0));
  if (tooLong) throw new RpcError("BAD_OPTION", tooLong);
  const limits = resolveLimits(options.limits);
  checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  const given = options.transport ?? "websocket";
  if (typeof given === "function" && (given as { makesTransport?: unknown }).makesTransport === true) {
    throw new RpcError(
      "BAD_OPTION",
      `transport: ${given.name || "this function"} makes a transport factory; pass ${given.name || "it"}() (called).`,
    );
  }
  if (given !== "websocket" && typeof given !== "function") {
    throw new RpcError(
      "BAD_OPTION",
      `transport must be "websocket" or a TransportFactory (e.g. httpTransport()), got ${JSON.stringify(given)}.`,
    );
  }
  // The endpoint: required for a WebSocket and for factories that use it, optional otherwise.
  const needsUrl = given === "websocket" || given.usesUrl === true;
  let url: string | undefined;
  try {
    url = connectUrl(binding, instance, options);
  } catch (error) {
    // A baseUrl given is checked whatever the transport: a wrong one is a mistake either way.
    if (needsUrl || options.baseUrl !== undefined) throw error;
    // A transport that builds its own endpoint still gets a checked query (a value not set yet).
    if (options.query !== undefined) queryString(options.query);
  }
  let transport: TransportFactory;
  if (given === "websocket") {
    const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (typeof WebSocketImpl !== "function") {
      throw new RpcError("BAD_OPTION", 'No global WebSocket in this runtime: pass options.WebSocket (e.g. from the "ws" package).');
    }
    transport = webSocketTransport(url!, WebSocketImpl);
  } else transport = given;
  const label = needsUrl ? (transport.connectionless ? url!.replace(/^ws(s?):/, "http$1:") : url!) : `${binding}/${instance}`;
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
    options.heartbeat === false || (transport.connectionless && options.heartbeat === undefined)
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
  const expose = options.expose;
  if (expose !== undefined && ((typeof expose !== "object" && typeof expose !== "function") || expose === null || proxyInfo(expose))) {
    throw new RpcError("BAD_OPTION", "expose must be an object whose methods the Durable Object may call.");
  }
  if (typeof expose === "function" && isClass(expose)) {
    throw new RpcError(
      "BAD_OPTION",
      `expose is the class ${expose.name || "(anonymous)"}; pass an instance of it (new ${expose.name || "Handlers"}()).`,
    );
  }
  const exactlyOnce = options.exactlyOnce ?? true;
  if (typeof exactlyOnce !== "boolean") throw new RpcError("BAD_OPTION", `exactlyOnce must be true or false, got ${String(exactlyOnce)}.`);
  const onError = options.onError ?? ((error: unknown, what: string) => console.error(`dorpc: ${what} failed:`, error));
  if (typeof onError !== "function") throw new RpcError("BAD_OPTION", "onError must be a function.");
  // Called from inside the client's own work (a frame being read, a timer): an onError that
  // throws must not cut that work short (the rest of a frame, the object's next call).
  const report = (error: unknown, what: string): void => {
    try {
      onError(error, what);
    } catch (thrown) {
      console.error(`dorpc: onError threw while reporting that ${what} failed:`, thrown);
    }
  };
  const schemas = resolveClientSchemas(options.validate);
  const isPlain = expose !== undefined && [Object.prototype, null].includes(Object.getPrototypeOf(expose));
  const session = new ClientSession({
    transport,
    url,
    timeout,
    limits,
    label,
    reconnect,
    heartbeat,
    highWaterMark,
    connectTimeout,
    expose: { root: expose, rule: isPlain ? "expose" : "object", policy: DEFAULT_POLICY },
    onError: report,
    exactlyOnce,
  });
  if (schemas) session.caller.checkArgsWith(clientArgsCheck(schemas));
  return rootProxy(
    session.caller,
    () => session.dispose(),
    (key) => (key === SESSION ? session : undefined),
  ) as RpcClient<T>;
}

/** Whether `fn` is a class (its source starts with `class`): it cannot be called, only its instances used. */
function isClass(fn: Function): boolean {
  try {
    return /^class[\s{]/.test(Function.prototype.toString.call(fn));
  } catch {
    return false;
  }
}

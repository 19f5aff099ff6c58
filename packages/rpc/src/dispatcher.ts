/**
 * The Durable Object side's entry: validated server options, and one `Connection` per channel
 * (socket), made on its first frame and kept in memory until the channel closes or the object is
 * evicted. Runtime-neutral: it sees a channel only as a `ReplyChannel`, so it runs in Node unit
 * tests exactly as in workerd. The workerd glue is durable-object.ts, with the base class and the
 * mixin in rpc-durable-object.ts.
 *
 * Internal module.
 */
import type { AccessPolicy } from "./access.js";
import { type AccessOptions, accessPolicy } from "./access-options.js";
import { Caller } from "./caller.js";
import { closeReason } from "./close-reasons.js";
import { checkOptionKeys } from "./option-keys.js";
import { Connection, type ServerConnection } from "./connection.js";
import { watchInputGate } from "./input-gate.js";
import { CloseCode } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { IncomingData, WireFrame } from "./frame.js";
import { resolveLimits, type RpcLimits } from "./limits.js";
import { type Records, ServerCallee } from "./server-callee.js";
import { type DeliveryOptions, type ResolvedDelivery, resolveDelivery } from "./delivery-options.js";
import { platformIdentities } from "./platform-state.js";
import { checkSchemas } from "./require-schemas.js";
import { ExportTable } from "./references.js";
import { describeFunction } from "./schema-check.js";
import { timerTooLong } from "./timers.js";
import { type ResolvedTopic, resolveTopics, type TopicOptions } from "./topics-options.js";

/** Options of the server side. Validated once per options object. */
export interface RpcServerOptions {
  /** Send `Error.stack` of thrown errors to clients. Default `false`: stacks reveal code paths. */
  exposeErrorStack?: boolean;
  /** Receive-side limits. */
  limits?: Partial<RpcLimits>;
  /** Narrow what chains may reach (see access.ts for the fixed rules). */
  access?: AccessOptions;
  /** Path prefix of the RPC endpoint, as routed by `routeDORequest`. Default `/__rpc`. */
  prefix?: string;
  /**
   * `"concurrent"` (default): each call starts as soon as it arrives (in the order sent) and
   * interleaves with others at its `await`s, as native Durable Object calls do; a slow call does
   * not hold back the ones after it. Calls of one frame start as separate native calls would:
   * after one that awaits, the next in a later event, which the input gate holds while a storage
   * operation is pending. `"sequential"`: calls from one connection run one after another, even
   * when a call awaits I/O (a cancelled call stops holding the others back).
   */
  ordering?: "sequential" | "concurrent";
  /**
   * Runs on each WebSocket upgrade; what it returns is stored with the socket (surviving
   * hibernation) and read by `rpcCaller()` during calls. Throwing refuses the connection with
   * 401. Example: `identify: readIdentityHeader` behind `routeDORequest` + `withIdentity`.
   */
  identify?: (request: Request) => unknown;
  /**
   * `true` (default): sockets are accepted with the hibernation API (`ctx.acceptWebSocket`), so
   * the object can be evicted between messages and heartbeats never wake it. `false`: sockets are
   * `accept()`ed and served from event listeners — measurably lower latency per call under
   * workerd (see docs/performance.md), but the object stays in memory while any client is
   * connected and every socket closes when the object is reset.
   */
  hibernation?: boolean;
  /**
   * Timeout in ms for calls the object makes to its clients and awaits (`this.client(caller).x()`,
   * a callback a client passed); 0 disables. Default 30,000.
   */
  callTimeout?: number;
  /**
   * Topics clients may subscribe to (`subscribe(client, topic, …)`) and the object publishes to
   * (`this.publish(topic, event)`), with how many events each keeps for clients that were away.
   * Needs SQLite storage. Default: none.
   */
  topics?: Record<string, TopicOptions>;
  /**
   * Exactly-once delivery across reconnects (default on, with SQLite storage): the object records
   * each call that ran and its answer, so a call a client resends after a dropped connection is
   * answered from the record instead of running twice. `false` turns it off (calls cut by a drop
   * then fail with DISCONNECTED); an object lets you tune the record (docs/reliability.md).
   */
  exactlyOnce?: boolean | DeliveryOptions;
  /**
   * `true`: refuse to serve any method without an argument schema (`rpcMethod(schema, fn)`): the
   * strictest mode, for public endpoints. The object's own methods are checked when it is first
   * served (and by `withRpc` for its prototype), and a missing schema is a `BAD_OPTION` naming
   * every such method; methods of `RpcTarget`s and functions it hands out are checked per call
   * (`NOT_CALLABLE`). Getters take no arguments and are exempt. Default `false`.
   */
  requireSchemas?: boolean;
}

/** Options after validation, with the derived policy. */
export interface ResolvedServerOptions {
  readonly exposeErrorStack: boolean;
  readonly limits: Readonly<RpcLimits>;
  readonly policy: AccessPolicy;
  readonly prefix: string;
  readonly sequential: boolean;
  readonly identify: ((request: Request) => unknown) | undefined;
  readonly hibernation: boolean;
  readonly callTimeout: number;
  readonly topics: ReadonlyMap<string, ResolvedTopic>;
  readonly delivery: ResolvedDelivery | undefined;
  readonly requireSchemas: boolean;
}

/** The keys of `RpcServerOptions`: the compiler checks that it names each one, and no other. */
const SERVER_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({
    exposeErrorStack: true,
    limits: true,
    access: true,
    prefix: true,
    ordering: true,
    identify: true,
    hibernation: true,
    callTimeout: true,
    topics: true,
    exactlyOnce: true,
    requireSchemas: true,
  } satisfies Record<keyof RpcServerOptions, true>),
);

const resolved = new WeakMap<object, ResolvedServerOptions>();
const DEFAULTS_KEY = {};

/** Validates `options` (once per object) and derives the policy. */
export function resolveServerOptions(options: RpcServerOptions | undefined): ResolvedServerOptions {
  const key = options === undefined ? DEFAULTS_KEY : options; // not `??`: null is refused below, every time
  let out = typeof key === "object" && key !== null ? resolved.get(key) : undefined;
  if (out) return out;
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new RpcError("BAD_OPTION", "Server options must be an object.");
  }
  if (options !== undefined) checkOptionKeys(options, SERVER_OPTIONS, "server options");
  const prefix = options?.prefix ?? "/__rpc";
  if (typeof prefix !== "string" || !prefix.startsWith("/") || prefix.endsWith("/")) {
    throw new RpcError("BAD_OPTION", `prefix must start with "/" and not end with one, got ${JSON.stringify(prefix)}.`);
  }
  const limits = resolveLimits(options?.limits);
  const ordering = options?.ordering ?? "concurrent";
  if (ordering !== "sequential" && ordering !== "concurrent") {
    throw new RpcError("BAD_OPTION", `ordering must be "sequential" or "concurrent", got ${JSON.stringify(ordering)}.`);
  }
  if (options?.identify !== undefined && typeof options.identify !== "function") {
    throw new RpcError("BAD_OPTION", "identify must be a function of the upgrade request.");
  }
  if (options?.hibernation !== undefined && typeof options.hibernation !== "boolean") {
    throw new RpcError("BAD_OPTION", `hibernation must be true or false, got ${JSON.stringify(options.hibernation)}.`);
  }
  const requireSchemas = options?.requireSchemas ?? false;
  if (typeof requireSchemas !== "boolean") {
    throw new RpcError("BAD_OPTION", `requireSchemas must be true or false, got ${JSON.stringify(requireSchemas)}.`);
  }
  if (requireSchemas && options?.access?.unsafeTrustedCaller === true) {
    // A trusted caller reaches ctx, env and every object: nothing of that has a schema.
    throw new RpcError(
      "BAD_OPTION",
      "requireSchemas cannot be combined with access.unsafeTrustedCaller, which reaches members no schema covers.",
    );
  }
  const callTimeout = options?.callTimeout ?? 30_000;
  if (typeof callTimeout !== "number" || !(callTimeout >= 0) || !Number.isFinite(callTimeout)) {
    throw new RpcError("BAD_OPTION", `callTimeout must be a finite number of milliseconds ≥ 0, got ${String(callTimeout)}.`);
  }
  const tooLong = timerTooLong("callTimeout", callTimeout);
  if (tooLong) throw new RpcError("BAD_OPTION", tooLong);
  out = Object.freeze({
    callTimeout,
    topics: resolveTopics(options?.topics),
    delivery: resolveDelivery(options?.exactlyOnce),
    requireSchemas,
    identify: options?.identify,
    hibernation: options?.hibernation !== false,
    sequential: ordering === "sequential",
    exposeErrorStack: options?.exposeErrorStack === true,
    limits,
    policy: accessPolicy(options?.access),
    prefix,
  });
  resolved.set(key, out);
  return out;
}

/**
 * With `requireSchemas`, throws `BAD_OPTION` naming every method of `target` a client could call
 * that has no argument schema (require-schemas.ts). `target` is the object, or before one exists
 * (`withRpc`), an object whose prototype is its class's. Checked once per object.
 */
export function checkServed(target: object, options: ResolvedServerOptions): void {
  if (options.requireSchemas) checkSchemas(target, options.policy, labelOf(target));
}

/** A connection as the dispatcher needs it. Also the key of its per-connection state. */
export interface ReplyChannel {
  send(frame: WireFrame): void;
  close(code?: number, reason?: string): void;
}

const connections = new WeakMap<ReplyChannel, ServerConnection>();

/** Hooks the workerd glue adds to a channel's connection. */
export interface ChannelHooks {
  /** True when reference `id` was handed out on the channel before an eviction (it is gone). */
  lostBefore?: (id: number) => boolean;
  /**
   * The connection hands out its first reference, or makes its first call: the first id of
   * either (see references.ts); after an eviction, past the ids an earlier instance used.
   */
  firstId?: () => number;
  /** What the client's system calls (subscribe, unsubscribe) reach on this channel. */
  system?: object;
  /** The client session of this channel, when known before its Hello (after eviction). */
  session?: string;
  /** A client said hello (see `ConnectionConfig.onHello`). */
  onHello?: (session: string, resending: boolean, age?: number, fresh?: boolean) => boolean;
  /** The object's delivery record. */
  records?: Records;
  /** The client cannot be called back (an HTTP batch): why, for the error of such a call. */
  noCallbacks?: string;
  /** References handed out here end with the channel (an HTTP batch): why, for the error of a later use. */
  referencesEnd?: string;
}

/** The connection of `channel` serving `target`, made on first use. */
export function connectionFor(
  channel: ReplyChannel,
  target: object,
  options: ResolvedServerOptions,
  hooksOf?: (channel: ReplyChannel) => ChannelHooks,
): ServerConnection {
  let conn = connections.get(channel);
  if (conn) return conn;
  const hooks = hooksOf?.(channel);
  const { limits } = options;
  const label = labelOf(target);
  const env = (target as { env?: unknown }).env;
  const ctx = (target as { ctx?: unknown }).ctx;
  const forbidden = options.policy.trusted ? undefined : platformIdentities(target);
  const gate = watchInputGate(ctx);
  conn = new Connection(channel, {
    limits,
    key: channel,
    exports: new ExportTable(limits.maxExports, `The connection to ${label}`, hooks?.firstId),
    caller: (c) => {
      const caller = new Caller({
        timeout: options.callTimeout,
        firstId: hooks?.firstId,
        limits,
        label: "the client",
        exports: c.exports,
        // A socket that is closing or closed: calls to it fail at once instead of timing out.
        refuse: () =>
          hooks?.noCallbacks
            ? new RpcError("NOT_CALLABLE", hooks.noCallbacks)
            : ((channel as { readyState?: number }).readyState ?? 1) > 1
              ? new RpcError("DISCONNECTED", "The client has disconnected; the call was not sent.")
              : undefined,
        onUnobservedError: (error) => console.warn(`dorpc: a call to a client that nobody awaited failed: ${describe(error)}`),
      });
      caller.attach(c);
      return caller;
    },
    callee: (c) =>
      new ServerCallee(c, {
        root: target,
        rootRule: "object",
        label,
        policy: options.policy,
        limits,
        sequential: options.sequential,
        exposeErrorStack: options.exposeErrorStack,
        system: hooks?.system,
        records: hooks?.records,
        ownsSession: !(channel as { http?: boolean }).http,
        gate,
        forbidden,
        requireSchemas: options.requireSchemas ? (name) => unschematised(name, label) : undefined,
        // Never stepped into, by a chain or a pipelined path: the object, its env and ctx, and
        // what they hold (the same set a result may not carry).
        isPlatformState: (v) => v === target || (v !== undefined && (v === env || v === ctx || (forbidden?.has(v as object) ?? false))),
        onNotificationError: (error) => console.warn(`dorpc: a notification sent to ${label} failed: ${describe(error)}`),
      }),
    answerPings: true,
    onUnreadable: (error) =>
      channel.close(error.code === "LIMIT" ? CloseCode.MessageTooBig : CloseCode.PolicyViolation, closeReason(error.message)),
    lostExport: (id) =>
      hooks?.referencesEnd
        ? `No reference ${id} here: ${hooks.referencesEnd}`
        : hooks?.lostBefore?.(id)
          ? `Reference ${id} is gone: ${label} was evicted from memory (hibernation) since it handed it out, and references live in memory only.`
          : undefined,
    session: hooks?.session,
    onHello: hooks?.onHello,
  }) as ServerConnection; // its callee is the ServerCallee made above
  connections.set(channel, conn);
  return conn;
}

/** The connection of `channel`, if it has one. */
export function existingConnection(channel: ReplyChannel): ServerConnection | undefined {
  return connections.get(channel);
}

/**
 * Handles one incoming message on `channel` for `target`. Returns `false` when the message is
 * not a dorpc frame (the caller may handle it), `true` otherwise. The replies of calls that
 * finished synchronously leave in one frame before this returns; the others as they settle
 * (batched per microtask turn).
 */
export function dispatchFrame(
  data: IncomingData,
  target: object,
  options: ResolvedServerOptions,
  channel: ReplyChannel,
  hooksOf?: (channel: ReplyChannel) => ChannelHooks,
): boolean {
  return connectionFor(channel, target, options, hooksOf).receive(data);
}

/**
 * `channel` closed (or errored): its connection ends. Calls the object made to that client fail
 * with `DISCONNECTED`, its running calls are cancelled, its references are dropped.
 */
export function channelClosed(channel: ReplyChannel, code: number, reason: string): void {
  const conn = connections.get(channel);
  if (!conn) return;
  connections.delete(channel);
  // Closed by the client (disposed, page left) or refused by the object: it does not come back
  // for these calls. Anything else (1006, a heartbeat timeout, a restart; 1000 too, which is how
  // a client answers the object's own close) is a cut it may resend after.
  const peerMayReturn = !CLIENT_GONE.has(code);
  conn.end(
    { code: "REFERENCE_LOST", message: `The client disconnected (code ${code}); its references ended with its connection.` },
    peerMayReturn,
    code === CloseCode.SessionEnded || code === CloseCode.GoingAway,
    code === CloseCode.SessionEnded,
  );
  // The error only when a call waits for it: an Error captures a stack, and most connections
  // close with no call of the object's to the client waiting.
  const { caller } = conn;
  if (caller.pending.size > 0 || caller.queued) {
    caller.failAll(
      new RpcError("DISCONNECTED", `The client disconnected (code ${code}${reason ? `: ${reason}` : ""}) before it answered.`),
    );
  }
  conn.exports.peerLost();
}

/**
 * Close codes after which a client does not resend the calls of that connection: it was disposed
 * (4002), its page left (1001), or the object refused a frame of it (1003, 1008, 1009).
 */
const CLIENT_GONE = new Set<number>([
  CloseCode.SessionEnded,
  CloseCode.GoingAway,
  1003,
  CloseCode.PolicyViolation,
  CloseCode.MessageTooBig,
]);

/** `requireSchemas`: the refusal of a call to a function without an argument schema. */
function unschematised(name: string | undefined, label: string): RpcError {
  const what = describeFunction(name, label);
  return new RpcError(
    "NOT_CALLABLE",
    `${what.charAt(0).toUpperCase()}${what.slice(1)} has no argument schema, and ${label} is served with requireSchemas: declare it with rpcMethod(schema, fn).`,
  );
}

export function labelOf(target: object): string {
  const name = (target as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name ? name : "the Durable Object";
}

function describe(error: unknown): string {
  return String((error as Error)?.message ?? error).slice(0, 300);
}

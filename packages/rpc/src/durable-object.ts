/**
 * workerd glue: accepting WebSockets on a Durable Object (hibernatable by default) and feeding
 * their messages to the connection core; the object's way back to its clients (`rpcClients`,
 * `rpcClient`, `rpcPublish`). With rpc-durable-object.ts, the only files of the server entry that
 * import `cloudflare:workers`.
 *
 * Three ways in, from least to most hand-written:
 *  - `class Counter extends RpcDurableObject<Env> { … }` (rpc-durable-object.ts)
 *  - `export const Counter = withRpc(CounterBase, options)` (rpc-durable-object.ts)
 *  - `handleRpcRequest` / `handleRpcMessage` / `handleRpcClose` inside your own handlers (here).
 *
 * Who is calling (`rpcCaller()`) is rpc-caller.ts'. What server.ts does not re-export
 * (`rpcMessage`, `closeQuietly`, `prepareStorage`) is internal: the base class and the mixin are
 * built on it.
 */
import { DurableObject } from "cloudflare:workers";
import { stopAtPrototype } from "./access.js";
import {
  type ChannelHooks,
  channelClosed,
  checkServed,
  dispatchFrame,
  existingConnection,
  labelOf,
  type ReplyChannel,
  resolveServerOptions,
  type ResolvedServerOptions,
  type RpcServerOptions,
} from "./dispatcher.js";
import { HEARTBEAT_PING, HEARTBEAT_PONG } from "./envelopes.js";
import { defaultOptions, noteServed, optionsOf } from "./object-options.js";
import { RpcError } from "./errors.js";
import { type Broadcast, broadcastTo, type ClientFilter, type ClientRef, type ClientStub, clientStub } from "./push.js";
import {
  addLiveSocket,
  hooksFor,
  httpFirstId,
  isRpcSocket,
  RPC_SOCKET_TAG,
  type RpcAttachment,
  readAttachment,
  removeLiveSocket,
  toAttachable,
  writeAttachment,
} from "./socket-state.js";
import { deliveryOf } from "./delivery-binding.js";
import { handleBatch, type HttpChannel } from "./http-batch.js";
import { publish, topicSystem, watchTopicLog } from "./topics.js";

// Whichever way in an object takes, the members of workerd's base class are never reachable.
stopAtPrototype(DurableObject.prototype);

function stateOf(target: object): DurableObjectState {
  const ctx = (target as { ctx?: DurableObjectState }).ctx;
  if (!ctx || typeof ctx.acceptWebSocket !== "function") {
    throw new RpcError(
      "BAD_OPTION",
      "handleRpcRequest needs the Durable Object instance (an object with `ctx`) as its second argument, e.g. handleRpcRequest(request, this).",
    );
  }
  return ctx;
}

// ---------------------------------------------------------------------------------------------
// Options per object
// ---------------------------------------------------------------------------------------------

/**
 * Run by the constructors of `RpcDurableObject` and of `withRpc`'s class: dorpc's tables in the
 * object's storage (the delivery record, the topic log) watch `ctx.storage.deleteAll()` from the
 * instance's start, so a wipe made before its first dorpc message — in `alarm()`, in `fetch()` —
 * still leaves them consistent (storage-writes.ts). Invalid options are left for the first
 * request to report, as before.
 */
export function prepareStorage(target: object): void {
  let resolved: ResolvedServerOptions;
  try {
    resolved = optionsOf(target);
  } catch {
    return;
  }
  watchStorage(target, resolved);
}

/**
 * For a Durable Object that serves dorpc by hand (`handleRpcRequest`, `handleRpcMessage`): call
 * it in the constructor, once `this.ctx` is set, with the options it serves with. dorpc's tables
 * in its storage (the delivery record, the topic log) then watch `ctx.storage.deleteAll()` from
 * the instance's start, as `RpcDurableObject` and `withRpc` do themselves: a wipe in `alarm()` or
 * in the object's own `fetch()` before the first dorpc message is noted, so a call answered before
 * it is never run again on the wiped state. Throws `BAD_OPTION` for invalid options.
 */
export function watchRpcStorage(target: object, options?: RpcServerOptions): void {
  const resolved = resolveServerOptions(options ?? defaultOptions(target));
  stateOf(target);
  watchStorage(target, resolved);
}

function watchStorage(target: object, resolved: ResolvedServerOptions): void {
  deliveryOf(target, resolved.delivery);
  if (resolved.topics.size > 0) watchTopicLog(target, resolved.topics);
}

/** The per-channel hooks for `target`: made once per object, not per message. */
const channelHooks = new WeakMap<object, (channel: ReplyChannel) => ChannelHooks>();

function hooksOf(target: object, resolved: ResolvedServerOptions): (channel: ReplyChannel) => ChannelHooks {
  let hooks = channelHooks.get(target);
  if (!hooks) {
    noteServed(target, resolved);
    const records = deliveryOf(target, resolved.delivery);
    hooks = (channel) => {
      const ws = channel as WebSocket;
      // An HTTP batch has no socket: no attachment to keep, no subscriptions (nothing to push to).
      const http = (channel as Partial<HttpChannel>).http === true;
      const base: ChannelHooks = http ? { firstId: () => httpFirstId(target) } : hooksFor(channel, target);
      if (resolved.topics.size > 0 && !http) base.system = topicSystem(target, ws, resolved.topics);
      base.records = records;
      base.onHello = (session, resending, age, fresh) => {
        // Kept with the socket: after eviction the new connection still knows whose calls arrive.
        const attachment = http ? undefined : readAttachment(ws);
        if (attachment && attachment.session !== session) writeAttachment(ws, { ...attachment, session });
        return records ? records.hello(session, resending, age, fresh) : true;
      };
      return base;
    };
    channelHooks.set(target, hooks);
  }
  return hooks;
}

// ---------------------------------------------------------------------------------------------
// Accepting and serving sockets
// ---------------------------------------------------------------------------------------------

/**
 * Accepts a dorpc WebSocket upgrade for `target` and returns the 101 response; returns
 * `undefined` for any other request (so your own `fetch` can handle it). A plain request to the
 * RPC path itself gets 426 Upgrade Required.
 *
 * The socket is accepted with the hibernation API (`ctx.acceptWebSocket`) unless the options say
 * `hibernation: false`, so the object may be evicted between messages.
 */
export async function handleRpcRequest(request: Request, target: object, options?: RpcServerOptions): Promise<Response | undefined> {
  const resolved = resolveServerOptions(options ?? defaultOptions(target));
  const ctx = stateOf(target);
  const path = new URL(request.url).pathname;
  if (!isRpcPath(path, resolved.prefix)) return undefined;
  try {
    checkServed(target, resolved); // requireSchemas: a method without a schema refuses the object, not one call
  } catch (error) {
    // Every request would fail the same way: answer with why (a thrown fetch is an untyped 500,
    // which an HTTP client takes for a lost answer and resends until its calls time out), and
    // say it where the developer looks.
    const message = String((error as Error)?.message ?? error);
    console.error(`dorpc: ${message}`);
    return new Response(JSON.stringify({ error: { code: "BAD_OPTION", message } }), {
      status: 500,
      headers: { "Content-Type": "application/json; charset=utf-8" },
    });
  }
  const upgrade = request.headers.get("Upgrade")?.toLowerCase() === "websocket";
  if (!upgrade && request.method !== "POST") {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response(
        JSON.stringify({
          error: {
            code: "PROTOCOL",
            message: `${path} takes POST (an HTTP batch of calls) or a WebSocket upgrade, not ${request.method}.`,
          },
        }),
        { status: 405, headers: { Allow: "GET, POST", "Content-Type": "application/json; charset=utf-8" } },
      );
    }
    return new Response(`${path} is a dorpc endpoint: connect with a WebSocket (Upgrade: websocket), or POST a batch of calls.`, {
      status: 426,
      headers: { Upgrade: "websocket", "Content-Type": "text/plain; charset=utf-8" },
    });
  }
  let identity: unknown;
  if (resolved.identify) {
    try {
      identity = toAttachable(await resolved.identify(request));
    } catch (error) {
      // The reason stays on the server: identify's errors may describe credentials.
      console.warn(`dorpc: connection refused by identify(): ${String((error as Error)?.message ?? error)}`);
      return upgrade
        ? new Response("Connection refused.", { status: 401 })
        : new Response(JSON.stringify({ error: { code: "CONNECT_FAILED", message: "Refused by the object's identify()." } }), {
            status: 401,
            headers: { "Content-Type": "application/json; charset=utf-8" },
          });
    }
  }
  if (!upgrade) return handleBatch(request, target, resolved, identity, hooksOf(target, resolved));
  const pair = new WebSocketPair();
  const server = pair[1];
  const attachment: RpcAttachment = { v: 1, connectedAt: Date.now() };
  if (identity !== undefined) attachment.identity = identity;
  if (resolved.hibernation) {
    ctx.acceptWebSocket(server, [RPC_SOCKET_TAG]);
    // Heartbeats are answered by the runtime: a client can detect a dead peer without ever
    // waking this object from hibernation. An object has only one auto-response pair: if the
    // application set its own, keep it (heartbeats then reach webSocketMessage, which answers).
    if (!ctx.getWebSocketAutoResponse()) {
      ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(HEARTBEAT_PING, HEARTBEAT_PONG));
    }
    server.serializeAttachment(attachment);
  } else {
    acceptLive(server, target, resolved, attachment);
  }
  return new Response(null, { status: 101, webSocket: pair[0] });
}

/**
 * `hibernation: false`: a plain `accept()`ed socket whose messages are dispatched from event
 * listeners: every message is handled inside the invocation that accepted the socket, not as an
 * invocation of its own (see docs/performance.md for what that is worth locally), but the
 * object stays in memory while the socket is open and the socket dies with the object.
 */
function acceptLive(server: WebSocket, target: object, resolved: ResolvedServerOptions, attachment: RpcAttachment): void {
  (server as { binaryType?: string }).binaryType = "arraybuffer";
  server.accept();
  addLiveSocket(target, server, attachment);
  const hooks = hooksOf(target, resolved);
  // The runtime calls a class's webSocket* handlers only for hibernatable sockets: for a live one
  // dorpc calls them, so the object's own handlers hear what is not only dorpc's, as they would.
  const own = target as Partial<Record<"webSocketMessage" | "webSocketClose" | "webSocketError", (...args: unknown[]) => unknown>>;
  const call = (name: keyof typeof own, ...args: unknown[]): boolean => {
    const handler = own[name];
    if (typeof handler !== "function") return false;
    Promise.resolve()
      .then(() => handler.apply(target, args))
      .catch((error) => console.error(`dorpc: ${labelOf(target)}.${name} threw: ${String((error as Error)?.stack ?? error)}`));
    return true;
  };
  server.addEventListener("message", (event) => {
    const data = event.data as string | ArrayBuffer;
    if (dispatchFrame(data, target, resolved, server, hooks)) return;
    if (!call("webSocketMessage", server, data)) closeQuietly(server, 1003, "dorpc: not a dorpc frame.");
  });
  const closed = (code: number, reason: string, handler: "webSocketClose" | "webSocketError", ...args: unknown[]) => {
    removeLiveSocket(target, server);
    channelClosed(server, code, reason);
    if (!call(handler, server, ...args)) closeQuietly(server, code, reason);
  };
  server.addEventListener("close", (event) => closed(event.code, event.reason, "webSocketClose", event.code, event.reason, event.wasClean));
  server.addEventListener("error", (event) => closed(1011, "dorpc: socket error.", "webSocketError", (event as ErrorEvent).error));
}

/** `/{prefix}/{binding}/{instance}` with both segments non-empty and nothing after. */
function isRpcPath(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix) || path.charCodeAt(prefix.length) !== 0x2f /* / */) return false;
  const rest = path.slice(prefix.length + 1);
  const slash = rest.indexOf("/");
  return slash > 0 && slash < rest.length - 1 && rest.indexOf("/", slash + 1) === -1;
}

/**
 * Handles one WebSocket message for `target`. Resolves `false` when the message is not a dorpc
 * frame (so you can handle it), `true` otherwise; replies are sent on `ws`.
 */
export async function handleRpcMessage(
  ws: WebSocket,
  message: string | ArrayBuffer,
  target: object,
  options?: RpcServerOptions,
): Promise<boolean> {
  return rpcMessage(ws, message, target, options);
}

/**
 * Tells dorpc that `ws` closed: calls the object made to that client and is awaiting fail with
 * `DISCONNECTED`, calls from it that are still running see their `rpcCaller().signal` abort, and
 * the stubs it held are released. `RpcDurableObject` and `withRpc` call it for you; call it from
 * your own `webSocketClose` / `webSocketError` when you compose by hand.
 */
export function handleRpcClose(ws: WebSocket, code = 1006, reason = ""): void {
  channelClosed(ws, code, reason);
}

/** `handleRpcMessage` without the promise: what the base class and `withRpc` call per message. */
export function rpcMessage(ws: WebSocket, message: string | ArrayBuffer, target: object, options: RpcServerOptions | undefined): boolean {
  // A socket dorpc did not accept (one of the object's own): its messages are the object's.
  if (!existingConnection(ws) && !isRpcSocket(target, ws)) return false;
  const resolved = resolveServerOptions(options ?? defaultOptions(target));
  return dispatchFrame(message, target, resolved, ws, hooksOf(target, resolved));
}

export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    // 1005/1006 are reserved and cannot be sent; answer a close with a normal close then.
    ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
  } catch {
    // Already closed: the runtime may have answered the close frame itself.
  }
}

// ---------------------------------------------------------------------------------------------
// The object's way back to its clients
// ---------------------------------------------------------------------------------------------

/**
 * Every connected client of `target` (or those `filter` selects), as a broadcast: each method
 * call is encoded once and sent to all of them as a notification; it returns how many it reached.
 * For objects built with `withRpc` or by hand; `RpcDurableObject` has `this.clients()`.
 */
export function rpcClients<C>(target: object, filter?: ClientFilter): Broadcast<C> {
  stateOf(target);
  return broadcastTo<C>(target, filter);
}

/**
 * One client of `target` (`rpcCaller()` or its socket): each call returns a promise of what the
 * client's exposed method returned, rejects with `TIMEOUT` after `callTimeout` and with
 * `DISCONNECTED` if the client goes away first.
 */
export function rpcClient<C>(target: object, who: ClientRef): ClientStub<C> {
  const resolved = optionsOf(target, "rpcClient()");
  return clientStub<C>(target, who, resolved, hooksOf(target, resolved));
}

/**
 * Publishes `event` on `topic` of `target`: stored (SQLite) with the topic's next sequence number
 * and pushed to every subscribed client; returns that number. Clients that were away get it when
 * they resubscribe. The topic must be declared in the options' `topics`.
 */
export function rpcPublish(target: object, topic: string, event: unknown): number {
  return publish(target, optionsOf(target, "rpcPublish()").topics, topic, event);
}

/** What one socket's connection holds right now; see {@link rpcSocketInfo}. */
export interface RpcSocketInfo {
  /** Objects and functions the object handed this client by reference, not yet released. */
  exports: number;
  /** The client's functions and objects the object holds (callbacks kept with `dup()` included). */
  imports: number;
  /** Calls from this client that are running or waiting to run. */
  running: number;
  /** Calls the object made to this client that wait for its reply. */
  waiting: number;
}

/**
 * What dorpc holds in memory for socket `ws` (references handed out or kept, calls in progress),
 * or `undefined` when it holds nothing for it (no message since the object started, or closed;
 * or no socket: `rpcCaller().socket` of an HTTP batch caller).
 * For diagnostics and tests: a count that only grows is a leak of stubs nobody disposes.
 */
export function rpcSocketInfo(ws: WebSocket | undefined): RpcSocketInfo | undefined {
  const conn = ws === undefined ? undefined : existingConnection(ws);
  if (!conn) return undefined;
  return { exports: conn.exports.size, imports: conn.imports.size, running: conn.callee.size, waiting: conn.caller.pending.size };
}

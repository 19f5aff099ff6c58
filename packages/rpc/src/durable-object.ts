/**
 * workerd glue: accepting hibernatable WebSockets on a Durable Object and feeding their
 * messages to the dispatcher. The only file of the server entry that imports
 * `cloudflare:workers`.
 *
 * Three ways in, from least to most hand-written:
 *  - `class Counter extends RpcDurableObject<Env> { … }`
 *  - `export const Counter = withRpc(CounterBase, options)`
 *  - `handleRpcRequest` / `handleRpcMessage` inside your own `fetch` / `webSocketMessage`.
 */
import { DurableObject } from "cloudflare:workers";
import { skipPrototype, stopAtPrototype } from "./access.js";
import { currentCall } from "./callee.js";
import {
  type ChannelHooks,
  channelClosed,
  dispatchFrame,
  existingConnection,
  resolveServerOptions,
  type ResolvedServerOptions,
  type RpcServerOptions,
} from "./dispatcher.js";
import { HEARTBEAT_PING, HEARTBEAT_PONG } from "./envelopes.js";
import { RpcError } from "./errors.js";

/** Tag given to every socket dorpc accepts (`ctx.getWebSockets(RPC_SOCKET_TAG)` lists them). */
export const RPC_SOCKET_TAG = "dorpc";

/** What dorpc stores in a socket's attachment; survives hibernation. */
export interface RpcAttachment {
  /** Protocol version of the connection. */
  v: 1;
  /** Unix ms when the socket was accepted. */
  connectedAt: number;
  /** What `options.identify` returned for the upgrade request, if anything. */
  identity?: unknown;
  /**
   * Set when the object first handed out a reference (stub) on this socket: which incarnation of
   * the object did. A later incarnation (after eviction) knows those references are gone.
   */
  refs?: string;
}

/** This incarnation of the isolate's objects: references handed out by an earlier one are gone. */
const INCARNATION = Math.random().toString(36).slice(2, 10);

/** The hooks that let a socket's connection explain references lost to eviction. */
function hooksFor(channel: unknown): ChannelHooks {
  const ws = channel as WebSocket;
  return {
    lostBefore: () => {
      const refs = readAttachment(ws)?.refs;
      return refs !== undefined && refs !== INCARNATION;
    },
    onFirstExport: () => {
      const attachment = readAttachment(ws);
      if (!attachment || attachment.refs === INCARNATION) return;
      attachment.refs = INCARNATION;
      if (!liveAttachments.has(ws)) ws.serializeAttachment(attachment);
    },
  };
}

function readAttachment(ws: WebSocket): RpcAttachment | undefined {
  const live = liveAttachments.get(ws);
  if (live) return live;
  try {
    return (ws.deserializeAttachment() as RpcAttachment | null) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Header that carries a caller's identity from the Worker to the Durable Object. `routeDORequest`
 * removes it from every incoming request, so only its hooks (via `withIdentity`) can set it.
 */
export const IDENTITY_HEADER = "X-Dorpc-Identity";

/** Largest identity header accepted, in characters (attachments are limited to 2 KiB). */
const MAX_IDENTITY = 1024;

/**
 * An `identify` function for `RpcServerOptions`: the JSON identity a `routeDORequest` hook set
 * with `withIdentity`. Use it only behind `routeDORequest`, which strips client-sent copies of
 * the header; anywhere else a client could send its own.
 */
export function readIdentityHeader(request: Request): unknown {
  const raw = request.headers.get(IDENTITY_HEADER);
  if (raw === null) return undefined;
  if (raw.length > MAX_IDENTITY) throw new RpcError("LIMIT", `${IDENTITY_HEADER} is longer than ${MAX_IDENTITY} characters.`);
  try {
    return JSON.parse(raw);
  } catch {
    throw new RpcError("DECODE", `${IDENTITY_HEADER} is not valid JSON.`);
  }
}

/**
 * The identity must fit the socket attachment (2 KiB, structured-clone serialised): checked and
 * normalised to plain JSON before the socket is accepted, so a bad identity refuses the
 * connection instead of breaking it after the upgrade.
 */
function toAttachable(identity: unknown): unknown {
  if (identity === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(identity);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw new RpcError("BAD_OPTION", "identify() must return a JSON-serialisable value.");
  if (json.length > MAX_IDENTITY) {
    throw new RpcError(
      "LIMIT",
      `identify() returned ${json.length} characters of JSON; at most ${MAX_IDENTITY} fit the socket attachment.`,
    );
  }
  // Stored as its JSON round trip: exactly what was checked, and always cloneable.
  return JSON.parse(json);
}

/** Who is calling: the attachment of the connection whose call is running. */
export interface RpcCaller {
  identity: unknown;
  connectedAt: number;
  /** The caller's socket (e.g. to close it, or to find it among `ctx.getWebSockets()`). */
  socket: WebSocket;
  /**
   * Aborts when the caller gives up on this call (its timeout or AbortSignal) or disconnects.
   * Pass it to `fetch` and other cancellable work; check `signal.aborted` in long loops.
   */
  signal: AbortSignal;
}

/**
 * The caller of the RPC method that is running, or `undefined` outside one. Read it at the start
 * of the method, before any `await`: there is no async context to carry it further. Survives
 * hibernation (it lives in the socket attachment).
 */
export function rpcCaller(): RpcCaller | undefined {
  const call = currentCall();
  const socket = call?.channel as WebSocket | undefined;
  if (!call || !socket || typeof (socket as Partial<WebSocket>).deserializeAttachment !== "function") return undefined;
  const attachment = liveAttachments.get(socket) ?? (socket.deserializeAttachment() as RpcAttachment | null);
  return {
    identity: attachment?.identity,
    connectedAt: attachment?.connectedAt ?? 0,
    socket,
    get signal() {
      return call.signal;
    },
  };
}

interface HasCtx {
  ctx: DurableObjectState;
}

function stateOf(target: object): DurableObjectState {
  const ctx = (target as Partial<HasCtx>).ctx;
  if (!ctx || typeof ctx.acceptWebSocket !== "function") {
    throw new RpcError(
      "BAD_OPTION",
      "handleRpcRequest needs the Durable Object instance (an object with `ctx`) as its second argument, e.g. handleRpcRequest(request, this).",
    );
  }
  return ctx;
}

/**
 * Accepts a dorpc WebSocket upgrade for `target` and returns the 101 response; returns
 * `undefined` for any other request (so your own `fetch` can handle it). A plain request to the
 * RPC path itself gets 426 Upgrade Required.
 *
 * The socket is accepted with the hibernation API (`ctx.acceptWebSocket`), so the object may be
 * evicted between messages; every reply is computed from the message alone.
 */
export async function handleRpcRequest(request: Request, target: object, options?: RpcServerOptions): Promise<Response | undefined> {
  const resolved = resolveServerOptions(options);
  const ctx = stateOf(target);
  const path = new URL(request.url).pathname;
  if (!isRpcPath(path, resolved.prefix)) return undefined;
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
    return new Response(`${path} is a dorpc endpoint: connect with a WebSocket (Upgrade: websocket).`, {
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
      return new Response("Connection refused.", { status: 401 });
    }
  }
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

/** Attachments of sockets accepted with `hibernation: false` (they live as long as the object). */
const liveAttachments = new WeakMap<WebSocket, RpcAttachment>();

/**
 * `hibernation: false`: a plain `accept()`ed socket whose messages are dispatched from event
 * listeners: every message is handled inside the invocation that accepted the socket, not as an
 * invocation of its own (see docs/performance.md for what that is worth locally), but the
 * object stays in memory while the socket is open and the socket dies with the object.
 */
function acceptLive(server: WebSocket, target: object, resolved: ResolvedServerOptions, attachment: RpcAttachment): void {
  (server as { binaryType?: string }).binaryType = "arraybuffer";
  server.accept();
  liveAttachments.set(server, attachment);
  server.addEventListener("message", (event) => {
    if (!dispatchFrame(event.data as string | ArrayBuffer, target, resolved, server, hooksFor)) {
      closeQuietly(server, 1003, "dorpc: not a dorpc frame.");
    }
  });
  server.addEventListener("close", (event) => {
    channelClosed(server, event.code, event.reason);
    closeQuietly(server, event.code, event.reason);
  });
  server.addEventListener("error", () => {
    channelClosed(server, 1011, "socket error");
    closeQuietly(server, 1011, "dorpc: socket error.");
  });
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
function rpcMessage(ws: WebSocket, message: string | ArrayBuffer, target: object, options: RpcServerOptions | undefined): boolean {
  return dispatchFrame(message, target, resolveServerOptions(options), ws, hooksFor);
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
 * or `undefined` when it holds nothing for it (no message since the object started, or closed).
 * For diagnostics and tests: a count that only grows is a leak of stubs nobody disposes.
 */
export function rpcSocketInfo(ws: WebSocket): RpcSocketInfo | undefined {
  const conn = existingConnection(ws);
  if (!conn) return undefined;
  return { exports: conn.exports.size, imports: conn.imports.size, running: conn.callee.size, waiting: conn.caller.pending.size };
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    // 1005/1006 are reserved and cannot be sent; answer a close with a normal close then.
    ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
  } catch {
    // Already closed: the runtime may have answered the close frame itself.
  }
}

/** A class with a static `rpcOptions`: how `RpcDurableObject` subclasses configure dorpc. */
interface WithRpcOptions {
  rpcOptions?: RpcServerOptions;
}

/**
 * Base class for a Durable Object whose public methods and getters are callable over dorpc.
 * Configure with a static field: `static rpcOptions = { exposeErrorStack: true }`.
 *
 * Override `fetch` / `webSocketMessage` only if you also call `super`'s (or the `handle*`
 * functions), or RPC stops working.
 */
export class RpcDurableObject<Env = Cloudflare.Env> extends DurableObject<Env> {
  override async fetch(request: Request): Promise<Response> {
    const options = (this.constructor as WithRpcOptions).rpcOptions;
    return (
      (await handleRpcRequest(request, this, options)) ??
      new Response(`No route for ${new URL(request.url).pathname} on this Durable Object.`, { status: 404 })
    );
  }

  // Synchronous on purpose: the replies of synchronous methods are sent before it returns, and
  // the runtime's message event then ends at once instead of one promise turn later.
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void> {
    if (!rpcMessage(ws, message, this, (this.constructor as WithRpcOptions).rpcOptions))
      closeQuietly(ws, 1003, "dorpc: not a dorpc frame.");
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    channelClosed(ws, code, reason);
    closeQuietly(ws, code, reason);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    channelClosed(ws, 1011, "socket error");
    closeQuietly(ws, 1011, "dorpc: socket error.");
  }
}

stopAtPrototype(DurableObject.prototype);
stopAtPrototype(RpcDurableObject.prototype);

type DurableObjectClass = abstract new (ctx: DurableObjectState, env: never) => object;

/**
 * Wraps an existing Durable Object class so that its public methods and getters are callable
 * over dorpc. Its own `fetch` and `webSocketMessage`, if any, still get every request and
 * message that is not dorpc's.
 */
export function withRpc<C extends DurableObjectClass>(Base: C, options?: RpcServerOptions): C {
  if (typeof Base !== "function") throw new RpcError("BAD_OPTION", "withRpc needs a Durable Object class.");
  resolveServerOptions(options); // validate now, not on the first request
  type Hooks = {
    fetch?(request: Request): Response | Promise<Response>;
    webSocketMessage?(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void>;
    webSocketClose?(ws: WebSocket, code: number, reason: string, wasClean: boolean): void | Promise<void>;
  };
  const base = Base.prototype as Hooks;
  // @ts-expect-error: a mixin over an abstract constructor type; the instance API is Base's.
  class Rpc extends Base {
    async fetch(request: Request): Promise<Response> {
      const response = await handleRpcRequest(request, this, options);
      if (response) return response;
      if (base.fetch) return base.fetch.call(this, request);
      return new Response(`No route for ${new URL(request.url).pathname} on this Durable Object.`, { status: 404 });
    }

    webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void> {
      if (rpcMessage(ws, message, this, options)) return;
      if (base.webSocketMessage) return base.webSocketMessage.call(this, ws, message);
      closeQuietly(ws, 1003, "dorpc: not a dorpc frame.");
    }

    async webSocketClose(ws: WebSocket, code: number, reason: string, wasClean: boolean): Promise<void> {
      channelClosed(ws, code, reason);
      if (base.webSocketClose) await base.webSocketClose.call(this, ws, code, reason, wasClean);
      else closeQuietly(ws, code, reason);
    }
  }
  Object.defineProperty(Rpc, "name", { value: Base.name });
  skipPrototype(Rpc.prototype);
  return Rpc as unknown as C;
}

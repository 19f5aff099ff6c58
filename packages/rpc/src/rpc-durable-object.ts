/**
 * The two ways to make a class serve dorpc without writing its handlers: extend
 * `RpcDurableObject`, or wrap an existing class with `withRpc`. Both only route the object's
 * `fetch`, `webSocketMessage`, `webSocketClose` and `webSocketError` to
 * the building blocks of durable-object.ts, the third way in, by hand; the base class also
 * reaches its clients through them (`this.clients()`, `this.client()`, `this.publish()`).
 *
 * Invariants:
 *  - dorpc sees every request and message first; what is not dorpc's goes to the wrapped
 *    class's own handler (`withRpc`), or is answered 404 / closed with 1003.
 *  - A closed socket is reported to dorpc (`channelClosed`) before the wrapped class hears of it.
 *  - What these classes add is never callable over dorpc: the walk stops at
 *    `RpcDurableObject.prototype`, and skips the class `withRpc` makes.
 *
 * Internal module: the public surface is server.ts.
 */
import { DurableObject } from "cloudflare:workers";
import { skipPrototype, stopAtPrototype } from "./access.js";
import { channelClosed, checkServed, resolveServerOptions, type RpcServerOptions } from "./dispatcher.js";
import { closeQuietly, handleRpcRequest, prepareStorage, rpcClient, rpcMessage } from "./durable-object.js";
import { classOptions, optionsOf, staticOptionsRoots, type WithRpcOptions } from "./object-options.js";
import { RpcError } from "./errors.js";
import { type Broadcast, broadcastTo, type ClientFilter, type ClientRef, type ClientStub } from "./push.js";
import { publish } from "./topics.js";

/**
 * Base class for a Durable Object whose public methods and getters are callable over dorpc.
 * Configure with a static field: `static rpcOptions = { exposeErrorStack: true }`.
 *
 * `Client` is what clients expose (`createRpcClient(…, { expose })`): `this.clients()` and
 * `this.client(caller)` are typed by it. `Topics` maps topic names to event types for
 * `this.publish` and the clients' `subscribe`.
 *
 * Override `fetch` / `webSocketMessage` / `webSocketClose` only if you also call `super`'s (or the
 * `handle*` functions), or RPC stops working.
 */
export class RpcDurableObject<Env = Cloudflare.Env, Client = unknown, Topics = Record<never, never>> extends DurableObject<Env> {
  /** Type-level only: what the clients' `subscribe` accepts. */
  declare readonly __dorpcTopics?: Topics;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    prepareStorage(this);
  }

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

  /**
   * The connected clients (all, or those `filter` selects: `{ except: rpcCaller() }`,
   * `{ where: (c) => c.identity.team === "x" }`) as a broadcast: `this.clients().message(m)`
   * encodes `m` once, sends it to each, and returns how many it reached. No replies.
   */
  protected clients(filter?: ClientFilter): Broadcast<Client> {
    return broadcastTo<Client>(this, filter);
  }

  /** One client (`rpcCaller()` or a socket): `await this.client(me).confirm(x)` returns its answer. */
  protected client(who: ClientRef): ClientStub<Client> {
    return rpcClient<Client>(this, who);
  }

  /** Publishes `event` on `topic` (declared in `rpcOptions.topics`); returns its sequence number. */
  protected publish<K extends keyof Topics & string>(topic: K, event: Topics[K]): number {
    return publish(this, optionsOf(this).topics, topic, event);
  }
}

stopAtPrototype(RpcDurableObject.prototype);
// Its subclasses declare their options with `static rpcOptions`; without one, the defaults.
staticOptionsRoots.add(RpcDurableObject);

type DurableObjectClass = abstract new (ctx: DurableObjectState, env: never) => object;

/**
 * Wraps an existing Durable Object class so that its public methods and getters are callable
 * over dorpc. Its own `fetch`, `webSocketMessage`, `webSocketClose` and `webSocketError`, if
 * any, still get every request, message, close and error that is not only dorpc's. Reach clients with `rpcClients(this)`,
 * `rpcClient(this, who)` and `rpcPublish(this, topic, event)`.
 */
export function withRpc<C extends DurableObjectClass>(Base: C, options?: RpcServerOptions): C {
  if (typeof Base !== "function") throw new RpcError("BAD_OPTION", "withRpc needs a Durable Object class.");
  // Validate now, not on the first request (with requireSchemas: the class's methods too).
  checkServed(Object.create(Base.prototype as object) as object, resolveServerOptions(options));
  type Hooks = {
    fetch?(request: Request): Response | Promise<Response>;
    webSocketMessage?(ws: WebSocket, message: string | ArrayBuffer): void | Promise<void>;
    webSocketClose?(ws: WebSocket, code: number, reason: string, wasClean: boolean): void | Promise<void>;
    webSocketError?(ws: WebSocket, error: unknown): void | Promise<void>;
  };
  const base = Base.prototype as Hooks;
  // @ts-expect-error: a mixin over an abstract constructor type; the instance API is Base's.
  class Rpc extends Base {
    // biome-ignore lint/suspicious/noExplicitAny: a mixin's constructor takes its base's arguments
    constructor(...args: any[]) {
      // @ts-expect-error: forwarded as given
      super(...args);
      prepareStorage(this);
    }

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

    async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
      channelClosed(ws, 1011, "socket error");
      if (base.webSocketError) await base.webSocketError.call(this, ws, error);
      else closeQuietly(ws, 1011, "dorpc: socket error.");
    }
  }
  Object.defineProperty(Rpc, "name", { value: Base.name });
  skipPrototype(Rpc.prototype);
  classOptions.set(Rpc, options);
  return Rpc as unknown as C;
}

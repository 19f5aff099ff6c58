/**
 * The object calling its clients: `clients()` (a broadcast: a notification encoded once and sent
 * to every selected socket, no replies) and `client(caller)` (calls to one client, each with a
 * reply, a timeout and `DISCONNECTED` when it goes away).
 *
 * Works from any entry point (a method another client called, `alarm()`, `fetch()`, a Workers RPC
 * method) and after eviction: sockets are enumerated from the runtime, identities read from their
 * attachments. Pushes and replies on one socket keep their order: a push goes through the
 * socket's outbox whenever that outbox has something queued.
 *
 * Internal module (workerd only).
 */
import { currentCall } from "./current-call.js";
import { type EncodeContext, writeArgs } from "./codec.js";
import { platformIdentities } from "./platform-state.js";
import { type ChannelHooks, connectionFor, existingConnection, type ReplyChannel, type ResolvedServerOptions } from "./dispatcher.js";
import { CallFlags, FrameKind } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { type WireFrame, writeFrame } from "./frame.js";
import { rootProxy } from "./proxy.js";
import { isRpcSocket, readAttachment, socketsOf } from "./socket-state.js";
import type { Params, PublicKeys, Remote, Sendable } from "./types.js";

/** A connected client as `clients({ where })` sees it. */
export interface ClientInfo {
  /** What `options.identify` returned when it connected. */
  readonly identity: unknown;
  /** Unix ms when it connected. */
  readonly connectedAt: number;
  readonly socket: WebSocket;
}

/** Something that names one client: its socket, or what `rpcCaller()` returned. */
export type ClientRef = WebSocket | { readonly socket: WebSocket | undefined };

/** Which connected clients a broadcast reaches. */
export interface ClientFilter {
  /** Leave these out (typically the caller: `{ except: rpcCaller() }`). */
  except?: ClientRef | readonly ClientRef[];
  /** Only clients for which this returns true. */
  where?: (client: ClientInfo) => boolean;
}

/**
 * The methods of a client interface `C` as a broadcast: each call encodes its arguments once,
 * sends them to every selected client as a notification (no reply is awaited or sent) and
 * returns how many clients it was sent to. Arguments travel by value only.
 */
export type Broadcast<C> = {
  readonly [K in PublicKeys<C>]: NonNullable<C[K]> extends (...args: infer A) => unknown
    ? (...args: { [I in keyof A]: Sendable<A[I]> }) => number
    : never;
};

/** One client's methods as the object calls them: each returns a promise of the client's result. */
export type ClientStub<C> = {
  readonly [K in PublicKeys<C>]: NonNullable<C[K]> extends (...args: infer A) => infer R
    ? (...args: Params<A>) => ReturnType<Remote<(...a: A) => R>>
    : never;
};

const OPEN = 1;

/** The socket of a caller or a socket; `BAD_OPTION` for anything else (`what` names the option). */
function socketOf(ref: ClientRef, what: string): WebSocket | undefined {
  if (typeof ref === "object" && ref !== null) {
    if ("socket" in ref) return ref.socket;
    if (typeof (ref as Partial<WebSocket>).send === "function") return ref;
  }
  throw new RpcError(
    "BAD_OPTION",
    `${what} takes a client: rpcCaller() (inside a call) or one of ctx.getWebSockets(), not ${describeRef(ref)}.`,
  );
}

function describeRef(ref: unknown): string {
  if (ref === null) return "null";
  if (typeof ref === "object") return "an object with neither a socket nor a send method";
  return typeof ref === "string" ? JSON.stringify(ref.slice(0, 40)) : String(ref);
}

/** Calls on the clients `filter` selects among `target`'s sockets, as notifications. */
export function broadcastTo<C>(target: object, filter: ClientFilter | undefined): Broadcast<C> {
  const except = filter?.except;
  const excluded =
    except === undefined
      ? undefined
      : new Set((Array.isArray(except) ? except : [except]).map((ref: ClientRef) => socketOf(ref, "clients({ except })")));
  const where = filter?.where;
  if (where !== undefined && typeof where !== "function")
    throw new RpcError("BAD_OPTION", "clients({ where }) must be a function of a ClientInfo.");
  const select = (): WebSocket[] => {
    const out: WebSocket[] = [];
    for (const ws of socketsOf(target)) {
      if (ws.readyState !== OPEN || excluded?.has(ws)) continue;
      if (where) {
        const attachment = readAttachment(ws);
        if (!attachment) continue;
        const chosen: unknown = where({ identity: attachment.identity, connectedAt: attachment.connectedAt, socket: ws });
        if (chosen !== null && typeof chosen === "object" && typeof (chosen as { then?: unknown }).then === "function") {
          // A promise is truthy: it would choose every client. The choice must be made now.
          (chosen as Promise<unknown>).then(undefined, () => undefined);
          throw new RpcError(
            "BAD_OPTION",
            "clients({ where }) must decide synchronously (it returned a promise); await what it needs first.",
          );
        }
        if (!chosen) continue;
      }
      out.push(ws);
    }
    return out;
  };
  return new Proxy({} as Broadcast<C>, {
    get(_t, name) {
      // Not awaitable, and not sent by coercion or serialisation (String(), `${}`, JSON.stringify).
      if (name === Symbol.toPrimitive) return () => "[dorpc broadcast]";
      if (typeof name !== "string" || name === "then" || name === "toJSON") return undefined;
      return (...args: unknown[]) => {
        const sockets = select();
        if (sockets.length === 0) return 0;
        const { json, blobs } = notification([name], args, 0, platformIdentities(target));
        let frame: WireFrame | undefined;
        for (const ws of sockets) frame = deliver(ws, json, blobs, frame);
        return sockets.length;
      };
    },
  });
}

/**
 * One notification envelope (`[0, chain]`, plus flags), encoded once. Arguments travel by value:
 * a function or an `RpcTarget` among them is refused (a broadcast cannot hand each client a
 * reference; call `client(c)` for that).
 */
export function notification(
  path: readonly string[],
  args: readonly unknown[],
  flags: number,
  forbidden?: ReadonlyMap<object, string>,
): { json: string; blobs: Uint8Array[] } {
  const ctx: EncodeContext = { blobs: [], stack: false, label: "arguments", forbidden };
  const apply = JSON.stringify(writeArgs(args, ctx));
  if (ctx.pending?.length) {
    throw new RpcError(
      "ENCODE",
      "A broadcast cannot carry a Blob or File (its bytes are read asynchronously): send `await blob.arrayBuffer()`, or call each client with client(c).",
    );
  }
  const chain = `${JSON.stringify(path).slice(0, -1)},${apply}]`;
  return { json: flags ? `[0,${chain},0,${flags}]` : `[0,${chain}]`, blobs: ctx.blobs };
}

/**
 * Sends one envelope to `ws`, after whatever its connection has queued (order is kept), or as
 * the shared `frame` when nothing is queued. A socket that is closing is skipped silently.
 * Returns the frame, built on first use, for the next socket.
 */
export function deliver(ws: WebSocket, json: string, blobs: readonly Uint8Array[], frame: WireFrame | undefined): WireFrame | undefined {
  if (ws.readyState !== OPEN) return frame;
  const conn = existingConnection(ws);
  // Calls to this client made before this push, still waiting for the end of the turn, go first.
  if (conn?.caller.queued) conn.caller.flush();
  if (conn && !conn.outbox.idle) {
    conn.outbox.add(FrameKind.Calls, json, blobs);
    return frame;
  }
  frame ??= writeFrame(FrameKind.Calls, `[${json}]`, blobs);
  try {
    ws.send(frame);
  } catch {
    // Closing under us: a push to a socket that is going away is dropped, never thrown.
  }
  return frame;
}

/** Calls to the one client behind `ref`, each answered (or failed) on its own. */
export function clientStub<C>(
  target: object,
  ref: ClientRef | undefined,
  options: ResolvedServerOptions,
  hooks: (channel: ReplyChannel) => ChannelHooks,
): ClientStub<C> {
  if (ref === undefined || ref === null) {
    throw new RpcError("BAD_OPTION", "client() needs a client: pass rpcCaller() (inside a call) or one of ctx.getWebSockets().");
  }
  const ws = socketOf(ref, "client()");
  if (ws === undefined) {
    throw new RpcError("NOT_CALLABLE", "This caller came over HTTP batch: it has no connection, so the object cannot call it back.");
  }
  if (!isRpcSocket(target, ws)) {
    throw new RpcError(
      "BAD_OPTION",
      "client(): this socket was not accepted by dorpc (one of the object's own sockets): it speaks the object's own protocol, not dorpc's.",
    );
  }
  // The same hooks as the socket's messages get: the connection made here may be the one they use.
  const conn = connectionFor(ws, target, options, hooks);
  return rootProxy(
    conn.caller,
    () => undefined,
    () => undefined,
  ) as ClientStub<C>;
}

/** `rpcCaller()`'s socket when called inside a call, for `client()` with no argument. */
export function callerSocket(): WebSocket | undefined {
  return currentCall()?.channel as WebSocket | undefined;
}

export { CallFlags };

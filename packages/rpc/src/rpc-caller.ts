/**
 * `rpcCaller()`: who is calling the Durable Object method that is running — the identity
 * `options.identify` gave the caller's connection, when that connection began, its socket (to
 * close it, or to call the client back) and the signal that aborts when the caller gives up.
 *
 * It reads the running call (current-call.ts: the server's callee makes each step of user code
 * the current call while it runs), so it answers only in a method's synchronous part, before its
 * first `await`. A WebSocket caller is read from its socket's attachment (socket-state.ts), which
 * survives hibernation; an HTTP batch caller from its channel (http-batch.ts): it has no socket.
 *
 * Part of the server entry (server.ts re-exports it); imports nothing of `cloudflare:workers`.
 */
import { currentCall } from "./current-call.js";
import type { HttpChannel } from "./http-batch.js";
import { readAttachment } from "./socket-state.js";

/** Who is calling: the attachment of the connection whose call is running. */
export interface RpcCaller {
  identity: unknown;
  connectedAt: number;
  /**
   * The caller's socket (e.g. to close it, or to pass to `this.client(…)`); `undefined` for a
   * caller that came over HTTP batch, which has no socket and cannot be called back.
   */
  socket: WebSocket | undefined;
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
  if (!call) return undefined;
  const channel = call.channel as Partial<HttpChannel>;
  if (channel.http) {
    return {
      identity: channel.identity,
      connectedAt: channel.connectedAt ?? 0,
      socket: undefined,
      get signal() {
        return call.signal;
      },
    };
  }
  const socket = call.channel as WebSocket;
  if (typeof socket.deserializeAttachment !== "function") return undefined;
  const attachment = readAttachment(socket);
  return {
    identity: attachment?.identity,
    connectedAt: attachment?.connectedAt ?? 0,
    socket,
    get signal() {
      return call.signal;
    },
  };
}

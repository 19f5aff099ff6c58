/**
 * The call whose synchronous part is running on a Durable Object, for `rpcCaller()` and pushes
 * back to its caller. The server's callee (server-callee.ts) brackets each step of user code
 * with `swapCurrent`, restoring the outer call when the step ends.
 *
 * Internal module.
 */
import { cancelledReason, type Incoming } from "./incoming-call.js";
import type { Connection } from "./connection.js";

/** What user code can learn about the call it is running in (valid before its first `await`). */
export interface CallContext {
  /** The connection's key: the WebSocket on a Durable Object. */
  readonly channel: object;
  /** The connection, for pushes back to this caller. */
  readonly connection: Connection;
  /** Aborts when the caller cancels the call (timeout, AbortSignal) or the connection ends. */
  readonly signal: AbortSignal;
}

/** A call and the connection it came over. */
export interface RunningCall {
  readonly conn: Connection;
  readonly call: Incoming;
}

let current: RunningCall | undefined;

/** Makes `next` the running call; returns the one it replaces (to restore when the step ends). */
export function swapCurrent(next: RunningCall | undefined): RunningCall | undefined {
  const previous = current;
  current = next;
  return previous;
}

/** The call whose synchronous part is running, or `undefined` outside one. */
export function currentCall(): CallContext | undefined {
  const now = current;
  if (!now) return undefined;
  return {
    channel: now.conn.key,
    connection: now.conn,
    get signal() {
      return signalOf(now.call);
    },
  };
}

function signalOf(call: Incoming): AbortSignal {
  if (!call.controller) {
    call.controller = new AbortController();
    if (call.cancelled) call.controller.abort(cancelledReason());
  }
  return call.controller.signal;
}

/**
 * The one interface between a client session and a connection. A transport only adapts a
 * socket to it; it knows nothing of calls, ids or values.
 *
 * Contract:
 *  - The session calls `open()` once. It resolves when `send` may be called, or rejects (with
 *    an `RpcError` of code `DISCONNECTED`) when the connection cannot be opened; after a
 *    rejection the transport is dead and `onClose` is still called exactly once.
 *  - `send(frame)` hands one whole frame to the connection, in order. It never throws for a
 *    closed connection: the loss is reported through `onClose`, which covers every frame sent.
 *  - `handler.onMessage(data)` is called once per incoming message, in order, never after
 *    `onClose`.
 *  - `handler.onClose(code, reason)` is called exactly once, when the connection ends for any
 *    reason (peer close, network loss, `close()`), whether or not `open()` had resolved. The
 *    session then rejects every call still waiting for a reply with `DISCONNECTED`: a call whose
 *    frame was sent may or may not have run on the Durable Object, so it is never replayed.
 *  - `close(code, reason)` is idempotent.
 */
import type { IncomingData, WireFrame } from "./frame.js";
import type { RpcLimits } from "./limits.js";

/** Receives what a transport delivers; implemented by the session. */
export interface TransportHandler {
  onMessage(data: IncomingData): void;
  onClose(code: number, reason: string): void;
  /**
   * The client's endpoint, `ws(s)://host/{prefix}/{binding}/{instance}?query`, for transports
   * that need it (declared with `usesUrl`); `undefined` for a client made without one.
   */
  readonly url?: string;
  /**
   * The client's limits for what it receives. A transport that holds a message before handing it
   * over (an HTTP body) reads no more than a frame within `maxMessageBytes` can take.
   */
  readonly limits?: Readonly<RpcLimits>;
  /**
   * Calls of this client queued or waiting for a reply. When it is 0 no call waits for anything:
   * a transport that checks whether an answer left some of its calls unanswered (HTTP) can skip
   * the check.
   */
  readonly pendingCount?: number;
}

/** A connection as the session sees it. See the module comment for the contract. */
export interface RpcTransport {
  open(): Promise<void>;
  send(frame: WireFrame): void;
  close(code?: number, reason?: string): void;
  /** Bytes accepted by `send` and not yet written to the network, where the runtime tells. */
  readonly bufferedAmount?: number;
  /**
   * Called when a connection never opened: a sentence on why, for the `CONNECT_FAILED` error
   * (e.g. what the endpoint answers to a plain request). Optional; may take a moment.
   */
  diagnose?(): Promise<string | undefined>;
}

/** Makes a fresh transport for each connection attempt. */
export type TransportFactory = ((handler: TransportHandler) => RpcTransport) & {
  /** Reads `handler.url`: the client then needs `baseUrl` (or a page's location), checked when it is made. */
  readonly usesUrl?: boolean;
  /** Has no connection to keep alive (HTTP batches): the client sends no heartbeats unless told to. */
  readonly connectionless?: boolean;
};

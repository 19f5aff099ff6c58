/**
 * Fault injection around the in-memory paired transport (test/support/paired-transport.ts):
 * the client talks to the real dispatcher, and a test can make connection attempts fail, turn
 * a connection half-open (frames silently dropped), swallow heartbeat pings, report a large
 * `bufferedAmount` (backpressure) or have the "server" close with any code.
 *
 * Keeps the RpcTransport contract (packages/rpc/src/transport.ts): `onClose` exactly once per
 * transport, whether or not `open()` resolved; no `onMessage` after it; `send` never throws.
 */
import { HEARTBEAT_PING } from "../../packages/rpc/src/envelopes.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "../../packages/rpc/src/transport.js";
import { type PairOptions, pairWith, type Paired, type PairedConnection } from "../support/paired-transport.js";

export interface FaultConnection {
  /** The underlying paired connection (frames, cut, hold/release). */
  readonly paired: PairedConnection;
  /** Set when the client side saw the close: [code, reason]. */
  closed: [number, string] | undefined;
  /** The peer closes the connection with `code` (as a server or proxy would). */
  peerClose(code: number, reason?: string): void;
}

export interface Faults {
  readonly factory: TransportFactory;
  readonly pair: Paired;
  /** `Date.now()` of every connection attempt (the factory call), failed or not. */
  readonly attempts: number[];
  /** Connections that opened, oldest first. */
  readonly connections: FaultConnection[];
  /** Connection attempts still to fail (Infinity: all of them). */
  failOpens: number;
  /** Drop the client's heartbeat pings (the peer never sees them). */
  swallowPings: boolean;
  /** Drop every client frame: a half-open connection (nothing arrives, nothing comes back). */
  halfOpen: boolean;
  /** What the transport reports as `bufferedAmount`. */
  bufferedAmount: number;
  /** Pings the client sent. */
  pings: number;
  /**
   * The next this many reply frames from the object are lost with their connection: the object
   * ran the calls, the connection drops before the client hears the answers.
   */
  cutOnReply: number;
  /** The newest connection. */
  readonly last: FaultConnection;
}

export function faulty(target: object, serverOptions?: RpcServerOptions, pairOptions?: PairOptions): Faults {
  const pair = pairWith(target, serverOptions, pairOptions);
  const faults: Faults = {
    factory: undefined as never,
    pair,
    attempts: [],
    connections: [],
    failOpens: 0,
    swallowPings: false,
    halfOpen: false,
    bufferedAmount: 0,
    pings: 0,
    cutOnReply: 0,
    get last() {
      const last = faults.connections[faults.connections.length - 1];
      if (!last) throw new Error("no connection opened yet");
      return last;
    },
  };
  (faults as { factory: TransportFactory }).factory = (handler: TransportHandler): RpcTransport => {
    faults.attempts.push(Date.now());
    if (faults.failOpens > 0) {
      faults.failOpens--;
      let reported = false;
      return {
        open() {
          if (!reported) {
            reported = true;
            handler.onClose(1006, "connection refused");
          }
          return Promise.reject(new RpcError("DISCONNECTED", "connection refused"));
        },
        send() {},
        close() {
          if (!reported) {
            reported = true;
            handler.onClose(1006, "closed before open");
          }
        },
      };
    }
    let done = false;
    const connection: FaultConnection = {
      paired: undefined as never,
      closed: undefined,
      peerClose(code, reason = "") {
        wrapped.onClose(code, reason);
        inner.close(code, reason); // the paired transport now drops everything
      },
    };
    const wrapped: TransportHandler = {
      onMessage(data) {
        if (done) return;
        if (faults.cutOnReply > 0 && typeof data === "string" && data.startsWith("\u001eR")) {
          faults.cutOnReply--;
          connection.paired.cut();
          return;
        }
        handler.onMessage(data);
      },
      onClose(code, reason) {
        if (done) return;
        done = true;
        connection.closed = [code, reason];
        handler.onClose(code, reason);
      },
    };
    const inner = pair.factory(wrapped);
    (connection as { paired: PairedConnection }).paired = pair.connections[pair.connections.length - 1]!;
    faults.connections.push(connection);
    return {
      open: () => inner.open(),
      send(frame) {
        if (frame === HEARTBEAT_PING) {
          faults.pings++;
          if (faults.swallowPings) return;
        }
        if (faults.halfOpen) return;
        inner.send(frame);
      },
      close: (code, reason) => inner.close(code, reason),
      get bufferedAmount() {
        return faults.bufferedAmount;
      },
    };
  };
  return faults;
}

/** Ids of the calls in the call frames `frames` (text frames only), in order. */
export function callIds(frames: readonly (string | Uint8Array)[]): number[] {
  const ids: number[] = [];
  for (const frame of frames) {
    if (typeof frame !== "string" || !frame.startsWith("\u001eC")) continue;
    for (const call of JSON.parse(frame.slice(2)) as [number, unknown][]) ids.push(call[0]);
  }
  return ids;
}

/**
 * An in-memory connection between a client session and the dispatcher, for Node unit tests.
 * Messages can be held and released to force orderings, counted, and the connection cut.
 */
import type { RpcTransport, TransportFactory, TransportHandler } from "../../packages/rpc/src/index.js";
import type { Connection } from "../../packages/rpc/src/connection.js";
import type { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import {
  channelClosed,
  checkServed,
  dispatchFrame,
  existingConnection,
  resolveServerOptions,
  type RpcServerOptions,
} from "../../packages/rpc/src/dispatcher.js";
import { framesOf } from "./frames.js";

type Frame = string | Uint8Array;

export interface PairedConnection {
  /** Frames the client sent, in order (after release), except its Hello (see `hellos`). */
  readonly sentByClient: Frame[];
  /** The Hello frames the client sent (one per connection: its session id). */
  readonly hellos: string[];
  /** Frames the server sent, in order. */
  readonly sentByServer: Frame[];
  /** Close frames the server issued: [code, reason]. */
  readonly serverCloses: [number, string][];
  /** While true, client→server frames wait in `held` until `release()`. */
  hold: boolean;
  readonly held: Frame[];
  release(): void;
  /** Cuts the connection as a network failure would (client sees code 1006). */
  cut(): void;
  /** Delivers a raw message to the server as if the client had sent it. */
  inject(data: string | ArrayBuffer): void;
  /** The server's state for this connection (export table, running calls), once it has one. */
  server(): Connection | undefined;
}

export interface Paired {
  factory: TransportFactory;
  /** Every connection the client opened, newest last. */
  connections: PairedConnection[];
  /** Makes the next `open()` fail. */
  failNextOpen: boolean;
}

/** What the paired "object" keeps besides its target. */
export interface PairOptions {
  /** A delivery record (exactly-once) for the object, as workerd's SQLite storage would hold. */
  records?: DeliveryRecord;
}

/** Pairs a client with `target` served by the real dispatcher. Frames cross asynchronously. */
export function pairWith(target: object, options?: RpcServerOptions, pair: PairOptions = {}): Paired {
  const resolved = resolveServerOptions(options);
  // As handleRpcRequest does when the object is first served.
  checkServed(target, resolved);
  const records = pair.records;
  const hooks = records
    ? () => ({
        records,
        onHello: (session: string, resending: boolean, age?: number, fresh?: boolean) => records.hello(session, resending, age, fresh),
      })
    : undefined;
  const paired: Paired = { factory: undefined as never, connections: [], failNextOpen: false };
  paired.factory = (handler: TransportHandler): RpcTransport => {
    let closed = false;
    const finish = (code: number, reason: string) => {
      if (closed) return;
      closed = true;
      channelClosed(channel, code, reason);
      handler.onClose(code, reason);
    };
    const channel = {
      send(frame: Frame) {
        if (closed) throw new Error("socket closed");
        conn.sentByServer.push(frame);
        const data = typeof frame === "string" ? frame : frame.slice().buffer;
        setTimeout(() => !closed && handler.onMessage(data), 0);
      },
      close(code = 1000, reason = "") {
        conn.serverCloses.push([code, reason]);
        setTimeout(() => finish(code, reason), 0);
      },
    };
    const deliver = (frame: Frame) => {
      // A Hello travels in the message of the frame after it (Outbox.lead): recorded apart, delivered as sent.
      for (const part of framesOf(frame)) {
        if (typeof part === "string" && part.startsWith("\u001eH")) conn.hellos.push(part);
        else conn.sentByClient.push(part);
      }
      const data = typeof frame === "string" ? frame : frame.slice().buffer;
      setTimeout(() => {
        if (!closed) dispatchFrame(data, target, resolved, channel, hooks);
      }, 0);
    };
    const conn: PairedConnection = {
      sentByClient: [],
      hellos: [],
      sentByServer: [],
      serverCloses: [],
      hold: false,
      held: [],
      release() {
        conn.hold = false;
        for (const frame of conn.held.splice(0)) deliver(frame);
      },
      cut() {
        finish(1006, "connection lost");
      },
      inject(data) {
        dispatchFrame(data, target, resolved, channel, hooks);
      },
      server: () => existingConnection(channel),
    };
    paired.connections.push(conn);
    return {
      open() {
        if (paired.failNextOpen) {
          paired.failNextOpen = false;
          finish(1006, "refused");
          return Promise.reject(new Error("refused"));
        }
        return Promise.resolve();
      },
      send(frame) {
        if (closed) return;
        if (conn.hold) conn.held.push(frame);
        else deliver(frame);
      },
      close(code = 1000, reason = "") {
        finish(code, reason);
      },
    };
  };
  return paired;
}

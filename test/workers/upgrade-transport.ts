/**
 * A dorpc client transport for tests running inside workerd: opens the WebSocket by sending an
 * upgrade request through the test Worker's own `fetch` (`SELF.fetch`), so every connection
 * takes the real route (routeDORequest → stub.fetch → handleRpcRequest → hibernatable socket).
 *
 * Follows the RpcTransport contract of packages/rpc/src/transport.ts: `open()` resolves when
 * `send` may be called or rejects with `DISCONNECTED`; `onMessage` is never called after
 * `onClose`; `onClose` is called exactly once per transport, whether or not `open()` resolved;
 * `send` never throws for a closed connection; `close` is idempotent.
 *
 * Each connection is recorded in `factory.connections` so a test can reach the raw socket (to
 * speak a Durable Object's own protocol on it) or see how many connections a client opened.
 */
import { RpcError, type RpcTransport, type TransportFactory, type TransportHandler } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";

/** One connection attempt of a client. */
export interface UpgradeConnection {
  /** The response to the upgrade request (status 101 when it worked). */
  response: Response | undefined;
  /** The client end of the socket, once accepted. */
  socket: WebSocket | undefined;
  /** Set once `onClose` was reported: [code, reason]. */
  closed: [number, string] | undefined;
}

export type UpgradeTransportFactory = TransportFactory & {
  /** Every connection attempt, oldest first. */
  readonly connections: UpgradeConnection[];
};

export interface UpgradeTransportOptions {
  /** Extra headers for the upgrade request. */
  headers?: Record<string, string>;
}

/** A transport factory connecting to `url` (e.g. "http://x/__rpc/COUNTER/room-1"). */
export function upgradeTransport(url: string, options: UpgradeTransportOptions = {}): UpgradeTransportFactory {
  const connections: UpgradeConnection[] = [];
  const factory = (handler: TransportHandler): RpcTransport => {
    const connection: UpgradeConnection = { response: undefined, socket: undefined, closed: undefined };
    connections.push(connection);
    let done = false;

    const finish = (code: number, reason: string): void => {
      if (done) return;
      done = true;
      connection.closed = [code, reason];
      handler.onClose(code, reason);
    };

    const fail = (message: string, cause?: unknown): RpcError => {
      const error = new RpcError("DISCONNECTED", message, { cause });
      finish(1006, message);
      return error;
    };

    return {
      async open(): Promise<void> {
        let response: Response;
        try {
          response = await SELF.fetch(url, { headers: { ...options.headers, Upgrade: "websocket" } });
        } catch (error) {
          throw fail(`Upgrade request to ${url} failed: ${String(error)}`, error);
        }
        connection.response = response;
        const socket = response.webSocket;
        if (response.status !== 101 || !socket) {
          const body = await response.text().catch(() => "");
          throw fail(`Upgrade request to ${url} was answered ${response.status}: ${body}`);
        }
        // workerd delivers binary messages as Blob by default (standard binaryType); dorpc's
        // frame reader takes ArrayBuffer, like WebSocketTransport asks for.
        socket.binaryType = "arraybuffer";
        socket.accept();
        if (done) {
          // close() was called while the upgrade was in flight: onClose already ran.
          socket.close(1000, "closed while opening");
          throw new RpcError("DISCONNECTED", `Connection to ${url} was closed while opening.`);
        }
        connection.socket = socket;
        socket.addEventListener("message", (event) => {
          if (!done) handler.onMessage(event.data);
        });
        socket.addEventListener("close", (event) => finish(event.code, event.reason));
        socket.addEventListener("error", () => finish(1006, "WebSocket error"));
      },

      send(frame): void {
        const socket = connection.socket;
        if (done || !socket) return; // reported through onClose
        try {
          socket.send(frame);
        } catch (error) {
          finish(1006, `send failed: ${String(error)}`);
        }
      },

      close(code = 1000, reason = ""): void {
        if (done) return;
        try {
          connection.socket?.close(code, reason);
        } catch {
          // already closing
        }
        finish(code, reason);
      },
    };
  };
  return Object.assign(factory, { connections });
}

/** The URL of the test Worker's route for `binding` / `instance`, with an optional query. */
export function routeUrl(binding: string, instance: string, query = ""): string {
  return `http://x/__rpc/${binding}/${encodeURIComponent(instance)}${query}`;
}

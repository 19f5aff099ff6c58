/**
 * Client transport for the workerd tests: opens the WebSocket with an upgrade request through
 * the reliability Worker's own `fetch` (SELF), so every connection takes the real route
 * (routeDORequest → stub.fetch → handleRpcRequest → hibernatable socket). Keeps the
 * RpcTransport contract (packages/rpc/src/transport.ts) and records each attempt so tests can
 * reach the raw socket and the close code.
 */
import {
  createRpcClient,
  RpcError,
  type RpcClient,
  type RpcClientOptions,
  type RpcTransport,
  type TransportFactory,
  type TransportHandler,
} from "@dorpc/rpc";
import { SELF } from "cloudflare:test";

export interface Attempt {
  response: Response | undefined;
  socket: WebSocket | undefined;
  closed: [number, string] | undefined;
}

export type RecordingFactory = TransportFactory & { readonly attempts: Attempt[] };

export function upgrade(url: string): RecordingFactory {
  const attempts: Attempt[] = [];
  const factory = (handler: TransportHandler): RpcTransport => {
    const attempt: Attempt = { response: undefined, socket: undefined, closed: undefined };
    attempts.push(attempt);
    let done = false;
    const finish = (code: number, reason: string) => {
      if (done) return;
      done = true;
      attempt.closed = [code, reason];
      handler.onClose(code, reason);
    };
    return {
      async open() {
        let response: Response;
        try {
          response = await SELF.fetch(url, { headers: { Upgrade: "websocket" } });
        } catch (error) {
          finish(1006, `upgrade failed: ${String(error)}`);
          throw new RpcError("DISCONNECTED", `Upgrade request to ${url} failed: ${String(error)}`);
        }
        attempt.response = response;
        const socket = response.webSocket;
        if (response.status !== 101 || !socket) {
          const body = await response.text().catch(() => "");
          const message = `Upgrade request to ${url} was answered ${response.status}: ${body}`;
          finish(1006, message);
          throw new RpcError("DISCONNECTED", message);
        }
        socket.binaryType = "arraybuffer";
        socket.accept();
        if (done) {
          socket.close(1000, "closed while opening");
          throw new RpcError("DISCONNECTED", "closed while opening");
        }
        attempt.socket = socket;
        socket.addEventListener("message", (event) => {
          if (!done) handler.onMessage(event.data as string | ArrayBuffer);
        });
        socket.addEventListener("close", (event) => finish(event.code, event.reason));
        socket.addEventListener("error", () => finish(1006, "WebSocket error"));
      },
      send(frame) {
        if (done || !attempt.socket) return;
        try {
          attempt.socket.send(frame);
        } catch (error) {
          finish(1006, `send failed: ${String(error)}`);
        }
      },
      close(code = 1000, reason = "") {
        if (done) return;
        try {
          attempt.socket?.close(code, reason);
        } catch {
          // already closing
        }
        finish(code, reason);
      },
    };
  };
  return Object.assign(factory, { attempts });
}

let serial = 0;

/** A fresh instance name, so tests never share a Durable Object. */
export function unique(label: string): string {
  return `${label}-${Date.now().toString(36)}-${(serial++).toString(36)}`;
}

/** A client of RELIABLE/`instance` through the Worker's route. */
export function connect<T>(instance: string, options: Omit<RpcClientOptions, "transport"> = {}, query = "") {
  const transport = upgrade(`http://x/__rpc/RELIABLE/${encodeURIComponent(instance)}${query}`);
  const client = createRpcClient<T>("RELIABLE", instance, {
    timeout: 10_000,
    reconnect: { initialDelay: 10, maxDelay: 100 },
    ...options,
    transport,
  }) as RpcClient<T>;
  return { client, transport, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

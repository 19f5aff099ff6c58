/**
 * The dorpc client inside a Worker's fetch handler (worker-clients.test.ts). `ClientWorker` is a
 * Worker entrypoint reached through `exports.ClientWorker` (ctx.exports loopback), so each
 * `fetch` is its own request context, as in production.
 *
 * The tests cannot reach a public URL, so a WebSocket "constructor" stands in for workerd's global
 * outbound `new WebSocket(url)`: it sends the upgrade through the test Worker's own fetch
 * (routeDORequest) and hands out the workerd WebSocket of the 101 response — the same kind of I/O
 * object, owned by the request that opened it.
 */
import { exports, WorkerEntrypoint } from "cloudflare:workers";
import {
  createRpcClient,
  httpTransport,
  RpcError,
  rpcConnection,
  type RpcClient,
  type RpcClientOptions,
  type WebSocketConstructor,
} from "@dorpc/rpc";
import type { Counter } from "./objects.js";

type Listener = (event: { code?: number; reason?: string; data?: unknown }) => void;

interface Fetcher {
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

/** The test Worker's default entrypoint (routeDORequest). */
function worker(): Fetcher {
  return (exports as unknown as { default: Fetcher }).default;
}

/** A WebSocket constructor opening its socket with an upgrade sent through `fetcher` (see above). */
export function upgradeWebSocket(fetcher: () => Fetcher = worker): WebSocketConstructor {
  return class UpgradeWebSocket {
    binaryType = "arraybuffer";
    private socket: WebSocket | undefined;
    private state = 0;
    private readonly listeners = new Map<string, Listener[]>();

    constructor(url: string) {
      fetcher()
        .fetch(url.replace(/^ws/, "http"), { headers: { Upgrade: "websocket" } })
        .then(
          (response) => {
            const socket = response.webSocket;
            if (response.status !== 101 || !socket) {
              this.state = 3;
              this.emit("error", {});
              this.emit("close", { code: 1006, reason: `upgrade answered ${response.status}` });
              return;
            }
            socket.binaryType = "arraybuffer";
            socket.accept();
            this.socket = socket;
            socket.addEventListener("message", (event) => this.emit("message", { data: event.data }));
            socket.addEventListener("close", (event) => {
              this.state = 3;
              this.emit("close", { code: event.code, reason: event.reason });
            });
            socket.addEventListener("error", () => this.emit("error", {}));
            this.state = 1;
            this.emit("open", {});
          },
          () => {
            this.state = 3;
            this.emit("error", {});
            this.emit("close", { code: 1006, reason: "upgrade failed" });
          },
        );
    }

    get readyState(): number {
      return this.socket ? this.socket.readyState : this.state;
    }

    get bufferedAmount(): number {
      return 0;
    }

    send(data: string | ArrayBufferLike | ArrayBufferView): void {
      if (!this.socket) throw new Error("not open");
      this.socket.send(data as ArrayBuffer);
    }

    close(code?: number, reason?: string): void {
      this.socket?.close(code, reason);
    }

    addEventListener(type: string, listener: (event: never) => void): void {
      const list = this.listeners.get(type) ?? [];
      list.push(listener as Listener);
      this.listeners.set(type, list);
    }

    private emit(type: string, event: Parameters<Listener>[0]): void {
      for (const listener of this.listeners.get(type) ?? []) listener(event);
    }
  } as unknown as WebSocketConstructor;
}

/** Outcome of a call, as JSON: its value, or the error's name, code and message. */
export type Outcome = { value: unknown } | { error: { name: string; code?: string; message: string; isRpcError: boolean } };

export async function outcome(promise: PromiseLike<unknown>): Promise<Outcome> {
  try {
    return { value: await promise };
  } catch (error) {
    const e = error as Error & { code?: string };
    return { error: { name: e?.name, code: e?.code, message: String(e?.message ?? e), isRpcError: error instanceof RpcError } };
  }
}

const WS_BASE: RpcClientOptions = { baseUrl: "http://dorpc.test", timeout: 3_000, reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 } };

/** Clients kept in module scope across requests (what a Worker author might do to "reuse the connection"). */
const moduleClients = new Map<string, RpcClient<Counter>>();

export class ClientWorker extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const name = url.searchParams.get("name") ?? "probe";
    switch (url.pathname) {
      // A WebSocket client kept in module scope, reused by every request.
      case "/ws-module": {
        let client = moduleClients.get(name);
        if (!client) {
          client = createRpcClient<Counter>("COUNTER", name, { ...WS_BASE, WebSocket: upgradeWebSocket() });
          moduleClients.set(name, client);
        }
        return Response.json(await outcome(client.increment(1)));
      }
      // An HTTP-transport client kept in module scope, reused by every request.
      case "/http-module": {
        let client = moduleClients.get(`http:${name}`);
        if (!client) {
          client = createRpcClient<Counter>("COUNTER", name, {
            ...WS_BASE,
            transport: httpTransport({ fetch: (input, init) => worker().fetch(input, init) }),
          });
          moduleClients.set(`http:${name}`, client);
        }
        return Response.json(await outcome(client.increment(1)));
      }
      // A module-scope HTTP client with a 1 s timeout, running a chosen call: `add` (answers in
      // 0.6 s) or `wait` (the object waits 4 s unless cancelled).
      case "/http-module-call": {
        let client = moduleClients.get(`http-call:${name}`);
        if (!client) {
          client = createRpcClient<Counter>("COUNTER", name, {
            ...WS_BASE,
            timeout: 1_000,
            transport: httpTransport({ fetch: (input, init) => worker().fetch(input, init) }),
          });
          moduleClients.set(`http-call:${name}`, client);
        }
        const call = url.searchParams.get("call") === "add" ? client.addLater(1, 2, 600) : client.waitOrCancel(4_000);
        return Response.json(await outcome(call));
      }
      // Call without awaiting; the work finishes under ctx.waitUntil.
      case "/ws-wait-until": {
        const client = createRpcClient<Counter>("COUNTER", name, { ...WS_BASE, WebSocket: upgradeWebSocket() });
        this.ctx.waitUntil(client.increment(5).finally(() => client[Symbol.dispose]()));
        return new Response("accepted");
      }
      // The documented shape: created in the handler, disposed before returning (`using`).
      case "/ws-using": {
        using client = createRpcClient<Counter>("COUNTER", name, { ...WS_BASE, WebSocket: upgradeWebSocket() });
        return Response.json(await outcome(client.increment(1)));
      }
      case "/state": {
        const client = moduleClients.get(name);
        return Response.json({ state: client ? rpcConnection(client).state : "none" });
      }
      default:
        return new Response("no route", { status: 404 });
    }
  }
}

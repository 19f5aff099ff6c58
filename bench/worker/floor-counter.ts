/**
 * The floor contender: the least a hand-written RPC over a WebSocket can do.
 *
 * Text message `[id, method, args]` → `[id, result]` or `[id, null, message]` on a throw
 * (JSON.parse → call the shared CounterImpl → JSON.stringify; a method that returns a promise
 * is answered when it settles). Binary message: 4-byte little-endian id followed by raw bytes →
 * `impl.echo(bytes)` sent back as is (id included), so the floor also has a byte path without
 * base64. Nothing else: no batching, no validation, no types beyond JSON and one Uint8Array.
 *
 * The feature scenarios get the least hand-written code that does the job, too:
 *  - fan-out: `fanOut(message)` encodes `["fan", message]` once and sends that one string to every
 *    other socket of the object (`ctx.getWebSockets()`), then answers the caller with the count;
 *  - callbacks: `[id, "callback", [n]]` makes the object send `["cb", id, i]` n times; the client
 *    answers each with `["cbr", id, value]`, and after the n-th answer the object replies
 *    `[id, sum]`;
 *  - HTTP: a POST of `[[method, args], …]` is answered with `[[result] | [null, message], …]`.
 *
 * FloorCounter accepts with the hibernation API (`ctx.acceptWebSocket`), like dorpc: it is the
 * floor dorpc is measured against. FloorAcceptCounter speaks the same protocol over a plain
 * `server.accept()` socket, like capnweb's `newWorkersRpcResponse`: a diagnostic contender that
 * shows what the hibernation API itself costs, apart from any RPC layer.
 */
import { DurableObject } from "cloudflare:workers";
import { CounterImpl } from "./counter-impl.js";

interface PendingCallback {
  left: number;
  sum: number;
}

class FloorServer {
  readonly impl: CounterImpl;
  /** Callback calls in progress, per socket and call id (in memory: a call in progress keeps the object awake). */
  readonly #callbacks = new WeakMap<WebSocket, Map<number, PendingCallback>>();

  constructor(
    storage: DurableObjectStorage,
    private readonly sockets: () => Iterable<WebSocket>,
  ) {
    this.impl = new CounterImpl(storage);
  }

  call(ws: WebSocket | undefined, method: string, args: unknown[]): unknown {
    const impl = this.impl;
    switch (method) {
      case "increment":
        return impl.increment(args[0] as number | undefined);
      case "getValue":
        return impl.getValue();
      case "noop":
        return impl.noop();
      case "echo":
        return impl.echo(args[0]);
      case "bornAt":
        return impl.bornAt();
      case "slow":
        return impl.slow(args[0] as number);
      case "fanOut":
        return this.fanOut(ws, String(args[0]));
      default:
        throw new Error(`floor: no method ${method}`);
    }
  }

  fanOut(sender: WebSocket | undefined, message: string): number {
    const frame = JSON.stringify(["fan", message]);
    let sent = 0;
    for (const ws of this.sockets()) {
      if (ws === sender) continue;
      try {
        ws.send(frame);
        sent++;
      } catch {
        // closing: a fan-out never fails because one listener left
      }
    }
    return sent;
  }

  onMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    if (typeof message !== "string") {
      ws.send(this.impl.echo(new Uint8Array(message)));
      return;
    }
    const parsed = JSON.parse(message) as [number, string, unknown[]] | ["cbr", number, number];
    if (parsed[0] === "cbr") {
      this.#callbackResult(ws, parsed[1], parsed[2]);
      return;
    }
    const [id, method, args] = parsed as [number, string, unknown[]];
    if (method === "callback") {
      this.#startCallback(ws, id, Number(args[0]));
      return;
    }
    let result: unknown;
    try {
      result = this.call(ws, method, args);
    } catch (error) {
      ws.send(JSON.stringify([id, null, String(error)]));
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value) => ws.send(JSON.stringify([id, value])),
        (error) => ws.send(JSON.stringify([id, null, String(error)])),
      );
    } else {
      ws.send(JSON.stringify([id, result]));
    }
  }

  #startCallback(ws: WebSocket, id: number, times: number): void {
    if (!(times > 0)) {
      ws.send(JSON.stringify([id, 0]));
      return;
    }
    let calls = this.#callbacks.get(ws);
    if (!calls) this.#callbacks.set(ws, (calls = new Map()));
    calls.set(id, { left: times, sum: 0 });
    for (let i = 0; i < times; i++) ws.send(JSON.stringify(["cb", id, i]));
  }

  #callbackResult(ws: WebSocket, id: number, value: number): void {
    const calls = this.#callbacks.get(ws);
    const pending = calls?.get(id);
    if (!calls || !pending) return;
    pending.sum += value;
    if (--pending.left > 0) return;
    calls.delete(id);
    ws.send(JSON.stringify([id, pending.sum]));
  }

  async onHttp(request: Request): Promise<Response> {
    const calls = (await request.json()) as [string, unknown[]][];
    const results: unknown[] = [];
    for (const [method, args] of calls) {
      try {
        const result = this.call(undefined, method, args);
        results.push([result instanceof Promise ? await result : result]);
      } catch (error) {
        results.push([null, String(error)]);
      }
    }
    return new Response(JSON.stringify(results), { headers: { "content-type": "application/json" } });
  }
}

function closeBack(ws: WebSocket, code: number): void {
  try {
    ws.close(code === 1005 || code === 1006 ? 1000 : code, "");
  } catch {
    // already closed
  }
}

function isUpgrade(request: Request): boolean {
  return request.headers.get("Upgrade")?.toLowerCase() === "websocket";
}

export class FloorCounter extends DurableObject<Env> {
  readonly #server = new FloorServer(this.ctx.storage, () => this.ctx.getWebSockets());

  override fetch(request: Request): Response | Promise<Response> {
    if (!isUpgrade(request)) {
      if (request.method === "POST") return this.#server.onHttp(request);
      return new Response("floor: connect with a WebSocket or POST a batch", { status: 426 });
    }
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    this.#server.onMessage(ws, message);
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    closeBack(ws, code);
  }
}

export class FloorAcceptCounter extends DurableObject<Env> {
  /** Accepted sockets are not visible to ctx.getWebSockets(), so the object keeps its own set. */
  readonly #sockets = new Set<WebSocket>();
  readonly #server = new FloorServer(this.ctx.storage, () => this.#sockets);

  override fetch(request: Request): Response {
    if (!isUpgrade(request)) return new Response("floor: connect with a WebSocket", { status: 426 });
    const pair = new WebSocketPair();
    const server = pair[1];
    // With this compatibility date an accepted socket delivers binary messages as Blob unless told otherwise.
    server.binaryType = "arraybuffer";
    server.accept();
    this.#sockets.add(server);
    server.addEventListener("message", (event) => this.#server.onMessage(server, event.data as string | ArrayBuffer));
    server.addEventListener("close", (event) => {
      this.#sockets.delete(server);
      closeBack(server, event.code);
    });
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
}

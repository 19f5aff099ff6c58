/**
 * The floor contender: the least a hand-written RPC over a WebSocket can do.
 *
 * Text message `[id, method, args]` → `[id, result]` or `[id, null, message]` on a throw
 * (JSON.parse → call the shared CounterImpl → JSON.stringify). Binary message: 4-byte
 * little-endian id followed by raw bytes → `impl.echo(bytes)` sent back as is (id included), so
 * the floor also has a byte path without base64. Nothing else: no batching, no validation, no
 * types beyond JSON and one Uint8Array.
 *
 * FloorCounter accepts with the hibernation API (`ctx.acceptWebSocket`), like dorpc: it is the
 * floor dorpc is measured against. FloorAcceptCounter speaks the same protocol over a plain
 * `server.accept()` socket, like capnweb's `newWorkersRpcResponse`: a diagnostic contender that
 * shows what the hibernation API itself costs, apart from any RPC layer.
 */
import { DurableObject } from "cloudflare:workers";
import { CounterImpl } from "./counter-impl.js";

function call(impl: CounterImpl, method: string, args: unknown[]): unknown {
  switch (method) {
    case "increment":
      return impl.increment(args[0] as number | undefined);
    case "getValue":
      return impl.getValue();
    case "noop":
      return impl.noop();
    case "echo":
      return impl.echo(args[0]);
    default:
      throw new Error(`floor: no method ${method}`);
  }
}

function onMessage(impl: CounterImpl, ws: WebSocket, message: string | ArrayBuffer): void {
  if (typeof message !== "string") {
    ws.send(impl.echo(new Uint8Array(message)));
    return;
  }
  const [id, method, args] = JSON.parse(message) as [number, string, unknown[]];
  let reply: string;
  try {
    reply = JSON.stringify([id, call(impl, method, args)]);
  } catch (error) {
    reply = JSON.stringify([id, null, String(error)]);
  }
  ws.send(reply);
}

function closeBack(ws: WebSocket, code: number): void {
  try {
    ws.close(code === 1005 || code === 1006 ? 1000 : code, "");
  } catch {
    // already closed
  }
}

function notUpgrade(request: Request): Response | undefined {
  if (request.headers.get("Upgrade")?.toLowerCase() === "websocket") return undefined;
  return new Response("floor: connect with a WebSocket", { status: 426 });
}

export class FloorCounter extends DurableObject<Env> {
  readonly #impl = new CounterImpl(this.ctx.storage);

  override fetch(request: Request): Response {
    const refused = notUpgrade(request);
    if (refused) return refused;
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    onMessage(this.#impl, ws, message);
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    closeBack(ws, code);
  }
}

export class FloorAcceptCounter extends DurableObject<Env> {
  readonly #impl = new CounterImpl(this.ctx.storage);

  override fetch(request: Request): Response {
    const refused = notUpgrade(request);
    if (refused) return refused;
    const pair = new WebSocketPair();
    const server = pair[1];
    // With this compatibility date an accepted socket delivers binary messages as Blob unless told otherwise.
    server.binaryType = "arraybuffer";
    server.accept();
    server.addEventListener("message", (event) => onMessage(this.#impl, server, event.data as string | ArrayBuffer));
    server.addEventListener("close", (event) => closeBack(server, event.code));
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
}

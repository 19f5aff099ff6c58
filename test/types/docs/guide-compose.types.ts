// docs/getting-started.md section 5, verbatim (withRpc and the hand-composed Manual).
import { DurableObject } from "cloudflare:workers";
import { withRpc } from "@dorpc/rpc/server";
import { handleRpcClose, handleRpcMessage, handleRpcRequest, type RpcServerOptions, watchRpcStorage } from "@dorpc/rpc/server";
import type { Env } from "./guide-worker.types.js";

class RoomBase extends DurableObject<Env> {
  // Requests that are not dorpc upgrades still reach this fetch.
  async fetch(request: Request): Promise<Response> {
    return new Response(`hello from ${new URL(request.url).pathname}`);
  }

  post(text: string): number {
    const count = (this.ctx.storage.kv.get<number>("count") ?? 0) + 1;
    this.ctx.storage.kv.put("count", count);
    this.ctx.storage.kv.put(`message:${count}`, text);
    return count;
  }
}

// The exported name is what wrangler.toml's class_name refers to.
export const Room = withRpc(RoomBase, { exposeErrorStack: false });

export class Manual extends DurableObject<Env> {
  // Declared on the class: handleRpc* use them when given none, and rpcClient / rpcPublish find
  // them from any entry point (an alarm, after an eviction). One object: validated once.
  static rpcOptions: RpcServerOptions = { limits: { maxMessageBytes: 1024 * 1024 } };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // dorpc's tables note a ctx.storage.deleteAll() from here on, even one made before the first
    // dorpc message (in an alarm): a call answered before it is then never run again.
    watchRpcStorage(this);
  }

  async fetch(request: Request): Promise<Response> {
    const rpc = await handleRpcRequest(request, this);
    if (rpc) return rpc; // 101 for an upgrade, the answer of a POST (an HTTP batch), 426 for a GET
    return new Response("my own route");
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (await handleRpcMessage(ws, message, this)) return;
    if (message === "ping") ws.send("pong"); // not a dorpc frame: your own protocol
  }

  async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    handleRpcClose(ws, code, reason); // its calls are cancelled, the references it held released
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason); // 1005/1006 cannot be sent
    } catch {
      // already closed
    }
  }

  greet(name: string): string {
    return `hello, ${name}`;
  }
}

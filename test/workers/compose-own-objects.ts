/**
 * Objects that compose dorpc with code of their own (compose-own-code.test.ts): hand-composed
 * with declared and undeclared options, a subclass of withRpc's class, withRpc around classes
 * with their own socket handlers and sockets, and withRpc with `hibernation: false`.
 */
import { DurableObject } from "cloudflare:workers";
import {
  handleRpcClose,
  handleRpcMessage,
  handleRpcRequest,
  RPC_SOCKET_TAG,
  rpcClient,
  rpcPublish,
  rpcSocketInfo,
  withRpc,
  type RpcServerOptions,
  type RpcSocketInfo,
} from "@dorpc/rpc/server";

/** What every probe object answers over Workers RPC (not dorpc): runs inside the object. */
function socketInfos(ctx: DurableObjectState): (RpcSocketInfo | null)[] {
  return ctx.getWebSockets(RPC_SOCKET_TAG).map((ws) => rpcSocketInfo(ws) ?? null);
}

function errorCode(error: unknown): string {
  return `${(error as { code?: string }).code ?? "?"}: ${String((error as Error)?.message ?? error)}`;
}

// ---------------------------------------------------------------------------------------------
// Hand-composed, with topics and an access allow-list, as docs/getting-started.md §5 shows.
// ---------------------------------------------------------------------------------------------

const manualOptions: RpcServerOptions = {
  topics: { news: {} },
  access: { allow: ["greet"] },
  callTimeout: 1_000,
};

/** What both hand-composed objects do besides serving dorpc (they differ in how they give options). */
class HandBase extends DurableObject<Env> {
  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    handleRpcClose(ws, code, reason);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {}
  }

  greet(name: string): string {
    return `hello, ${name}`;
  }

  /** Not in access.allow: a client must get NOT_FOUND. */
  secret(): string {
    return "the secret";
  }

  /** Workers RPC (e.g. called from the Worker or an alarm): publish on a declared topic. */
  publishNews(text: string): string {
    try {
      return String(rpcPublish(this, "news", text));
    } catch (error) {
      return errorCode(error);
    }
  }

  /** Workers RPC: take a stub to each connected client (as an alarm that will call them would). */
  touchClients(): string {
    try {
      for (const ws of this.ctx.getWebSockets(RPC_SOCKET_TAG)) rpcClient(this, ws);
      return String(this.ctx.getWebSockets(RPC_SOCKET_TAG).length);
    } catch (error) {
      return errorCode(error);
    }
  }
}

/** Declares its options on the class: handleRpc* (given none) and rpcClient / rpcPublish use them. */
export class HandComposed extends HandBase {
  static rpcOptions = manualOptions;

  override async fetch(request: Request): Promise<Response> {
    return (await handleRpcRequest(request, this)) ?? new Response("own route");
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await handleRpcMessage(ws, message, this);
  }
}

/** Passes its options to handleRpc* only: outside a dorpc message of this instance they are unknown. */
export class HandUndeclared extends HandBase {
  override async fetch(request: Request): Promise<Response> {
    return (await handleRpcRequest(request, this, manualOptions)) ?? new Response("own route");
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await handleRpcMessage(ws, message, this, manualOptions);
  }
}

// ---------------------------------------------------------------------------------------------
// A subclass of withRpc's class (the mixin pattern: `class Room extends withRpc(Base, opts)`).
// ---------------------------------------------------------------------------------------------

class SubBase extends DurableObject<Env> {
  greet(name: string): string {
    return `hello, ${name}`;
  }
}

export class SubclassOfWrapped extends withRpc(SubBase, { topics: { news: {} }, access: { allow: ["greet", "publishNews"] } }) {
  publishNews(text: string): string {
    try {
      return String(rpcPublish(this, "news", text));
    } catch (error) {
      return errorCode(error);
    }
  }

  secret(): string {
    return "the secret";
  }

  /** Workers RPC: wipe the storage (as an alarm or fetch might). */
  async wipe(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }

  touchClients(): string {
    for (const ws of this.ctx.getWebSockets(RPC_SOCKET_TAG)) rpcClient(this, ws);
    return String(this.ctx.getWebSockets(RPC_SOCKET_TAG).length);
  }
}

/** The same, with a static rpcOptions of its own (left from an RpcDurableObject version): withRpc's options still serve it. */
export class SubclassWithStatic extends SubclassOfWrapped {
  static rpcOptions: RpcServerOptions = {};
}

// ---------------------------------------------------------------------------------------------
// withRpc around a class with (and without) its own webSocketError.
// ---------------------------------------------------------------------------------------------

class ErrBase extends DurableObject<Env> {
  errors = 0;
  override async webSocketError(_ws: WebSocket, _error: unknown): Promise<void> {
    this.errors++;
  }
  /** Workers RPC: how many socket errors Base's own handler heard. */
  errorCount(): number {
    return this.errors;
  }
  greet(name: string): string {
    return `hello, ${name}`;
  }
  /** Workers RPC: what dorpc holds per dorpc socket (null: nothing). */
  infos(): (RpcSocketInfo | null)[] {
    return socketInfos(this.ctx);
  }
  /** Workers RPC: the runtime's webSocketError, as it would call it, for each dorpc socket. */
  async raiseErrors(): Promise<string> {
    const handler = (this as { webSocketError?: (ws: WebSocket, error: unknown) => unknown }).webSocketError;
    if (typeof handler !== "function") return "no webSocketError";
    for (const ws of this.ctx.getWebSockets(RPC_SOCKET_TAG)) await handler.call(this, ws, new Error("boom"));
    return "raised";
  }
}

export const ErrorHandlingWrapped = withRpc(ErrBase);

class NoErrBase extends DurableObject<Env> {
  greet(name: string): string {
    return `hello, ${name}`;
  }
  hasWebSocketError(): boolean {
    return typeof (this as { webSocketError?: unknown }).webSocketError === "function";
  }
}

export const NoErrorHandlerWrapped = withRpc(NoErrBase);

// ---------------------------------------------------------------------------------------------
// withRpc around a class that accepts its own (untagged) sockets and speaks JSON text sequences
// (RFC 7464: each record starts with RS, 0x1E) on them.
// ---------------------------------------------------------------------------------------------

class SeqBase extends DurableObject<Env> {
  override async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname.endsWith("/own")) {
      const pair = new WebSocketPair();
      this.ctx.acceptWebSocket(pair[1]);
      return new Response(null, { status: 101, webSocket: pair[0] });
    }
    return new Response("seq base", { status: 404 });
  }
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    ws.send(`base got ${JSON.stringify(String(message))}`);
  }
  greet(name: string): string {
    return `hello, ${name}`;
  }
}

export const OwnSocketsWrapped = withRpc(SeqBase);

// ---------------------------------------------------------------------------------------------
// withRpc(Base, { hibernation: false }) around a class with its own webSocketMessage / Close.
// ---------------------------------------------------------------------------------------------

class LiveBase extends DurableObject<Env> {
  closes: number[] = [];
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    ws.send(`live base got ${String(message)}`);
  }
  override webSocketClose(ws: WebSocket, code: number): void {
    this.closes.push(code);
    try {
      ws.close(1000);
    } catch {}
  }
  greet(name: string): string {
    return `hello, ${name}`;
  }
  closeCodes(): number[] {
    return this.closes;
  }
}

export const LiveWrapped = withRpc(LiveBase, { hibernation: false });

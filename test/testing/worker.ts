/**
 * The Worker and Durable Objects that @dorpc/testing's own tests drive. Each object records what
 * reached it (upgrade headers, socket closes, alarms) so a test can check that a helper really
 * acted on the object, not only on the client.
 *
 * The Worker routes /__rpc/{binding}/{instance} with routeDORequest; its onBeforeConnect hook
 * turns `?user=` into the connection's identity with withIdentity, as a real auth hook would.
 */
import { readIdentityHeader, RpcDurableObject, rpcCaller, type RpcServerOptions } from "@dorpc/rpc/server";
import { routeDORequest, withIdentity } from "@dorpc/routing";

export class Counter extends RpcDurableObject<Env> {
  static rpcOptions = { identify: readIdentityHeader } satisfies RpcServerOptions;

  /** Changes on every construction: tells whether an eviction really happened. */
  readonly instanceId = crypto.randomUUID();

  override async fetch(request: Request): Promise<Response> {
    this.ctx.storage.kv.put("upgradePath", new URL(request.url).pathname + new URL(request.url).search);
    this.ctx.storage.kv.put("upgradeHeader", request.headers.get("x-test-header"));
    return super.fetch(request);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.ctx.storage.kv.put("closes", [...(this.ctx.storage.kv.get<number[]>("closes") ?? []), code]);
    await super.webSocketClose(ws, code, reason);
  }

  override async alarm(): Promise<void> {
    this.ctx.storage.kv.put("alarmRan", true);
  }

  increment(by = 1): number {
    const value = this.getValue() + by;
    this.ctx.storage.kv.put("count", value);
    return value;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("count") ?? 0;
  }

  whoami(): string {
    return this.instanceId;
  }

  callerIdentity(): unknown {
    return rpcCaller()?.identity;
  }

  socketCount(): number {
    return this.ctx.getWebSockets().length;
  }

  /** Socket close codes the object saw, oldest first. */
  closes(): number[] {
    return this.ctx.storage.kv.get<number[]>("closes") ?? [];
  }

  upgradePath(): string | undefined {
    return this.ctx.storage.kv.get<string>("upgradePath");
  }

  upgradeHeader(): string | null | undefined {
    return this.ctx.storage.kv.get<string | null>("upgradeHeader");
  }

  async scheduleAlarm(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + 60_000);
  }

  /** Calls of `sleep` that arrived and have not finished (read with runInObject, which bypasses RPC ordering). */
  sleeping = 0;

  async sleep(ms: number): Promise<number> {
    this.sleeping++;
    try {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return ms;
    } finally {
      this.sleeping--;
    }
  }
}

/** Identifies callers by `Authorization: Bearer <user>`; refuses connections without it. */
export class Bearer extends RpcDurableObject<Env> {
  static rpcOptions = {
    identify(request: Request) {
      const match = /^Bearer (\w+)$/.exec(request.headers.get("Authorization") ?? "");
      if (!match) throw new Error("no bearer token");
      return { user: match[1] };
    },
  } satisfies RpcServerOptions;

  callerIdentity(): unknown {
    return rpcCaller()?.identity;
  }
}

/** Serves dorpc under /rpc: reached only with the client's `prefix` set to match. */
export class Prefixed extends RpcDurableObject<Env> {
  static rpcOptions = { prefix: "/rpc" } satisfies RpcServerOptions;

  ping(): string {
    return "pong";
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const routed = await routeDORequest(request, env, {
      onBeforeConnect(connect) {
        const user = new URL(connect.url).searchParams.get("user");
        return user ? withIdentity(connect, { user }) : undefined;
      },
    });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
export { LiveCounter } from "./live-objects.js";

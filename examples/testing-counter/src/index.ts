/**
 * A counter that anyone may increment and only its owner may reset, behind a Worker that turns a
 * token into the caller's identity.
 */
import { readIdentityHeader, RpcDurableObject, rpcCaller, type RpcServerOptions } from "@dorpc/rpc/server";
import { routeDORequest, withIdentity } from "@dorpc/routing";

/** Who a caller is, as the Worker's hook sets it. */
export interface Caller {
  user: string;
}

/** Tokens the Worker accepts (a real app would verify a signed token instead). */
const TOKENS: Record<string, string> = { "token-ada": "ada", "token-bob": "bob" };

export class Counter extends RpcDurableObject<Env> {
  // The identity the Worker's hook attached with withIdentity().
  static rpcOptions = { identify: readIdentityHeader } satisfies RpcServerOptions;

  increment(by = 1): number {
    const user = (rpcCaller()?.identity as Caller | undefined)?.user;
    const value = this.getValue() + by;
    this.ctx.storage.kv.put("value", value);
    // The first caller to increment owns the counter.
    if (user && this.ctx.storage.kv.get("owner") === undefined) this.ctx.storage.kv.put("owner", user);
    return value;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("value") ?? 0;
  }

  reset(): void {
    const user = (rpcCaller()?.identity as Caller | undefined)?.user;
    if (user === undefined || user !== this.ctx.storage.kv.get("owner")) {
      throw new Error(`Only the owner may reset this counter${user ? `, not ${user}` : ""}.`);
    }
    this.ctx.storage.kv.delete("value");
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const routed = await routeDORequest(request, env, {
      onBeforeConnect(connect) {
        // Browsers cannot set headers on a WebSocket: the token comes in the query string.
        const user = TOKENS[new URL(connect.url).searchParams.get("token") ?? ""];
        if (!user) return new Response("Unknown token.", { status: 401 });
        return withIdentity(connect, { user } satisfies Caller);
      },
    });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;

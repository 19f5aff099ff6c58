// docs/getting-started.md section 3, src/index.ts verbatim (its Env plus the API_TOKEN secret that
// "Securing the endpoint" adds), the schema variant of Counter, and the Worker snippets of
// "Securing the endpoint" (it must return on every path: the repo's base config has
// noImplicitReturns), "Serving a page from the Worker" and "Using another prefix".
import { RpcDurableObject, rpcMethod } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import * as v from "valibot";

export interface Env {
  COUNTER: DurableObjectNamespace<Counter>;
  API_TOKEN: string;
}

export class Counter extends RpcDurableObject<Env> {
  increment(by = 1): number {
    if (!Number.isInteger(by)) throw new RangeError(`by must be an integer, got ${by}`);
    const n = (this.ctx.storage.kv.get<number>("n") ?? 0) + by;
    this.ctx.storage.kv.put("n", n);
    return n;
  }

  getValue(): number {
    return this.ctx.storage.kv.get<number>("n") ?? 0;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeDORequest(request, env)) ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;

export class SchemaCounter extends RpcDurableObject<Env> {
  // by: number, inferred from the schema
  increment = rpcMethod(v.strictTuple([v.pipe(v.number(), v.integer())]), (by) => {
    const n = (this.ctx.storage.kv.get<number>("n") ?? 0) + by;
    this.ctx.storage.kv.put("n", n);
    return n;
  });
}

// Section 8: turn on the stack.
export class StackCounter extends RpcDurableObject<Env> {
  static rpcOptions = { exposeErrorStack: true };
  // …
}

// "Securing the endpoint"
export const secured = {
  async fetch(request: Request, env: Env): Promise<Response> {
    const routed = await routeDORequest(request, env, {
      // Browsers send Origin on WebSocket upgrades and POSTs; other origins get 403.
      allowedOrigins: ["https://app.example.com"],
      // Runs before every WebSocket upgrade and HTTP batch; return a Response to refuse it.
      onBeforeConnect: (request) => {
        const token = new URL(request.url).searchParams.get("token");
        return token === env.API_TOKEN ? undefined : new Response("Forbidden", { status: 403 });
      },
    });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;

// "Serving a page from the Worker": allow only the page's own origin.
export async function sameOrigin(request: Request, env: Env) {
  const routed = await routeDORequest(request, env, { allowedOrigins: (origin) => origin === new URL(request.url).origin });
  return routed;
}

// "Using another prefix"
export async function prefixed(request: Request, env: Env) {
  return routeDORequest(request, env, { prefix: "/rpc" });
}
export class Prefixed extends RpcDurableObject<Env> {
  static rpcOptions = { prefix: "/rpc" };
}

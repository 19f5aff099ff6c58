import { RpcDurableObject } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import type { CounterApi } from "./api.js";

interface Env {
  COUNTER: DurableObjectNamespace<Counter>;
}

export class Counter extends RpcDurableObject<Env> implements CounterApi {
  increment(by = 1): number {
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
    // The page and its socket share an origin, so only that origin may open WebSockets.
    const routed = await routeDORequest(request, env, { allowedOrigins: (origin) => origin === new URL(request.url).origin });
    return routed ?? new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;

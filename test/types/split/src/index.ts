/** The Worker side of the types-only pattern: the Durable Object implements src/api.ts. */
import type { createRpcClient, RpcClient } from "@dorpc/rpc";
import { RpcDurableObject } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";
import { assertNotAny, assertSameShape } from "../../shared/client-checks.js";
import type { CounterApi } from "./api.js";

export interface Env {
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

// The interface describes the class completely: a client typed by either has the same members.
assertNotAny<RpcClient<Counter>>();
assertSameShape<RpcClient<Counter>, RpcClient<CounterApi>>();
assertSameShape<ReturnType<typeof createRpcClient<typeof Counter>>, RpcClient<CounterApi>>();

export default {
  fetch: async (request: Request, env: Env) => (await routeDORequest(request, env)) ?? new Response("Not found", { status: 404 }),
} satisfies ExportedHandler<Env>;

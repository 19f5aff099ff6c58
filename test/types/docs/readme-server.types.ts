// README.md quick start, src/index.ts, verbatim.
import { RpcDurableObject } from "@dorpc/rpc/server";
import { routeDORequest } from "@dorpc/routing";

interface Env {
  COUNTER: DurableObjectNamespace<Counter>;
}

export class Counter extends RpcDurableObject<Env> {
  increment(by = 1) {
    const n = (this.ctx.storage.kv.get<number>("n") ?? 0) + by;
    this.ctx.storage.kv.put("n", n);
    return n;
  }
  getValue() {
    return this.ctx.storage.kv.get<number>("n") ?? 0;
  }
}

export default {
  fetch: async (request: Request, env: Env) =>
    (await routeDORequest(request, env, { prefix: "/__rpc" })) ?? new Response("Not found", { status: 404 }),
};

// A Durable Object served on accept()ed sockets (hibernation: false), for evict-live.workers.test.ts.
import { RpcDurableObject, type RpcServerOptions } from "@dorpc/rpc/server";

/** Serves dorpc on accept()ed (non-hibernatable) sockets. */
export class LiveCounter extends RpcDurableObject<Env> {
  static rpcOptions = { hibernation: false } satisfies RpcServerOptions;

  readonly instanceId = crypto.randomUUID();

  increment(by = 1): number {
    const value = (this.ctx.storage.kv.get<number>("count") ?? 0) + by;
    this.ctx.storage.kv.put("count", value);
    return value;
  }

  whoami(): string {
    return this.instanceId;
  }
}

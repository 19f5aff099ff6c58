import { RpcDurableObject, rpcMethod, type RpcServerOptions } from "@dorpc/rpc/server";
import type { Env } from "./index";

export class Ledger extends RpcDurableObject<Env> {
  static rpcOptions: RpcServerOptions = { exactlyOnce: { maxAge: 3_600_000 } }; // forget idle sessions after an hour

  add(amount: number): number {
    const total = (this.ctx.storage.kv.get<number>("total") ?? 0) + amount;
    this.ctx.storage.kv.put("total", total);
    return total; // recorded: a resend after a drop gets this answer, and add() does not run again
  }

  // Only reads: no record, a resend runs it again.
  total = rpcMethod({ readOnly: true }, () => this.ctx.storage.kv.get<number>("total") ?? 0);
}

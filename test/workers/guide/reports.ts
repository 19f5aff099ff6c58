/**
 * The cancellation snippet of docs/getting-started.md (section 9), between the guide markers: a
 * method that hands `rpcCaller().signal` to `fetch`. Compiled by the typecheck, not served.
 */
import { RpcDurableObject, rpcCaller } from "@dorpc/rpc/server";
import type { Env } from "./index";

export class Reports extends RpcDurableObject<Env> {
  // guide:start
  async report(): Promise<unknown> {
    const { signal } = rpcCaller()!; // read it before the first await
    const response = await fetch("https://stats.example.com/report", { signal });
    return response.json();
  }
  // guide:end
}

/**
 * The client page's script: the real `@dorpc/rpc` bundle, exposed as `window.dorpc` so the tests
 * can drive it with `page.evaluate`, plus the one scenario that must be compiled by the app's
 * bundler rather than written in the test: `await using`, which esbuild lowers for this page's
 * ES2022 target (support/pages.ts) as app builds do.
 */
import * as dorpc from "@dorpc/rpc";
import type { ProbeApi } from "../probe-api.js";

/** Increments inside an `await using` block; reports the client's state after the block. */
async function incrementInScope(instance: string): Promise<{ value: number; stateAfterScope: dorpc.ConnectionState }> {
  let connection: dorpc.RpcConnection;
  let value: number;
  {
    await using counter = dorpc.createRpcClient<ProbeApi>("PROBE", instance);
    connection = dorpc.rpcConnection(counter);
    value = await counter.increment();
  }
  return { value, stateAfterScope: connection.state };
}

declare global {
  interface Window {
    dorpc: typeof dorpc;
    scenarios: { incrementInScope: typeof incrementInScope };
  }
}

window.dorpc = dorpc;
window.scenarios = { incrementInScope };
document.body.dataset.ready = "client";

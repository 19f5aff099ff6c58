/**
 * The client page's script: the real `@dorpc/rpc` bundle, exposed as `window.dorpc` so the tests
 * can drive it with `page.evaluate`, plus the scenarios that must be compiled by the app's
 * bundler rather than written in the test: `using` and `await using`, which esbuild lowers for
 * this page's ES2022 target (support/pages.ts) as app builds do.
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

/**
 * Subscribes inside a `using` block: how many subscribers the object counts inside the block and
 * after it (the subscription's disposal sent the unsubscribe before the later call).
 */
async function subscribeInScope(instance: string): Promise<{ inside: number; after: number }> {
  const client = dorpc.createRpcClient<ProbeApi>("PROBE", instance);
  try {
    let inside: number;
    {
      using subscription = dorpc.subscribe(client, "news", () => {});
      await subscription.ready;
      inside = await client.subscribers("news");
    }
    return { inside, after: await client.subscribers("news") };
  } finally {
    dorpc.rpcConnection(client).close();
  }
}

declare global {
  interface Window {
    dorpc: typeof dorpc;
    scenarios: { incrementInScope: typeof incrementInScope; subscribeInScope: typeof subscribeInScope };
  }
}

window.dorpc = dorpc;
window.scenarios = { incrementInScope, subscribeInScope };
document.body.dataset.ready = "client";

// docs/getting-started.md client snippets (Node, another Worker, errors, timeouts, connection).
import { createRpcClient, httpTransport, RpcError, rpcConnection, withCallOptions } from "@dorpc/rpc";
import type { Counter } from "./guide-worker.types.js";

declare const baseUrl: string;
declare const token: string;

// In Node ≥ 22
{
  await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl: "http://127.0.0.1:8787" });

  console.log(await counter.increment(2)); // 2
  const [a, b] = await Promise.all([counter.increment(), counter.getValue()]); // one message each way
  console.log(a, b); // 3 3
}

// In another Worker
export const other = {
  async fetch(): Promise<Response> {
    const counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl: "https://my-app.example.com" });
    try {
      return Response.json({ value: await counter.increment() });
    } finally {
      counter[Symbol.dispose]();
    }
  },
} satisfies ExportedHandler;

// 8. Errors
{
  await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
  try {
    await counter.increment(1.5);
  } catch (error) {
    if (RpcError.is(error)) {
      console.error("dorpc failed:", error.code, error.message);
    } else if (error instanceof RangeError) {
      console.error("Counter refused:", error.message); // "by must be an integer, got 1.5"
    } else {
      throw error;
    }
  }

  // 9.
  // A longer timeout for one slow call.
  const value = await withCallOptions(counter.getValue(), { timeout: 120_000 });
  void value;

  const controller = new AbortController();
  const pending = withCallOptions(counter.increment(), { signal: controller.signal });
  controller.abort();
  await pending.catch(() => undefined); // aborted before its frame left: nothing was sent
}

// 10.
{
  await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
  const connection = rpcConnection(counter);
  connection.onStateChange((state) => console.log("connection:", state)); // connecting, open, reconnecting, …
  await connection.waitForOpen();
}

// Securing the endpoint: the client side
createRpcClient<Counter>("COUNTER", "room-1", { query: { token } });
httpTransport({ headers: { Authorization: `Bearer ${token}` } });
// Using another prefix
createRpcClient<Counter>("COUNTER", "room-1", { baseUrl, prefix: "/rpc" });

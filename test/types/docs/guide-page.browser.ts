// docs/getting-started.md browser snippets: "In a browser", src/page.ts, Safari; api.md pagehide.
import { createRpcClient, rpcConnection } from "@dorpc/rpc";
import type { CounterApi } from "./browser-api.types.js";

{
  const counter = createRpcClient<CounterApi>("COUNTER", "room-1");

  document.querySelector("button")!.addEventListener("click", async () => {
    document.querySelector("output")!.textContent = String(await counter.increment());
  });
}
{
  const counter = createRpcClient<CounterApi>("COUNTER", "room-1"); // connects to location.origin
  document.querySelector("button")!.addEventListener("click", async () => {
    document.querySelector("output")!.value = String(await counter.increment());
  });
  window.addEventListener("pagehide", () => rpcConnection(counter).close());
}
{
  const counter = createRpcClient<CounterApi>("COUNTER", "room-1");
  try {
    await counter.increment();
  } finally {
    rpcConnection(counter).close();
  }
}

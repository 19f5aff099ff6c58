/**
 * The client: plain Node (22 and later have a global WebSocket). `npm run client` runs it
 * against BASE_URL (default http://127.0.0.1:8787, where `npx wrangler dev` listens);
 * `npm start` runs it against a Worker it starts itself (start.ts).
 */
import { createRpcClient, RpcError } from "@dorpc/rpc";
import { pathToFileURL } from "node:url";
import type { InventoryApi } from "./api.js";

export async function main(baseUrl: string): Promise<void> {
  await using inventory = createRpcClient<InventoryApi>("INVENTORY", "warehouse-1", { baseUrl });

  // Calls awaited together travel in one WebSocket message.
  await Promise.all([inventory.add("bolts", 40), inventory.add("nuts", 25)]);
  const stock = await inventory.take("bolts", 15);
  console.log("stock:", Object.fromEntries(stock)); // a Map, as the object returned it

  try {
    await inventory.take("nuts", 100);
  } catch (error) {
    // Errors thrown by the object come back as their class; dorpc's own failures are RpcError.
    if (error instanceof RangeError) console.log("refused:", error.message);
    else if (RpcError.is(error)) console.log("dorpc failed:", error.code, error.message);
    else throw error;
  }

  const { changed } = await inventory.report();
  console.log("last change is a Date:", changed instanceof Date);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main(process.env.BASE_URL ?? "http://127.0.0.1:8787");
}

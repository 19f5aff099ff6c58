/**
 * The client: plain Node (22 and later have a global WebSocket). `npm run client` runs it
 * against BASE_URL (default http://127.0.0.1:8787, where `npx wrangler dev` listens);
 * `npm start` runs it against a Worker it starts itself (start.ts).
 */
import { createRpcClient, httpTransport, RpcError } from "@dorpc/rpc";
import { pathToFileURL } from "node:url";
import type { InventoryApi } from "./api.js";

export async function main(baseUrl: string): Promise<void> {
  await using inventory = createRpcClient<InventoryApi>("INVENTORY", "warehouse-1", { baseUrl });

  // Calls made together travel in one WebSocket message.
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

  // The object calls back: restock() reports its progress through a function of this client's.
  const restocked = await inventory.restock(
    [
      ["bolts", 10],
      ["washers", 100],
    ],
    (done, total) => console.log(`restocking: ${done}/${total}`),
  );
  console.log("restocked:", Object.fromEntries(restocked));

  // The same calls as HTTP batches: no socket to open or keep, each turn's calls one POST.
  await using overHttp = createRpcClient<InventoryApi>("INVENTORY", "warehouse-2", { baseUrl, transport: httpTransport() });
  await Promise.all([overHttp.add("bolts", 40), overHttp.add("nuts", 25)]);
  console.log("over HTTP, stock:", Object.fromEntries(await overHttp.take("bolts", 15)));
  const refused = await overHttp.take("nuts", 100).catch((error: unknown) => error);
  console.log("over HTTP, refused:", refused instanceof RangeError && refused.message);
  // Over HTTP the object cannot call this client back: restock() fails before it changes anything.
  const noCallback = await overHttp.restock([["bolts", 10]], () => undefined).catch((error: unknown) => error);
  const code = RpcError.is(noCallback) ? noCallback.code : String(noCallback);
  console.log(`over HTTP, restock: ${code}, bolts still ${await overHttp.count("bolts")}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main(process.env.BASE_URL ?? "http://127.0.0.1:8787");
}

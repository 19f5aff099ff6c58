// README.md quick start client.ts, and the hero snippet.
import { createRpcClient } from "@dorpc/rpc";
import type { Counter } from "./readme-server.types.js";

await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl: "http://127.0.0.1:8787" });
console.log(await counter.increment(2)); // 2
console.log(await counter.getValue()); // 2

declare const baseUrl: string;
{
  await using counter = createRpcClient<Counter>("COUNTER", "room-1", { baseUrl });
  await counter.increment(2); // Promise<number>, one round trip
}

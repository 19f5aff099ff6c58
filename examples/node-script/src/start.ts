/**
 * `npm start`: starts the Worker in this folder on a free local port with wrangler's Node API
 * (storage in memory, so every run starts from an empty inventory), runs the client against
 * it, and stops the Worker. Against a deployed Worker, run client.ts with BASE_URL instead.
 */
import { unstable_dev } from "wrangler";
import { main } from "./client.js";

const worker = await unstable_dev("src/worker.ts", {
  config: "wrangler.toml",
  ip: "127.0.0.1",
  persist: false,
  logLevel: "warn",
  experimental: { disableExperimentalWarning: true },
});
try {
  await main(`http://${worker.address}:${worker.port}`);
} finally {
  await worker.stop();
}

import { createRpcClient, rpcConnection } from "@dorpc/rpc";
import type { CounterApi } from "./api.js";

// Served by the same Worker, so the client connects to location.origin: no baseUrl needed.
const counter = createRpcClient<CounterApi>("COUNTER", "web-page");
const connection = rpcConnection(counter);

const button = document.querySelector<HTMLButtonElement>("#increment")!;
const output = document.querySelector<HTMLOutputElement>("#value")!;
const state = document.querySelector<HTMLElement>("#state")!;

connection.onStateChange((next) => {
  state.textContent = next;
});

button.addEventListener("click", async () => {
  output.value = String(await counter.increment());
});

output.value = String(await counter.getValue());
button.disabled = false;

// close() rather than counter[Symbol.dispose](): Safari has no Symbol.dispose.
window.addEventListener("pagehide", () => connection.close());

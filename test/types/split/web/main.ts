/**
 * Browser code of the types-only pattern: it imports the API interface, never the Worker's
 * src/index.ts, so no Workers type (DurableObjectNamespace, ctx) enters this program.
 */
import { createRpcClient, rpcConnection } from "@dorpc/rpc";
import { assertNotAny } from "../../shared/client-checks.js";
import type { CounterApi } from "../src/api.js";

const counter = createRpcClient<CounterApi>("COUNTER", "room-1");
assertNotAny<typeof counter>();

export async function onClick(output: HTMLOutputElement): Promise<void> {
  output.value = String(await counter.increment());
  // @ts-expect-error: increment takes a number
  await counter.increment("1");
}

window.addEventListener("pagehide", () => rpcConnection(counter).close());

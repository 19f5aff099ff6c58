/**
 * For configs whose lib declares `Symbol.dispose` / `Symbol.asyncDispose` (`ESNext.Disposable`
 * or `@types/node`): the client works with `using` / `await using` and has both members.
 */
import { createRpcClient } from "@dorpc/rpc";
import { assertNotAny } from "../shared/client-checks.js";
import type { CounterApi } from "../shared/counter-api.js";

const options = { baseUrl: "http://127.0.0.1:8787" };

export async function scoped(): Promise<number> {
  await using counter = createRpcClient<CounterApi>("COUNTER", "room-1", options);
  using other = createRpcClient<CounterApi>("COUNTER", "room-2", options);
  assertNotAny<typeof counter>();
  return (await counter.increment()) + (await other.getValue());
}

const client = createRpcClient<CounterApi>("COUNTER", "room-1", options);
const disposed: void = client[Symbol.dispose]();
const asyncDisposed: Promise<void> = client[Symbol.asyncDispose]();
// @ts-expect-error: dispose takes no argument
client[Symbol.dispose](true);

void [disposed, asyncDisposed];

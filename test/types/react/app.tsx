/**
 * `@dorpc/react` in a Vite-style React app (no ESNext.Disposable): the hooks keep the client's
 * type (never `any`), and misuse does not compile.
 */
import { useConnectionState, useRpcClient } from "@dorpc/react";
import type { ConnectionState, RpcClient } from "@dorpc/rpc";
import { assertNotAny, assertSame } from "../shared/client-checks.js";
import type { CounterApi } from "../shared/counter-api.js";

export function Counter({ room }: { room: string }) {
  const counter = useRpcClient<CounterApi>("COUNTER", room, { baseUrl: "https://app.example.com", query: { token: "t" } });
  assertNotAny<typeof counter>();
  assertSame<typeof counter, RpcClient<CounterApi>>();
  const state = useConnectionState(counter);
  assertSame<typeof state, ConnectionState>();

  // @ts-expect-error: increment takes a number
  counter.increment("1");
  // @ts-expect-error: options are checked
  useRpcClient<CounterApi>("COUNTER", room, { timeout: "1s" });
  // @ts-expect-error: useConnectionState needs a client object
  useConnectionState("COUNTER");

  return (
    <button type="button" disabled={state !== "open"} onClick={() => void counter.increment()}>
      +1
    </button>
  );
}

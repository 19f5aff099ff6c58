/** `useConnectionState`: a client's connection state as React state. */
import { type ConnectionState, rpcConnection } from "@dorpc/rpc";
import { useCallback, useMemo, useSyncExternalStore } from "react";

/**
 * The connection state of `client` (`"idle"`, `"connecting"`, `"open"`, `"reconnecting"` or
 * `"disposed"`), re-rendering the component on every change. Reads
 * `rpcConnection(client).state` and subscribes with `onStateChange`, through
 * `useSyncExternalStore`, so a change is never missed between render and subscription. During
 * server rendering it is `"idle"`: nothing connects on the server.
 */
export function useConnectionState(client: object): ConnectionState {
  const connection = useMemo(() => rpcConnection(client), [client]);
  const subscribe = useCallback((onChange: () => void) => connection.onStateChange(onChange), [connection]);
  const read = useCallback(() => connection.state, [connection]);
  return useSyncExternalStore(subscribe, read, serverState);
}

const serverState = (): ConnectionState => "idle";

/**
 * `@dorpc/react`: React hooks over `@dorpc/rpc`. Both packages must resolve to one copy of
 * `@dorpc/rpc` (it is a peer dependency), so that clients made here and `rpcConnection` in the
 * app see the same connections.
 *
 * Everything not exported here is internal and may change without notice.
 */

/** A client owned by the calling component: closed on unmount, one client under StrictMode. */
export { useRpcClient } from "./use-rpc-client.js";

/** A client's connection state, re-rendering on every change. */
export { useConnectionState } from "./use-connection-state.js";

// ─── Subscriptions: not yet ──────────────────────────────────────────────────────────────────
// A `useRpcSubscription(client, …)` hook belongs here once the connection core can push values
// from the Durable Object to the client (issue 13; being built in packages/rpc/src/session.ts).
// It will subscribe in an effect, hold the latest value for `useSyncExternalStore`, and cancel
// the subscription on unmount. Nothing is exported for it until server push exists.

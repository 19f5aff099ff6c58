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
// `useSubscription(client, topic, …)` belongs here, over `subscribe(client, topic, onEvent,
// options)` of @dorpc/rpc (server push, issue 11, just landed in the connection core): subscribe
// in an effect keyed by client and topic, keep the latest event (and its cursor) for
// `useSyncExternalStore`, call `subscription.close()` on cleanup (deferred like
// `useRpcClient`'s close, so StrictMode does not resubscribe), and surface `onResync`. Nothing is
// exported for it yet: it waits for the push API to settle and for a browser-tier test against
// an object that publishes.

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

/**
 * A component's subscription to a topic of its Durable Object: every event once, in order, to a
 * handler, across reconnects; closed on unmount; one subscription under StrictMode.
 */
export { useSubscription, type SubscriptionState, type TopicEvent, type TopicName } from "./use-subscription.js";

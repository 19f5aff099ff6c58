/**
 * `@dorpc/rpc`: the browser-safe entry (no `cloudflare:*` imports). Runs in browsers,
 * Node ≥ 22 and Workers. The Durable Object side is `@dorpc/rpc/server`.
 *
 * Everything not exported here is internal and may change without notice.
 */

/**
 * Creates a typed client for one Durable Object instance. Property reads and calls build an
 * operation chain; awaiting it sends the chain in one round trip over a WebSocket opened on
 * the first call.
 */
export { createRpcClient, withCallOptions, type RpcClientOptions } from "./client.js";

/** Dispose a client or a stub where `Symbol.dispose` does not exist (Safari). */
export { rpcDispose } from "./client.js";

/** Subscribe to a topic of the Durable Object: ordered, exactly-once events that survive reconnects and hibernation. */
export { subscribe, type TopicEvent, type TopicName } from "./client.js";
export type { EventInfo, ResyncInfo, SubscribeOptions, Subscription } from "./subscriptions.js";

/**
 * Mark a class whose instances travel by reference: pass one as an argument (or expose it) and
 * the other end gets a stub whose calls come back to it.
 */
export { RpcTarget } from "./rpc-target.js";

/** Connection state, state changes and waiting for "open", for one client. */
export { rpcConnection, type RpcConnection } from "./client.js";

/** The library's own failures, told apart by `code`; `INVALID_ARGUMENT` ones list their `issues`. */
export { RpcError, RPC_ERROR_CODES, type RpcErrorCode, type RpcIssue } from "./errors.js";

/**
 * Declare a method with a Standard Schema (Zod, Valibot, ArkType, …) for its arguments and
 * result: checked on the receiving end before it runs. Also for `RpcTarget`s and exposed
 * objects shared with the client; the Durable Object side has it from `@dorpc/rpc/server`.
 */
export { rpcMethod, type ArgsSchema, type MethodSpec, type RpcMethod } from "./rpc-method.js";
export type { StandardSchemaV1 } from "./standard-schema.js";
/** The client's `validate` option: argument schemas checked before a call is sent. */
export type { ClientSchemas } from "./client-schemas.js";

/** Standalone structured-clone encoding with dorpc's wire format (validated on decode). */
export { encode, encodeAsync, decode, type EncodeOptions } from "./value.js";

/** Receive-side limits and their defaults. */
export { DEFAULT_LIMITS, type RpcLimits } from "./limits.js";

/** The transport interface, for custom channels (and its WebSocket implementation's types). */
export type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

/** HTTP batches instead of a WebSocket: `transport: httpTransport()`. */
export { httpTransport, type FetchLike, type HttpTransportOptions } from "./http-transport.js";
export type { WebSocketConstructor, WebSocketLike } from "./websocket-transport.js";
export type { ConnectionState, ReconnectOptions, HeartbeatOptions } from "./session.js";
export type { CallOptions } from "./call-options.js";

/** Client types: what `createRpcClient<T>` exposes. */
export type {
  RpcClient,
  RpcPromise,
  RpcStub,
  Remote,
  Arrived,
  Param,
  Params,
  Pipeline,
  Sendable,
  ReservedMember,
  StubMember,
  WithTopics,
} from "./types.js";

/**
 * `@dorpc/rpc/server`: the Durable Object side. Runs in workerd (imports `cloudflare:workers`).
 *
 * Everything not exported here is internal and may change without notice.
 */

/**
 * Base class, mixin and building blocks for serving dorpc from a Durable Object over
 * hibernatable WebSockets.
 */
export { RpcDurableObject, withRpc } from "./rpc-durable-object.js";
export { handleRpcRequest, handleRpcMessage, handleRpcClose, watchRpcStorage } from "./durable-object.js";

/**
 * The object's way back to its clients: a broadcast to all (or some) of them, calls to one with
 * its answer, and topics with events that survive reconnects and hibernation. `RpcDurableObject`
 * has them as `this.clients()`, `this.client(who)` and `this.publish(topic, event)`.
 */
export { rpcClients, rpcClient, rpcPublish } from "./durable-object.js";
export type { Broadcast, ClientFilter, ClientInfo, ClientRef, ClientStub } from "./push.js";
export type { TopicOptions } from "./topics-options.js";
export type { SubscribeResult } from "./topics.js";

/**
 * Who is calling: `rpcCaller()` during a method; the identity comes from `options.identify`
 * at connect time (e.g. `readIdentityHeader`, set by a `routeDORequest` hook with `withIdentity`).
 */
export { rpcCaller, type RpcCaller } from "./rpc-caller.js";
export { readIdentityHeader, IDENTITY_HEADER, RPC_SOCKET_TAG, type RpcAttachment } from "./socket-state.js";

/** What dorpc holds in memory per socket (references, calls in progress): for diagnostics. */
export { rpcSocketInfo, type RpcSocketInfo } from "./durable-object.js";

/**
 * Mark a class whose instances travel by reference: return one (or pass one) and the other end
 * gets a stub whose calls come back to it.
 */
export { RpcTarget } from "./rpc-target.js";

/**
 * Declare a method with a Standard Schema (Zod, Valibot, ArkType, …) for its arguments (and
 * optionally its result), `readOnly` or `record: false`: `increment = rpcMethod(schema, (by) => …)`.
 * The arguments are checked after decoding and before the method runs; it gets the schema's
 * output. `requireSchemas: true` in the options makes a schema mandatory for every method.
 */
export { rpcMethod, type ArgsSchema, type MethodSpec, type RpcMethod } from "./rpc-method.js";
export type { StandardSchemaV1 } from "./standard-schema.js";

/** Server options and the access policy's option type. */
export type { RpcServerOptions } from "./dispatcher.js";
export type { AccessOptions } from "./access-options.js";

/** A client's function or object the object received by reference (a callback). */
export type { RpcStub } from "./types.js";

/** Shared with the client entry, re-exported for convenience on the server. */
export { RpcError, type RpcErrorCode, type RpcIssue } from "./errors.js";
export { DEFAULT_LIMITS, type RpcLimits } from "./limits.js";

/**
 * `@dorpc/rpc/server`: the Durable Object side. Runs in workerd (imports `cloudflare:workers`).
 *
 * Everything not exported here is internal and may change without notice.
 */

/**
 * Base class, mixin and building blocks for serving dorpc from a Durable Object over
 * hibernatable WebSockets.
 */
export {
  RpcDurableObject,
  withRpc,
  handleRpcRequest,
  handleRpcMessage,
  handleRpcClose,
  rpcSocketInfo,
  type RpcSocketInfo,
  RPC_SOCKET_TAG,
  type RpcAttachment,
} from "./durable-object.js";

/**
 * Who is calling: `rpcCaller()` during a method; the identity comes from `options.identify`
 * at connect time (e.g. `readIdentityHeader`, set by a `routeDORequest` hook with `withIdentity`).
 */
export { rpcCaller, readIdentityHeader, IDENTITY_HEADER, type RpcCaller } from "./durable-object.js";

/** Mark a class whose public methods may be called through a chain (`client.users.get("a")`). */
export { RpcTarget } from "./rpc-target.js";

/** Server options and the access policy's option type. */
export type { RpcServerOptions } from "./dispatcher.js";
export type { AccessOptions } from "./access.js";

/** Shared with the client entry, re-exported for convenience on the server. */
export { RpcError, type RpcErrorCode } from "./errors.js";
export { DEFAULT_LIMITS, type RpcLimits } from "./limits.js";

/** A client's function or object the object received by reference (a callback): see `RpcStub`. */
export type { RpcStub } from "./types.js";

/**
 * @dorpc/routing: route `/{prefix}/{binding}/{instance}[/rest]` requests from a Worker to
 * Cloudflare Durable Objects, with auth hooks, a WebSocket origin allowlist and CORS.
 *
 * Uses only Workers globals (no `cloudflare:*` imports), so it also runs, and is tested, in Node.
 */

/**
 * Forwards a request under the prefix (default `/__rpc`) to the Durable Object named by its
 * `{binding}` and `{instance}` segments and resolves to its response; resolves to `undefined`
 * for paths outside the prefix. Inside it, an unknown binding is a 404, a missing or invalid
 * instance a 400, an ambiguous binding a 500. Throws a `RoutingError` (code `BAD_OPTION`)
 * synchronously when `options` are invalid.
 */
export { routeDORequest } from "./route.js";

/** The prefix used when `RouteOptions.prefix` is not given: `"/__rpc"`. */
export { DEFAULT_PREFIX } from "./route.js";

/** Longest instance name `routeDORequest` accepts (256), counted after percent-decoding. */
export { MAX_INSTANCE_LENGTH } from "./route.js";

/** Options for `routeDORequest`: prefix, WebSocket origin allowlist, CORS and hooks. */
export type { RouteOptions } from "./route.js";

/** What a hook is told: the env key of the binding, the decoded instance, the namespace and env. */
export type { RouteContext } from "./route.js";

/** The signature of `onBeforeConnect` and `onBeforeRequest`. */
export type { RouteHook } from "./route.js";

/** What a hook may return: a Response to block, a Request to replace, or nothing to continue. */
export type { RouteHookResult } from "./route.js";

/** CORS settings for requests inside the prefix (`RouteOptions.cors`). */
export type { CorsOptions } from "./cors.js";

/**
 * The env key holding the Durable Object namespace a path segment names (exactly, or a
 * lowercase kebab segment via its SCREAMING_SNAKE, PascalCase or camelCase spelling), or
 * `undefined`. Throws a `RoutingError` with code `AMBIGUOUS_BINDING` when several keys match.
 * For Workers that parse their own URLs but want the same binding names.
 */
export { resolveBinding } from "./binding.js";

/** True for a value with the methods of a `DurableObjectNamespace` (how bindings are recognised). */
export { isDurableObjectNamespace } from "./binding.js";

/** The error thrown for invalid options and hook results; match on `code`. */
export { RoutingError } from "./errors.js";

/** Every code a `RoutingError` can carry. */
export { ROUTING_ERROR_CODES } from "./errors.js";

/** One of the `ROUTING_ERROR_CODES`. */
export type { RoutingErrorCode } from "./errors.js";

/**
 * Tell the Durable Object who is calling: return `withIdentity(request, { user })` from
 * `onBeforeConnect`. `routeDORequest` strips client-sent copies of `IDENTITY_HEADER`, so only
 * hooks can set it. On the object, `identify: readIdentityHeader` (from `@dorpc/rpc/server`)
 * stores it with the socket and `rpcCaller()` returns it during calls.
 */
export { withIdentity, IDENTITY_HEADER } from "./route.js";

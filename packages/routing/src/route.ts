/**
 * `routeDORequest`: forwards `/{prefix}/{binding}/{instance}[/rest]` to a Durable Object.
 *
 * Order of work for a request inside the prefix, cheapest and least revealing first:
 * CORS preflight → WebSocket origin check → binding → instance → hook → forward. Every
 * response produced inside the prefix (the router's errors, a hook's Response, the stub's
 * response) then gets the CORS headers, except WebSocket upgrade responses, which are returned
 * untouched because rebuilding a 101 response would detach its WebSocket.
 */
import { lookupBinding } from "./binding.js";
import { compileCors, isPreflight, preflightResponse, withCors, type CompiledCors, type CorsOptions } from "./cors.js";
import { RoutingError } from "./errors.js";
import { compileOriginPolicy, describe, type OriginMatcher } from "./origin.js";
import { quote, showPath, textResponse } from "./response.js";

/** The prefix used when `RouteOptions.prefix` is not given. */
export const DEFAULT_PREFIX = "/__rpc";

/** Longest instance name accepted, in UTF-16 code units after percent-decoding. */
export const MAX_INSTANCE_LENGTH = 256;

/** What the request is about, passed to the hooks. */
export interface RouteContext<Env extends object = object> {
  /** The env key of the Durable Object binding (e.g. `"MY_COUNTER"`), not the path segment. */
  readonly binding: string;
  /** The percent-decoded `{instance}` segment: an instance name, or a 64-hex id in lower case (as `ctx.id.toString()` spells it). */
  readonly instance: string;
  /** The Durable Object namespace `binding` refers to. */
  readonly namespace: DurableObjectNamespace;
  /** The env object passed to `routeDORequest`. */
  readonly env: Env;
}

/** `Response`: send it instead (blocks). `Request`: forward it instead. Nothing: forward as is. */
export type RouteHookResult = Response | Request | undefined | void;

/** A hook run before a request is forwarded; may be async. Exceptions propagate to the caller. */
export type RouteHook<Env extends object = object> = (
  request: Request,
  ctx: RouteContext<Env>,
) => RouteHookResult | Promise<RouteHookResult>;

/** Options for `routeDORequest`. Validated once per options object; do not mutate after use. */
export interface RouteOptions<Env extends object = object> {
  /** Path prefix owning the routes. Default `"/__rpc"`; a leading slash is added and trailing slashes removed. */
  prefix?: string;
  /**
   * Origins allowed to connect (cross-site WebSocket hijacking protection): a WebSocket upgrade,
   * or an HTTP batch (a `POST` to exactly `{prefix}/{binding}/{instance}`), with an `Origin`
   * header that is not allowed gets 403. Unset: any origin may connect.
   */
  allowedOrigins?: readonly string[] | ((origin: string) => boolean);
  /**
   * With `allowedOrigins`, also refuse (403) connections (upgrades, HTTP batches) without an `Origin` header.
   * Default `false`, because non-browser clients usually send none.
   */
  requireOrigin?: boolean;
  /** CORS for HTTP requests inside the prefix. Default off. */
  cors?: false | CorsOptions;
  /**
   * Runs when a client connects, after the origin check: for WebSocket upgrades, and for HTTP
   * batches (a `POST` to exactly `{prefix}/{binding}/{instance}`).
   */
  onBeforeConnect?: RouteHook<Env>;
  /** Runs for every other request, except CORS preflights when `cors` is set (the router answers those). */
  onBeforeRequest?: RouteHook<Env>;
}

interface CompiledOptions {
  readonly prefix: string;
  readonly allowedOrigins: OriginMatcher | undefined;
  readonly requireOrigin: boolean;
  readonly cors: CompiledCors | undefined;
  readonly onBeforeConnect: RouteHook<object> | undefined;
  readonly onBeforeRequest: RouteHook<object> | undefined;
}

const OPTION_KEYS: readonly string[] = ["prefix", "allowedOrigins", "requireOrigin", "cors", "onBeforeConnect", "onBeforeRequest"];

// Unreserved and sub-delimiter characters plus ":" and "@": what a path segment holds without
// percent-encoding. The prefix is compared to the raw (encoded) path, so anything else would
// silently never match.
const PREFIX_SEGMENT = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]+$/;

function compilePrefix(value: unknown): string {
  if (value === undefined) return DEFAULT_PREFIX;
  if (typeof value !== "string") {
    throw new RoutingError("BAD_OPTION", `prefix must be a string such as "/__rpc", got ${describe(value)}.`);
  }
  const prefix = `/${value.replace(/^\/+/, "").replace(/\/+$/, "")}`;
  if (prefix === "/") {
    throw new RoutingError(
      "BAD_OPTION",
      `prefix ${JSON.stringify(value)} has no path segment; use one such as "/__rpc" so other paths stay with the Worker.`,
    );
  }
  for (const segment of prefix.slice(1).split("/")) {
    if (segment === "" || segment === "." || segment === ".." || !PREFIX_SEGMENT.test(segment)) {
      throw new RoutingError(
        "BAD_OPTION",
        `prefix ${JSON.stringify(value)} has the segment ${JSON.stringify(segment)}; segments must be non-empty, ` +
          `not "." or "..", and use only letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @.`,
      );
    }
  }
  return prefix;
}

function compileHook(value: unknown, name: string): RouteHook<object> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "function") {
    throw new RoutingError("BAD_OPTION", `${name} must be a function, got ${describe(value)}.`);
  }
  return value as RouteHook<object>;
}

function compileOptions(options: unknown): CompiledOptions {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new RoutingError("BAD_OPTION", `options must be an object, got ${describe(options)}.`);
  }
  const raw = options as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!OPTION_KEYS.includes(key)) {
      throw new RoutingError("BAD_OPTION", `Unknown option ${key}; known options are ${OPTION_KEYS.join(", ")}.`);
    }
  }
  const allowedOrigins = raw.allowedOrigins === undefined ? undefined : compileOriginPolicy(raw.allowedOrigins, "allowedOrigins", false);
  const requireOrigin = raw.requireOrigin ?? false;
  if (typeof requireOrigin !== "boolean") {
    throw new RoutingError("BAD_OPTION", `requireOrigin must be a boolean, got ${describe(requireOrigin)}.`);
  }
  if (requireOrigin && allowedOrigins === undefined) {
    throw new RoutingError("BAD_OPTION", `requireOrigin needs allowedOrigins: the origins an Origin header may name.`);
  }
  return {
    prefix: compilePrefix(raw.prefix),
    allowedOrigins,
    requireOrigin,
    cors: compileCors(raw.cors),
    onBeforeConnect: compileHook(raw.onBeforeConnect, "onBeforeConnect"),
    onBeforeRequest: compileHook(raw.onBeforeRequest, "onBeforeRequest"),
  };
}

const DEFAULTS = compileOptions({});
// Per options object, because validation would otherwise repeat on every request.
const compiledCache = new WeakMap<object, CompiledOptions>();

function compiled(options: unknown): CompiledOptions {
  if (options === undefined) return DEFAULTS;
  let result = typeof options === "object" && options !== null ? compiledCache.get(options) : undefined;
  if (result === undefined) {
    result = compileOptions(options);
    // compileOptions accepted it, so it is an object.
    compiledCache.set(options as object, result);
  }
  return result;
}

function isWebSocketUpgrade(request: Request): boolean {
  const upgrade = request.headers.get("Upgrade");
  return !!upgrade?.split(",").some((token) => token.trim().toLowerCase() === "websocket");
}

function isUpgradeResponse(response: Response): boolean {
  // `webSocket` exists only in the Workers runtime; `!= null` also covers its absence elsewhere.
  return response.status === 101 || response.webSocket != null;
}

/** The part of `path` after `prefix` ("" or "/…"), or undefined when `path` is outside it. */
function afterPrefix(path: string, prefix: string): string | undefined {
  if (!path.startsWith(prefix)) return undefined;
  const rest = path.slice(prefix.length);
  return rest === "" || rest.startsWith("/") ? rest : undefined;
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

const HEX_ID = /^[0-9a-f]{64}$/i;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Forwards a request under the prefix to the Durable Object it names and returns the
 * response; returns `undefined` for paths outside the prefix so the Worker can route them.
 * Throws (synchronously) a `RoutingError` when `options` are invalid.
 */
export function routeDORequest<Env extends object>(request: Request, env: Env, options?: RouteOptions<Env>): Promise<Response | undefined> {
  const settings = compiled(options);
  if (typeof env !== "object" || env === null) {
    throw new RoutingError("BAD_OPTION", `env must be the Worker's env object, got ${describe(env)}.`);
  }
  const path = new URL(request.url).pathname;
  const rest = afterPrefix(path, settings.prefix);
  if (rest === undefined) return Promise.resolve(undefined);
  return handle(request, env, settings, path, rest);
}

async function handle(request: Request, env: object, settings: CompiledOptions, path: string, rest: string): Promise<Response> {
  const { cors } = settings;
  if (cors !== undefined && isPreflight(request)) return preflightResponse(cors, request);
  const response = await dispatch(request, env, settings, path, rest);
  return cors === undefined || isUpgradeResponse(response) ? response : withCors(cors, request, response);
}

async function dispatch(request: Request, env: object, settings: CompiledOptions, path: string, rest: string): Promise<Response> {
  // A WebSocket upgrade, or a POST to exactly {prefix}/{binding}/{instance} (an HTTP batch of
  // calls): both are a client connecting, with the same Origin check and the same hook.
  const upgrade = isWebSocketUpgrade(request);
  const segments = rest.slice(1).split("/");
  const connecting = upgrade || (request.method === "POST" && segments.length === 2 && segments[1] !== "");
  const what = upgrade ? "WebSocket upgrade" : "HTTP batch";
  if (connecting && settings.allowedOrigins !== undefined) {
    const origin = request.headers.get("Origin");
    if (origin === null) {
      if (settings.requireOrigin) return textResponse(403, `${what} without an Origin header is not allowed.`);
    } else if (!settings.allowedOrigins.matches(origin)) {
      return textResponse(403, `${what} from origin ${quote(origin)} is not allowed.`);
    }
  }

  const shown = showPath(path);
  const [rawBinding = "", rawInstance = ""] = rest.slice(1).split("/", 2);
  if (rawBinding === "") {
    return textResponse(400, `Missing binding in ${shown}; expected ${settings.prefix}/{binding}/{instance}.`);
  }
  const segment = decodeSegment(rawBinding);
  if (segment === undefined) {
    return textResponse(400, `Malformed percent-encoding in binding segment ${quote(rawBinding)} of ${shown}.`);
  }
  const lookup = lookupBinding(env, segment);
  if (lookup.kind === "unknown") {
    const known = lookup.available.length > 0 ? lookup.available.join(", ") : "none";
    return textResponse(404, `Unknown binding ${quote(segment)} in ${shown}; Durable Object bindings: ${known}.`);
  }
  if (lookup.kind === "ambiguous") {
    return textResponse(
      500,
      `Ambiguous binding ${quote(segment)} in ${shown}: it matches ${lookup.candidates.join(", ")}. ` +
        `Use the exact binding name in the path, or rename one of the bindings.`,
    );
  }
  const { key: binding, namespace } = lookup;

  if (rawInstance === "") {
    return textResponse(400, `Missing instance in ${shown}; expected ${settings.prefix}/${rawBinding}/{instance}.`);
  }
  let instance = decodeSegment(rawInstance);
  if (instance === undefined) {
    return textResponse(400, `Malformed percent-encoding in instance segment ${quote(rawInstance)} of ${shown}.`);
  }
  if (instance.length > MAX_INSTANCE_LENGTH) {
    return textResponse(400, `Instance name in ${shown} is ${instance.length} characters long; the limit is ${MAX_INSTANCE_LENGTH}.`);
  }
  if (CONTROL.test(instance)) {
    return textResponse(400, `Instance name ${quote(instance)} in ${shown} contains control characters.`);
  }

  // A 64-hex instance is always an id, never a name, so one URL cannot mean two objects.
  let id: DurableObjectId | undefined;
  if (HEX_ID.test(instance)) {
    try {
      id = namespace.idFromString(instance.toLowerCase());
    } catch {
      return textResponse(400, `Instance ${quote(instance)} is not a valid Durable Object id for binding ${binding}.`);
    }
  }

  // Hooks see the id the request is routed to (as `ctx.id.toString()` spells it), so a hook that
  // refuses an object by id cannot be passed by spelling it in upper case.
  if (id !== undefined) instance = instance.toLowerCase();
  const ctx: RouteContext = Object.freeze({ binding, instance, namespace, env });
  const hookName = connecting ? "onBeforeConnect" : "onBeforeRequest";
  const hook = settings[hookName];
  // Only a hook may vouch for who is calling: a client-sent identity header never gets through.
  let forwarded = request.headers.has(IDENTITY_HEADER) ? withoutIdentity(request) : request;
  request = forwarded;
  if (hook !== undefined) {
    const result: unknown = await hook(request, ctx);
    if (result instanceof Response) return result;
    if (result instanceof Request) forwarded = result;
    else if (result !== undefined) {
      throw new RoutingError(
        "BAD_HOOK_RESULT",
        `${hookName} returned ${describe(result)}; return a Response to block, a Request to replace the request, or nothing to continue.`,
      );
    }
    if (forwarded.bodyUsed) {
      throw new RoutingError(
        "BAD_HOOK_RESULT",
        `${hookName} read the request body, so the request cannot be forwarded: read a clone (request.clone()), or return a new Request with the body you read (new Request(request, { body })).`,
      );
    }
  }

  const stub =
    id !== undefined
      ? namespace.get(id)
      : typeof namespace.getByName === "function"
        ? namespace.getByName(instance)
        : namespace.get(namespace.idFromName(instance));
  return stub.fetch(forwarded);
}

/**
 * Header that carries a caller's identity to the Durable Object (read there by
 * `readIdentityHeader` from `@dorpc/rpc/server`). `routeDORequest` strips it from incoming
 * requests; hooks set it with {@link withIdentity}.
 */
export const IDENTITY_HEADER = "X-Dorpc-Identity";

/** Largest identity, as JSON, in characters: it must fit a WebSocket attachment (2 KiB). */
const MAX_IDENTITY = 1024;

/**
 * A copy of `request` that tells the Durable Object who is calling. Return it from
 * `onBeforeConnect` after authenticating; the object stores `identity` with the socket
 * (`identify: readIdentityHeader`) and sees it through `rpcCaller()`. `identity` must be
 * JSON-serialisable and at most 1,024 characters as JSON.
 */
const NON_ASCII = /[^\x20-\x7e]/g;

export function withIdentity(request: Request, identity: unknown): Request {
  let json: string | undefined;
  try {
    json = JSON.stringify(identity);
  } catch {
    json = undefined; // BigInt, cycles
  }
  if (json === undefined) throw new RoutingError("BAD_OPTION", "withIdentity needs a JSON-serialisable identity.");
  // Header values are bytes (Latin-1 in fetch): text beyond ASCII goes as JSON escapes, which
  // JSON.parse on the object turns back into the same identity.
  json = json.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (json.length > MAX_IDENTITY) {
    throw new RoutingError("BAD_OPTION", `Identity is ${json.length} characters as JSON; the limit is ${MAX_IDENTITY}.`);
  }
  const headers = new Headers(request.headers);
  headers.set(IDENTITY_HEADER, json);
  return new Request(request, { headers });
}

function withoutIdentity(request: Request): Request {
  const headers = new Headers(request.headers);
  headers.delete(IDENTITY_HEADER);
  return new Request(request, { headers });
}

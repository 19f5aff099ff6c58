/**
 * `createTestClient`: a dorpc client whose connections are WebSocket upgrades sent through the
 * Durable Object namespace's stub (or through the test Worker's own `fetch`), inside the Workers
 * Vitest runtime. Everything else — calls, codec, limits, reconnection — is `createRpcClient`'s.
 *
 * Each client is registered with what the helpers (eviction, storage, dropping the connection)
 * need: the namespace, the object's id and the transport's record of connections.
 */
import { createRpcClient, type RpcClient, type RpcClientOptions } from "@dorpc/rpc";
import { IDENTITY_HEADER } from "@dorpc/rpc/server";
import { env as workerEnv } from "cloudflare:workers";
import { describe, TestingError } from "./errors.js";
import { register } from "./registry.js";
import { upgradeTransport, type UpgradeFetch } from "./upgrade-transport.js";

/** The largest identity `readIdentityHeader` accepts, in characters of JSON (not exported by `@dorpc/rpc/server`). */
const MAX_IDENTITY = 1024;

const DEFAULT_PREFIX = "/__rpc";

/** A Worker to connect through: `SELF` from `cloudflare:test`, or `exports.default` from `cloudflare:workers`. */
export interface WorkerFetcher {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
}

/**
 * Options for {@link createTestClient}: every `createRpcClient` option except the ones that
 * choose a network connection (`baseUrl`, `WebSocket`, `transport`), plus test-only ones.
 */
export interface TestClientOptions<T = unknown> extends Omit<RpcClientOptions<T>, "baseUrl" | "WebSocket" | "transport"> {
  /**
   * Connect as this identity: sent as JSON in the `X-Dorpc-Identity` header, which is what
   * `readIdentityHeader` reads. It only has an effect on objects configured with
   * `identify: readIdentityHeader` (the header `withIdentity` sets behind `routeDORequest`); for
   * another scheme send what your `identify` reads with `headers` or `query`. Not allowed with
   * `worker`: `routeDORequest` strips the header from incoming requests.
   */
  identity?: unknown;
  /** Extra headers on every upgrade request (e.g. `Authorization`, cookies, `Origin`). */
  headers?: HeadersInit;
  /**
   * The `{binding}` path segment of the connect URL. Default: the name under which `namespace`
   * is bound in the test Worker's `env` (found by identity), or `"object"` when it is not there.
   * It matters only to a `fetch` that reads it, or with `worker` (where `routeDORequest` uses it
   * to pick the namespace; kebab-case spellings work there too).
   */
  binding?: string;
  /**
   * Connect through this Worker's `fetch` (e.g. `SELF`, or `exports.default` from
   * `cloudflare:workers`) instead of straight to the object, so its routing and hooks
   * (`routeDORequest`, `onBeforeConnect`, `withIdentity`) are part of the test. The Worker must
   * route `{prefix}/{binding}/{instance}` to `namespace`.
   */
  worker?: WorkerFetcher;
}

/**
 * Phantom marker carrying the object type on a test client, so helpers such as
 * `runInObject(client, (instance) => …)` infer it. Never present at run time.
 */
declare const objectType: unique symbol;

/** A dorpc client made by {@link createTestClient}: an `RpcClient<T>` the testing helpers accept. */
export type TestClient<T> = RpcClient<T> & { readonly [objectType]: T };

/** Test-friendly reconnection: no jittered 250 ms wait before each retry. Overridden by `options.reconnect`. */
const TEST_RECONNECT = { initialDelay: 5, maxDelay: 200, jitter: 0, resetAfter: 0 } as const;

/** `value` percent-encoded as one URL path segment; a lone surrogate cannot be, and is refused. */
function segment(what: string, value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    throw new TestingError(
      "BAD_OPTION",
      `${what} ${JSON.stringify(value)} holds a lone surrogate (not well-formed Unicode), so it cannot be a URL path segment.`,
    );
  }
}

/** Checks that `value` has the methods of a `DurableObjectNamespace`. */
function isNamespace(value: unknown): value is DurableObjectNamespace {
  const candidate = value as Partial<DurableObjectNamespace> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.idFromName === "function" &&
    typeof candidate.idFromString === "function" &&
    typeof candidate.get === "function"
  );
}

function isObjectId(value: unknown): value is DurableObjectId {
  const candidate = value as Partial<DurableObjectId> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.equals === "function" &&
    typeof candidate.toString === "function"
  );
}

/** The env key holding `namespace` in the test Worker, if any. */
function bindingOf(namespace: DurableObjectNamespace): string | undefined {
  for (const [key, value] of Object.entries(workerEnv as Record<string, unknown>)) {
    if (value === namespace) return key;
  }
  return undefined;
}

const NETWORK_OPTIONS = ["baseUrl", "WebSocket", "transport"] as const;

/**
 * A dorpc client for the Durable Object `name` of `namespace`, inside the Workers Vitest pool
 * (`@cloudflare/vitest-plugin`): each connection is a WebSocket upgrade sent through the
 * namespace's stub, so no network and no `wrangler dev` are involved, and the object accepts the
 * socket exactly as in production (hibernation included).
 *
 * `name` is a name (`namespace.idFromName(name)`) or a `DurableObjectId` of this namespace. (With
 * `worker`, a name is read as `routeDORequest` reads the URL: 64 hex digits, in either case, are
 * an id.) The type of the object is inferred from a typed namespace
 * (`DurableObjectNamespace<Counter>`) or given: `createTestClient<Counter>(env.COUNTER, "room-1")`.
 * Like any dorpc client it connects on its first call; dispose it (`using`) at the end of the test.
 *
 * Reconnection defaults to `{ initialDelay: 5, maxDelay: 200, jitter: 0, resetAfter: 0 }` so that tests do not
 * wait out production backoff; pass `reconnect` to test your own settings.
 *
 * ```ts
 * import { env } from "cloudflare:workers";
 * import { createTestClient } from "@dorpc/testing";
 *
 * using counter = createTestClient(env.COUNTER, "room-1");
 * expect(await counter.increment(2)).toBe(2);
 * ```
 *
 * @throws {TestingError} `BAD_OPTION` when `namespace` is not a Durable Object namespace, `name`
 *   is neither a non-empty string nor an id, or a test-only option is invalid.
 * @throws {RpcError} `BAD_OPTION` when an option passed on to `createRpcClient` is invalid.
 */
export function createTestClient<T extends Rpc.DurableObjectBranded>(
  namespace: DurableObjectNamespace<T>,
  name: string | DurableObjectId,
  options?: TestClientOptions<NoInfer<T>>,
): TestClient<T>;
export function createTestClient<T>(
  // biome-ignore lint/suspicious/noExplicitAny: DurableObjectNamespace is invariant in its parameter; `any` accepts every namespace, typed or not
  namespace: DurableObjectNamespace<any>,
  name: string | DurableObjectId,
  options?: TestClientOptions<T>,
): TestClient<T>;
export function createTestClient<T>(
  // biome-ignore lint/suspicious/noExplicitAny: as above
  namespace: DurableObjectNamespace<any>,
  name: string | DurableObjectId,
  options: TestClientOptions<T> = {},
): TestClient<T> {
  if (!isNamespace(namespace)) {
    throw new TestingError(
      "BAD_OPTION",
      `createTestClient needs a Durable Object namespace binding (e.g. env.COUNTER) as its first argument, got ${describe(namespace)}.`,
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new TestingError("BAD_OPTION", `createTestClient options must be an object, got ${describe(options)}.`);
  }
  for (const key of NETWORK_OPTIONS) {
    if (key in options) {
      throw new TestingError(
        "BAD_OPTION",
        `createTestClient does not take options.${key}: it always connects through the namespace stub (or options.worker).`,
      );
    }
  }
  const { identity, headers: givenHeaders, binding: givenBinding, worker, ...clientOptions } = options;

  let id: DurableObjectId;
  let instance: string;
  if (typeof name === "string") {
    if (name === "") throw new TestingError("BAD_OPTION", "createTestClient needs a non-empty instance name as its second argument.");
    id = worker && HEX_ID.test(name) ? idFromHex(namespace, name) : namespace.idFromName(name);
    instance = name;
  } else if (isObjectId(name)) {
    try {
      // An id's hex string parses only in its own namespace: refuse a foreign id now rather than
      // on the first call.
      (namespace as DurableObjectNamespace).idFromString(name.toString());
    } catch (error) {
      throw new TestingError(
        "BAD_OPTION",
        `The DurableObjectId ${name.toString()} is not an id of this namespace: ${String((error as Error)?.message ?? error)}`,
        {
          cause: error,
        },
      );
    }
    id = name;
    // An id made from a name keeps it; the hex form names the same object everywhere else.
    instance = worker ? name.toString() : (name.name ?? name.toString());
  } else {
    throw new TestingError(
      "BAD_OPTION",
      `createTestClient needs an instance name (string) or a DurableObjectId as its second argument, got ${describe(name)}.`,
    );
  }

  const binding = givenBinding ?? bindingOf(namespace) ?? "object";
  if (typeof binding !== "string" || binding === "" || binding.includes("/")) {
    throw new TestingError("BAD_OPTION", `options.binding must be a non-empty string without "/", got ${describe(binding)}.`);
  }
  if (worker !== undefined && typeof (worker as Partial<WorkerFetcher> | null)?.fetch !== "function") {
    throw new TestingError(
      "BAD_OPTION",
      `options.worker must be a Worker to fetch through (SELF, or exports.default from "cloudflare:workers"), got ${describe(worker)}.`,
    );
  }

  let headers: Headers;
  try {
    headers = new Headers(givenHeaders);
  } catch (error) {
    throw new TestingError("BAD_OPTION", `options.headers is not valid HeadersInit: ${String((error as Error)?.message ?? error)}`, {
      cause: error,
    });
  }
  if (worker && headers.has(IDENTITY_HEADER)) {
    throw new TestingError(
      "BAD_OPTION",
      `options.headers cannot carry ${IDENTITY_HEADER} with options.worker: routeDORequest removes it from incoming requests, so the object would see no identity. Authenticate the way your Worker's onBeforeConnect hook expects (options.headers or options.query) and let it call withIdentity.`,
    );
  }
  if (identity !== undefined) {
    if (worker) {
      throw new TestingError(
        "BAD_OPTION",
        "options.identity cannot be used with options.worker: routeDORequest removes X-Dorpc-Identity from incoming requests. Authenticate the way your Worker's onBeforeConnect hook expects (options.headers or options.query) and let it call withIdentity.",
      );
    }
    if (headers.has(IDENTITY_HEADER)) {
      throw new TestingError("BAD_OPTION", `Give the identity either as options.identity or as the ${IDENTITY_HEADER} header, not both.`);
    }
    headers.set(IDENTITY_HEADER, identityJson(identity));
  }

  const prefix = clientOptions.prefix ?? DEFAULT_PREFIX;
  let query = "";
  try {
    query = clientOptions.query ? `?${new URLSearchParams(clientOptions.query).toString()}` : "";
  } catch (error) {
    throw new TestingError(
      "BAD_OPTION",
      `options.query must be an object of names to strings: ${String((error as Error)?.message ?? error)}`,
    );
  }
  // The host is never resolved: the request goes to the stub (or the Worker) directly.
  const url = `http://dorpc.test${typeof prefix === "string" ? prefix : DEFAULT_PREFIX}/${segment("options.binding", binding)}/${segment("The name", instance)}${query}`;

  // A fresh stub per connection attempt: once its object is reset (abortAllDurableObjects,
  // ctx.abort()) a stub stays broken, and the reconnect must reach the new instance.
  const fetchUpgrade: UpgradeFetch = worker
    ? (target, init) => worker.fetch(target, init)
    : (target, init) => (namespace as DurableObjectNamespace).get(id).fetch(target, init);
  const transport = upgradeTransport(url, headers, fetchUpgrade);

  const client = createRpcClient<T>(binding, instance, {
    ...clientOptions,
    reconnect: clientOptions.reconnect === undefined ? TEST_RECONNECT : clientOptions.reconnect,
    transport: transport.factory,
  });
  register(client, { namespace, id, binding, instance, url, transport });
  return client as TestClient<T>;
}

/** What `routeDORequest` reads as an object id rather than a name. */
const HEX_ID = /^[0-9a-f]{64}$/i;

/**
 * Through a Worker, the instance segment means what `routeDORequest` makes of it: 64 hex digits
 * are an id (in either case), so the helpers must address that id, not the object of that name.
 */
function idFromHex(namespace: DurableObjectNamespace, hex: string): DurableObjectId {
  try {
    return namespace.idFromString(hex.toLowerCase());
  } catch (error) {
    throw new TestingError(
      "BAD_OPTION",
      `Instance ${JSON.stringify(hex)} is 64 hex digits, which routeDORequest reads as an object id, but it is not an id of this namespace: ${String((error as Error)?.message ?? error)}`,
      { cause: error },
    );
  }
}

/** `identity` as the header value `readIdentityHeader` parses, checked against the same limit. */
function identityJson(identity: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(identity);
  } catch (error) {
    throw new TestingError("BAD_OPTION", `options.identity must be JSON-serialisable: ${String((error as Error)?.message ?? error)}`, {
      cause: error,
    });
  }
  if (json === undefined) throw new TestingError("BAD_OPTION", `options.identity must be JSON-serialisable, got ${describe(identity)}.`);
  // As withIdentity sends it (a header value is bytes): text beyond ASCII as JSON escapes, measured after.
  json = json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (json.length > MAX_IDENTITY) {
    throw new TestingError(
      "BAD_OPTION",
      `options.identity is ${json.length} characters as JSON; readIdentityHeader accepts at most ${MAX_IDENTITY}.`,
    );
  }
  return json;
}

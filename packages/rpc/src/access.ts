/**
 * The access policy: which steps of a client-sent chain may run. Deny by default.
 *
 * Rules (docs/security.md says why):
 *  1. Static, before anything runs: every property name in the chain is checked against names
 *     that are never reachable (`ctx`, `env`, `constructor`, `__proto__`, `prototype`, `then`,
 *     every `Object.prototype` / `Function.prototype` name, lifecycle methods, `_`-prefixed
 *     names), plus the user's `allow` option. A chain that fails here runs nothing.
 *  2. The first step must name a method or getter defined on the user's own class, i.e. on a
 *     prototype between the instance and the library's base class (`RpcDurableObject`,
 *     `DurableObject`) or `Object.prototype`. Instance fields, arrow-function fields and members
 *     of the base classes are not reachable.
 *  3. Later steps depend on the value the previous step produced: an `RpcTarget` instance is
 *     treated like the Durable Object (rule 2, base `RpcTarget`); a plain object or array
 *     exposes its own data properties (arrays: integer indexes only), never functions; any
 *     other value (storage, sockets, stubs, class instances, Maps) exposes nothing.
 *  4. A call step may only follow a step that resolved a method under rule 2 or 3.
 * A forbidden name and a missing name give the same `NOT_FOUND`, so the policy is no oracle.
 *
 * Runtime-neutral: the workerd base classes are registered by durable-object.ts and
 * rpc-durable-object.ts. A server's `access` option (`allow`, `unsafeTrustedCaller`) is
 * access-options.ts.
 */
import { RpcError } from "./errors.js";
import { methodSpec } from "./rpc-method.js";
import { RpcTarget } from "./rpc-target.js";

const { hasOwn } = Object;

/** Names no chain may use at any step, whatever the options (also `unsafeTrustedCaller`). */
export const ALWAYS_NEVER: ReadonlySet<string> = new Set<string>([
  "constructor",
  "__proto__",
  "prototype",
  "then",
  "fetch",
  "connect",
  "alarm",
  "webSocketMessage",
  "webSocketClose",
  "webSocketError",
  ...Object.getOwnPropertyNames(Object.prototype),
  ...Object.getOwnPropertyNames(Function.prototype),
]);

/** Names no chain may use by default. */
const NEVER = new Set<string>([...ALWAYS_NEVER, "ctx", "env"]);

/** True when `name` may appear in a chain at all (rule 1, without the user's option). */
export function isNameAllowed(name: string): boolean {
  return name.length > 0 && name.charCodeAt(0) !== 0x5f /* _ */ && !NEVER.has(name);
}

/** Prototypes where the walk of rule 2 stops (exclusive): the library's and the platform's. */
const STOP = new Set<object>([Object.prototype, Function.prototype, RpcTarget.prototype]);
/** Prototypes skipped by the walk: classes that `withRpc` generates around the user's class. */
const SKIP = new WeakSet<object>();

/** Registers a base class prototype whose members (and whose ancestors') are not reachable. */
export function stopAtPrototype(proto: object): void {
  STOP.add(proto);
}

/** Registers a generated wrapper prototype whose own members are not reachable. */
export function skipPrototype(proto: object): void {
  SKIP.add(proto);
}

/** A member resolved by rule 2: the function and how to use it. */
export interface Member {
  readonly kind: "method" | "getter";
  readonly fn: (...args: unknown[]) => unknown;
}

const memberCache = new WeakMap<object, Map<string, Member>>();

/**
 * Rule 2: the method or getter `name` defined on `target`'s class below the stop prototypes,
 * or `undefined`. Members found are cached per prototype (classes do not change shape at run
 * time in practice, and a change would only ever be seen on the next isolate); misses are not,
 * so a client naming ever new members cannot grow the cache: it holds at most the class's own.
 */
export function findMember(target: object, name: string): Member | undefined {
  // An own field holding a method made by rpcMethod: an explicit declaration, so reachable
  // (other instance fields never are).
  if (hasOwn(target, name)) {
    const value = (target as Record<string, unknown>)[name];
    if (methodSpec(value)) return { kind: "method", fn: value as Member["fn"] };
  }
  const start = Object.getPrototypeOf(target) as object | null;
  if (start === null) return undefined;
  let cache = memberCache.get(start);
  if (!cache) {
    cache = new Map();
    memberCache.set(start, cache);
  }
  const known = cache.get(name);
  if (known !== undefined) return known;
  let found: Member | undefined;
  for (let proto: object | null = start; proto && !STOP.has(proto); proto = Object.getPrototypeOf(proto) as object | null) {
    if (SKIP.has(proto)) continue;
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (!desc) continue;
    if (typeof desc.value === "function") found = { kind: "method", fn: desc.value as Member["fn"] };
    else if (typeof desc.get === "function") found = { kind: "getter", fn: desc.get as Member["fn"] };
    break; // the nearest definition wins, as in normal lookup; a data property is not reachable
  }
  if (found) cache.set(name, found);
  return found;
}

/** The function a root member `name` resolves to (method or getter), if any. */
export function memberFunction(target: object, name: string): Member["fn"] | undefined {
  return findMember(target, name)?.fn;
}

/** The policy a chain runs under: rule 1 for its names, and whether rules 2 and 3 are lifted. */
export interface AccessPolicy {
  /** `unsafeTrustedCaller`: rules 2 and 3 are lifted (`readTrusted`), `ALWAYS_NEVER` stays. */
  readonly trusted: boolean;
  /**
   * Rule 1 for a whole chain of names. Throws `NOT_FOUND` for a name that can never be reached
   * (or that the server's `allow` option refuses, for a chain from the root), before anything runs.
   */
  checkStatic(names: readonly string[], label: string, fromRoot?: boolean): void;
  /** `unsafeTrustedCaller` reads (`trusted` only). */
  readTrusted?(holder: unknown, name: string): { value: unknown } | undefined;
}

/** The built-in rules, nothing narrowed or lifted: a client's, and a server's without an `access` option. */
export const DEFAULT_POLICY: AccessPolicy = {
  trusted: false,
  checkStatic(names, label) {
    for (const name of names) if (!isNameAllowed(name)) throw notFound(name, label);
  },
};

/** The one answer for a name that is missing or forbidden. */
export function notFound(name: string, label: string): RpcError {
  return new RpcError("NOT_FOUND", `No method or property "${name.slice(0, 100)}" is reachable on ${label}.`);
}

/** True for objects whose own data properties a chain may read (rule 3). */
export function isPlainData(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === Object.prototype || proto === null || (proto === Array.prototype && Array.isArray(value));
}

const INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * Rule 3 for plain data: the own data property `name` of a plain object, or the element at an
 * integer index of an array. Functions are never returned. `undefined` means not reachable.
 */
export function readDataProperty(value: object, name: string): { value: unknown } | undefined {
  if (Array.isArray(value) && !INDEX.test(name)) return undefined;
  const desc = Object.getOwnPropertyDescriptor(value, name);
  if (!desc || !("value" in desc) || typeof desc.value === "function") return undefined;
  return { value: desc.value };
}

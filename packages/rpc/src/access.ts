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
 * Runtime-neutral: the workerd base classes are registered by durable-object.ts.
 */
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { RpcTarget } from "./rpc-target.js";

/** How a server narrows (never widens) what chains may reach. */
export interface AccessOptions {
  /**
   * Only these first-step member names, or a predicate over the chain's property names
   * (`["users", "get"]` for `client.users.get(…)`). Applied on top of the built-in rules.
   */
  allow?: readonly string[] | ((path: readonly string[]) => boolean);
  /**
   * **Dangerous.** Every caller is fully trusted: chains may read `ctx`, `env`, `_`-prefixed
   * and instance members and step into any object (`client.ctx.storage.deleteAll()` works).
   * `constructor`, `__proto__`, `prototype` and `Object.prototype` / `Function.prototype`
   * names stay unreachable, and lifecycle methods stay uncallable. For test harnesses and
   * admin tools behind their own authentication only.
   */
  unsafeTrustedCaller?: boolean;
}

/** Names no chain may use at any step, whatever the options (also `unsafeTrustedCaller`). */
const ALWAYS_NEVER = new Set<string>([
  "constructor",
  "__proto__",
  "prototype",
  "then",
  "fetch",
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

const memberCache = new WeakMap<object, Map<string, Member | null>>();

/**
 * Rule 2: the method or getter `name` defined on `target`'s class below the stop prototypes,
 * or `undefined`. Cached per prototype: classes do not change shape at run time in practice,
 * and a change would only ever be seen on the next isolate.
 */
export function findMember(target: object, name: string): Member | undefined {
  const start = Object.getPrototypeOf(target) as object | null;
  if (start === null) return undefined;
  let cache = memberCache.get(start);
  if (!cache) {
    cache = new Map();
    memberCache.set(start, cache);
  }
  const known = cache.get(name);
  if (known !== undefined) return known ?? undefined;
  let found: Member | null = null;
  for (let proto: object | null = start; proto && !STOP.has(proto); proto = Object.getPrototypeOf(proto) as object | null) {
    if (SKIP.has(proto)) continue;
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (!desc) continue;
    if (typeof desc.value === "function") found = { kind: "method", fn: desc.value as Member["fn"] };
    else if (typeof desc.get === "function") found = { kind: "getter", fn: desc.get as Member["fn"] };
    break; // the nearest definition wins, as in normal lookup; a data property is not reachable
  }
  cache.set(name, found);
  return found ?? undefined;
}

/** The policy for one server, built once from its options. */
export class AccessPolicy {
  private readonly allowSet: ReadonlySet<string> | undefined;
  private readonly allowFn: ((path: readonly string[]) => boolean) | undefined;
  /** `unsafeTrustedCaller`: rules 2 and 3 are lifted, `ALWAYS_NEVER` stays. */
  readonly trusted: boolean;

  constructor(
    options: AccessOptions | undefined,
    readonly limits: Readonly<RpcLimits>,
  ) {
    if (options !== undefined && (typeof options !== "object" || options === null)) {
      throw new RpcError("BAD_OPTION", "access must be an object.");
    }
    for (const key of Object.keys(options ?? {})) {
      if (key !== "allow" && key !== "unsafeTrustedCaller") {
        throw new RpcError("BAD_OPTION", `Unknown access option "${key}"; known: allow, unsafeTrustedCaller.`);
      }
    }
    this.trusted = options?.unsafeTrustedCaller === true;
    const allow = options?.allow;
    if (allow === undefined) return;
    if (typeof allow === "function") this.allowFn = allow;
    else if (Array.isArray(allow) && allow.every((n) => typeof n === "string")) this.allowSet = new Set(allow);
    else throw new RpcError("BAD_OPTION", "access.allow must be an array of member names or a function of the path.");
  }

  /**
   * Rule 1 for a whole chain of names. Throws `NOT_FOUND` for a name that can never be reached
   * (or that the `allow` option refuses), before anything runs.
   */
  checkStatic(names: readonly string[], label: string, fromRoot = true): void {
    for (const name of names) {
      if (this.trusted ? name.length === 0 || ALWAYS_NEVER.has(name) : !isNameAllowed(name)) throw notFound(name, label);
    }
    // `allow` narrows what the root offers; a stub's members were reached through an allowed root.
    if (!fromRoot) return;
    if (this.allowSet && !this.allowSet.has(names[0]!)) throw notFound(names[0]!, label);
    if (this.allowFn && !this.allowFn(names)) throw notFound(names[names.length - 1]!, label);
  }

  /**
   * `unsafeTrustedCaller` reads: any property of any object, own or inherited, except the
   * names that stay unreachable. Getters run; functions come back to be called.
   */
  readTrusted(holder: unknown, name: string): { value: unknown } | undefined {
    if (ALWAYS_NEVER.has(name) || holder === null || (typeof holder !== "object" && typeof holder !== "function")) return undefined;
    if (!(name in (holder as object))) return undefined;
    return { value: (holder as Record<string, unknown>)[name] };
  }
}

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

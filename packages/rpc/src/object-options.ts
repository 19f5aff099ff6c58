/**
 * Which options an object is served with when no call says (`rpcClient`, `rpcPublish` from an
 * alarm, after an eviction; `handleRpc*` given none): those a dorpc request or message of this
 * instance was served with, else those its class declares — `withRpc`'s for its class and every
 * class extending it, else a static `rpcOptions`, else the defaults under `RpcDurableObject`.
 * A hand-composed object that declares none gets `BAD_OPTION`, never the defaults.
 *
 * Internal module (no `cloudflare:*` import: durable-object.ts and rpc-durable-object.ts use it).
 */
import { labelOf, resolveServerOptions, type ResolvedServerOptions, type RpcServerOptions } from "./dispatcher.js";
import { RpcError } from "./errors.js";

/** A class with a static `rpcOptions`: how `RpcDurableObject` subclasses configure dorpc. */
export interface WithRpcOptions {
  rpcOptions?: RpcServerOptions;
}

/** Options registered for a class: what `withRpc` was given. */
export const classOptions = new WeakMap<object, RpcServerOptions | undefined>();

/** Classes whose subclasses declare their options with `static rpcOptions`, defaults without (`RpcDurableObject`). */
export const staticOptionsRoots = new WeakSet<object>();

/** Options an object was last served with through `handleRpcRequest` / `handleRpcMessage`. */
const servedWith = new WeakMap<object, ResolvedServerOptions>();

/** `target` is being served with `resolved` (its first dorpc request or message of this instance). */
export function noteServed(target: object, resolved: ResolvedServerOptions): void {
  servedWith.set(target, resolved);
}

/** Per constructor: the options its class declares (`NONE`: it declares none). */
const declaredCache = new WeakMap<object, RpcServerOptions | undefined | typeof NONE>();
const NONE = Symbol("none");

/**
 * The options `target`'s class declares: what `withRpc` was given, for its class and every class
 * that extends it (which `withRpc`'s handlers serve with those, whatever else they declare); else
 * the nearest static `rpcOptions`; else the defaults under `RpcDurableObject`; `NONE` for a
 * hand-composed class that declares none.
 */
function declaredOptions(target: object): RpcServerOptions | undefined | typeof NONE {
  const ctor = (target as { constructor?: object }).constructor;
  if (typeof ctor !== "function") return NONE;
  let found = declaredCache.get(ctor);
  if (found !== undefined || declaredCache.has(ctor)) return found;
  found = NONE;
  let nearestStatic: RpcServerOptions | undefined | typeof NONE = NONE;
  let underRoot = false;
  for (let c: object | null = ctor; typeof c === "function" && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    if (classOptions.has(c)) {
      found = classOptions.get(c);
      declaredCache.set(ctor, found);
      return found;
    }
    if (nearestStatic === NONE && Object.hasOwn(c, "rpcOptions")) nearestStatic = (c as WithRpcOptions).rpcOptions;
    if (staticOptionsRoots.has(c)) underRoot = true;
  }
  found = nearestStatic !== NONE ? nearestStatic : underRoot ? undefined : NONE;
  declaredCache.set(ctor, found);
  return found;
}

/** What `handleRpc*` serve `target` with when given no options: its class's declared options. */
export function defaultOptions(target: object): RpcServerOptions | undefined {
  const declared = declaredOptions(target);
  return declared === NONE ? undefined : declared;
}

/**
 * The options an object is served with, for the functions that take none (`rpcClient`,
 * `rpcPublish`): those it was served with in this instance, else those its class declares.
 * Throws `BAD_OPTION` for a hand-composed object that was not served yet in this instance (an
 * alarm, a Workers RPC method, after an eviction) and whose class declares none: guessing the
 * defaults would serve its sockets without its access policy, limits and topics.
 */
export function optionsOf(target: object, what = "dorpc"): ResolvedServerOptions {
  const served = servedWith.get(target);
  if (served) return served;
  const declared = declaredOptions(target);
  if (declared === NONE) {
    throw new RpcError(
      "BAD_OPTION",
      `${what} cannot tell how ${labelOf(target)} serves dorpc: no dorpc request or message reached this instance yet, and its class declares no options. ` +
        "Declare them on the class (`static rpcOptions = { … }`, or `= {}` for the defaults); handleRpcRequest and handleRpcMessage use them when given none.",
    );
  }
  return resolveServerOptions(declared);
}

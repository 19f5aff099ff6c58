/**
 * What a Durable Object never sends, wherever it sits in a result: the object itself, its `env`
 * (bindings, secrets, configuration) and its `ctx` (storage, id, …), and the objects they hold.
 * `{ config: { env: this.env } }` is a plausible slip, and in workerd `env` is a plain object,
 * so without this it would travel as data on the JSON fast path. The dispatcher hands this set
 * to the encoder as `EncodeContext.forbidden`; `access.unsafeTrustedCaller` lifts it.
 *
 * Identity only: a secret is a string, and a string cannot be told from other strings. Never
 * return one.
 *
 * Runtime-neutral: reads `target.env` and `target.ctx` as `DurableObject` and
 * `RpcDurableObject` store them; a class that keeps them under other names is not covered.
 *
 * Internal module.
 */

/** Plain objects of `env` walked at most, so a huge configuration object cannot stall a call. */
const MAX_ENV_OBJECTS = 10_000;

const cache = new WeakMap<object, ReadonlyMap<object, string>>();

/** Identity → how an error message names it. Computed once per Durable Object instance. */
export function platformIdentities(target: object): ReadonlyMap<object, string> {
  let out = cache.get(target);
  if (out) return out;
  const map = new Map<object, string>([[target, "the Durable Object itself"]]);
  const { env, ctx } = target as { env?: unknown; ctx?: unknown };
  if (isObject(env)) addEnv(map, env);
  if (isObject(ctx)) addCtx(map, ctx);
  out = map;
  cache.set(target, out);
  return out;
}

function isObject(value: unknown): value is object {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

/** `env` and every object reachable from it through own enumerable properties (bindings, JSON vars). */
function addEnv(map: Map<object, string>, env: object): void {
  const queue: [object, string][] = [[env, "the Durable Object's env"]];
  map.set(env, "the Durable Object's env");
  for (let i = 0; i < queue.length && map.size < MAX_ENV_OBJECTS; i++) {
    const [holder, name] = queue[i]!;
    // Bindings are platform objects: their members are the platform's, not configuration.
    const proto = Object.getPrototypeOf(holder);
    if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) continue;
    for (const key of Object.keys(holder)) {
      let value: unknown;
      try {
        value = (holder as Record<string, unknown>)[key];
      } catch {
        continue;
      }
      if (!isObject(value) || map.has(value)) continue;
      const path = `${name === "the Durable Object's env" ? "env" : name}.${key}`;
      map.set(value, path);
      queue.push([value, path]);
    }
  }
}

/** `ctx` and what its getters hand out (`storage`, `id`, …), read once. */
function addCtx(map: Map<object, string>, ctx: object): void {
  if (!map.has(ctx)) map.set(ctx, "the Durable Object's ctx");
  for (const key of Object.keys(ctx)) addMember(map, ctx, key);
  for (let proto = Object.getPrototypeOf(ctx) as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (typeof Object.getOwnPropertyDescriptor(proto, key)?.get === "function") addMember(map, ctx, key);
    }
  }
}

function addMember(map: Map<object, string>, ctx: object, key: string): void {
  let value: unknown;
  try {
    value = (ctx as Record<string, unknown>)[key];
  } catch {
    return;
  }
  if (isObject(value) && !map.has(value)) map.set(value, `ctx.${key}`);
}

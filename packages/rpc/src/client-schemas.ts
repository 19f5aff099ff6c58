/**
 * Client-side validation: the client's `validate` option maps methods to the same Standard
 * Schemas the object declares, and a call whose arguments fail is refused before it is sent,
 * with the error the object would have given (`INVALID_ARGUMENT`, the same issues).
 *
 * It only checks: what is sent is what the caller passed, not the schema's output, because the
 * object validates again with the same schema and a transform must not run twice. Calls on stubs
 * and on pending results are not checked here (the object still checks them), nor are calls
 * whose arguments hold pending results or stubs, at any depth of plain data (they are not values
 * yet).
 *
 * Internal module.
 */
import type { ArgsCheck } from "./caller.js";
import { isPlainData } from "./access.js";
import { RpcError } from "./errors.js";
import { proxyInfo } from "./proxy.js";
import type { ArgsSchema } from "./rpc-method.js";
import { invalidArguments, runSchema } from "./schema-check.js";
import { isStandardSchema } from "./standard-schema.js";
import type { InstanceOf, PublicKeys } from "./types.js";

type AnyFunction = (...args: never[]) => unknown;

/** Names of `T`'s methods a client may call. */
type MethodKeys<T> = { [K in keyof T]-?: K extends PublicKeys<T> ? (T[K] extends AnyFunction ? K : never) : never }[keyof T];

/**
 * The client's `validate` option for an object of class `T`: an argument schema per method name
 * (`increment`), or per dotted path for a method reached through properties (`"users.get"` for
 * `client.users.get(…)`). Usually the very schemas the object declares, from a module both import.
 */
export type ClientSchemas<T = unknown> = { readonly [K in MethodKeys<InstanceOf<T>>]?: ArgsSchema } & {
  readonly [path: `${string}.${string}`]: ArgsSchema;
} & (unknown extends T ? { readonly [path: string]: ArgsSchema } : unknown); // any name when the class is not known

/** Checks the `validate` option when the client is created: a map of paths to Standard Schemas. */
export function resolveClientSchemas(given: unknown): ReadonlyMap<string, ArgsSchema> | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new RpcError("BAD_OPTION", "validate must be an object mapping method names (or dotted paths) to Standard Schemas.");
  }
  const schemas = new Map<string, ArgsSchema>();
  for (const [path, schema] of Object.entries(given)) {
    if (path === "" || path.split(".").some((name) => name === "")) {
      throw new RpcError("BAD_OPTION", `validate has the key ${JSON.stringify(path)}, which is not a method name or a dotted path.`);
    }
    if (!isStandardSchema(schema)) {
      throw new RpcError("BAD_OPTION", `validate.${path} must be a Standard Schema (version 1) of the argument list, e.g. v.tuple([…]).`);
    }
    schemas.set(path, schema as ArgsSchema);
  }
  return schemas.size > 0 ? schemas : undefined;
}

/** The caller's check for `schemas` (see `Caller.checkArgsWith`). */
export function clientArgsCheck(schemas: ReadonlyMap<string, ArgsSchema>): ArgsCheck {
  return (path, args) => {
    const key = path.length === 1 ? path[0]! : path.join(".");
    const schema = schemas.get(key);
    if (!schema) return undefined;
    for (const arg of args) if (holdsProxy(arg)) return undefined;
    const what = `"${key}" (checked by the client; nothing was sent)`;
    const checked = runSchema(schema, args);
    if (checked instanceof Promise) return checked.then((result) => (result.ok ? undefined : invalidArguments(what, result)));
    return checked.ok ? undefined : invalidArguments(what, checked);
  };
}

/**
 * Whether `value` is, or holds through the data properties of plain objects and arrays or the
 * entries of a `Map` or `Set`, a pending result or a stub (getters are not run: the encoder runs
 * them, once).
 */
function holdsProxy(value: unknown): boolean {
  const stack = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if ((typeof v !== "object" && typeof v !== "function") || v === null || seen.has(v)) continue;
    if (proxyInfo(v)) return true;
    seen.add(v);
    if (v instanceof Map) {
      for (const [key, entry] of v) stack.push(key, entry);
      continue;
    }
    if (v instanceof Set) {
      for (const entry of v) stack.push(entry);
      continue;
    }
    if (typeof v === "function" || (!Array.isArray(v) && !isPlainData(v))) continue;
    for (const desc of Object.values(Object.getOwnPropertyDescriptors(v))) if ("value" in desc) stack.push(desc.value);
  }
  return false;
}

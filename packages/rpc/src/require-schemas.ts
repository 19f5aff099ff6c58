/**
 * `requireSchemas: true`, checked up front: every method a client can call on the object's root
 * has an argument schema (`rpcMethod`). Run when the object is first served (the first request)
 * and when `withRpc` wraps a class, so a method someone forgot to declare is found by the first
 * request after a deploy, not by the first hostile call to it.
 *
 * What cannot be seen up front — methods of an `RpcTarget` the object returns later, functions it
 * hands out — is checked per call instead (chain.ts): with `requireSchemas`, a function without
 * an argument schema is never called.
 *
 * Getters are exempt: a chain cannot pass them anything. What they return is reached by later
 * steps, whose calls are checked per call.
 *
 * Internal module.
 */
import { type AccessPolicy, findMember, isNameAllowed } from "./access.js";
import { RpcError } from "./errors.js";
import { methodSpec } from "./rpc-method.js";

/** Targets (instances or prototype holders) already checked, with the policy they were checked under. */
const checked = new WeakMap<object, AccessPolicy>();

/**
 * Throws `BAD_OPTION` naming every method reachable on `target`'s root (access rule 2, narrowed
 * by `allow`) that has no argument schema. `target` is the instance (its `rpcMethod` fields are
 * own properties) or, before any instance exists, an object whose prototype is the class's.
 */
export function checkSchemas(target: object, policy: AccessPolicy, label: string): void {
  if (checked.get(target) === policy) return;
  const missing: string[] = [];
  for (const name of memberNames(target)) {
    if (!isNameAllowed(name) || !allowed(policy, name, label)) continue;
    const member = findMember(target, name);
    if (member?.kind === "method" && !methodSpec(member.fn)?.args) missing.push(name);
  }
  if (missing.length > 0) {
    const list = missing.map((name) => `"${name}"`).join(", ");
    throw new RpcError(
      "BAD_OPTION",
      `${label} is served with requireSchemas, but ${missing.length === 1 ? "this method has" : "these methods have"} no argument schema: ${list}. ` +
        "Declare each one as a field with rpcMethod(schema, fn), or rpcMethod({ args: schema, … }, fn); a method without arguments takes an empty tuple schema.",
    );
  }
  checked.set(target, policy);
}

/** Own and inherited string keys of `target`, each once, in the order they are met. */
function memberNames(target: object): Set<string> {
  const names = new Set<string>();
  for (let o: object | null = target; o; o = Object.getPrototypeOf(o) as object | null) {
    for (const key of Object.getOwnPropertyNames(o)) names.add(key);
  }
  return names;
}

/** The `allow` option, as a chain calling `name` at the root would meet it. */
function allowed(policy: AccessPolicy, name: string, label: string): boolean {
  try {
    policy.checkStatic([name], label, true);
    return true;
  } catch {
    return false;
  }
}

/**
 * A server's `access` option: `allow` narrows what the root offers, `unsafeTrustedCaller` lifts
 * rules 2 and 3 (access.ts states the rules). Validated once, when the server options are.
 *
 * Internal module.
 */
import { ALWAYS_NEVER, type AccessPolicy, DEFAULT_POLICY, notFound } from "./access.js";
import { RpcError } from "./errors.js";

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

/** The policy of a server's `access` option (the default policy when it sets nothing). */
export function accessPolicy(options: AccessOptions | undefined): AccessPolicy {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new RpcError("BAD_OPTION", "access must be an object.");
  }
  for (const key of Object.keys(options ?? {})) {
    if (key !== "allow" && key !== "unsafeTrustedCaller") {
      throw new RpcError("BAD_OPTION", `Unknown access option "${key}"; known: allow, unsafeTrustedCaller.`);
    }
  }
  const allow = options?.allow;
  if (allow !== undefined && typeof allow !== "function" && !(Array.isArray(allow) && allow.every((n) => typeof n === "string"))) {
    throw new RpcError("BAD_OPTION", "access.allow must be an array of member names or a function of the path.");
  }
  const trusted = options?.unsafeTrustedCaller === true;
  return allow === undefined && !trusted ? DEFAULT_POLICY : new ConfiguredPolicy(allow, trusted);
}

class ConfiguredPolicy implements AccessPolicy {
  private readonly allowSet: ReadonlySet<string> | undefined;
  private readonly allowFn: ((path: readonly string[]) => boolean) | undefined;

  constructor(
    allow: readonly string[] | ((path: readonly string[]) => boolean) | undefined,
    readonly trusted: boolean,
  ) {
    if (typeof allow === "function") this.allowFn = allow;
    else if (allow) this.allowSet = new Set(allow);
  }

  checkStatic(names: readonly string[], label: string, fromRoot = true): void {
    if (this.trusted) {
      for (const name of names) if (name.length === 0 || ALWAYS_NEVER.has(name)) throw notFound(name, label);
    } else DEFAULT_POLICY.checkStatic(names, label);
    // `allow` narrows what the root offers; a stub's members were reached through an allowed root.
    if (!fromRoot) return;
    if (this.allowSet && !this.allowSet.has(names[0]!)) throw notFound(names[0]!, label);
    if (this.allowFn && !this.allows(names)) throw notFound(names[names.length - 1]!, label);
  }

  /** The `allow` function's answer; one that throws refuses, and its message stays on the object. */
  private allows(names: readonly string[]): boolean {
    try {
      return Boolean(this.allowFn!(names));
    } catch (error) {
      console.error("dorpc: access.allow threw; the call was refused:", error);
      return false;
    }
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

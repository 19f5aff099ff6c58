/**
 * Binding-name resolution: which env key a `{binding}` path segment refers to.
 *
 * Only env values that look like a Durable Object namespace are ever candidates, so a path can
 * never reach (or reveal the name of) a secret, a KV namespace or any other binding.
 *
 * A segment matches an env key exactly. A lowercase kebab segment (`my-counter`) additionally
 * matches the SCREAMING_SNAKE (`MY_COUNTER`), PascalCase (`MyCounter`) and camelCase
 * (`myCounter`) spellings, so URLs can stay lowercase whatever the wrangler config uses. An
 * exact match always wins over those aliases; two or more aliases matching is ambiguous and is
 * reported rather than guessed, because guessing would silently route to the wrong object.
 */
import { RoutingError } from "./errors.js";

/** True for an object with the methods the router uses on a `DurableObjectNamespace`. */
/** A name no Durable Object namespace has as a member (see `isDurableObjectNamespace`). */
const NOT_A_MEMBER = "dorpcNotANamespaceMember";

export function isDurableObjectNamespace(value: unknown): value is DurableObjectNamespace {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.idFromName === "function" &&
    typeof candidate.idFromString === "function" &&
    typeof candidate.get === "function" &&
    // A service binding that takes RPC answers any member name with a function: a namespace
    // has no member of that name.
    typeof candidate[NOT_A_MEMBER] !== "function"
  );
}

export type BindingLookup =
  | { readonly kind: "found"; readonly key: string; readonly namespace: DurableObjectNamespace }
  | { readonly kind: "unknown"; readonly available: readonly string[] }
  | { readonly kind: "ambiguous"; readonly candidates: readonly string[] };

interface EnvIndex {
  readonly namespaces: ReadonlyMap<string, DurableObjectNamespace>;
  /** Sorted, for stable messages. */
  readonly keys: readonly string[];
  /**
   * Only results that name real bindings are memoised ("found" and "ambiguous"): the segments
   * producing them are finite, whereas caching "unknown" would let clients grow the map without
   * bound by requesting random names.
   */
  readonly memo: Map<string, BindingLookup>;
}

// Keyed by the env object, which the Workers runtime keeps stable for the life of an isolate.
// An env that is mutated after its first request keeps the bindings it had then.
const indexes = new WeakMap<object, EnvIndex>();

function indexEnv(env: object): EnvIndex {
  let index = indexes.get(env);
  if (index === undefined) {
    const namespaces = new Map<string, DurableObjectNamespace>();
    for (const key of Object.keys(env)) {
      const value: unknown = (env as Record<string, unknown>)[key];
      if (isDurableObjectNamespace(value)) namespaces.set(key, value);
    }
    index = { namespaces, keys: [...namespaces.keys()].sort(), memo: new Map() };
    indexes.set(env, index);
  }
  return index;
}

const KEBAB = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** The env-key spellings a lowercase kebab segment also answers to, without duplicates. */
function aliases(segment: string): string[] {
  if (!KEBAB.test(segment)) return [];
  const words = segment.split("-");
  const screaming = words.join("_").toUpperCase();
  const pascal = words.map(capitalise).join("");
  const camel = words[0] + words.slice(1).map(capitalise).join("");
  return [...new Set([screaming, pascal, camel])];
}

/** Resolves a decoded `{binding}` segment against `env`; never throws. */
export function lookupBinding(env: object, segment: string): BindingLookup {
  const index = indexEnv(env);
  const memoised = index.memo.get(segment);
  if (memoised !== undefined) return memoised;

  let result: BindingLookup;
  const exact = index.namespaces.get(segment);
  if (exact !== undefined) {
    result = { kind: "found", key: segment, namespace: exact };
  } else {
    const matches: [string, DurableObjectNamespace][] = [];
    for (const key of aliases(segment)) {
      const namespace = index.namespaces.get(key);
      if (namespace !== undefined) matches.push([key, namespace]);
    }
    const [first] = matches;
    if (first === undefined) return { kind: "unknown", available: index.keys };
    result =
      matches.length === 1
        ? { kind: "found", key: first[0], namespace: first[1] }
        : { kind: "ambiguous", candidates: matches.map(([key]) => key).sort() };
  }
  index.memo.set(segment, result);
  return result;
}

/**
 * The env key holding the Durable Object namespace that `segment` names, or `undefined` when
 * none does. Throws a `RoutingError` with code `AMBIGUOUS_BINDING` when several do.
 */
export function resolveBinding(env: object, segment: string): string | undefined {
  if (typeof env !== "object" || env === null) {
    throw new RoutingError("BAD_OPTION", `env must be the Worker's env object, got ${env === null ? "null" : typeof env}.`);
  }
  if (typeof segment !== "string") {
    throw new RoutingError("BAD_OPTION", `segment must be a string, got ${typeof segment}.`);
  }
  const result = lookupBinding(env, segment);
  switch (result.kind) {
    case "found":
      return result.key;
    case "unknown":
      return undefined;
    case "ambiguous":
      throw new RoutingError(
        "AMBIGUOUS_BINDING",
        `Binding segment ${JSON.stringify(segment)} matches several Durable Object bindings: ${result.candidates.join(", ")}.`,
      );
  }
}

/**
 * The JSON fast path, both ways. Most values are plain JSON, and for them dorpc should cost what
 * JSON costs.
 *
 * Sending: `JsonSnapshot` walks the value once and copies every plain object and array into a
 * private copy, reading each property exactly once (a getter runs once, a Proxy's traps once).
 * When everything it met is plain JSON, the copy is what the frame's `JSON.stringify` writes: no
 * user code runs after the check, so nothing can change between the check and the write. When
 * something is not (undefined, NaN, -0, a BigInt, a Map, a hole, a shared object, …), the record
 * writer starts from the copy and reads only what the walk did not (encoder.ts).
 *
 * Receiving: `checkJsonValue` walks what `JSON.parse` built, for the depth and node limits and the
 * `__proto__` rule, without recursion: a peer may send JSON nested a million deep.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { keySegment, ReadFailure } from "./paths.js";

const { getPrototypeOf, hasOwn, keys: objectKeys } = Object;
const { isArray } = Array;
const OBJECT_PROTO = Object.prototype;
const ARRAY_PROTO = Array.prototype;

/**
 * Nesting the fast path copies before it leaves the rest to the (iterative) record writer. Far
 * below where `JSON.stringify`'s native recursion overflows (about 4,000 levels from a shallow
 * stack in Node 22), so the frame's own stringify cannot overflow, and this walk's own recursion
 * stays small. Plain values are rarely deeper than a few dozen levels.
 */
export const JSON_PATH_MAX_DEPTH = 512;

const EMPTY = {};

/** True when `Object.prototype` carries enumerable keys, which `for…in` would visit too. */
function prototypePolluted(): boolean {
  for (const _ in EMPTY) return true;
  return false;
}

export class JsonSnapshot {
  /** Still true when everything met was plain JSON: then the copy is the value to send. */
  json = true;
  /**
   * Original → copy of every plain object and array copied; the record writer resolves
   * originals through it, so aliasing survives and nothing copied is read again. Made on the
   * second object: most values hold one object or none, and need no map.
   */
  private map: Map<object, object> | undefined;
  private firstOriginal: object | undefined;
  private firstCopy: object | undefined;
  /** Whether `for…in` also visits inherited keys; checked when the first object is walked. */
  private polluted: boolean | undefined;

  /** Nesting at which the walk leaves the rest to the record writer (which refuses what is deeper than `maxDepth`). */
  private readonly limit: number;

  /**
   * `forbidden`: identities the walk must not copy (it leaves them to the record writer, which
   * refuses them by path). `maxDepth`: the sender's limit, so a value deeper than it is left to
   * the record writer too, which refuses it, instead of leaving as JSON the peer refuses.
   */
  constructor(
    private readonly forbidden: ReadonlyMap<object, string> | undefined,
    maxDepth = JSON_PATH_MAX_DEPTH,
  ) {
    this.limit = maxDepth < JSON_PATH_MAX_DEPTH ? maxDepth : JSON_PATH_MAX_DEPTH;
  }

  /** Every original → copy pair, for the record writer. */
  get copies(): ReadonlyMap<object, object> {
    if (this.map) return this.map;
    return this.firstOriginal ? new Map([[this.firstOriginal, this.firstCopy!]]) : new Map();
  }

  private copyOf(original: object): object | undefined {
    if (this.map) return this.map.get(original);
    return original === this.firstOriginal ? this.firstCopy : undefined;
  }

  private register(original: object, copy: object): void {
    if (this.map) this.map.set(original, copy);
    else if (this.firstOriginal === undefined) {
      this.firstOriginal = original;
      this.firstCopy = copy;
    } else {
      this.map = new Map([
        [this.firstOriginal, this.firstCopy!],
        [original, copy],
      ]);
    }
  }

  /** The copy of `value` (an object), or `value` itself when it is not a plain object or array. */
  root(value: object): unknown {
    if (this.forbidden?.has(value)) {
      this.json = false;
      return value;
    }
    return this.object(value, 1);
  }

  /**
   * An argument list the client made itself (`(...args)`): no named properties to look for and
   * nobody else holds it, so its elements are checked and copied without registering the list.
   * The copy starts with `tag` so it is the call step as it goes on the wire.
   */
  list(values: readonly unknown[], tag: number): unknown[] {
    const n = values.length;
    const out = new Array<unknown>(n + 1);
    out[0] = tag;
    let i = 0;
    try {
      for (; i < n && this.json; i++) out[i + 1] = this.element(values[i], 1);
      for (; i < n; i++) out[i + 1] = values[i];
    } catch (error) {
      throw this.failed(error, `[${i}]`);
    }
    return out;
  }

  private element(c: unknown, depth: number): unknown {
    switch (typeof c) {
      case "string":
      case "boolean":
        return c;
      case "number":
        if (c - c !== 0 || (c === 0 && 1 / c < 0)) this.json = false; // NaN, ±Infinity, -0
        return c;
      case "object":
        return c === null ? c : this.child(c, depth);
      default:
        this.json = false; // undefined, bigint; functions and symbols are refused by the record writer
        return c;
    }
  }

  /**
   * Walks into a child object. Once `json` is false, callers stop calling this: the rest of the
   * value is left to the record writer, which reads what no copy holds yet (exactly once, since
   * the walk never read it) and resolves what was copied through `copies`.
   */
  private child(c: object, depth: number): unknown {
    const known = this.copyOf(c);
    if (known !== undefined) {
      this.json = false; // shared or cyclic: JSON would duplicate it or throw
      return known;
    }
    if (depth >= this.limit || this.forbidden?.has(c)) {
      this.json = false;
      return c;
    }
    return this.object(c, depth + 1);
  }

  private object(v: object, depth: number): unknown {
    const proto = getPrototypeOf(v);
    if (proto === ARRAY_PROTO && isArray(v)) return this.array(v, depth);
    if (proto !== OBJECT_PROTO && proto !== null) {
      this.json = false;
      return v;
    }
    const polluted = (this.polluted ??= prototypePolluted());
    let key: string | undefined;
    try {
      // Spread reads every own enumerable property once (getters included) into data properties.
      const out: Record<string, unknown> = { ...v };
      this.register(v, out);
      if (hasOwn(out, "__proto__")) this.json = false; // the record writer refuses it by name
      for (key in out) {
        if (polluted && !hasOwn(out, key)) continue;
        const c = out[key];
        if (typeof c === "object") {
          if (c !== null) out[key] = this.child(c, depth);
        } else if (typeof c === "number") {
          if (c - c !== 0 || (c === 0 && 1 / c < 0)) this.json = false;
        } else if (typeof c !== "string" && typeof c !== "boolean") {
          this.json = false;
        }
        if (!this.json) break;
      }
      return out;
    } catch (error) {
      if (key === undefined && !hasStringGetter(v)) {
        // A symbol-keyed getter threw inside the spread (it has no other getter): symbol keys
        // are dropped, and the record writer never reads them. The value goes that way, as it
        // does wherever a value the JSON path cannot carry sits before it. (With string-keyed
        // getters too, those already ran: they are not run again, and the value is refused.)
        this.json = false;
        return v;
      }
      const at = key ?? onlyGetter(v);
      throw this.failed(error, at === undefined ? undefined : keySegment(at));
    }
  }

  private array(v: unknown[], depth: number): unknown {
    const n = v.length;
    // Own keys of a dense array without named properties are exactly "0" … "n-1", in that order.
    // Anything else (holes, named properties) is left to the record writer, which reads both.
    const keys = objectKeys(v);
    if (keys.length !== n || (n !== 0 && keys[n - 1] !== String(n - 1))) {
      this.json = false;
      return v;
    }
    const out = new Array<unknown>(n);
    this.register(v, out);
    let i = 0;
    try {
      for (; i < n && this.json; i++) out[i] = this.element(v[i], depth);
      // Once the value is known not to be JSON the walk stops descending, but the copy must still
      // hold every element (read once, here): the record writer goes on from it.
      for (; i < n; i++) out[i] = v[i];
    } catch (error) {
      throw this.failed(error, `[${i}]`);
    }
    return out;
  }

  private failed(error: unknown, segment: string | undefined): ReadFailure {
    const failure = error instanceof ReadFailure ? error : new ReadFailure(error);
    if (segment !== undefined) failure.segments.push(segment);
    return failure;
  }
}

/** Whether `v` has an enumerable own getter under a string key (what the record writer reads). */
function hasStringGetter(v: object): boolean {
  try {
    for (const key of objectKeys(v)) if (Object.getOwnPropertyDescriptor(v, key)?.get !== undefined) return true;
    return false;
  } catch {
    return true;
  }
}

/**
 * The spread of `v` threw: the key of its one enumerable getter, which must have thrown (read
 * without running any getter), or `undefined` when it has several, its one getter is
 * symbol-keyed, or it is a Proxy that throws (the path then names the object).
 */
function onlyGetter(v: object): string | undefined {
  let found: string | symbol | undefined;
  try {
    // The spread runs enumerable getters of symbol keys too.
    for (const key of Reflect.ownKeys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, key);
      if (d?.get === undefined || !d.enumerable) continue;
      if (found !== undefined) return undefined;
      found = key;
    }
  } catch {
    return undefined;
  }
  return typeof found === "symbol" ? undefined : found;
}

/** True for a number JSON carries exactly: finite and not -0. */
export function isJsonNumber(n: number): boolean {
  return n - n === 0 && (n !== 0 || 1 / n > 0);
}

// ---------------------------------------------------------------------------------------------
// Receiving
// ---------------------------------------------------------------------------------------------

/**
 * Checks a value that arrived as JSON against the limits and the `__proto__` rule, counting its
 * nodes against the frame's budget. `JSON.parse` only builds plain objects, arrays and
 * primitives, so nothing else is needed. Recursive for the first levels (fast), then iterative
 * with an explicit stack, so no depth a peer can send overflows it.
 */
export function checkJsonValue(value: unknown, limits: RpcLimits, budget: { nodes: number }): void {
  if (typeof value !== "object" || value === null) {
    if (--budget.nodes < 0) throw tooManyNodes(limits);
    return;
  }
  checkJsonObject(value, limits, budget, 1);
}

/** Levels checked by recursion before the rest of a subtree goes to the explicit stack. */
const RECURSION_DEPTH = 64;

function checkJsonObject(value: object, limits: RpcLimits, budget: { nodes: number }, depth: number): void {
  if (depth > limits.maxDepth) throw tooDeep(limits);
  if (depth > RECURSION_DEPTH) {
    checkDeepJson(value, limits, budget, depth);
    return;
  }
  if (--budget.nodes < 0) throw tooManyNodes(limits);
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === "object" && v !== null) checkJsonObject(v, limits, budget, depth + 1);
      else if (--budget.nodes < 0) throw tooManyNodes(limits);
    }
    return;
  }
  if (hasOwn(value, "__proto__")) throw protoKey();
  // for…in: no key array per object; JSON.parse makes only own data keys.
  for (const key in value) {
    const v: unknown = (value as Record<string, unknown>)[key];
    if (typeof v === "object" && v !== null) checkJsonObject(v, limits, budget, depth + 1);
    else if (--budget.nodes < 0) throw tooManyNodes(limits);
  }
}

/** The same checks as `checkJsonObject` for a subtree starting at `depth`, with an explicit stack. */
function checkDeepJson(root: object, limits: RpcLimits, budget: { nodes: number }, rootDepth: number): void {
  const objects: object[] = [root];
  const depths: number[] = [rootDepth];
  while (objects.length) {
    const value = objects.pop()!;
    const depth = depths.pop()!;
    if (depth > limits.maxDepth) throw tooDeep(limits);
    if (--budget.nodes < 0) throw tooManyNodes(limits);
    const children: unknown[] = isArray(value) ? value : objectValues(value);
    for (let i = 0; i < children.length; i++) {
      const v = children[i];
      if (typeof v === "object" && v !== null) {
        objects.push(v);
        depths.push(depth + 1);
      } else if (--budget.nodes < 0) throw tooManyNodes(limits);
    }
  }
}

function objectValues(value: object): unknown[] {
  if (hasOwn(value, "__proto__")) throw protoKey();
  return Object.values(value);
}

export function tooDeep(limits: RpcLimits): RpcError {
  return new RpcError("LIMIT", `Value is nested deeper than limits.maxDepth (${limits.maxDepth}).`);
}

export function tooManyNodes(limits: RpcLimits): RpcError {
  return new RpcError("LIMIT", `Frame holds more than limits.maxNodes (${limits.maxNodes}) values.`);
}

export function protoKey(): RpcError {
  return new RpcError("DECODE", `A "__proto__" key is not accepted in values on the wire.`);
}

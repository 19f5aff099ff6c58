/**
 * The value codec: structured-clone fidelity over JSON text plus binary blobs.
 *
 * Two forms (see `ValueTag` in envelopes.ts):
 *  - **JSON fast path.** A value made only of plain objects, dense arrays, strings, finite
 *    numbers other than -0, booleans and null, with no object reachable twice, is sent as the
 *    JSON it already is. `isJsonSafe` decides; the frame's single `JSON.stringify` does the work.
 *  - **Record table.** Anything else is flattened into `@ungap/structured-clone`'s record layout:
 *    `[[type, payload], …]`, root at index 0, children referenced by index, so cycles and shared
 *    references survive. Type numbers and payloads are ungap's where ungap has the type (so a
 *    peer using ungap's `serialize()` can talk to a dorpc server), plus dorpc extensions
 *    (`Ext`) where ungap falls short of the structured clone algorithm: NaN/±Infinity, sparse
 *    arrays, bytes as binary blobs instead of number arrays, and Errors with stack, cause and
 *    own properties.
 *
 * Decoding never trusts the table: `validateTable` checks every record's type against an
 * allowlist, every index against the table, every length and size against the limits, and the
 * nesting depth, *before* `buildTable` constructs anything. Type names never reach a global
 * lookup; error names resolve through a null-prototype allowlist. A `__proto__` key is refused
 * outright, so no decoded object can carry one into `Object.assign`.
 *
 * Internal module: the public surface is `encode`/`decode` in index.ts.
 */
import { isRpcErrorCode, RpcError, type RpcErrorCode } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import type { RecordTable, WireRecord } from "./envelopes.js";

/** Record types shared with `@ungap/structured-clone` (its `types.js`). */
export const T = {
  VOID: -1,
  PRIMITIVE: 0,
  ARRAY: 1,
  OBJECT: 2,
  DATE: 3,
  REGEXP: 4,
  MAP: 5,
  SET: 6,
  ERROR: 7,
  BIGINT: 8,
} as const;

/** dorpc's extension record types. Numbered well clear of ungap's. */
export const Ext = {
  /** `[16, "NaN" | "Infinity" | "-Infinity"]`: JSON cannot carry these. */
  NUMBER: 16,
  /** `[17, blobIndex]`: an ArrayBuffer whose bytes are blob `blobIndex` of the frame. */
  ARRAY_BUFFER: 17,
  /** `[18, [viewName, bufferRecord, byteOffset, length]]`: a typed array or DataView. */
  VIEW: 18,
  /** `[19, [length, index, record, index, record, …]]`: an array with holes. */
  SPARSE_ARRAY: 19,
} as const;

/** ungap's string-typed records we accept: -0 and boxed primitives. */
const NEG_ZERO = "-0";

/** Views that may be rebuilt, by the name the wire uses. Null prototype: no inherited names. */
const VIEW_TYPES: Readonly<
  Record<string, { new (buffer: ArrayBuffer, byteOffset: number, length: number): ArrayBufferView; BYTES_PER_ELEMENT: number }>
> = Object.assign(Object.create(null), {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  DataView: Object.assign(
    function DataViewFactory(buffer: ArrayBuffer, byteOffset: number, length: number) {
      return new DataView(buffer, byteOffset, length);
    },
    { BYTES_PER_ELEMENT: 1 },
  ) as never,
  ...(typeof (globalThis as { Float16Array?: unknown }).Float16Array === "function"
    ? { Float16Array: (globalThis as unknown as { Float16Array: never }).Float16Array }
    : {}),
});

/** Error constructors an error record may name. Anything else becomes `Error` with that name. */
const ERROR_TYPES: Readonly<Record<string, new (message: string) => Error>> = Object.assign(Object.create(null), {
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
});

const REGEXP_FLAGS = /^[dgimsuvy]*$/;
const BIGINT_TEXT = /^-?\d+$/;
const { getPrototypeOf, keys: ownKeys, hasOwn } = Object;
const objectToString = Object.prototype.toString;
const OBJECT_PROTO = Object.prototype;
const ARRAY_PROTO = Array.prototype;

/** Deepest value the encoder walks before refusing (protects the sender's stack). */
const ENCODE_MAX_DEPTH = 1000;

// ---------------------------------------------------------------------------------------------
// Fast path
// ---------------------------------------------------------------------------------------------

/**
 * True when `value` can travel as plain JSON and come back identical: only plain objects and
 * dense arrays (ordinary prototypes), strings, booleans, null, finite numbers other than -0,
 * no `undefined` anywhere, no `__proto__` key, and no object reachable twice.
 */
export function isJsonSafe(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return value - value === 0 && (value !== 0 || 1 / value > 0);
    case "object":
      return value === null || jsonSafeObject(value, new Set(), 0);
    default:
      return false;
  }
}

/**
 * The walk behind `isJsonSafe`. Hot: every argument list and result goes through it, so it
 * avoids closures and per-node allocations; `seen` holds every object met (a second meeting is
 * a shared reference or a cycle, which JSON would duplicate or reject).
 *
 * Plain objects are walked with `for…in`, which V8 serves from the object's enum cache without
 * allocating a key array (measured ~⅓ faster than `Object.keys` on 1,000 small structs). It visits
 * every own enumerable string key, exactly the keys `JSON.stringify` writes, plus inherited
 * enumerable ones, which only exist if `Object.prototype` was polluted and then only make the
 * check stricter.
 */
function jsonSafeObject(value: object, seen: Set<object>, depth: number): boolean {
  if (depth > ENCODE_MAX_DEPTH) return false;
  const proto = getPrototypeOf(value);
  if (proto === ARRAY_PROTO) {
    if (!Array.isArray(value)) return false;
    const n = (value as unknown[]).length;
    for (let i = 0; i < n; i++) {
      // Array holes read as undefined and fail, as they must (JSON would write null).
      if (!jsonSafeChild((value as unknown[])[i], seen, depth)) return false;
    }
    return true;
  }
  if (proto !== OBJECT_PROTO && proto !== null) return false;
  if (hasOwn(value, "__proto__")) return false;
  for (const key in value) {
    if (!jsonSafeChild((value as Record<string, unknown>)[key], seen, depth)) return false;
  }
  return true;
}

function jsonSafeChild(v: unknown, seen: Set<object>, depth: number): boolean {
  switch (typeof v) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return v - v === 0 && (v !== 0 || 1 / v > 0); // finite and not -0
    case "object":
      if (v === null) return true;
      if (seen.has(v)) return false;
      seen.add(v);
      return jsonSafeObject(v, seen, depth + 1);
    default:
      return false; // undefined, function, symbol, bigint
  }
}

/**
 * Checks a value that arrived as JSON (fast path) against the limits and the `__proto__` rule.
 * `JSON.parse` only ever builds plain objects, arrays and primitives, so nothing else is needed.
 * Returns the number of nodes seen so the frame can keep one budget.
 */
export function checkJsonValue(value: unknown, limits: RpcLimits, budget: { nodes: number }): void {
  if (typeof value !== "object" || value === null) {
    if (--budget.nodes < 0) throw tooManyNodes(limits);
    return;
  }
  checkJsonObject(value, limits, budget, 1);
}

function checkJsonObject(value: object, limits: RpcLimits, budget: { nodes: number }, depth: number): void {
  if (depth > limits.maxDepth) {
    throw new RpcError("LIMIT", `Value is nested deeper than limits.maxDepth (${limits.maxDepth}).`);
  }
  if (--budget.nodes < 0) throw tooManyNodes(limits);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === "object" && v !== null) checkJsonObject(v, limits, budget, depth + 1);
      else if (--budget.nodes < 0) throw tooManyNodes(limits);
    }
    return;
  }
  if (hasOwn(value, "__proto__")) throw protoKey();
  // for…in: no key array per object (see jsonSafeObject); JSON.parse makes only own data keys.
  for (const key in value) {
    const v: unknown = (value as Record<string, unknown>)[key];
    if (typeof v === "object" && v !== null) checkJsonObject(v, limits, budget, depth + 1);
    else if (--budget.nodes < 0) throw tooManyNodes(limits);
  }
}

function tooManyNodes(limits: RpcLimits): RpcError {
  return new RpcError("LIMIT", `Frame holds more than limits.maxNodes (${limits.maxNodes}) values.`);
}

function protoKey(): RpcError {
  return new RpcError("DECODE", `A "__proto__" key is not accepted in values on the wire.`);
}

// ---------------------------------------------------------------------------------------------
// Encoding to records
// ---------------------------------------------------------------------------------------------

/** Per-frame encoding state: blobs are shared by every value in the frame. */
export interface EncodeContext {
  /** Binary payloads; a record refers to one by its index here. */
  blobs: Uint8Array[];
  /** Include `Error.stack`. */
  stack: boolean;
  /**
   * Values that travel by reference (functions, `RpcTarget`s, stubs, pending results): the
   * connection turns one into a reference record (envelopes.ts `RefRecord`), or returns
   * `undefined` when it cannot travel. Without it, such values are refused.
   */
  refer?: (value: object) => WireRecord | Substitute | undefined;
}

/** Returned by `EncodeContext.refer` when a reference stands for a value that is already known. */
export class Substitute {
  constructor(readonly value: unknown) {}
}

/** Flattens `value` into a record table. Throws `RpcError("ENCODE")` for what cannot travel. */
export function toRecords(value: unknown, ctx: EncodeContext): RecordTable {
  const writer = new RecordWriter(ctx);
  writer.add(value, 0);
  writer.trimBuffers();
  return writer.records;
}

class RecordWriter {
  readonly records: WireRecord[] = [];
  /** Objects by identity and primitives by value → record index (aliases, cycles, dedupe). */
  private readonly refs = new Map<unknown, number>();
  /** ArrayBuffer → record index, so views over one buffer share it after decoding too. */
  private readonly buffers = new Map<ArrayBufferLike, number>();

  constructor(private readonly ctx: EncodeContext) {}

  private push(record: WireRecord, key: unknown): number {
    const index = this.records.push(record) - 1;
    this.refs.set(key, index);
    return index;
  }

  add(value: unknown, depth: number): number {
    const known = this.refs.get(value);
    if (known !== undefined && !(value === 0 && 1 / (value as number) < 0)) return known;
    switch (typeof value) {
      case "string":
      case "boolean":
        return this.push([T.PRIMITIVE, value], value);
      case "number":
        if (value !== value || value === Infinity || value === -Infinity) {
          return this.push([Ext.NUMBER, String(value)], value);
        }
        if (value === 0 && 1 / value < 0) return this.records.push([NEG_ZERO as never]) - 1;
        return this.push([T.PRIMITIVE, value], value);
      case "undefined":
        return this.push([T.VOID], value);
      case "bigint":
        return this.push([T.BIGINT, value.toString()], value);
      case "object":
        if (value === null) return this.push([T.PRIMITIVE, null], value);
        if (depth > ENCODE_MAX_DEPTH) {
          throw new RpcError("ENCODE", `Value is nested deeper than ${ENCODE_MAX_DEPTH} levels.`);
        }
        return this.addObject(value, depth + 1);
      case "function": {
        const ref = this.ctx.refer?.(value);
        if (ref instanceof Substitute) return this.add(ref.value, depth);
        if (ref) return this.push(ref, value);
        throw new RpcError("ENCODE", `Cannot send a function${value.name ? ` (${value.name})` : ""}: functions do not cross the wire.`);
      }
      default:
        throw new RpcError("ENCODE", `Cannot send a ${typeof value}: it does not cross the wire.`);
    }
  }

  private addObject(value: object, depth: number): number {
    const proto = getPrototypeOf(value);
    if (proto === ARRAY_PROTO && Array.isArray(value)) return this.addArray(value, depth);
    if (proto === OBJECT_PROTO || proto === null) return this.addPlain(value as Record<string, unknown>, depth);

    const tag = objectToString.call(value).slice(8, -1);
    switch (tag) {
      case "Date": {
        const time = (value as Date).getTime();
        return this.push([T.DATE, time === time ? time : ""], value);
      }
      case "RegExp": {
        const { source, flags } = value as RegExp;
        return this.push([T.REGEXP, { source, flags }], value);
      }
      case "Map": {
        const entries: [number, number][] = [];
        const index = this.push([T.MAP, entries], value);
        for (const [k, v] of value as Map<unknown, unknown>) entries.push([this.add(k, depth), this.add(v, depth)]);
        return index;
      }
      case "Set": {
        const entries: number[] = [];
        const index = this.push([T.SET, entries], value);
        for (const v of value as Set<unknown>) entries.push(this.add(v, depth));
        return index;
      }
      case "ArrayBuffer":
        return this.addBuffer(value as ArrayBuffer);
      case "Boolean":
      case "String":
        return this.push([tag as never, (value as { valueOf(): unknown }).valueOf()], value);
      case "Number": {
        // JSON has no NaN, ±Infinity or -0: those go as strings (`new Number("-0")` agrees).
        const n = (value as Number).valueOf();
        const payload = n !== n || n === Infinity || n === -Infinity ? String(n) : n === 0 && 1 / n < 0 ? NEG_ZERO : n;
        return this.push([tag as never, payload], value);
      }
      case "BigInt":
        return this.push([tag as never, (value as unknown as bigint).valueOf().toString()], value);
      case "Array":
        // An array from another realm, or with an unusual prototype: its elements still travel.
        return this.addArray(value as unknown[], depth);
    }
    if (ArrayBuffer.isView(value)) return this.addView(value, tag);
    if (value instanceof Error || tag === "Error") return this.addError(value as Error, depth);
    const ref = this.ctx.refer?.(value);
    if (ref instanceof Substitute) return this.add(ref.value, depth);
    if (ref) return this.push(ref, value);
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    throw new RpcError(
      "ENCODE",
      `Cannot send an instance of ${typeof name === "string" && name ? name : tag}: only plain objects, arrays and structured-clone types cross the wire.`,
    );
  }

  private addArray(value: unknown[], depth: number): number {
    const n = value.length;
    let dense = true;
    for (let i = 0; i < n; i++) {
      if (!(i in value)) {
        dense = false;
        break;
      }
    }
    if (dense) {
      const items: number[] = new Array(n);
      const index = this.push([T.ARRAY, items], value);
      for (let i = 0; i < n; i++) items[i] = this.add(value[i], depth);
      return index;
    }
    const payload: number[] = [n];
    const index = this.push([Ext.SPARSE_ARRAY, payload], value);
    for (const key of ownKeys(value)) {
      const i = Number(key);
      if (Number.isInteger(i) && i >= 0 && i < n && String(i) === key) payload.push(i, this.add(value[i], depth));
    }
    return index;
  }

  private addPlain(value: Record<string, unknown>, depth: number): number {
    const entries: [number, number][] = [];
    const index = this.push([T.OBJECT, entries], value);
    const keys = ownKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === "__proto__") {
        throw new RpcError("ENCODE", `Cannot send an object with an own "__proto__" key.`);
      }
      entries.push([this.add(key, depth), this.add(value[key], depth)]);
    }
    return index;
  }

  private addBuffer(buffer: ArrayBufferLike): number {
    const known = this.buffers.get(buffer);
    if (known !== undefined) {
      this.bufferUses.set(known, (this.bufferUses.get(known) ?? 1) + 1);
      return known;
    }
    if (objectToString.call(buffer) !== "[object ArrayBuffer]") {
      throw new RpcError("ENCODE", `Cannot send a SharedArrayBuffer: only ArrayBuffer bytes cross the wire.`);
    }
    const blob = this.ctx.blobs.push(new Uint8Array(buffer)) - 1;
    // Tracked in `buffers` only (not `refs`), so every reference comes through here and counts.
    const index = this.records.push([Ext.ARRAY_BUFFER, blob]) - 1;
    this.buffers.set(buffer, index);
    return index;
  }

  /** Buffer record → how many times the value refers to it (absent: once). */
  private readonly bufferUses = new Map<number, number>();
  /** Views whose buffer record may be trimmed to the view's own bytes. */
  private readonly views: [viewRecord: [string, number, number, number], view: ArrayBufferView][] = [];

  /**
   * A view is sent with only its own bytes when nothing else in the value refers to its buffer.
   * The structured clone algorithm would copy the whole buffer, but over a network that leaks
   * whatever else shares it: Node's `Buffer.from("hi")` sits in an 8 KiB pool of unrelated
   * data. Views that share a buffer with another part of the value keep sharing it.
   */
  trimBuffers(): void {
    for (const [payload, view] of this.views) {
      const bufferRecord = payload[1];
      if (this.bufferUses.has(bufferRecord)) continue;
      const blob = (this.records[bufferRecord] as [number, number])[1];
      if (view.byteLength === view.buffer.byteLength) continue;
      this.ctx.blobs[blob] = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
      payload[2] = 0;
    }
  }

  private addView(view: ArrayBufferView, tag: string): number {
    if (!(tag in VIEW_TYPES)) throw new RpcError("ENCODE", `Cannot send a ${tag}.`);
    // Push the view before its buffer: the first value added must get index 0 (the root).
    const payload: [string, number, number, number] = [
      tag,
      -1,
      view.byteOffset,
      tag === "DataView" ? view.byteLength : (view as Uint8Array).length,
    ];
    const index = this.push([Ext.VIEW, payload], view);
    payload[1] = this.addBuffer(view.buffer);
    this.views.push([payload, view]);
    return index;
  }

  private addError(error: Error, depth: number): number {
    const payload: { name: string; message: string; stack?: string; cause?: number; props?: [number, number][] } = {
      name: errorName(error),
      message: typeof error.message === "string" ? error.message : String(error.message),
    };
    const index = this.push([T.ERROR, payload], error);
    if (this.ctx.stack && typeof error.stack === "string") payload.stack = error.stack;
    if (hasOwn(error, "cause")) payload.cause = this.add(error.cause, depth);
    const props: [number, number][] = [];
    for (const key of ownKeys(error)) {
      if (key === "name" || key === "message" || key === "stack" || key === "cause" || key === "__proto__") continue;
      const v = (error as unknown as Record<string, unknown>)[key];
      // Thrown errors often carry handles (a response, a socket): skip what cannot travel rather
      // than lose the whole error.
      if (typeof v === "function" || typeof v === "symbol") continue;
      props.push([this.add(key, depth), this.add(v, depth)]);
    }
    // AggregateError#errors is an own but non-enumerable property: carry it explicitly.
    if (error instanceof AggregateError && Array.isArray(error.errors) && !Object.prototype.propertyIsEnumerable.call(error, "errors")) {
      props.push([this.add("errors", depth), this.add(error.errors, depth)]);
    }
    if (props.length) payload.props = props;
    return index;
  }
}

function errorName(error: Error): string {
  const name = error.name;
  if (typeof name === "string" && name !== "Error") return name;
  // `class NotFound extends Error {}` leaves name "Error": the class name is what users expect.
  const ctor = (error as { constructor?: { name?: unknown } }).constructor;
  if (ctor && ctor !== Error && typeof ctor.name === "string" && ctor.name) return ctor.name;
  return typeof name === "string" ? name : "Error";
}

// ---------------------------------------------------------------------------------------------
// Decoding records
// ---------------------------------------------------------------------------------------------

/** Per-frame decoding state. */
export interface DecodeContext {
  blobs: readonly Uint8Array[];
  limits: RpcLimits;
  /** Remaining node budget for the whole frame. */
  budget: { nodes: number };
  /** Reference records (envelopes.ts `RefRecord`): refused unless a connection resolves them. */
  refs?: ReferenceResolver;
}

/** How a connection checks and rebuilds reference records; see envelopes.ts `RefRecord`. */
export interface ReferenceResolver {
  /** Checks a reference record's payload while the table is validated (nothing built yet). Throws `RpcError`. */
  validate(type: number, payload: unknown, index: number): void;
  /** The value a validated reference record stands for. Throws `RpcError`. */
  build(type: number, payload: unknown): unknown;
}

/** Record types owned by the connection, not the codec (envelopes.ts `RefRecord`). */
const REF_TYPES = new Set<unknown>([20, 21, 22]);

function bad(message: string): RpcError {
  return new RpcError("DECODE", message);
}

function isIndex(value: unknown, size: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value < size;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/**
 * Rebuilds the value of a record table after validating all of it. Throws `RpcError` with code
 * `DECODE` (malformed or forbidden) or `LIMIT` (too large, too deep) and builds nothing then.
 */
export function fromRecords(table: unknown, ctx: DecodeContext): unknown {
  validateTable(table, ctx);
  return new TableBuilder(table as RecordTable, ctx).build(0);
}

/** Builds the value of a table that `validateTable` accepted (with the same context). */
export function buildTable(table: unknown, ctx: DecodeContext): unknown {
  return new TableBuilder(table as RecordTable, ctx).build(0);
}

/** Structural validation of a whole table; see the module comment. */
export function validateTable(table: unknown, ctx: DecodeContext): asserts table is RecordTable {
  const { limits } = ctx;
  if (!Array.isArray(table) || table.length === 0) throw bad("A record table must be a non-empty array.");
  const size = table.length;
  ctx.budget.nodes -= size;
  if (ctx.budget.nodes < 0) throw tooManyNodes(limits);
  for (let i = 0; i < size; i++) {
    const record: unknown = table[i];
    if (!Array.isArray(record) || record.length === 0 || record.length > 2) {
      throw bad(`Record ${i} is not a [type, payload] pair.`);
    }
    validateRecord(table, record[0], record[1], record.length, i, ctx);
  }
  checkShape(table as RecordTable, limits);
}

function validateRecord(table: unknown[], type: unknown, p: unknown, arity: number, i: number, ctx: DecodeContext): void {
  const { limits } = ctx;
  const size = table.length;
  switch (type) {
    case T.VOID:
      if (arity !== 1) throw bad(`Record ${i} (undefined) has a payload.`);
      return;
    case NEG_ZERO:
      if (arity !== 1) throw bad(`Record ${i} (-0) has a payload.`);
      return;
    case T.PRIMITIVE:
      if (p !== null && typeof p !== "string" && typeof p !== "boolean" && typeof p !== "number") {
        throw bad(`Record ${i} is a primitive record whose payload is not a primitive.`);
      }
      return;
    case T.ARRAY:
    case T.SET:
      if (!Array.isArray(p)) throw bad(`Record ${i} needs an array of indexes.`);
      for (let j = 0; j < p.length; j++) {
        if (!isIndex(p[j], size)) throw bad(`Record ${i} refers to record ${String(p[j])}, outside the table of ${size}.`);
      }
      return;
    case T.OBJECT:
    case T.MAP:
      if (!Array.isArray(p)) throw bad(`Record ${i} needs an array of [key, value] index pairs.`);
      for (let j = 0; j < p.length; j++) {
        const pair: unknown = p[j];
        if (!Array.isArray(pair) || pair.length !== 2 || !isIndex(pair[0], size) || !isIndex(pair[1], size)) {
          throw bad(`Record ${i} has an entry that is not a pair of indexes within the table of ${size}.`);
        }
        if (type === T.OBJECT) {
          const key: unknown = table[pair[0]];
          if (!Array.isArray(key) || key[0] !== T.PRIMITIVE || typeof key[1] !== "string") {
            throw bad(`Record ${i} has a property key that is not a string.`);
          }
          if (key[1] === "__proto__") throw protoKey();
        }
      }
      return;
    case T.DATE:
      if (typeof p === "number" ? !Number.isFinite(p) : typeof p !== "string" || p.length > 64) {
        throw bad(`Record ${i} is a Date whose payload is neither a time value nor a short date string.`);
      }
      return;
    case T.REGEXP: {
      if (typeof p !== "object" || p === null) throw bad(`Record ${i} is a RegExp without {source, flags}.`);
      const { source, flags } = p as { source?: unknown; flags?: unknown };
      if (typeof source !== "string" || typeof flags !== "string" || !REGEXP_FLAGS.test(flags)) {
        throw bad(`Record ${i} is a RegExp with an invalid source or flags.`);
      }
      if (source.length > limits.maxRegExpSource) {
        throw new RpcError("LIMIT", `RegExp source is longer than limits.maxRegExpSource (${limits.maxRegExpSource}).`);
      }
      return;
    }
    case T.ERROR: {
      if (typeof p !== "object" || p === null) throw bad(`Record ${i} is an Error without a payload.`);
      const { name, message, stack, cause, props } = p as Record<string, unknown>;
      if (typeof name !== "string" || typeof message !== "string" || name.length > 256) {
        throw bad(`Record ${i} is an Error whose name or message is not a string.`);
      }
      if (stack !== undefined && typeof stack !== "string") throw bad(`Record ${i} has a non-string stack.`);
      if (cause !== undefined && !isIndex(cause, size)) throw bad(`Record ${i} has a cause outside the table.`);
      if (props !== undefined) validateRecord(table, T.OBJECT, props, 2, i, ctx);
      return;
    }
    case T.BIGINT:
    case "BigInt":
      if (typeof p !== "string" || !BIGINT_TEXT.test(p)) throw bad(`Record ${i} is a BigInt that is not an integer string.`);
      if (p.length - (p.startsWith("-") ? 1 : 0) > limits.maxBigIntDigits) {
        throw new RpcError("LIMIT", `BigInt has more than limits.maxBigIntDigits (${limits.maxBigIntDigits}) digits.`);
      }
      return;
    case "Number":
      if (typeof p !== "number" && p !== "NaN" && p !== "Infinity" && p !== "-Infinity" && p !== NEG_ZERO) {
        throw bad(`Record ${i} is a boxed Number of the wrong type.`);
      }
      return;
    case "Boolean":
    case "String":
      if (typeof p !== (type as string).toLowerCase()) throw bad(`Record ${i} is a boxed ${type as string} of the wrong type.`);
      return;
    case Ext.NUMBER:
      if (p !== "NaN" && p !== "Infinity" && p !== "-Infinity") throw bad(`Record ${i} is not NaN or ±Infinity.`);
      return;
    case Ext.ARRAY_BUFFER:
      if (!isIndex(p, ctx.blobs.length)) throw bad(`Record ${i} refers to blob ${String(p)}, but the frame has ${ctx.blobs.length}.`);
      return;
    case Ext.VIEW: {
      if (!Array.isArray(p) || p.length !== 4) throw bad(`Record ${i} is a view without [type, buffer, offset, length].`);
      const [name, buffer, offset, length] = p as unknown[];
      const View = typeof name === "string" ? VIEW_TYPES[name] : undefined;
      if (!View) throw bad(`Record ${i} names view type ${JSON.stringify(name)}, which is not allowed.`);
      if (!isIndex(buffer, size) || !isCount(offset) || !isCount(length)) {
        throw bad(`Record ${i} has an invalid buffer index, offset or length.`);
      }
      if (offset % View.BYTES_PER_ELEMENT !== 0) {
        throw bad(`Record ${i}: a ${String(name)} must start at a multiple of ${View.BYTES_PER_ELEMENT} bytes.`);
      }
      const source: unknown = table[buffer];
      const blob =
        Array.isArray(source) && source[0] === Ext.ARRAY_BUFFER && isIndex(source[1], ctx.blobs.length) ? ctx.blobs[source[1]]! : undefined;
      if (!blob) throw bad(`Record ${i} is a view whose buffer record ${buffer} is not an ArrayBuffer.`);
      if (offset + length * View.BYTES_PER_ELEMENT > blob.byteLength) {
        throw bad(
          `Record ${i}: a ${String(name)} of ${length} elements at byte ${offset} does not fit its ${blob.byteLength}-byte buffer.`,
        );
      }
      return;
    }
    case Ext.SPARSE_ARRAY: {
      if (!Array.isArray(p) || p.length % 2 !== 1 || !isCount(p[0])) {
        throw bad(`Record ${i} is a sparse array without [length, index, record, …].`);
      }
      const length = p[0];
      if (length > limits.maxNodes) throw new RpcError("LIMIT", `Sparse array length exceeds limits.maxNodes (${limits.maxNodes}).`);
      for (let j = 1; j < p.length; j += 2) {
        if (!isIndex(p[j], length) || !isIndex(p[j + 1], size)) throw bad(`Record ${i} has an entry outside its bounds.`);
      }
      return;
    }
    default:
      if (ctx.refs && REF_TYPES.has(type)) {
        if (arity !== 2) throw bad(`Record ${i} is a reference without a payload.`);
        ctx.refs.validate(type as number, p, i);
        return;
      }
      throw bad(`Record ${i} has type ${JSON.stringify(type) ?? String(type)}, which is not an allowed record type.`);
  }
}

/** Children of a validated record, in the order `TableBuilder` builds them. */
function childrenOf(record: WireRecord): number[] {
  const [type, p] = record;
  switch (type) {
    case T.ARRAY:
    case T.SET:
      return p as number[];
    case T.OBJECT:
    case T.MAP: {
      // A plain loop: Array.prototype.flat is several times slower in V8 on this hot path.
      const pairs = p as [number, number][];
      const out: number[] = new Array(pairs.length * 2);
      for (let j = 0; j < pairs.length; j++) {
        const pair = pairs[j]!;
        out[2 * j] = pair[0];
        out[2 * j + 1] = pair[1];
      }
      return out;
    }
    case T.ERROR: {
      const { cause, props } = p as { cause?: number; props?: [number, number][] };
      const out = cause !== undefined ? [cause] : [];
      if (props) for (const [k, v] of props) out.push(k, v);
      return out;
    }
    case Ext.VIEW:
      return [(p as unknown[])[1] as number];
    case Ext.SPARSE_ARRAY:
      return (p as number[]).filter((_, j) => j > 0 && j % 2 === 0);
    default:
      return [];
  }
}

/**
 * Walks the table depth-first from the root in the builder's order, without building anything:
 *  - the deepest point of the walk is exactly the builder's deepest recursion, so it is checked
 *    against `maxDepth` here and the builder cannot exhaust the stack;
 *  - the longest path through the value is checked against `maxDepth` too: each record's height
 *    (1 + its tallest non-leaf child, an edge back into the current path not followed) is known
 *    when the walk leaves it, so a shared record reached first by a short path and later by a
 *    long one still counts at its real depth. For an acyclic value this is exactly how deep a
 *    walk that ignores identity (JSON.stringify, naive deep-equal, logging) recurses;
 *  - the size of the value *as a tree* (every shared reference counted again, a reference back
 *    into the current path counted once) is checked against `maxExpandedNodes`, so a few
 *    hundred records of nested aliases cannot become 2^60 nodes for such code.
 * Iterative: a hostile chain of records cannot overflow the stack of this walk either.
 */
function checkShape(table: RecordTable, limits: RpcLimits): void {
  const n = table.length;
  const state = new Uint8Array(n); // 0 new, 1 on the path, 2 done
  const size = new Float64Array(n);
  const height = new Uint32Array(n); // non-leaf records on the longest path down from here; 0 for leaves
  const children: (number[] | undefined)[] = new Array(n);
  const path: number[] = [0];
  const next: number[] = [0];
  state[0] = 1;
  size[0] = 1;
  children[0] = childrenOf(table[0]!);
  height[0] = children[0].length > 0 ? 1 : 0;
  while (path.length) {
    const top = path.length - 1;
    const node = path[top]!;
    const kids = children[node]!;
    const k = next[top]!;
    if (k < kids.length) {
      next[top] = k + 1;
      const child = kids[k]!;
      if (state[child] === 0) {
        const grandchildren = childrenOf(table[child]!);
        if (grandchildren.length === 0) {
          // A leaf (primitive, Date, bytes, …): no nesting level of its own, as on the JSON path.
          state[child] = 2;
          size[child] = 1;
          size[node]! += 1;
          continue;
        }
        if (path.length >= limits.maxDepth) {
          throw new RpcError("LIMIT", `Value is nested deeper than limits.maxDepth (${limits.maxDepth}).`);
        }
        state[child] = 1;
        size[child] = 1;
        height[child] = 1;
        children[child] = grandchildren;
        path.push(child);
        next.push(0);
      } else {
        size[node]! += state[child] === 2 ? size[child]! : 1;
        if (state[child] === 2 && height[child]! + 1 > height[node]!) height[node] = height[child]! + 1;
      }
      continue;
    }
    path.pop();
    next.pop();
    state[node] = 2;
    children[node] = undefined;
    // `top` records lead to `node` on the current path, then its own longest way down.
    if (top + height[node]! > limits.maxDepth) {
      throw new RpcError("LIMIT", `Value is nested deeper than limits.maxDepth (${limits.maxDepth}).`);
    }
    if (top > 0) {
      const parent = path[top - 1]!;
      if (height[node]! + 1 > height[parent]!) height[parent] = height[node]! + 1;
    }
    if (size[node]! > limits.maxExpandedNodes) {
      throw new RpcError(
        "LIMIT",
        `Value expands to more than limits.maxExpandedNodes (${limits.maxExpandedNodes}) nodes when shared references are followed.`,
      );
    }
    if (path.length) size[path[path.length - 1]!]! += size[node]!;
  }
}

class TableBuilder {
  private readonly built: unknown[];
  private readonly done: Uint8Array;

  constructor(
    private readonly table: RecordTable,
    private readonly ctx: DecodeContext,
  ) {
    this.built = new Array(table.length);
    this.done = new Uint8Array(table.length);
  }

  private as<V>(index: number, value: V): V {
    this.built[index] = value;
    this.done[index] = 1;
    return value;
  }

  build(index: number): unknown {
    if (this.done[index]) return this.built[index];
    const [type, p] = this.table[index]!;
    switch (type) {
      case T.PRIMITIVE:
        return p;
      case T.VOID:
        return undefined;
      case NEG_ZERO as never:
        return -0;
      case Ext.NUMBER:
        return Number(p);
      case T.BIGINT:
        return this.as(index, BigInt(p as string));
      case T.ARRAY: {
        const ids = p as number[];
        const arr: unknown[] = this.as(index, new Array(ids.length));
        for (let j = 0; j < ids.length; j++) arr[j] = this.build(ids[j]!);
        return arr;
      }
      case Ext.SPARSE_ARRAY: {
        const items = p as number[];
        const arr: unknown[] = this.as(index, new Array(items[0]));
        for (let j = 1; j < items.length; j += 2) arr[items[j]!] = this.build(items[j + 1]!);
        return arr;
      }
      case T.OBJECT: {
        const obj: Record<string, unknown> = this.as(index, {});
        this.fill(obj, p as [number, number][]);
        return obj;
      }
      case T.DATE:
        return this.as(index, new Date(p as number | string));
      case T.REGEXP: {
        const { source, flags } = p as { source: string; flags: string };
        let re: RegExp;
        try {
          re = new RegExp(source, flags);
        } catch {
          throw bad(`Record ${index} is not a valid RegExp: /${source.slice(0, 40)}/${flags}.`);
        }
        return this.as(index, re);
      }
      case T.MAP: {
        const map = this.as(index, new Map<unknown, unknown>());
        for (const [k, v] of p as [number, number][]) map.set(this.build(k), this.build(v));
        return map;
      }
      case T.SET: {
        const set = this.as(index, new Set<unknown>());
        for (const v of p as number[]) set.add(this.build(v));
        return set;
      }
      case T.ERROR:
        return this.buildError(index, p as { name: string; message: string; stack?: string; cause?: number; props?: [number, number][] });
      case "BigInt" as never:
        return this.as(index, Object(BigInt(p as string)));
      case "Number" as never:
        return this.as(index, Object(Number(p)));
      case "Boolean" as never:
      case "String" as never:
        return this.as(index, Object(p));
      case Ext.ARRAY_BUFFER: {
        const blob = this.ctx.blobs[p as number]!;
        return this.as(index, blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
      }
      case Ext.VIEW: {
        const [name, bufferIndex, offset, length] = p as [string, number, number, number];
        // validateTable checked the type, the buffer record and the bounds.
        const buffer = this.build(bufferIndex) as ArrayBuffer;
        return this.as(index, new VIEW_TYPES[name]!(buffer, offset, length));
      }
    }
    if (this.ctx.refs && REF_TYPES.has(type)) return this.as(index, this.ctx.refs.build(type as number, p));
    throw bad(`Record ${index} has an unexpected type.`); // unreachable after validateTable
  }

  /** Own data properties only; `__proto__` is refused, never assigned. */
  private fill(target: Record<string, unknown>, entries: [number, number][]): void {
    for (let j = 0; j < entries.length; j++) {
      const [k, v] = entries[j]!;
      // validateTable checked: the key is a string record and not "__proto__".
      target[this.build(k) as string] = this.build(v);
    }
  }

  /**
   * The `code` an error record named "RpcError" carries, if it is one of dorpc's codes: such an
   * error (dorpc's own failure thrown inside a method, e.g. by a released stub) is rebuilt as a
   * real `RpcError`, so `instanceof RpcError` holds on the other end too.
   */
  private rpcErrorCode(props: [number, number][] | undefined): RpcErrorCode | undefined {
    for (const [k, v] of props ?? []) {
      const key = this.table[k]!;
      const value = this.table[v]!;
      if (key[1] === "code" && value[0] === T.PRIMITIVE && isRpcErrorCode(value[1])) return value[1];
    }
    return undefined;
  }

  private buildError(
    index: number,
    p: { name: string; message: string; stack?: string; cause?: number; props?: [number, number][] },
  ): Error {
    const code = p.name === "RpcError" ? this.rpcErrorCode(p.props) : undefined;
    const error: Error = code
      ? new RpcError(code, p.message)
      : p.name === "AggregateError"
        ? new AggregateError([], p.message)
        : new (ERROR_TYPES[p.name] ?? Error)(p.message);
    this.as(index, error);
    if (error.name !== p.name) defineHidden(error, "name", p.name);
    if (p.stack !== undefined) defineHidden(error, "stack", p.stack);
    if (p.cause !== undefined) defineHidden(error, "cause", this.build(p.cause));
    if (p.props) {
      const props: Record<string, unknown> = {};
      this.fill(props, p.props);
      for (const key of ownKeys(props)) {
        if (key === "errors" && error instanceof AggregateError) defineHidden(error, key, props[key]);
        else (error as unknown as Record<string, unknown>)[key] = props[key];
      }
    }
    return error;
  }
}

/** Like the engine's own `name`/`stack`/`cause`: writable, configurable, not enumerable. */
function defineHidden(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// Value slots and standalone values
// ---------------------------------------------------------------------------------------------

/** Decodes a value carried as JSON (`ValueTag.Json`) or as a record table (`ValueTag.Records`). */
export function readValue(tag: unknown, payload: unknown, ctx: DecodeContext): unknown {
  if (tag === 0) {
    checkJsonValue(payload, ctx.limits, ctx.budget);
    return payload;
  }
  if (tag === 1) return fromRecords(payload, ctx);
  throw bad(`Unknown value tag ${JSON.stringify(tag) ?? String(tag)}.`);
}

/** A fresh decode context for one frame. */
export function decodeContext(blobs: readonly Uint8Array[], limits: RpcLimits): DecodeContext {
  return { blobs, limits, budget: { nodes: limits.maxNodes } };
}

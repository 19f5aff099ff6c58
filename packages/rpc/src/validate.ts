/**
 * Validation of a record table before anything is built: every record's type against an
 * allowlist, every index against the table, every length and size against the limits, then
 * the shape of the whole value (depth along its longest path, size when shared references are
 * followed). Type names never reach a global lookup. Iterative: a hostile chain of records cannot
 * overflow the stack, and neither can a legitimate value 10,000 levels deep.
 *
 * Internal module.
 */
import type { DecodeContext } from "./decoder.js";
import type { RecordTable, WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { protoKey, tooDeep, tooManyNodes } from "./json-path.js";
import type { RpcLimits } from "./limits.js";
import { Ext, isReferenceType, NEG_ZERO, T, VIEW_TYPES } from "./records.js";

const REGEXP_FLAGS = /^[dgimsuvy]*$/;
const BIGINT_TEXT = /^-?\d+$/;
/** Error names longer than this are refused: a name is a class name, not a payload. */
const MAX_ERROR_NAME = 256;

export function bad(message: string): RpcError {
  return new RpcError("DECODE", message);
}

function isIndex(value: unknown, size: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value < size;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** True for a key that would assign an array element rather than a named property. */
function isArrayIndexKey(key: string): boolean {
  const i = Number(key);
  return Number.isInteger(i) && i >= 0 && i < 2 ** 32 - 1 && String(i) === key;
}

/** Structural validation of a whole table; see the module comment. Builds nothing. */
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

/** `[key, value]` index pairs; with `stringKeys`, every key must be a string record other than `__proto__`. */
function validatePairs(table: unknown[], p: unknown, i: number, stringKeys: boolean): void {
  const size = table.length;
  if (!Array.isArray(p)) throw bad(`Record ${i} needs an array of [key, value] index pairs.`);
  for (let j = 0; j < p.length; j++) {
    const pair: unknown = p[j];
    if (!Array.isArray(pair) || pair.length !== 2 || !isIndex(pair[0], size) || !isIndex(pair[1], size)) {
      throw bad(`Record ${i} has an entry that is not a pair of indexes within the table of ${size}.`);
    }
    if (stringKeys) {
      const key: unknown = table[pair[0]];
      if (!Array.isArray(key) || key[0] !== T.PRIMITIVE || typeof key[1] !== "string") {
        throw bad(`Record ${i} has a property key that is not a string.`);
      }
      if (key[1] === "__proto__") throw protoKey();
    }
  }
}

/** The blob index of a blob-carrying payload's first element, checked against the frame. */
function blobAt(p: unknown, i: number, ctx: DecodeContext): Uint8Array {
  if (!isIndex(p, ctx.blobs.length)) throw bad(`Record ${i} refers to blob ${String(p)}, but the frame has ${ctx.blobs.length}.`);
  return ctx.blobs[p]!;
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
      validatePairs(table, p, i, type === T.OBJECT);
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
      if (typeof name !== "string" || name.length > MAX_ERROR_NAME || (message !== undefined && typeof message !== "string")) {
        throw bad(`Record ${i} is an Error whose name or message is not a string.`);
      }
      if (stack !== undefined && typeof stack !== "string") throw bad(`Record ${i} has a non-string stack.`);
      if (cause !== undefined && !isIndex(cause, size)) throw bad(`Record ${i} has a cause outside the table.`);
      if (props !== undefined) validatePairs(table, props, i, true);
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
      if (typeof p !== "number" && p !== null && p !== "NaN" && p !== "Infinity" && p !== "-Infinity" && p !== NEG_ZERO) {
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
      blobAt(p, i, ctx);
      return;
    case Ext.RESIZABLE_BUFFER: {
      if (!Array.isArray(p) || p.length !== 2) throw bad(`Record ${i} is a resizable ArrayBuffer without [blob, maxByteLength].`);
      const blob = blobAt(p[0], i, ctx);
      if (!isCount(p[1]) || p[1] < blob.byteLength) throw bad(`Record ${i} has a maxByteLength below its length.`);
      // A resizable buffer reserves its maximum up front: a peer must not make us reserve more
      // than a frame may carry.
      if (p[1] > limits.maxMessageBytes) {
        throw new RpcError("LIMIT", `A resizable ArrayBuffer's maxByteLength exceeds limits.maxMessageBytes (${limits.maxMessageBytes}).`);
      }
      return;
    }
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
      const blobIndex = !Array.isArray(source)
        ? undefined
        : source[0] === Ext.ARRAY_BUFFER
          ? source[1]
          : source[0] === Ext.RESIZABLE_BUFFER && Array.isArray(source[1])
            ? source[1][0]
            : undefined;
      const blob = isIndex(blobIndex, ctx.blobs.length) ? ctx.blobs[blobIndex]! : undefined;
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
      validateElements(p, 1, p[0], i, size, limits);
      return;
    }
    case Ext.ARRAY_WITH_PROPS: {
      if (!Array.isArray(p) || p.length !== 3 || !isCount(p[0]) || !Array.isArray(p[1]) || p[1].length % 2 !== 0) {
        throw bad(`Record ${i} is an array with properties without [length, [index, record, …], [[key, value], …]].`);
      }
      validateElements(p[1], 0, p[0], i, size, limits);
      validatePairs(table, p[2], i, true);
      for (const [k] of p[2] as [number, number][]) {
        const key = (table[k] as [number, string])[1];
        if (key === "length" || isArrayIndexKey(key))
          throw bad(`Record ${i} names an array property "${key}", which is not a named property.`);
      }
      return;
    }
    case Ext.BLOB:
      if (!Array.isArray(p) || p.length !== 2 || typeof p[1] !== "string") throw bad(`Record ${i} is a Blob without [blob, type].`);
      blobAt(p[0], i, ctx);
      return;
    case Ext.FILE:
      if (!Array.isArray(p) || p.length !== 4 || typeof p[1] !== "string" || typeof p[2] !== "string" || !Number.isFinite(p[3])) {
        throw bad(`Record ${i} is a File without [blob, type, name, lastModified].`);
      }
      blobAt(p[0], i, ctx);
      return;
    default:
      if (ctx.refs && isReferenceType(type)) {
        if (arity !== 2) throw bad(`Record ${i} is a reference without a payload.`);
        ctx.refs.validate(type as number, p, i);
        return;
      }
      throw bad(`Record ${i} has type ${JSON.stringify(type) ?? String(type)}, which is not an allowed record type.`);
  }
}

/** `[index, record, …]` from `start`: indexes below `length`, records inside the table. */
function validateElements(p: unknown[], start: number, length: number, i: number, size: number, limits: RpcLimits): void {
  if (length > limits.maxNodes) throw new RpcError("LIMIT", `Sparse array length exceeds limits.maxNodes (${limits.maxNodes}).`);
  for (let j = start; j < p.length; j += 2) {
    if (!isIndex(p[j], length) || !isIndex(p[j + 1], size)) throw bad(`Record ${i} has an entry outside its bounds.`);
  }
}

/** Children of a validated record, in the order they were written. */
function childrenOf(record: WireRecord): number[] {
  const [type, p] = record;
  switch (type) {
    case T.ARRAY:
    case T.SET:
      return p as number[];
    case T.OBJECT:
    case T.MAP:
      return flattenPairs(p as [number, number][], 0);
    case T.ERROR: {
      const { cause, props } = p as { cause?: number; props?: [number, number][] };
      if (!props) return cause !== undefined ? [cause] : [];
      const out = flattenPairs(props, cause !== undefined ? 1 : 0);
      if (cause !== undefined) out[0] = cause;
      return out;
    }
    case Ext.VIEW:
      return [(p as unknown[])[1] as number];
    case Ext.SPARSE_ARRAY:
      return everyOther(p as number[], 2);
    case Ext.ARRAY_WITH_PROPS: {
      const [, elements, props] = p as [number, number[], [number, number][]];
      return everyOther(elements, 1).concat(flattenPairs(props, 0));
    }
    default:
      return [];
  }
}

/**
 * Pairs as one flat list, after `offset` empty slots. A plain loop into a preallocated array:
 * Array.prototype.flat is several times slower in V8 on this hot path.
 */
function flattenPairs(pairs: [number, number][], offset: number): number[] {
  const out: number[] = new Array(offset + pairs.length * 2);
  for (let j = 0; j < pairs.length; j++) {
    const pair = pairs[j]!;
    out[offset + 2 * j] = pair[0];
    out[offset + 2 * j + 1] = pair[1];
  }
  return out;
}

function everyOther(items: number[], start: number): number[] {
  const out: number[] = [];
  for (let j = start; j < items.length; j += 2) out.push(items[j]!);
  return out;
}

/**
 * Walks the table depth-first from the root, without building anything:
 *  - the longest path through the value is checked against `maxDepth`: each record's height
 *    (1 + its tallest non-leaf child, an edge back into the current path not followed) is known
 *    when the walk leaves it, so a shared record reached first by a short path and later by a
 *    long one still counts at its real depth. For an acyclic value this is exactly how deep a
 *    walk that ignores identity (JSON.stringify, naive deep-equal, logging) recurses;
 *  - the size of the value *as a tree* (every shared reference counted again, a reference back
 *    into the current path counted once) is checked against `maxExpandedNodes`, so a few
 *    hundred records of nested aliases cannot become 2^60 nodes for such code.
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
        if (path.length >= limits.maxDepth) throw tooDeep(limits);
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
    if (top + height[node]! > limits.maxDepth) throw tooDeep(limits);
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

/**
 * The value codec: structured-clone fidelity over JSON text plus binary blobs. This file is the
 * codec's surface for the connection code: one way in for a value (`writeValue`), one for an
 * argument list (`writeArgs`), and their inverses. The work is done by
 *  - json-path.ts: the JSON fast path (plain objects, dense arrays, strings, finite numbers
 *    other than -0, booleans, null, nothing reachable twice), which costs what JSON costs;
 *  - bytes.ts: a lone ArrayBuffer, typed array or DataView, which costs what its bytes cost;
 *  - encoder.ts / decoder.ts: everything else, as a record table in `@ungap/structured-clone`'s
 *    layout with dorpc's extensions (records.ts), validated whole before anything is built;
 *  - blobs.ts: Blob and File, whose bytes are read asynchronously before the frame is written.
 *
 * The form is chosen per value and named by a `ValueTag` (envelopes.ts).
 *
 * Internal module: the public surface is `encode`/`decode` in value.ts.
 */
import { readBytes, writeBytes } from "./bytes.js";
import { type DecodeContext, bad, fromRecords } from "./decoder.js";
import type { EncodeContext } from "./encode-context.js";
import { writeRecords } from "./encoder.js";
import { type ApplyStep, type RecordTable, ValueTag } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { checkJsonValue, isJsonNumber, JsonSnapshot } from "./json-path.js";
import { abbreviatePath, describeThrown, ReadFailure } from "./paths.js";
import type { RpcLimits } from "./limits.js";

const { getPrototypeOf } = Object;
const OBJECT_PROTO = Object.prototype;
const ARRAY_PROTO = Array.prototype;

export type { DecodeContext, ReferenceResolver } from "./decoder.js";
export type { EncodeContext } from "./encode-context.js";
export { Substitute } from "./encode-context.js";
export { buildTable } from "./decoder.js";
export type { PendingBlob } from "./blobs.js";
export { resolveBlobs } from "./blobs.js";
export { checkJsonValue } from "./json-path.js";
export { fromRecords } from "./decoder.js";
export { validateTable } from "./validate.js";

/** A value as it goes into an envelope: `[ValueTag.Json, json]`, `[ValueTag.Records, table]` or `[ValueTag.Bytes, [type, blob]]`. */
export type WrittenValue = [tag: ValueTag, payload: unknown];

/**
 * Encodes one value (a result, a thrown value's stand-in, a standalone value) in the cheapest
 * form that keeps it whole. Each property is read once, and nothing the check saw can change
 * before the frame is written: the JSON payload is a private copy. Blob bytes are left pending in
 * `ctx.pending` (see `resolveBlobs`). Throws `RpcError` `ENCODE`.
 */
export function writeValue(value: unknown, ctx: EncodeContext): WrittenValue {
  switch (typeof value) {
    case "string":
    case "boolean":
      return [ValueTag.Json, value];
    case "number":
      if (isJsonNumber(value)) return [ValueTag.Json, value];
      break;
    case "object": {
      if (value === null) return [ValueTag.Json, null];
      let plain: boolean;
      try {
        plain = isPlain(value); // a Proxy's getPrototypeOf trap may throw
      } catch (error) {
        throw new RpcError("ENCODE", `Reading ${ctx.label ?? "value"} threw: ${describeThrown(error)}`, { cause: error });
      }
      if (!plain) {
        const bytes = writeBytes(value, ctx.blobs);
        if (bytes) return [ValueTag.Bytes, bytes];
      }
      const snapshot = new JsonSnapshot(ctx.forbidden, ctx.maxDepth);
      let copy: unknown;
      try {
        copy = snapshot.root(value);
      } catch (error) {
        throw readFailed(error, ctx);
      }
      if (snapshot.json) return [ValueTag.Json, copy];
      return [ValueTag.Records, writeRecords(copy, ctx, snapshot.copies)];
    }
  }
  return [ValueTag.Records, writeRecords(value, ctx)];
}

/**
 * Encodes the arguments of one call step: `[0, ...json]`, `[1, records]` (the list as one
 * table) or `[4, bytes]` (exactly one bytes argument).
 */
export function writeArgs(args: readonly unknown[], ctx: EncodeContext): ApplyStep {
  const n = args.length;
  let i = 0;
  while (i < n && isJsonPrimitive(args[i])) i++;
  // The common call (`increment(2)`, `get("a")`, none): nothing to read or copy. The client made
  // the list itself, so no one else can change it.
  if (i === n) return [ValueTag.Json, ...args];
  if (n === 1 && typeof args[0] === "object" && args[0] !== null && !isPlain(args[0])) {
    const bytes = writeBytes(args[0], ctx.blobs);
    if (bytes) return [ValueTag.Bytes, bytes];
  }
  // The list itself is not a level of nesting: each argument may be `maxDepth` deep.
  const maxDepth = ctx.maxDepth;
  const snapshot = new JsonSnapshot(ctx.forbidden, maxDepth === undefined ? undefined : maxDepth + 1);
  let step: unknown[];
  try {
    step = snapshot.list(args, ValueTag.Json);
  } catch (error) {
    throw readFailed(error, ctx);
  }
  if (snapshot.json) return step as ApplyStep;
  if (maxDepth !== undefined) ctx.maxDepth = maxDepth + 1;
  try {
    return [ValueTag.Records, writeRecords(step.slice(1), ctx, snapshot.copies)];
  } finally {
    ctx.maxDepth = maxDepth;
  }
}

function isJsonPrimitive(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return isJsonNumber(value);
    default:
      return value === null;
  }
}

/** A plain object or array: never bytes, so the common case skips the bytes checks. */
function isPlain(value: object): boolean {
  const proto = getPrototypeOf(value);
  return proto === OBJECT_PROTO || proto === ARRAY_PROTO;
}

/** A thrown value always travels as a record table, so the client can rebuild the Error. */
export function writeThrown(value: unknown, ctx: EncodeContext): RecordTable {
  return writeRecords(value, ctx);
}

/** A getter (or Proxy trap) threw during the JSON walk: `ENCODE` naming where, the exception as its cause. */
function readFailed(error: unknown, ctx: EncodeContext): unknown {
  if (!(error instanceof ReadFailure)) return error;
  const path = (ctx.label ?? "value") + abbreviatePath(error.segments.reverse());
  return new RpcError("ENCODE", `Reading ${path} threw: ${describeThrown(error.cause)}`, { cause: error.cause });
}

/** Decodes a value carried as JSON, as a record table or as bytes. */
export function readValue(tag: unknown, payload: unknown, ctx: DecodeContext): unknown {
  if (tag === ValueTag.Json) {
    checkJsonValue(payload, ctx.limits, ctx.budget);
    return payload;
  }
  if (tag === ValueTag.Records) return fromRecords(payload, ctx);
  if (tag === ValueTag.Bytes) return readBytes(payload, ctx);
  throw bad(`Unknown value tag ${JSON.stringify(tag) ?? String(tag)}.`);
}

/**
 * Decodes the arguments of a call step (`writeArgs`' output, the step array itself) and checks
 * their count against `limits.maxArgs`. `index` names the step in error messages.
 */
export function readArgs(step: readonly unknown[], ctx: DecodeContext, index: number): unknown[] {
  const { limits } = ctx;
  const tag = step[0];
  if (tag === ValueTag.Json) {
    if (step.length - 1 > limits.maxArgs) throw tooManyArgs(step.length - 1, limits);
    const args = step.slice(1);
    // Each argument may be maxDepth deep: the list is not a level.
    for (let i = 0; i < args.length; i++) checkJsonValue(args[i], limits, ctx.budget);
    return args;
  }
  if (step.length !== 2) throw new RpcError("PROTOCOL", `Chain step ${index} has an unknown argument encoding.`);
  if (tag === ValueTag.Bytes) return [readBytes(step[1], ctx)];
  if (tag !== ValueTag.Records) throw new RpcError("PROTOCOL", `Chain step ${index} has an unknown argument encoding.`);
  const args = fromRecords(step[1], argsContext(ctx));
  if (!Array.isArray(args)) throw new RpcError("PROTOCOL", `Arguments of chain step ${index} are not an array.`);
  if (args.length > limits.maxArgs) throw tooManyArgs(args.length, limits);
  return args;
}

const argLimits = new WeakMap<RpcLimits, RpcLimits>();

/**
 * The context for decoding an argument list as one record table: the list is a level of the
 * table, and each argument may still be `maxDepth` deep.
 */
export function argsContext(ctx: DecodeContext): DecodeContext {
  let limits = argLimits.get(ctx.limits);
  if (!limits) argLimits.set(ctx.limits, (limits = { ...ctx.limits, maxDepth: ctx.limits.maxDepth + 1 }));
  return { ...ctx, limits };
}

export function tooManyArgs(count: number, limits: RpcLimits): RpcError {
  return new RpcError("LIMIT", `Call has ${count} arguments, more than limits.maxArgs (${limits.maxArgs}).`);
}

/** A fresh decode context for one frame. */
export function decodeContext(blobs: readonly Uint8Array[], limits: RpcLimits): DecodeContext {
  return { blobs, limits, budget: { nodes: limits.maxNodes } };
}

/** True when `value` would travel as plain JSON (reads every property once, like `writeValue`). */
export function isJsonSafe(value: unknown): boolean {
  if (typeof value !== "object" || value === null)
    return typeof value === "number" ? isJsonNumber(value) : value === null || typeof value === "string" || typeof value === "boolean";
  const snapshot = new JsonSnapshot(undefined);
  snapshot.root(value);
  return snapshot.json;
}

/** The record table of any value (what `writeValue` falls back to). */
export const toRecords: (value: unknown, ctx: EncodeContext) => RecordTable = writeRecords;

/**
 * The record reader: `fromRecords` validates a whole record table (validate.ts), then builds its
 * value. Nothing is built before everything is checked. Error names resolve through a
 * null-prototype allowlist, `Blob` and `File` through the constructors captured at load
 * (records.ts), and a `__proto__` key was refused by validation, so no decoded object can carry
 * one into `Object.assign`.
 *
 * Building is iterative too: each container is created when first referenced and filled from
 * a work list, so a value 10,000 levels deep costs memory, never the call stack.
 *
 * Internal module.
 */
import { makeBlob, makeFile } from "./blobs.js";
import type { RecordTable } from "./envelopes.js";
import { isRpcErrorCode, RpcError, type RpcErrorCode } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { copyBytes, ERROR_TYPES, Ext, isReferenceType, NEG_ZERO, T, VIEW_TYPES } from "./records.js";
import { bad, validateTable } from "./validate.js";

export { bad } from "./validate.js";

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

/**
 * Rebuilds the value of a record table after validating all of it. Throws `RpcError` with code
 * `DECODE` (malformed or forbidden) or `LIMIT` (too large, too deep) and builds nothing then.
 */
export function fromRecords(table: unknown, ctx: DecodeContext): unknown {
  validateTable(table, ctx);
  return new TableBuilder(table, ctx).build();
}

/**
 * Builds a table `validateTable` accepted earlier with the same context (a call whose arguments
 * pipeline on another call's result is validated when its frame arrives, built when it runs).
 */
export function buildTable(table: unknown, ctx: DecodeContext): unknown {
  return new TableBuilder(table as RecordTable, ctx).build();
}

type ErrorPayload = { name: string; message?: string; stack?: string; cause?: number; props?: [number, number][] };

/**
 * Builds a validated table. Each container is created (and registered, so cycles and aliases
 * resolve to it) when first referenced, and filled later from a work list: no recursion, and
 * the result is the same as a recursive build's (insertion order within each container is the
 * payload's order).
 */
class TableBuilder {
  private readonly built: unknown[];
  private readonly done: Uint8Array;
  private readonly work: number[] = [];

  constructor(
    private readonly table: RecordTable,
    private readonly ctx: DecodeContext,
  ) {
    this.built = new Array(table.length);
    this.done = new Uint8Array(table.length);
  }

  build(): unknown {
    const root = this.value(0);
    const work = this.work;
    while (work.length) this.fill(work.pop()!);
    return root;
  }

  private as<V>(index: number, value: V): V {
    this.built[index] = value;
    this.done[index] = 1;
    return value;
  }

  /** A container is registered and queued for filling. */
  private shell<V>(index: number, value: V): V {
    this.work.push(index);
    return this.as(index, value);
  }

  private value(index: number): unknown {
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
      case T.ARRAY:
        return this.shell(index, new Array((p as number[]).length));
      case Ext.SPARSE_ARRAY:
        return this.shell(index, new Array((p as number[])[0]));
      case Ext.ARRAY_WITH_PROPS:
        return this.shell(index, new Array((p as [number])[0]));
      case T.OBJECT:
        return this.shell(index, {});
      case T.MAP:
        return this.shell(index, new Map());
      case T.SET:
        return this.shell(index, new Set());
      case T.ERROR:
        return this.shell(index, makeError(p as ErrorPayload, this.table));
      case T.DATE:
        return this.as(index, new Date(p as number | string));
      case T.REGEXP: {
        const { source, flags } = p as { source: string; flags: string };
        try {
          return this.as(index, new RegExp(source, flags));
        } catch {
          throw bad(`Record ${index} is not a valid RegExp: /${source.slice(0, 40)}/${flags}.`);
        }
      }
      case "BigInt" as never:
        return this.as(index, Object(BigInt(p as string)));
      case "Number" as never:
        // null: ungap's NaN or ±Infinity, which JSON wrote as null (NaN, as ungap would read a number).
        return this.as(index, Object(p === null ? Number.NaN : Number(p)));
      case "Boolean" as never:
      case "String" as never:
        return this.as(index, Object(p));
      case Ext.ARRAY_BUFFER: {
        const blob = this.ctx.blobs[p as number]!;
        return this.as(index, copyBytes(blob));
      }
      case Ext.RESIZABLE_BUFFER: {
        const [blobIndex, maxByteLength] = p as [number, number];
        const blob = this.ctx.blobs[blobIndex]!;
        let buffer: ArrayBuffer;
        try {
          buffer = new (ArrayBuffer as new (length: number, options: { maxByteLength: number }) => ArrayBuffer)(blob.byteLength, {
            maxByteLength,
          });
        } catch {
          throw new RpcError("LIMIT", `Record ${index}: this runtime cannot reserve a resizable ArrayBuffer of ${maxByteLength} bytes.`);
        }
        new Uint8Array(buffer).set(blob);
        return this.as(index, buffer);
      }
      case Ext.VIEW: {
        const [name, bufferIndex, offset, length] = p as [string, number, number, number];
        // validateTable checked the type, the buffer record and the bounds; a buffer is a leaf.
        const buffer = this.value(bufferIndex) as ArrayBuffer;
        return this.as(index, new VIEW_TYPES[name]!(buffer, offset, length));
      }
      case Ext.BLOB: {
        const [blobIndex, mime] = p as [number, string];
        return this.as(index, makeBlob(this.ctx.blobs[blobIndex]!, mime));
      }
      case Ext.FILE: {
        const [blobIndex, mime, name, lastModified] = p as [number, string, string, number];
        return this.as(index, makeFile(this.ctx.blobs[blobIndex]!, mime, name, lastModified));
      }
    }
    if (this.ctx.refs && isReferenceType(type)) return this.as(index, this.ctx.refs.build(type as number, p));
    throw bad(`Record ${index} has an unexpected type.`); // unreachable after validateTable
  }

  /** Fills a container created by `value`. */
  private fill(index: number): void {
    const [type, p] = this.table[index]!;
    const target = this.built[index];
    switch (type) {
      case T.ARRAY: {
        const ids = p as number[];
        const arr = target as unknown[];
        for (let j = 0; j < ids.length; j++) arr[j] = this.value(ids[j]!);
        return;
      }
      case Ext.SPARSE_ARRAY:
        this.fillElements(target as unknown[], p as number[], 1);
        return;
      case Ext.ARRAY_WITH_PROPS: {
        const [, elements, props] = p as [number, number[], [number, number][]];
        this.fillElements(target as unknown[], elements, 0);
        this.fillProps(target as Record<string, unknown>, props);
        return;
      }
      case T.OBJECT:
        this.fillProps(target as Record<string, unknown>, p as [number, number][]);
        return;
      case T.MAP: {
        const map = target as Map<unknown, unknown>;
        for (const [k, v] of p as [number, number][]) map.set(this.value(k), this.value(v));
        return;
      }
      case T.SET: {
        const set = target as Set<unknown>;
        for (const v of p as number[]) set.add(this.value(v));
        return;
      }
      case T.ERROR:
        this.fillError(target as Error, p as ErrorPayload);
        return;
    }
  }

  private fillElements(arr: unknown[], items: number[], start: number): void {
    for (let j = start; j < items.length; j += 2) arr[items[j]!] = this.value(items[j + 1]!);
  }

  /** Own data properties only; `__proto__`, `length` and index keys were refused by validation. */
  private fillProps(target: Record<string, unknown>, entries: [number, number][]): void {
    for (let j = 0; j < entries.length; j++) {
      const [k, v] = entries[j]!;
      target[this.value(k) as string] = this.value(v);
    }
  }

  private fillError(error: Error, p: ErrorPayload): void {
    if (p.cause !== undefined) defineHidden(error, "cause", this.value(p.cause));
    if (!p.props) return;
    for (const [k, v] of p.props) {
      const key = this.value(k) as string;
      // Carried by the record itself, never among its props (encoder.ts skips them): a peer's
      // props must not give an error a name or a message of another type.
      if (key === "name" || key === "message" || key === "stack" || key === "cause") continue;
      const value = this.value(v);
      if (key === "errors" && error instanceof AggregateError) defineHidden(error, key, value);
      else (error as unknown as Record<string, unknown>)[key] = value;
    }
  }
}

function makeError(p: ErrorPayload, table: RecordTable): Error {
  const code = p.name === "RpcError" ? rpcErrorCode(p.props, table) : undefined;
  const error: Error = code
    ? new RpcError(code, p.message ?? "")
    : p.name === "AggregateError"
      ? p.message === undefined
        ? new AggregateError([])
        : new AggregateError([], p.message)
      : new (ERROR_TYPES[p.name] ?? Error)(p.message);
  if (error.name !== p.name) defineHidden(error, "name", p.name);
  if (p.stack !== undefined) defineHidden(error, "stack", p.stack);
  return error;
}

/**
 * The `code` an error record named "RpcError" carries, if it is one of dorpc's codes: such an
 * error (dorpc's own failure thrown inside a method, e.g. by a released stub) is rebuilt as a
 * real `RpcError`, so `instanceof RpcError` holds on the other end too.
 */
function rpcErrorCode(props: [number, number][] | undefined, table: RecordTable): RpcErrorCode | undefined {
  for (const [k, v] of props ?? []) {
    const key = table[k]!;
    const value = table[v]!;
    if (key[1] === "code" && value[0] === T.PRIMITIVE && isRpcErrorCode(value[1])) return value[1];
  }
  return undefined;
}

/** Like the engine's own `name`/`stack`/`cause`: writable, configurable, not enumerable. */
function defineHidden(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true });
}

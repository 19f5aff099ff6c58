/**
 * The record writer: flattens any structured-clone value into a record table (records.ts for
 * the layout, docs/protocol.md for the types). This file says what each value becomes; the walk
 * that orders the records, bounds the depth and names where a failure happened is
 * record-walk.ts; what the writer is given (`EncodeContext`, `Substitute`) is encode-context.ts;
 * the built-in methods it reads a Date, RegExp, Map or Set with are slot-readers.ts.
 *
 * Invariants:
 *  - Each property is read once. Plain objects and arrays the JSON walk already copied
 *    (json-path.ts) are read from their copies (`copies`), so a getter never runs twice.
 *  - Whatever cannot travel fails the whole value with `RpcError` `ENCODE` naming where it was
 *    (`result.config.env`), and an exception thrown while reading (a getter) is kept as that
 *    error's `cause`.
 *
 * Internal module.
 */
import { FromRefer, type Holder, INTO_LIST, INTO_PAIRS, INTO_SLOTS, RecordWalk } from "./record-walk.js";
import { ByteRecords } from "./byte-records.js";
import { type EncodeContext, Substitute } from "./encode-context.js";
import type { RecordTable, WireRecord } from "./envelopes.js";
import { BY_INDEX, describeThrown, Literal, MAP_ENTRIES, PairKeys, Refusal, type Segment, SET_ELEMENTS } from "./paths.js";
import { BlobCtor, Ext, NEG_ZERO, T } from "./records.js";
import { BOXED, brandOf, bufferLength, FAILED, isRealmObjectPrototype, sharedBufferLength, tryCall } from "./brands.js";
import { dateTime, mapEntries, regexpFlags, regexpSource, setValues } from "./slot-readers.js";

const { getPrototypeOf, hasOwn, keys: ownKeys } = Object;
const objectToString = Object.prototype.toString;
const OBJECT_PROTO = Object.prototype;
const ARRAY_PROTO = Array.prototype;

/** Flattens `value` into a record table. Throws `RpcError("ENCODE")` for what cannot travel. */
export function writeRecords(value: unknown, ctx: EncodeContext, copies?: ReadonlyMap<object, object>): RecordTable {
  const writer = new RecordWriter(ctx, copies);
  writer.write(value);
  writer.bytes.trim();
  return writer.records;
}

class RecordWriter extends RecordWalk {
  /** ArrayBuffers, views and Blobs: their records and which bytes become blobs. */
  readonly bytes: ByteRecords;

  constructor(
    ctx: EncodeContext,
    private readonly copies: ReadonlyMap<object, object> | undefined,
  ) {
    super(ctx);
    this.bytes = new ByteRecords(this.records, ctx);
  }

  /** Asks the connection whether `value` travels by reference. */
  private referred(value: object): number | undefined {
    const refer = this.ctx.refer;
    if (!refer) return undefined;
    let ref: WireRecord | Substitute | undefined;
    try {
      ref = refer(value);
    } catch (error) {
      throw new FromRefer(error);
    }
    if (ref instanceof Substitute) return this.add(ref.value);
    return ref ? this.push(ref, value) : undefined;
  }

  protected add(value: unknown): number {
    if (typeof value === "object" && value !== null) value = this.copies?.get(value) ?? value;
    const known = this.refs.get(value);
    if (known !== undefined && !(value === 0 && 1 / (value as number) < 0)) return known;
    switch (typeof value) {
      case "string":
      case "boolean":
        return this.push([T.PRIMITIVE, value], value);
      case "number":
        if (value !== value || value === Infinity || value === -Infinity) return this.push([Ext.NUMBER, String(value)], value);
        if (value === 0 && 1 / value < 0) return this.records.push([NEG_ZERO as never]) - 1;
        return this.push([T.PRIMITIVE, value], value);
      case "undefined":
        return this.push([T.VOID], value);
      case "bigint":
        return this.push([T.BIGINT, value.toString()], value);
      case "object":
        if (value === null) return this.push([T.PRIMITIVE, null], value);
        return this.addObject(value);
      case "function": {
        const referred = this.referred(value);
        if (referred !== undefined) return referred;
        const name = value.name;
        throw new Refusal(
          (path) => `Cannot send ${path}: it is a function${name ? ` (${name})` : ""}, and functions do not cross the wire.`,
        );
      }
      default:
        throw new Refusal((path) => `Cannot send ${path}: it is a ${typeof value}, which does not cross the wire.`);
    }
  }

  private addObject(value: object): number {
    const forbidden = this.ctx.forbidden?.get(value);
    if (forbidden !== undefined) {
      throw new Refusal(
        (path) =>
          `Cannot send ${path}: it is ${forbidden}, which never leaves the server. Return the data you mean to send (access.unsafeTrustedCaller lifts this).`,
      );
    }
    const proto = getPrototypeOf(value);
    if (proto === ARRAY_PROTO && Array.isArray(value)) return this.addArray(value);
    if (proto === OBJECT_PROTO || proto === null || isRealmObjectPrototype(proto)) return this.addPlain(value as Record<string, unknown>);

    const tag = objectToString.call(value).slice(8, -1);
    const added = this.addTagged(value, tag);
    if (added !== undefined) return added;
    if (ArrayBuffer.isView(value)) {
      this.level(); // the receiver counts a view as a level above its buffer
      return this.bytes.view(value, (record) => this.push(record, value));
    }
    // An error of another realm says "Error" too; an object whose Symbol.toStringTag says so is not one.
    if (value instanceof Error || (tag === "Error" && !(Symbol.toStringTag in value))) return this.addError(value as Error);
    const referred = this.referred(value);
    if (referred !== undefined) return referred;
    // A structured-clone type whose Symbol.toStringTag says otherwise (a subclass's own tag):
    // structuredClone goes by what it is, not by what it says.
    const brand = brandOf(value);
    if (brand !== undefined && brand !== tag) {
      const branded = this.addTagged(value, brand);
      if (branded !== undefined) return branded;
    }
    const ctor = (value as { constructor?: { name?: unknown } }).constructor;
    const name = ctor?.name;
    // `Object.create(proto)` or a function's `prototype = {…}`: the constructor found is Object's.
    const kind =
      ctor === Object ? "an object with a prototype of its own" : `an instance of ${typeof name === "string" && name ? name : tag}`;
    throw new Refusal(
      (path) => `Cannot send ${path}: it is ${kind}, and only plain objects, arrays and structured-clone types cross the wire.`,
    );
  }

  /**
   * `value` as the structured-clone type `tag` names, or `undefined` when it names none — or
   * names one `value` is not (a Symbol.toStringTag that lies): each case checks the real type
   * (the prototype methods below throw for anything else) before it writes a record.
   */
  private addTagged(value: object, tag: string): number | undefined {
    switch (tag) {
      case "Date": {
        const time = tryCall(dateTime, value) as number | typeof FAILED;
        if (time === FAILED) return undefined;
        return this.push([T.DATE, time === time ? time : ""], value);
      }
      case "RegExp": {
        const source = tryCall(regexpSource, value);
        if (source === FAILED) return undefined;
        return this.push([T.REGEXP, { source: source as string, flags: regexpFlags(value as RegExp) }], value);
      }
      case "Map": {
        const iterator = tryCall(mapEntries, value) as Iterable<[unknown, unknown]> | typeof FAILED;
        if (iterator === FAILED) return undefined;
        const entries: [number, number][] = [];
        const index = this.push([T.MAP, entries], value);
        const values: unknown[] = [];
        for (const [k, v] of iterator) {
          entries.push([-1, -1]);
          values.push(k, v);
        }
        this.open(values, INTO_PAIRS, entries, undefined, MAP_ENTRIES);
        return index;
      }
      case "Set": {
        const iterator = tryCall(setValues, value) as Iterable<unknown> | typeof FAILED;
        if (iterator === FAILED) return undefined;
        const items: number[] = [];
        const index = this.push([T.SET, items], value);
        const values = [...iterator];
        items.length = values.length;
        this.open(values, INTO_LIST, items, undefined, SET_ELEMENTS);
        return index;
      }
      case "ArrayBuffer":
      case "SharedArrayBuffer":
        if (tryCall(tag === "ArrayBuffer" ? bufferLength : (sharedBufferLength ?? bufferLength), value) === FAILED) return undefined;
        return this.bytes.buffer(value as ArrayBuffer);
      case "Boolean":
      case "String":
      case "Number":
      case "BigInt": {
        const primitive = tryCall(BOXED[tag]!, value);
        if (primitive === FAILED) return undefined;
        if (tag === "BigInt") return this.push([tag as never, (primitive as bigint).toString()], value);
        if (tag !== "Number") return this.push([tag as never, primitive], value);
        // JSON has no NaN, ±Infinity or -0: those go as strings (`new Number("-0")` agrees).
        const n = primitive as number;
        const payload = n !== n || n === Infinity || n === -Infinity ? String(n) : n === 0 && 1 / n < 0 ? NEG_ZERO : n;
        return this.push([tag as never, payload], value);
      }
      case "Array":
        // An array from another realm, or with an unusual prototype: its elements still travel.
        // (Not an object that only says so with Symbol.toStringTag.)
        return Array.isArray(value) ? this.addArray(value) : undefined;
      case "Blob":
      case "File":
        return BlobCtor && value instanceof BlobCtor ? this.push(this.bytes.blob(value), value) : undefined;
      default:
        return undefined;
    }
  }

  private addArray(value: unknown[]): number {
    const n = value.length;
    const keys = ownKeys(value);
    // Own enumerable keys of an array list its present indexes first, ascending, then the named
    // properties: dense without names exactly when the last of n keys is "n-1".
    if (keys.length === n && (n === 0 || keys[n - 1] === String(n - 1))) {
      const items: number[] = new Array(n);
      const index = this.push([T.ARRAY, items], value);
      const values = new Array<unknown>(n);
      for (let i = 0; i < n; i++) values[i] = this.read(value, i);
      this.open(values, INTO_LIST, items, undefined, BY_INDEX);
      return index;
    }
    // Holes, named properties or both: present elements as [index, record] pairs, and named
    // properties as [key, value] record pairs (type 20) when there are any.
    let named = 0;
    for (let k = keys.length - 1; k >= 0 && !isIndexKey(keys[k]!, n); k--) named++;
    const elements: number[] = named === 0 ? [n] : [];
    const props: [number, number][] = [];
    const index = this.push(named === 0 ? [Ext.SPARSE_ARRAY, elements] : [Ext.ARRAY_WITH_PROPS, [n, elements, props]], value);
    const values: unknown[] = [];
    const holders: Holder[] = [];
    const slots: number[] = [];
    const segments: Segment[] = [];
    for (let k = 0; k < keys.length - named; k++) {
      const i = Number(keys[k]);
      elements.push(i, -1);
      values.push(this.read(value, i));
      holders.push(elements);
      slots.push(elements.length - 1);
      segments.push(i);
    }
    for (let k = keys.length - named; k < keys.length; k++) {
      const key = keys[k]!;
      if (key === "__proto__") {
        throw new Refusal((path) => `Cannot send ${path}: it has an own "__proto__" key.`, undefined, key);
      }
      const pair: [number, number] = [-1, -1];
      props.push(pair);
      values.push(key, this.read(value, key));
      holders.push(pair, pair);
      slots.push(0, 1);
      segments.push(key, key);
    }
    this.open(values, INTO_SLOTS, holders, slots, segments);
    return index;
  }

  private addPlain(value: Record<string, unknown>): number {
    const entries: [number, number][] = [];
    const index = this.push([T.OBJECT, entries], value);
    const keys = ownKeys(value);
    const values = new Array<unknown>(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === "__proto__") {
        throw new Refusal((path) => `Cannot send ${path}: it has an own "__proto__" key.`, undefined, key);
      }
      entries.push([-1, -1]);
      values[2 * i] = key;
      values[2 * i + 1] = this.read(value, key);
    }
    this.open(values, INTO_PAIRS, entries, undefined, new PairKeys(keys));
    return index;
  }

  /** One property read, with the property named if its getter throws. */
  private read(holder: object, key: string | number): unknown {
    try {
      return (holder as Record<string | number, unknown>)[key];
    } catch (error) {
      throw new Refusal((path) => `Reading ${path} threw: ${describeThrown(error)}`, error, key);
    }
  }

  private addError(error: Error): number {
    const payload: { name: string; message?: string; stack?: string; cause?: number; props?: [number, number][] } = {
      // The receiver refuses longer names (validate.ts): cut, never unreadable.
      name: errorName(error).slice(0, MAX_ERROR_NAME),
    };
    // An error made without a message has none of its own: it must not arrive with `message: ""`.
    // One whose class defines it (DOMException's getter) sends it when it says something.
    if (hasOwn(error, "message")) {
      const message = this.read(error, "message");
      payload.message = typeof message === "string" ? message : String(message);
    } else {
      const inherited = this.read(error, "message");
      if (typeof inherited === "string" && inherited !== "") payload.message = inherited;
    }
    const index = this.push([T.ERROR, payload], error);
    if (this.ctx.stack) {
      const stack = this.read(error, "stack");
      if (typeof stack === "string") payload.stack = stack;
    }
    const values: unknown[] = [];
    const holders: Holder[] = [];
    const slots: (number | string)[] = [];
    const segments: Segment[] = [];
    if (hasOwn(error, "cause")) {
      values.push(this.read(error, "cause"));
      holders.push(payload);
      slots.push("cause");
      segments.push(new Literal(".cause"));
    }
    const props: [number, number][] = [];
    const addProp = (key: string, v: unknown) => {
      const pair: [number, number] = [-1, -1];
      props.push(pair);
      values.push(key, v);
      holders.push(pair, pair);
      slots.push(0, 1);
      segments.push(key, key);
    };
    for (const key of ownKeys(error)) {
      if (key === "name" || key === "message" || key === "stack" || key === "cause") continue;
      if (key === "__proto__") {
        throw new Refusal((path) => `Cannot send ${path}: it has an own "__proto__" key.`, undefined, key);
      }
      const v = this.read(error, key);
      // Thrown errors often carry handles (a response, a socket): skip what cannot travel rather
      // than lose the whole error.
      if (typeof v === "function" || typeof v === "symbol") continue;
      addProp(key, v);
    }
    // AggregateError#errors is an own but non-enumerable property: carry it explicitly, whatever
    // it holds (also for an AggregateError of another realm).
    if (
      (error instanceof AggregateError || errorName(error) === "AggregateError") &&
      hasOwn(error, "errors") &&
      !Object.prototype.propertyIsEnumerable.call(error, "errors")
    ) {
      addProp("errors", this.read(error, "errors"));
    }
    if (props.length) payload.props = props;
    this.open(values, INTO_SLOTS, holders, slots, segments);
    return index;
  }
}

/** True for the canonical string of an index below `length` ("3", not "03" or "3.0"). */
function isIndexKey(key: string, length: number): boolean {
  const i = Number(key);
  return Number.isInteger(i) && i >= 0 && i < length && String(i) === key;
}

/** The longest error name a receiver accepts (validate.ts). */
const MAX_ERROR_NAME = 256;

export function errorName(error: Error): string {
  const name = error.name;
  if (typeof name === "string" && name !== "Error") return name;
  // `class NotFound extends Error {}` leaves name "Error": the class name is what users expect.
  const ctor = (error as { constructor?: { name?: unknown } }).constructor;
  if (ctor && ctor !== Error && typeof ctor.name === "string" && ctor.name) return ctor.name;
  return typeof name === "string" ? name : "Error";
}

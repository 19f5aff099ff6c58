/**
 * The record layout shared by the record writer (encoder.ts) and reader (decoder.ts): record
 * type numbers, the constructors a record may name, and brand checks that do not trust a
 * value's `Symbol.toStringTag`.
 *
 * Types −1 to 8 and the boxed-primitive names are `@ungap/structured-clone`'s, with its payloads,
 * so a table made by ungap's `serialize()` can be sent; dorpc's own types start at 16
 * (docs/protocol.md, "Record types").
 *
 * Constructors are captured when this module loads: a decoder that looked `Blob` up on the
 * global object at decode time could be steered by whoever replaced or deleted it since.
 *
 * Internal module.
 */

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
  /** `[20, [length, [index, record, …], [[keyRecord, valueRecord], …]]]`: an array with named properties. */
  ARRAY_WITH_PROPS: 20,
  /** `[21, [blobIndex, maxByteLength]]`: a resizable ArrayBuffer. */
  RESIZABLE_BUFFER: 21,
  /** `[22, [blobIndex, type]]`: a Blob. */
  BLOB: 22,
  /** `[23, [blobIndex, type, name, lastModified]]`: a File. */
  FILE: 23,
} as const;

/** ungap's string-typed record for -0. */
export const NEG_ZERO = "-0";

type ViewConstructor = { new (buffer: ArrayBuffer, byteOffset: number, length: number): ArrayBufferView; BYTES_PER_ELEMENT: number };

/** Views that may be rebuilt, by the name the wire uses. Null prototype: no inherited names. */
export const VIEW_TYPES: Readonly<Record<string, ViewConstructor>> = Object.assign(Object.create(null), {
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
export const ERROR_TYPES: Readonly<Record<string, new (message?: string) => Error>> = Object.assign(Object.create(null), {
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
});

/** `Blob` and `File` where the runtime has them (Node ≥ 20, workerd and browsers have both). */
export const BlobCtor = (globalThis as { Blob?: typeof Blob }).Blob;
export const FileCtor = (globalThis as { File?: typeof File }).File;

const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const typedArrayName = Object.getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag)!.get!;
/** Validates its receiver first: throws a TypeError for a view whose buffer shrank under it. */
const typedArrayIncludes = (TypedArrayPrototype as { includes: (this: unknown, search: unknown, from: number) => boolean }).includes;
const dataViewByteLength = Object.getOwnPropertyDescriptor(DataView.prototype, "byteLength")!.get!;
const arrayBufferByteLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")!.get!;
const getter = (proto: object, name: string) => Object.getOwnPropertyDescriptor(proto, name)!.get!;
const typedArrayBuffer = getter(TypedArrayPrototype, "buffer");
const typedArrayByteOffset = getter(TypedArrayPrototype, "byteOffset");
const typedArrayByteLength = getter(TypedArrayPrototype, "byteLength");
const typedArrayLength = getter(TypedArrayPrototype, "length");
const dataViewBuffer = getter(DataView.prototype, "buffer");
const dataViewByteOffset = getter(DataView.prototype, "byteOffset");

/** Where a view's bytes are, read from its internal slots. */
export interface ViewSlots {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  /** Elements of a typed array; bytes of a DataView. */
  readonly length: number;
}

/**
 * `view`'s buffer, offset and lengths from its internal slots, as the structured clone algorithm
 * reads them: an own property or a subclass's getter (`byteOffset`, `buffer`…) cannot make the
 * sender send other bytes than the view holds.
 */
export function viewSlots(view: ArrayBufferView): ViewSlots {
  if (typedArrayName.call(view) === undefined) {
    const byteLength = dataViewByteLength.call(view) as number;
    return {
      buffer: dataViewBuffer.call(view) as ArrayBufferLike,
      byteOffset: dataViewByteOffset.call(view) as number,
      byteLength,
      length: byteLength,
    };
  }
  return {
    buffer: typedArrayBuffer.call(view) as ArrayBufferLike,
    byteOffset: typedArrayByteOffset.call(view) as number,
    byteLength: typedArrayByteLength.call(view) as number,
    length: typedArrayLength.call(view) as number,
  };
}

/** The view's type name from its internal slot (`Uint8Array`, …, `DataView`), never from `Symbol.toStringTag`. */
export function viewName(view: ArrayBufferView): string {
  return (typedArrayName.call(view) as string | undefined) ?? "DataView";
}

/**
 * True when `view` can no longer be read: its resizable buffer shrank below the part it covers,
 * or its buffer was detached. The structured clone algorithm refuses such views; reading one
 * gives an empty typed array or a TypeError, neither of which is the value the sender held.
 */
export function isOutOfBounds(view: ArrayBufferView): boolean {
  try {
    if (typedArrayName.call(view) === undefined) dataViewByteLength.call(view);
    else typedArrayIncludes.call(view, 0, Infinity); // O(1): starts past the end
    return false;
  } catch {
    return true;
  }
}

/** True for a real (not shared) ArrayBuffer, by its internal slot. */
export function isArrayBuffer(value: object): value is ArrayBuffer {
  if (!(value instanceof ArrayBuffer) && Object.prototype.toString.call(value) !== "[object ArrayBuffer]") return false;
  try {
    arrayBufferByteLength.call(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * A copy of `bytes` in an ArrayBuffer of its own. Made with `new Uint8Array` and `set`, not
 * `buffer.slice`, which looks up the buffer's constructor (species) on the way.
 */
export function copyBytes(bytes: Uint8Array): ArrayBuffer {
  const out = new Uint8Array(bytes.byteLength);
  out.set(bytes);
  return out.buffer;
}

/** `resizable` and `detached` where the runtime has them (ES2024); false otherwise. */
export function isResizable(buffer: ArrayBufferLike): boolean {
  return (buffer as { resizable?: boolean }).resizable === true;
}

export function isDetached(buffer: ArrayBufferLike): boolean {
  return (buffer as { detached?: boolean }).detached === true;
}

/** Record types owned by the connection, not the codec (envelopes.ts `RefRecord`: 30, 31, 32). */
export function isReferenceType(type: unknown): boolean {
  return type === 30 || type === 31 || type === 32;
}

/**
 * What a value really is, whatever its `Symbol.toStringTag` says: the built-in methods that
 * accept only their own type (a Date's `getTime`, a Map's `size` getter, …) called on it, as
 * structured clone goes by internal slots. And whether a prototype is `Object.prototype` of
 * another realm. Used by the record encoder (encoder.ts) for values that are not plain.
 *
 * Internal module.
 */
import { dateTime, regexpSource } from "./slot-readers.js";

const { getPrototypeOf } = Object;
const numberValue = Number.prototype.valueOf;
const stringValue = String.prototype.valueOf;
const booleanValue = Boolean.prototype.valueOf;
const bigintValue = BigInt.prototype.valueOf;
export const bufferLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")!.get!;
export const sharedBufferLength =
  typeof SharedArrayBuffer === "function" ? Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, "byteLength")?.get : undefined;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size")!.get!;
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, "size")!.get!;
export const BOXED: Record<string, (this: unknown) => unknown> = {
  Boolean: booleanValue,
  String: stringValue,
  Number: numberValue,
  BigInt: bigintValue,
};
export const FAILED = Symbol("failed");

/** `fn.call(value)`, or `FAILED` when it throws (a built-in method called on the wrong type). */
export function tryCall(fn: (this: unknown) => unknown, value: object): unknown {
  try {
    return fn.call(value);
  } catch {
    return FAILED;
  }
}

/**
 * The structured-clone type `value` really is (by the built-in methods that accept only it),
 * whatever its Symbol.toStringTag says; `undefined` for none. Only on the path that would refuse.
 */
export function brandOf(value: object): string | undefined {
  if (tryCall(dateTime, value) !== FAILED) return "Date";
  if (tryCall(mapSize, value) !== FAILED) return "Map";
  if (tryCall(setSize, value) !== FAILED) return "Set";
  if (tryCall(bufferLength, value) !== FAILED) return "ArrayBuffer";
  if (sharedBufferLength && tryCall(sharedBufferLength, value) !== FAILED) return "SharedArrayBuffer";
  if (value !== RegExp.prototype && tryCall(regexpSource, value) !== FAILED) return "RegExp";
  for (const tag in BOXED) if (tryCall(BOXED[tag]!, value) !== FAILED) return tag;
  return undefined;
}

const functionText = Function.prototype.toString;

/**
 * Whether `proto` is `Object.prototype` of another realm (an iframe, a `node:vm` context): a
 * plain object made there is a plain object, as structuredClone sends it.
 */
export function isRealmObjectPrototype(proto: object): boolean {
  if (getPrototypeOf(proto) !== null) return false;
  const ctor = Object.getOwnPropertyDescriptor(proto, "constructor")?.value as { prototype?: unknown; name?: unknown } | undefined;
  if (typeof ctor !== "function" || ctor.prototype !== proto || ctor.name !== "Object") return false;
  try {
    return /\{\s*\[native code\]\s*\}\s*$/.test(functionText.call(ctor));
  } catch {
    return false;
  }
}

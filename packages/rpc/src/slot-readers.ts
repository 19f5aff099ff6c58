/**
 * The built-in methods the record writer (encoder.ts) reads a structured-clone value's contents
 * with: a Date's time, a RegExp's source and flags, a Map's entries, a Set's values. Each reads
 * the value's internal slot and throws for any other type, so neither a subclass nor an own
 * property can redirect a read to user code, and a value whose `Symbol.toStringTag` lies is
 * caught when the writer calls one through `tryCall` (brands.ts, which tells what a value is by
 * the same kind of methods, and takes its Date and RegExp readers from here). They are taken from
 * the prototypes when this module loads.
 *
 * Internal module.
 */

export const mapEntries = Map.prototype.entries;
export const setValues = Set.prototype.values;
export const dateTime = Date.prototype.getTime;
export const regexpSource = Object.getOwnPropertyDescriptor(RegExp.prototype, "source")!.get!;
/**
 * A RegExp's flags from its [[OriginalFlags]] slot. `RegExp.prototype.flags` reads them through
 * `this.global`, `this.unicode`…, which a subclass or an own property can override: each flag's
 * own getter checks the slot.
 */
const FLAG_GETTERS = (
  [
    ["d", "hasIndices"],
    ["g", "global"],
    ["i", "ignoreCase"],
    ["m", "multiline"],
    ["s", "dotAll"],
    ["u", "unicode"],
    ["v", "unicodeSets"],
    ["y", "sticky"],
  ] as const
).flatMap(([flag, name]) => {
  const get = Object.getOwnPropertyDescriptor(RegExp.prototype, name)?.get;
  return get ? [[flag, get] as const] : [];
});
export function regexpFlags(value: RegExp): string {
  let flags = "";
  for (const [flag, get] of FLAG_GETTERS) if (get.call(value) === true) flags += flag;
  return flags;
}

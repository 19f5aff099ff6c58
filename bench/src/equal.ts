/**
 * Structural equality for checking echoes: primitives by Object.is, Date by time, RegExp by
 * source+flags, Map/Set in order, byte views by bytes (a Node Buffer equals a Uint8Array),
 * Errors by name+message, plain objects and arrays by keys (an own `undefined` field must stay
 * present), and cycles/shared references by shape (a pair seen before must map to the same
 * partner).
 */
export function structurallyEqual(a: unknown, b: unknown): boolean {
  return eq(a, b, new Map());
}

function eq(a: unknown, b: unknown, seen: Map<object, object>): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  const partner = seen.get(a);
  if (partner !== undefined) return partner === b;
  seen.set(a, b);
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b)) return false;
    if (a.byteLength !== b.byteLength) return false;
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    return Buffer.compare(x, y) === 0;
  }
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime());
  if (a instanceof RegExp || b instanceof RegExp) {
    return a instanceof RegExp && b instanceof RegExp && a.source === b.source && a.flags === b.flags;
  }
  if (a instanceof Error || b instanceof Error) {
    return a instanceof Error && b instanceof Error && a.name === b.name && a.message === b.message;
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map) || !(b instanceof Map) || a.size !== b.size) return false;
    const x = [...a];
    const y = [...b];
    return x.every((entry, i) => eq(entry[0], y[i]![0], seen) && eq(entry[1], y[i]![1], seen));
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set) || !(b instanceof Set) || a.size !== b.size) return false;
    const y = [...b];
    return [...a].every((v, i) => eq(v, y[i], seen));
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const key of ka) {
    if (!Object.hasOwn(b, key)) return false;
    if (!eq((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], seen)) return false;
  }
  return true;
}

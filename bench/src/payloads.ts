/**
 * The payload matrix: every value is built once, deterministically (no Math.random), and echoed
 * by `echo(value)`; the reply is checked against the value before anything is timed.
 */

export interface Payload {
  /** Stable id (file names, JSON). */
  id: string;
  /** Row label in the log. */
  label: string;
  /** Survives JSON.stringify/parse unchanged (so the floor can carry it). */
  json: boolean;
  /** Is a top-level Uint8Array (the floor sends it as one binary message). */
  bytes: boolean;
  /** Approximate size, for the log. */
  size: string;
  /** Builds the value (called once per scenario). `undefined` means the empty call (noop()). */
  make(): unknown;
}

/** Deterministic bytes (xorshift32), so runs send identical data. */
export function bytesOf(length: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** ASCII text of exactly `length` characters (= bytes in UTF-8). */
export function textOf(length: number): string {
  const sentence = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789 ";
  return sentence.repeat(Math.ceil(length / sentence.length)).slice(0, length);
}

/** 50 leaf fields over 3 levels: 10 leaves + 2 children × (10 leaves + 1 grandchild × 10 leaves). */
export function nestedObject(): Record<string, unknown> {
  const leaves = (prefix: string) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < 10; i++) {
      const key = `${prefix}${i}`;
      out[key] = i % 3 === 0 ? i * 1.5 : i % 3 === 1 ? `value-${prefix}-${i}` : i % 2 === 0;
    }
    return out;
  };
  return {
    ...leaves("a"),
    left: { ...leaves("b"), deep: leaves("c") },
    right: { ...leaves("d"), deep: leaves("e") },
  };
}

export function smallStructs(count: number): { id: number; name: string; active: boolean; score: number }[] {
  return Array.from({ length: count }, (_, i) => ({ id: i, name: `item-${i}`, active: i % 2 === 0, score: (i * 37) % 101 }));
}

export function richValue(): unknown {
  return {
    map: new Map<unknown, unknown>([
      ["a", 1],
      [2, "two"],
      ["nested", new Map([["x", 1]])],
    ]),
    set: new Set<unknown>([1, "two", 3n]),
    date: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
    big: 12345678901234567890123456789n,
    re: /ab+c/gi,
  };
}

/**
 * The rich value's plain-JSON twin: the same entries as objects, arrays and strings, of about the
 * same size. rich ÷ rich-plain is what the exotic types cost over a plain object.
 */
export function richPlainTwin(): unknown {
  return {
    map: { a: 1, "2": "two", nested: { x: 1 } },
    set: [1, "two", "3"],
    date: "2026-01-02T03:04:05.006Z",
    big: "12345678901234567890123456789",
    re: "/ab+c/gi",
  };
}

/** A ring of 10 nodes, each pointing to the next and back to the head: cycles everywhere. */
export function cyclicGraph(): unknown {
  type Node = { id: number; next?: Node; head?: Node };
  const nodes: Node[] = Array.from({ length: 10 }, (_, id) => ({ id }));
  nodes.forEach((node, i) => {
    node.next = nodes[(i + 1) % nodes.length];
    node.head = nodes[0];
  });
  return { root: nodes[0], all: nodes };
}

const KiB = 1024;
const MiB = 1024 * KiB;

export const PAYLOADS: readonly Payload[] = [
  { id: "empty", label: "empty call (noop())", json: true, bytes: false, size: "0 B", make: () => undefined },
  { id: "small-string", label: "small string", json: true, bytes: false, size: "100 B", make: () => textOf(100) },
  {
    id: "nested-object",
    label: "nested object (50 fields, 3 levels)",
    json: true,
    bytes: false,
    size: `${JSON.stringify(nestedObject()).length} B JSON`,
    make: nestedObject,
  },
  {
    id: "structs-1000",
    label: "1,000 small structs",
    json: true,
    bytes: false,
    size: `${JSON.stringify(smallStructs(1000)).length} B JSON`,
    make: () => smallStructs(1000),
  },
  { id: "string-1k", label: "string 1 KiB", json: true, bytes: false, size: "1 KiB", make: () => textOf(KiB) },
  { id: "string-64k", label: "string 64 KiB", json: true, bytes: false, size: "64 KiB", make: () => textOf(64 * KiB) },
  { id: "string-1m", label: "string 1 MiB", json: true, bytes: false, size: "1 MiB", make: () => textOf(MiB) },
  { id: "u8-1k", label: "Uint8Array 1 KiB", json: false, bytes: true, size: "1 KiB", make: () => bytesOf(KiB) },
  { id: "u8-64k", label: "Uint8Array 64 KiB", json: false, bytes: true, size: "64 KiB", make: () => bytesOf(64 * KiB) },
  { id: "u8-1m", label: "Uint8Array 1 MiB", json: false, bytes: true, size: "1 MiB", make: () => bytesOf(MiB) },
  { id: "u8-10m", label: "Uint8Array 10 MiB", json: false, bytes: true, size: "10 MiB", make: () => bytesOf(10 * MiB) },
  { id: "rich", label: "rich value (Map, Set, Date, BigInt, RegExp)", json: false, bytes: false, size: "small", make: richValue },
  {
    id: "rich-plain",
    label: "plain twin of the rich value (objects, arrays, strings)",
    json: true,
    bytes: false,
    size: `${JSON.stringify(richPlainTwin()).length} B JSON`,
    make: richPlainTwin,
  },
  { id: "cyclic", label: "cyclic graph (10-node ring)", json: false, bytes: false, size: "small", make: cyclicGraph },
];

/** Single types, checked once per contender (not timed) for the type-support table. */
export const TYPE_PROBES: readonly { id: string; label: string; json: boolean; make(): unknown }[] = [
  { id: "map", label: "Map", json: false, make: () => new Map([["k", 1]]) },
  { id: "set", label: "Set", json: false, make: () => new Set([1, 2]) },
  { id: "date", label: "Date", json: false, make: () => new Date(Date.UTC(2026, 0, 1)) },
  { id: "bigint", label: "BigInt", json: false, make: () => 2n ** 70n },
  { id: "regexp", label: "RegExp", json: false, make: () => /x+y/gi },
  {
    id: "cycle",
    label: "cycle (a.self = a)",
    json: false,
    make: () => {
      const a: { self?: unknown } = {};
      a.self = a;
      return a;
    },
  },
  {
    id: "shared",
    label: "shared reference (same object twice)",
    json: false,
    make: () => {
      const s = { v: 1 };
      return [s, s];
    },
  },
  { id: "undefined-field", label: "undefined field", json: false, make: () => ({ a: undefined }) },
  { id: "special-numbers", label: "NaN, -0, Infinity", json: false, make: () => [NaN, -0, Infinity] },
  { id: "uint8array", label: "Uint8Array (nested in an object)", json: false, make: () => ({ b: bytesOf(16) }) },
  { id: "error", label: "Error", json: false, make: () => new Error("boom") },
];

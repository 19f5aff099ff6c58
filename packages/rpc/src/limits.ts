/**
 * Receive-side limits: one typed options object with documented defaults, validated when given.
 *
 * Every limit is checked on the *receiving* side before the work it bounds is done: the frame
 * size before parsing, record counts and lengths before anything is built, chain length and
 * argument count before the first operation of a chain runs.
 */
import { RpcError } from "./errors.js";

export interface RpcLimits {
  /** Largest frame accepted: bytes for binary frames, UTF-16 code units for text frames. Default 32 MiB. */
  maxMessageBytes: number;
  /** Deepest nesting of objects, arrays, maps, sets, errors and views in one value. Default 20,000. */
  maxDepth: number;
  /** Most nodes (objects, arrays, primitives, records) in one frame, all its values together. Default 1,000,000. */
  maxNodes: number;
  /** Most property reads and calls in one operation chain. Default 32. */
  maxChainLength: number;
  /** Most arguments in one call. Default 64. */
  maxArgs: number;
  /** Most calls in one frame, and most calls awaiting a reply on one connection. Default 1,024. */
  maxPendingCalls: number;
  /** Most decimal digits in a BigInt. Default 10,000. */
  maxBigIntDigits: number;
  /** Longest RegExp source. Default 10,000 characters. */
  maxRegExpSource: number;
  /** Most binary blobs (ArrayBuffers) in one frame. Default 4,096. */
  maxBlobs: number;
  /**
   * Most nodes a decoded value has when every shared reference is followed again (a DAG
   * expanded into a tree). Bounds the work of code that walks results without tracking
   * identity. Default 10,000,000.
   */
  maxExpandedNodes: number;
  /**
   * Most objects and functions one end hands out by reference on a connection (stubs the peer
   * holds and has not released). Bounds the memory a peer can pin by never releasing. Default 10,000.
   */
  maxExports: number;
  /** Most references to the peer's objects and functions one end holds on a connection. Default 10,000. */
  maxImports: number;
}

/** The defaults, frozen. Both ends use them unless told otherwise. */
export const DEFAULT_LIMITS: Readonly<RpcLimits> = Object.freeze({
  maxMessageBytes: 32 * 1024 * 1024,
  maxDepth: 20_000,
  maxNodes: 1_000_000,
  maxChainLength: 32,
  maxArgs: 64,
  maxPendingCalls: 1024,
  maxBigIntDigits: 10_000,
  maxRegExpSource: 10_000,
  maxBlobs: 4096,
  maxExpandedNodes: 10_000_000,
  maxExports: 10_000,
  maxImports: 10_000,
});

const LIMIT_KEYS = Object.keys(DEFAULT_LIMITS) as (keyof RpcLimits)[];

/**
 * Merges `overrides` over the defaults, rejecting unknown keys and values that are not positive
 * safe integers, so a typo fails at construction time rather than silently keeping a default.
 */
export function resolveLimits(overrides: Partial<RpcLimits> | undefined): Readonly<RpcLimits> {
  if (overrides === undefined) return DEFAULT_LIMITS;
  if (typeof overrides !== "object" || overrides === null) {
    throw new RpcError("BAD_OPTION", `limits must be an object, got ${overrides === null ? "null" : typeof overrides}.`);
  }
  const out: RpcLimits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(overrides)) {
    if (!(LIMIT_KEYS as string[]).includes(key)) {
      throw new RpcError("BAD_OPTION", `Unknown limit "${key}"; known limits are ${LIMIT_KEYS.join(", ")}.`);
    }
    const value = overrides[key as keyof RpcLimits];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RpcError("BAD_OPTION", `limits.${key} must be a positive integer, got ${String(value)}.`);
    }
    out[key as keyof RpcLimits] = value;
  }
  return Object.freeze(out);
}

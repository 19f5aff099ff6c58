/**
 * The `exactlyOnce` server option, resolved without pulling in the record itself (delivery.ts),
 * so the runtime-neutral option code stays neutral.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";

/** The `exactlyOnce` server option. */
export interface DeliveryOptions {
  /** Record slots per client session: how far apart a session's unanswered calls may be. Default 4,096. */
  window?: number;
  /** A session idle this long (ms) is forgotten; its resends are refused with EXPIRED. Default 24 h. */
  maxAge?: number;
  /** Answers larger than this (bytes) are not stored; their calls keep a marker instead. Default 128 KiB. */
  maxResultBytes?: number;
  /**
   * The row of a call during which the object's storage was not written (a read, an empty call, a
   * change to memory only) waits in memory until the object has answered no recorded call for this
   * long (ms) — at most one second (or this, if longer) under unbroken traffic, or until the next
   * storage write, which has it written in the same transaction — so such calls share one
   * storage commit instead of paying one each, and the commit falls where no reply waits for it.
   * 0 writes every row in the turn of its reply. Default 10.
   */
  flushAfter?: number;
}

export interface ResolvedDelivery {
  readonly window: number;
  readonly maxAge: number;
  readonly maxResultBytes: number;
  readonly flushAfter: number;
}

/** Validates the `exactlyOnce` option (`false` turns the record off). */
export function resolveDelivery(given: DeliveryOptions | boolean | undefined): ResolvedDelivery | undefined {
  if (given === false) return undefined;
  const options = given === true || given === undefined ? {} : given;
  if (typeof options !== "object" || options === null || ![Object.prototype, null].includes(Object.getPrototypeOf(options))) {
    throw new RpcError("BAD_OPTION", "exactlyOnce must be true, false or a plain object of options.");
  }
  for (const key of Object.keys(options)) {
    if (!["window", "maxAge", "maxResultBytes", "flushAfter"].includes(key)) {
      throw new RpcError("BAD_OPTION", `Unknown exactlyOnce option "${key}"; known: window, maxAge, maxResultBytes, flushAfter.`);
    }
  }
  // `undefined` keeps a default; anything else (null included) is checked below.
  const window = options.window === undefined ? 4096 : options.window;
  const maxAge = options.maxAge === undefined ? 24 * 3_600_000 : options.maxAge;
  const maxResultBytes = options.maxResultBytes === undefined ? 128 * 1024 : options.maxResultBytes;
  const flushAfter = options.flushAfter === undefined ? 10 : options.flushAfter;
  for (const [name, value, min, max] of [
    ["window", window, 16, Number.MAX_SAFE_INTEGER],
    ["maxAge", maxAge, 1000, Number.MAX_SAFE_INTEGER],
    ["maxResultBytes", maxResultBytes, 0, Number.MAX_SAFE_INTEGER],
    ["flushAfter", flushAfter, 0, 60_000],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min || value > max)
      throw new RpcError(
        "BAD_OPTION",
        `exactlyOnce.${name} must be an integer ≥ ${min}${max < Number.MAX_SAFE_INTEGER ? ` and ≤ ${max}` : ""}, got ${String(value)}.`,
      );
  }
  return { window, maxAge, maxResultBytes, flushAfter };
}

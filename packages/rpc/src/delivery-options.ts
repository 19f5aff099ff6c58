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
}

export interface ResolvedDelivery {
  readonly window: number;
  readonly maxAge: number;
  readonly maxResultBytes: number;
}

/** Validates the `exactlyOnce` option (`false` turns the record off). */
export function resolveDelivery(given: DeliveryOptions | boolean | undefined): ResolvedDelivery | undefined {
  if (given === false) return undefined;
  const options = given === true || given === undefined ? {} : given;
  if (typeof options !== "object" || options === null) throw new RpcError("BAD_OPTION", "exactlyOnce must be true, false or an object.");
  for (const key of Object.keys(options)) {
    if (!["window", "maxAge", "maxResultBytes"].includes(key)) {
      throw new RpcError("BAD_OPTION", `Unknown exactlyOnce option "${key}"; known: window, maxAge, maxResultBytes.`);
    }
  }
  const window = options.window ?? 4096;
  const maxAge = options.maxAge ?? 24 * 3_600_000;
  const maxResultBytes = options.maxResultBytes ?? 128 * 1024;
  for (const [name, value, min] of [
    ["window", window, 16],
    ["maxAge", maxAge, 1000],
    ["maxResultBytes", maxResultBytes, 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min)
      throw new RpcError("BAD_OPTION", `exactlyOnce.${name} must be an integer ≥ ${min}, got ${String(value)}.`);
  }
  return { window, maxAge, maxResultBytes };
}

/**
 * dorpc's own refusals: an error the callee raises itself (a name that is not reachable,
 * arguments that fail their schema, a reference that is gone) crosses the wire as `Failed` with
 * its code, while an error the user's method threw crosses as a thrown value (replies.ts). The
 * two are told apart by identity, never by shape: a method may throw an `RpcError` of its own.
 *
 * Internal module.
 */
import type { RpcError } from "./errors.js";

const ownErrors = new WeakSet<object>();

/** Throws `error` marked as dorpc's own refusal. */
export function refuse(error: RpcError): never {
  ownErrors.add(error);
  throw error;
}

/** Marks `error` as dorpc's own refusal (it crosses as `Failed`) and returns it. */
export function ownError(error: RpcError): RpcError {
  ownErrors.add(error);
  return error;
}

/** True for an error `refuse` threw (it crosses as `Failed`, not as a thrown value). */
export function isOwnError(error: unknown): error is RpcError {
  return typeof error === "object" && error !== null && ownErrors.has(error);
}

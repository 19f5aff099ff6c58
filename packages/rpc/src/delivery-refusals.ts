/**
 * What a call gets when the delivery record refuses it (delivery.ts `decide`): it may have run,
 * and it is not run again.
 *
 * Internal module.
 */
import { RpcError } from "./errors.js";

/** The refusal of a resend whose call ran but whose answer was not kept. */
export function notKept(id: number): RpcError {
  return new RpcError(
    "DISCONNECTED",
    `Call ${id} ran before the connection dropped, but its result was not kept (record: false, or larger than exactlyOnce.maxResultBytes); it was not run again.`,
  );
}

/**
 * The refusal of a copy of a call whose reply its client had acknowledged (it has the answer,
 * whether the call ran or was refused).
 */
export function acknowledgedError(id: number): RpcError {
  return new RpcError(
    "DISCONNECTED",
    `Call ${id} was answered and its client acknowledged the reply, so the answer was not kept; this copy of it was not run.`,
  );
}

/** The refusal of a resend the record no longer knows (swept, or past its window). */
export function expired(id: number): RpcError {
  return new RpcError(
    "EXPIRED",
    `Call ${id} was resent after its delivery record expired, so whether it ran cannot be known; it was not run again.`,
  );
}

/** The refusal of a resend that no row written since the wipe answers. */
export function wipedError(id: number): RpcError {
  return new RpcError(
    "EXPIRED",
    `Call ${id} was resent after the object deleted its storage (ctx.storage.deleteAll()), the delivery record with it, so whether it ran cannot be known; it was not run again.`,
  );
}

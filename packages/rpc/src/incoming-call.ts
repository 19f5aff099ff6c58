/**
 * One call the other end made, as the callee (callee.ts) keeps it: parsed from its frame, then
 * waiting, running or done. The counterpart of outgoing-call.ts: the callee owns its life, and
 * the server's callee (server-callee.ts) keeps it in the delivery record (`recorded`, `keep`).
 *
 * Invariants: it settles once (`settled`); its outcome is kept (`outcome`) for the later calls
 * of its frame that pipeline on it (`referenced`). A cancelled call never starts; a running one
 * learns of it through its signal (`controller`), aborted with `cancelledReason()`.
 *
 * Internal module.
 */
import type { Step } from "./chain.js";
import type { DecodeContext } from "./codec.js";
import type { RpcError } from "./errors.js";
import type { StubHolder } from "./proxy.js";
import type { Outcome } from "./replies.js";

/** A call that arrived: parsed, then waiting, running or done. */
export interface Incoming {
  readonly id: number;
  readonly steps: Step[];
  readonly target: number;
  readonly flags: number;
  /** Calls of the same frame it pipelines on (target < 0 or PIPELINE records). */
  deps: Incoming[] | undefined;
  /** The frame's decode context (its blobs), for building record-table arguments at run time. */
  readonly ctx: DecodeContext;
  /** Kept when a later call of the frame pipelines on it. */
  outcome: Outcome | undefined;
  referenced: boolean;
  /** Run when it settles (dependents). */
  waiters: (() => void)[] | undefined;
  /** Stubs made for its arguments, released when it ends. */
  borrowed: StubHolder[] | undefined;
  controller: AbortController | undefined;
  cancelled: boolean;
  started: boolean;
  settled: boolean;
  /**
   * Kept in the object's delivery record when it answers, even if its caller left (`keep`: with
   * its answer, not just a marker). Set by server-callee.ts; always false on a client.
   */
  recorded: boolean;
  keep: boolean;
}

/** Why a cancelled call's signal aborted. */
export function cancelledReason(): Error {
  const error = new Error("The caller cancelled this call (it timed out, was aborted, or the connection closed).");
  error.name = "AbortError";
  return error;
}

/** A call refused before it ran, kept only so that calls pipelining on it fail the same way. */
export function refusedCall(id: number, error: RpcError): Incoming {
  return {
    id,
    steps: [],
    target: 0,
    flags: 0,
    deps: undefined,
    ctx: undefined as never,
    outcome: { ok: false, error },
    referenced: true,
    waiters: undefined,
    borrowed: undefined,
    controller: undefined,
    cancelled: false,
    started: true,
    settled: true,
    recorded: false,
    keep: false,
  };
}

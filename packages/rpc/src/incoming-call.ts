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
import type { AccessPolicy } from "./access.js";
import { dependency, type FrameState } from "./callee-references.js";
import { parseChain, type Step } from "./chain.js";
import type { DecodeContext } from "./codec.js";
import { CallFlags } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import type { StubHolder } from "./proxy.js";
import type { Outcome } from "./replies.js";

/** A call that arrived: parsed, then waiting, running or done. */
export interface Incoming {
  readonly id: number;
  readonly steps: Step[];
  readonly target: number;
  readonly flags: number;
  /** Every call of the sender's session below this id has had its reply (0: not said; see `CallEnvelope`). */
  readonly answered: number;
  /** Calls of the same frame it pipelines on (target < 0 or PIPELINE records). */
  deps: Incoming[] | undefined;
  /** The frame's decode context (its blobs), for building record-table arguments at run time. */
  readonly ctx: DecodeContext;
  /** Kept when a later call of the frame pipelines on it. */
  outcome: Outcome | undefined;
  referenced: boolean;
  /**
   * Calls of its frame that pipeline on it and have not yet taken from its result what they
   * pass on (their argument tables built): its borrowed stubs are released only once none is left.
   */
  dependents?: number;
  /** It ended while `dependents` were left: its borrowed stubs are released with the last of them. */
  releaseLater?: boolean;
  /** It has taken what it uses from the calls it pipelines on, or never will (callee.ts `usedDeps`). */
  depsUsed?: boolean;
  /** Run when it settles (dependents). */
  waiters: (() => void)[] | undefined;
  /** Stubs made for its arguments, released when it ends. */
  borrowed: StubHolder[] | undefined;
  controller: AbortController | undefined;
  /** Set by server-callee.ts for a recorded call: see `Cancellable.heldBy`. */
  heldBy?: { cancelHeld(run: Incoming): void };
  cancelled: boolean;
  started: boolean;
  settled: boolean;
  /**
   * Kept in the object's delivery record when it answers, even if its caller left (`keep`: with
   * its answer, not just a marker). Set by server-callee.ts; always false on a client.
   */
  recorded: boolean;
  keep: boolean;
  /** The session whose record holds it (server-callee.ts), fixed when it was admitted. */
  session?: string;
  /** Cancelled while running: its id is free, but it still counts against `maxPendingCalls`. */
  orphaned?: boolean;
  /** The server's `{ conn, call }` for `rpcCaller()` while its steps run (current-call.ts). */
  running: object | undefined;
}

/**
 * Reads one envelope of a calls frame, `[id, chain, target?, flags?, answered?]`, into a call: checks its
 * shape, the calls of the frame it pipelines on (added to `frame.deps`) and its chain (names
 * against the access policy, arguments against the limits). Throws the refusal.
 */
export function readIncoming(
  envelope: unknown[],
  frame: FrameState,
  ctx: DecodeContext,
  config: { readonly policy: AccessPolicy; readonly limits: RpcLimits; readonly label: string },
): Incoming {
  frame.deps = undefined;
  if (envelope.length < 2 || envelope.length > 5) throw new RpcError("PROTOCOL", "A call must be [id, chain, target?, flags?, answered?].");
  const target = envelope.length > 2 ? envelope[2] : 0;
  const flags = envelope.length > 3 ? envelope[3] : 0;
  if (!Number.isSafeInteger(target) || !Number.isSafeInteger(flags) || (flags as number) < 0) {
    throw new RpcError("PROTOCOL", "A call's target and flags must be integers.");
  }
  const answered = envelope.length > 4 ? envelope[4] : 0;
  if (
    envelope.length > 4 &&
    (!Number.isSafeInteger(answered) || (answered as number) < 1 || (answered as number) > (envelope[0] as number))
  ) {
    throw new RpcError("PROTOCOL", "A call's answered must be an integer from 1 to the call's id.");
  }
  if ((target as number) < 0) (frame.deps ??= []).push(dependency(-(target as number), frame.byId));
  const steps = parseChain(
    envelope[1],
    config.policy,
    config.limits,
    ctx,
    config.label,
    target === 0 && !((flags as number) & CallFlags.System),
  );
  return {
    id: envelope[0] as number,
    steps,
    target: target as number,
    flags: flags as number,
    answered: answered as number,
    deps: frame.deps,
    ctx,
    outcome: undefined,
    referenced: false,
    waiters: undefined,
    borrowed: undefined,
    controller: undefined,
    cancelled: false,
    started: false,
    settled: false,
    recorded: false,
    keep: true,
    running: undefined,
  };
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
    answered: 0,
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
    running: undefined,
  };
}

/**
 * Reply envelopes: how a call's outcome is written, and how a `Failed` one is read back.
 *
 *  - A result goes in the cheapest form that keeps it whole (`writeValue`: JSON, records or
 *    bytes; the reply status is the value tag). Objects and functions it hands out travel by
 *    reference (`refer`). The object itself, its env and its ctx never leave (`forbidden`).
 *  - A thrown value goes as a record table, so the caller rebuilds a real Error; one that cannot
 *    travel is replaced by a plain Error with its name and message.
 *  - dorpc's own refusal goes as `Failed` with its code; an `ENCODE` failure caused by user code
 *    (a getter that threw while the result was read) also carries that exception as its cause.
 *  - Blob and File bytes in a result are read before the reply may leave: `ready` settles with
 *    `undefined` when they are, or with a failure envelope replacing the reply.
 *
 * Internal module.
 */
import { errorName } from "./encoder.js";
import { isOwnError } from "./refusals.js";
import { type EncodeContext, resolveBlobs, writeThrown, writeValue } from "./codec.js";
import { ReplyStatus, type WireRecord } from "./envelopes.js";
import { isRpcErrorCode, RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { issuesFromWire } from "./schema-check.js";

/** How a finished call ended. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A reply ready for the outbox. */
export interface Reply {
  json: string;
  /** The outcome could not be written and `json` is a failure instead (references it pinned are not sent). */
  replaced?: boolean;
  blobs: Uint8Array[];
  /** Blob bytes still being read; settles with `undefined`, or with the envelope to send instead. */
  ready: Promise<string | undefined> | undefined;
}

/** What writing replies needs to know of its end. */
export interface ReplyEnv {
  readonly limits: Readonly<RpcLimits>;
  readonly exposeErrorStack: boolean;
  /** Never sent, named in the refusal (the object, its env, its ctx and their members). */
  readonly forbidden: ReadonlyMap<object, string> | undefined;
}

const NO_BLOBS: Uint8Array[] = [];

/** The reply of call `id`. `refer` hands out what travels by reference (and reports what it pinned). */
export function writeReply(id: number, outcome: Outcome, env: ReplyEnv, refer: EncodeContext["refer"]): Reply {
  if (!outcome.ok) return writeThrownReply(id, outcome.error, env);
  const value = outcome.value;
  if (value === undefined) return { json: `[${id}]`, blobs: NO_BLOBS, ready: undefined };
  const ctx: EncodeContext = { blobs: [], stack: false, label: "result", maxDepth: env.limits.maxDepth, forbidden: env.forbidden, refer };
  try {
    const [tag, payload] = writeValue(value, ctx);
    // A result's reply status is its value tag: OkJson, OkRecords or OkBytes.
    const json = JSON.stringify([id, tag, payload]);
    return { json, blobs: ctx.blobs, ready: pendingBlobs(id, ctx) };
  } catch (error) {
    return { json: failed(id, asRpcError(error, "ENCODE"), env), blobs: NO_BLOBS, ready: undefined, replaced: true };
  }
}

function writeThrownReply(id: number, error: unknown, env: ReplyEnv): Reply {
  if (isOwnError(error)) return { json: failed(id, error, env), blobs: NO_BLOBS, ready: undefined };
  const stack = env.exposeErrorStack;
  const ctx: EncodeContext = { blobs: [], stack, label: "thrown value", maxDepth: env.limits.maxDepth, forbidden: env.forbidden };
  try {
    const json = JSON.stringify([id, ReplyStatus.Threw, writeThrown(error, ctx)]);
    return { json, blobs: ctx.blobs, ready: pendingBlobs(id, ctx) };
  } catch {
    // The thrown value holds something that cannot travel: keep what identifies it.
    const fallback = identifying(error, stack);
    const blobs: Uint8Array[] = [];
    return { json: JSON.stringify([id, ReplyStatus.Threw, writeThrown(fallback, { blobs, stack })]), blobs, ready: undefined };
  }
}

/**
 * A plain `Error` with what identifies a thrown value that cannot travel: its class name (a
 * subclass that does not set `name` keeps its class's), message and, when allowed, stack. Reading
 * them runs user code (getters, `toString`), which may throw too: then a generic message.
 */
function identifying(error: unknown, stack: boolean): Error {
  try {
    const plain = error instanceof Error ? error : new Error(String(error));
    const fallback = new Error(String(plain.message));
    fallback.name = errorName(plain);
    if (stack && typeof plain.stack === "string") fallback.stack = plain.stack;
    return fallback;
  } catch {
    return new Error("The method threw a value that can be neither sent nor described.");
  }
}

/** Reads the Blobs a reply holds; a Blob that cannot be read turns the reply into `ENCODE`. */
function pendingBlobs(id: number, ctx: EncodeContext): Promise<string | undefined> | undefined {
  if (!ctx.pending?.length) return undefined;
  return resolveBlobs(ctx.blobs, ctx.pending).then(
    () => undefined,
    (error: unknown) => failed(id, asRpcError(error, "ENCODE")),
  );
}

/**
 * `[id, 3, code, message]`. An `ENCODE` failure caused by user code (a getter that threw while
 * the result was read) also carries that exception, as a record table, so the caller's
 * `RpcError` has it as `cause`. A cause that cannot travel itself (or holds a Blob, which would
 * need another read) is left out. An `INVALID_ARGUMENT` refusal carries its issues instead, as
 * plain JSON: `[id, 3, "INVALID_ARGUMENT", message, [{ message, path }, …]]`.
 */
export function failed(id: number, error: RpcError, env?: ReplyEnv): string {
  if (error.code === "INVALID_ARGUMENT" && error.issues) {
    return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message, error.issues]);
  }
  if (env && error.code === "ENCODE" && error.cause !== undefined) {
    try {
      const ctx: EncodeContext = {
        blobs: [],
        pending: [],
        stack: env.exposeErrorStack,
        label: "cause",
        maxDepth: env.limits.maxDepth,
        forbidden: env.forbidden,
      };
      const cause = writeThrown(error.cause, ctx);
      if (ctx.pending!.length === 0 && ctx.blobs.length === 0)
        return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message, cause]);
    } catch {
      // The cause cannot travel: the code and message still do.
    }
  }
  return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message]);
}

export function asRpcError(error: unknown, fallback: RpcError["code"] = "INTERNAL"): RpcError {
  return error instanceof RpcError ? error : new RpcError(fallback, String((error as Error)?.message ?? error));
}

/** A result's reference record, or what the connection refuses (typed for `writeReply`'s `refer`). */
export type Refer = (value: object) => WireRecord | undefined;

/**
 * The `RpcError` of a `Failed` reply `[id, 3, code, message, extra?]`: `extra` is the issues of an
 * `INVALID_ARGUMENT`, or the cause (already decoded by `readCause`) of anything else.
 */
export function failure(code: unknown, message: unknown, extra: unknown, readCause: ((records: unknown) => unknown) | undefined): RpcError {
  const known = isRpcErrorCode(code) ? code : "INTERNAL";
  const text = typeof message === "string" ? message : "The other end failed without a message.";
  if (extra === undefined) return new RpcError(known, text);
  if (known === "INVALID_ARGUMENT") {
    const issues = issuesFromWire(extra);
    return new RpcError(known, text, issues ? { issues } : undefined);
  }
  return readCause ? new RpcError(known, text, { cause: readCause(extra) }) : new RpcError(known, text);
}

/** What the delivery record keeps for a call whose reply held references (see `complete`). */
export function referencesEnded(id: number, label: string): Reply {
  const error = new RpcError(
    "REFERENCE_LOST",
    `The call ran on ${label}, but its answer was lost with the connection, and it held objects or functions passed by reference, which end with their connection. It was not run again; make the call again for new references.`,
  );
  return { json: failed(id, error), blobs: [], ready: undefined };
}

/**
 * What encoding a value is given (`EncodeContext`): where its binary payloads go, how deep it may
 * nest and how error messages name it, what must never be sent, and the sending end's hook for
 * values that travel by reference (`refer`, answered with a record or a `Substitute`). The end
 * makes one for each argument list or value it writes (call-writer.ts, replies.ts, push.ts, …);
 * the codec's surface (codec.ts) hands it to the JSON path and the record writer (encoder.ts,
 * record-walk.ts, byte-records.ts). One page says what the end decides and the writers carry out.
 *
 * Invariant: the writers fill `blobs` and `pending` and read the rest (codec.ts widens `maxDepth`
 * by the argument list's own level, and puts it back); what `refer` throws passes through them
 * unwrapped.
 *
 * Internal module.
 */
import type { PendingBlob } from "./blobs.js";
import type { WireRecord } from "./envelopes.js";

/** Per-frame encoding state: blobs are shared by every value of the frame. */
export interface EncodeContext {
  /** Binary payloads; a record refers to one by its index here. */
  blobs: Uint8Array[];
  /** Include `Error.stack`. */
  stack: boolean;
  /** Blob and File bytes still to be read into `blobs` before the frame is written (see blobs.ts). */
  pending?: PendingBlob[];
  /** Objects that must never be sent, with how to name them (the server's env, ctx, …). */
  forbidden?: ReadonlyMap<object, string>;
  /** Names the value in error messages: "result", "arguments", … Default "value". */
  label?: string;
  /** Deepest nesting walked before refusing. Default `DEFAULT_LIMITS.maxDepth`. */
  maxDepth?: number;
  /**
   * Values that travel by reference (functions, `RpcTarget`s, stubs, pending results): the
   * connection turns one into a reference record (envelopes.ts `RefRecord`), a `Substitute`
   * (a value already known), or `undefined` when it cannot travel. Without it, they are refused.
   * What it throws propagates as is (it is the connection's decision, not a read failure).
   */
  refer?: (value: object) => WireRecord | Substitute | undefined;
}

/** Returned by `EncodeContext.refer` when a reference stands for a value that is already known. */
export class Substitute {
  constructor(readonly value: unknown) {}
}

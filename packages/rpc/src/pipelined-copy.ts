/**
 * What a call receives for an argument that pipelines on an earlier call's result: what a round
 * trip would have given it — the result as its caller would have received it, sent back.
 *
 *  - Plain data arrives as a copy, as it does after a round trip: a method cannot change the
 *    state of another through a value that only a getter or a return handed out.
 *  - What travels by reference is what the caller would have sent back: this end's own functions
 *    and `RpcTarget`s (which come back as themselves), and stubs of the same connection (a holder
 *    of the call's own, released when it ends, as an argument's stub is). A stub of
 *    another connection (another client's function a method kept) could not be returned to this
 *    caller, so it cannot be passed on its behalf either: `ENCODE`, as the result itself would be.
 *  - Anything a result cannot carry (a class instance, the object's storage, its env or ctx) is
 *    refused with `ENCODE`, naming it.
 *  - Blob and File bytes are not read: an immutable Blob is rebuilt over the original.
 *
 * The work is the reply encoder's and the argument decoder's, so the two cannot disagree on what
 * may travel. A primitive is its own copy and costs nothing.
 *
 * Internal module.
 */
import { type EncodeContext, readValue, writeValue } from "./codec.js";
import type { ReferenceResolver } from "./decoder.js";
import { RefRecord, ValueTag, type WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { ImportTable } from "./references.js";
import type { RpcLimits } from "./limits.js";
import { proxyInfo, type StubHolder } from "./proxy.js";
import { RpcTarget } from "./rpc-target.js";

/** A stub of this connection that was released, met in a value being sent. */
export const RELEASED_IN_RESULT =
  "A result holds a stub that was released (disposed, or an argument whose call ended): dup() it to keep it past its call.";

/** What copying needs to know of the end that runs the call. */
export interface CopyEnv {
  /** The connection's imports: its own stubs pass, other connections' do not. */
  readonly imports: ImportTable;
  readonly limits: Readonly<RpcLimits>;
  /** Never sent, named in the refusal (the object, its env, its ctx and their members). */
  readonly forbidden: ReadonlyMap<object, string> | undefined;
  /** Values never stepped into or sent (the object itself, its env, its ctx). */
  isPlatformState(value: unknown): boolean;
  /** A stub of this connection for the call being built, held as long as it runs. */
  borrow(holder: StubHolder): object;
}

/** `value` as a round trip would hand it to a method. Throws `RpcError` `ENCODE`. */
export function pipelinedCopy(value: unknown, env: CopyEnv): unknown {
  if ((typeof value !== "object" && typeof value !== "function" && typeof value !== "symbol") || value === null) return value;
  // What travels by reference, by position: the table names it by its index here.
  const kept: object[] = [];
  const refer = (v: object): WireRecord | undefined => {
    const info = proxyInfo(v);
    if (!info) {
      if (env.isPlatformState(v) || (typeof v !== "function" && !(v instanceof RpcTarget))) return undefined;
      return [RefRecord.Return, kept.push(v) - 1];
    }
    if (info.kind === "stub" && info.imports === env.imports) {
      if (info.entry.ended) throw new RpcError("RELEASED", RELEASED_IN_RESULT);
      return [RefRecord.Return, kept.push(env.borrow(info)) - 1];
    }
    throw new RpcError(
      "ENCODE",
      info.kind === "stub"
        ? "A result passed on as an argument (pipelined) holds a stub of another connection: it could not be returned to this caller, so it cannot be passed on its behalf."
        : "A result passed on as an argument (pipelined) holds a pending remote call: await it in the method that returns it.",
    );
  };
  const ctx: EncodeContext = {
    blobs: [],
    stack: false,
    label: "pipelined result",
    maxDepth: env.limits.maxDepth,
    forbidden: env.forbidden,
    refer,
  };
  const [tag, payload] = writeValue(value, ctx);
  if (tag === ValueTag.Json) return payload; // already a private copy
  // A Blob part is taken as it is: the copy shares the original's immutable bytes.
  for (const { blob, slot } of ctx.pending ?? []) ctx.blobs[slot] = blob as unknown as Uint8Array;
  const refs: ReferenceResolver = {
    validate: (type, index) => {
      if (type !== RefRecord.Return || typeof index !== "number" || kept[index] === undefined) {
        throw new RpcError("INTERNAL", "A pipelined result could not be copied.");
      }
    },
    build: (_type, index) => kept[index as number],
  };
  return readValue(tag, payload, { blobs: ctx.blobs, limits: env.limits, budget: { nodes: Number.MAX_SAFE_INTEGER }, refs });
}

/**
 * How an outgoing call is written: where its chain starts (the root, a stub, or a call it
 * pipelines on), the JSON of its steps and arguments, and what its arguments carry by reference.
 * The caller (caller.ts) writes a call when it is made, and again when a call that had to wait
 * for another one to settle can go.
 *
 * Invariants:
 *  - Arguments are encoded when the call is written, so later mutation of an argument does not
 *    change what is sent.
 *  - A call that uses the result of another call (as target or argument) names it in `deps`. It
 *    refers to it by id only while that call is still queued (they will share a frame); when that
 *    call left in an earlier frame and is still waiting, the call is marked `deferred` and written
 *    again once it has settled. A result that already arrived is used as is: its value, the stub
 *    it holds, or its error, which fails the call before it is sent.
 *  - A call carries stubs of one connection only (`conn`); it fails with `REFERENCE_LOST` rather
 *    than mix connections.
 *  - The caller's own functions and `RpcTarget`s it passes are exported and pinned (`exports`)
 *    until the call is sent or dropped (the caller unpins them).
 *
 * Internal module.
 */
import { type EncodeContext, resolveBlobs, Substitute, writeArgs } from "./codec.js";
import type { Connection } from "./connection.js";
import { CallFlags, RefRecord, type WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import type { Base, OutgoingCall } from "./outgoing-call.js";
import { type CallMaker, followData, proxyInfo, readFrom, type StubHolder, stubHolder } from "./proxy.js";
import { stubEnded } from "./stub-release.js";
import type { ExportTable } from "./references.js";
import { RpcTarget } from "./rpc-target.js";

/** What writing a call needs of the caller that makes it (its `CallerOptions` have it). */
export interface WriterEnv {
  readonly limits: Readonly<RpcLimits>;
  /** Describes the other end in error messages. */
  readonly label: string;
  /** What the caller's end hands out by reference. */
  readonly exports: ExportTable;
}

const NO_BLOBS: Uint8Array[] = [];

/** Thrown inside the encoder when an argument depends on a call that left in an earlier frame. */
export const DEFER = Symbol("defer");

/** Thrown inside the encoder when an argument depends on a call that failed: its error, as is. */
class DependencyFailed {
  constructor(readonly error: unknown) {}
}

/**
 * Encodes `base` + `path` + `args` into `call`'s wire form, or marks it deferred (it pipelines
 * on a call that left in an earlier frame). Throws what makes the call fail before it is sent:
 * ENCODE, a released stub, the error of a failed call it depends on.
 */
export function writeCall(
  maker: CallMaker,
  env: WriterEnv,
  call: OutgoingCall,
  base: Base,
  path: readonly string[],
  args: readonly unknown[] | undefined,
): void {
  const { limits } = env;
  call.deferred = false;
  call.deps = undefined;
  call.conn = undefined;
  call.blobs = NO_BLOBS;
  call.blobBytes = 0;
  // Where the chain starts.
  if (base.kind === "stub") {
    const holder = proxyInfo(base.stub) as StubHolder;
    const ended = stubEnded(holder);
    if (ended) throw ended;
    call.target = holder.entry.id;
    call.conn = connOf(holder);
  } else if (base.kind === "call") {
    const dep = base.call;
    dep.observed = true;
    if (dep.settled) {
      if (!dep.ok) throw dep.error;
      // Already here: start from the stub the path reaches in what arrived.
      const at = locate(dep.value, path, env.label);
      if (!at) throw new RpcError("NOT_CALLABLE", "The result is plain data: there is no method to call on it.");
      writeCall(maker, env, call, { kind: "stub", stub: at.stub }, path.slice(at.index), args);
      return;
    }
    call.target = -dep.id;
    call.source = { base, path, args };
    if (!dependOn(call, dep)) {
      call.deferred = true;
      return;
    }
  } else {
    call.target = 0;
    if (base.kind === "system") call.flags |= CallFlags.System;
    if (path.length === 0) throw new RpcError("NOT_CALLABLE", "A dorpc client is not a function; call one of its methods.");
  }
  const length = path.length + (args ? 1 : 0);
  if (length > limits.maxChainLength) {
    throw new RpcError("ENCODE", `The chain has ${length} steps, more than limits.maxChainLength (${limits.maxChainLength}).`);
  }
  if (length === 0) throw new RpcError("NOT_CALLABLE", "Nothing to call or read.");
  let chain = path.length ? JSON.stringify(path) : "[]";
  if (args) {
    const ctx: EncodeContext = {
      blobs: [],
      stack: true,
      label: "arguments",
      maxDepth: limits.maxDepth,
      refer: referArgument,
    };
    let apply: unknown;
    const outer = writing;
    writing = { maker, env, call, base, path, args };
    try {
      apply = writeArgs(withSettledValues(args), ctx);
    } catch (error) {
      if (error === DEFER) {
        call.deferred = true;
        call.source = { base, path, args };
        return;
      }
      if (error instanceof DependencyFailed) throw error.error;
      throw error instanceof RpcError || !(error instanceof Error)
        ? error
        : new RpcError("ENCODE", `Cannot encode the call: ${error.message}`, { cause: error });
    } finally {
      writing = outer;
    }
    const step = JSON.stringify(apply);
    chain = chain.length === 2 ? `[${step}]` : `${chain.slice(0, -1)},${step}]`;
    call.blobs = ctx.blobs;
    if (ctx.blobs.length) {
      let bytes = 0;
      for (const blob of ctx.blobs) bytes += blob.byteLength;
      if (ctx.pending) for (const pending of ctx.pending) bytes += pending.size;
      call.blobBytes = bytes;
    }
    // Blob and File bytes are read before the call's frame may leave (the frame waits, and the
    // calls after it wait behind it: order is kept).
    call.ready = ctx.pending?.length ? resolveBlobs(ctx.blobs, ctx.pending) : undefined;
  }
  call.chain = chain;
}

/**
 * The call whose arguments are being encoded, for `referArgument`: one function for every call
 * instead of a closure per call (a bundler's keepNames, on by default in wrangler, names every
 * function made, at a cost per call). `writeCall` is synchronous; a lazy path passed as an
 * argument makes a call of its own in between, hence the save and restore there.
 */
let writing:
  | { maker: CallMaker; env: WriterEnv; call: OutgoingCall; base: Base; path: readonly string[]; args: readonly unknown[] }
  | undefined;

/** The encoder's hook for values that travel by reference. */
function referArgument(value: object): WireRecord | Substitute | undefined {
  const { maker, env, call, base, path, args } = writing!;
  const info = proxyInfo(value);
  if (!info) {
    // The caller's own function or RpcTarget: exported, the other end gets a stub.
    if (typeof value !== "function" && !(value instanceof RpcTarget)) return undefined;
    const entry = env.exports.pin(value);
    (call.exports ??= []).push(entry.id);
    return [RefRecord.Export, [entry.id, entry.kind]];
  }
  switch (info.kind) {
    case "root":
      throw new RpcError("ENCODE", "A dorpc client cannot be passed as an argument; pass a stub or a value instead.");
    case "stub": {
      const ended = stubEnded(info);
      if (ended) throw ended;
      const conn = connOf(info);
      if (call.conn && call.conn !== conn) throw lostReference(env.label, conn.caller !== maker || call.conn.caller !== maker);
      call.conn = conn;
      return [RefRecord.Return, info.entry.id];
    }
    case "path": {
      call.source = { base, path, args };
      if (info.maker !== maker) {
        throw new RpcError(
          "ENCODE",
          "An argument is a result or a property of another client (or another connection), not yet here: await it and pass the value.",
        );
      }
      if (info.base.kind !== "call") {
        // A lazy path on the root or a stub, passed along: read it now, in this frame, and
        // pass what it reads — once: encoding the call again uses the same read.
        let read = call.lazyReads?.get(info);
        if (!read) {
          read = maker.call(info.base, info.path, undefined);
          read.observed = true;
          (call.lazyReads ??= new Map()).set(info, read);
        }
        if (read.settled) {
          if (!read.ok) throw new DependencyFailed(read.error);
          return new Substitute(read.value);
        }
        if (!dependOn(call, read)) throw DEFER;
        return [RefRecord.Pipeline, [read.id]];
      }
      const dep = info.base.call;
      dep.observed = true;
      if (dep.settled) {
        if (!dep.ok) throw new DependencyFailed(dep.error);
        // Already here: pass the value (or the stub) the path reaches.
        const at = locate(dep.value, info.path, env.label);
        if (at && at.index < info.path.length) {
          throw new RpcError("ENCODE", "An argument reads a property of a stub: await it first, or pass the stub itself.");
        }
        return new Substitute(at ? at.stub : readFrom(maker, dep.value, info.path, 0));
      }
      if (!dependOn(call, dep)) throw DEFER;
      return [RefRecord.Pipeline, [dep.id, ...info.path]];
    }
  }
}

/**
 * Records that `call` uses the result of `dep`. True when they can travel in the same frame
 * (`dep` is still queued); false when `call` must wait for `dep` to settle.
 */
function dependOn(call: OutgoingCall, dep: OutgoingCall): boolean {
  (call.deps ??= []).push(dep);
  dep.dependedOn = true;
  return !dep.sentOn && !dep.deferred;
}

/**
 * The JSON of a call envelope: `[id,chain]`, with target and flags only when they are set, and
 * all four before `answered` when it is given (see `CallEnvelope`).
 */
export function envelope(call: OutgoingCall, answered = 0): string {
  if (answered) return `[${call.id},${call.chain},${call.target},${call.flags},${answered}]`;
  if (call.flags) return `[${call.id},${call.chain},${call.target},${call.flags}]`;
  if (call.target) return `[${call.id},${call.chain},${call.target}]`;
  return `[${call.id},${call.chain}]`;
}

/** A call mixes stubs of two connections: an old one of this end (`foreign` false) or another end's. */
export function lostReference(label: string, foreign: boolean, sent = false): RpcError {
  return new RpcError(
    "REFERENCE_LOST",
    foreign
      ? `The call to ${label} uses a stub that came over another connection (another client, or another object's): a stub can only be used and passed over the connection it came from.`
      : sent
        ? `The call was sent with a stub from a connection to ${label} that closed before its answer arrived: it may have run, and it is not sent again (stubs do not survive a reconnect). Get a new stub, and check whether it ran before calling again.`
        : `The call uses a stub from a connection to ${label} that has closed; stubs do not survive a reconnect. Get a new one.`,
  );
}

/**
 * Where `path` on a value that arrived reaches a stub: the stub and the index of the step after
 * it, or `undefined` when the path stays in plain data. Throws NOT_FOUND for a step that is not
 * an own data property (the same rule the receiver applies).
 */
function locate(value: unknown, path: readonly string[], label: string): { stub: object; index: number } | undefined {
  const at = followData(value, path, 0, label);
  return stubHolder(at.value) ? { stub: at.value as object, index: at.index } : undefined;
}

/**
 * `args` with every top-level handle of a call that already succeeded (and ends in plain data)
 * replaced by its value, so a result passed along after it arrived can take the JSON fast path.
 * The same array when there is nothing to replace.
 */
function withSettledValues(args: readonly unknown[]): readonly unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (typeof arg !== "function") continue;
    const info = proxyInfo(arg);
    if (info?.kind !== "path" || info.base.kind !== "call" || info.path.length > 0) continue;
    const call = info.base.call;
    if (!call.settled || !call.ok || typeof call.value === "function") continue;
    call.observed = true;
    (out ??= args.slice())[i] = call.value;
  }
  return out ?? args;
}

/** The connection a stub belongs to. */
function connOf(holder: StubHolder): Connection {
  return holder.imports.owner as Connection;
}

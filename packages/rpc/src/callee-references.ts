/**
 * Reference records on the end that runs the calls (callee.ts), at the three moments they are
 * met:
 *  - while a calls frame is read: a PIPELINE record must name an earlier call of the same frame,
 *    which the call then depends on, and its path must pass the access policy's static check;
 *    any other record is checked for shape (references.ts `checkReference`). Nothing is built.
 *  - when the call runs: an EXPORT record becomes a stub the call borrows (released when it
 *    ends, unless the method kept it with `dup()`), a RETURN record this end's own exported
 *    object, a PIPELINE record the result of the call it names (which has settled by then).
 *  - when a result is written: this end's functions and `RpcTarget`s are exported; a stub goes
 *    back only over the connection it came from.
 *
 * No closures are made per frame or per call: the frame's state is one holder per callee, reset
 * per frame, and a call's arguments get one `ArgumentRefs` (a bundler's keepNames, on by default
 * in wrangler, names every function made, at a cost per call).
 *
 * Internal module.
 */
import type { AccessPolicy } from "./access.js";
import { buildArgs } from "./chain.js";
import type { DecodeContext } from "./codec.js";
import type { Connection } from "./connection.js";
import type { ReferenceResolver } from "./decoder.js";
import { isWireId, RefRecord, type WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { Incoming } from "./incoming-call.js";
import { type DataGuard, followData, makeStub, proxyInfo, type StubHolder } from "./proxy.js";
import type { RpcLimits } from "./limits.js";
import { type CopyEnv, pipelinedCopy, RELEASED_IN_RESULT } from "./pipelined-copy.js";
import { checkReference, type ImportTable, releaseExports } from "./references.js";
import { refuse } from "./refusals.js";
import { RpcTarget } from "./rpc-target.js";

/** The frame being read: its calls so far by id, and what the envelope being read pipelines on. */
export interface FrameState {
  byId: Map<number, Incoming> | undefined;
  deps: Incoming[] | undefined;
}

/** Checks the reference records of the frame `frame` holds while it is read; builds nothing. */
export function frameReferences(frame: FrameState, config: { readonly policy: AccessPolicy; readonly label: string }): ReferenceResolver {
  return {
    validate: (type, payload) => {
      if (type === RefRecord.Pipeline) {
        if (!Array.isArray(payload) || payload.length === 0) throw new RpcError("DECODE", "A pipeline record must be [callId, ...names].");
        const names = payload.slice(1);
        if (!names.every((n) => typeof n === "string")) throw new RpcError("DECODE", "A pipeline record's path must be names.");
        if (names.length) config.policy.checkStatic(names as string[], config.label, false);
        (frame.deps ??= []).push(dependency(payload[0], frame.byId));
      } else checkReference(type, payload);
    },
    build: () => refuse(new RpcError("INTERNAL", "A reference was built outside a call.")),
  };
}

/** The earlier call of this frame with `id`, which a later call pipelines on. */
export function dependency(id: unknown, byId: Map<number, Incoming> | undefined): Incoming {
  const dep = isWireId(id) ? byId?.get(id) : undefined;
  if (!dep) throw new RpcError("PROTOCOL", `A call pipelines on call ${String(id)}, which is not an earlier call of the same frame.`);
  return dep;
}

/**
 * What the reference records of one call's arguments stand for, once the call runs (validated
 * when its frame was read). A class, not closures made per call.
 */
export class ArgumentRefs implements ReferenceResolver, CopyEnv {
  /** Payloads of the EXPORT records built so far (a build that fails gives back the others). */
  built: Set<unknown> | undefined;
  /** Pipelined values and their copies. */
  private copies: Map<unknown, unknown> | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly call: Incoming,
    private readonly config: PipelineConfig,
  ) {}

  validate(): void {}

  // What copying a pipelined value needs (pipelined-copy.ts): this object, not closures per call.
  get imports(): ImportTable {
    return this.conn.imports;
  }
  get limits(): Readonly<RpcLimits> {
    return this.call.ctx.limits;
  }
  get forbidden(): ReadonlyMap<object, string> | undefined {
    return this.config.forbidden;
  }
  isPlatformState(value: unknown): boolean {
    return this.config.isPlatformState(value);
  }
  /** This call's own holder of a stub, released when it ends, as an argument's stub is. */
  borrow(holder: StubHolder): object {
    const stub = makeStub(holder.maker, holder.entry, holder.imports);
    (this.call.borrowed ??= []).push(proxyInfo(stub) as StubHolder);
    return stub;
  }

  build(type: number, payload: unknown): unknown {
    const { conn, call } = this;
    if (type === RefRecord.Export) {
      const [id, kind] = payload as [number, number];
      const entry = conn.imports.receive(id, kind);
      (this.built ??= new Set()).add(payload);
      const stub = makeStub(conn.caller, entry, conn.imports);
      (call.borrowed ??= []).push(proxyInfo(stub) as StubHolder);
      return stub;
    }
    if (type === RefRecord.Return) {
      const entry = conn.exports.get(payload as number);
      if (!entry) refuse(conn.lostExport(payload as number));
      return entry.value;
    }
    const [id, ...path] = payload as [number, ...string[]];
    const dep = call.deps!.find((d) => d.id === id)!;
    const value = (dep.outcome as { value: unknown }).value;
    // Through plain data only: a path that reaches a stub with names left would make a call on
    // it, which a pipelined argument never does (a round trip could not read it either).
    let found = value;
    if (path.length > 0) {
      const at = followData(value, path, 0, this.config.label, this.config.isPlatformState);
      if (at.index < path.length) {
        refuse(
          new RpcError(
            "NOT_FOUND",
            `A pipelined argument's path reaches a stub at "${path[at.index - 1] ?? "(the result)"}" and cannot read "${path[at.index]}" through it: pass the stub itself, or await the result first.`,
          ),
        );
      }
      found = at.value;
    }
    // Nothing a round trip could not give, and nothing more than a copy of it (pipelined-copy.ts);
    // one copy per value however many records of the call name it, as a round trip would alias it.
    const copies = (this.copies ??= new Map());
    if (copies.has(found)) return copies.get(found);
    const copy = pipelinedCopy(found, this);
    copies.set(found, copy);
    return copy;
  }
}

/** What `ArgumentRefs` needs of its callee's configuration. */
export interface PipelineConfig extends DataGuard {
  /** The platform's objects a result never carries (a Durable Object's env, ctx, …), named. */
  readonly forbidden?: ReadonlyMap<object, string>;
}

/** Builds `call`'s record-table arguments, resolving the references they carry (see `ArgumentRefs`). */
export function buildArguments(conn: Connection, call: Incoming, pipeline: PipelineConfig): void {
  if (!call.steps.some((s) => typeof s !== "string" && s.table !== undefined)) return;
  const ctx: DecodeContext = { ...call.ctx, budget: { nodes: Number.MAX_SAFE_INTEGER } };
  const refs = new ArgumentRefs(conn, call, pipeline);
  ctx.refs = refs;
  try {
    buildArgs(call.steps, ctx);
  } catch (error) {
    // The first table still there failed part-way: what it did not build yet is given back now
    // (what it built is borrowed, released with the call; later tables, as unbuilt).
    const failed = call.steps.find((s) => typeof s !== "string" && s.table !== undefined) as { table: unknown } | undefined;
    if (failed) {
      releaseExports(conn.imports, failed.table, refs.built);
      failed.table = undefined;
    }
    throw error;
  }
}

/**
 * The encoder's hook for a result: objects and functions it hands out go by reference (their
 * export ids are added to `exported`); `undefined` for what is not this end's to hand out.
 */
export function referResult(
  conn: Connection,
  config: { isPlatformState(value: unknown): boolean },
  value: object,
  exported: number[],
): WireRecord | undefined {
  const info = proxyInfo(value);
  if (!info) {
    if (config.isPlatformState(value)) return undefined;
    if (typeof value !== "function" && !(value instanceof RpcTarget)) return undefined;
    const entry = conn.exports.pin(value);
    exported.push(entry.id);
    return [RefRecord.Export, [entry.id, entry.kind]];
  }
  if (info.kind === "stub" && info.imports === conn.imports) {
    if (!info.entry.ended) return [RefRecord.Return, info.entry.id];
    throw new RpcError("RELEASED", RELEASED_IN_RESULT);
  }
  throw new RpcError(
    "ENCODE",
    info.kind === "stub"
      ? "A stub can only be passed back over the connection it came from."
      : "A result holds a pending remote call: await it before returning.",
  );
}

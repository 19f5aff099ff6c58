/**
 * The callee half of a connection: calls the other end makes, run against this end's root (the
 * Durable Object, or what a client exposes), its exports, or results pipelined in the same frame.
 * One implementation for both ends; runtime-neutral.
 *
 * Invariants:
 *  - Every envelope of a frame is checked (shape, names, limits, references) before any call of
 *    the frame runs; a call that fails the check is answered with `Failed` and nothing of it runs.
 *  - Calls start in the order they arrived. `sequential` (opt-in): a call that awaits holds back
 *    the calls after it until it settles or is cancelled. Otherwise each starts when it arrives;
 *    a call that pipelines on an earlier one (same frame) starts when that one has settled, and
 *    fails with that one's failure, as is, if it failed.
 *  - Every call with an id gets exactly one reply, unless the caller cancelled it (it no longer
 *    waits). Notifications (id 0) get none.
 *  - Stubs a call received as arguments are released when the call ends, unless the method kept
 *    one with `dup()`.
 *  - Nothing survives the connection: on close every running call's signal aborts, queued calls
 *    never start.
 *
 * Internal module.
 */
import type { AccessPolicy } from "./access.js";
import {
  buildArgs,
  type ChainEnv,
  type Cursor,
  isOwnError,
  ownError,
  parseChain,
  refuse,
  type RootRule,
  runSteps,
  type Step,
} from "./chain.js";
import { type DecodeContext, decodeContext, isJsonSafe, toRecords } from "./codec.js";
import type { Connection } from "./connection.js";
import { ExportKind, FrameKind, RefRecord, ReplyStatus, type WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { proxyInfo, readFrom, releaseHolder, type StubHolder, makeStub } from "./proxy.js";
import { RpcTarget } from "./rpc-target.js";

/** How one end serves the calls it receives. */
export interface CalleeConfig {
  /** What target 0 reaches; `undefined`: nothing (a client that exposes nothing). */
  readonly root: object | undefined;
  readonly rootRule: RootRule;
  /** Named in errors (`No method … is reachable on Counter`). */
  readonly label: string;
  readonly policy: AccessPolicy;
  readonly limits: Readonly<RpcLimits>;
  readonly sequential: boolean;
  readonly exposeErrorStack: boolean;
  /** Values never stepped into or sent (the object, its env, its ctx). */
  isPlatformState(value: unknown): boolean;
  /** A notification (no reply) failed: nobody else will hear of it. */
  onNotificationError(error: unknown): void;
}

/** How a finished call ended. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A call that arrived: parsed, then waiting, running or done. */
interface Incoming {
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
}

/** The call whose synchronous part is running right now, for `rpcCaller()` / `currentCall()`. */
let current: { conn: Connection; call: Incoming } | undefined;

/** What user code can learn about the call it is running in (valid before its first `await`). */
export interface CallContext {
  /** The connection's key: the WebSocket on a Durable Object. */
  readonly channel: object;
  /** The connection, for pushes back to this caller. */
  readonly connection: Connection;
  /** Aborts when the caller cancels the call (timeout, AbortSignal) or the connection ends. */
  readonly signal: AbortSignal;
}

/** The call whose synchronous part is running, or `undefined` outside one. */
export function currentCall(): CallContext | undefined {
  const now = current;
  if (!now) return undefined;
  return {
    channel: now.conn.key,
    connection: now.conn,
    get signal() {
      return signalOf(now.call);
    },
  };
}

function signalOf(call: Incoming): AbortSignal {
  if (!call.controller) {
    call.controller = new AbortController();
    if (call.cancelled) call.controller.abort(cancelledReason());
  }
  return call.controller.signal;
}

function cancelledReason(): Error {
  const error = new Error("The caller cancelled this call (it timed out, was aborted, or the connection closed).");
  error.name = "AbortError";
  return error;
}

const NO_BLOBS: Uint8Array[] = [];

export class Callee {
  /** Calls with an id that arrived and are not answered yet (duplicate detection, pending limit). */
  private readonly running = new Map<number, Incoming>();
  /** Sequential ordering: the call that is awaiting, and the ones held behind it. */
  private active: Incoming | undefined;
  private held: Incoming[] = [];
  private readonly env: ChainEnv;
  private readonly enter: () => void;
  private readonly leave: () => void;
  private entered: { conn: Connection; call: Incoming } | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly config: CalleeConfig,
  ) {
    this.env = { policy: config.policy, label: config.label, isPlatformState: (v) => config.isPlatformState(v) };
    // One pair of closures per connection, not per call.
    let outer: typeof current;
    this.enter = () => {
      outer = current;
      current = this.entered;
    };
    this.leave = () => {
      current = outer;
    };
  }

  /** Calls running or held; 0 whenever the object could hibernate without losing anything. */
  get size(): number {
    return this.running.size;
  }

  // ---------------------------------------------------------------------------------------------
  // Receiving
  // ---------------------------------------------------------------------------------------------

  /** Handles a calls frame whose envelopes all carry a usable id (checked by the connection). */
  receive(body: unknown[][], blobs: readonly Uint8Array[]): void {
    const { limits, policy } = this.config;
    const parsed: Incoming[] = [];
    let byId: Map<number, Incoming> | undefined;
    let deps: Incoming[] | undefined;
    const ctx = decodeContext(blobs, limits);
    ctx.refs = {
      validate: (type, payload) => {
        if (type === RefRecord.Pipeline) {
          if (!Array.isArray(payload) || payload.length === 0)
            throw new RpcError("DECODE", "A pipeline record must be [callId, ...names].");
          const names = payload.slice(1);
          if (!names.every((n) => typeof n === "string")) throw new RpcError("DECODE", "A pipeline record's path must be names.");
          if (names.length) policy.checkStatic(names as string[], this.config.label, false);
          (deps ??= []).push(this.dependency(payload[0], byId));
        } else if (type === RefRecord.Export) {
          if (
            !Array.isArray(payload) ||
            payload.length !== 2 ||
            !isId(payload[0]) ||
            (payload[1] !== ExportKind.Function && payload[1] !== ExportKind.Object)
          ) {
            throw new RpcError("DECODE", "An export record must be [exportId, kind].");
          }
        } else if (!isId(payload)) {
          throw new RpcError("DECODE", "A return record must carry an export id.");
        }
      },
      build: () => refuse(new RpcError("INTERNAL", "A reference was built outside a call.")),
    };
    for (const envelope of body) {
      const id = envelope[0] as number;
      if (id > 0 && this.running.has(id)) {
        this.reply(id, failed(id, new RpcError("PROTOCOL", `Call id ${id} is already running on this connection.`)), NO_BLOBS);
        continue;
      }
      if (this.running.size >= limits.maxPendingCalls) {
        if (id > 0)
          this.reply(
            id,
            failed(
              id,
              new RpcError("LIMIT", `More than limits.maxPendingCalls (${limits.maxPendingCalls}) calls are running on this connection.`),
            ),
            NO_BLOBS,
          );
        continue;
      }
      deps = undefined;
      let call: Incoming;
      try {
        if (envelope.length < 2 || envelope.length > 4) throw new RpcError("PROTOCOL", "A call must be [id, chain, target?, flags?].");
        const target = envelope.length > 2 ? envelope[2] : 0;
        const flags = envelope.length > 3 ? envelope[3] : 0;
        if (!Number.isSafeInteger(target) || !Number.isSafeInteger(flags) || (flags as number) < 0) {
          throw new RpcError("PROTOCOL", "A call's target and flags must be integers.");
        }
        if ((target as number) < 0) (deps ??= []).push(this.dependency(-(target as number), byId));
        const steps = parseChain(envelope[1], policy, limits, ctx, this.config.label, target === 0);
        call = {
          id,
          steps,
          target: target as number,
          flags: flags as number,
          deps,
          ctx,
          outcome: undefined,
          referenced: false,
          waiters: undefined,
          borrowed: undefined,
          controller: undefined,
          cancelled: false,
          started: false,
          settled: false,
        };
      } catch (error) {
        if (id === 0) continue;
        const refusal = ownError(asRpcError(error));
        this.reply(id, failed(id, refusal), NO_BLOBS);
        // A later call of the frame that pipelines on this one fails with the same refusal.
        (byId ??= new Map()).set(id, refusedCall(id, refusal));
        continue;
      }
      if (deps) for (const dep of deps) dep.referenced = true;
      if (id > 0) {
        this.running.set(id, call);
        (byId ??= new Map()).set(id, call);
      }
      parsed.push(call);
    }
    for (const call of parsed) this.schedule(call);
  }

  /** The earlier call of this frame with `id`, which a later call pipelines on. */
  private dependency(id: unknown, byId: Map<number, Incoming> | undefined): Incoming {
    const dep = isId(id) ? byId?.get(id) : undefined;
    if (!dep) throw new RpcError("PROTOCOL", `A call pipelines on call ${String(id)}, which is not an earlier call of the same frame.`);
    return dep;
  }

  // ---------------------------------------------------------------------------------------------
  // Scheduling
  // ---------------------------------------------------------------------------------------------

  private schedule(call: Incoming): void {
    if (this.config.sequential && (this.active || this.held.length)) {
      this.held.push(call);
      return;
    }
    this.start(call);
  }

  private start(call: Incoming): void {
    if (call.cancelled) return;
    const pendingDep = call.deps?.find((d) => !d.settled);
    if (pendingDep) {
      // Pipelined on a call that is still running: start when it settles.
      if (this.config.sequential) this.active = call;
      (pendingDep.waiters ??= []).push(() => this.start(call));
      return;
    }
    call.started = true;
    const result = this.run(call);
    if (result) {
      if (this.config.sequential) this.active = call;
      result.then((outcome) => this.complete(call, outcome));
    }
  }

  /** Runs a call whose dependencies have settled. Returns a promise only when it went async. */
  private run(call: Incoming): Promise<Outcome> | undefined {
    if (call.deps) {
      for (const dep of call.deps) if (!dep.outcome!.ok) return void this.complete(call, dep.outcome!);
    }
    let cursor: Cursor;
    let value: unknown;
    try {
      cursor = this.startingPoint(call);
      this.buildArguments(call);
      this.entered = { conn: this.conn, call };
      value = runSteps(cursor, call.steps, 0, this.env, this.enter, this.leave);
    } catch (error) {
      this.complete(call, { ok: false, error });
      return undefined;
    }
    if (value instanceof Promise) {
      return value.then(
        (v) => ({ ok: true, value: v }),
        (error) => ({ ok: false, error }),
      );
    }
    this.complete(call, { ok: true, value });
    return undefined;
  }

  /** Where the chain of `call` starts: the root, an export, or a pipelined result. */
  private startingPoint(call: Incoming): Cursor {
    const { target } = call;
    if (target === 0) {
      if (!this.config.root) {
        refuse(new RpcError("NOT_FOUND", `${this.config.label} exposes nothing to call: pass { expose: … } to createRpcClient.`));
      }
      return { value: this.config.root, method: undefined, receiver: undefined, rule: this.config.rootRule };
    }
    if (target > 0) {
      const entry = this.conn.exports.get(target);
      if (!entry) refuse(this.conn.lostExport(target));
      return { value: entry.value, method: undefined, receiver: undefined, rule: "value" };
    }
    const dep = call.deps![0]!;
    return { value: (dep.outcome as { value: unknown }).value, method: undefined, receiver: undefined, rule: "value" };
  }

  /** Builds record-table arguments, resolving the references they carry. */
  private buildArguments(call: Incoming): void {
    if (!call.steps.some((s) => typeof s !== "string" && s.table !== undefined)) return;
    const ctx: DecodeContext = { ...call.ctx, budget: { nodes: Number.MAX_SAFE_INTEGER } };
    ctx.refs = {
      validate: () => undefined,
      build: (type, payload) => {
        if (type === RefRecord.Export) {
          const [id, kind] = payload as [number, number];
          const entry = this.conn.imports.receive(id, kind);
          const stub = makeStub(this.conn.caller, entry, this.conn.imports);
          (call.borrowed ??= []).push(proxyInfo(stub) as StubHolder);
          return stub;
        }
        if (type === RefRecord.Return) {
          const entry = this.conn.exports.get(payload as number);
          if (!entry) refuse(this.conn.lostExport(payload as number));
          return entry.value;
        }
        const [id, ...path] = payload as [number, ...string[]];
        const dep = call.deps!.find((d) => d.id === id)!;
        const value = (dep.outcome as { value: unknown }).value;
        if (path.length === 0) return value;
        return readFrom(this.conn.caller, value, path, 0);
      },
    };
    buildArgs(call.steps, ctx);
  }

  /** A call ended: release what it borrowed, keep its outcome for dependents, reply. */
  private complete(call: Incoming, outcome: Outcome): void {
    if (call.settled) return;
    call.settled = true;
    if (call.borrowed) for (const holder of call.borrowed) releaseHolder(holder);
    if (call.referenced) call.outcome = outcome;
    const waiters = call.waiters;
    call.waiters = undefined;
    if (call.id > 0 && this.running.get(call.id) === call) {
      this.running.delete(call.id);
      if (!call.cancelled) {
        const blobs: Uint8Array[] = [];
        const json = outcome.ok ? this.ok(call.id, outcome.value, blobs) : this.threw(call.id, outcome.error, blobs);
        this.reply(call.id, json, blobs);
      }
    } else if (call.id === 0 && !outcome.ok) {
      this.config.onNotificationError(outcome.error);
    }
    if (waiters) for (const fn of waiters) fn();
    if (this.active === call) {
      this.active = undefined;
      this.drain();
    }
  }

  /** Sequential ordering: start held calls until one goes async. */
  private drain(): void {
    while (!this.active && this.held.length) {
      const next = this.held.shift()!;
      if (!next.cancelled) this.start(next);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Cancelling and closing
  // ---------------------------------------------------------------------------------------------

  /** The caller gave up on these calls: abort their signals, stop holding later calls for them. */
  cancel(ids: readonly number[]): void {
    for (const id of ids) {
      const call = this.running.get(id);
      if (!call) continue;
      this.running.delete(id);
      call.cancelled = true;
      call.controller?.abort(cancelledReason());
      if (!call.started) this.held = this.held.filter((c) => c !== call);
      if (this.active === call) {
        this.active = undefined;
        this.drain();
      }
    }
  }

  /** The connection ended: every running call is cancelled, held calls never start. */
  close(): void {
    this.held = [];
    this.active = undefined;
    for (const call of this.running.values()) {
      call.cancelled = true;
      call.controller?.abort(cancelledReason());
    }
    this.running.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Replies
  // ---------------------------------------------------------------------------------------------

  private reply(_id: number, json: string, blobs: readonly Uint8Array[]): void {
    this.conn.outbox.add(FrameKind.Replies, json, blobs);
  }

  private ok(id: number, value: unknown, blobs: Uint8Array[]): string {
    if (value === undefined) return `[${id}]`;
    if (typeof value === "object" && value !== null && this.config.isPlatformState(value)) {
      return failed(id, new RpcError("ENCODE", "Cannot send the Durable Object, its env or its ctx."));
    }
    if (isJsonSafe(value)) return JSON.stringify([id, ReplyStatus.OkJson, value]);
    const exported: number[] = [];
    try {
      const json = JSON.stringify([
        id,
        ReplyStatus.OkRecords,
        toRecords(value, { blobs, stack: false, refer: (v) => this.refer(v, exported) }),
      ]);
      this.conn.exports.sent(exported);
      return json;
    } catch (error) {
      this.conn.exports.dropped(exported);
      blobs.length = 0;
      return failed(id, asRpcError(error, "ENCODE"));
    }
  }

  private threw(id: number, error: unknown, blobs: Uint8Array[]): string {
    if (isOwnError(error)) return failed(id, error);
    const stack = this.config.exposeErrorStack;
    try {
      return JSON.stringify([id, ReplyStatus.Threw, toRecords(error, { blobs, stack })]);
    } catch {
      blobs.length = 0;
      // The thrown value holds something that cannot travel: keep what identifies it.
      const plain = error instanceof Error ? error : new Error(String(error));
      const fallback = new Error(plain.message);
      fallback.name = plain.name;
      if (stack && plain.stack) fallback.stack = plain.stack;
      return JSON.stringify([id, ReplyStatus.Threw, toRecords(fallback, { blobs, stack })]);
    }
  }

  /** The encoder's hook for a result: objects and functions it hands out go by reference. */
  private refer(value: object, exported: number[]): WireRecord | undefined {
    const info = proxyInfo(value);
    if (!info) {
      if (this.config.isPlatformState(value)) return undefined;
      if (typeof value !== "function" && !(value instanceof RpcTarget)) return undefined;
      const entry = this.conn.exports.pin(value);
      exported.push(entry.id);
      return [RefRecord.Export, [entry.id, entry.kind]];
    }
    if (info.kind === "stub" && info.imports === this.conn.imports && !info.entry.ended) return [RefRecord.Return, info.entry.id];
    throw new RpcError(
      "ENCODE",
      info.kind === "stub"
        ? "A stub can only be passed back over the connection it came from."
        : "A result holds a pending remote call: await it before returning.",
    );
  }
}

/** A call refused before it ran, kept only so that calls pipelining on it fail the same way. */
function refusedCall(id: number, error: RpcError): Incoming {
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
  };
}

export function failed(id: number, error: RpcError): string {
  return JSON.stringify([id, ReplyStatus.Failed, error.code, error.message]);
}

export function asRpcError(error: unknown, fallback: RpcError["code"] = "INTERNAL"): RpcError {
  return error instanceof RpcError ? error : new RpcError(fallback, String((error as Error)?.message ?? error));
}

function isId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/**
 * The caller half of a connection: the calls this end makes. One implementation for both ends:
 * a client's session owns one for its whole life (calls survive reconnects), a Durable Object
 * has one per socket (pushes and callbacks it calls on that client).
 *
 * Invariants:
 *  - A call is sent when it is made: encoded at once (so later mutation of an argument does not
 *    change what is sent), queued, and flushed at the end of the microtask turn with every other
 *    call of that turn, in order, in one frame (more only when bytes force a cut, see outbox.ts).
 *  - A call that pipelines on another call (uses its result as target or argument) travels in
 *    the same frame as that call, so the receiver resolves it without a round trip. When that is
 *    not possible (the other call left in an earlier frame and is still waiting), it is held,
 *    with every call after it, until the other call settles, then encoded with the result.
 *  - Every call settles exactly once: reply, timeout, abort, connection loss, disposal. A reply
 *    that arrives after that is ignored; a call that was sent when it timed out or was aborted
 *    is cancelled on the other end (`Cancel` frame).
 *  - `queued + waiting ≤ limits.maxPendingCalls`.
 *  - A call the client-side schemas refuse is never sent; one whose schema is async is held,
 *    with every call after it (order is kept), until the schema has answered.
 *
 * Internal module.
 */
import { type EncodeContext, resolveBlobs, Substitute, writeArgs } from "./codec.js";
import type { Connection } from "./connection.js";
import { CallFlags, FrameKind, RefRecord, type WireRecord } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { RpcLimits } from "./limits.js";
import { type Base, OutgoingCall } from "./outgoing-call.js";
import { type CallMaker, type CallOptions, followData, proxyInfo, readFrom, type StubHolder, stubEnded, stubHolder } from "./proxy.js";
import type { ExportTable } from "./references.js";
import { RpcTarget } from "./rpc-target.js";

export interface CallerOptions {
  /** Default per-call timeout in ms; 0 disables. */
  timeout: number;
  limits: Readonly<RpcLimits>;
  /** Describes the other end in error messages. */
  label: string;
  /** What this end hands out by reference. */
  exports: ExportTable;
  /** A call nobody awaited failed. */
  onUnobservedError: (error: unknown) => void;
  /** Why calls cannot be made right now (disposed), or undefined. */
  refuse?: () => RpcError | undefined;
  /** A call was queued while there is no connection: the owner may connect. */
  onQueued?: () => void;
  /** Backpressure: true while the connection has too much unsent; calls then stay queued. */
  congested?: () => boolean;
  /** What to add to a TIMEOUT message for a call that was never sent (why it could not be). */
  unsentBecause?: () => string | undefined;
}

/**
 * Client-side argument schemas (client-schemas.ts): for a call on the root following `path`, the
 * refusal, a promise of it for an async schema (`undefined`: accepted), or `undefined`.
 */
export type ArgsCheck = (path: readonly string[], args: readonly unknown[]) => RpcError | Promise<RpcError | undefined> | undefined;

const NO_BLOBS: Uint8Array[] = [];

const clear = (timer: ReturnType<typeof setTimeout> | undefined) => {
  if (timer !== undefined) clearTimeout(timer);
};

const unref = (timer: ReturnType<typeof setTimeout>) => {
  (timer as { unref?: () => void }).unref?.();
  return timer;
};

/** Thrown inside the encoder when an argument depends on a call that left in an earlier frame. */
const DEFER = Symbol("defer");

/** Thrown inside the encoder when an argument depends on a call that failed: its error, as is. */
class DependencyFailed {
  constructor(readonly error: unknown) {}
}

export class Caller implements CallMaker {
  private nextId = 1;
  /** Calls made and not settled (queued or waiting for a reply), by id. */
  readonly pending = new Map<number, OutgoingCall>();
  /** Calls not yet handed to a connection, in order. */
  private queue: OutgoingCall[] = [];
  private flushScheduled = false;
  private readonly flushBound = () => this.flush();
  /** The open connection calls go out on, if any. */
  private conn: Connection | undefined;
  /** Client-side argument schemas (the client's `validate` option). */
  private argsCheck: ArgsCheck | undefined;

  constructor(private readonly options: CallerOptions) {}

  /** Checks the arguments of every call on the root with `check` before it is sent. */
  checkArgsWith(check: ArgsCheck): void {
    this.argsCheck = check;
  }

  get label(): string {
    return this.options.label;
  }

  get connection(): Connection | undefined {
    return this.conn;
  }

  /** Calls go out on `conn` from now on (undefined: hold them). */
  attach(conn: Connection | undefined): void {
    this.conn = conn;
    if (conn && this.queue.length) this.scheduleFlush();
  }

  // ---------------------------------------------------------------------------------------------
  // Making calls
  // ---------------------------------------------------------------------------------------------

  call(base: Base, path: readonly string[], args: readonly unknown[] | undefined, options?: CallOptions): OutgoingCall {
    const refused = this.options.refuse?.();
    if (refused) return failedCall(refused);
    if (options?.signal?.aborted) return failedCall(options.signal.reason);
    const { limits } = this.options;
    if (this.pending.size >= limits.maxPendingCalls) {
      return failedCall(
        new RpcError(
          "LIMIT",
          `${this.pending.size} calls are already queued or waiting for a reply on ${this.label} (limits.maxPendingCalls).`,
        ),
      );
    }
    // Calls settled while queued (timeouts while reconnecting) leave the queue at the next flush;
    // compact now and then so a long outage cannot grow it without bound.
    if (this.queue.length >= limits.maxPendingCalls) this.queue = this.queue.filter((c) => !c.settled);
    const checked = args && base.kind === "root" && this.argsCheck ? this.argsCheck(path, args) : undefined;
    if (checked instanceof RpcError) return failedCall(checked);
    const call = new OutgoingCall(this.nextId++);
    try {
      this.prepare(call, base, path, args);
    } catch (error) {
      this.unpin(call);
      call.settle(false, error);
      call.observed = true; // the proxy hands it out: a failure to encode is seen by whoever awaits
      return call;
    }
    this.pending.set(call.id, call);
    if (options) this.configure(call, options);
    else if (this.options.timeout > 0) this.arm(call, this.options.timeout);
    if (checked) this.hold(call, checked);
    this.queue.push(call);
    this.scheduleFlush();
    return call;
  }

  configure(call: OutgoingCall, options: CallOptions): void {
    if (call.settled) return;
    const timeout = options.timeout ?? this.options.timeout;
    clearDeadline(call);
    if (timeout > 0) this.arm(call, timeout);
    else if (options.timeout === 0) call.deadline = 0;
    if (options.signal && options.signal !== call.signal) {
      if (call.onAbort) call.signal!.removeEventListener("abort", call.onAbort);
      const signal = options.signal;
      if (signal.aborted) {
        this.fail(call, signal.reason);
        return;
      }
      call.signal = signal;
      call.onAbort = () => this.fail(call, signal.reason);
      signal.addEventListener("abort", call.onAbort, { once: true });
    }
    if (options.idempotent !== undefined) {
      call.idempotent = options.idempotent;
      call.retries = options.idempotent ? (options.retries ?? 3) : 0;
    }
  }

  /**
   * Encodes `base` + `path` + `args` into `call`'s wire form, or marks it deferred (it pipelines
   * on a call that left in an earlier frame). Throws what makes the call fail before it is sent:
   * ENCODE, a released stub, the error of a failed call it depends on.
   */
  private prepare(call: OutgoingCall, base: Base, path: readonly string[], args: readonly unknown[] | undefined): void {
    const { limits } = this.options;
    call.deferred = false;
    call.deps = undefined;
    call.conn = undefined;
    call.blobs = NO_BLOBS;
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
        const at = locate(dep.value, path, this.label);
        if (!at) throw new RpcError("NOT_CALLABLE", "The result is plain data: there is no method to call on it.");
        this.prepare(call, { kind: "stub", stub: at.stub }, path.slice(at.index), args);
        return;
      }
      call.target = -dep.id;
      call.source = { base, path, args };
      if (!this.dependOn(call, dep)) {
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
        refer: this.referBound,
      };
      let apply: unknown;
      const outer = this.encoding;
      this.encoding = { call, base, path, args };
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
        this.encoding = outer;
      }
      const step = JSON.stringify(apply);
      chain = chain.length === 2 ? `[${step}]` : `${chain.slice(0, -1)},${step}]`;
      call.blobs = ctx.blobs;
      // Blob and File bytes are read before the call's frame may leave (the frame waits, and the
      // calls after it wait behind it: order is kept).
      call.ready = ctx.pending?.length ? resolveBlobs(ctx.blobs, ctx.pending) : undefined;
    }
    call.chain = chain;
  }

  /**
   * The call whose arguments are being encoded (prepare is synchronous; a lazy path passed as an
   * argument makes a call of its own in between, hence the save and restore there), for
   * `referBound`: one function per caller instead of a closure per call (a bundler's keepNames,
   * on by default in wrangler, names every function made, at a cost per call).
   */
  private encoding: { call: OutgoingCall; base: Base; path: readonly string[]; args: readonly unknown[] } | undefined;
  private readonly referBound = (value: object): WireRecord | Substitute | undefined => {
    const { call, base, path, args } = this.encoding!;
    return this.refer(call, value, base, path, args);
  };

  /** The encoder's hook for values that travel by reference. */
  private refer(
    call: OutgoingCall,
    value: object,
    base: Base,
    path: readonly string[],
    args: readonly unknown[],
  ): WireRecord | Substitute | undefined {
    const info = proxyInfo(value);
    if (!info) {
      // The caller's own function or RpcTarget: exported, the other end gets a stub.
      if (typeof value !== "function" && !(value instanceof RpcTarget)) return undefined;
      const entry = this.options.exports.pin(value);
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
        if (call.conn && call.conn !== conn) throw lostReference(this.label);
        call.conn = conn;
        return [RefRecord.Return, info.entry.id];
      }
      case "path": {
        call.source = { base, path, args };
        if (info.base.kind !== "call") {
          // A lazy path on the root or a stub, passed along: read it now, in this frame, and
          // pass what it reads.
          const read = this.call(info.base, info.path, undefined);
          read.observed = true;
          if (read.settled) throw new DependencyFailed(read.error);
          if (!this.dependOn(call, read)) throw DEFER;
          return [RefRecord.Pipeline, [read.id]];
        }
        const dep = info.base.call;
        dep.observed = true;
        if (dep.settled) {
          if (!dep.ok) throw new DependencyFailed(dep.error);
          // Already here: pass the value (or the stub) the path reaches.
          const at = locate(dep.value, info.path, this.label);
          if (at && at.index < info.path.length) {
            throw new RpcError("ENCODE", "An argument reads a property of a stub: await it first, or pass the stub itself.");
          }
          return new Substitute(at ? at.stub : readFrom(this, dep.value, info.path, 0));
        }
        if (!this.dependOn(call, dep)) throw DEFER;
        return [RefRecord.Pipeline, [dep.id, ...info.path]];
      }
    }
  }

  /** Holds `call` (and the calls after it) until its async client-side schema has answered. */
  private hold(call: OutgoingCall, checked: Promise<RpcError | undefined>): void {
    call.held = true;
    checked.then((refusal) => {
      call.held = false;
      if (refusal) this.finish(call, false, refusal);
      this.scheduleFlush();
    });
  }

  /**
   * Records that `call` uses the result of `dep`. True when they can travel in the same frame
   * (`dep` is still queued); false when `call` must wait for `dep` to settle.
   */
  private dependOn(call: OutgoingCall, dep: OutgoingCall): boolean {
    (call.deps ??= []).push(dep);
    return !dep.sentOn && !dep.deferred;
  }

  // ---------------------------------------------------------------------------------------------
  // Sending
  // ---------------------------------------------------------------------------------------------

  /**
   * Flushes two microtask hops from now: `await handle` and `Promise.all([...handles])` call the
   * handles' `then` in a promise job queued in this turn, so a property read awaited there is
   * still made before the flush and shares the frame with the calls made in this turn.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => queueMicrotask(this.flushBound));
  }

  /** Hands every queued call that can go to the connection, in order, and sends the frame. */
  flush(): void {
    this.flushScheduled = false;
    const conn = this.conn;
    if (this.queue.length === 0) return;
    if (!conn) {
      // Connect only for calls still alive at the end of the turn (not for one aborted at once).
      if (this.queue.some((c) => !c.settled)) this.options.onQueued?.();
      return;
    }
    if (this.options.congested?.()) {
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setTimeout(this.flushBound, 5);
      }
      return;
    }
    const queue = this.queue;
    const outbox = conn.outbox;
    let frameHasBlobs = false;
    let inFrame: Set<OutgoingCall> | undefined;
    let i = 0;
    for (; i < queue.length; i++) {
      const call = queue[i]!;
      if (call.settled) continue; // timed out, aborted or failed while queued
      if (call.held) break; // its client-side schema has not answered: it and every later call wait
      if (call.deferred || (call.deps && !this.depsInFrame(call, inFrame))) {
        if (!call.deps!.every((d) => d.settled)) {
          // Wait (and keep every later call waiting: order is kept) until they have settled.
          for (const dep of call.deps!) if (!dep.settled) dep.whenSettled(() => this.scheduleFlush());
          break;
        }
        // Encode again with the results that arrived.
        const { base, path, args } = call.source!;
        this.unpin(call);
        try {
          this.prepare(call, base, path, args);
        } catch (error) {
          this.fail(call, error === DEFER ? new RpcError("INTERNAL", "A pipelined call could not be encoded.") : error);
          continue;
        }
        if (call.deferred) {
          i--; // depends on something else now: wait for it on the next pass
          continue;
        }
      }
      if (call.conn && call.conn !== conn) {
        this.fail(call, lostReference(this.label));
        continue;
      }
      if (call.blobs.length && frameHasBlobs) {
        // One envelope's blobs per frame: cut here; calls after the cut cannot pipeline on
        // calls before it (checked by depsInFrame above on the next ones).
        outbox.flush();
        frameHasBlobs = false;
        inFrame?.clear();
      }
      if (call.ready) {
        const ready = call.ready;
        outbox.add(
          FrameKind.Calls,
          envelope(call),
          call.blobs,
          ready.then(
            () => undefined,
            (error: unknown) => {
              this.finish(call, false, error); // a Blob could not be read: the call fails, its envelope is dropped
              return null;
            },
          ),
        );
      } else outbox.add(FrameKind.Calls, envelope(call), call.blobs);
      call.sentOn = conn;
      if (call.exports) this.options.exports.sent(call.exports);
      if (call.blobs.length) frameHasBlobs = true;
      (inFrame ??= new Set()).add(call);
    }
    this.queue = i === queue.length ? [] : queue.slice(i);
    outbox.flush();
  }

  private depsInFrame(call: OutgoingCall, inFrame: Set<OutgoingCall> | undefined): boolean {
    for (const dep of call.deps!) if (!inFrame?.has(dep)) return false;
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Settling
  // ---------------------------------------------------------------------------------------------

  /** Settles call `id` with a reply's outcome; unknown ids (timed out, cancelled) are ignored. */
  settleReply(id: number, ok: boolean, outcome: unknown): void {
    const call = this.pending.get(id);
    if (call) this.finish(call, ok, outcome);
  }

  /** The call with `id`, if it is waiting for a reply. */
  waiting(id: number): OutgoingCall | undefined {
    return this.pending.get(id);
  }

  /** Fails `call` now (timeout, abort, refusal); a sent call is cancelled on the other end. */
  fail(call: OutgoingCall, reason: unknown): void {
    if (call.settled) return;
    if (call.sentOn && call.sentOn === this.conn && call.id > 0) this.conn.cancel(call.id);
    this.finish(call, false, reason);
  }

  private finish(call: OutgoingCall, ok: boolean, outcome: unknown): void {
    if (!call.settle(ok, outcome)) return;
    this.pending.delete(call.id);
    if (!call.sentOn) this.unpin(call);
    clearDeadline(call);
    if (call.onAbort) {
      call.signal!.removeEventListener("abort", call.onAbort);
      call.onAbort = undefined;
    }
    if (this.pending.size === 0 && this.deadlineTimer !== undefined) {
      clear(this.deadlineTimer);
      this.deadlineTimer = undefined;
      this.deadlineAt = Infinity;
    }
    if (!ok && !call.observed) {
      // Nobody awaited it (yet): report it unless someone does within this turn of the loop.
      setTimeout(() => {
        if (!call.observed) this.options.onUnobservedError(outcome);
      }, 0);
    }
  }

  private unpin(call: OutgoingCall): void {
    if (call.exports) {
      this.options.exports.dropped(call.exports);
      call.exports = undefined;
    }
  }

  /**
   * The connection calls went out on ended. `requeue(call)` says what happens to a call that was
   * sent on it and not answered: true puts it back in front of the queue (flagged `retry` when
   * `retry` is true), false fails it with `error`.
   */
  connectionLost(
    lost: Connection,
    decide: (call: OutgoingCall) => "retry" | "resend" | "fail",
    error: (call: OutgoingCall) => unknown,
  ): void {
    if (this.conn === lost) this.conn = undefined;
    const again: OutgoingCall[] = [];
    for (const call of [...this.pending.values()]) {
      if (call.sentOn !== lost) continue;
      const what = decide(call);
      if (what === "fail") {
        this.finish(call, false, error(call));
        continue;
      }
      call.sentOn = undefined;
      if (what === "retry") call.flags |= CallFlags.Retry;
      if (call.exports) this.options.exports.repin(call.exports);
      again.push(call);
    }
    again.sort((a, b) => a.id - b.id);
    this.queue = [...again, ...this.queue];
  }

  /** Fails every call (queued or waiting) with `error`. */
  failAll(error: unknown): void {
    for (const call of [...this.pending.values()]) this.finish(call, false, error);
    this.queue = [];
  }

  /** Takes every queued (unsent) call that is still waiting out of the queue; they stay pending. */
  takeQueued(): OutgoingCall[] {
    const calls = this.queue.filter((call) => !call.settled);
    this.queue = [];
    return calls;
  }

  /** Fails every queued (unsent) call with `error`. */
  failQueued(error: unknown): void {
    for (const call of this.queue) this.finish(call, false, error);
    this.queue = [];
  }

  // ---------------------------------------------------------------------------------------------
  // Timeouts
  // ---------------------------------------------------------------------------------------------

  /**
   * One timer for all call timeouts, armed for the earliest deadline: a timer per call cost about
   * a third of the client's own CPU per call.
   */
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineAt = Infinity;

  private arm(call: OutgoingCall, timeout: number): void {
    call.timeout = timeout;
    call.deadline = Date.now() + timeout;
    this.armDeadlines(call.deadline);
  }

  private armDeadlines(deadline: number): void {
    if (deadline >= this.deadlineAt) return;
    clear(this.deadlineTimer);
    this.deadlineAt = deadline;
    // Unref'd: the socket keeps a process alive while calls wait; this timer must not.
    this.deadlineTimer = unref(setTimeout(() => this.expire(), Math.max(0, deadline - Date.now())));
  }

  private expire(): void {
    this.deadlineTimer = undefined;
    this.deadlineAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const call of [...this.pending.values()]) {
      if (call.deadline === 0) continue;
      if (call.deadline <= now) {
        const because = call.sentOn ? undefined : this.options.unsentBecause?.();
        const message = `No reply from ${this.label} within ${call.timeout} ms${because ? `: the call was never sent, ${because}` : "."}`;
        this.fail(call, new RpcError("TIMEOUT", message));
      } else if (call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity) this.armDeadlines(next);
  }

  /** Clears every timer (the owner is being disposed). */
  stopTimers(): void {
    clear(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.deadlineAt = Infinity;
  }
}

function clearDeadline(call: OutgoingCall): void {
  call.deadline = 0;
}

/** The JSON of a call envelope: `[id,chain]`, with target and flags only when they are set. */
function envelope(call: OutgoingCall): string {
  if (call.flags) return `[${call.id},${call.chain},${call.target},${call.flags}]`;
  if (call.target) return `[${call.id},${call.chain},${call.target}]`;
  return `[${call.id},${call.chain}]`;
}

/** A call that failed before it could be made. */
function failedCall(reason: unknown): OutgoingCall {
  const call = new OutgoingCall(0);
  call.settle(false, reason);
  call.observed = true;
  return call;
}

function lostReference(label: string): RpcError {
  return new RpcError(
    "REFERENCE_LOST",
    `The call uses a stub from a connection to ${label} that has closed; stubs do not survive a reconnect. Get a new one.`,
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

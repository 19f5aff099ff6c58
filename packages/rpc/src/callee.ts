/**
 * The callee half of a connection: calls the other end makes, run against this end's root (the
 * Durable Object, or what a client exposes), its exports, or results pipelined in the same frame.
 * One implementation for both ends; runtime-neutral.
 *
 * callee-config.ts holds how an end is set up and what a call's target reaches under it;
 * borrowed-stubs.ts, when the stubs a call borrowed go back; callee-replies.ts (`CalleeReplies`),
 * writing and sending a call's answer. What only a Durable Object needs (its delivery record,
 * sequential ordering, waiting until idle for an HTTP batch, `rpcCaller()`) is added by
 * `ServerCallee` (server-callee.ts) through the protected hooks below, so a client does not
 * carry it.
 *
 * Invariants:
 *  - Every envelope of a frame is checked (shape, names, limits, references) before any call of
 *    the frame runs; a call that fails the check is answered with `Failed` and nothing of it runs.
 *  - Calls start in the order they arrived: each starts when it arrives (unless the server orders
 *    them sequentially); a call that pipelines on an earlier one (same frame) starts when that one
 *    has settled, and fails with that one's failure, as is, if it failed.
 *  - Every call with an id gets exactly one reply, unless the caller cancelled it (it no longer
 *    waits). Notifications (id 0) get none.
 *  - Stubs a call received as arguments are released when the call ends, unless the method kept
 *    one with `dup()`.
 *  - Nothing survives the connection: on close every running call's signal aborts, queued calls
 *    never start.
 *
 * Internal module.
 */
import { dependentDone, dependOn, endBorrowing } from "./borrowed-stubs.js";
import { type CalleeConfig, isSystem, startingPoint, SYSTEM_CALL_ROOM } from "./callee-config.js";
import { type ChainEnv, type Cursor, type Finished, runSteps } from "./chain.js";
import { ownError } from "./refusals.js";
import { decodeContext } from "./codec.js";
import type { ReferenceResolver } from "./decoder.js";
import { asRpcError, failed, type Outcome, type Reply } from "./replies.js";
import { CalleeReplies } from "./callee-replies.js";
import type { Connection } from "./connection.js";
import { CallFlags, FrameKind } from "./envelopes.js";
import { cancelledReason, type Incoming, readIncoming, refusedCall } from "./incoming-call.js";
import { RpcError } from "./errors.js";
import { IdMap } from "./id-map.js";
import { buildArguments, type FrameState, frameReferences, type PipelineConfig } from "./callee-references.js";
import { releaseUnbuilt, releaseUnread } from "./references.js";

/** Where callee-replies.ts and server-callee.ts take it from. */
export type { CalleeConfig } from "./callee-config.js";

const noop = () => {};

export class Callee {
  /** Calls with an id that arrived and are not answered yet (duplicate detection, pending limit). */
  protected readonly running = new IdMap<Incoming>();
  /** Calls cancelled while running that have not ended yet (they still count as running). */
  private orphans = 0;
  /** Notifications whose method returned a promise that has not settled (bounded on their own). */
  private notifying = 0;
  private readonly env: ChainEnv;
  private readonly pipeline: PipelineConfig;
  private readonly replies: CalleeReplies;
  /** Bracket each step's synchronous user code (the server tracks the running call there). */
  protected enter: (call: unknown) => void = noop;
  protected leave: () => void = noop;
  /**
   * The frame being read by `receive` (which is synchronous): what its reference records may
   * pipeline on. Kept here, not in closures made per frame, so reading a frame makes no function
   * (a bundler's keepNames, on by default in wrangler, names every function a frame would make,
   * at a cost per call).
   */
  private readonly frame: FrameState = { byId: undefined, deps: undefined };
  private readonly frameRefs: ReferenceResolver;

  constructor(
    protected readonly conn: Connection,
    protected readonly config: CalleeConfig,
  ) {
    this.env = { policy: config.policy, label: config.label, isPlatformState: (v) => config.isPlatformState(v) };
    this.pipeline = { label: config.label, isPlatformState: this.env.isPlatformState, forbidden: config.forbidden };
    this.replies = new CalleeReplies(conn, config);
    this.frameRefs = frameReferences(this.frame, config);
  }

  /** A notification could not be read (e.g. its frame was too big): reported, as failed ones are. */
  refusedNotification(error: RpcError): void {
    this.config.onNotificationError(error);
  }

  /** Names this end in errors. */
  get label(): string {
    return this.config.label;
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
    const { limits } = this.config;
    const parsed: Incoming[] = [];
    // Reference records of this frame's calls add to `frame.deps` (see frameRefs). Reset, not
    // replaced: calls keep the arrays they were given, never the holder.
    const frame = this.frame;
    frame.byId = undefined;
    frame.deps = undefined;
    const ctx = decodeContext(blobs, limits);
    ctx.refs = this.frameRefs;
    for (const envelope of body) {
      const id = envelope[0] as number;
      if (id > 0 && this.running.has(id)) {
        releaseUnread(this.conn.imports, envelope[1]);
        this.conn.outbox.add(
          FrameKind.Replies,
          failed(id, new RpcError("PROTOCOL", `Call id ${id} is already running on this connection.`)),
        );
        continue;
      }
      // Notifications still running are bounded apart from calls: refused because calls were
      // running, a client lost the events and broadcasts sent while the object's calls ran on it.
      // dorpc's own notifications (topic events) are not bounded by the app's: they run to the
      // end at once, and one refused would be an event lost. dorpc's own calls (a subscribe, an
      // unsubscribe) have room of their own above the app's calls: a client that has the most
      // calls it may have waiting still gets its subscriptions back after a reconnect.
      if (
        id === 0
          ? this.notifying >= limits.maxPendingCalls && !isSystem(envelope)
          : this.running.size + this.orphans >= limits.maxPendingCalls + (isSystem(envelope) ? SYSTEM_CALL_ROOM : 0)
      ) {
        releaseUnread(this.conn.imports, envelope[1]);
        const what = id === 0 ? "notifications are still running" : "calls are running";
        const error = new RpcError("LIMIT", `More than limits.maxPendingCalls (${limits.maxPendingCalls}) ${what} on this connection.`);
        if (id > 0) this.conn.outbox.add(FrameKind.Replies, failed(id, error));
        else this.config.onNotificationError(error);
        continue;
      }
      let call: Incoming;
      try {
        call = readIncoming(envelope, frame, ctx, this.config);
      } catch (error) {
        releaseUnread(this.conn.imports, envelope[1]);
        const refusal = ownError(asRpcError(error));
        if (id === 0) {
          // A notification (a push, a topic event) has no reply to carry the refusal: report it.
          this.config.onNotificationError(refusal);
          continue;
        }
        this.conn.outbox.add(FrameKind.Replies, failed(id, refusal));
        // A later call of the frame that pipelines on this one fails with the same refusal.
        if (body.length > 1) (frame.byId ??= new Map()).set(id, refusedCall(id, refusal));
        continue;
      }
      if (call.deps) dependOn(call.deps);
      if (id > 0) {
        this.running.set(id, call);
        // Only a later call of the frame can pipeline on it: a frame of one needs no index.
        if (body.length > 1) (frame.byId ??= new Map()).set(id, call);
        if (!this.admit(call)) continue;
      }
      parsed.push(call);
    }
    this.frameArrived();
    for (const call of parsed) this.schedule(call);
  }

  /** A frame's calls are about to be scheduled: a new event (the server's call turns). */
  protected frameArrived(): void {}

  /**
   * Whether `call` may run here; when not, it is answered (and settled, for calls that pipeline
   * on it). Without a delivery record a resend cannot be checked, so it is refused; a Durable
   * Object that keeps one decides from it (server-callee.ts).
   */
  protected admit(call: Incoming): boolean {
    if (!(call.flags & CallFlags.Retry)) return true;
    this.refuseCall(
      call,
      new RpcError(
        "DISCONNECTED",
        `Call ${call.id} was sent before the connection dropped; ${this.config.label} keeps no delivery record, so whether it ran cannot be known, and it was not run again.`,
      ),
    );
    return false;
  }

  /**
   * `call` has taken what it uses from the calls it pipelines on (its arguments are built), or
   * never will (it settled without running): the last of a call's dependents lets its borrowed
   * stubs go. Once per call.
   */
  protected usedDeps(call: Incoming): void {
    if (call.depsUsed || !call.deps) return;
    call.depsUsed = true;
    for (const dep of call.deps) dependentDone(dep);
  }

  /** Answers `call` with `error` without running it. */
  protected refuseCall(call: Incoming, error: RpcError): void {
    this.usedDeps(call);
    releaseUnbuilt(this.conn.imports, call.steps);
    this.running.delete(call.id);
    call.settled = true;
    call.started = true;
    call.outcome = { ok: false, error: ownError(error) };
    this.conn.outbox.add(FrameKind.Replies, failed(call.id, error));
  }

  // ---------------------------------------------------------------------------------------------
  // Scheduling
  // ---------------------------------------------------------------------------------------------

  /** Starts a call of a frame that arrived (the server may hold it back: sequential ordering). */
  protected schedule(call: Incoming): void {
    this.start(call);
  }

  protected start(call: Incoming): void {
    if (call.cancelled) return;
    const pendingDep = call.deps?.find((d) => !d.settled);
    if (pendingDep) {
      // Pipelined on a call that is still running: start when it settles.
      this.busy(call);
      (pendingDep.waiters ??= []).push(() => this.resume(call));
      return;
    }
    call.started = true;
    const result = this.run(call);
    if (!result) return;
    this.busy(call);
    if (call.id !== 0) {
      result.then((outcome) => this.complete(call, outcome));
      return;
    }
    this.notifying++;
    result.then((outcome) => {
      this.notifying--;
      this.complete(call, outcome);
    });
  }

  /** Starts `call`, whose dependency has settled (the server: in its turn, call-turns.ts). */
  protected resume(call: Incoming): void {
    this.start(call);
  }

  /** `call` started and waits (on a call it pipelines on, or on its own `await`). */
  protected busy(_call: Incoming): void {}

  /** `call` settled and was answered (or cancelled): nothing of it runs any more. */
  protected ended(_call: Incoming): void {}

  /** `call` is about to run its steps (the server makes it `rpcCaller()`'s call). */
  protected entering(_call: Incoming): void {}

  /** Runs a call whose dependencies have settled. Returns a promise only when it went async. */
  private run(call: Incoming): Promise<Outcome> | undefined {
    if (call.deps) {
      for (const dep of call.deps) if (!dep.outcome!.ok) return void this.complete(call, dep.outcome!);
    }
    let cursor: Cursor;
    let value: unknown;
    try {
      cursor = startingPoint(call, this.config, this.conn);
      buildArguments(this.conn, call, this.pipeline);
      this.usedDeps(call);
      this.entering(call);
      value = runSteps(cursor, call.steps, 0, this.env, this.enter, this.leave, call);
    } catch (error) {
      this.complete(call, { ok: false, error });
      return undefined;
    }
    if (value instanceof Promise) {
      return value.then(
        (v) => ({ ok: true, value: (v as Finished).value }),
        (error) => ({ ok: false, error }),
      );
    }
    this.complete(call, { ok: true, value });
    return undefined;
  }

  /** A call ended: release what it borrowed, keep its outcome for dependents, reply. */
  private complete(call: Incoming, outcome: Outcome): void {
    if (call.settled) return;
    call.settled = true;
    releaseUnbuilt(this.conn.imports, call.steps); // failed before its arguments were built
    if (call.referenced) call.outcome = outcome;
    const waiters = call.waiters;
    call.waiters = undefined;
    const mine = call.id > 0 && this.running.get(call.id) === call;
    if (mine) this.running.delete(call.id);
    if (call.orphaned) {
      call.orphaned = false;
      this.orphans--;
    }
    if ((mine && !call.cancelled) || call.recorded) {
      // A recorded call is answered into the record even when its caller left: a resend on the
      // next connection is answered from it.
      const sending = mine && !call.cancelled;
      const reply = this.replies.write(call.id, outcome, sending);
      if (call.recorded) this.record(call, this.replies.replayable(call.id, reply));
      if (sending) this.replies.send(call.id, reply);
    } else if (call.id === 0 && !outcome.ok) {
      this.config.onNotificationError(outcome.error);
    }
    this.usedDeps(call);
    if (waiters) for (const fn of waiters) fn();
    // After the reply: a stub the call borrowed and returned goes back before its release — once
    // the later calls of its frame that pass its result on have taken holders of their own
    // (pipelined-copy.ts), as a round trip's new reference would be theirs; they may start in a
    // later event (call-turns.ts, sequential ordering).
    if (call.borrowed) endBorrowing(call);
    this.ended(call);
  }

  // ---------------------------------------------------------------------------------------------
  // Cancelling and closing
  // ---------------------------------------------------------------------------------------------

  /** The caller gave up on these calls: abort their signals. */
  cancel(ids: readonly number[]): void {
    for (const id of ids) {
      this.replies.cancel(id);
      const call = this.running.get(id);
      if (!call) continue;
      this.running.delete(id);
      call.cancelled = true;
      call.controller?.abort(cancelledReason());
      this.dropped(call);
      if (!call.started) this.settleUnstarted(call);
      else if (!call.settled) {
        // Still running (its signal is only a request): it holds what it holds until it ends.
        call.orphaned = true;
        this.orphans++;
      }
    }
  }

  /**
   * A call cancelled before it ran never will: it settles as cancelled, so the calls that
   * pipeline on it fail with that instead of waiting for it (and, with sequential ordering,
   * holding back every call after them).
   */
  private settleUnstarted(call: Incoming): void {
    if (call.settled) return;
    call.settled = true;
    this.usedDeps(call);
    releaseUnbuilt(this.conn.imports, call.steps);
    call.outcome = { ok: false, error: cancelledReason() };
    const waiters = call.waiters;
    call.waiters = undefined;
    if (waiters) for (const fn of waiters) fn();
    this.ended(call);
  }

  /** The caller cancelled `call` (it may not have started). */
  protected dropped(_call: Incoming): void {}

  /**
   * The connection ended: every running call is cancelled, queued calls never start. When it was
   * cut (`peerMayReturn`), a started call kept in the delivery record runs on, its signal not
   * aborted: the caller resends it on its next connection, where it is answered when it ends.
   */
  close(peerMayReturn = false, _peerDone = false, _sessionEnded = false): void {
    for (const call of this.running.values()) {
      if (peerMayReturn && call.started && call.recorded) continue;
      call.cancelled = true;
      call.controller?.abort(cancelledReason());
    }
    this.running.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Replies
  // ---------------------------------------------------------------------------------------------

  /** Keeps the reply of a recorded call (server-callee.ts). */
  protected record(_call: Incoming, _reply: Reply): void {}
}

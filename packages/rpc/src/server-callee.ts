/**
 * The callee as a Durable Object runs it: the shared callee (callee.ts) plus what only the object
 * side needs, so a client bundle does not carry it:
 *  - the delivery record (exactly-once): a call is checked against it before it runs (run,
 *    answer from the record, wait for the same call still running from an earlier connection, or
 *    refuse), and its reply is kept in it, written just after the reply was sent (see `record`);
 *  - sequential ordering (`ordering: "sequential"`): a call that awaits holds back the calls
 *    after it until it settles or is cancelled;
 *  - `whenIdle`, for an HTTP batch that answers once every call of its request has;
 *  - the call whose synchronous part is running, for `rpcCaller()` (current-call.ts).
 *
 * Internal module.
 */
import { memberFunction } from "./access.js";
import { CallTurns } from "./call-turns.js";
import { Callee, type CalleeConfig } from "./callee.js";
import type { Incoming } from "./incoming-call.js";
import type { InputGate } from "./input-gate.js";
import type { Connection } from "./connection.js";
import { type RunningCall, swapCurrent } from "./current-call.js";
import type { Decision } from "./delivery.js";
import type { Unbuilt } from "./delivery-batches.js";
import { CallFlags, FrameKind, ReplyStatus } from "./envelopes.js";
import type { RpcError } from "./errors.js";
import { type WireFrame, writeFrame } from "./frame.js";
import type { Reply } from "./replies.js";
import { releaseUnbuilt } from "./references.js";
import { sendStored, storedOutcome } from "./stored-replies.js";
import { methodSpec } from "./rpc-method.js";

/** What the callee needs of the delivery record (delivery.ts). */
export interface Records {
  decide(session: string, id: number, flags: number, recorded: boolean, expiredSession: boolean): Decision;
  started(session: string, id: number, run?: Incoming): void;
  /** Aborts the signal of call `id` of `session` (every call of it without `id`) still running from an earlier connection. */
  cancel(session: string, id?: number): void;
  save(session: string, id: number, frame: WireFrame | Unbuilt, keep: boolean | "always", inFlush?: boolean): void;
  /** Writes the answers `save(…, inFlush: true)` left for the end of the outbox's flush. */
  flushDue(): void;
  release(session: string, id: number): void;
  /** Every call of `session` below `below` has had its reply: their answers still in memory become markers. */
  acknowledge(session: string, below: number): void;
  /** `session` is over (its client was disposed): nothing of it will be resent. */
  ended(session: string): void;
}

/** How a Durable Object serves calls, besides what every callee needs. */
export interface ServerCalleeConfig extends CalleeConfig {
  /** Calls from one connection run one after another, even across `await`s. */
  readonly sequential: boolean;
  /** The object's delivery record (exactly-once), when it keeps one. */
  readonly records?: Records;
  /**
   * The connection is its session's only one (a WebSocket): when the client closes it, nothing
   * of the session runs on for it. Not for HTTP batches, whose requests share a session.
   */
  readonly ownsSession?: boolean;
  /** The object's input gate (input-gate.ts): calls behind an async one wait only while it holds. */
  readonly gate?: InputGate;
}

export class ServerCallee extends Callee {
  /** Sequential ordering: the call that is awaiting, and the ones held behind it. */
  private active: Incoming | undefined;
  private held: Incoming[] = [];
  /** Concurrent ordering: a frame's calls start as native calls would (call-turns.ts). */
  private readonly turns: CallTurns;
  /** The call that last went async (`busy`). */
  private lastBusy: Incoming | undefined;
  /** Calls whose twin from an earlier connection is still running: decided again when it ends. */
  private gates: Map<Incoming, Promise<void>> | undefined;
  /** Calls whose gate is open: waiting for their twin's run to end. */
  private waiting: Set<Incoming> | undefined;
  private idleWaiters: (() => void)[] | undefined;
  /** The call `enter` replaced as current, restored by `leave`. */
  private outer: RunningCall | undefined;
  /** Makes the call whose step runs current (each time its steps resume, too). */
  protected override enter = (call: unknown) => {
    this.outer = swapCurrent((call as Incoming).running as RunningCall);
  };
  protected override leave = () => {
    swapCurrent(this.outer);
  };

  constructor(
    conn: Connection,
    private readonly server: ServerCalleeConfig,
  ) {
    super(conn, server);
    const gate = server.gate;
    this.turns = new CallTurns(
      (call) => this.startNow(call),
      () => this.checkIdle(),
      gate ? () => gate.busy : undefined,
    );
    // The answers of calls that wrote storage, saved while one flush runs its work, are written
    // together once it has run all of it: one row for every call of a frame, still in the turn
    // of their replies (so in their writes' transaction).
    const records = server.records;
    if (records) conn.outbox.afterAll = () => records.flushDue();
  }

  /**
   * Resolves once no call with an id is running or waiting, and nothing waits for its turn (an
   * HTTP batch answers then).
   */
  whenIdle(): Promise<void> {
    if (this.running.size === 0 && this.turns.idle) return Promise.resolve();
    return new Promise((resolve) => (this.idleWaiters ??= []).push(resolve));
  }

  private checkIdle(): void {
    if (this.running.size > 0 || !this.turns.idle || !this.idleWaiters) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = undefined;
    for (const resolve of waiters) resolve();
  }

  // ---------------------------------------------------------------------------------------------
  // The delivery record
  // ---------------------------------------------------------------------------------------------

  /**
   * Checks a call against the delivery record before it runs. Returns false when it must not run
   * here: answered from the record, or refused (it is then settled, for calls that pipeline on it).
   */
  protected override admit(call: Incoming, afterWait = false): boolean {
    const { records } = this.server;
    const session = this.conn.session;
    if (!records || !session) return super.admit(call);
    if (call.answered > 0) records.acknowledge(session, call.answered);
    const recorded = (call.flags & CallFlags.System) === 0 && !this.readOnly(call);
    // After waiting for its run from an earlier connection, the record holds that run's answer:
    // the session is not "forgotten" for it.
    const decision = records.decide(session, call.id, call.flags, recorded, !afterWait && this.conn.expiredSession);
    // `recorded` from here on means: this call holds the record's running entry for its id in
    // `session` (only a call that runs holds it; one that waits for an earlier run does not, and
    // must never release that run's entry), and its answer is saved under that session.
    call.recorded = false;
    switch (decision.kind) {
      case "run":
        if (decision.record) {
          call.recorded = true;
          call.session = session;
          call.keep = this.keeps(call);
          call.heldBy = this; // no closure per call: see cancelHeld
          records.started(session, call.id, call);
        }
        return true;
      case "wait":
        (this.gates ??= new Map()).set(call, decision.until);
        return true;
      case "replay":
        this.replay(call, decision.frame);
        return false;
      case "refuse":
        this.refuseCall(call, decision.error);
        return false;
    }
  }

  protected override refuseCall(call: Incoming, error: RpcError): void {
    queueMicrotask(() => this.checkIdle());
    super.refuseCall(call, error);
  }

  /** Answers `call` with the frame stored when it first ran, without running it again. */
  private replay(call: Incoming, frame: WireFrame): void {
    queueMicrotask(() => this.checkIdle());
    releaseUnbuilt(this.conn.imports, call.steps); // what the resend handed out again is not used
    this.usedDeps(call);
    this.running.delete(call.id);
    call.settled = true;
    call.started = true;
    sendStored(this.conn, frame);
    // A later call of the frame may pipeline on it: give it the stored outcome.
    call.outcome = storedOutcome(frame, this.server.limits);
  }

  /**
   * A call that reads only: no call step (getters must not write), or a root method declared
   * `rpcMethod({ readOnly: true }, …)`. Its resends just run again.
   */
  private readOnly(call: Incoming): boolean {
    const { steps } = call;
    if (!steps.some((s) => typeof s !== "string")) return true;
    return call.target === 0 && steps.length === 2 && typeof steps[0] === "string" && this.specOf(steps[0])?.readOnly === true;
  }

  private keeps(call: Incoming): boolean {
    const first = call.steps[0];
    return !(call.target === 0 && typeof first === "string" && this.specOf(first)?.record === false);
  }

  private specOf(name: string) {
    const root = this.server.root;
    return root ? methodSpec(memberFunction(root, name)) : undefined;
  }

  /**
   * Keeps the frame of `reply` in the delivery record (once its Blob bytes, if any, are read).
   *
   * The row is written just after the frame carrying the reply has been sent, in the same turn.
   * A storage write makes the output gate hold every message sent after it until the write is
   * committed, so a reply sent before the row waits only for the method's own writes, if it made
   * any. That keeps the guarantee:
   *  - nothing else runs between the send and the row (same turn), so a resend always finds it;
   *  - writes the method made in this turn are pending when the reply is sent, so the gate holds
   *    the reply, and the row joins their implicit transaction: the client sees the answer only
   *    once both are committed, as before;
   *  - a method that wrote nothing: if the object is reset before the row is committed, nothing
   *    written later was committed either (storage commits in order), so no effect of the call
   *    survived in storage and running its resend is the one run that counts.
   */
  protected override record(call: Incoming, reply: Reply): void {
    const records = this.server.records!;
    const session = call.session!;
    // `record: false` keeps no result; a refusal (the method did not run, or its result was
    // withheld) is short and is kept, so a resend is told what happened, not that it ran.
    const keep = reply.json.startsWith(`[${call.id},${ReplyStatus.Failed},`) ? "always" : call.keep;
    // Inline arrows: a named one (`const save = …`) would be named again on every call by a
    // bundler's keepNames (on by default in wrangler).
    if (reply.ready) {
      reply.ready.then((replaced) =>
        records.save(
          session,
          call.id,
          replaced === undefined
            ? writeFrame(FrameKind.Replies, `[${reply.json}]`, reply.blobs)
            : writeFrame(FrameKind.Replies, `[${replaced}]`, []),
          keep,
        ),
      );
    } else
      this.conn.outbox.afterFlush(() =>
        // Bytes unbuilt: the record builds their frame only if it writes it (most are acknowledged first).
        records.save(
          session,
          call.id,
          reply.blobs.length
            ? { json: `[${reply.json}]`, blobs: reply.blobs }
            : writeFrame(FrameKind.Replies, `[${reply.json}]`, reply.blobs),
          keep,
          true,
        ),
      );
  }

  /** A call that never ran leaves the record: a resend on the next connection must be free to run it. */
  private unrecord(call: Incoming): void {
    if (!call.recorded) return;
    call.recorded = false;
    this.server.records!.release(call.session!, call.id);
  }

  // ---------------------------------------------------------------------------------------------
  // Scheduling
  // ---------------------------------------------------------------------------------------------

  protected override schedule(call: Incoming): void {
    if (!this.server.sequential) {
      this.turns.add(call);
      return;
    }
    if (this.active || this.held.length) {
      this.held.push(call);
      return;
    }
    this.start(call);
  }

  protected override frameArrived(): void {
    this.turns.newEvent();
  }

  protected override resume(call: Incoming): void {
    if (this.server.sequential) this.start(call);
    else this.turns.add(call);
  }

  /** Starts `call`; whether it went async (concurrent ordering, see call-turns.ts). */
  private startNow(call: Incoming): boolean {
    this.lastBusy = undefined;
    this.start(call);
    return this.lastBusy === call;
  }

  protected override start(call: Incoming): void {
    const gate = call.cancelled ? undefined : this.gates?.get(call);
    if (!gate) {
      super.start(call);
      return;
    }
    // The same call is still running from an earlier connection: decide again when it ends.
    this.gates!.delete(call);
    (this.waiting ??= new Set()).add(call);
    if (this.server.sequential) this.active = call;
    gate.then(() => {
      this.waiting!.delete(call);
      if (this.active === call) this.active = undefined;
      // Cancelled while it waited: never admitted (it would hold the record's entry for its id).
      if (!call.cancelled && this.admit(call, true)) {
        if (!this.server.sequential) {
          this.turns.add(call);
          return;
        }
        this.start(call);
        // Ended at once (a synchronous method): `ended` saw no active call to drain behind.
        if (!this.active) this.drain();
      } else this.finishSkipped(call);
    });
  }

  protected override busy(call: Incoming): void {
    // Only a call that ran and awaits (not one waiting for a call it pipelines on).
    if (call.started) this.lastBusy = call;
    if (this.server.sequential) this.active = call;
  }

  protected override entering(call: Incoming): void {
    call.running ??= { conn: this.conn, call } satisfies RunningCall;
  }

  protected override ended(call: Incoming): void {
    if (this.active === call) {
      this.active = undefined;
      this.drain();
    }
    this.checkIdle();
  }

  /** A gated call that was answered from the record after all: the frame goes on. */
  private finishSkipped(call: Incoming): void {
    const waiters = call.waiters;
    call.waiters = undefined;
    if (waiters) for (const fn of waiters) fn();
    this.drain();
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

  /**
   * The caller gave up on `call`: stop holding later calls for it; if it never ran, free its
   * record; if it waits for its twin's run from an earlier connection, that run is what the
   * caller gave up on: its signal aborts.
   */
  protected override dropped(call: Incoming): void {
    if (this.gates?.delete(call) || this.waiting?.has(call)) this.server.records?.cancel(this.conn.session!, call.id);
    if (!call.started) {
      this.held = this.held.filter((c) => c !== call);
      this.unrecord(call);
    }
    if (this.active === call) {
      this.active = undefined;
      this.drain();
    }
  }

  /**
   * A later connection of the session cancelled `call`, which has not started here (held behind
   * another call, or waiting for one it pipelines on): it is cancelled as if the cancel had come
   * on this connection, so it never runs — this connection may be half-open and never drain.
   */
  cancelHeld(call: Incoming): void {
    if (!call.started && this.running.get(call.id) === call) super.cancel([call.id]);
  }

  /** The caller cancelled calls that are not running here: they may run from an earlier connection. */
  override cancel(ids: readonly number[]): void {
    const { records } = this.server;
    const session = this.conn.session;
    if (records && session) for (const id of ids) if (!this.running.has(id)) records.cancel(session, id);
    super.cancel(ids);
  }

  override close(peerMayReturn = false, peerDone = false, sessionEnded = false): void {
    this.turns.clear();
    this.held = [];
    this.active = undefined;
    this.gates = undefined;
    for (const call of this.running.values()) if (!call.started) this.unrecord(call);
    super.close(peerMayReturn);
    // The client closed for good (disposed: 4002; its page left: 1001): what still runs for it
    // from an earlier connection that was cut is cancelled too. (It closes with 4008/4009 when it
    // refused a frame, and comes back to resend.) Disposed, it will never resend: the answers
    // the record kept in memory for that are let go, unwritten.
    const session = this.conn.session;
    if (peerDone && session && this.server.ownsSession) {
      this.server.records?.cancel(session);
      if (sessionEnded) this.server.records?.ended(session);
    }
  }
}

/**
 * The recorded calls of an object that are running now, by session and call id: a resend of one
 * waits for it (`wait`), a later connection of its session can cancel it (`cancel`), and the
 * record's writer (delivery-writer.ts, `writerRunning`) asks whether one admitted before the
 * latest storage write is still going.
 * Two levels, not a `session:id` string: a connection hands in the same session string every
 * time (its hash is kept), where a new key string per lookup is built and hashed three times a call.
 *
 * Internal module (delivery.ts, delivery-writer.ts).
 */
import { cancelledReason } from "./incoming-call.js";

/** A recorded call still running: the storage writes counted when it was admitted, and its waiters. */
export interface Running {
  readonly mark: number;
  done?: Promise<void>;
  finish?: () => void;
  /** The run itself, so a later connection of its session can cancel it (see `cancel`). */
  readonly run?: Cancellable;
}

/** What `cancel` needs of a running call (incoming-call.ts `Incoming`). */
export interface Cancellable {
  cancelled: boolean;
  readonly started: boolean;
  controller: AbortController | undefined;
  /**
   * The connection's callee that holds it until it starts (behind another call with sequential
   * ordering, or waiting for a call it pipelines on): it cancels it there as a cancel arriving
   * there would, so it never runs. That connection may be half-open, never to close or drain.
   */
  heldBy?: { cancelHeld(run: Cancellable): void };
}

export class RunningCalls {
  private readonly bySession = new Map<string, Map<number, Running>>();

  get(session: string, id: number): Running | undefined {
    return this.bySession.get(session)?.get(id);
  }

  /** Call `id` of `session` starts; `mark`: the storage writes counted so far. */
  started(session: string, id: number, mark: number, run?: Cancellable): void {
    let calls = this.bySession.get(session);
    if (!calls) this.bySession.set(session, (calls = new Map()));
    calls.set(id, { mark, run });
  }

  /** What a resend of the running call waits for: it ended (or was released). */
  ended(running: Running): Promise<void> {
    return (running.done ??= new Promise<void>((resolve) => (running.finish = resolve)));
  }

  /** Call `id` of `session` ended: its waiters decide again. */
  release(session: string, id: number): void {
    const calls = this.bySession.get(session);
    const running = calls?.get(id);
    if (!running) return;
    calls!.delete(id); // an emptied session's map goes at `compact`, not per call
    running.finish?.();
  }

  /**
   * Aborts the signal of call `id` of `session` (every running call of the session when `id` is
   * omitted): a client gave up on it while it ran from a connection that is gone.
   */
  cancel(session: string, id?: number): void {
    const calls = this.bySession.get(session);
    if (!calls) return;
    if (id !== undefined) {
      abort(calls.get(id)?.run);
      return;
    }
    for (const running of calls.values()) abort(running.run);
  }

  /** Whether a call admitted before storage write number `count` is still running. */
  startedBefore(count: number): boolean {
    for (const calls of this.bySession.values()) for (const call of calls.values()) if (call.mark !== count) return true;
    return false;
  }

  /** Forgets the sessions with no running call. */
  compact(): void {
    for (const [session, calls] of this.bySession) if (calls.size === 0) this.bySession.delete(session);
  }
}

function abort(run: Cancellable | undefined): void {
  if (!run || run.cancelled) return;
  if (!run.started) {
    run.heldBy?.cancelHeld(run);
    return;
  }
  run.cancelled = true;
  run.controller?.abort(cancelledReason());
}

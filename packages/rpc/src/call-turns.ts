/**
 * Concurrent ordering on a Durable Object: the calls of one frame start as native calls would,
 * each in an event of its own once the one before it has gone async.
 *
 * Native Durable Object calls arrive as separate events, and the runtime's input gate delivers
 * none while a storage operation is pending: a method that reads, awaits and writes
 * (`await storage.get(…)`, then `storage.put(…)`) is not interleaved with another call at that
 * await. A frame carries many calls in one event (batching), so starting them all in it would
 * run the second call at the first one's storage await, and lose one of two increments. Here a
 * call starts in the frame's event only while the calls before it ran to the end synchronously
 * (most do: SQLite storage is synchronous) and left the gate open; after one went async, or left
 * a storage read or `blockConcurrencyWhile` pending (input-gate.ts), the rest wait for a later
 * event, which the input gate holds back until the pending operation has completed — the same
 * place native calls would start. The turn is taken after every await, whatever it waits for: a
 * method may reach its storage read only after some microtask steps (`await this.ready`, a
 * digest), which no check made when it returns could see, and the turn comes after them. It costs
 * about 20 µs in workerd (docs/performance.md). A call that pipelines on a call of its frame
 * starts through here too, when that call has settled.
 *
 * Calls of later frames queue behind calls still waiting here: calls start in the order they
 * were sent.
 *
 * Internal module.
 */
import type { Incoming } from "./incoming-call.js";

type Turn = { cancel(): void };

/**
 * A later event. In workerd, the settling of reading an empty `Response` body: the runtime
 * delivers it as an I/O completion, an event of its own after the microtasks of this one, which
 * the input gate holds back while a storage operation is pending — as it would a native call.
 * It costs about 20 µs; a timer or `scheduler.wait(0)`, the same kind of event, costs a
 * millisecond or more, and a `MessageChannel` message or a digest settles among the microtasks
 * (measured in workerd: docs/performance.md). Elsewhere (an object run in Node, in
 * tests) `setImmediate`, the next turn of the event loop.
 */
const inWorkerd = typeof navigator !== "undefined" && navigator.userAgent === "Cloudflare-Workers";
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
const clearImmediateFn = (globalThis as { clearImmediate?: (handle: unknown) => void }).clearImmediate;
const nextTurn = (fn: () => void): Turn => {
  if (inWorkerd) {
    let live = true;
    void new Response("").arrayBuffer().then(() => {
      if (live) fn();
    });
    return {
      cancel() {
        live = false;
      },
    };
  }
  if (immediate && clearImmediateFn) {
    const handle = immediate(fn);
    return { cancel: () => clearImmediateFn(handle) };
  }
  const handle = setTimeout(fn, 0);
  return { cancel: () => clearTimeout(handle) };
};

export class CallTurns {
  /** Calls waiting for the next turn, in order; `[]` while the last one started went async this turn. */
  private queue: Incoming[] | undefined;
  private turn: Turn | undefined;
  private readonly nextBound = () => this.next();

  constructor(
    /** Starts a call and says whether it went async (is waiting for something). */
    private readonly start: (call: Incoming) => boolean,
    /** Every call that waited here has started. */
    private readonly drained: () => void,
    /**
     * Whether the object's input gate holds (input-gate.ts): a storage read or
     * `blockConcurrencyWhile` pending. `undefined` without a gate (an object outside workerd).
     */
    private readonly gateBusy?: () => boolean,
  ) {}

  /** Whether no call waits here for its turn. */
  get idle(): boolean {
    return this.queue === undefined || (this.queue.length === 0 && this.turn === undefined);
  }

  /**
   * Starts `call` now, or in a later turn behind the calls that wait: a frame's call, or one whose
   * dependency has just settled (it pipelines on it).
   */
  add(call: Incoming): void {
    if (this.queue || this.gateBusy?.()) {
      (this.queue ??= []).push(call);
      this.turn ??= nextTurn(this.nextBound);
      return;
    }
    // What comes after it waits, until the next frame (`newEvent`): it went async, or it left
    // the gate holding (a storage read it did not await).
    if (this.start(call) || this.gateBusy?.()) this.queue = [];
  }

  /**
   * A frame arrived: a new event, which the runtime delivers only with the gate open. A call of
   * an earlier event that went async holds back nothing that starts in it.
   */
  newEvent(): void {
    if (this.queue?.length === 0 && this.turn === undefined) this.queue = undefined;
  }

  private next(): void {
    // Outside workerd no runtime holds the turn back while the gate is closed: wait it out here.
    if (!inWorkerd && this.gateBusy?.()) {
      this.turn = nextTurn(this.nextBound);
      return;
    }
    this.turn = undefined;
    const queue = this.queue ?? [];
    this.queue = undefined;
    for (let i = 0; i < queue.length; i++) {
      const call = queue[i]!;
      if (call.cancelled) continue;
      if (this.start(call) || this.gateBusy?.()) {
        this.queue = queue.slice(i + 1);
        if (this.queue.length > 0) {
          this.turn = nextTurn(this.nextBound);
          return;
        }
      }
    }
    this.drained();
  }

  /** The connection ended: nothing more starts. */
  clear(): void {
    this.turn?.cancel();
    this.turn = undefined;
    this.queue = undefined;
  }
}

/**
 * Concurrent ordering on a Durable Object: the calls of one frame start as native calls would,
 * each in an event of its own once the one before it has gone async.
 *
 * Native Durable Object calls arrive as separate events, and the runtime's input gate delivers
 * none while a storage operation is pending: a method that reads, awaits and writes
 * (`await storage.get(…)`, then `storage.put(…)`) is not interleaved with another call at that
 * await. A frame carries many calls in one event (batching), so starting them all in it would
 * run the second call at the first one's storage await, and lose one of two increments. Here a
 * call starts in the frame's event while the calls before it ran to the end synchronously (most
 * do: SQLite storage is synchronous) or went async with the input gate open (awaiting a timer, a
 * `fetch`, another object: native calls would be delivered then too). After one went async
 * while the gate holds (a storage operation or `blockConcurrencyWhile` pending: input-gate.ts),
 * the rest wait for a timer turn, which the gate holds back until that operation has completed
 * — the same place native calls would start. (A timer turn costs about a millisecond under
 * `wrangler dev`; it is paid only where the gate would make native calls wait anyway.)
 *
 * Calls of later frames queue behind calls still waiting here: calls start in the order they
 * were sent.
 *
 * Internal module.
 */
import type { Incoming } from "./incoming-call.js";

type Turn = ReturnType<typeof setTimeout>;

/**
 * A later event: in workerd a timer, which the input gate holds back while a storage operation
 * is pending; elsewhere (an object run in Node, in tests) `setImmediate`, the next turn of the
 * event loop without a timer's minimum delay.
 */
const inWorkerd = typeof navigator !== "undefined" && navigator.userAgent === "Cloudflare-Workers";
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
const clearImmediateFn = (globalThis as { clearImmediate?: (handle: unknown) => void }).clearImmediate;
const nextTurn = (fn: () => void): Turn => (!inWorkerd && immediate ? (immediate(fn) as Turn) : setTimeout(fn, 0));
const cancelTurn = (turn: Turn): void => {
  if (!inWorkerd && clearImmediateFn) clearImmediateFn(turn);
  else clearTimeout(turn);
};

export class CallTurns {
  /** Calls waiting for the next turn, in order; `[]` while the last one started went async this turn. */
  private queue: Incoming[] | undefined;
  private timer: Turn | undefined;
  private readonly nextBound = () => this.next();

  constructor(
    /** Starts a call and says whether it went async (is waiting for something). */
    private readonly start: (call: Incoming) => boolean,
    /** Every call that waited here has started. */
    private readonly drained: () => void,
    /**
     * Whether the object's input gate holds (input-gate.ts); `undefined` without a gate: the
     * calls after one that went async then always wait for a later turn.
     */
    private readonly gateBusy?: () => boolean,
  ) {}

  /** Whether the calls after one that just went async must wait for a later turn. */
  private holds(): boolean {
    return this.gateBusy === undefined || this.gateBusy();
  }

  /** Whether no call waits here for its turn. */
  get idle(): boolean {
    return this.queue === undefined || (this.queue.length === 0 && this.timer === undefined);
  }

  /** Starts `call` now, or in a later turn behind the calls that wait. */
  add(call: Incoming): void {
    if (this.queue) {
      this.queue.push(call);
      this.timer ??= nextTurn(this.nextBound);
      return;
    }
    // The calls after it in this frame wait; none may come (`endTurn`).
    if (this.start(call) && this.holds()) this.queue = [];
  }

  /** The frame's calls were all added: a frame that comes later is an event of its own. */
  endTurn(): void {
    if (this.queue?.length === 0 && this.timer === undefined) this.queue = undefined;
  }

  private next(): void {
    // Outside workerd no runtime holds the turn back while the gate is closed: wait it out here.
    if (!inWorkerd && this.gateBusy?.()) {
      this.timer = nextTurn(this.nextBound);
      return;
    }
    this.timer = undefined;
    const queue = this.queue ?? [];
    this.queue = undefined;
    for (let i = 0; i < queue.length; i++) {
      const call = queue[i]!;
      if (call.cancelled) continue;
      if (this.start(call) && i < queue.length - 1 && this.holds()) {
        this.queue = queue.slice(i + 1);
        this.timer = nextTurn(this.nextBound);
        return;
      }
    }
    this.drained();
  }

  /** The connection ended: nothing more starts. */
  clear(): void {
    if (this.timer !== undefined) cancelTurn(this.timer);
    this.timer = undefined;
    this.queue = undefined;
  }
}

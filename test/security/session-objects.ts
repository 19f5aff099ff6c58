/**
 * Objects for sessions.workers.test.ts: Victim (objects.ts) with a topic, and a
 * method that counts how many times it started (to see a call run twice) and holds until freed.
 */
import { Victim } from "./objects.js";

export class SessionVictim extends Victim {
  static rpcOptions = { topics: { chat: {} } };
  /** How many times `hold` started (in memory). */
  runs = 0;
  private holdGate: Promise<void> | undefined;
  private freeHold: (() => void) | undefined;

  /** Counts a run, then waits until `freeHolds()`; answers how many runs there were. */
  hold(): Promise<number> {
    this.runs++;
    this.holdGate ??= new Promise<void>((resolve) => (this.freeHold = resolve));
    return this.holdGate.then(() => this.runs);
  }

  freeHolds(): void {
    this.freeHold?.();
  }
}

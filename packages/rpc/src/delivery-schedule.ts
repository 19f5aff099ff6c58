/**
 * When the delivery record (delivery.ts) writes the rows it keeps in memory — the answers of
 * calls that wrote nothing, and new sessions' rows — if no storage write or size bound writes
 * them first: once the object has answered no recorded call for `quiet` ms (`exactlyOnce.
 * flushAfter`, default 10), or when they have waited `FLUSH_WAIT` (or `quiet`, if longer).
 *
 * Why a quiet moment rather than a fixed period: a SQLite-backed object's output gate holds every
 * message sent while a write commits (workerd has no `allowUnconfirmed` for SQLite), so a write in
 * the middle of a burst of calls holds the replies of the calls that answer during its commit.
 * Writing on a 10 ms period did that to a few percent of the calls of a busy connection and
 * roughly doubled its p99 (docs/performance.md, round nine); waiting for a gap puts the commit
 * where no reply is waiting, and under unbroken traffic it happens at most once per `FLUSH_WAIT`.
 *
 * One timer at most, armed when rows start waiting and looked at again (not re-armed per call)
 * while the object stays busy.
 *
 * Internal module.
 */

/** Under unbroken traffic, waiting rows are written after at most this long (ms; the quiet time if longer). */
const FLUSH_WAIT = 1000;

export class FlushSchedule {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the first of the rows now waiting was kept (ms; the object's clock). */
  private waitingSince = 0;
  /** When a recorded call last answered or a session last said hello (ms). */
  private lastActivity = 0;

  /** `write` runs when the rows are due; it must write them (and so `cancel` this schedule). */
  constructor(
    private readonly quiet: number,
    private readonly write: () => void,
  ) {}

  /** The object answered a recorded call (or a session said hello) at `now`. */
  activity(now: number): void {
    this.lastActivity = now;
  }

  /** Rows wait in memory since `now` (or earlier, if they already did): the timer will write them. */
  waiting(now: number): void {
    if (this.timer !== undefined) return;
    this.waitingSince = now;
    this.timer = setTimeout(() => this.fire(), this.quiet);
  }

  /** The rows were written: nothing waits. */
  cancel(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Writes when the object has been quiet long enough or the rows have waited long enough; else looks again then. */
  private fire(): void {
    this.timer = undefined;
    const now = Date.now();
    const quietIn = this.lastActivity + this.quiet - now;
    const limitIn = this.waitingSince + Math.max(FLUSH_WAIT, this.quiet) - now;
    if (quietIn > 0 && limitIn > 0) {
      this.timer = setTimeout(() => this.fire(), Math.min(quietIn, limitIn));
      return;
    }
    this.write();
  }
}

/**
 * The outgoing side of one connection: envelopes queued in the order they were produced, sent as
 * few frames as that order allows.
 *
 * Invariants:
 *  - Envelopes leave in the order they were added, whatever their kind: a push the object made
 *    before a reply reaches the client before that reply. Consecutive envelopes of one kind share
 *    a frame; a change of kind starts a new one.
 *  - Everything added in one microtask turn leaves together, at the end of the turn (or at once
 *    when `flush` is called, e.g. when an incoming frame has been handled).
 *  - A frame carries the blobs of at most one envelope: each envelope's record table numbers
 *    its blobs from 0, so an envelope's encoded form never has to be rewritten.
 *  - A send that fails (the socket closed under us) is dropped silently: the peer learns of the
 *    loss from the close, which covers every frame.
 *
 * Internal module.
 */
import { writeFrame, type WireFrame } from "./frame.js";

const NO_BLOBS: readonly Uint8Array[] = [];

export class Outbox {
  private kinds: number[] = [];
  private parts: string[] = [];
  private blobs: (readonly Uint8Array[])[] = [];
  private scheduled = false;
  /** > 0 while the caller batches (e.g. runs an incoming frame): it flushes at the end itself. */
  private holds = 0;
  private readonly flushBound = () => this.flush();

  constructor(private readonly send: (frame: WireFrame) => void) {}

  /** True when nothing is waiting to be sent. */
  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** Queues one envelope (its JSON) of frame `kind`. */
  add(kind: number, json: string, blobs: readonly Uint8Array[] = NO_BLOBS): void {
    this.kinds.push(kind);
    this.parts.push(json);
    this.blobs.push(blobs);
    if (!this.scheduled && this.holds === 0) {
      this.scheduled = true;
      queueMicrotask(this.flushBound);
    }
  }

  /** Defers flushing until the matching `release`. */
  hold(): void {
    this.holds++;
  }

  /** Ends a `hold`; the last one flushes what was queued meanwhile. */
  release(): void {
    if (--this.holds === 0) this.flush();
  }

  /** Sends everything queued, as frames cut at changes of kind and at blob-bearing envelopes. */
  flush(): void {
    this.scheduled = false;
    const n = this.parts.length;
    if (n === 0) return;
    const { kinds, parts, blobs } = this;
    this.kinds = [];
    this.parts = [];
    this.blobs = [];
    if (n === 1) {
      // The common case (one call, one reply): no array to join.
      this.sendSafely(writeFrame(kinds[0]!, `[${parts[0]}]`, blobs[0]!));
      return;
    }
    let start = 0;
    let frameBlobs: readonly Uint8Array[] = NO_BLOBS;
    for (let i = 0; i < n; i++) {
      const cut = i > start && (kinds[i] !== kinds[start] || (blobs[i]!.length > 0 && frameBlobs.length > 0));
      if (cut) {
        this.sendSafely(writeFrame(kinds[start]!, `[${parts.slice(start, i).join(",")}]`, frameBlobs));
        start = i;
        frameBlobs = NO_BLOBS;
      }
      if (blobs[i]!.length > 0) frameBlobs = blobs[i]!;
    }
    this.sendSafely(writeFrame(kinds[start]!, `[${parts.slice(start).join(",")}]`, frameBlobs));
  }

  /** Drops everything queued (the connection is gone). */
  clear(): void {
    this.kinds = [];
    this.parts = [];
    this.blobs = [];
  }

  private sendSafely(frame: WireFrame): void {
    try {
      this.send(frame);
    } catch {
      // The socket closed under us: its close event reports the loss.
    }
  }
}

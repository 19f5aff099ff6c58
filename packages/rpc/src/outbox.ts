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
 *  - A frame of several envelopes holds at most about `MAX_SHARED_FRAME` bytes of them.
 *  - A frame carries at most `MAX_ENVELOPES` envelopes, well under the default
 *    `limits.maxPendingCalls` a peer checks a frame against: a topic replay of thousands of
 *    events, or thousands of calls made in one turn, leave as several frames, not one the peer
 *    must refuse.
 *  - A send that fails (the socket closed under us) is dropped silently: the peer learns of the
 *    loss from the close, which covers every frame.
 *  - An envelope whose bytes are not ready (a Blob being read) holds back every envelope after
 *    it until they are: what was queued before it leaves at once, the rest waits in order, and
 *    a frame boundary set by `cut` while they wait is kept when they leave. A whole frame given
 *    to `addFrame` (a stored reply or event) waits in line the same way.
 *  - A frame given to `lead` (a client's Hello) leaves before anything added after it, in the
 *    same WebSocket message as the next frame when that one is text.
 *  - Work given to `afterFlush` runs right after the next flush has handed its frames to the
 *    socket, in the same turn (or when the outbox is cleared): a Durable Object writes a call's
 *    delivery record there, so the output gate does not hold its reply for that write
 *    (see server-callee.ts). `afterAll` runs once after all of them, in the same turn: the
 *    record writes the answers they saved there, together.
 *
 * Internal module.
 */
import { writeFrame, type WireFrame } from "./frame.js";
import { microtask } from "./timers.js";

const NO_BLOBS: readonly Uint8Array[] = [];

/** An envelope waiting behind one whose bytes are being read (see `add`), a whole frame (`addFrame`), or CUT. */
interface Waiting {
  readonly kind: number;
  readonly json: string;
  readonly blobs: readonly Uint8Array[];
  readonly ready: Promise<string | null | undefined> | undefined;
  /** A whole frame to send as it is, in its place (see `addFrame`). */
  readonly frame?: WireFrame;
}

/** A frame boundary in the waiting queue (see `cut`). */
const CUT: Waiting = Object.freeze({ kind: -1, json: "", blobs: NO_BLOBS, ready: undefined });

/** The most envelopes one frame carries (see the invariants). */
export const MAX_ENVELOPES = 256;

/**
 * Envelopes share a frame only up to about this many bytes (one larger than that goes alone):
 * a peer's `maxMessageBytes` then refuses what is too big itself, not small answers that happened
 * to be batched with it (see oversized.ts).
 */
export const MAX_SHARED_FRAME = 64 * 1024;

/**
 * The most a frame can measure at a receiver (text: UTF-16 units; binary: bytes, its JSON as
 * UTF-8, at most three bytes a unit) with `chars` units of envelopes and commas, `blobCount`
 * blobs of `blobBytes` bytes in all.
 */
export function frameSize(chars: number, blobCount: number, blobBytes: number): number {
  // Text: mark, kind and the brackets. Binary: its fixed header, the blob table and padding.
  return blobCount === 0 ? chars + 4 : 3 * (chars + 2) + 12 + 4 * blobCount + 8 + blobBytes;
}

export class Outbox {
  /** Envelopes queued: one is kept in the three fields below; two or more are all in the arrays. */
  private count = 0;
  private firstKind = 0;
  private firstJson = "";
  private firstBlobs: readonly Uint8Array[] = NO_BLOBS;
  /** Set from the second envelope on: most frames carry one, and then no array is made. */
  private kinds: number[] | undefined;
  private parts: string[] | undefined;
  private blobs: (readonly Uint8Array[])[] | undefined;
  /** Envelope counts at which `cut` ended a frame, ascending (reset whenever the queue is sent). */
  private cuts: number[] | undefined;
  private scheduled = false;
  /** Envelopes behind one whose bytes are not ready yet, in order (see `add`). */
  private waiting: Waiting[] | undefined;
  /** About how many bytes `waiting` holds (its JSON and blobs; a Blob not read yet counts 0). */
  private waitingBytes = 0;
  private gate: Promise<void> | undefined;
  /** > 0 while the caller batches (e.g. runs an incoming frame): it flushes at the end itself. */
  private holds = 0;
  /** Work to run once the next flush has sent (see `afterFlush`). */
  private after: (() => void)[] | undefined;
  /** A text frame to send in front of the next frame, in its message when that one is text (see `lead`). */
  private leading: string | undefined;
  /** Runs right after each run of the `afterFlush` work, in the same turn (see the invariants). */
  afterAll: (() => void) | undefined;
  private readonly flushBound = () => this.flush();

  constructor(private readonly send: (frame: WireFrame) => void) {}

  /**
   * Bytes held back behind an envelope whose bytes are being read: they reach the socket all at
   * once when it is ready, so the caller's backpressure counts them as if sent.
   */
  get unsentBytes(): number {
    return this.waiting === undefined ? 0 : this.waitingBytes;
  }

  /** True when nothing is queued or held back: a frame sent directly now keeps the order. */
  get idle(): boolean {
    return this.count === 0 && this.holds === 0 && this.waiting === undefined;
  }

  /**
   * Queues one envelope (its JSON) of frame `kind`. With `ready`, it waits (and so does what comes
   * after it) until `ready` settles: `undefined` sends it as it is, a string sends that instead
   * (e.g. a failure reply), `null` drops it.
   */
  add(kind: number, json: string, blobs: readonly Uint8Array[] = NO_BLOBS, ready?: Promise<string | null | undefined>): void {
    if (ready || this.waiting) {
      (this.waiting ??= []).push({ kind, json, blobs, ready });
      this.waitingBytes += json.length + byteCount(blobs);
      if (!this.gate) {
        this.flush(); // what came before it leaves now
        this.gate = this.releaseWaiting();
      }
      return;
    }
    this.enqueue(kind, json, blobs);
    if (!this.scheduled && this.holds === 0) {
      this.scheduled = true;
      microtask(this.flushBound);
    }
  }

  /**
   * Sends `frame`, already whole (a binary reply or event kept in storage), after everything
   * added before it: at once, once what is queued has left, or in its place behind an envelope
   * whose bytes are still being read.
   */
  addFrame(frame: WireFrame): void {
    if (this.waiting) {
      this.waiting.push({ kind: -2, json: "", blobs: NO_BLOBS, ready: undefined, frame });
      return;
    }
    this.flush();
    this.sendSafely(frame);
  }

  /**
   * Sends the text frame `frame` (a client's Hello) before anything added after it, in the same
   * WebSocket message as the next frame when that one is text: a new connection's Hello and its
   * first calls are one message, so one event on a Durable Object (and one billed message), not
   * two. The receiver reads them apart (`helloEnd`, frame.ts). Alone, at the end of the turn, when
   * nothing follows it in the turn; in a message of its own before a binary frame.
   */
  lead(frame: string): void {
    this.flush(); // what was queued before it leaves first
    this.leading = frame;
    if (!this.scheduled && this.holds === 0) {
      this.scheduled = true;
      microtask(this.flushBound);
    }
  }

  private enqueue(kind: number, json: string, blobs: readonly Uint8Array[]): void {
    if (this.count++ === 0) {
      this.firstKind = kind;
      this.firstJson = json;
      this.firstBlobs = blobs;
      return;
    }
    if (this.count === 2) {
      // A second envelope: from now on all of them are in the arrays, the first included.
      this.kinds = [this.firstKind, kind];
      this.parts = [this.firstJson, json];
      this.blobs = [this.firstBlobs, blobs];
      return;
    }
    this.kinds!.push(kind);
    this.parts!.push(json);
    this.blobs!.push(blobs);
  }

  /**
   * Ends the current frame: nothing added after this shares a frame with what is queued (both
   * still leave when the outbox flushes). Behind an envelope whose bytes are being read, the
   * boundary waits in line and takes effect when it is reached. So the frames a sender cut stay
   * cut, whatever else is queued around them (a call that pipelines on another is only ever put
   * in that call's frame by its sender, caller.ts).
   */
  cut(): void {
    if (this.waiting) this.waiting.push(CUT);
    else if (this.count > 0 && this.cuts?.at(-1) !== this.count) (this.cuts ??= []).push(this.count);
  }

  /** Runs `fn` right after the next flush has sent what is queued (scheduling one if none is). */
  afterFlush(fn: () => void): void {
    (this.after ??= []).push(fn);
    if (!this.scheduled && this.holds === 0) {
      this.scheduled = true;
      microtask(this.flushBound);
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
    if (this.count > 0) this.sendQueued();
    if (this.leading !== undefined) this.sendSafely(""); // nothing followed it: alone
    if (this.after) this.runAfter();
  }

  private sendQueued(): void {
    const n = this.count;
    const { firstKind, firstJson, firstBlobs } = this;
    this.count = 0;
    this.firstJson = "";
    this.firstBlobs = NO_BLOBS;
    if (n === 1) {
      // The common case (one call, one reply): no array at all.
      this.cuts = undefined;
      this.sendSafely(writeFrame(firstKind, `[${firstJson}]`, firstBlobs));
      return;
    }
    const kinds = this.kinds!;
    const parts = this.parts!;
    const blobs = this.blobs!;
    const cuts = this.cuts;
    this.kinds = undefined;
    this.parts = undefined;
    this.blobs = undefined;
    this.cuts = undefined;
    let nextCut = 0;
    let start = 0;
    // What the frame holds so far: its envelopes' JSON (UTF-16 units) and its blobs.
    let chars = 0;
    let blobBytes = 0;
    let frameBlobs: readonly Uint8Array[] = NO_BLOBS;
    for (let i = 0; i < n; i++) {
      const envelopeBlobs = blobs[i]!;
      let bytes = 0;
      for (let b = 0; b < envelopeBlobs.length; b++) bytes += envelopeBlobs[b]!.byteLength;
      const boundary = cuts !== undefined && cuts[nextCut] === i;
      if (boundary) nextCut++;
      const cut =
        i > start &&
        (boundary ||
          kinds[i] !== kinds[start] ||
          i - start === MAX_ENVELOPES ||
          (envelopeBlobs.length > 0 && frameBlobs.length > 0) ||
          frameSize(chars + parts[i]!.length + (i - start), frameBlobs.length + envelopeBlobs.length, blobBytes + bytes) >
            MAX_SHARED_FRAME);
      if (cut) {
        this.sendSafely(writeFrame(kinds[start]!, `[${parts.slice(start, i).join(",")}]`, frameBlobs));
        start = i;
        chars = 0;
        blobBytes = 0;
        frameBlobs = NO_BLOBS;
      }
      chars += parts[i]!.length;
      blobBytes += bytes;
      if (envelopeBlobs.length > 0) frameBlobs = envelopeBlobs;
    }
    this.sendSafely(writeFrame(kinds[start]!, `[${parts.slice(start).join(",")}]`, frameBlobs));
  }

  /**
   * Moves waiting envelopes to the queue as their bytes become ready, then sends them. Ends early,
   * sending nothing more, once `clear` has dropped its queue (a later queue has a loop of its own).
   */
  private async releaseWaiting(): Promise<void> {
    const queue = this.waiting!;
    while (queue.length && this.waiting === queue) {
      const next = queue.shift()!;
      if (next !== CUT) this.waitingBytes = Math.max(0, this.waitingBytes - next.json.length - byteCount(next.blobs));
      if (next === CUT) {
        this.flush();
        continue;
      }
      if (next.frame !== undefined) {
        this.flush();
        this.sendSafely(next.frame);
        continue;
      }
      let json: string | null | undefined = next.json;
      if (next.ready) {
        this.flush();
        const replaced = await next.ready;
        if (replaced !== undefined) json = replaced;
      }
      if (json === null || this.waiting !== queue) continue; // dropped, or the connection is gone
      this.enqueue(next.kind, json, json === next.json ? next.blobs : NO_BLOBS);
    }
    if (this.waiting !== queue) return;
    this.waiting = undefined;
    this.waitingBytes = 0;
    this.gate = undefined;
    if (this.holds === 0) this.flush();
  }

  /** Sends what is queued and resolves once nothing waits any more (Blob reads included). */
  async drain(): Promise<void> {
    this.flush();
    while (this.gate) await this.gate;
  }

  /** Drops everything queued (the connection is gone); work waiting for a flush still runs. */
  clear(): void {
    this.count = 0;
    this.firstJson = "";
    this.firstBlobs = NO_BLOBS;
    this.kinds = undefined;
    this.parts = undefined;
    this.blobs = undefined;
    this.cuts = undefined;
    this.waiting = undefined;
    this.waitingBytes = 0;
    this.gate = undefined;
    this.leading = undefined;
    if (this.after) this.runAfter();
  }

  private runAfter(): void {
    const after = this.after!;
    this.after = undefined;
    try {
      for (const fn of after) fn();
    } finally {
      this.afterAll?.();
    }
  }

  /** Sends `frame` ("": nothing but the leading frame); the leading frame, if any, goes in front of it. */
  private sendSafely(frame: WireFrame): void {
    const leading = this.leading;
    if (leading !== undefined) {
      this.leading = undefined;
      if (typeof frame === "string") frame = leading + frame;
      else this.sendSafely(leading); // before a binary frame, in a message of its own
    }
    if (frame === "") return;
    try {
      this.send(frame);
    } catch {
      // The socket closed under us: its close event reports the loss.
    }
  }
}

function byteCount(blobs: readonly Uint8Array[]): number {
  let bytes = 0;
  for (let i = 0; i < blobs.length; i++) bytes += blobs[i]!.byteLength;
  return bytes;
}

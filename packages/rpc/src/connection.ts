/**
 * One connection, the same on both ends: frames in, routed to the caller half (replies to our
 * calls, read by reply-reader.ts) or the callee half (calls to us); releases and cancels; frames
 * out through one ordered outbox. It never touches a socket: it talks to a `Link` (a WebSocket on
 * a Durable Object, a transport on a client, an in-memory pair in tests).
 *
 * What lives where:
 *  - per connection: the outbox, the callee's running calls, the imports (stubs we hold of the
 *    peer's objects), and on a Durable Object also its exports and its caller (pushes);
 *  - per client session (outliving reconnects): the client's caller (its calls are re-sent after
 *    a reconnect) and its exports (functions it passed; ids stay valid for queued calls).
 *
 * Hibernation: a Durable Object keeps one Connection per socket in memory. After eviction the
 * socket is still open but its Connection is new: stubs and running calls of the old one are
 * gone, and calls on them fail with `REFERENCE_LOST` (docs/protocol.md, "References").
 *
 * Internal module.
 */
import type { Callee } from "./callee.js";
import type { Caller } from "./caller.js";
import { FrameKind, HEARTBEAT_PONG, isWireId, type RawFrame, ReplyStatus } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { helloEnd, type IncomingData, readFrame, type WireFrame } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import { MAX_ENVELOPES, Outbox } from "./outbox.js";
import { refuseOversized, scanOversized } from "./oversized.js";
import { type ExportTable, type ImportEnd, ImportTable } from "./references.js";
import { ReplyReader } from "./reply-reader.js";
import type { ServerCallee } from "./server-callee.js";
import { microtask } from "./timers.js";

/** What a connection needs of the thing carrying its frames. */
export interface Link {
  /** Hands one whole frame to the connection, in order; may throw if it is closed. */
  send(frame: WireFrame): void;
  /** Closes it (the owner hears of it through its own close path). */
  close(code?: number, reason?: string): void;
}

export interface ConnectionConfig {
  readonly limits: Readonly<RpcLimits>;
  /** Identifies the connection to user code (`rpcCaller().socket` on a Durable Object). */
  readonly key: object;
  /** The caller half calls go out through (the session's on a client; made per connection on a server). */
  readonly caller: Caller | ((conn: Connection) => Caller);
  /** What this end hands out by reference (session-wide on a client; per connection on a server). */
  readonly exports: ExportTable;
  /** Makes the callee half (a `Callee` on a client, a `ServerCallee` on a Durable Object). */
  readonly callee: (conn: Connection) => Callee;
  /** Answer heartbeat pings (a server whose runtime does not answer them itself). */
  readonly answerPings: boolean;
  /**
   * A frame could not be read (malformed, too big, a kind this end does not take): the owner
   * closes the link (1009 for a `LIMIT`, 1008 otherwise) and says why.
   */
  onUnreadable(error: RpcError): void;
  /**
   * Why export `id` is not here, when this end can tell more than the default message (a Durable
   * Object evicted since it handed it out, an HTTP batch whose references ended with its request).
   */
  readonly lostExport?: (id: number) => string | undefined;
  /** The client session this connection carries, if known when it is made (after eviction). */
  readonly session?: string;
  /**
   * A client said hello: returns whether its calls can be checked against the delivery record
   * (false: the session expired while the client was away, so its resends are refused). `age`:
   * how many ms ago the session began, by the client's clock, when it said (with resends).
   * `fresh`: the session has sent no call before this connection.
   */
  onHello?(session: string, resending: boolean, age?: number, fresh?: boolean): boolean;
}

export class Connection {
  readonly outbox: Outbox;
  readonly imports: ImportTable;
  readonly callee: Callee;
  readonly caller: Caller;
  readonly exports: ExportTable;
  readonly key: object;
  private ended = false;
  /**
   * Set once a frame of the peer's was refused and the connection is being closed for it: what
   * the peer sent after it (already on its way) is not read — its calls would run on a connection
   * that ends, after a hello that may have been the refused frame.
   */
  private refusing = false;
  /** The client session whose calls arrive here (from its Hello), for the delivery record. */
  session: string | undefined;
  /** Its record expired while it was away: none of its resends can be answered. */
  expiredSession = false;
  /** Reads the replies to our calls (reply-reader.ts). */
  private readonly replies: ReplyReader;
  /** Cancels made this turn, added to the outbox at its end. */
  private cancels: number[] | undefined;
  /** Cancels in the outbox and not sent yet: if the connection ends first, the next one sends them. */
  private unsentCancels: number[] | undefined;
  private releases: [number, number][] | undefined;

  constructor(
    private readonly link: Link,
    private readonly config: ConnectionConfig,
  ) {
    this.key = config.key;
    this.session = config.session;
    this.outbox = new Outbox((frame) => link.send(frame));
    this.exports = config.exports;
    this.imports = new ImportTable(config.limits.maxImports, (id, count) => this.release(id, count), this);
    this.caller = typeof config.caller === "function" ? config.caller(this) : config.caller;
    this.callee = config.callee(this);
    this.replies = new ReplyReader(this, config.limits);
  }

  /**
   * Handles one incoming message. Returns `false` when it is not a dorpc frame (the owner may
   * handle it), `true` otherwise. What the message causes to be sent (replies of synchronous
   * calls) leaves before this returns. `sizeChecked`: the bytes it was made from were checked
   * against `maxMessageBytes` already (an HTTP batch's JSON form, rewritten as a frame).
   */
  receive(data: IncomingData, sizeChecked = false): boolean {
    if (typeof data === "string") {
      // A client's Hello and the frame after it in one message (Outbox.lead): read as two frames,
      // each against the limits as if it had come alone (the Hello is at most HELLO_MAX long).
      // Split once: what follows is one frame, whatever it holds.
      const end = helloEnd(data);
      if (end > 0) {
        this.receiveFrame(data.slice(0, end), sizeChecked);
        return this.receiveFrame(data.slice(end), sizeChecked);
      }
    }
    return this.receiveFrame(data, sizeChecked);
  }

  private receiveFrame(data: IncomingData, sizeChecked: boolean): boolean {
    let frame: RawFrame | undefined;
    try {
      frame = readFrame(data, sizeChecked ? { ...this.config.limits, maxMessageBytes: Number.MAX_SAFE_INTEGER } : this.config.limits);
    } catch (error) {
      if (this.refusing) return true;
      // Too big: refused envelope by envelope, keeping the connection, where that can be done.
      const over = this.ended ? undefined : scanOversized(data, this.config.limits);
      if (!over || !refuseOversized(this, over, this.caller.label)) this.unreadable(error as RpcError);
      return true;
    }
    if (!frame) return false;
    if (this.ended || this.refusing) return true;
    const body = frame.body;
    switch (frame.kind) {
      case FrameKind.Calls:
        this.receiveCalls(body, frame.blobs);
        return true;
      case FrameKind.Replies:
        if (!Array.isArray(body)) return this.protocol("a reply frame's body must be an array of replies.");
        this.replies.receive(body, frame.blobs);
        return true;
      case FrameKind.Release:
        this.receiveReleases(body);
        return true;
      case FrameKind.Cancel:
        if (!Array.isArray(body) || !body.every(isWireId)) return this.protocol("a cancel frame's body must be an array of call ids.");
        this.callee.cancel(body as number[]);
        return true;
      case FrameKind.Hello:
        if (
          !Array.isArray(body) ||
          body.length < 2 ||
          body.length > 3 ||
          typeof body[0] !== "string" ||
          !SESSION_ID.test(body[0]) ||
          (body[1] !== 0 && body[1] !== 1 && body[1] !== 2) ||
          (body.length > 2 && !(Number.isSafeInteger(body[2]) && (body[2] as number) >= 0))
        ) {
          return this.protocol("a hello frame's body must be [sessionId, resending] or [sessionId, resending, age], resending 0, 1 or 2.");
        }
        // One per connection: a session is what the connection's calls are recorded under, and
        // calls already admitted are recorded under the one they came with.
        if (this.session !== undefined) return this.protocol("a connection says hello once.");
        this.session = body[0];
        this.expiredSession = this.config.onHello
          ? !this.config.onHello(body[0], body[1] === 1, body[2] as number | undefined, body[1] === 2)
          : false;
        return true;
      case FrameKind.Ping:
        // Normally answered by the runtime's auto-response without waking the object; this
        // covers sockets accepted without it.
        if (this.config.answerPings) this.trySend(HEARTBEAT_PONG);
        return true;
      case FrameKind.Pong:
        return true;
      default:
        this.refuseKind(frame.kind, body);
        return true;
    }
  }

  private receiveCalls(body: unknown, blobs: readonly Uint8Array[]): void {
    const { limits } = this.config;
    if (!Array.isArray(body)) return void this.protocol("a call frame's body must be an array of calls.");
    // maxPendingCalls counts calls (envelopes with an id): notifications wait for nothing, so a
    // client with a small limit still takes a frame of topic events or pushes, which the object
    // cuts at MAX_ENVELOPES whatever the client's limit. Checked before the envelopes are read.
    if (body.length > Math.max(limits.maxPendingCalls, MAX_ENVELOPES)) {
      return void this.protocol(
        limits.maxPendingCalls >= MAX_ENVELOPES
          ? tooManyCalls(body.length, limits)
          : `frame carries ${body.length} envelopes, more than the ${MAX_ENVELOPES} a frame holds.`,
      );
    }
    // Every envelope must carry a usable id before any call of the frame runs: a frame that
    // cannot be answered call by call is refused whole.
    let calls = 0;
    for (const envelope of body as unknown[]) {
      if (!Array.isArray(envelope) || !isCallIdOrZero(envelope[0])) {
        return void this.protocol("a call must be [id, chain] with a positive integer id (0 for a notification).");
      }
      if (envelope[0] !== 0) calls++;
    }
    if (calls > limits.maxPendingCalls) return void this.protocol(tooManyCalls(calls, limits));
    this.outbox.hold();
    try {
      this.callee.receive(body as unknown[][], blobs);
    } finally {
      this.outbox.release();
    }
  }

  private receiveReleases(body: unknown): void {
    if (!Array.isArray(body)) return void this.protocol("a release frame's body must be an array of [exportId, count].");
    for (const pair of body as unknown[]) {
      if (!Array.isArray(pair) || !isWireId(pair[0]) || !isWireId(pair[1])) {
        return void this.protocol("a release frame's body must be an array of [exportId, count].");
      }
      this.exports.release(pair[0], pair[1]);
    }
  }

  /**
   * A frame of a kind this end does not know. Each envelope whose id can be recovered gets a
   * `PROTOCOL` failure; a frame with none is closed with 1008.
   */
  private refuseKind(kind: number, body: unknown): void {
    const ids = Array.isArray(body) ? body.filter((e): e is [number] => Array.isArray(e) && isWireId(e[0])).map((e) => e[0]) : [];
    if (ids.length === 0) {
      this.unreadable(new RpcError("PROTOCOL", `dorpc: unknown frame kind ${kind}.`));
      return;
    }
    for (const id of ids.slice(0, 1024)) {
      this.outbox.add(
        FrameKind.Replies,
        JSON.stringify([id, ReplyStatus.Failed, "PROTOCOL", `Frame kind ${kind} is not a dorpc frame kind; this envelope was not run.`]),
      );
    }
  }

  private protocol(message: string): true {
    this.unreadable(new RpcError("PROTOCOL", `dorpc: ${message}`));
    return true;
  }

  private unreadable(error: RpcError): void {
    if (this.refusing) return;
    this.refusing = true;
    this.config.onUnreadable(error);
  }

  // ---------------------------------------------------------------------------------------------
  // Outgoing control frames (batched per turn with everything else)
  // ---------------------------------------------------------------------------------------------

  /** Tells the peer we no longer wait for call `id`. */
  cancel(id: number): void {
    if (this.ended) return;
    if (!this.cancels) {
      this.cancels = [];
      microtask(() => {
        const ids = this.cancels!;
        this.cancels = undefined;
        if (this.ended) return;
        this.outbox.add(FrameKind.Cancel, ids.join(","));
        if (!this.unsentCancels) this.outbox.afterFlush(() => (this.unsentCancels = undefined));
        (this.unsentCancels ??= []).push(...ids);
      });
    }
    this.cancels.push(id);
  }

  /** Gives back `count` references to the peer's export `id`. */
  private release(id: number, count: number): void {
    if (this.ended) return;
    if (!this.releases) {
      this.releases = [];
      microtask(() => this.flushReleases());
    }
    this.releases.push([id, count]);
  }

  /**
   * Queues the releases waiting for the end of the turn now: before a reply, so that the peer
   * has them when the reply lets its caller go on (and pass references again, up to its limit).
   */
  flushReleases(): void {
    const pairs = this.releases;
    if (!pairs) return;
    this.releases = undefined;
    if (!this.ended) this.outbox.add(FrameKind.Release, pairs.map(([i, n]) => `[${i},${n}]`).join(","));
  }

  /**
   * Releases, now, everything this end holds of the peer (an HTTP batch is answered: what the
   * object kept of the client ends with the request), after anything queued before.
   */
  releaseImports(why: ImportEnd): void {
    const pairs = this.imports.drain(why);
    if (pairs.length) this.outbox.add(FrameKind.Release, pairs.map(([i, n]) => `[${i},${n}]`).join(","));
    this.outbox.flush();
  }

  /** The error for a call on export `id` that this connection does not (or no longer) hold. */
  lostExport(id: number): RpcError {
    return new RpcError(
      "REFERENCE_LOST",
      this.config.lostExport?.(id) ??
        `No reference ${id} on this connection: it was released, never handed out, or lost when the object was evicted.`,
    );
  }

  /** Sends a heartbeat answer now, past the outbox (whole stored frames go through `Outbox.addFrame`). */
  private trySend(frame: WireFrame): void {
    try {
      this.link.send(frame);
    } catch {
      // Closed under us: the close reports it.
    }
  }

  /** Resolves once every call received here has answered and the answers have been sent (an HTTP batch). */
  async whenIdle(this: ServerConnection): Promise<void> {
    await this.callee.whenIdle();
    await this.outbox.drain();
  }

  /** Closes the link. The owner calls `end` when the close is reported. */
  close(code?: number, reason?: string): void {
    this.link.close(code, reason);
  }

  /**
   * The connection ended (whatever the cause). Imports die (calls on their stubs fail with
   * `why`), running calls are cancelled, queued output is dropped — but cancels not sent yet go
   * to the caller for its next connection (the peer may still be running those calls for their
   * resend). The caller half and exports are the owner's to settle (a client session keeps its
   * calls for the next connection). `peerMayReturn`: it was cut, not closed by the peer;
   * `peerDone`: the peer closed it for good (disposed, its page left), so nothing of its session
   * runs on for it (see `Callee.close`); `sessionEnded`: it said its session is over (disposed).
   */
  end(why: ImportEnd, peerMayReturn = false, peerDone = false, sessionEnded = false): void {
    if (this.ended) return;
    this.ended = true;
    const unsent = [...(this.cancels ?? []), ...(this.unsentCancels ?? [])];
    this.cancels = this.unsentCancels = undefined;
    if (unsent.length > 0) this.caller.cancelOnNext(unsent);
    this.outbox.clear();
    this.imports.lost(why);
    this.callee.close(peerMayReturn, peerDone, sessionEnded);
  }
}

/** A Durable Object's connection (dispatcher.ts): its callee is a `ServerCallee`. */
export type ServerConnection = Connection & { readonly callee: ServerCallee };

/** A client session id: 16–64 characters of base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{16,64}$/;

function tooManyCalls(count: number, limits: RpcLimits): string {
  return `frame carries ${count} calls, more than limits.maxPendingCalls (${limits.maxPendingCalls}).`;
}

function isCallIdOrZero(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

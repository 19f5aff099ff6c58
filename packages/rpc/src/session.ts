/**
 * The client side of one logical connection: ids, pending calls, batching, timeouts, replies,
 * reconnection and heartbeats. It speaks to the network only through an `RpcTransport`
 * (transport.ts).
 *
 * Invariants:
 *  - Every call settles exactly once: by its reply, its timeout, its abort signal, the
 *    connection closing (`DISCONNECTED`) or disposal (`DISPOSED`), whichever comes first. A reply
 *    that arrives after that is ignored.
 *  - A call is either *queued* (not yet handed to a transport) or *sent*. Queued calls wait for
 *    an open connection, in order, and are sent exactly once. Sent calls that lose their
 *    connection are rejected with `DISCONNECTED` and never replayed — the Durable Object may
 *    already have run them — unless the caller marked them `idempotent`, in which case they are
 *    queued again (at most `retries` times).
 *  - Calls queued in the same microtask leave in one frame, in the order they were made. A frame
 *    carries at most one call with binary blobs (blob indexes are per call), so a call's encoded
 *    form never has to be rewritten.
 *  - Arguments are encoded when the call is queued (when the chain is awaited), so later
 *    mutation of an argument does not change what is sent.
 *  - `queued + sent ≤ limits.maxPendingCalls`: memory stays bounded however fast calls are made.
 *
 * Internal module.
 */
import { decodeContext, type EncodeContext, fromRecords, readValue, resolveBlobs, writeArgs } from "./codec.js";
import { type ChainStep, CloseCode, FrameKind, HEARTBEAT_PING, type RawFrame, ReplyStatus } from "./envelopes.js";
import { isRpcErrorCode, RpcError } from "./errors.js";
import { readFrame, writeFrame, type IncomingData } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

/** One link of an operation chain as the proxy builds it: a property read or a call. */
export interface ChainNode {
  readonly parent: ChainNode | undefined;
  /** Property name for a read; `undefined` for a call. */
  readonly key: string | undefined;
  /** Arguments for a call. */
  readonly args: readonly unknown[] | undefined;
}

/** Reconnection after an unexpected close: capped, jittered exponential backoff. */
export interface ReconnectOptions {
  /** First delay in ms. Default 250. */
  initialDelay?: number;
  /** Largest delay in ms. Default 10,000. */
  maxDelay?: number;
  /** Growth per failed attempt. Default 2. */
  factor?: number;
  /** Random share of each delay, 0–1 (0.5: delay × [0.5, 1]). Default 0.5. */
  jitter?: number;
  /** A connection open this long (ms) resets the backoff. Default 5,000. */
  resetAfter?: number;
}

/** Dead-peer detection that never wakes a hibernating Durable Object. */
export interface HeartbeatOptions {
  /** Ping after this many ms without traffic. Default 30,000. */
  interval?: number;
  /** Declare the connection dead when no answer arrives within this many ms. Default 10,000. */
  timeout?: number;
}

/** Connection states, observable through `rpcConnection(client)`. */
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "disposed";

export interface SessionOptions {
  transport: TransportFactory;
  /** Default per-call timeout in ms; 0 disables. */
  timeout: number;
  limits: Readonly<RpcLimits>;
  /** Describes the endpoint in error messages. */
  label: string;
  reconnect: Required<ReconnectOptions> | false;
  heartbeat: Required<HeartbeatOptions> | false;
  /** Hold flushing while the transport has more than this many bytes buffered. */
  highWaterMark: number;
  /** Give up on a connection attempt that has neither opened nor failed after this many ms. */
  connectTimeout: number;
}

/** Per-call options; see `withCallOptions`. */
export interface CallOptions {
  /** Timeout in ms for this call; 0 disables. */
  timeout?: number;
  /** Abort the call: it rejects with the signal's reason and its reply is ignored. */
  signal?: AbortSignal;
  /**
   * The call may safely run twice: if its connection drops before the reply, send it again on
   * the next connection instead of rejecting with `DISCONNECTED`.
   */
  idempotent?: boolean;
  /** How many times an idempotent call may be re-sent. Default 3. */
  retries?: number;
}

interface Pending {
  readonly id: number;
  /** The call envelope, `[id, chain]`, as JSON. */
  readonly json: string;
  /** Blobs its records refer to (indexes start at 0 for each call). */
  readonly blobs: Uint8Array[];
  resolve(value: unknown): void;
  reject(reason: unknown): void;
  /** When the call times out (ms since epoch), or 0 for never. */
  deadline: number;
  /** The timeout it was given, for the error message. */
  timeout: number;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** Re-sends left for an idempotent call; 0 otherwise. */
  retries: number;
  sent: boolean;
  /** Set while the bytes of Blobs in its arguments are being read: it, and the calls after it, wait. */
  ready: Promise<void> | undefined;
}

const clear = (timer: ReturnType<typeof setTimeout> | undefined) => {
  if (timer !== undefined) clearTimeout(timer);
};

const unref = (timer: ReturnType<typeof setTimeout>) => {
  (timer as { unref?: () => void }).unref?.();
  return timer;
};

export class ClientSession implements TransportHandler {
  private _state: ConnectionState = "idle";
  private transport: RpcTransport | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Calls not yet handed to a transport, in order. */
  private queue: Pending[] = [];
  private flushScheduled = false;
  private readonly flushBound = () => this.flush();
  private readonly listeners = new Set<(state: ConnectionState) => void>();
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private stableTimer: ReturnType<typeof setTimeout> | undefined;
  private heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the last message arrived: the only proof the peer is alive. */
  private lastReceived = 0;
  /** When the outstanding ping was sent, or 0. */
  private pingSentAt = 0;
  /** Why the last connection ended, for `DISCONNECTED` messages. */
  private lastClose: { code: number; reason: string } | undefined;
  /** Why this client closed the connection itself, when it refused a reply frame. */
  private refusedReply: RpcError | undefined;
  /** Set once a connection has opened: from then on a lost connection is re-established. */
  private everOpened = false;

  constructor(private readonly options: SessionOptions) {}

  get state(): ConnectionState {
    return this._state;
  }

  get disposed(): boolean {
    return this._state === "disposed";
  }

  /** Calls queued or waiting for a reply. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Subscribes to state changes; returns the unsubscribe function. */
  onStateChange(listener: (state: ConnectionState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves when the connection is open (connecting if idle); rejects if disposed first. */
  waitForOpen(): Promise<void> {
    if (this._state === "open") return Promise.resolve();
    if (this._state === "disposed") return Promise.reject(this.disposedError());
    if (this._state === "idle") this.connect();
    return new Promise((resolve, reject) => {
      const off = this.onStateChange((state) => {
        if (state === "open") {
          off();
          resolve();
        } else if (state === "disposed") {
          off();
          reject(this.disposedError());
        }
      });
    });
  }

  private setState(state: ConnectionState): void {
    if (this._state === state) return;
    this._state = state;
    for (const listener of [...this.listeners]) {
      try {
        listener(state);
      } catch {
        // A listener's failure is its own; the session goes on.
      }
    }
  }

  private disposedError(): RpcError {
    return new RpcError("DISPOSED", `The client for ${this.options.label} was disposed; create a new one to make calls.`);
  }

  /** Sends the chain ending at `node`; settles through `resolve`/`reject` exactly once. */
  call(node: ChainNode, resolve: (value: unknown) => void, reject: (reason: unknown) => void, callOptions?: CallOptions): void {
    if (this._state === "disposed") {
      reject(this.disposedError());
      return;
    }
    const signal = callOptions?.signal;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const { limits } = this.options;
    if (this.pending.size >= limits.maxPendingCalls) {
      reject(
        new RpcError(
          "LIMIT",
          `${this.pending.size} calls are already queued or waiting for a reply on ${this.options.label} (limits.maxPendingCalls).`,
        ),
      );
      return;
    }

    const id = this.nextId++;
    const ctx: EncodeContext = { blobs: [], stack: true, label: "arguments", maxDepth: limits.maxDepth };
    const blobs = ctx.blobs;
    let json: string;
    try {
      json = JSON.stringify([id, this.encodeChain(node, ctx)]);
    } catch (error) {
      reject(error instanceof RpcError ? error : new RpcError("ENCODE", `Cannot encode the call: ${String(error)}`, { cause: error }));
      return;
    }

    const entry: Pending = {
      id,
      json,
      blobs,
      resolve,
      reject,
      deadline: 0,
      timeout: 0,
      signal,
      onAbort: undefined,
      retries: callOptions?.idempotent ? (callOptions.retries ?? 3) : 0,
      sent: false,
      ready: undefined,
    };
    if (ctx.pending?.length) {
      entry.ready = resolveBlobs(blobs, ctx.pending).then(
        () => void (entry.ready = undefined),
        (error: unknown) => {
          entry.ready = undefined;
          this.settle(id)?.reject(error);
        },
      );
    }
    const timeout = callOptions?.timeout ?? this.options.timeout;
    if (timeout > 0) {
      entry.timeout = timeout;
      entry.deadline = Date.now() + timeout;
      this.armDeadlines(entry.deadline);
    }
    if (signal) {
      entry.onAbort = () => this.settle(id)?.reject(signal.reason);
      signal.addEventListener("abort", entry.onAbort, { once: true });
    }
    this.pending.set(id, entry);
    this.enqueue(entry);
    if (this._state === "idle") this.connect();
  }

  private enqueue(entry: Pending): void {
    // Calls settled while queued (timeout, abort) are skipped at flush; compact now and then so
    // a long reconnection with timing-out calls cannot grow the queue without bound.
    if (this.queue.length >= this.options.limits.maxPendingCalls) this.queue = this.queue.filter((e) => this.pending.get(e.id) === e);
    this.queue.push(entry);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(this.flushBound);
    }
  }

  private encodeChain(node: ChainNode, ctx: EncodeContext): ChainStep[] {
    let length = 0;
    for (let n: ChainNode | undefined = node; n; n = n.parent) length++;
    if (length > this.options.limits.maxChainLength) {
      throw new RpcError(
        "ENCODE",
        `The chain has ${length} steps, more than limits.maxChainLength (${this.options.limits.maxChainLength}).`,
      );
    }
    const steps: ChainStep[] = new Array(length);
    for (let n: ChainNode | undefined = node; n; n = n.parent) {
      const args = n.args;
      if (args === undefined) steps[--length] = n.key!;
      else steps[--length] = writeArgs(args, ctx);
    }
    return steps;
  }

  private connect(): void {
    if (this._state === "disposed") return;
    this.setState(this.attempt === 0 ? "connecting" : "reconnecting");
    const transport = this.options.transport(this);
    this.transport = transport;
    // An attempt can hang (a proxy that accepted the TCP connection and never answers): bound it,
    // so the attempt fails into the normal close → backoff → retry path.
    const giveUp = setTimeout(() => {
      if (this.transport === transport && this._state !== "open") {
        transport.close(CloseCode.ConnectTimeout, "dorpc: connect timed out");
      }
    }, this.options.connectTimeout);
    transport.open().then(
      () => {
        clear(giveUp);
        if (this.transport !== transport || this._state === "disposed") return;
        this.lastReceived = Date.now();
        this.everOpened = true;
        this.setState("open");
        this.armStable();
        this.armHeartbeat();
        this.flush();
      },
      () => {
        clear(giveUp);
        // The transport reported the failure through onClose (its contract).
      },
    );
  }

  /** Sends every queued call that is still pending, in order. */
  private flush(): void {
    this.flushScheduled = false;
    if (this._state !== "open" || this.queue.length === 0) return;
    const transport = this.transport!;
    if ((transport.bufferedAmount ?? 0) > this.options.highWaterMark) {
      // Backpressure: keep calls queued (bounded by maxPendingCalls) until the socket drains.
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setTimeout(this.flushBound, 5);
      }
      return;
    }
    const queue = this.queue;
    this.queue = [];
    let parts: string[] = [];
    let blobs: Uint8Array[] = [];
    const send = () => {
      if (parts.length === 0) return;
      const body = parts.length === 1 ? `[${parts[0]}]` : `[${parts.join(",")}]`;
      transport.send(writeFrame(FrameKind.Calls, body, blobs));
      parts = [];
      blobs = [];
    };
    for (let i = 0; i < queue.length; i++) {
      const entry = queue[i]!;
      if (this.pending.get(entry.id) !== entry) continue; // settled while queued
      if (entry.ready) {
        // Its Blobs are still being read: it and every call after it wait, so calls keep their order.
        this.queue = queue.slice(i).concat(this.queue);
        entry.ready.then(this.flushBound);
        break;
      }
      if (entry.blobs.length > 0) {
        if (blobs.length > 0) send();
        blobs = entry.blobs;
      }
      entry.sent = true;
      parts.push(entry.json);
    }
    send();
  }

  /**
   * One timer for all call timeouts, armed for the earliest deadline: a timer per call cost
   * about a third of the client's own CPU per call. When it fires it rejects every call whose
   * deadline passed and re-arms for the next one.
   */
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineAt = Infinity;

  private armDeadlines(deadline: number): void {
    if (deadline >= this.deadlineAt) return;
    clear(this.deadlineTimer);
    this.deadlineAt = deadline;
    // Unref'd: the socket keeps a process alive while calls wait; this timer must not keep it
    // alive once they are done.
    this.deadlineTimer = unref(setTimeout(() => this.expire(), Math.max(0, deadline - Date.now())));
  }

  private expire(): void {
    this.deadlineTimer = undefined;
    this.deadlineAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const entry of [...this.pending.values()]) {
      if (entry.deadline === 0) continue;
      if (entry.deadline <= now) {
        this.settle(entry.id)?.reject(new RpcError("TIMEOUT", `No reply from ${this.options.label} within ${entry.timeout} ms.`));
      } else if (entry.deadline < next) {
        next = entry.deadline;
      }
    }
    if (next !== Infinity) this.armDeadlines(next);
  }

  /** Removes and returns the pending entry for `id`, clearing its abort listener. */
  private settle(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    if (this.pending.size === 0 && this.deadlineTimer !== undefined) {
      clear(this.deadlineTimer);
      this.deadlineTimer = undefined;
      this.deadlineAt = Infinity;
    }
    if (entry.onAbort) entry.signal!.removeEventListener("abort", entry.onAbort);
    return entry;
  }

  onMessage(data: IncomingData): void {
    this.lastReceived = Date.now();
    this.pingSentAt = 0;
    let frame: RawFrame | undefined;
    try {
      frame = readFrame(data, this.options.limits);
      if (frame && frame.kind === FrameKind.Pong) return;
      if (frame && frame.kind !== FrameKind.Replies) throw new RpcError("PROTOCOL", "Server sent a frame that is not a reply frame.");
      if (frame && !Array.isArray(frame.body)) throw new RpcError("PROTOCOL", "Reply frame body is not an array.");
    } catch (error) {
      // The server sent something unreadable: this connection cannot be trusted any more.
      const e = error as RpcError;
      this.refusedReply = e;
      this.transport?.close(e.code === "LIMIT" ? CloseCode.MessageTooBig : CloseCode.PolicyViolation, e.message.slice(0, 120));
      return;
    }
    if (!frame) return; // not a dorpc frame: the Durable Object's own traffic
    const ctx = decodeContext(frame.blobs, this.options.limits);
    for (const reply of frame.body as unknown[]) {
      if (!Array.isArray(reply) || typeof reply[0] !== "number") continue;
      const entry = this.settle(reply[0]);
      if (!entry) continue; // timed out, aborted, or never ours
      try {
        switch (reply.length === 1 ? -1 : reply[1]) {
          case -1:
            entry.resolve(undefined);
            break;
          case ReplyStatus.OkJson:
          case ReplyStatus.OkRecords:
          case ReplyStatus.OkBytes:
            entry.resolve(readValue(reply[1], reply[2], ctx));
            break;
          case ReplyStatus.Threw:
            entry.reject(fromRecords(reply[2], ctx));
            break;
          case ReplyStatus.Failed: {
            const code = isRpcErrorCode(reply[2]) ? reply[2] : "INTERNAL";
            const message = typeof reply[3] === "string" ? reply[3] : "The server failed without a message.";
            entry.reject(new RpcError(code, message, reply.length > 4 ? { cause: fromRecords(reply[4], ctx) } : undefined));
            break;
          }
          default:
            entry.reject(new RpcError("PROTOCOL", `Reply with unknown status ${String(reply[1])}.`));
        }
      } catch (error) {
        entry.reject(error);
      }
    }
  }

  onClose(code: number, reason: string): void {
    this.transport = undefined;
    this.lastClose = { code, reason };
    this.clearTimers();
    if (this._state === "disposed") return;
    const refused = this.refusedReply;
    this.refusedReply = undefined;
    const error = new RpcError(
      "DISCONNECTED",
      refused
        ? `The client closed its connection to ${this.options.label} because it refused a reply frame (${refused.code}: ${refused.message})`
        : disconnectMessage(this.options.label, code, reason),
      refused ? { cause: refused } : undefined,
    );
    // Sent calls: reject (or re-queue if idempotent). Queued calls stay queued for the next connection.
    const requeue: Pending[] = [];
    for (const entry of [...this.pending.values()]) {
      if (!entry.sent) continue;
      if (entry.retries > 0) {
        entry.retries--;
        entry.sent = false;
        requeue.push(entry);
      } else {
        this.settle(entry.id)!.reject(error);
      }
    }
    this.queue = [...requeue, ...this.queue];
    if (this.options.reconnect === false || !this.everOpened) {
      // Nothing to resume (the first connection never opened, or reconnection is off): queued
      // calls fail now rather than wait for their timeouts; the next call connects again.
      for (const entry of this.queue) this.settle(entry.id)?.reject(error);
      this.queue = [];
      this.attempt = 0;
      this.setState("idle");
      return;
    }
    this.attempt++;
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const r = this.options.reconnect as Required<ReconnectOptions>;
    const base = Math.min(r.maxDelay, r.initialDelay * r.factor ** Math.max(0, this.attempt - 1));
    const delay = base * (1 - r.jitter * Math.random());
    this.setState("reconnecting");
    this.reconnectTimer = unref(
      setTimeout(() => {
        this.reconnectTimer = undefined;
        if (this._state === "reconnecting") this.connect();
      }, delay),
    );
    if (this.pending.size > 0) {
      // Keep the process alive while calls wait for the connection.
      (this.reconnectTimer as { ref?: () => void }).ref?.();
    }
  }

  /** A connection that stays open for `resetAfter` ms resets the backoff. */
  private armStable(): void {
    if (this.options.reconnect === false) {
      this.attempt = 0;
      return;
    }
    clear(this.stableTimer);
    this.stableTimer = unref(setTimeout(() => (this.attempt = 0), this.options.reconnect.resetAfter));
  }

  /**
   * Pings when nothing has arrived for `interval` ms and closes (code 4000, then reconnects)
   * when nothing arrives within `timeout` ms of the ping. Only *received* traffic counts: a
   * client that keeps sending into a half-open connection still detects it.
   */
  private armHeartbeat(): void {
    const hb = this.options.heartbeat;
    if (hb === false) return;
    clear(this.heartbeatTimer);
    const tick = () => {
      if (this._state !== "open" || !this.transport) return;
      const now = Date.now();
      if (this.pingSentAt) {
        const waited = now - this.pingSentAt;
        if (waited >= hb.timeout) {
          this.transport.close(CloseCode.HeartbeatTimeout, "dorpc: no answer to heartbeat");
          return;
        }
        this.heartbeatTimer = unref(setTimeout(tick, hb.timeout - waited));
        return;
      }
      const quiet = now - this.lastReceived;
      if (quiet >= hb.interval) {
        this.pingSentAt = now;
        this.transport.send(HEARTBEAT_PING);
        this.heartbeatTimer = unref(setTimeout(tick, hb.timeout));
        return;
      }
      this.heartbeatTimer = unref(setTimeout(tick, hb.interval - quiet));
    };
    this.heartbeatTimer = unref(setTimeout(tick, hb.interval));
  }

  private clearTimers(): void {
    clear(this.heartbeatTimer);
    clear(this.stableTimer);
    this.heartbeatTimer = undefined;
    this.stableTimer = undefined;
    this.pingSentAt = 0;
  }

  /** Closes the connection and rejects every waiting call with `DISPOSED`. Idempotent. */
  dispose(): void {
    if (this._state === "disposed") return;
    clear(this.reconnectTimer);
    clear(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.deadlineAt = Infinity;
    this.clearTimers();
    this.setState("disposed");
    const error = new RpcError("DISPOSED", `The client for ${this.options.label} was disposed while the call was waiting.`);
    for (const id of [...this.pending.keys()]) this.settle(id)!.reject(error);
    this.queue = [];
    const transport = this.transport;
    this.transport = undefined;
    transport?.close(CloseCode.Normal, "client disposed");
    this.listeners.clear();
  }

  /** Why the last connection closed, if one has. */
  get lastCloseInfo(): { code: number; reason: string } | undefined {
    return this.lastClose;
  }
}

/** Close codes by meaning, for the message of `DISCONNECTED` errors. */
function disconnectMessage(label: string, code: number, reason: string): string {
  const why = reason ? `: ${reason}` : "";
  switch (code) {
    case CloseCode.Normal:
      return `The connection to ${label} was closed normally (1000${why}) before the reply arrived.`;
    case CloseCode.GoingAway:
      return `The Durable Object behind ${label} went away (1001${why}), e.g. it was reset or redeployed, before the reply arrived.`;
    case CloseCode.PolicyViolation:
      return `${label} closed the connection because it refused a frame (1008${why}).`;
    case CloseCode.MessageTooBig:
      return `${label} closed the connection because a frame was too big (1009${why}); raise limits.maxMessageBytes on the server or send less.`;
    case CloseCode.HeartbeatTimeout:
      return `The connection to ${label} stopped answering heartbeats and was closed before the reply arrived.`;
    case CloseCode.ConnectTimeout:
      return `The connection to ${label} did not open within the connect timeout.`;
    default:
      return `The connection to ${label} closed (code ${code}${why}) before the reply arrived.`;
  }
}

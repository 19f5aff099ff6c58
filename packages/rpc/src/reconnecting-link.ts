/**
 * A client's link to its endpoint across connections (not a connection's own `Link`, see
 * connection.ts): its state (observable through `rpcConnection(client)`) and who listens to it,
 * the heartbeat that detects a dead peer while a connection is open, and the backoff between
 * attempts after an unexpected close. The session builds on it: what a close means for its calls,
 * and disposing of it, in session-closes.ts; opening each connection (`connect`) in session.ts.
 *
 * Invariants:
 *  - Listeners hear each change of state once, in order; a listener's failure is its own.
 *  - Only *received* traffic proves the peer alive (`lastReceived`, set by the session): a client
 *    that keeps sending into a half-open connection still detects it. The ping never wakes a
 *    hibernating object (its runtime answers it).
 *  - Failed attempts wait longer each time (capped, jittered); a connection that stays open
 *    `resetAfter` ms starts the count again. Timers are unref'd, except the reconnect timer while
 *    calls wait (it keeps a Node process alive for them).
 *
 * Internal module.
 */
import { CloseCode, HEARTBEAT_PING } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { clear, monotonic, unref } from "./timers.js";
import type { RpcTransport } from "./transport.js";

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

/** What the link needs of the session's options. */
export interface ReconnectingLinkOptions {
  /** Describes the endpoint in error messages. */
  label: string;
  reconnect: Required<ReconnectOptions> | false;
  heartbeat: Required<HeartbeatOptions> | false;
}

export abstract class ReconnectingLink {
  protected _state: ConnectionState = "idle";
  protected transport: RpcTransport | undefined;
  /** One entry per `onStateChange` call: the same function subscribed twice is two subscriptions. */
  protected readonly listeners = new Set<{ readonly fn: (state: ConnectionState) => void }>();
  /** Failed attempts since the last connection that stayed open (0: the first attempt). */
  protected attempt = 0;
  protected reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the pending reconnect is due (on the `monotonic` clock). */
  protected reconnectAt = 0;
  private stableTimer: ReturnType<typeof setTimeout> | undefined;
  private heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the last message arrived (`monotonic`): the only proof the peer is alive. */
  protected lastReceived = 0;
  /** When the outstanding ping was sent (`monotonic`), if one is. */
  protected pingSentAt: number | undefined = undefined;
  /** States changed while listeners were being told of an earlier one: told next, in order. */
  private readonly told: ConnectionState[] = [];
  private telling = false;
  /** `waitForOpen` calls waiting (the session diagnoses a failed first connection for them). */
  protected openWaiters = 0;
  /** Why the first connection failed, once known: what `waitForOpen` rejects with then. */
  protected connectFailure: Promise<RpcError> | undefined;

  constructor(protected readonly options: ReconnectingLinkOptions) {}

  /** Opens a connection on a new transport (state `connecting`, or `reconnecting` after a close). */
  protected abstract connect(): void;

  /** Calls queued or waiting for a reply. */
  abstract get pendingCount(): number;

  get state(): ConnectionState {
    return this._state;
  }

  get disposed(): boolean {
    return this._state === "disposed";
  }

  /** Subscribes to state changes; returns the unsubscribe function. */
  onStateChange(listener: (state: ConnectionState) => void): () => void {
    if (typeof listener !== "function") {
      throw new RpcError("BAD_OPTION", `onStateChange needs a function, got ${listener === null ? "null" : typeof listener}.`);
    }
    const entry = { fn: listener };
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  /**
   * Resolves when the connection is open (connecting if idle); rejects if disposed first, or with
   * `CONNECT_FAILED` when the first connection fails (the client goes back to idle).
   */
  waitForOpen(): Promise<void> {
    if (this._state === "open") return Promise.resolve();
    if (this._state === "disposed") return Promise.reject(this.disposedError());
    return new Promise((resolve, reject) => {
      this.openWaiters++;
      const off = this.onStateChange((state) => {
        if (state !== "open" && state !== "disposed" && state !== "idle") return;
        off();
        this.openWaiters--;
        if (state === "open") resolve();
        else if (state === "disposed") reject(this.disposedError());
        else if (this.connectFailure) this.connectFailure.then(reject);
        else reject(new RpcError("CONNECT_FAILED", `The connection to ${this.options.label} did not open.`));
      });
      if (this._state === "idle") this.connect();
      else if (this._state === "reconnecting") this.keepAliveForCalls();
    });
  }

  /** Tells every listener of each change of state once, in order, also of changes a listener makes. */
  protected setState(state: ConnectionState): void {
    if (this._state === state) return;
    this._state = state;
    this.told.push(state);
    if (this.telling) return;
    this.telling = true;
    try {
      while (this.told.length > 0) {
        const next = this.told.shift()!;
        for (const listener of [...this.listeners]) {
          if (!this.listeners.has(listener)) continue; // removed by an earlier listener: not told
          try {
            listener.fn(next);
          } catch {
            // A listener's failure is its own; the session goes on.
          }
        }
      }
    } finally {
      this.telling = false;
    }
    if (this._state === "disposed") this.listeners.clear(); // told of it: nothing follows
  }

  /** Set when the client disposed itself: why (every later call says so). */
  protected disposedBecause: string | undefined;

  protected disposedError(): RpcError {
    return new RpcError(
      "DISPOSED",
      this.disposedBecause ?? `The client for ${this.options.label} was disposed; create a new one to make calls.`,
    );
  }

  protected scheduleReconnect(): void {
    const r = this.options.reconnect as Required<ReconnectOptions>;
    const base = Math.min(r.maxDelay, r.initialDelay * r.factor ** Math.max(0, this.attempt - 1));
    const delay = base * (1 - r.jitter * Math.random());
    this.setState("reconnecting");
    // A listener may have disposed of the client (or connected it) while told.
    if (this._state !== "reconnecting") return;
    this.reconnectAt = monotonic() + delay;
    this.reconnectTimer = unref(setTimeout(() => this.reconnectDue(), delay));
    if (this.waitedFor()) this.keepAliveForCalls();
  }

  /** The backoff is over: connect again, unless something changed meanwhile. */
  protected reconnectDue(): void {
    this.reconnectTimer = undefined;
    if (this._state === "reconnecting") this.connect();
  }

  /**
   * Whether something waits for the next connection — calls, `waitForOpen()` (and, on a client,
   * subscriptions and an `expose`d object): a pending reconnect then keeps a Node process alive.
   */
  protected waitedFor(): boolean {
    return this.pendingCount > 0 || this.openWaiters > 0;
  }

  /** Something waits for the connection: a pending reconnect keeps a Node process alive for it. */
  protected keepAliveForCalls(): void {
    (this.reconnectTimer as { ref?: () => void } | undefined)?.ref?.();
  }

  /** A connection that stays open for `resetAfter` ms resets the backoff (0: as it opens). */
  protected armStable(): void {
    if (this.options.reconnect === false || this.options.reconnect.resetAfter === 0) {
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
  protected armHeartbeat(): void {
    const hb = this.options.heartbeat;
    if (hb === false) return;
    clear(this.heartbeatTimer);
    const tick = () => {
      if (this._state !== "open" || !this.transport) return;
      const now = monotonic();
      if (this.pingSentAt !== undefined) {
        const waited = now - this.pingSentAt;
        if (waited >= hb.timeout) {
          this.transport.close(CloseCode.HeartbeatTimeout, "dorpc: no answer to heartbeat");
          return;
        }
        // Looked at again within `interval` too: once the answer is in, the next ping is due
        // `interval` after it, not when a longer `timeout` would have run out.
        this.heartbeatTimer = unref(setTimeout(tick, Math.min(hb.timeout - waited, hb.interval)));
        return;
      }
      const quiet = now - this.lastReceived;
      if (quiet >= hb.interval) {
        this.pingSentAt = now;
        this.transport.send(HEARTBEAT_PING);
        this.heartbeatTimer = unref(setTimeout(tick, Math.min(hb.timeout, hb.interval)));
        return;
      }
      this.heartbeatTimer = unref(setTimeout(tick, hb.interval - quiet));
    };
    this.heartbeatTimer = unref(setTimeout(tick, hb.interval));
  }

  protected clearTimers(): void {
    clear(this.heartbeatTimer);
    clear(this.stableTimer);
    this.heartbeatTimer = undefined;
    this.stableTimer = undefined;
    this.pingSentAt = undefined;
  }
}

/**
 * A client's session: one logical link to one Durable Object across any number of connections.
 * The link itself (its state, heartbeats, reconnect with backoff) is `ReconnectingLink`
 * (reconnecting-link.ts), which the session extends; the session opens each connection and says
 * what its close means for the calls, and owns the caller half that outlives connections (its
 * calls wait while reconnecting), the client's exports (functions and objects it passed by
 * reference), what it exposes to the object, and its Hello (session id, resends). Each open
 * transport gets a fresh `Connection` (connection.ts) for everything per connection.
 *
 * Invariants:
 *  - Calls made while no connection is open are queued (bounded by `limits.maxPendingCalls`) and
 *    sent, in order, when one opens.
 *  - A call sent on a connection that closes before its reply is rejected with `DISCONNECTED`
 *    (the object may have run it), unless it was marked idempotent: then it is sent again on the
 *    next connection, at most `retries` times.
 *  - Stubs of a closed connection are dead (`REFERENCE_LOST`); the client's own exports are
 *    forgotten by the object and given fresh references when sent again.
 *
 * Internal module.
 */
import { Callee } from "./callee.js";
import { Caller } from "./caller.js";
import type { RootRule } from "./chain.js";
import { Connection } from "./connection.js";
import { disconnectMessage } from "./close-reasons.js";
import type { AccessPolicy } from "./access.js";
import { CloseCode, FRAME_MARK, FrameKind } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { IncomingData } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import { ReconnectingLink, type ReconnectingLinkOptions } from "./reconnecting-link.js";
import type { OutgoingCall } from "./outgoing-call.js";
import { ExportTable } from "./references.js";
import { clear, unref } from "./timers.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

export type { CallOptions } from "./call-options.js";
export type { ConnectionState, HeartbeatOptions, ReconnectOptions } from "./reconnecting-link.js";

export interface SessionOptions extends ReconnectingLinkOptions {
  transport: TransportFactory;
  /** The endpoint, for transports that use it (`TransportHandler.url`). */
  url: string | undefined;
  /** Default per-call timeout in ms; 0 disables. */
  timeout: number;
  limits: Readonly<RpcLimits>;
  /** Hold flushing while the transport has more than this many bytes buffered. */
  highWaterMark: number;
  /** Give up on a connection attempt that has neither opened nor failed after this many ms. */
  connectTimeout: number;
  /** What the object may call on this client (its `expose` option), and how it is reached. */
  expose: { root: object | undefined; rule: RootRule; policy: AccessPolicy };
  /** A failure nobody else will see: a call nobody awaited, a push that threw. */
  onError: (error: unknown, what: string) => void;
  /** Resend calls cut by a dropped connection, for the object to answer from its delivery record. */
  exactlyOnce: boolean;
}

/** A random client session id: 128 bits, base64url. */
function newSessionId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export class ClientSession extends ReconnectingLink implements TransportHandler {
  declare protected readonly options: SessionOptions;
  /** The open connection, or the one being opened. */
  private conn: Connection | undefined;
  readonly caller: Caller;
  readonly exports: ExportTable;
  /** Why the last connection ended, for `DISCONNECTED` messages. */
  private lastClose: { code: number; reason: string } | undefined;
  /** Why this client closed the connection itself, when it refused a frame. */
  private refused: RpcError | undefined;
  /** Set once a connection has opened: from then on a lost connection is re-established. */
  private everOpened = false;
  /**
   * What the object's system calls reach on this client: the subscriptions' event sink, set by
   * the first `subscribe()` (subscriptions.ts), so a client that never subscribes does not carry
   * that code. Read when a system call runs, so it serves connections already open too.
   */
  system: object | undefined;
  /** How many subscriptions are live (set with `system` by the first `subscribe()`). */
  subscriptionCount: (() => number) | undefined;
  /** Names this session to the object (Hello frame): the key of its calls' delivery record. */
  readonly sessionId = newSessionId();
  /** When the session began (`performance.now()`): a resending hello says how long ago. */
  private readonly startedAt = performance.now();
  /** Calls of a lost connection wait to be resent on the next one. */
  private resending = false;
  /**
   * The object has answered a call of this session, so it processed the Hello before the call.
   * Only then does "resending" tell it something: an unknown session that is resending, and does
   * not say it is younger than the object's `maxAge`, may have been forgotten (EXPIRED), while one
   * whose Hello never arrived has had nothing run. (The object writes a session's row with its
   * waiting call rows, so a reset can lose it; a young session that it does not know then ran
   * nothing that was committed, and its resends run.)
   */
  private acknowledged = false;

  get url(): string | undefined {
    return this.options.url;
  }

  get limits(): Readonly<RpcLimits> {
    return this.options.limits;
  }

  constructor(options: SessionOptions) {
    super(options);
    this.exports = new ExportTable(options.limits.maxExports, "This client");
    this.caller = new Caller({
      timeout: options.timeout,
      limits: options.limits,
      label: options.label,
      exports: this.exports,
      onUnobservedError: (error) => options.onError(error, "a call that was never awaited"),
      refuse: () => (this._state === "disposed" ? this.disposedError() : undefined),
      onQueued: () => {
        if (this._state === "idle") this.connect();
        else if (this._state === "reconnecting") {
          // HTTP requests have no connection to wait for: once the backoff is over, a call goes
          // (with the resends) at once. A Worker's module-scope client may have armed its backoff
          // timer in a request that has ended since, where workerd never runs it.
          if (options.transport.connectionless) {
            clear(this.reconnectTimer);
            this.reconnectTimer = undefined;
            const wait = this.reconnectAt - Date.now();
            if (wait <= 0) this.connect();
            // Armed again in this request: one armed in a request that has ended never runs.
            else {
              this.reconnectTimer = unref(setTimeout(() => this.reconnectDue(), wait));
              this.keepAliveForCalls(); // a call waits for it
            }
          } else this.keepAliveForCalls();
        }
      },
      congested: () => (this.transport?.bufferedAmount ?? 0) > options.highWaterMark,
      // Over a socket, which keeps the process (or object) awake while it is open anyway; not over
      // HTTP requests, where an armed timer could keep a Durable Object that calls out awake.
      keepArmed: !options.transport.connectionless,
      timerPerCall: options.transport.connectionless === true,
      // The object keeps answers for resends: tell it which ones this session no longer needs.
      acknowledge: options.exactlyOnce,
      unsentBecause: () => {
        if (this._state !== "reconnecting" || !this.lastClose) return undefined;
        const { code, reason } = this.lastClose;
        return `because the connection closed (code ${code}${reason ? `: ${reason}` : ""}) and ${this.attempt} reconnect attempt(s) have not succeeded yet.`;
      },
    });
  }

  /** Subscriptions and an exposed object wait for the next connection too (events, the object's calls). */
  protected override waitedFor(): boolean {
    return super.waitedFor() || (this.subscriptionCount?.() ?? 0) > 0 || this.options.expose.root !== undefined;
  }

  /** Reports a failure nobody else will see (the client's `onError`). */
  reportError(error: unknown, what: string): void {
    this.options.onError(error, what);
  }

  get label(): string {
    return this.options.label;
  }

  /** Calls queued or waiting for a reply. */
  get pendingCount(): number {
    return this.caller.pending.size;
  }

  /** The open connection, if any (tests, diagnostics). */
  get connection(): Connection | undefined {
    return this._state === "open" ? this.conn : undefined;
  }

  /** Makes a call through this session (tests use it directly; users go through the proxy). */
  call(...args: Parameters<Caller["call"]>): OutgoingCall {
    return this.caller.call(...args);
  }

  // ---------------------------------------------------------------------------------------------
  // Connecting
  // ---------------------------------------------------------------------------------------------

  protected connect(): void {
    if (this._state === "disposed") return;
    this.connectFailure = undefined;
    this.setState(this.attempt === 0 ? "connecting" : "reconnecting");
    if (this.disposed) return; // a listener closed the client
    let transport: RpcTransport;
    try {
      transport = this.options.transport(this);
      if (
        typeof transport !== "object" ||
        transport === null ||
        typeof transport.open !== "function" ||
        typeof transport.send !== "function" ||
        typeof transport.close !== "function"
      ) {
        throw new RpcError(
          "BAD_OPTION",
          `the transport factory returned ${typeof transport === "function" ? "a function (was it a function that makes a factory, passed without calling it?)" : String(transport)}, not a transport with open, send and close`,
        );
      }
    } catch (error) {
      // A transport factory that throws: the attempt failed; nothing was sent.
      this.transportFailed(error);
      return;
    }
    this.transport = transport;
    const { expose } = this.options;
    const session = this;
    const conn = new Connection(
      {
        send: (frame) => transport.send(frame),
        close: (code, reason) => transport.close(code, reason),
      },
      {
        limits: this.options.limits,
        key: this,
        caller: this.caller,
        exports: this.exports,
        answerPings: false,
        callee: (c) =>
          new Callee(c, {
            get system() {
              return session.system;
            },
            root: expose.root,
            rootRule: expose.rule,
            label: "this client",
            policy: expose.policy,
            limits: this.options.limits,
            exposeErrorStack: false,
            isPlatformState: () => false,
            onNotificationError: (error) => this.options.onError(error, "a push from the object"),
          }),
        onUnreadable: (error) => {
          // The object sent something unreadable: this connection cannot be trusted any more.
          this.refused = error;
          transport.close(error.code === "LIMIT" ? CloseCode.MessageTooBig : CloseCode.PolicyViolation, error.message.slice(0, 120));
        },
      },
    );
    this.conn = conn;
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
        // Hello first: the object must know whose calls follow (and whether some are resends).
        conn.outbox.add(
          FrameKind.Hello,
          this.resending && this.acknowledged
            ? `${JSON.stringify(this.sessionId)},1,${Math.ceil(performance.now() - this.startedAt)}`
            : `${JSON.stringify(this.sessionId)},0`,
        );
        this.resending = false;
        this.setState("open");
        if (this.state !== "open") return; // a listener closed the client
        this.armStable();
        this.armHeartbeat();
        this.caller.attach(conn);
        this.caller.flush();
      },
      () => {
        clear(giveUp);
        // The transport reported the failure through onClose (its contract).
      },
    );
  }

  onMessage(data: IncomingData): void {
    this.lastReceived = Date.now();
    this.pingSentAt = 0;
    if (!this.acknowledged) this.acknowledged = isReplies(data);
    this.conn?.receive(data);
  }

  onClose(code: number, reason: string): void {
    if (code === CloseCode.OtherRequest) {
      // A client kept across a Worker's requests: its socket is another request's, and no
      // connection it opens could outlive this one either. It cannot work: say so, once, to all.
      this.dispose(
        `The client for ${this.options.label} was made in another request of this Worker, and workerd does not let one request use a connection another opened (${reason}). Create the client inside the request that uses it (with \`using\`), or use httpTransport(), whose clients may serve many requests.`,
      );
      return;
    }
    const conn = this.conn;
    const transport = this.transport;
    this.conn = undefined;
    this.transport = undefined;
    this.lastClose = { code, reason };
    this.clearTimers();
    if (conn) {
      conn.end({
        code: "REFERENCE_LOST",
        message: `This stub came from a connection to ${this.options.label} that closed (code ${code}); stubs do not survive a reconnect. Get a new one.`,
      });
    }
    if (this._state === "disposed") return;
    const refused = this.refused;
    this.refused = undefined;
    const error = new RpcError(
      "DISCONNECTED",
      refused
        ? `The client closed its connection to ${this.options.label} because it refused a frame (${refused.code}: ${refused.message})`
        : disconnectMessage(this.options.label, code, reason),
      refused ? { cause: refused } : undefined,
    );
    // Sent calls: resend them on the next connection (answered from the object's delivery
    // record, or run if they never ran); an idempotent call is simply sent again. When there
    // will be no next connection, they fail, saying they may have run. Queued calls stay queued.
    const resume = this.options.reconnect !== false && this.everOpened;
    const refusedOurs = !refused && (code === CloseCode.PolicyViolation || code === CloseCode.MessageTooBig);
    if (conn) {
      this.caller.connectionLost(
        conn,
        (call) => {
          if (call.remade) return "fail";
          if (call.idempotent && call.retries > 0) {
            call.retries--;
            return "resend";
          }
          // Not after 1008/1009: the object refused a frame of ours, and would refuse it again.
          if (resume && this.options.exactlyOnce && call.id > 0 && !refusedOurs) {
            this.resending = true;
            return "retry";
          }
          return "fail";
        },
        () =>
          new RpcError(
            "DISCONNECTED",
            `${error.message} The call had been sent, so it may have run${resume ? "" : " (reconnect is off, so it was not resent)"}.`,
            { cause: error.cause },
          ),
      );
    }
    this.exports.peerLost();
    if (!this.everOpened) {
      // Never connected: say so, and why if the transport can tell (a WebSocket error says
      // nothing). Queued calls fail with CONNECT_FAILED; the next call tries again.
      this.connectFailed(code, reason, transport);
      this.attempt = 0;
      this.setState("idle");
      return;
    }
    if (!resume) {
      // Reconnection is off: queued calls fail now rather than wait for their timeouts; the
      // next call connects again.
      this.caller.failQueued(new RpcError("DISCONNECTED", `${error.message} The call was never sent.`, { cause: error.cause }));
      this.attempt = 0;
      this.setState("idle");
      return;
    }
    this.attempt++;
    this.scheduleReconnect();
  }

  /**
   * Fails the calls that waited for a first connection that never opened, with the likely
   * reason; `waitForOpen` callers get the same error.
   */
  private connectFailed(code: number, reason: string, transport: RpcTransport | undefined): void {
    const calls = this.caller.takeQueued();
    if (calls.length === 0 && this.openWaiters === 0) return;
    const why = reason ? `: ${reason}` : "";
    const what =
      code === CloseCode.ConnectTimeout
        ? `The connection to ${this.options.label} did not open within connectTimeout (${this.options.connectTimeout} ms).`
        : `Could not connect to ${this.options.label} (code ${code}${why}); nothing was sent.`;
    const diagnosed = transport?.diagnose ? transport.diagnose().catch(() => undefined) : Promise.resolve(undefined);
    this.connectFailure = diagnosed.then((diagnosis) => new RpcError("CONNECT_FAILED", diagnosis ? `${what} ${diagnosis}` : what));
    void this.connectFailure.then((error) => {
      for (const call of calls) this.caller.fail(call, error);
    });
  }

  /** The transport factory threw: like a first connection that never opened. */
  private transportFailed(error: unknown): void {
    const failure = new RpcError(
      "CONNECT_FAILED",
      `Could not make a transport for ${this.options.label}: ${String((error as Error)?.message ?? error)}`,
      {
        cause: error,
      },
    );
    this.connectFailure = Promise.resolve(failure);
    for (const call of this.caller.takeQueued()) this.caller.fail(call, failure);
    this.attempt = 0;
    this.setState("idle");
  }

  /**
   * Closes the connection and rejects every waiting call with `DISPOSED` (`why`: the client
   * disposed itself, and every call from now on fails saying why). Idempotent.
   */
  dispose(why?: string): void {
    if (this._state === "disposed") return;
    if (why !== undefined) this.disposedBecause = why;
    clear(this.reconnectTimer);
    this.caller.stopTimers();
    this.clearTimers();
    this.setState("disposed");
    this.caller.failAll(new RpcError("DISPOSED", why ?? `The client for ${this.options.label} was disposed while the call was waiting.`));
    const transport = this.transport;
    const conn = this.conn;
    this.transport = undefined;
    this.conn = undefined;
    conn?.end({ code: "RELEASED", message: `The client for ${this.options.label} was disposed; its stubs went with it.` });
    transport?.close(CloseCode.Normal, "client disposed");
  }

  /** Why the last connection closed, if one has. */
  get lastCloseInfo(): { code: number; reason: string } | undefined {
    return this.lastClose;
  }
}

/** Whether `data` is a frame of replies (text or binary: the kind follows the mark). */
function isReplies(data: IncomingData): boolean {
  if (typeof data === "string") return data.charCodeAt(0) === FRAME_MARK && data.charCodeAt(1) === FrameKind.Replies;
  const bytes =
    data instanceof ArrayBuffer
      ? new Uint8Array(data, 0, Math.min(2, data.byteLength))
      : new Uint8Array(data.buffer, data.byteOffset, Math.min(2, data.byteLength));
  return bytes[0] === FRAME_MARK && bytes[1] === FrameKind.Replies;
}

/**
 * A client's session: one logical link to one Durable Object across any number of connections.
 * The link itself (its state, heartbeats, reconnect with backoff) is `ReconnectingLink`
 * (reconnecting-link.ts), and how a connection ends and what that means for the calls is
 * `SessionCloses` (session-closes.ts), which the session extends; the session opens each
 * connection, and owns the caller half that outlives connections (its calls wait while
 * reconnecting), the client's exports (functions and objects it passed by reference), what it
 * exposes to the object, and its Hello (session id, resends). Each open transport gets a fresh
 * `Connection` (connection.ts) for everything per connection.
 *
 * Invariant: calls made while no connection is open are queued (bounded by
 * `limits.maxPendingCalls`) and sent, in order, when one opens.
 *
 * Internal module.
 */
import { Callee } from "./callee.js";
import { Caller } from "./caller.js";
import type { RootRule } from "./chain.js";
import { closeReason } from "./close-reasons.js";
import { Connection } from "./connection.js";
import type { AccessPolicy } from "./access.js";
import { CloseCode, FrameKind } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { type IncomingData, writeFrame } from "./frame.js";
import type { RpcLimits } from "./limits.js";
import type { ReconnectingLinkOptions } from "./reconnecting-link.js";
import type { OutgoingCall } from "./outgoing-call.js";
import { ExportTable } from "./references.js";
import { SessionCloses } from "./session-closes.js";
import { clear, monotonic, unref } from "./timers.js";
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

export class ClientSession extends SessionCloses implements TransportHandler {
  readonly caller: Caller;
  readonly exports: ExportTable;
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
  /** When the session began (`monotonic`): a resending hello says how long ago. */
  private readonly startedAt = monotonic();

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
            const wait = this.reconnectAt - monotonic();
            if (wait <= 0) this.connect();
            // Armed again in this request: one armed in a request that has ended never runs.
            else {
              this.reconnectTimer = unref(setTimeout(() => this.reconnectDue(), wait));
              this.keepAliveForCalls(); // a call waits for it
            }
          } else this.keepAliveForCalls();
        }
      },
      // What the socket has not sent yet, and what waits behind a Blob argument being read (it
      // reaches the socket all at once when the bytes are in): calls wait while it is over.
      congested: () => {
        const buffered = this.transport?.bufferedAmount;
        return buffered !== undefined && buffered + (this.conn?.outbox.unsentBytes ?? 0) > options.highWaterMark;
      },
      // Over a socket, which keeps the process (or object) awake while it is open anyway; not over
      // HTTP requests, where an armed timer could keep a Durable Object that calls out awake.
      keepArmed: !options.transport.connectionless,
      timerPerCall: options.transport.connectionless === true,
      // The object keeps answers for resends: tell it which ones this session no longer needs.
      acknowledge: options.exactlyOnce,
      unsentBecause: () => {
        if (this._state === "open") {
          const buffered = this.transport?.bufferedAmount;
          return buffered !== undefined && buffered > options.highWaterMark
            ? `because the socket still held ${buffered} bytes not yet sent, more than highWaterMark (${options.highWaterMark}): the connection is not draining.`
            : undefined;
        }
        if (this._state !== "reconnecting" || !this.lastClose) return undefined;
        const { code, reason } = this.lastClose;
        // `attempt` counts the closes since the connection was last stable: the first is the cut.
        const failed = this.attempt - 1;
        const next = this.reconnectTimer === undefined ? "" : ` (the next in ${Math.max(0, Math.ceil(this.reconnectAt - monotonic()))} ms)`;
        const tried = failed > 0 ? `${failed} reconnect attempt(s) have not succeeded yet` : "the client has not tried to reconnect yet";
        return `because the connection closed (code ${code}${reason ? `: ${reason}` : ""}) and ${tried}${next}.`;
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
    this.attemptOpened = false;
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
          transport.close(error.code === "LIMIT" ? CloseCode.ClientFrameTooBig : CloseCode.ClientRefusedFrame, closeReason(error.message));
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
        this.lastReceived = monotonic();
        const first = !this.everOpened; // no call of this session has left before this connection
        this.everOpened = true;
        this.attemptOpened = true;
        // Hello first: the object must know whose calls follow, and whether some are resends —
        // whenever they are, even before any reply arrived (a call's reply can be lost after it
        // ran, and a wipe of the object's storage in between must not let it run again). The age
        // tells a young session the object does not know from one it forgot.
        // In the message of the first calls (Outbox.lead): one event on the object, not two.
        conn.outbox.lead(
          writeFrame(
            FrameKind.Hello,
            this.resending
              ? `[${JSON.stringify(this.sessionId)},1,${Math.ceil(monotonic() - this.startedAt)}]`
              : `[${JSON.stringify(this.sessionId)},${first ? 2 : 0}]`,
            [],
          ) as string,
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
    this.lastReceived = monotonic();
    this.pingSentAt = undefined;
    this.conn?.receive(data);
  }
}

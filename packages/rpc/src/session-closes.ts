/**
 * How a client's connections end, and what each end means for the session's calls: the base of
 * `ClientSession` (session.ts), which opens the connections and owns the calls. A close kills the
 * connection's stubs, resends, sends again or fails the calls it cut, and reconnects with backoff
 * (`ReconnectingLink`, reconnecting-link.ts) or goes idle; a first connection that never opened
 * fails the calls that waited for it with `CONNECT_FAILED`, saying why; disposal ends it all.
 *
 * Invariants:
 *  - A call sent on a connection that closes before its reply is rejected with `DISCONNECTED`
 *    (the object may have run it), unless it was marked idempotent: then it is sent again on the
 *    next connection, at most `retries` times.
 *  - Stubs of a closed connection are dead (`REFERENCE_LOST`); the client's own exports are
 *    forgotten by the object and given fresh references when sent again.
 *
 * Internal module.
 */
import type { Caller } from "./caller.js";
import { disconnectMessage } from "./close-reasons.js";
import type { Connection } from "./connection.js";
import { CloseCode } from "./envelopes.js";
import { RpcError } from "./errors.js";
import { ReconnectingLink } from "./reconnecting-link.js";
import type { ExportTable } from "./references.js";
import type { SessionOptions } from "./session.js";
import { clear } from "./timers.js";
import type { RpcTransport } from "./transport.js";

export abstract class SessionCloses extends ReconnectingLink {
  declare protected readonly options: SessionOptions;
  /** The open connection, or the one being opened. */
  protected conn: Connection | undefined;
  /** The session's calls (it makes them: they outlive connections). */
  abstract readonly caller: Caller;
  /** The client's exports (functions and objects it passed by reference). */
  abstract readonly exports: ExportTable;
  /** Why the last connection ended, for `DISCONNECTED` messages. */
  protected lastClose: { code: number; reason: string } | undefined;
  /** Why this client closed the connection itself, when it refused a frame. */
  protected refused: RpcError | undefined;
  /** Set once a connection has opened: from then on a lost connection is re-established. */
  protected everOpened = false;
  /** Whether the current (or last) connection attempt opened. */
  protected attemptOpened = false;
  /** Calls of a lost connection wait to be resent on the next one. */
  protected resending = false;

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
    if (!this.attemptOpened && (!this.everOpened || this.options.reconnect === false)) {
      // Never connected (or, with reconnect off, this attempt never did): say so, and why if the
      // transport can tell (a WebSocket error says nothing). Queued calls fail with
      // CONNECT_FAILED; the next call tries again.
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
  protected transportFailed(error: unknown): void {
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
    transport?.close(CloseCode.SessionEnded, "client disposed");
  }

  /** Why the last connection closed, if one has. */
  get lastCloseInfo(): { code: number; reason: string } | undefined {
    return this.lastClose;
  }
}

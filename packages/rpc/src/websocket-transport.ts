/**
 * `RpcTransport` over a WebSocket: browsers, Node ≥ 22 (global `WebSocket`), Workers, or any
 * constructor passed in (`ws`, undici). Pure glue; the contract is in transport.ts.
 */
import { CloseCode } from "./envelopes.js";
import { RpcError } from "./errors.js";
import type { IncomingData, WireFrame } from "./frame.js";
import { diagnoseEndpoint } from "./diagnose.js";
import { unref } from "./timers.js";
import type { RpcTransport, TransportFactory, TransportHandler } from "./transport.js";

/** The part of the WHATWG WebSocket that dorpc uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount?: number;
  send(data: string | ArrayBufferLike | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: never) => void): void;
}

/** A WebSocket constructor: the global one or a compatible implementation. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

const OPEN = 1;

/**
 * A socket that has started closing without reporting it. The WebSocket API fires "close" only
 * once the TCP connection is gone, and a peer (or a proxy in between) may send its close frame and
 * never close the TCP connection: the socket then stays CLOSING with no event, and Node's
 * WebSocket (undici) has no closing-handshake timeout of its own. Seen with `wrangler dev`: a
 * socket the object closed within milliseconds of accepting it stayed CLOSING until the heartbeat
 * gave up on it 40 s later, with its calls waiting. Nothing arrives on a closing socket and
 * nothing can be sent on it, so the transport checks the socket's state every `STATE_CHECK_MS`
 * while it is open, and ends a closing socket itself after `CLOSING_GRACE_MS`: long enough for a
 * peer that does close the TCP connection to report its own code and reason (1008, 1009 and 1001
 * mean something to the session), short enough that the calls are resent within seconds.
 */
const STATE_CHECK_MS = 1_000;
const CLOSING_GRACE_MS = 2_000;

/** Transport factory for `url` using `WebSocketImpl`. */
export function webSocketTransport(url: string, WebSocketImpl: WebSocketConstructor): TransportFactory {
  return (handler) => new WebSocketTransport(url, WebSocketImpl, handler);
}

class WebSocketTransport implements RpcTransport {
  private socket: WebSocketLike | undefined;
  private closed = false;
  /** Checks the open socket's state (see `STATE_CHECK_MS`). */
  private stateTimer: ReturnType<typeof setTimeout> | undefined;
  /** Ends a socket that started closing and has not reported it (see `CLOSING_GRACE_MS`). */
  private graceTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly url: string,
    private readonly WebSocketImpl: WebSocketConstructor,
    private readonly handler: TransportHandler,
  ) {}

  get bufferedAmount(): number | undefined {
    return this.socket?.bufferedAmount;
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new this.WebSocketImpl(this.url);
      } catch (error) {
        const failure = new RpcError("DISCONNECTED", `Cannot open a WebSocket to ${this.url}: ${String(error)}`, { cause: error });
        this.finish(1006, failure.message);
        reject(failure);
        return;
      }
      this.socket = socket;
      socket.binaryType = "arraybuffer";
      let opened = false;
      socket.addEventListener("open", () => {
        opened = true;
        this.watchState();
        resolve();
      });
      socket.addEventListener("message", (event: { data: IncomingData }) => {
        if (!this.closed) this.handler.onMessage(event.data);
      });
      socket.addEventListener("close", (event: { code: number; reason: string }) => {
        if (!opened) {
          reject(
            new RpcError(
              "DISCONNECTED",
              `WebSocket to ${this.url} closed before it opened (code ${event.code}${event.reason ? `: ${event.reason}` : ""}).`,
            ),
          );
        }
        this.finish(event.code, event.reason);
      });
      // Browsers follow "error" with "close" (which carries the code); Node's WebSocket fires only
      // "error" when a connection is refused. Either way the attempt ends here, exactly once.
      socket.addEventListener("error", () => {
        if (!opened) reject(new RpcError("DISCONNECTED", `WebSocket to ${this.url} failed to open.`));
        this.finish(1006, "connection error");
      });
    });
  }

  /**
   * Why a connection that never opened failed: WebSocket errors say nothing (a browser reports
   * 1006 whatever the server answered), so ask the same URL over plain HTTP and read the answer.
   */
  async diagnose(): Promise<string | undefined> {
    return diagnoseEndpoint(this.url);
  }

  send(frame: WireFrame): void {
    const socket = this.socket;
    if (this.closed || !socket) return; // reported by onClose
    try {
      if (socket.readyState !== OPEN) {
        this.closing(); // reported by onClose, within CLOSING_GRACE_MS
        return;
      }
      socket.send(frame);
    } catch (error) {
      // workerd: the socket belongs to the request that opened it, and this is another one.
      // No event will ever report it: say so now, or the call waits for nothing.
      if (!/different request/i.test(String((error as Error)?.message))) throw error;
      this.finish(CloseCode.OtherRequest, String((error as Error).message));
    }
  }

  /** Checks every `STATE_CHECK_MS` that the open socket has not started closing unreported. */
  private watchState(): void {
    this.stateTimer = unref(
      setTimeout(() => {
        if (this.closed) return;
        if (this.socket?.readyState === OPEN) this.watchState();
        else this.closing();
      }, STATE_CHECK_MS),
    );
  }

  /** The socket started closing: its "close" event gets `CLOSING_GRACE_MS`, then the transport reports it. */
  private closing(): void {
    if (this.closed || this.graceTimer !== undefined) return;
    this.graceTimer = unref(
      setTimeout(() => this.finish(1006, "dorpc: the WebSocket started closing and its close never completed"), CLOSING_GRACE_MS),
    );
  }

  close(code = 1000, reason = ""): void {
    if (this.closed) return;
    try {
      this.socket?.close(code, reason);
    } catch {
      // Already closing, or a code or reason this implementation refuses (a WHATWG WebSocket
      // takes only 1000 and 3000–4999, and a reason of at most 123 bytes): close it anyway, so
      // no socket is left open behind the session's back.
      try {
        this.socket?.close();
      } catch {
        // Already closing: the close event or finish() below reports it.
      }
    }
    this.finish(code, reason);
  }

  private finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    if (this.stateTimer !== undefined) clearTimeout(this.stateTimer);
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer);
    this.handler.onClose(code, reason);
  }
}

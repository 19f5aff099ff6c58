/**
 * `RpcTransport` over a WebSocket: browsers, Node ≥ 22 (global `WebSocket`), Workers, or any
 * constructor passed in (`ws`, undici). Pure glue; the contract is in transport.ts.
 */
import { RpcError } from "./errors.js";
import type { IncomingData, WireFrame } from "./frame.js";
import { diagnoseEndpoint } from "./diagnose.js";
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

/** Transport factory for `url` using `WebSocketImpl`. */
export function webSocketTransport(url: string, WebSocketImpl: WebSocketConstructor): TransportFactory {
  return (handler) => new WebSocketTransport(url, WebSocketImpl, handler);
}

class WebSocketTransport implements RpcTransport {
  private socket: WebSocketLike | undefined;
  private closed = false;

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
    if (this.closed || !socket || socket.readyState !== OPEN) return; // reported by onClose
    socket.send(frame);
  }

  close(code = 1000, reason = ""): void {
    if (this.closed) return;
    try {
      this.socket?.close(code, reason);
    } catch {
      // Already closing; the close event or finish() below reports it.
    }
    this.finish(code, reason);
  }

  private finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.handler.onClose(code, reason);
  }
}

/**
 * `RpcTransport` over a WebSocket obtained with an upgrade request sent through a `fetch`
 * function inside workerd: a Durable Object stub's, or a Worker's own. No network is involved;
 * the 101 response carries the client end of a `WebSocketPair`.
 *
 * Keeps the contract written in `@dorpc/rpc`'s transport.ts: `open()` resolves when `send` may be
 * called or rejects with an `RpcError` of code `DISCONNECTED`; `onMessage` is never called after
 * `onClose`; `onClose` is called exactly once per transport, whether or not `open()` resolved;
 * `send` never throws for a closed connection; `close` is idempotent.
 *
 * On top of the contract, for tests: every connection attempt is recorded (status, socket, how it
 * closed), and `drop()` ends the live connection the way a network cut would look to the client
 * (an abnormal close) while the object still sees its socket close. Internal module.
 */
import { RpcError, type RpcTransport, type TransportFactory, type TransportHandler } from "@dorpc/rpc";

/** One connection attempt of a test client, as {@link testConnection} lists it. */
export interface ConnectionAttempt {
  /** Status of the upgrade response: 101 when the object accepted the socket; `undefined` until it answers (or when the request threw). */
  readonly status: number | undefined;
  /** The client end of the socket, once accepted. Send raw frames on it to speak your object's own protocol. */
  readonly socket: WebSocket | undefined;
  /** How the connection ended, as the client saw it; `undefined` while it is open or opening. */
  readonly closed: { readonly code: number; readonly reason: string } | undefined;
}

interface MutableAttempt {
  status: number | undefined;
  socket: WebSocket | undefined;
  closed: { code: number; reason: string } | undefined;
}

/** Sends the upgrade request; `url` is for the request line and error messages. */
export type UpgradeFetch = (url: string, init: RequestInit) => Promise<Response>;

/** What the testing helpers keep of a client's transport. */
export interface UpgradeTransport {
  readonly factory: TransportFactory;
  readonly attempts: readonly ConnectionAttempt[];
  /** The attempt whose socket is open now, if any. */
  current(): ConnectionAttempt | undefined;
  /**
   * Ends the open connection as if the network had failed: the client is told `code`/`reason`
   * at once (its calls in flight fail, it reconnects per its options), and the socket is closed
   * so the object's `webSocketClose` runs. Returns false when no connection is open.
   */
  drop(code: number, reason: string): boolean;
}

/**
 * Close code sent to the object when a test drops the connection: 1006, what the object sees of a
 * lost network, cannot be sent, and 1001 means the client left for good (the object then aborts
 * its calls instead of letting them finish for the resend).
 */
const DROP_CLOSE_CODE = 4006;

export function upgradeTransport(url: string, headers: Headers, fetchUpgrade: UpgradeFetch): UpgradeTransport {
  const attempts: MutableAttempt[] = [];
  // The one attempt that may still report something, and how to end it from outside.
  let live: { attempt: MutableAttempt; finish: (code: number, reason: string) => void } | undefined;

  const factory = (handler: TransportHandler): RpcTransport => {
    const attempt: MutableAttempt = { status: undefined, socket: undefined, closed: undefined };
    attempts.push(attempt);
    let done = false;

    const finish = (code: number, reason: string): void => {
      if (done) return;
      done = true;
      attempt.closed = { code, reason };
      if (live?.attempt === attempt) live = undefined;
      handler.onClose(code, reason);
    };
    live = { attempt, finish };

    const fail = (message: string, cause?: unknown): RpcError => {
      finish(1006, message);
      return new RpcError("DISCONNECTED", message, cause === undefined ? undefined : { cause });
    };

    return {
      async open(): Promise<void> {
        const init: RequestInit = { headers: new Headers(headers) };
        (init.headers as Headers).set("Upgrade", "websocket");
        let response: Response;
        try {
          response = await fetchUpgrade(url, init);
        } catch (error) {
          throw fail(`The upgrade request to ${url} failed: ${String(error)}`, error);
        }
        attempt.status = response.status;
        const socket = response.webSocket;
        if (response.status !== 101 || !socket) {
          const body = await response.text().catch(() => "");
          throw fail(`The upgrade request to ${url} was answered ${response.status}${body ? `: ${typedMessage(body) ?? body}` : ""}`);
        }
        // Binary messages arrive as Blob unless asked otherwise; dorpc's frame reader takes
        // ArrayBuffer (the WebSocket transport asks for the same).
        socket.binaryType = "arraybuffer";
        socket.accept();
        if (done) {
          // close() ran while the upgrade was in flight and onClose was reported then.
          socket.close(1000, "closed while opening");
          throw new RpcError("DISCONNECTED", `The connection to ${url} was closed while opening.`);
        }
        attempt.socket = socket;
        socket.addEventListener("message", (event) => {
          if (!done) handler.onMessage(event.data as string | ArrayBuffer);
        });
        socket.addEventListener("close", (event) => finish(event.code, event.reason));
        socket.addEventListener("error", () => finish(1006, "WebSocket error"));
      },

      send(frame): void {
        const socket = attempt.socket;
        if (done || !socket) return; // the loss is reported through onClose
        try {
          socket.send(frame);
        } catch (error) {
          finish(1006, `send failed: ${String(error)}`);
        }
      },

      close(code = 1000, reason = ""): void {
        if (done) return;
        closeQuietly(attempt.socket, code, reason);
        finish(code, reason);
      },
    };
  };

  return {
    factory,
    attempts,
    current: () => (live?.attempt.socket ? live.attempt : undefined),
    drop(code, reason) {
      const target = live;
      if (!target?.attempt.socket) return false;
      // The client hears of the cut first, as it would from its own network stack; the close
      // frame to the object only makes its side of the socket end too.
      target.finish(code, reason);
      closeQuietly(target.attempt.socket, DROP_CLOSE_CODE, "dorpc testing: connection dropped");
      return true;
    },
  };
}

function closeQuietly(socket: WebSocket | undefined, code: number, reason: string): void {
  try {
    socket?.close(code, reason);
  } catch {
    // Already closing, or a code the runtime will not send: the connection ends either way.
  }
}

/** The message of dorpc's typed refusal body (`{"error": {"code", "message"}}`), if `body` is one. */
function typedMessage(body: string): string | undefined {
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    if (typeof error?.code === "string" && typeof error.message === "string") return `${error.code}: ${error.message}`;
  } catch {
    // not dorpc's
  }
  return undefined;
}

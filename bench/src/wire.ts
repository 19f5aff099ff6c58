/**
 * Counting at the client: a subclass of Node's global WebSocket that adds up the frames and
 * payload bytes it sends and receives (UTF-8 bytes for text frames; WebSocket frame headers and
 * TCP/IP overhead are not counted). Every contender's traffic goes through one of these, so
 * bytes and frames per call are measured, not inferred from the protocol.
 */

export class WireCounters {
  sentFrames = 0;
  sentBytes = 0;
  recvFrames = 0;
  recvBytes = 0;

  snapshot(): WireSnapshot {
    return { sentFrames: this.sentFrames, sentBytes: this.sentBytes, recvFrames: this.recvFrames, recvBytes: this.recvBytes };
  }
}

export interface WireSnapshot {
  sentFrames: number;
  sentBytes: number;
  recvFrames: number;
  recvBytes: number;
}

export function wireDelta(before: WireSnapshot, after: WireSnapshot): WireSnapshot {
  return {
    sentFrames: after.sentFrames - before.sentFrames,
    sentBytes: after.sentBytes - before.sentBytes,
    recvFrames: after.recvFrames - before.recvFrames,
    recvBytes: after.recvBytes - before.recvBytes,
  };
}

export function payloadBytes(data: unknown): number {
  if (typeof data === "string") return Buffer.byteLength(data, "utf8");
  if (data instanceof ArrayBuffer) return data.byteLength;
  if (ArrayBuffer.isView(data)) return data.byteLength;
  if (data instanceof Blob) return data.size;
  return 0;
}

/** What a counting socket remembers about itself, for connect timing and clean closing. */
export interface SocketTimes {
  /** process.hrtime.bigint() when the constructor ran. */
  createdAt: bigint;
  /** … and when "open" fired (0n until then). */
  openedAt: bigint;
  closed: Promise<void>;
}

const Base = globalThis.WebSocket;

export type CountingWebSocketClass = {
  new (url: string | URL, protocols?: string | string[]): WebSocket & { readonly times: SocketTimes };
};

/**
 * A WebSocket class bound to `counters`; `onCreate` sees every socket it makes (the dorpc client
 * constructs its socket itself, so this is how the bench gets hold of it).
 */
export function countingWebSocket(
  counters: WireCounters,
  onCreate?: (socket: WebSocket & { readonly times: SocketTimes }) => void,
): CountingWebSocketClass {
  return class CountingWebSocket extends Base {
    readonly times: SocketTimes;

    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      let markClosed!: () => void;
      this.times = {
        createdAt: process.hrtime.bigint(),
        openedAt: 0n,
        closed: new Promise<void>((done) => (markClosed = done)),
      };
      this.addEventListener("open", () => {
        this.times.openedAt = process.hrtime.bigint();
      });
      this.addEventListener("message", (event: MessageEvent) => {
        counters.recvFrames++;
        counters.recvBytes += payloadBytes(event.data);
      });
      this.addEventListener("close", () => markClosed());
      onCreate?.(this);
    }

    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      counters.sentFrames++;
      counters.sentBytes += payloadBytes(data);
      super.send(data);
    }
  };
}

/** Resolves when `socket` is open; rejects if it closes or errors first. */
export function whenOpen(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.OPEN) return Promise.resolve();
  return new Promise((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("close", (event) => reject(new Error(`WebSocket closed before it opened (code ${event.code})`)), {
      once: true,
    });
  });
}

/** Closes `socket` and waits (bounded) for the close handshake, so sockets do not pile up. */
export async function closeAndWait(socket: WebSocket & { readonly times: SocketTimes }, timeoutMs = 2_000): Promise<void> {
  try {
    if (socket.readyState === WebSocket.CONNECTING || socket.readyState === WebSocket.OPEN) socket.close(1000, "bench done");
  } catch {
    // closing already
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([socket.times.closed, new Promise<void>((done) => (timer = setTimeout(done, timeoutMs)))]);
  clearTimeout(timer);
}

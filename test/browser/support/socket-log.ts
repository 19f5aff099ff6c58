/**
 * The WebSockets a page opens, seen from outside the page through the DevTools protocol: the
 * page's own code is not wrapped or patched, so what is counted is what Chromium really did.
 */
import type { CDPSession, Page } from "puppeteer-core";

export interface LoggedSocket {
  readonly url: string;
  /** HTTP status of the handshake response when it opened (101); a refused handshake shows in `error`. */
  status: number | undefined;
  /** Closed by either side, or failed. */
  closed: boolean;
  /** Chromium's message when the socket failed, e.g. "Error during WebSocket handshake: Unexpected response code: 403". */
  error: string | undefined;
  /** The text of every text frame the page sent on it, in order (binary frames are left out). */
  readonly sent: string[];
}

export class SocketLog {
  readonly sockets: LoggedSocket[] = [];
  private readonly byId = new Map<string, LoggedSocket>();
  private readonly waiters = new Set<() => void>();

  private constructor(session: CDPSession) {
    session.on("Network.webSocketCreated", ({ requestId, url }) => {
      const socket: LoggedSocket = { url, status: undefined, closed: false, error: undefined, sent: [] };
      this.byId.set(requestId, socket);
      this.sockets.push(socket);
      this.changed();
    });
    session.on("Network.webSocketHandshakeResponseReceived", ({ requestId, response }) => {
      const socket = this.byId.get(requestId);
      if (socket) socket.status = response.status;
      this.changed();
    });
    session.on("Network.webSocketFrameSent", ({ requestId, response }) => {
      const socket = this.byId.get(requestId);
      if (socket && response.opcode === 1) socket.sent.push(response.payloadData);
      this.changed();
    });
    session.on("Network.webSocketFrameError", ({ requestId, errorMessage }) => {
      const socket = this.byId.get(requestId);
      if (socket) socket.error = errorMessage;
      this.changed();
    });
    session.on("Network.webSocketClosed", ({ requestId }) => {
      const socket = this.byId.get(requestId);
      if (socket) socket.closed = true;
      this.changed();
    });
  }

  static async attach(page: Page): Promise<SocketLog> {
    const session = await page.createCDPSession();
    await session.send("Network.enable");
    return new SocketLog(session);
  }

  /**
   * How often `needle` occurs in the text frames sent on all sockets: a count of calls, since
   * the client batches the calls of one microtask turn into one frame.
   */
  sentCount(needle: string): number {
    let count = 0;
    for (const socket of this.sockets) for (const frame of socket.sent) count += frame.split(needle).length - 1;
    return count;
  }

  /** Sockets not closed yet. */
  get open(): LoggedSocket[] {
    return this.sockets.filter((socket) => !socket.closed);
  }

  /**
   * Resolves once `condition` holds. DevTools events arrive on their own schedule, after the
   * page saw the change, so tests wait for them here instead of asserting at once; the test's
   * timeout bounds the wait.
   */
  until(condition: (log: this) => boolean): Promise<void> {
    if (condition(this)) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!condition(this)) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  private changed(): void {
    for (const check of [...this.waiters]) check();
  }
}

/**
 * The WebSocket transport under connection failures, with a scripted WebSocket: the
 * RpcTransport contract says `onClose` is reported exactly once and `open()` rejects when the
 * connection cannot be opened — including when the runtime only fires "error" (Node 22's
 * undici WebSocket does so for a refused TCP connection; seen restarting `wrangler dev`).
 */
import { describe, expect, it } from "vitest";
import { webSocketTransport, type WebSocketLike } from "../../packages/rpc/src/websocket-transport.js";

type Listener = (event: never) => void;

class ScriptedSocket implements WebSocketLike {
  static last: ScriptedSocket | undefined;
  binaryType = "blob";
  readyState = 0;
  readonly listeners = new Map<string, Listener[]>();
  constructor(readonly url: string) {
    ScriptedSocket.last = this;
  }
  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  emit(type: string, event: object = {}): void {
    for (const listener of this.listeners.get(type) ?? []) listener(event as never);
  }
  send(): void {}
  close(): void {
    this.readyState = 3;
  }
}

function start() {
  const closes: [number, string][] = [];
  const transport = webSocketTransport(
    "ws://127.0.0.1:1/x",
    ScriptedSocket,
  )({ onMessage() {}, onClose: (code, reason) => closes.push([code, reason]) });
  const opened = transport.open().then(
    () => "opened",
    (error: Error) => `rejected: ${error.message}`,
  );
  return { closes, opened, socket: ScriptedSocket.last! };
}

describe("WebSocket transport failures", () => {
  it("refused connection reported as error + close: open() rejects and onClose runs once", async () => {
    const { closes, opened, socket } = start();
    socket.readyState = 3;
    socket.emit("error");
    socket.emit("close", { code: 1006, reason: "" });
    // The error event ends the attempt (Node sends no close after it); a close that follows is ignored.
    expect(await opened).toMatch(/^rejected: WebSocket to ws:\/\/127\.0\.0\.1:1\/x failed to open/);
    expect(closes).toHaveLength(1);
    expect(closes[0]![0]).toBe(1006);
  });

  it("refused connection reported as an error event only: open() still rejects and onClose still runs", async () => {
    const { closes, opened, socket } = start();
    socket.readyState = 3;
    socket.emit("error");
    const outcome = await Promise.race([opened, new Promise((resolve) => setTimeout(() => resolve("still pending"), 100))]);
    expect(outcome, "open() never settles: the session waits for connectTimeout (default 10 s)").toMatch(/^rejected/);
    expect(closes).toHaveLength(1);
  });
});

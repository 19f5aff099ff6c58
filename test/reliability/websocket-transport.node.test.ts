/**
 * The WebSocket transport under connection failures, with a scripted WebSocket: the
 * RpcTransport contract says `onClose` is reported exactly once and `open()` rejects when the
 * connection cannot be opened — including when the runtime only fires "error" (Node 22's
 * undici WebSocket does so for a refused TCP connection; seen restarting `wrangler dev`) — and
 * when a socket starts closing and its "close" never comes (a peer that sent its close frame and
 * never closed the TCP connection; seen under `wrangler dev` in the load ledger).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { webSocketTransport, type WebSocketLike } from "../../packages/rpc/src/websocket-transport.js";
import { framesOf } from "../support/frames.js";

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
  readonly sent: unknown[] = [];
  send(data: unknown): void {
    this.sent.push(...framesOf(data));
  }
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
  return { closes, opened, socket: ScriptedSocket.last!, transport };
}

/** Opens a scripted socket, then has it start closing with no "close" event (undici's CLOSING). */
async function stuckClosing() {
  const started = start();
  started.socket.readyState = 1;
  started.socket.emit("open");
  expect(await started.opened).toBe("opened");
  // The peer's close frame arrived and was answered: the socket is CLOSING, and "close" only
  // comes once the TCP connection is gone, which a peer that never closes it never lets happen.
  started.socket.readyState = 2;
  return started;
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

describe("WebSocket transport: a close that never completes", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a socket left CLOSING without a close event is reported closed within seconds, once", async () => {
    vi.useFakeTimers();
    const { closes, socket } = await stuckClosing();
    // Before: nothing until the session's heartbeat (30 s quiet + 10 s unanswered), while the
    // calls sent on it waited (the load ledger's ~40 s stall after a wrangler restart).
    await vi.advanceTimersByTimeAsync(3_000);
    expect(closes).toEqual([[1006, "dorpc: the WebSocket started closing and its close never completed"]]);
    // The real close, if it ever comes, is not reported again.
    socket.emit("close", { code: 1011, reason: "late" });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(closes).toHaveLength(1);
  });

  it("a close event that follows within the grace is reported with its own code and reason", async () => {
    vi.useFakeTimers();
    const { closes, socket } = await stuckClosing();
    await vi.advanceTimersByTimeAsync(1_500);
    expect(closes).toEqual([]);
    socket.emit("close", { code: 1008, reason: "refused" });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(closes).toEqual([[1008, "refused"]]);
  });

  it("sending on a closing socket starts the grace at once, and sends nothing", async () => {
    vi.useFakeTimers();
    const { closes, socket, transport } = await stuckClosing();
    transport.send("\u001eP");
    expect(socket.sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(closes).toHaveLength(1);
  });

  it("an open socket is never reported closed by the check", async () => {
    vi.useFakeTimers();
    const started = start();
    started.socket.readyState = 1;
    started.socket.emit("open");
    await started.opened;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(started.closes).toEqual([]);
    started.transport.close(1000, "done");
    expect(started.closes).toEqual([[1000, "done"]]);
    expect(vi.getTimerCount(), "no check left running after the close").toBe(0);
  });
});

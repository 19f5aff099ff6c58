/**
 * A scripted WebSocket for client tests on fake timers, strict where the WHATWG WebSocket is:
 * close() throws for a code other than 1000 or 3000–4999 and for a reason over 123 bytes;
 * close() on a CONNECTING socket fires "error" (as Node 22's undici does); send() throws while
 * CONNECTING and drops data once CLOSING. The test plays the server: accept(), deliver(),
 * serverClose(). Shared by client-lifecycle.test.ts and client-close-codes.test.ts.
 */
import { createRpcClient, type RpcClientOptions, rpcConnection } from "../../packages/rpc/src/client.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import { DEFAULT_LIMITS } from "../../packages/rpc/src/limits.js";
import type { WebSocketLike } from "../../packages/rpc/src/websocket-transport.js";
import { afterEach, beforeEach, vi } from "vitest";
import { framesOf } from "../support/frames.js";

type Listener = (event: never) => void;

export class ScriptedSocket implements WebSocketLike {
  /** Every socket made since the last reset(), in order. */
  static all: ScriptedSocket[] = [];
  /** How many of the next constructions throw (as a constructor refusing a URL does). */
  static throwNext = 0;

  static reset(): void {
    ScriptedSocket.all = [];
    ScriptedSocket.throwNext = 0;
  }

  binaryType = "blob";
  readyState = 0;
  bufferedAmount = 0;
  readonly listeners = new Map<string, Listener[]>();
  /** Frames sent, in order (a Hello and the frame it led apart: see test/support/frames.ts). */
  readonly sent: (string | ArrayBufferLike | ArrayBufferView)[] = [];
  /** Messages sent, as sent. */
  readonly raw: (string | ArrayBufferLike | ArrayBufferView)[] = [];
  /** What the client passed to close(), for each call that did not throw. */
  readonly closeCalls: [number | undefined, string | undefined][] = [];

  constructor(readonly url: string) {
    if (ScriptedSocket.throwNext > 0) {
      ScriptedSocket.throwNext--;
      throw new SyntaxError("scripted constructor failure");
    }
    ScriptedSocket.all.push(this);
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string | ArrayBufferLike | ArrayBufferView): void {
    if (this.readyState === 0) throw new DOMException("still connecting", "InvalidStateError");
    if (this.readyState !== 1) return;
    this.raw.push(data);
    this.sent.push(...framesOf(data));
  }

  close(code?: number, reason?: string): void {
    if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) {
      throw new DOMException(`close code ${code} is not 1000 or in 3000–4999`, "InvalidAccessError");
    }
    if (reason !== undefined && new TextEncoder().encode(reason).byteLength > 123) {
      throw new DOMException("close reason longer than 123 bytes", "SyntaxError");
    }
    this.closeCalls.push([code, reason]);
    if (this.readyState === 0) {
      this.readyState = 2;
      queueMicrotask(() => this.emit("error"));
      return;
    }
    if (this.readyState === 1) this.readyState = 2;
  }

  private emit(type: string, event: object = {}): void {
    for (const listener of this.listeners.get(type) ?? []) listener(event as never);
  }

  // --- the server's side ---

  accept(): void {
    this.readyState = 1;
    this.emit("open");
  }

  deliver(data: string): void {
    this.emit("message", { data });
  }

  serverClose(code: number, reason = ""): void {
    this.readyState = 3;
    this.emit("close", { code, reason });
  }

  /** Ids of the calls this socket carried (C frames), in order. */
  callIds(): unknown[] {
    return this.bodies("C").flatMap((body) => (body as unknown[][]).map((call) => call[0]));
  }

  /** How many heartbeat pings this socket carried. */
  pings(): number {
    return this.sent.filter((data) => data === "\u001eP").length;
  }

  private bodies(kind: string): unknown[] {
    const out: unknown[] = [];
    for (const data of this.sent) {
      const raw = readFrame(data as string, DEFAULT_LIMITS);
      if (raw && raw.kind === kind.charCodeAt(0)) out.push(raw.body);
    }
    return out;
  }
}

/** The socket made last. */
export const lastSocket = (): ScriptedSocket => {
  const socket = ScriptedSocket.all.at(-1);
  if (!socket) throw new Error("no socket was made");
  return socket;
};

export interface Api {
  f(): number;
  g(): number;
}

/** A client over scripted sockets: no heartbeat, backoff 100, 200, 400 … ms (no jitter). */
export function scriptedClient(options: RpcClientOptions = {}) {
  return createRpcClient<Api>("B", "i", {
    baseUrl: "http://127.0.0.1:1",
    WebSocket: ScriptedSocket,
    heartbeat: false,
    reconnect: { initialDelay: 100, maxDelay: 1_000, factor: 2, jitter: 0, resetAfter: 5_000 },
    onError: () => {},
    ...options,
  });
}

/** Opens the client's first connection (fake timers): the scripted server accepts it. */
export async function opened(client: ReturnType<typeof scriptedClient>): Promise<ScriptedSocket> {
  const open = rpcConnection(client).waitForOpen();
  await vi.advanceTimersByTimeAsync(0);
  lastSocket().accept();
  await open;
  return lastSocket();
}

/** Sends a call or waits on a promise without awaiting it: its outcome, once it has one. */
export function track<T>(promise: PromiseLike<T>) {
  const state: { settled: boolean; ok?: boolean; value?: unknown } = { settled: false };
  Promise.resolve(promise).then(
    (value) => Object.assign(state, { settled: true, ok: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, ok: false, value: error }),
  );
  return state;
}

/**
 * The setting of a test file on scripted sockets: fake timers, and a `fetch` that finds nothing
 * listening (a first connection that fails is diagnosed over HTTP: answered at once); the sockets
 * made are forgotten after each test.
 */
export function withScriptedSockets(): void {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => {
        throw new TypeError("fetch failed");
      }),
    );
  });
  afterEach(() => {
    ScriptedSocket.reset();
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });
}

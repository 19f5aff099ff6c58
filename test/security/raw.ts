/**
 * Raw access to a dorpc socket inside workerd, for frames the client would never send.
 *
 * `openRaw` upgrades through the test Worker's own route (`SELF.fetch` → routeDORequest →
 * stub.fetch → handleRpcRequest → hibernatable socket) and records everything the server sends
 * back: every reply envelope by id, every raw message (for the secret scan), and the close.
 * `upgradeTransport` is the same thing as a dorpc client transport.
 */
import { RpcError, type RpcTransport, type TransportFactory, type TransportHandler } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";

export const MARK = "\u001e";
/** A text call frame: FRAME_MARK, "C", then the JSON body. */
export const calls = (body: unknown): string => `${MARK}C${JSON.stringify(body)}`;
/** One call: `[[id, chain]]`. */
export const call = (id: number, ...chain: unknown[]): string => calls([[id, chain]]);

export { binaryFrame } from "../support/binary-frame.js";

/** A reply envelope as the server sent it: `[id]`, `[id, 0|1|2, value]`, `[id, 3, code, message]`. */
export type Reply = [number, ...unknown[]];

export interface RawConnection {
  readonly socket: WebSocket;
  /** Every reply envelope received, in order. */
  readonly replies: Reply[];
  /** Every message received, as text (binary decoded leniently), for the secret scan. */
  readonly texts: string[];
  /** Set when the socket closed: [code, reason]. */
  closed: [number, string] | undefined;
  send(frame: string | ArrayBuffer | Uint8Array): void;
  /** Replies for `id`, waiting until `count` of them arrived (or the socket closed). */
  repliesFor(id: number, count?: number, timeoutMs?: number): Promise<Reply[]>;
  /** The first reply for `id`. Fails the test if none arrives. */
  reply(id: number, timeoutMs?: number): Promise<Reply>;
  /** Resolves with [code, reason] once the server closed the socket (or after `timeoutMs`: undefined). */
  closedWithin(timeoutMs?: number): Promise<[number, string] | undefined>;
  close(): void;
}

/** Opens a raw dorpc socket to `url` (e.g. routeUrl("VICTIM", name)). Throws unless it got 101. */
export async function openRaw(url: string, headers: Record<string, string> = {}): Promise<RawConnection> {
  const response = await SELF.fetch(url, { headers: { ...headers, Upgrade: "websocket" } });
  const socket = response.webSocket;
  if (response.status !== 101 || !socket) {
    throw new Error(`upgrade to ${url} answered ${response.status}: ${await response.text()}`);
  }
  socket.binaryType = "arraybuffer";
  socket.accept();
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const conn: RawConnection = {
    socket,
    replies: [],
    texts: [],
    closed: undefined,
    send(frame) {
      socket.send(frame);
    },
    async repliesFor(id, count = 1, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const got = conn.replies.filter((r) => r[0] === id);
        if (got.length >= count || conn.closed || Date.now() > deadline) return got;
        await waitFor(waiters, Math.max(1, deadline - Date.now()));
      }
    },
    async reply(id, timeoutMs = 3000) {
      const [first] = await conn.repliesFor(id, 1, timeoutMs);
      if (!first) throw new Error(`no reply for id ${id} (closed: ${JSON.stringify(conn.closed)})`);
      return first;
    },
    async closedWithin(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (!conn.closed && Date.now() < deadline) await waitFor(waiters, Math.max(1, deadline - Date.now()));
      return conn.closed;
    },
    close() {
      try {
        socket.close(1000, "test done");
      } catch {
        // already closed
      }
    },
  };
  socket.addEventListener("message", (event) => {
    const data = event.data as string | ArrayBuffer;
    const text = typeof data === "string" ? data : new TextDecoder().decode(data);
    conn.texts.push(text);
    if (text.charCodeAt(0) === 0x1e && text.charCodeAt(1) === 0x52 /* R */) {
      // Text reply frames only: binary replies are recorded as text for the scan, not parsed.
      if (typeof data === "string") for (const r of JSON.parse(text.slice(2)) as Reply[]) conn.replies.push(r);
    }
    wake();
  });
  socket.addEventListener("close", (event) => {
    conn.closed ??= [event.code, event.reason];
    try {
      socket.close(); // complete the closing handshake
    } catch {
      // already closed
    }
    wake();
  });
  socket.addEventListener("error", () => {
    conn.closed ??= [1006, "error"];
    wake();
  });
  return conn;
}

function waitFor(waiters: Set<() => void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
  });
}

/** The test Worker's route for `binding` / `instance`, with an optional query. */
export function routeUrl(binding: string, instance: string, query = ""): string {
  return `http://x/__rpc/${binding}/${encodeURIComponent(instance)}${query}`;
}

/**
 * A dorpc client transport over `SELF.fetch` upgrades (the RpcTransport contract of
 * packages/rpc/src/transport.ts). `closes` records every close the client saw.
 */
export function upgradeTransport(url: string, headers: Record<string, string> = {}): TransportFactory & { closes: [number, string][] } {
  const closes: [number, string][] = [];
  const factory = (handler: TransportHandler): RpcTransport => {
    let socket: WebSocket | undefined;
    let done = false;
    const finish = (code: number, reason: string) => {
      if (done) return;
      done = true;
      closes.push([code, reason]);
      handler.onClose(code, reason);
    };
    return {
      async open() {
        let response: Response;
        try {
          response = await SELF.fetch(url, { headers: { ...headers, Upgrade: "websocket" } });
        } catch (error) {
          finish(1006, String(error));
          throw new RpcError("DISCONNECTED", `upgrade failed: ${String(error)}`);
        }
        const ws = response.webSocket;
        if (response.status !== 101 || !ws) {
          const body = await response.text().catch(() => "");
          finish(1006, `answered ${response.status}`);
          throw new RpcError("DISCONNECTED", `upgrade answered ${response.status}: ${body}`);
        }
        ws.binaryType = "arraybuffer";
        ws.accept();
        if (done) {
          ws.close(1000, "closed while opening");
          throw new RpcError("DISCONNECTED", "closed while opening");
        }
        socket = ws;
        ws.addEventListener("message", (event) => {
          if (!done) handler.onMessage(event.data as string | ArrayBuffer);
        });
        ws.addEventListener("close", (event) => finish(event.code, event.reason));
        ws.addEventListener("error", () => finish(1006, "WebSocket error"));
      },
      send(frame) {
        if (done || !socket) return;
        try {
          socket.send(frame);
        } catch (error) {
          finish(1006, `send failed: ${String(error)}`);
        }
      },
      close(code = 1000, reason = "") {
        if (done) return;
        try {
          socket?.close(code, reason);
        } catch {
          // already closing
        }
        finish(code, reason);
      },
    };
  };
  return Object.assign(factory, { closes });
}

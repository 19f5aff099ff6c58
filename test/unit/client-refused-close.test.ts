/**
 * A client that refuses a frame from the object closes that connection itself (docs/api.md: "The
 * client closes the connection itself when a frame from the object cannot be read"), over real
 * WebSockets against a `ws` server: Node 22's global WebSocket (undici) and the `ws` package's.
 * The server must see the close, with 4008 (unreadable) or 4009 (over the client's limits) and a
 * reason within the 123 bytes a close frame carries. Both implementations throw for 1008/1009 or
 * a longer reason, which left the refused socket open on both ends while the client reconnected.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, rpcConnection } from "../../packages/rpc/src/client.js";

interface PeerSocket {
  on(event: "message", listener: () => void): void;
  on(event: "close", listener: (code: number, reason: Buffer) => void): void;
  send(data: string): void;
  terminate(): void;
}
interface PeerServer {
  on(event: "connection", listener: (ws: PeerSocket) => void): void;
  once(event: "listening", listener: () => void): void;
  address(): unknown;
  close(): void;
  clients: Set<PeerSocket>;
}
const { WebSocketServer, WebSocket: WsWebSocket } = createRequire(import.meta.url)("ws") as {
  WebSocketServer: new (options: { port: number }) => PeerServer;
  WebSocket: unknown;
};

let server: PeerServer | undefined;
afterEach(() => {
  for (const ws of server?.clients ?? []) ws.terminate();
  server?.close();
  server = undefined;
});

interface ServerClose {
  connection: number;
  code: number;
  reason: Buffer;
}

/** A `ws` server that answers the first message of its first connection with `frame`. */
async function serverSending(frame: string) {
  const closes: ServerClose[] = [];
  let connections = 0;
  server = new WebSocketServer({ port: 0 });
  server.on("connection", (ws) => {
    const connection = ++connections;
    ws.on("close", (code, reason) => closes.push({ connection, code, reason }));
    let answered = false;
    ws.on("message", () => {
      if (connection === 1 && !answered) {
        answered = true;
        ws.send(frame);
      }
    });
  });
  await new Promise<void>((resolve) => server!.once("listening", () => resolve()));
  return { port: (server.address() as { port: number }).port, closes, connections: () => connections };
}

const notJson = `\u001eR{"${"世".repeat(18)}":${"世".repeat(30)}`;
const implementations: [string, unknown][] = [
  ["the global WebSocket", undefined],
  ["ws's WebSocket", WsWebSocket],
];
const frames: [string, number, string][] = [
  ["a frame of an unknown kind with no ids", 4008, "\u001eZ[]"],
  ["a reply frame whose body is not an array", 4008, "\u001eR{}"],
  ["a frame that is not JSON, whose parse error quotes non-ASCII text (a long reason, cut to 123 bytes)", 4008, notJson],
  ["a frame over limits.maxMessageBytes whose replies cannot be made out", 4009, `\u001eR${"x".repeat(2_000)}`],
];

describe.each(implementations)("over %s", (_implementation, WebSocketImpl) => {
  it.each(frames)("%s: the server sees the refused connection close with %i, and the client reconnects", async (_frame, code, frame) => {
    const peer = await serverSending(frame);
    const client = createRpcClient<{ ping(): number }>("B", "i", {
      baseUrl: `http://127.0.0.1:${peer.port}`,
      reconnect: { initialDelay: 1, maxDelay: 5, jitter: 0 },
      heartbeat: false,
      timeout: 60_000,
      limits: { maxMessageBytes: 1_000 },
      onError: () => {},
      ...(WebSocketImpl ? { WebSocket: WebSocketImpl as never } : {}),
    });
    try {
      void client.ping().catch(() => undefined);
      await vi.waitFor(
        () => {
          expect(
            peer.closes.filter((close) => close.connection === 1),
            "the refused connection is still open on the server",
          ).toHaveLength(1);
          expect(peer.connections(), "the client did not reconnect").toBeGreaterThanOrEqual(2);
        },
        { timeout: 10_000, interval: 20 },
      );
      const refused = peer.closes.find((close) => close.connection === 1)!;
      expect(refused.code).toBe(code);
      expect(refused.reason.byteLength).toBeGreaterThan(0);
      expect(refused.reason.byteLength).toBeLessThanOrEqual(123);
      expect(rpcConnection(client).state).not.toBe("disposed");
    } finally {
      client[Symbol.dispose]();
    }
  });
});

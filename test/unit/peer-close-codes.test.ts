/**
 * A close code in the application range received from the peer (an app's object, a proxy) is an
 * ordinary close: the client reconnects. (The client's own "used from another request" report is
 * local, code 0, and never confused with one.)
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { createRpcClient, rpcConnection } from "../../packages/rpc/src/client.js";

interface PeerSocket {
  once(event: "message", listener: () => void): void;
  close(code: number, reason: string): void;
}
interface PeerServer {
  on(event: "connection", listener: (ws: PeerSocket) => void): void;
  once(event: "listening", listener: () => void): void;
  address(): unknown;
  close(): void;
}
const { WebSocketServer } = createRequire(import.meta.url)("ws") as { WebSocketServer: new (options: { port: number }) => PeerServer };

let server: PeerServer | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

describe("close codes from the network", () => {
  it("a socket the server closes with 4002 (any application code) is reconnected, not disposed", async () => {
    let connections = 0;
    server = new WebSocketServer({ port: 0 });
    server.on("connection", (ws) => {
      connections++;
      // First connection: the app closes it with its own code (4000–4999 is the application range).
      if (connections === 1) ws.once("message", () => ws.close(4002, "kicked by the app"));
    });
    await new Promise<void>((resolve) => server!.once("listening", () => resolve()));
    const port = (server.address() as { port: number }).port;
    const client = createRpcClient<{ ping(): number }>("B", "i", {
      baseUrl: `http://127.0.0.1:${port}`,
      reconnect: { initialDelay: 1, maxDelay: 5, jitter: 0 },
      heartbeat: false,
      timeout: 60_000,
    });
    const states: string[] = [];
    rpcConnection(client).onStateChange((s) => states.push(s));
    void client.ping().catch(() => undefined);
    for (let i = 0; i < 200 && connections < 2 && rpcConnection(client).state !== "disposed"; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const state = rpcConnection(client).state;
    client[Symbol.dispose]();
    expect({ state, connections, states }).toMatchObject({ connections: 2 });
    expect(state).not.toBe("disposed");
  });
});

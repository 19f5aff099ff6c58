/**
 * A TCP proxy in front of `wrangler dev` whose connections a test can cut, as a network that
 * drops: a page loaded through it really loses its sockets (Chromium sees the TCP connection
 * close), unlike DevTools' offline emulation, which leaves open WebSockets untouched. While
 * `down`, new connections are closed as soon as they arrive, so the page's reconnect attempts
 * fail until the test brings the network back.
 */
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";

export interface CuttableProxy {
  /** `http://127.0.0.1:PORT`: load the page from here. */
  readonly baseUrl: string;
  /** Closes every connection through the proxy and refuses new ones until `restore()`. */
  cut(): void;
  /** Accepts connections again. */
  restore(): void;
  /** Connections cut so far (each a page's socket or an HTTP keep-alive connection). */
  readonly cuts: number;
  close(): Promise<void>;
}

export async function startCuttableProxy(targetPort: number): Promise<CuttableProxy> {
  const live = new Set<Socket>();
  let down = false;
  let cuts = 0;
  const server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, "127.0.0.1");
    live.add(client);
    live.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    cut() {
      down = true;
      for (const socket of live) {
        cuts++;
        socket.destroy();
      }
      live.clear();
    },
    restore() {
      down = false;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      for (const socket of live) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

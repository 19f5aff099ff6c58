/**
 * A Node program using the client, in a real child process (Node 22, the built package in
 * packages/rpc/dist), against a tiny dorpc peer on the `ws` package's server that speaks just
 * enough of docs/protocol.md (hello, calls, replies, pings, `subscribe`). `dropLater()` is
 * answered, then the peer cuts that TCP connection (once), as a network blip or a `wrangler dev`
 * restart does. For node-process.test.ts.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { framesOf } from "./frames.js";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
const NODE = join(ROOT, "node_modules/.bin/node"); // Node 22 (the repo's `node` devDependency)
const DIST = pathToFileURL(join(ROOT, "packages/rpc/dist/index.js")).href;

export interface WsLike {
  send(data: string): void;
  terminate(): void;
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): void;
}
const { WebSocketServer } = createRequire(import.meta.url)("ws") as {
  WebSocketServer: new (options: {
    server: Server;
  }) => {
    on(event: "connection", listener: (ws: WsLike) => void): void;
    clients: Set<WsLike>;
    close(): void;
  };
};

export const MARK = "\u001e";

export interface Peer {
  port: number;
  /** What the peer received, per connection (1-based), as text frames. */
  frames: string[][];
  close(): void;
}

/**
 * A minimal dorpc peer. `onFrame(ws, connection, frame)` runs after the built-in handling, so a
 * test can push notifications (events, broadcasts) on a given connection.
 */
export async function startPeer(onFrame?: (ws: WsLike, connection: number, frame: string) => void): Promise<Peer> {
  const http = createServer((_req, res) => {
    res.statusCode = 426;
    res.end("upgrade required");
  });
  const wss = new WebSocketServer({ server: http });
  const frames: string[][] = [];
  let dropped = false;
  wss.on("connection", (ws) => {
    const connection = frames.push([]);
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      // A Hello comes in the message of the frame after it (Outbox.lead): each frame on its own.
      for (const text of framesOf(data.toString("utf8"))) onText(ws, connection, text);
    });
  });
  const onText = (ws: WsLike, connection: number, text: string) => {
    frames[connection - 1]!.push(text);
    if (text === `${MARK}P`) ws.send(`${MARK}Q`);
    if (text.startsWith(`${MARK}C`)) {
      const replies: unknown[] = [];
      for (const [id, chain, , flags] of JSON.parse(text.slice(2)) as [number, unknown[], number?, number?][]) {
        const args = Array.isArray(chain[1]) ? (chain[1] as unknown[]).slice(1) : [];
        if ((flags ?? 0) & 2)
          replies.push([id, 0, { seq: 0 }]); // subscribe / unsubscribe
        else if (chain[0] === "dropLater") {
          replies.push([id]);
          if (!dropped) {
            dropped = true;
            setTimeout(() => ws.terminate(), 50); // cut the TCP connection: code 1006 on the client
          }
        } else replies.push([id, 0, args[0] ?? null]); // echo
      }
      ws.send(`${MARK}R${JSON.stringify(replies)}`);
    }
    onFrame?.(ws, connection, text);
  };
  await new Promise<void>((done) => http.listen(0, "127.0.0.1", () => done()));
  const port = (http.address() as { port: number }).port;
  return {
    port,
    frames,
    close() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      http.close();
      http.closeAllConnections();
    },
  };
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The child had not exited by the deadline and was killed. */
  killed: boolean;
}

/** Runs `source` as an ES module in a child Node 22 with PORT set; kills it after `deadlineMs`. */
export function runScript(source: string, port: number, deadlineMs = 15_000): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "dorpc-node-"));
  const file = join(dir, "script.mjs");
  writeFileSync(file, source.replaceAll("@DIST@", DIST));
  return new Promise((done) => {
    const child = spawn(NODE, [file], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed = false;
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, deadlineMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, killed });
    });
  });
}

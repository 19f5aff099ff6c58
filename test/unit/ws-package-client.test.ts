/**
 * The `ws` package's WebSocket as `options.WebSocket`, which docs/getting-started.md ("In Node ≥
 * 22", last paragraph) and docs/api.md (`WebSocketConstructor`) offer a runtime without a global
 * WebSocket: a Node 22 child process with its global WebSocket removed (as on Node 20 without
 * --experimental-websocket) runs the built client with `ws` against a small dorpc peer
 * (support/node-peer.ts). Calls answer, a dropped connection reconnects, the process exits once
 * the client is disposed, and a port where nothing listens fails the call with CONNECT_FAILED.
 */
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type Peer, runScript, startPeer } from "../support/node-peer.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
const WS = pathToFileURL(join(ROOT, "node_modules/ws/wrapper.mjs")).href;

/** The start of every script: the built client and `ws`, and no global WebSocket. */
const HEADER = `
import { createRpcClient, rpcConnection } from "@DIST@";
import { WebSocket } from "${WS}";
delete globalThis.WebSocket;
`;

let peer: Peer | undefined;
afterEach(() => {
  peer?.close();
  peer = undefined;
});

describe("the ws package's WebSocket as options.WebSocket, with no global WebSocket", () => {
  it("calls answer, a dropped connection reconnects, and the process exits once the client is disposed", async () => {
    peer = await startPeer();
    const run = await runScript(
      `${HEADER}
const c = createRpcClient("ROOM", "r1", {
  baseUrl: "http://127.0.0.1:" + process.env.PORT,
  WebSocket,
  reconnect: { initialDelay: 50, maxDelay: 50, jitter: 0 },
});
const reconnecting = new Promise((ok) => {
  const off = rpcConnection(c).onStateChange((state) => state === "reconnecting" && (off(), ok()));
});
console.log("echo", await c.echo(9));
await c.dropLater(); // the peer cuts this connection right after answering
await reconnecting;
console.log("after drop", await c.echo(10), rpcConnection(c).state);
c[Symbol.dispose]();
`,
      peer.port,
    );
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain("echo 9");
    expect(run.stdout).toContain("after drop 10 open");
    expect(peer.frames.length, "connections the peer saw").toBe(2);
    expect(
      peer.frames[1]!.some((frame) => frame.startsWith("\u001eC") && frame.includes("echo")),
      "echo(10) went on the new connection",
    ).toBe(true);
    expect(run.killed, "the process had not exited by the deadline").toBe(false);
    expect(run.code).toBe(0);
  }, 30_000);

  it("a port where nothing listens: the call fails with CONNECT_FAILED, not by a timeout", async () => {
    peer = await startPeer();
    const port = peer.port;
    peer.close();
    peer = undefined;
    // No call timeout and a connect timeout beyond the run's deadline: only the failed
    // connection itself can end the call before the child is killed.
    const run = await runScript(
      `${HEADER}
const c = createRpcClient("ROOM", "r1", { baseUrl: "http://127.0.0.1:" + process.env.PORT, WebSocket, timeout: 0, connectTimeout: 600000 });
const e = await c.echo(1).catch((e) => e);
console.log(e.code);
console.log(e.message);
c[Symbol.dispose]();
`,
      port,
    );
    expect(run.killed, "the call was still waiting when the child was killed").toBe(false);
    const [code, message] = run.stdout.split("\n");
    expect(code).toBe("CONNECT_FAILED");
    expect(message).toContain(`Could not connect to ws://127.0.0.1:${port}/__rpc/ROOM/r1`);
    expect(message).toContain(`Nothing answered at http://127.0.0.1:${port}`);
    expect(run.code).toBe(0);
  }, 30_000);
});

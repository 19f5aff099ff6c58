/**
 * A Node program's lifetime and errors across what the client goes through (node-peer.ts runs
 * the program in a child process against a tiny peer): during the reconnect backoff the process
 * stays alive for what it waits on (waitForOpen, a subscription, an exposed object, calls), and
 * an onError that throws does not cut short the frame being read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MARK, type Peer, runScript, startPeer } from "../support/node-peer.js";

let peer: Peer | undefined;
afterEach(() => {
  peer?.close();
  peer = undefined;
});

const HEADER = `
import { createRpcClient, rpcConnection, subscribe } from "@DIST@";
process.on("exit", (code) => console.log("exit", code));
const client = (extra = {}) => createRpcClient("ROOM", "r1", {
  baseUrl: "http://127.0.0.1:" + process.env.PORT,
  reconnect: { initialDelay: 300, maxDelay: 300, jitter: 0 },
  ...extra,
});
/** Resolves when the client's state becomes \`state\`. */
const reaches = (c, state) => new Promise((ok) => { const off = rpcConnection(c).onStateChange((s) => { if (s === state) { off(); ok(); } }); });
`;

describe("the process stays alive for what it waits on across a reconnect", () => {
  it("await rpcConnection(client).waitForOpen() while reconnecting resolves; the process does not exit with an unsettled top-level await", async () => {
    // waitForOpen "Resolves when the connection is open" (api.md): the process must not end
    // (exit code 13, an unsettled top-level await) while the client reconnects for it.
    peer = await startPeer();
    const run = await runScript(
      `${HEADER}
const c = client();
const reconnecting = reaches(c, "reconnecting");
await c.dropLater();
await reconnecting;
console.log("reconnecting; waiting for the connection to open again");
await rpcConnection(c).waitForOpen();
console.log("open again:", await c.echo(9));
rpcConnection(c).close();
`,
      peer.port,
    );
    expect(run.killed).toBe(false);
    expect(run.stderr).not.toContain("unsettled top-level await");
    expect(run.stdout).toContain("open again: 9");
    expect(run.code).toBe(0);
  }, 30_000);

  it("a subscribed client whose connection drops reconnects, subscribes again and receives the next event", async () => {
    // A listener with nothing pending but its subscription: across a dropped connection the
    // client subscribes again and delivers the next event (it exited during the backoff).
    peer = await startPeer((ws, connection, frame) => {
      // On the second connection, once the client has subscribed again, publish event 1.
      if (connection === 2 && frame.includes('"subscribe"')) {
        ws.send(`${MARK}C${JSON.stringify([[0, ["event", [0, "chat", 1, "hello after the blip"]], 0, 2]])}`);
      }
    });
    const run = await runScript(
      `${HEADER}
const c = client();
const sub = subscribe(c, "chat", (event) => {
  console.log("event:", event);
  rpcConnection(c).close();
});
await sub.ready;
console.log("subscribed");
await c.dropLater(); // the peer cuts this connection 50 ms later
`,
      peer.port,
    );
    expect(run.killed).toBe(false);
    expect(peer.frames.length).toBe(2); // it reconnected
    expect(run.stdout).toContain("event: hello after the blip");
  }, 30_000);

  it("a client that exposes methods and waits for the object's calls is still there after a dropped connection", async () => {
    // A process that only serves the object's calls survives a dropped connection (it exited
    // during the first backoff).
    peer = await startPeer((ws, connection, frame) => {
      // On the second connection, right after its hello, the object broadcasts to the client.
      if (connection === 2 && frame.startsWith(`${MARK}H`)) {
        ws.send(`${MARK}C${JSON.stringify([[0, ["hello", [0, "again"]]]])}`);
      }
    });
    const run = await runScript(
      `${HEADER}
const c = client({
  expose: {
    hello(who) {
      console.log("object said hello", who);
      rpcConnection(c).close();
    },
  },
});
await c.dropLater(); // opens the connection; the peer cuts it 50 ms later
console.log("serving the object's calls");
`,
      peer.port,
    );
    expect(run.killed).toBe(false);
    expect(peer.frames.length).toBe(2); // it reconnected
    expect(run.stdout).toContain("object said hello again");
  }, 30_000);
});

describe("a throwing onError does not lose other messages of the same frame", () => {
  it("the object's call that shares a frame with a failed broadcast is still answered when onError throws", async () => {
    // onError hears of "an exposed method that threw while handling a broadcast" (api.md). Its
    // own throw once escaped the loop reading the frame, dropping every later envelope: the
    // object's call 5 was never run nor answered.
    peer = await startPeer((ws, _connection, frame) => {
      if (frame.includes('"trigger"')) {
        // One frame from the object: a broadcast to `bad` (throws), then a call to `answer`.
        ws.send(
          `${MARK}C${JSON.stringify([
            [0, ["bad", [0]]],
            [5, ["answer", [0, 41]]],
          ])}`,
        );
      }
    });
    const run = await runScript(
      `
import { createRpcClient, rpcConnection } from "@DIST@";
process.on("uncaughtException", (error) => console.log("uncaught:", error.message));
const c = createRpcClient("ROOM", "r1", {
  baseUrl: "http://127.0.0.1:" + process.env.PORT,
  onError(error, what) {
    console.log("onError:", what);
    throw new Error("the app's onError failed too");
  },
  expose: {
    bad() { throw new Error("broadcast handler failed"); },
    answer(x) {
      console.log("answer ran");
      setTimeout(() => rpcConnection(c).close(), 50); // after the answer left
      return x + 1;
    },
  },
});
await c.trigger();
`,
      peer.port,
    );
    expect(run.killed).toBe(false);
    const received = peer.frames.flat();
    expect(run.stdout).toContain("answer ran");
    expect(received).toContain(`${MARK}R[[5,0,42]]`);
  }, 30_000);
});

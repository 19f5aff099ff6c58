/**
 * The Durable Object adapters wired into a class next to the user's own code. On a socket of
 * `withRpc(PlainBase)`, messages without the dorpc mark are PlainBase's (text or binary) while
 * marked ones are dorpc's, a malformed one closing the socket 1008; on RpcDurableObject with
 * `hibernation: false` an unmarked message closes 1003. On fetch, the RPC path is dorpc's for
 * every method and any other path is the class's. The members the adapters add (the base
 * class's helpers, withRpc's handlers) are not reachable over RPC.
 * (composition.test.ts has the main cases of withRpc and hand composition.)
 */
import { createTestClient, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { rpcFailure, uniqueName } from "./helpers.js";
import type { Counter, PlainBase } from "./objects.js";

/** A client without its static types, to call members the types do not have. */
type Loose = Record<string, () => Promise<unknown>>;

/** `code: reason` of the socket's close, or "still open" if it is not closed within `ms`. */
function closeOf(ws: WebSocket, ms = 5_000): Promise<string> {
  const closed = new Promise<string>((resolve) => ws.addEventListener("close", (e) => resolve(`${e.code}: ${e.reason}`)));
  const open = new Promise<string>((resolve) => setTimeout(() => resolve(`still open after ${ms} ms`), ms));
  return Promise.race([closed, open]);
}

/** A socket to WRAPPED/`name` accepted by dorpc, without a dorpc client on it. */
async function rawSocket(name: string): Promise<WebSocket> {
  const response = await env.WRAPPED.getByName(name).fetch(`http://x/__rpc/wrapped/${name}`, { headers: { Upgrade: "websocket" } });
  expect(response.status).toBe(101);
  const ws = response.webSocket!;
  ws.accept();
  return ws;
}

describe("withRpc(PlainBase): PlainBase's messages and dorpc's on one socket", () => {
  it("text and binary messages without the mark reach PlainBase in order, and dorpc calls answer in between", async () => {
    using client = createTestClient<PlainBase>(env.WRAPPED, uniqueName("wired-mixed"));
    expect(await client.greet("a")).toBe("hello, a");
    const socket = testConnection(client).socket!;
    const seen: string[] = [];
    socket.addEventListener("message", (e) => {
      if (typeof e.data === "string" && !e.data.startsWith("\u001e")) seen.push(e.data);
    });
    socket.send("ping");
    socket.send(new Uint8Array([1, 2, 3]));
    expect(await client.greet("b")).toBe("hello, b");
    socket.send(new Uint8Array([0x1f, 0x43]).buffer); // one byte past the mark
    expect(await client.bump()).toBe(1);
    await vi.waitFor(() => expect(seen).toEqual(["pong", "PlainBase got 3 bytes", "PlainBase got 2 bytes"]));
    expect(testConnection(client).attempts).toHaveLength(1);
  });

  it.each([
    ["a text call frame that is not JSON", "\u001eCnot json at all", "1008: Frame is not valid JSON"],
    [
      "a binary frame shorter than its fixed header",
      new Uint8Array([0x1e, 0x43, 0, 0, 9, 9, 9, 9]).buffer,
      "1008: Binary frame is shorter than its fixed header",
    ],
  ])("%s closes the socket 1008 (it is dorpc's, not PlainBase's); the client reconnects and goes on", async (_label, frame, close) => {
    using client = createTestClient<PlainBase>(env.WRAPPED, uniqueName("wired-garbage"));
    expect(await client.greet("a")).toBe("hello, a");
    const socket = testConnection(client).socket!;
    const closed = closeOf(socket);
    socket.send(frame);
    expect(await closed).toContain(close);
    expect(await client.greet("b")).toBe("hello, b");
    expect(testConnection(client).attempts).toHaveLength(2);
  });

  it.each([
    ["the mark alone", "\u001e", "1008: Frame is not valid JSON"],
    ["the mark and a kind dorpc does not know", "\u001eZ[]", "1008: dorpc: unknown frame kind 90."],
  ])("%s closes the socket 1008 and is answered by neither dorpc nor PlainBase", async (_label, message, close) => {
    const ws = await rawSocket(uniqueName("wired-mark"));
    const answers: string[] = [];
    ws.addEventListener("message", (e) => answers.push(String(e.data)));
    const closed = closeOf(ws);
    ws.send(message);
    expect({ closed: await closed, answers }).toEqual({ closed: expect.stringContaining(close), answers: [] });
  });
});

describe("RpcDurableObject with hibernation: false (LIVE_COUNTER)", () => {
  it("a text message without the mark closes the socket 1003; the client reconnects and the next call works", async () => {
    using client = createTestClient<Counter>(env.LIVE_COUNTER, uniqueName("wired-live"));
    expect(await client.increment(1)).toBe(1);
    const closed = closeOf(testConnection(client).socket!);
    testConnection(client).socket!.send("hello there");
    expect(await closed).toMatch(/^1003: /);
    expect(await client.increment(1)).toBe(2);
  });
});

describe("fetch: the RPC path is dorpc's for every method, other paths the class's", () => {
  it("withRpc(PlainBase): PUT to the RPC path is dorpc's 405, a POST batch runs, a path outside the prefix reaches PlainBase", async () => {
    const name = uniqueName("wired-routes");
    const stub = env.WRAPPED.getByName(name);
    const put = await stub.fetch(`http://x/__rpc/wrapped/${name}`, { method: "PUT" });
    expect(put.status).toBe(405);
    expect(await put.json()).toEqual({ error: { code: "PROTOCOL", message: expect.stringContaining("not PUT") } });
    const post = await stub.fetch(`http://x/__rpc/wrapped/${name}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ method: "greet", args: ["zed"] }),
    });
    expect({ status: post.status, body: await post.json() }).toEqual({ status: 200, body: { result: "hello, zed" } });
    const elsewhere = await stub.fetch("http://x/something/hello");
    expect(await elsewhere.text()).toBe("hello from PlainBase at /something/hello");
  });

  it("RpcDurableObject: HEAD to the RPC path is 426 like GET, without a body; a path outside the prefix is 404", async () => {
    const name = uniqueName("wired-routes-c");
    const stub = env.COUNTER.getByName(name);
    const head = await stub.fetch(`http://x/__rpc/counter/${name}`, { method: "HEAD" });
    expect(head.status).toBe(426);
    expect(await head.text()).toBe("");
    const elsewhere = await stub.fetch("http://x/elsewhere");
    expect(elsewhere.status).toBe(404);
    await elsewhere.text();
  });
});

describe("members the adapters add are not reachable over RPC", () => {
  it("RpcDurableObject's clients, client and publish helpers and its topics field are NOT_FOUND; the subclass's methods answer", async () => {
    using typed = createTestClient<Counter>(env.COUNTER, uniqueName("wired-helpers"));
    const client = typed as unknown as Loose;
    for (const name of ["clients", "client", "publish", "__dorpcTopics"]) {
      const error = await rpcFailure(client[name]!(), "NOT_FOUND");
      expect(error.message).toContain(name);
    }
    expect(await typed.className()).toBe("Counter");
  });

  it("withRpc's webSocketError (added even where Base has none) is NOT_FOUND; PlainBase's methods answer", async () => {
    using typed = createTestClient<PlainBase>(env.WRAPPED, uniqueName("wired-handlers"));
    await rpcFailure((typed as unknown as Loose).webSocketError!(), "NOT_FOUND");
    expect(await typed.greet("x")).toBe("hello, x");
  });
});

/**
 * The two other ways to serve dorpc, in workerd: `withRpc(PlainBase)` and a Durable Object that
 * calls `handleRpcRequest` / `handleRpcMessage` itself. RPC works, and the object's own fetch and
 * webSocketMessage still get everything that is not dorpc's, on the same route and socket.
 */
import { rpcConnection } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createTestClient, testConnection } from "@dorpc/testing";
import { nextMessage, rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter, Manual, PlainBase } from "./objects.js";

// biome-ignore lint/suspicious/noExplicitAny: the tests build chains the types forbid
type Loose = any;

const cases = [
  { binding: "WRAPPED", how: "withRpc(PlainBase)", pong: "pong", fetchBody: "hello from PlainBase at", failure: "wrapped failure" },
  {
    binding: "MANUAL",
    how: "handleRpcRequest/handleRpcMessage by hand",
    pong: "manual-pong",
    fetchBody: "Manual fetch:",
    failure: "manual failure",
  },
] as const;

for (const { binding, how, pong, fetchBody, failure } of cases) {
  describe(`${how} (${binding})`, () => {
    const namespace = () => (binding === "WRAPPED" ? env.WRAPPED : env.MANUAL) as unknown as DurableObjectNamespace;

    it("public methods are callable over RPC and their storage effects persist", async () => {
      const name = uniqueName(binding);
      using client = createTestClient<PlainBase | Manual>(namespace(), name);
      expect(await client.greet("Ada")).toMatch(/hello, Ada$/);
      expect(await client.bump()).toBe(1);
      expect(await client.bump()).toBe(2);
      const stored = await runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.kv.get("n"));
      expect(stored).toBe(2);
    });

    it("a thrown error keeps its type, message and stack (exposeErrorStack)", async () => {
      using client = createTestClient<PlainBase | Manual>(namespace(), uniqueName(binding));
      const error = (await rejection(client.fail())) as Error;
      expect(error).toBeInstanceOf(RangeError);
      expect(error.message).toBe(failure);
      expect(error.stack).toContain("fail");
    });

    it("ctx, env, fetch and webSocketMessage are NOT_FOUND", async () => {
      using typed = createTestClient<PlainBase | Manual>(namespace(), uniqueName(binding));
      const client = typed as unknown as Loose;
      await rpcFailure(client.ctx.storage.deleteAll(), "NOT_FOUND");
      await rpcFailure(client.env.SECRET, "NOT_FOUND");
      await rpcFailure(client.fetch("http://x/"), "NOT_FOUND");
      await rpcFailure(client.webSocketMessage(null, "ping"), "NOT_FOUND");
      await rpcFailure(client.webSocketClose(null, 1000, "", true), "NOT_FOUND");
      await rpcFailure(client.constructor, "NOT_FOUND");
    });

    it("the object's own fetch answers a plain request routed under its instance path", async () => {
      const response = await SELF.fetch(`http://x/__rpc/${binding}/x/hello`);
      expect(response.status).toBe(200);
      const body = await response.text();
      expect(body).toContain(fetchBody);
      expect(body).toContain(`/__rpc/${binding}/x/hello`);
    });

    it("a plain request to the RPC path itself gets 426 Upgrade Required from handleRpcRequest", async () => {
      const response = await SELF.fetch(`http://x/__rpc/${binding}/x`);
      expect(response.status).toBe(426);
      expect(response.headers.get("Upgrade")).toBe("websocket");
      expect(await response.text()).toContain("dorpc endpoint");
    });

    it("the object's own webSocketMessage answers non-dorpc text on the RPC socket, which stays usable", async () => {
      using client = createTestClient<PlainBase | Manual>(namespace(), uniqueName(binding));
      expect(await client.bump()).toBe(1);
      const socket = testConnection(client).attempts[0]!.socket!;
      const answer = nextMessage(socket, (data) => !data.startsWith("\u001e"));
      socket.send("ping");
      expect(await answer).toBe(pong);
      expect(await client.bump()).toBe(2);
      expect(testConnection(client).attempts).toHaveLength(1);
      expect(rpcConnection(client).state).toBe("open");
    });
  });
}

describe("RpcDurableObject (COUNTER) with a non-dorpc message", () => {
  it("closes the socket with 1003, and the client reconnects for its next call", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("not-dorpc"));
    expect(await client.increment()).toBe(1);
    testConnection(client).attempts[0]!.socket!.send("ping");
    await vi.waitFor(() => expect(testConnection(client).attempts[0]!.closed?.code).toBe(1003));
    expect(testConnection(client).attempts[0]!.closed?.reason).toContain("not a dorpc frame");
    expect(await client.increment()).toBe(2);
    expect(testConnection(client).attempts).toHaveLength(2);
  });
});

describe("heartbeat auto-response", () => {
  it("the runtime answers the dorpc heartbeat ping on an RPC socket", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("heartbeat"));
    await client.getValue();
    const socket = testConnection(client).attempts[0]!.socket!;
    const answer = nextMessage(socket, (data) => data === "\u001eQ");
    socket.send("\u001eP");
    expect(await answer).toBe("\u001eQ");
    expect(await client.increment()).toBe(1);
  });
});

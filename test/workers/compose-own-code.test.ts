/**
 * dorpc composed with the object's own code: the options of hand-composed objects and of
 * subclasses of withRpc's class as rpcClient / rpcPublish see them from entry points that are not
 * dorpc messages; withRpc and webSocketError; the class's own sockets; withRpc with
 * `hibernation: false` and the class's own handlers.
 */
import { createTestClient, evictObject, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { nextMessage, rpcFailure, uniqueName } from "./helpers.js";

type Greeter = { greet(name: string): string; secret(): string; publishNews(text: string): string };

for (const binding of ["HAND_COMPOSED", "SUBCLASS_OF_WRAPPED", "SUBCLASS_WITH_STATIC"] as const) {
  describe(`options known outside dorpc messages (${binding})`, () => {
    it("rpcPublish on a declared topic from a Workers RPC method of a fresh instance publishes (seq 1)", async () => {
      expect(await env[binding].getByName(uniqueName(binding)).publishNews("first")).toBe("1");
    });

    it("access.allow still refuses a method after the evicted object took rpcClient(this, ws) from a Workers RPC method", async () => {
      const name = uniqueName(binding);
      using client = createTestClient<Greeter>(env[binding], name);
      expect(await client.greet("a")).toBe("hello, a");
      await rpcFailure(client.secret(), "NOT_FOUND");
      await evictObject(client);
      expect(await env[binding].getByName(name).touchClients()).toBe("1");
      await rpcFailure(client.secret(), "NOT_FOUND");
    });
  });
}

describe("a hand-composed object whose class declares no options", () => {
  it("rpcPublish and rpcClient outside a dorpc message of the instance fail with BAD_OPTION saying to declare them", async () => {
    const stub = env.HAND_UNDECLARED.getByName(uniqueName("undeclared"));
    expect(await stub.publishNews("x")).toMatch(
      /^BAD_OPTION: rpcPublish\(\) cannot tell how HandUndeclared serves dorpc.*static rpcOptions/,
    );
  });

  it("after a dorpc message of the instance, they use the options it was served with; after an eviction they fail again, never with the defaults", async () => {
    const name = uniqueName("undeclared");
    using client = createTestClient<Greeter>(env.HAND_UNDECLARED, name);
    expect(await client.greet("a")).toBe("hello, a");
    expect(await env.HAND_UNDECLARED.getByName(name).publishNews("x")).toBe("1");
    await evictObject(client);
    expect(await env.HAND_UNDECLARED.getByName(name).touchClients()).toMatch(/^BAD_OPTION: rpcClient\(\)/);
    await rpcFailure(client.secret(), "NOT_FOUND");
  });
});

describe("class Sub extends withRpc(Base, { topics })", () => {
  it("a deleteAll() before any dorpc message of the instance does not restart the topic's sequence numbers", async () => {
    const name = uniqueName("sub-wipe");
    using client = createTestClient<Greeter>(env.SUBCLASS_OF_WRAPPED, name);
    expect(await client.publishNews("a")).toBe("1");
    expect(await client.publishNews("b")).toBe("2");
    await evictObject(client);
    await env.SUBCLASS_OF_WRAPPED.getByName(name).wipe();
    expect(await client.publishNews("c")).toBe("3");
  });
});

describe("withRpc and webSocketError", () => {
  it("a socket error reported to a withRpc class whose Base has webSocketError ends dorpc's connection, then Base hears of it", async () => {
    const name = uniqueName("err-wrapped");
    using client = createTestClient<{ greet(n: string): string }>(env.ERROR_HANDLING_WRAPPED, name);
    expect(await client.greet("a")).toBe("hello, a");
    const stub = env.ERROR_HANDLING_WRAPPED.getByName(name);
    expect((await stub.infos())[0]).not.toBeNull();
    expect(await stub.raiseErrors()).toBe("raised");
    expect(await stub.infos()).toEqual([null]);
    expect(await stub.errorCount()).toBe(1);
  });

  it("withRpc's class has a webSocketError handler even when Base has none", async () => {
    expect(await env.NO_ERROR_HANDLER_WRAPPED.getByName(uniqueName("noerr")).hasWebSocketError()).toBe(true);
  });
});

describe("withRpc and the class's own sockets", () => {
  it("a message starting with 0x1E (RFC 7464) on a socket dorpc never accepted reaches Base's webSocketMessage", async () => {
    const response = await env.OWN_SOCKETS_WRAPPED.getByName(uniqueName("seq")).fetch("http://x/own", {
      headers: { Upgrade: "websocket" },
    });
    const ws = response.webSocket!;
    ws.accept();
    const closed = new Promise<string>((resolve) => ws.addEventListener("close", (e) => resolve(`closed ${e.code}: ${e.reason}`)));
    const answer = nextMessage(ws, (d) => d.startsWith("base got"));
    ws.send('\u001e{"a":1}\n');
    expect(await Promise.race([answer, closed])).toBe(`base got ${JSON.stringify('\u001e{"a":1}\n')}`);
    ws.close();
  });
});

describe("withRpc(Base, { hibernation: false })", () => {
  type Live = { greet(n: string): string; closeCodes(): number[] };

  it("a message that is not dorpc's reaches Base's webSocketMessage (the socket is not closed 1003)", async () => {
    using client = createTestClient<Live>(env.LIVE_WRAPPED, uniqueName("live"));
    expect(await client.greet("a")).toBe("hello, a");
    const socket = testConnection(client).attempts[0]!.socket!;
    const closed = new Promise<string>((resolve) => socket.addEventListener("close", (e) => resolve(`closed ${e.code}: ${e.reason}`)));
    const answer = nextMessage(socket, (d) => !d.startsWith("\u001e"));
    socket.send("hi");
    expect(await Promise.race([answer, closed])).toBe("live base got hi");
    expect(await client.greet("b")).toBe("hello, b");
  });

  it("when a client closes its socket, Base's webSocketClose hears of it", async () => {
    const name = uniqueName("live-close");
    const other = createTestClient<Live>(env.LIVE_WRAPPED, name);
    expect(await other.greet("a")).toBe("hello, a");
    other[Symbol.dispose]();
    using client = createTestClient<Live>(env.LIVE_WRAPPED, name);
    await vi.waitFor(async () => expect(await client.closeCodes()).toEqual([4002]), { timeout: 5000 });
  });
});

/**
 * Client disposal and Durable Object hibernation in workerd.
 */
import { rpcConnection, type RpcClient } from "@dorpc/rpc";
import { createTestClient, evictObject, readStorage, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { nextMessage, rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

describe("dispose", () => {
  it("after client[Symbol.dispose]() every call rejects with DISPOSED, without reconnecting", async () => {
    const client = createTestClient<Counter>(env.COUNTER, uniqueName("dispose"));
    expect(await client.increment()).toBe(1);
    client[Symbol.dispose]();
    expect(rpcConnection(client).state).toBe("disposed");
    await rpcFailure(client.increment(), "DISPOSED");
    await rpcFailure(client.config.limits.max, "DISPOSED");
    await rpcFailure(client.users.get("a"), "DISPOSED");
    expect(testConnection(client).attempts).toHaveLength(1);
    expect(testConnection(client).attempts[0]!.closed?.code).toBe(4002);
    client[Symbol.dispose](); // idempotent
  });

  it("a call waiting for its reply when the client is disposed rejects with DISPOSED", async () => {
    const client = createTestClient<Counter>(env.COUNTER, uniqueName("dispose-pending"));
    await client.getValue();
    const slow = client.addLater(1, 2, 200);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the call is on the wire
    client[Symbol.dispose]();
    await rpcFailure(slow, "DISPOSED");
  });

  it("disposing closes the server end: the object's socket count drops", async () => {
    const name = uniqueName("dispose-server");
    const first = createTestClient<Counter>(env.COUNTER, name);
    await first.getValue();
    using second = createTestClient<Counter>(env.COUNTER, name);
    expect(await second.socketCount()).toBe(2);
    first[Symbol.dispose]();
    await vi.waitFor(async () => expect(await second.socketCount()).toBe(1), { timeout: 3000, interval: 20 });
  });

  it("await using disposes the client at the end of the block", async () => {
    const name = uniqueName("await-using");
    let escaped: RpcClient<Counter> | undefined;
    {
      await using client = createTestClient<Counter>(env.COUNTER, name);
      expect(await client.increment(2)).toBe(2);
      escaped = client;
    }
    expect(rpcConnection(escaped).state).toBe("disposed");
    await rpcFailure(escaped.getValue(), "DISPOSED");
  });

  it("using (sync) disposes the client at the end of the block", async () => {
    const name = uniqueName("using");
    let escaped: RpcClient<Counter> | undefined;
    {
      using client = createTestClient<Counter>(env.COUNTER, name);
      expect(await client.increment(2)).toBe(2);
      escaped = client;
    }
    await rpcFailure(escaped.getValue(), "DISPOSED");
  });
});

describe("hibernation (evictObject)", () => {
  it("after eviction with hibernated sockets the same client's next call works on the same socket and storage is intact", async () => {
    const name = uniqueName("hibernate");
    using client = createTestClient<Counter>(env.COUNTER, name);
    expect(await client.increment(3)).toBe(3);
    const before = await client.whoami();

    await evictObject(client);

    expect(await client.increment(4)).toBe(7);
    expect(await client.whoami()).not.toBe(before); // a new instance answered
    expect(await client.getValue()).toBe(7);
    expect(await client.config.limits.max).toBe(10);
    expect(await client.users.get("b")).toMatchObject({ name: "Bob" });
    expect(testConnection(client).attempts).toHaveLength(1); // no reconnect: the socket survived
    expect(testConnection(client).attempts[0]!.closed).toBeUndefined();
    expect(await client.socketCount()).toBe(1);
    const stored = await readStorage(client, "count");
    expect(stored).toBe(7);
  });

  it("a hibernated socket's errors and rich values still round-trip after eviction", async () => {
    const name = uniqueName("hibernate-rich");
    using client = createTestClient<Counter>(env.COUNTER, name);
    await client.getValue();
    await evictObject(client);
    const value = new Map([[1n, new Set([new Date(5)])]]);
    expect(await client.echo(value)).toEqual(value);
    const error = await rejection(client.throwTypeError());
    expect(error).toBeInstanceOf(TypeError);
  });

  it("the runtime answers heartbeats on a hibernated socket", async () => {
    const name = uniqueName("hibernate-heartbeat");
    using client = createTestClient<Counter>(env.COUNTER, name);
    await client.getValue();
    await evictObject(client);
    const socket = testConnection(client).attempts[0]!.socket!;
    const answer = nextMessage(socket, (data) => data === "\u001eQ");
    socket.send("\u001eP");
    expect(await answer).toBe("\u001eQ");
  });

  it("the client's own heartbeats keep a hibernated connection open (answered by the runtime)", async () => {
    const name = uniqueName("heartbeat-client");
    using client = createTestClient<Counter>(env.COUNTER, name, { heartbeat: { interval: 20, timeout: 500 } });
    expect(await client.increment()).toBe(1);
    await evictObject(client);
    await new Promise((resolve) => setTimeout(resolve, 300)); // ~15 heartbeat intervals
    expect(rpcConnection(client).state).toBe("open");
    expect(testConnection(client).attempts).toHaveLength(1);
    expect(testConnection(client).attempts[0]!.closed).toBeUndefined();
    expect(await client.increment()).toBe(2);
  });

  it("withRpc and manual objects also keep serving their socket after eviction", async () => {
    for (const binding of ["WRAPPED", "MANUAL"] as const) {
      const name = uniqueName(`hibernate-${binding}`);
      using client = createTestClient<{ bump(): number }>(env[binding], name);
      expect(await client.bump()).toBe(1);
      await evictObject(client);
      expect(await client.bump()).toBe(2);
      expect(testConnection(client).attempts).toHaveLength(1);
    }
  });

  it('eviction that closes sockets (webSockets: "close") makes the client reconnect; storage is intact', async () => {
    const name = uniqueName("evict-close");
    using client = createTestClient<Counter>(env.COUNTER, name);
    expect(await client.increment(2)).toBe(2);
    await evictObject(client, { webSockets: "close" });
    await vi.waitFor(() => expect(testConnection(client).attempts[0]!.closed).toBeDefined(), { timeout: 3000, interval: 10 });
    expect(await client.increment(1)).toBe(3);
    expect(testConnection(client).attempts).toHaveLength(2);
  });
});

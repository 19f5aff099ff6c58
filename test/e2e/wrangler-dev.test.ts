/**
 * End to end: real `wrangler dev` running the root wrangler.toml (the demo Worker), driven from
 * a Node client over a real WebSocket — the same path the bench uses. The test starts and stops
 * wrangler itself.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcClient, httpTransport, RpcError } from "@dorpc/rpc";

/** The demo Counter's API (bench/worker/counter.ts), restated so this Node test needs no workerd types. */
interface Counter {
  increment(by?: number): number;
  getValue(): number;
  echo<T>(value: T): T;
}
import { startWranglerDev, type WranglerDev } from "../support/wrangler-dev.js";

let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev({ config: "wrangler.toml" });
});

afterAll(async () => {
  await dev?.stop();
});

describe("wrangler dev, Node client", () => {
  it("increments a counter through routeDORequest and reads it back", async () => {
    const instance = `e2e-${Date.now()}`;
    await using counter = createRpcClient<Counter>("COUNTER", instance, { baseUrl: dev.baseUrl });
    expect(await counter.increment(2)).toBe(2);
    expect(await counter.increment()).toBe(3);
    expect(await counter.getValue()).toBe(3);
    const [a, b, c] = await Promise.all([counter.increment(), counter.increment(), counter.getValue()]);
    expect([a, b, c]).toEqual([4, 5, 5]);
  });

  it("keeps state per instance and reaches the kebab alias of the binding", async () => {
    const instance = `e2e-kebab-${Date.now()}`;
    await using upper = createRpcClient<Counter>("COUNTER", instance, { baseUrl: dev.baseUrl });
    await using kebab = createRpcClient<Counter>("counter", instance, { baseUrl: dev.baseUrl });
    await upper.increment(5);
    expect(await kebab.getValue()).toBe(5);
  });

  it("round-trips rich values and bytes", async () => {
    await using counter = createRpcClient<Counter>("COUNTER", "e2e-echo", { baseUrl: dev.baseUrl });
    const cyclic: { self?: unknown; when: Date } = { when: new Date(1_700_000_000_000) };
    cyclic.self = cyclic;
    const value = {
      map: new Map<unknown, unknown>([
        ["a", 1n],
        [2, new Set([/x+/gi, NaN])],
      ]),
      numbers: [-0, Infinity, -Infinity],
      bytes: new Uint8Array(256 * 1024).map((_, i) => i & 0xff),
      cyclic,
      missing: undefined,
    };
    const back = (await counter.echo(value)) as typeof value;
    expect(back.map.get("a")).toBe(1n);
    expect([...(back.map.get(2) as Set<unknown>)]).toEqual([/x+/gi, NaN]);
    expect(Object.is(back.numbers[0], -0)).toBe(true);
    expect(back.numbers.slice(1)).toEqual([Infinity, -Infinity]);
    expect(back.bytes).toEqual(value.bytes);
    expect(back.cyclic.self).toBe(back.cyclic);
    expect(back.cyclic.when.getTime()).toBe(1_700_000_000_000);
    expect("missing" in back).toBe(true);
  });

  it("rejects unreachable members with NOT_FOUND and calls after disposal with DISPOSED", async () => {
    const counter = createRpcClient<Counter>("COUNTER", "e2e-policy", { baseUrl: dev.baseUrl });
    const reach = counter as unknown as Record<string, () => Promise<unknown>>;
    await expect(reach.fetch!()).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(reach.webSocketMessage!()).rejects.toMatchObject({ code: "NOT_FOUND" });
    counter[Symbol.dispose]();
    const error = await counter.getValue().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("DISPOSED");
  });

  it("answers 404 naming an unknown binding", async () => {
    const response = await fetch(`${dev.baseUrl}/__rpc/COUNTR/a`);
    expect(response.status).toBe(404);
    expect(await response.text()).toContain('"COUNTR"');
  });

  describe("a client that never connects says why (CONNECT_FAILED, not DISCONNECTED)", () => {
    it("a binding the Worker does not have: the Worker's 404 and what to check", async () => {
      await using client = createRpcClient<Counter>("COUNTR", "x", { baseUrl: dev.baseUrl, reconnect: false });
      const error = (await client.getValue().catch((e: unknown) => e)) as RpcError;
      expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
      expect(error.message).toContain("nothing was sent");
      expect(error.message).toContain("404");
      expect(error.message).toContain("COUNTR");
      expect(error.message).toContain("binding name and the prefix");
    });

    it("a port where nothing listens: says nothing answered there", async () => {
      const port = dev.port + 17;
      await using client = createRpcClient<Counter>("COUNTER", "x", {
        baseUrl: `http://127.0.0.1:${port}`,
        reconnect: false,
        connectTimeout: 3_000,
      });
      const error = (await client.getValue().catch((e: unknown) => e)) as RpcError;
      expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
      expect(error.message).toContain(`Nothing answered at http://127.0.0.1:${port}`);
    });

    it("a prefix the router does not serve: the answer is read and named", async () => {
      await using client = createRpcClient<Counter>("COUNTER", "x", { baseUrl: dev.baseUrl, prefix: "/rpc", reconnect: false });
      const error = (await client.getValue().catch((e: unknown) => e)) as RpcError;
      expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
      expect(error.message).toMatch(/answered .*404|404/);
    });
  });
});

describe("wrangler dev, HTTP batches (no socket)", () => {
  it("a Node client with transport: httpTransport(): calls, one request per turn, rich values and bytes", async () => {
    const instance = `e2e-http-${Date.now()}`;
    let requests = 0;
    await using counter = createRpcClient<Counter>("COUNTER", instance, {
      baseUrl: dev.baseUrl,
      transport: httpTransport({ fetch: (url, init) => (requests++, fetch(url, init)) }),
    });
    expect(await Promise.all([counter.increment(2), counter.increment(3), counter.getValue()])).toEqual([2, 5, 5]);
    expect(requests).toBe(1);
    const value = { when: new Date(5), bytes: new Uint8Array(70_000).map((_, i) => i & 0xff), set: new Set([1n]) };
    expect(await counter.echo(value)).toEqual(value);
    // The same object over a WebSocket sees what the batches did.
    await using socket = createRpcClient<Counter>("COUNTER", instance, { baseUrl: dev.baseUrl });
    expect(await socket.getValue()).toBe(5);
  });

  it("the JSON form, as curl sends it", async () => {
    const instance = `e2e-curl-${Date.now()}`;
    const call = (body: unknown) =>
      fetch(`${dev.baseUrl}/__rpc/COUNTER/${instance}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    const one = await call({ method: "increment", args: [4] });
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ result: 4 });
    const many = await call([{ method: "increment" }, { method: "getValue" }, { method: "nope" }]);
    expect(await many.json()).toEqual([
      { result: 5 },
      { result: 5 },
      { error: { code: "NOT_FOUND", message: expect.stringContaining("nope") } },
    ]);
    const bad = await call({ args: [] });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: { code: "PROTOCOL", message: expect.stringContaining('needs "method"') } });
  });

  it("a port where nothing listens: CONNECT_FAILED at once, nothing sent", async () => {
    const port = dev.port + 17;
    await using client = createRpcClient<Counter>("COUNTER", "x", { baseUrl: `http://127.0.0.1:${port}`, transport: httpTransport() });
    const error = (await client.getValue().catch((e: unknown) => e)) as RpcError;
    expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
    expect(error.message).toContain("ECONNREFUSED");
    expect(error.message).toContain("nothing was sent");
  });

  it("a binding the Worker does not have: CONNECT_FAILED with the Worker's answer", async () => {
    await using client = createRpcClient<Counter>("COUNTR", "x", { baseUrl: dev.baseUrl, transport: httpTransport() });
    const error = (await client.getValue().catch((e: unknown) => e)) as RpcError;
    expect(RpcError.is(error) && error.code).toBe("CONNECT_FAILED");
    expect(error.message).toContain("HTTP 404");
    expect(error.message).toContain("COUNTR");
  });
});

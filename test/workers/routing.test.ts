/**
 * routeDORequest in workerd, through the test Worker (worker.ts): binding names, kebab aliases,
 * hex ids, errors, and the onBeforeConnect / onBeforeRequest hooks.
 */
import { createTestClient, type TestClientOptions } from "@dorpc/testing";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

function count(stub: DurableObjectStub<Counter>): Promise<unknown> {
  return runInDurableObject(stub, (_instance, state) => state.storage.kv.get("count"));
}

/** A client whose upgrade requests go through the test Worker (routeDORequest and its hooks). */
function viaWorker(namespace: DurableObjectNamespace<Counter>, instance: string, options: TestClientOptions = {}) {
  return createTestClient<Counter>(namespace, instance, { worker: SELF, ...options });
}

function upgrade(path: string): Promise<Response> {
  return SELF.fetch(`http://x${path}`, { headers: { Upgrade: "websocket" } });
}

describe("routing to Durable Objects in workerd", () => {
  it("the exact binding name reaches that binding's object for the instance name", async () => {
    const name = uniqueName("exact");
    using client = viaWorker(env.COUNTER, name);
    expect(await client.increment(3)).toBe(3);
    expect(await client.className()).toBe("Counter");
    expect(await count(env.COUNTER.getByName(name))).toBe(3);
    expect(await count(env.MY_COUNTER.getByName(name))).toBeUndefined();
  });

  it("the kebab segment my-counter reaches MY_COUNTER, not COUNTER", async () => {
    const name = uniqueName("kebab");
    using client = viaWorker(env.MY_COUNTER, name, { binding: "my-counter" });
    expect(await client.increment(4)).toBe(4);
    expect(await client.className()).toBe("MyCounter");
    expect(await count(env.MY_COUNTER.getByName(name))).toBe(4);
    expect(await count(env.COUNTER.getByName(name))).toBeUndefined();
  });

  it("a 64-hex instance from newUniqueId() reaches the same object as idFromString", async () => {
    const hex = env.COUNTER.newUniqueId().toString();
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    using client = viaWorker(env.COUNTER, hex);
    expect(await client.increment(5)).toBe(5);
    expect(await count(env.COUNTER.get(env.COUNTER.idFromString(hex)))).toBe(5);
    // The same id in upper case is the same object (ids are case-insensitive hex).
    using upper = viaWorker(env.COUNTER, hex.toUpperCase());
    expect(await upper.getValue()).toBe(5);
    // ...and never the object *named* by that string.
    expect(await count(env.COUNTER.getByName(hex))).toBeUndefined();
  });

  it("a 64-hex instance that is not a valid id of the namespace is a 400", async () => {
    const response = await upgrade(`/__rpc/COUNTER/${"0".repeat(64)}`);
    expect(response.status).toBe(400);
    expect(response.webSocket).toBeNull();
    expect(await response.text()).toContain("not a valid Durable Object id");
  });

  it("an id of another namespace (MY_COUNTER) in the COUNTER route is a 400", async () => {
    const foreign = env.MY_COUNTER.newUniqueId().toString();
    const response = await upgrade(`/__rpc/COUNTER/${foreign}`);
    expect(response.status).toBe(400);
    expect(response.webSocket).toBeNull();
  });

  it("an unknown binding is a 404 whose body names the segment and lists only Durable Object bindings", async () => {
    const response = await upgrade("/__rpc/NOPE/a");
    expect(response.status).toBe(404);
    expect(response.webSocket).toBeNull();
    const body = await response.text();
    expect(body).toContain('"NOPE"');
    expect(body).toContain("COUNTER");
    expect(body).toContain("MY_COUNTER");
    expect(body).not.toContain("SECRET");
  });

  it("a non-DO env key (the SECRET var) is not a binding: 404", async () => {
    const response = await SELF.fetch("http://x/__rpc/SECRET/a");
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain("s3cr3t-value");
  });

  it("a missing instance is a 400", async () => {
    for (const path of ["/__rpc/COUNTER", "/__rpc/COUNTER/"]) {
      const response = await upgrade(path);
      expect(response.status, path).toBe(400);
      expect(await response.text()).toContain("Missing instance");
    }
  });

  it("a path outside the prefix is the worker's own 404 Not found", async () => {
    for (const path of ["/", "/other/COUNTER/a", "/__rpcx/COUNTER/a", "/api/__rpc/COUNTER/a"]) {
      const response = await upgrade(path);
      expect(response.status, path).toBe(404);
      expect(await response.text()).toBe("Not found");
    }
  });

  it("onBeforeConnect returning a Response blocks the upgrade: 403, no socket, and the client call fails CONNECT_FAILED", async () => {
    const name = uniqueName("blocked");
    const response = await upgrade(`/__rpc/my-counter/${name}?block=1`);
    expect(response.status).toBe(403);
    expect(response.webSocket).toBeNull();
    // The hook saw the resolved env key and the decoded instance.
    expect(await response.text()).toBe(`connect blocked for MY_COUNTER/${name}`);

    using client = viaWorker(env.COUNTER, name, { query: { block: "1" }, reconnect: false });
    const error = await rpcFailure(client.increment(), "CONNECT_FAILED");
    expect(error.message).toContain("403");
    expect(await count(env.COUNTER.getByName(name))).toBeUndefined();
  });

  it("onBeforeConnect returning a Request replaces the upgrade: the object sees the added header", async () => {
    const name = uniqueName("replaced");
    {
      using plain = viaWorker(env.COUNTER, name);
      expect(await plain.lastUpgradeHeader()).toBeNull();
    }
    using client = viaWorker(env.COUNTER, name, { query: { replace: "1" } });
    expect(await client.lastUpgradeHeader()).toBe("yes");
    expect(await client.increment()).toBe(1);
  });

  it("onBeforeRequest runs for plain requests: it can block them or replace them", async () => {
    const name = uniqueName("request-hook");
    const blocked = await SELF.fetch(`http://x/__rpc/COUNTER/${name}?block=1`);
    expect(blocked.status).toBe(401);
    expect(await blocked.text()).toBe(`request blocked for COUNTER/${name}`);

    const replaced = await SELF.fetch(`http://x/__rpc/COUNTER/${name}?replace=1`);
    expect(replaced.status).toBe(426);
    const seen = await runInDurableObject(env.COUNTER.getByName(name), (_i, state) => state.storage.kv.get("lastRequestHeader"));
    expect(seen).toBe("yes");
  });

  it("a plain GET to /__rpc/COUNTER/x reaches the object and gets 426 from handleRpcRequest", async () => {
    const response = await SELF.fetch("http://x/__rpc/COUNTER/x");
    expect(response.status).toBe(426);
    expect(response.headers.get("Upgrade")).toBe("websocket");
    expect(await response.text()).toContain("/__rpc/COUNTER/x is a dorpc endpoint");
  });

  it("a plain GET below an RpcDurableObject's instance path is its 404", async () => {
    const response = await SELF.fetch("http://x/__rpc/COUNTER/x/deeper");
    expect(response.status).toBe(404);
    expect(await response.text()).toContain("No route for /__rpc/COUNTER/x/deeper");
  });

  it("percent-encoded instance names reach the object named by the decoded string", async () => {
    const name = `${uniqueName("enc")} / é`;
    using client = viaWorker(env.COUNTER, name);
    expect(await client.increment(2)).toBe(2);
    expect(await count(env.COUNTER.getByName(name))).toBe(2);
  });
});

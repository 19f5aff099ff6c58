/**
 * createTestClient: which object it reaches, what it sends with the upgrade, the options it
 * passes on to createRpcClient, and the errors for bad input.
 */
import { createRpcClient, RpcError } from "@dorpc/rpc";
import { createTestClient, readStorage, testConnection, TestingError, type TestClientOptions } from "@dorpc/testing";
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { catching, failure, unique } from "./support.js";

describe("reaching the object", () => {
  it("a name reaches namespace.idFromName(name): the same object native RPC reaches", async () => {
    const name = unique("by-name");
    using counter = createTestClient(env.COUNTER, name);
    expect(await counter.increment(3)).toBe(3);
    expect(await env.COUNTER.get(env.COUNTER.idFromName(name)).getValue()).toBe(3);
  });

  it("a DurableObjectId reaches that object, unique ids included", async () => {
    const id = env.COUNTER.newUniqueId();
    using counter = createTestClient(env.COUNTER, id);
    expect(await counter.increment(4)).toBe(4);
    expect(await env.COUNTER.get(id).getValue()).toBe(4);
    expect(testConnection(counter).instance).toBe(id.toString());
  });

  it("an id made from a name is addressed by that name in the URL", async () => {
    const name = unique("id-from-name");
    using counter = createTestClient(env.COUNTER, env.COUNTER.idFromName(name));
    expect(await counter.increment()).toBe(1);
    expect(await counter.upgradePath()).toBe(`/__rpc/COUNTER/${name}`);
  });

  it("the binding segment is the namespace's env key, found by identity; options.binding overrides it", async () => {
    const name = unique("binding");
    using found = createTestClient(env.COUNTER, name);
    await found.increment();
    expect(testConnection(found).binding).toBe("COUNTER");
    expect(testConnection(found).url).toBe(`http://dorpc.test/__rpc/COUNTER/${name}`);
    expect(await found.upgradePath()).toBe(`/__rpc/COUNTER/${name}`);

    using named = createTestClient(env.COUNTER, name, { binding: "counters" });
    expect(await named.upgradePath()).toBe(`/__rpc/counters/${name}`);
  });

  it("options.query is on the upgrade URL, and options.headers on the upgrade request", async () => {
    using counter = createTestClient(env.COUNTER, unique("query"), { query: { a: "1" }, headers: { "x-test-header": "hello" } });
    expect(await counter.upgradePath()).toMatch(/\?a=1$/);
    expect(await counter.upgradeHeader()).toBe("hello");
  });

  it("options.prefix reaches an object serving another prefix; without it the upgrade is refused", async () => {
    using prefixed = createTestClient(env.PREFIXED, unique("prefix"), { prefix: "/rpc" });
    expect(await prefixed.ping()).toBe("pong");

    using plain = createTestClient(env.PREFIXED, unique("no-prefix"), { reconnect: false });
    const error = (await failure(plain.ping())) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error.code).toBe("CONNECT_FAILED");
    expect(error.message).toContain("404");
    expect(testConnection(plain).attempts[0]!.status).toBe(404);
  });

  it("with options.worker a 64-hex name is the id routeDORequest reads (any case), and the helpers address that id", async () => {
    const id = env.COUNTER.newUniqueId();
    using counter = createTestClient(env.COUNTER, id.toString().toUpperCase(), { worker: SELF });
    expect(await counter.increment(6)).toBe(6);
    expect(await env.COUNTER.get(id).getValue()).toBe(6);
    expect(testConnection(counter).id.equals(id)).toBe(true);
    expect(await readStorage(counter, "count")).toBe(6);
  });

  it("without options.worker a 64-hex string is a name like any other", async () => {
    const hex = env.COUNTER.newUniqueId().toString();
    using counter = createTestClient(env.COUNTER, hex);
    expect(await counter.increment(7)).toBe(7);
    expect(await env.COUNTER.getByName(hex).getValue()).toBe(7);
  });

  it("options.worker connects through the Worker's fetch, so its routing hooks run", async () => {
    const name = unique("via-worker");
    using counter = createTestClient(env.COUNTER, name, { worker: SELF, query: { user: "ada" } });
    expect(await counter.callerIdentity()).toEqual({ user: "ada" });
    expect(await counter.increment(2)).toBe(2);
    expect(await readStorage(counter, "count")).toBe(2); // the helpers reach the same object
  });
});

describe("options passed on to createRpcClient", () => {
  it("timeout applies to calls", async () => {
    using counter = createTestClient(env.COUNTER, unique("timeout"), { timeout: 50 });
    const error = (await failure(counter.sleep(2_000))) as RpcError;
    expect(error.code).toBe("TIMEOUT");
  });

  it("an invalid one is refused by createRpcClient with RpcError BAD_OPTION", () => {
    const error = catching(() => createTestClient(env.COUNTER, "x", { timeout: -1 }));
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("BAD_OPTION");
  });

  it("a query value that is not a string is refused as createRpcClient refuses it, not sent as its String()", () => {
    // (A token not set yet went out as ?token=undefined: the test client builds its own endpoint.)
    for (const query of [{ token: undefined }, { page: 1 }]) {
      const error = catching(() => createTestClient(env.COUNTER, unique("query-bad"), { query: query as never }));
      expect(error).toBeInstanceOf(RpcError);
      expect((error as RpcError).code).toBe("BAD_OPTION");
      expect((error as RpcError).message).toMatch(/^query\.(token|page) must be a string/);
    }
  });

  it("reconnect: null is refused as createRpcClient refuses it, not replaced by the quick default", () => {
    const direct = catching(() => createRpcClient("COUNTER", "x", { baseUrl: "http://example.com", reconnect: null as never }));
    const error = catching(() => createTestClient(env.COUNTER, unique("reconnect-null"), { reconnect: null as never }));
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("BAD_OPTION");
    expect((error as RpcError).message).toBe((direct as RpcError).message);
  });
});

function badOption(fn: () => unknown, message: RegExp): void {
  const error = catching(fn);
  expect(error).toBeInstanceOf(TestingError);
  expect((error as TestingError).code).toBe("BAD_OPTION");
  expect((error as TestingError).message).toMatch(message);
}

describe("TestingError", () => {
  it("is recognised by instanceof and by TestingError.is, also across copies of the package (name and code)", () => {
    const error = catching(() => createTestClient(env.COUNTER, ""));
    expect(TestingError.is(error)).toBe(true);
    const copy = Object.assign(new Error("from another copy"), { name: "TestingError", code: "TIMEOUT" });
    expect(TestingError.is(copy)).toBe(true);
    expect(TestingError.is(Object.assign(new Error("x"), { name: "TestingError", code: "NOPE" }))).toBe(false);
    expect(TestingError.is(new RpcError("BAD_OPTION", "x"))).toBe(false);
    expect(Object.keys(error as object)).not.toContain("name");
  });
});

describe("bad input", () => {
  it("a first argument that is not a namespace is named in the error", () => {
    badOption(() => createTestClient("COUNTER" as never, "x"), /namespace binding \(e\.g\. env\.COUNTER\).*got "COUNTER"/);
    badOption(() => createTestClient(undefined as never, "x"), /got undefined/);
    badOption(() => createTestClient(env as never, "x"), /got an object/);
  });

  it("a second argument that is neither a non-empty name nor an id", () => {
    badOption(() => createTestClient(env.COUNTER, ""), /non-empty instance name/);
    badOption(() => createTestClient(env.COUNTER, 42 as never), /got number 42/);
    const foreign = env.BEARER.newUniqueId();
    badOption(() => createTestClient(env.COUNTER, foreign), new RegExp(`${foreign.toString()} is not an id of this namespace`));
  });

  it("network options have no meaning here", () => {
    for (const key of ["baseUrl", "WebSocket", "transport"]) {
      badOption(() => createTestClient(env.COUNTER, "x", { [key]: "x" } as TestClientOptions), new RegExp(`options\\.${key}`));
    }
  });

  it("bad headers, binding and worker", () => {
    badOption(() => createTestClient(env.COUNTER, "x", { headers: [["a"]] as never }), /options\.headers/);
    badOption(() => createTestClient(env.COUNTER, "x", { binding: "a/b" }), /options\.binding.*"a\/b"/);
    badOption(() => createTestClient(env.COUNTER, "x", { worker: {} as never }), /options\.worker.*SELF/);
  });

  it("an identity that cannot be sent", () => {
    badOption(() => createTestClient(env.COUNTER, "x", { identity: () => 1 }), /JSON-serialisable/);
    badOption(() => createTestClient(env.COUNTER, "x", { identity: 1n }), /JSON-serialisable/);
    badOption(() => createTestClient(env.COUNTER, "x", { identity: "a".repeat(2_000) }), /2002 characters.*at most 1024/);
    badOption(
      () => createTestClient(env.COUNTER, "x", { identity: 1, headers: { "X-Dorpc-Identity": "2" } }),
      /either as options\.identity or as the X-Dorpc-Identity header/,
    );
  });

  it("with options.worker: an identity (the router strips it), and a 64-hex name that is no id of the namespace", () => {
    badOption(() => createTestClient(env.COUNTER, "x", { worker: SELF, identity: "ada" }), /routeDORequest removes X-Dorpc-Identity/);
    badOption(
      () => createTestClient(env.COUNTER, "0".repeat(64), { worker: SELF }),
      /reads as an object id, but it is not an id of this namespace/,
    );
  });

  it("helpers refuse a client that createTestClient did not make", () => {
    using plain = createRpcClient("COUNTER", "x", { baseUrl: "http://127.0.0.1:1" });
    // (The types refuse it too; a JavaScript caller, or a cast, still gets a clear error.)
    const error = catching(() => testConnection(plain as never));
    expect(error).toBeInstanceOf(TestingError);
    expect((error as TestingError).code).toBe("NOT_A_TEST_CLIENT");
    expect((error as TestingError).message).toMatch(/testConnection needs a client made by createTestClient.*createRpcClient/);
    expect((catching(() => testConnection({} as never)) as TestingError).message).toMatch(/got an object/);
  });
});

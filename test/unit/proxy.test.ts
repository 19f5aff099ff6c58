import { describe, expect, it } from "vitest";
import { getRpcSession, rpcConnection } from "../../packages/rpc/src/client.js";
import { connectUrl } from "../../packages/rpc/src/client-url.js";
import {
  createRpcClient,
  httpTransport,
  withCallOptions,
  type RpcClientOptions,
  type TransportFactory,
} from "../../packages/rpc/src/index.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { CloseCode } from "../../packages/rpc/src/envelopes.js";
import { pairWith, type Paired } from "../support/paired-transport.js";
import { expectRejectsCode, expectRpcError, expectThrowsCode, rejectionOf, settle } from "./helpers.js";

// ---------------------------------------------------------------------------------------------
// Target and helpers
// ---------------------------------------------------------------------------------------------

class Users extends RpcTarget {
  get(id: string) {
    return { id, displayName: `user ${id}` };
  }
}

class Api {
  received: unknown[] = [];
  get config() {
    return { limits: { max: 10 } };
  }
  get users() {
    return new Users();
  }
  makeUser(id: string) {
    return { id, displayName: `user ${id}` };
  }
  double(n: number) {
    return n * 2;
  }
  echo(value: unknown) {
    this.received.push(value);
    return value;
  }
  // Declared `number`, not `never`: a member typed `never` makes the client member `never` too.
  fail(): number {
    throw new TypeError("nope");
  }
  never(): Promise<void> {
    return new Promise(() => {});
  }
}

function setup(options: Omit<RpcClientOptions, "transport"> = {}, serverOptions?: RpcServerOptions) {
  const api = new Api();
  const paired = pairWith(api, serverOptions);
  const client = createRpcClient<Api>("API", "proxy", { ...options, transport: paired.factory });
  return { api, paired, client };
}

/** The calls (`[id, chain]`) a text call frame carries. */
function callsIn(frame: string | Uint8Array | undefined): unknown[][] {
  expect(typeof frame).toBe("string");
  const text = frame as string;
  expect(text.slice(0, 2)).toBe("\u001eC");
  return JSON.parse(text.slice(2)) as unknown[][];
}

/** The replies a text reply frame carries. */
function repliesIn(frame: string | Uint8Array | undefined): unknown[][] {
  expect(typeof frame).toBe("string");
  const text = frame as string;
  expect(text.slice(0, 2)).toBe("\u001eR");
  return JSON.parse(text.slice(2)) as unknown[][];
}

/** Wraps a paired factory to record every close() the client makes on its transports. */
function recordingCloses(paired: Paired): { factory: TransportFactory; closes: [number | undefined, string | undefined][] } {
  const closes: [number | undefined, string | undefined][] = [];
  const factory: TransportFactory = (handler) => {
    const inner = paired.factory(handler);
    return {
      open: () => inner.open(),
      send: (frame) => inner.send(frame),
      close: (code, reason) => {
        closes.push([code, reason]);
        inner.close(code, reason);
      },
    };
  };
  return { factory, closes };
}

/** Counts how a promise settles, to prove it settles exactly once and how. */
function track(promise: PromiseLike<unknown>) {
  const seen = { fulfilled: 0, rejected: 0, reason: undefined as unknown };
  promise.then(
    () => seen.fulfilled++,
    (reason: unknown) => {
      seen.rejected++;
      seen.reason = reason;
    },
  );
  return seen;
}

// ---------------------------------------------------------------------------------------------
// Frames and batching
// ---------------------------------------------------------------------------------------------

describe("frames", () => {
  it("sends one frame with one call for a property chain (config.limits.max)", async () => {
    const { client, paired } = setup();
    using _ = client;
    expect(await client.config.limits.max).toBe(10);
    const conn = paired.connections[0]!;
    expect(conn.sentByClient).toHaveLength(1);
    expect(callsIn(conn.sentByClient[0])).toEqual([[1, ["config", "limits", "max"]]]);
    expect(conn.sentByServer).toHaveLength(1);
  });

  it("sends one frame with one call for a getter-then-method chain (users.get)", async () => {
    const { client, paired } = setup();
    using _ = client;
    expect(await client.users.get("a")).toEqual({ id: "a", displayName: "user a" });
    const conn = paired.connections[0]!;
    expect(conn.sentByClient).toHaveLength(1);
    expect(callsIn(conn.sentByClient[0])).toEqual([[1, ["users", "get", [0, "a"]]]]);
  });

  it("sends calls made in the same microtask in one frame and gets the replies in one frame", async () => {
    const { client, paired } = setup();
    using _ = client;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => client.double(i)));
    expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i * 2));
    const conn = paired.connections[0]!;
    expect(conn.sentByClient).toHaveLength(1);
    expect(callsIn(conn.sentByClient[0]).map((c) => c[0])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(conn.sentByServer).toHaveLength(1);
    expect(repliesIn(conn.sentByServer[0])).toHaveLength(10);
  });

  it("sends calls made in the same microtask on an open connection in one frame too", async () => {
    const { client, paired } = setup();
    using _ = client;
    await client.double(0);
    await Promise.all([client.double(1), client.config.limits.max, client.users.get("b")]);
    const conn = paired.connections[0]!;
    expect(conn.sentByClient).toHaveLength(2);
    expect(callsIn(conn.sentByClient[1])).toHaveLength(3);
  });

  it("sends calls made in different macrotasks in different frames", async () => {
    const { client, paired } = setup();
    using _ = client;
    await client.double(1);
    await client.double(2);
    expect(paired.connections[0]!.sentByClient).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------
// The proxy
// ---------------------------------------------------------------------------------------------

describe("the proxy", () => {
  it("is not thenable: awaiting the client resolves to the client and sends nothing", async () => {
    const { client, paired } = setup();
    using _ = client;
    expect((client as unknown as { then?: unknown }).then).toBeUndefined();
    const awaited = await client;
    expect(awaited).toBe(client);
    const returned = await (async () => client)();
    expect(returned).toBe(client);
    await settle();
    expect(paired.connections).toHaveLength(0);
  });

  it("property reads are lazy: building paths sends nothing and opens no connection", async () => {
    const { client, paired } = setup();
    using _ = client;
    const path = client.config.limits;
    void client.users;
    await settle();
    expect(paired.connections).toHaveLength(0);
    expect(rpcConnection(client).state).toBe("idle");
    expect(await path).toEqual({ max: 10 });
    expect(paired.connections).toHaveLength(1);
  });

  it("a call is sent when it is made, even if nobody awaits it", async () => {
    const { client, api, paired } = setup();
    using _ = client;
    void client.echo("fire and forget");
    await settle();
    expect(api.received).toEqual(["fire and forget"]);
    expect(callsIn(paired.connections[0]!.sentByClient[0])).toEqual([[1, ["echo", [0, "fire and forget"]]]]);
  });

  it('reads a property of a pending result in the same frame (makeUser("a").displayName): pipelined, one round trip', async () => {
    const { client, paired } = setup();
    using _ = client;
    expect(await client.makeUser("a").displayName).toBe("user a");
    expect(paired.connections[0]!.sentByClient).toHaveLength(1);
    expect(callsIn(paired.connections[0]!.sentByClient[0])).toEqual([
      [1, ["makeUser", [0, "a"]]],
      [2, ["displayName"], -1],
    ]);
  });

  it("reads a property of a result that already arrived locally, without a call", async () => {
    const { client, paired } = setup();
    using _ = client;
    const user = client.makeUser("b");
    await user;
    expect(await user.displayName).toBe("user b");
    expect(paired.connections[0]!.sentByClient).toHaveLength(1);
  });

  it('refuses "name" on a plain result with NOT_FOUND: it is a Function.prototype name', async () => {
    const { client } = setup();
    using _ = client;
    const user = client.makeUser("a") as unknown as { name: Promise<unknown> };
    await expectRejectsCode(user.name, "NOT_FOUND");
  });

  it("supports then, catch and finally on a chain", async () => {
    const { client } = setup();
    using _ = client;
    expect(await client.double(2).then((n) => n + 1)).toBe(5);
    const caught = await client.fail().catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(TypeError);
    let finished = 0;
    expect(await client.double(3).finally(() => finished++)).toBe(6);
    await rejectionOf(client.fail().finally(() => finished++));
    expect(finished).toBe(2);
  });

  it("reads a property of the client afresh on every await (root members are cached, results are not)", async () => {
    const { client, paired } = setup();
    using _ = client;
    const first = await client.config.limits.max;
    const member = client.config;
    await member;
    await member;
    await client.config;
    expect(first).toBe(10);
    const sentCalls = paired.connections[0]!.sentByClient.flatMap((frame) => callsIn(frame));
    expect(sentCalls).toHaveLength(4);
  });

  it("sends a chain once however often it is awaited, like a promise", async () => {
    const { client, api } = setup();
    using _ = client;
    const chain = client.echo("again");
    expect(await chain).toBe("again");
    expect(await chain).toBe("again");
    await Promise.all([chain, chain.then((v) => v)]);
    expect(api.received).toEqual(["again"]);
  });

  it("refuses assignment and calling the client itself with NOT_CALLABLE", () => {
    const { client } = setup();
    using _ = client;
    expectThrowsCode(() => ((client as unknown as Record<string, unknown>).x = 1), "NOT_CALLABLE");
    expectThrowsCode(() => ((client.config as unknown as Record<string, unknown>).x = 1), "NOT_CALLABLE");
    expectThrowsCode(() => (client as unknown as () => void)(), "NOT_CALLABLE");
  });

  it("encodes arguments when the call is sent: later mutation does not change what the server receives", async () => {
    const { client, api } = setup();
    using _ = client;
    const plain = { list: [1] };
    const sentPlain = client.echo(plain).then((v) => v);
    plain.list.push(2);
    const rich = new Map([["k", [1]]]);
    const sentRich = client.echo(rich).then((v) => v);
    rich.get("k")!.push(2);
    rich.set("added", [3]);
    expect(await sentPlain).toEqual({ list: [1] });
    expect(await sentRich).toEqual(new Map([["k", [1]]]));
    expect(api.received).toEqual([{ list: [1] }, new Map([["k", [1]]])]);
  });

  it("encodes arguments when the call is made: a later change to an argument is not sent", async () => {
    const { client, api } = setup();
    using _ = client;
    const arg = { v: 1 };
    const chain = client.echo(arg);
    arg.v = 2;
    expect(await chain).toEqual({ v: 1 });
    expect(api.received).toEqual([{ v: 1 }]);
  });
});

// ---------------------------------------------------------------------------------------------
// Disposal
// ---------------------------------------------------------------------------------------------

describe("disposal", () => {
  for (const kind of ["Symbol.dispose", "Symbol.asyncDispose", "rpcConnection(client).close()"] as const) {
    it(`${kind} closes the connection, rejects pending calls with DISPOSED, and every later call too`, async () => {
      const api = new Api();
      // Sequential: the calls after `never()` stay pending on the server too.
      const paired = pairWith(api, { ordering: "sequential" });
      const { factory, closes } = recordingCloses(paired);
      const client = createRpcClient<Api>("API", "proxy", { transport: factory });
      expect(await client.double(1)).toBe(2);
      const pending = [client.never(), client.users.get("x"), client.never()].map((p) => track(p));
      const waiting = client.never();
      await settle();
      if (kind === "Symbol.dispose") client[Symbol.dispose]();
      else if (kind === "Symbol.asyncDispose") await client[Symbol.asyncDispose]();
      else rpcConnection(client).close();
      await expectRejectsCode(waiting, "DISPOSED");
      await settle();
      for (const seen of pending) {
        expect(seen.fulfilled).toBe(0);
        expect(seen.rejected).toBe(1);
        expectRpcError(seen.reason, "DISPOSED");
      }
      expect(closes).toHaveLength(1);
      expect(closes[0]![0]).toBe(CloseCode.SessionEnded);
      expect(rpcConnection(client).state).toBe("disposed");
      expect(getRpcSession(client).pendingCount).toBe(0);
      await expectRejectsCode(client.double(2), "DISPOSED");
      await expectRejectsCode(client.config.limits.max, "DISPOSED");
      await expectRejectsCode(withCallOptions(client.double(3), { timeout: 10 }), "DISPOSED");
      expect(paired.connections).toHaveLength(1);
      expect(paired.connections[0]!.sentByClient).toHaveLength(2);
    });
  }

  it("rejects a call made before the connection opened with DISPOSED and sends nothing", async () => {
    const { client, paired } = setup();
    const call = client.double(1);
    const seen = track(call);
    client[Symbol.dispose]();
    await settle();
    expect(seen.rejected).toBe(1);
    expectRpcError(seen.reason, "DISPOSED");
    for (const conn of paired.connections) expect(conn.sentByClient).toEqual([]);
  });

  it("is idempotent", async () => {
    const { client } = setup();
    await client.double(1);
    client[Symbol.dispose]();
    client[Symbol.dispose]();
    await client[Symbol.asyncDispose]();
    await expectRejectsCode(client.double(1), "DISPOSED");
  });

  it("works with `using`", async () => {
    let outer: ReturnType<typeof setup>["client"];
    {
      using client = setup().client;
      outer = client;
      expect(await client.double(1)).toBe(2);
    }
    await expectRejectsCode(outer.double(1), "DISPOSED");
  });
});

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/** A WebSocket constructor that records construction and never connects. */
function fakeWebSocket() {
  const created: string[] = [];
  class FakeWebSocket {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    readyState = 0;
    bufferedAmount = 0;
    binaryType = "blob";
    constructor(url: string) {
      created.push(url);
    }
    addEventListener() {}
    send() {}
    close() {}
  }
  return { WebSocket: FakeWebSocket as never, created };
}

describe("options", () => {
  const transport = pairWith(new Api()).factory;

  it.each<[string, () => unknown]>([
    ["an empty binding", () => createRpcClient("", "i", { transport })],
    ["a binding with a slash", () => createRpcClient("A/B", "i", { transport })],
    ["a non-string binding", () => createRpcClient(1 as never, "i", { transport })],
    ["an empty instance", () => createRpcClient("A", "", { transport })],
    ["a non-string instance", () => createRpcClient("A", undefined as never, { transport })],
    ['the instance ".." (a URL resolves it away)', () => createRpcClient("A", "..", { transport })],
    ['the instance "." (a URL resolves it away)', () => createRpcClient("A", ".", { transport })],
    ['the instance "%2E%2e" (a URL resolves it away too)', () => createRpcClient("A", "%2E%2e", { transport })],
    ['the binding ".."', () => createRpcClient("..", "i", { transport })],
    ["a negative timeout", () => createRpcClient("A", "i", { transport, timeout: -1 })],
    ["a NaN timeout", () => createRpcClient("A", "i", { transport, timeout: NaN })],
    ["an infinite timeout", () => createRpcClient("A", "i", { transport, timeout: Infinity })],
    ["a string timeout", () => createRpcClient("A", "i", { transport, timeout: "5" as never })],
    ["an unknown limit", () => createRpcClient("A", "i", { transport, limits: { maxFoo: 1 } as never })],
    ["a zero limit", () => createRpcClient("A", "i", { transport, limits: { maxDepth: 0 } })],
    ["a fractional limit", () => createRpcClient("A", "i", { transport, limits: { maxDepth: 1.5 } })],
    ["an unknown reconnect option", () => createRpcClient("A", "i", { transport, reconnect: { delay: 1 } as never })],
    ["a negative heartbeat interval", () => createRpcClient("A", "i", { transport, heartbeat: { interval: -1 } })],
    ["an unparsable baseUrl", () => createRpcClient("A", "i", { baseUrl: "not a url", ...fakeWebSocket() })],
    ["a baseUrl with another scheme", () => createRpcClient("A", "i", { baseUrl: "ftp://example.com", ...fakeWebSocket() })],
    ["an empty baseUrl", () => createRpcClient("A", "i", { baseUrl: "", ...fakeWebSocket() })],
    ["no baseUrl outside a browser", () => createRpcClient("A", "i", { ...fakeWebSocket() })],
    ["a prefix without a leading slash", () => createRpcClient("A", "i", { baseUrl: "https://x.test", prefix: "rpc", ...fakeWebSocket() })],
    ["a prefix with a trailing slash", () => createRpcClient("A", "i", { baseUrl: "https://x.test", prefix: "/rpc/", ...fakeWebSocket() })],
  ])("refuses %s with BAD_OPTION at creation", (_name, create) => {
    expectThrowsCode(create, "BAD_OPTION");
  });

  it("accepts a valid baseUrl without connecting until the first call", () => {
    const ws = fakeWebSocket();
    const client = createRpcClient<Api>("A", "i", { baseUrl: "https://x.test", WebSocket: ws.WebSocket });
    void client.double(1);
    expect(ws.created).toEqual([]);
    client[Symbol.dispose]();
  });

  it("opens the WebSocket at the built URL on the first awaited call", async () => {
    const ws = fakeWebSocket();
    const client = createRpcClient<Api>("COUNTER", "room 1", { baseUrl: "https://x.test", WebSocket: ws.WebSocket });
    const seen = track(client.double(1));
    await settle(1);
    expect(ws.created).toEqual(["wss://x.test/__rpc/COUNTER/room%201"]);
    client[Symbol.dispose]();
    await settle(1);
    expectRpcError(seen.reason, "DISPOSED");
  });
});

describe("connectUrl", () => {
  it.each<[string, string, string, RpcClientOptions, string]>([
    ["http becomes ws", "C", "a", { baseUrl: "http://127.0.0.1:8787" }, "ws://127.0.0.1:8787/__rpc/C/a"],
    ["https becomes wss", "C", "a", { baseUrl: "https://app.example.com" }, "wss://app.example.com/__rpc/C/a"],
    ["ws stays ws", "C", "a", { baseUrl: "ws://h" }, "ws://h/__rpc/C/a"],
    ["wss stays wss", "C", "a", { baseUrl: "wss://h" }, "wss://h/__rpc/C/a"],
    ["a custom prefix", "C", "a", { baseUrl: "https://h", prefix: "/api/rpc" }, "wss://h/api/rpc/C/a"],
    ["a base path", "C", "a", { baseUrl: "https://h/base/" }, "wss://h/base/__rpc/C/a"],
    ["a base path without a trailing slash", "C", "a", { baseUrl: "https://h/base" }, "wss://h/base/__rpc/C/a"],
    ["an instance with spaces", "C", "room 1", { baseUrl: "https://h" }, "wss://h/__rpc/C/room%201"],
    ["an instance with slashes", "C", "a/b/../c", { baseUrl: "https://h" }, "wss://h/__rpc/C/a%2Fb%2F..%2Fc"],
    ["an instance with ? and #", "C", "a?b#c", { baseUrl: "https://h" }, "wss://h/__rpc/C/a%3Fb%23c"],
    ["a non-ASCII instance", "C", "é🌍", { baseUrl: "https://h" }, "wss://h/__rpc/C/%C3%A9%F0%9F%8C%8D"],
    ["a port", "C", "a", { baseUrl: "https://h:8443" }, "wss://h:8443/__rpc/C/a"],
    ["a query", "C", "a", { baseUrl: "https://h", query: { token: "a b&c=d", x: "1" } }, "wss://h/__rpc/C/a?token=a+b%26c%3Dd&x=1"],
    ["the base URL's own query and hash are dropped", "C", "a", { baseUrl: "https://h/p?q=1#f" }, "wss://h/p/__rpc/C/a"],
  ])("builds the URL: %s", (_name, binding, instance, options, expected) => {
    expect(connectUrl(binding, instance, options)).toBe(expected);
  });

  it.each<[string, RpcClientOptions]>([
    ["no baseUrl", {}],
    ["a bad baseUrl", { baseUrl: "::" }],
    ["a file: baseUrl", { baseUrl: "file:///tmp" }],
    ["a prefix without a leading slash", { baseUrl: "https://h", prefix: "rpc" }],
    ["a prefix that is just a slash", { baseUrl: "https://h", prefix: "/" }],
  ])("refuses %s with BAD_OPTION", (_name, options) => {
    expectThrowsCode(() => connectUrl("C", "a", options), "BAD_OPTION");
  });
});

// ---------------------------------------------------------------------------------------------
// Timeouts, aborts, disconnects, limits
// ---------------------------------------------------------------------------------------------

/**
 * Watches the timers set with a delay near `timeout` (a call deadline, not the transport's own):
 * how many were set, and which are still armed (set and not cleared), until `restore`.
 */
function deadlineTimers(timeout: number) {
  const [set, clear] = [globalThis.setTimeout, globalThis.clearTimeout];
  const watched = { set: 0, armed: new Set<unknown>(), restore: () => {} };
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    const handle = set(fn, ms);
    if ((ms ?? 0) > timeout - 1_000) {
      watched.set++;
      watched.armed.add(handle);
    }
    return handle;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((handle: Parameters<typeof clearTimeout>[0]) => {
    watched.armed.delete(handle);
    clear(handle);
  }) as typeof clearTimeout;
  watched.restore = () => {
    globalThis.setTimeout = set;
    globalThis.clearTimeout = clear;
  };
  return watched;
}

describe("timeouts", () => {
  it("rejects a call that gets no reply within the timeout with TIMEOUT", async () => {
    const { client } = setup({ timeout: 50 });
    using _ = client;
    await expectRejectsCode(client.never(), "TIMEOUT");
    expect(getRpcSession(client).pendingCount).toBe(0);
  });

  it("keeps one timer for sequential calls, and a call made after it was armed still times out", async () => {
    const timeout = 60_000;
    const { client } = setup({ timeout });
    using _ = client;
    const timers = deadlineTimers(timeout);
    try {
      for (let i = 0; i < 20; i++) expect(await client.double(i)).toBe(2 * i);
    } finally {
      timers.restore();
    }
    // One deadline timer for all 20 (armed for the first call's deadline, kept while later calls
    // come and go): not one set and cleared per call.
    expect(timers.set).toBe(1);
    // That timer fires for a deadline long before this call's own: it is armed again for this one.
    await expectRejectsCode(withCallOptions(client.never(), { timeout: 30 }), "TIMEOUT");
    const shortFirst = setup({ timeout: 40 });
    using __ = shortFirst.client;
    expect(await shortFirst.client.double(1)).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Armed for the first call's deadline (40 ms after it), it finds this call's deadline later.
    await expectRejectsCode(shortFirst.client.never(), "TIMEOUT");
  });

  it("over HTTP requests keeps no timer once nothing waits (it could keep a calling Durable Object awake)", async () => {
    const timeout = 60_000;
    const fetch = async (_url: string, init?: RequestInit) => {
      const id = (JSON.parse(String(init!.body).slice(2)) as number[][])[0]![0]; // a text call frame
      return new Response(`\u001eR[[${id},0,5]]`, { headers: { "Content-Type": "application/x-dorpc" } });
    };
    const client = createRpcClient<Api>("API", "http", { baseUrl: "https://x.test", timeout, transport: httpTransport({ fetch }) });
    using _ = client;
    const timers = deadlineTimers(timeout);
    try {
      expect(await client.double(1)).toBe(5);
      expect(await client.double(2)).toBe(5);
    } finally {
      timers.restore();
    }
    expect(timers.armed.size).toBe(0);
  });

  it("applies a per-call timeout from withCallOptions", async () => {
    const { client } = setup({ timeout: 0 });
    using _ = client;
    await expectRejectsCode(withCallOptions(client.never(), { timeout: 20 }), "TIMEOUT");
  });

  it("ignores a reply that arrives after the timeout", async () => {
    const { client, paired } = setup({ timeout: 50 });
    using _ = client;
    expect(await client.double(1)).toBe(2);
    const conn = paired.connections[0]!;
    conn.hold = true;
    const late = client.double(21).then((v) => v); // one send: each `then` on a chain sends it
    const seen = track(late);
    await expectRejectsCode(late, "TIMEOUT");
    conn.release();
    await settle();
    // The server did answer call 2…
    expect(repliesIn(conn.sentByServer.at(-1))).toEqual([[2, 0, 42]]);
    // …and the client ignored it: the call stayed rejected, nothing is pending, the session works.
    expect(seen).toMatchObject({ fulfilled: 0, rejected: 1 });
    expect(getRpcSession(client).pendingCount).toBe(0);
    expect(await client.double(3)).toBe(6);
    expect(paired.connections).toHaveLength(1);
  });
});

describe("abort signals", () => {
  it("rejects with the signal's reason and frees the pending entry", async () => {
    const { client } = setup({ timeout: 0 });
    using _ = client;
    const controller = new AbortController();
    const call = withCallOptions(client.never(), { signal: controller.signal });
    const seen = track(call);
    await settle();
    expect(getRpcSession(client).pendingCount).toBe(1);
    const reason = new Error("stop it");
    controller.abort(reason);
    expect(await rejectionOf(call)).toBe(reason);
    expect(getRpcSession(client).pendingCount).toBe(0);
    expect(seen.rejected).toBe(1);
  });

  it("rejects with the default AbortError reason when aborted without one", async () => {
    const { client } = setup({ timeout: 0 });
    using _ = client;
    const controller = new AbortController();
    const call = withCallOptions(client.never(), { signal: controller.signal });
    controller.abort();
    const reason = await rejectionOf(call);
    expect(reason).toBe(controller.signal.reason);
    expect((reason as Error).name).toBe("AbortError");
    expect(getRpcSession(client).pendingCount).toBe(0);
  });

  it("rejects at once, sending nothing, when the signal is already aborted", async () => {
    const { client, paired } = setup();
    using _ = client;
    const reason = new Error("too late");
    await expect(withCallOptions(client.double(1), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await settle();
    expect(paired.connections).toHaveLength(0);
  });

  it("ignores the reply of an aborted call that was already sent", async () => {
    const { client, paired } = setup();
    using _ = client;
    await client.double(0);
    const conn = paired.connections[0]!;
    conn.hold = true;
    const controller = new AbortController();
    const call = withCallOptions(client.double(5), { signal: controller.signal });
    const seen = track(call);
    await settle();
    controller.abort(new Error("abort"));
    conn.release();
    await settle();
    expect(repliesIn(conn.sentByServer.at(-1))).toEqual([[2, 0, 10]]);
    expect(seen).toMatchObject({ fulfilled: 0, rejected: 1 });
  });

  it("refuses withCallOptions on something that is not a chain with BAD_OPTION", async () => {
    await expectRejectsCode(withCallOptions(Promise.resolve(1), { timeout: 1 }), "BAD_OPTION");
  });
});

describe("disconnects", () => {
  /** Calls `never` through the session directly, counting every resolve/reject it makes. */
  function countedCall(client: object) {
    const counts = { resolve: 0, reject: 0, reasons: [] as unknown[] };
    const call = getRpcSession(client).call({ kind: "root" }, ["never"], []);
    call.observed = true;
    call.whenSettled(() => {
      if (call.ok) counts.resolve++;
      else {
        counts.reject++;
        counts.reasons.push(call.error);
      }
    });
    return counts;
  }

  it("rejects in-flight calls with DISCONNECTED exactly once; the next call opens a new connection (reconnect: false)", async () => {
    const { client, paired } = setup({ reconnect: false });
    using _ = client;
    const counts = [countedCall(client), countedCall(client)];
    await settle();
    expect(paired.connections).toHaveLength(1);
    paired.connections[0]!.cut();
    paired.connections[0]!.cut();
    await settle();
    for (const c of counts) {
      expect(c).toMatchObject({ resolve: 0, reject: 1 });
      expectRpcError(c.reasons[0], "DISCONNECTED");
    }
    expect(await client.double(4)).toBe(8);
    expect(paired.connections).toHaveLength(2);
    client[Symbol.dispose]();
    await settle();
    for (const c of counts) expect(c.reject).toBe(1);
  });

  it("rejects in-flight calls with DISCONNECTED and sends the next call on a new connection (default reconnect, exactlyOnce: false)", async () => {
    const { client, paired } = setup({ reconnect: { initialDelay: 0, jitter: 0 }, exactlyOnce: false });
    using _ = client;
    const counts = countedCall(client);
    await settle();
    paired.connections[0]!.cut();
    await settle();
    expect(counts).toMatchObject({ resolve: 0, reject: 1 });
    expectRpcError(counts.reasons[0], "DISCONNECTED");
    expect(await client.double(4)).toBe(8);
    expect(paired.connections).toHaveLength(2);
    expect(paired.connections[1]!.sentByClient).toHaveLength(1);
  });

  it("rejects a call whose frame was held (sent but unanswered) when the connection is cut", async () => {
    const { client, paired } = setup({ reconnect: false });
    using _ = client;
    await client.double(0);
    const conn = paired.connections[0]!;
    conn.hold = true;
    const call = client.double(1).then((v) => v);
    await settle();
    conn.cut();
    await expectRejectsCode(call, "DISCONNECTED");
  });

  it("rejects calls with CONNECT_FAILED when the first connection cannot open, saying nothing was sent", async () => {
    const { client, paired } = setup();
    using _ = client;
    paired.failNextOpen = true;
    const error = await expectRejectsCode(client.double(1), "CONNECT_FAILED");
    expect(error.message).toContain("nothing was sent");
    expect(await client.double(2)).toBe(4);
    expect(paired.connections).toHaveLength(2);
  });
});

describe("client limits", () => {
  it("rejects a call beyond maxPendingCalls with LIMIT, and accepts calls again once some settle", async () => {
    // Concurrent: with the default sequential ordering the server would run nothing after `never`.
    const { client } = setup({ limits: { maxPendingCalls: 2 }, timeout: 0 }, { ordering: "concurrent" });
    using _ = client;
    const controller = new AbortController();
    const first = withCallOptions(client.never(), { signal: controller.signal });
    const second = client.never().then((v) => v);
    second.catch(() => {});
    await expectRejectsCode(client.double(1), "LIMIT");
    expect(getRpcSession(client).pendingCount).toBe(2);
    controller.abort(new Error("free a slot"));
    await rejectionOf(first);
    expect(await client.double(1)).toBe(2);
  });

  it("refuses a chain longer than maxChainLength before sending it", async () => {
    const { client, paired } = setup({ limits: { maxChainLength: 3 } });
    using _ = client;
    const deep = client.config as unknown as Record<string, Record<string, Record<string, Promise<unknown>>>>;
    const error = await rejectionOf(deep.a!.b!.c!);
    expect(["ENCODE", "LIMIT"]).toContain(expectRpcError(error, (error as { code: never }).code).code);
    await settle();
    expect(paired.connections).toHaveLength(0);
  });

  it("rejects a reply larger than the client's maxMessageBytes and keeps the client usable", async () => {
    const { client } = setup({ limits: { maxMessageBytes: 200 }, reconnect: { initialDelay: 0 } });
    using _ = client;
    const error = await rejectionOf(client.echo("x".repeat(500)));
    expect(["DISCONNECTED", "LIMIT"]).toContain(expectRpcError(error, (error as { code: never }).code).code);
    expect(await client.double(2)).toBe(4);
  });
});

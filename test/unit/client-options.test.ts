/** createRpcClient option values at the edges: timers at their longest, and what BAD_OPTION refuses (client-only logic, Node). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, rpcConnection, type TransportFactory, withCallOptions } from "../../packages/rpc/src/index.js";
import { resolveServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRpcError, expectThrowsCode, rejectionOf } from "./helpers.js";

class Api {
  double(n: number) {
    return n * 2;
  }
  slow(ms: number) {
    return new Promise((resolve) => setTimeout(() => resolve(ms), ms));
  }
  never(): Promise<void> {
    return new Promise(() => {});
  }
}

/** A transport whose open() takes `delay` ms, then behaves as the paired one. */
function slowOpen(delay: number): TransportFactory {
  const paired = pairWith(new Api());
  return (handler) => {
    const inner = paired.factory(handler);
    return {
      open: () => new Promise<void>((resolve, reject) => setTimeout(() => inner.open().then(resolve, reject), delay)),
      send: (frame) => inner.send(frame),
      close: (code, reason) => inner.close(code, reason),
    };
  };
}

afterEach(() => vi.restoreAllMocks());

describe("timers at the longest a timer can wait", () => {
  it("timeouts longer than a timer can wait (2^31 ms and more) are refused with BAD_OPTION, not fired at once", async () => {
    const tooLong = [{ connectTimeout: 2 ** 31 }, { timeout: 3e9 }];
    for (const options of tooLong) {
      expectThrowsCode(() => createRpcClient<Api>("API", "a", { transport: slowOpen(50), ...options }), "BAD_OPTION");
    }
    const client = createRpcClient<Api>("API", "a", { transport: slowOpen(50), connectTimeout: 2 ** 31 - 1, timeout: 2 ** 31 - 1 });
    try {
      expect(await client.double(2)).toBe(4); // the longest timers work
      const call = client.double(3);
      await expect(withCallOptions(call, { timeout: 2 ** 31 })).rejects.toMatchObject({ code: "BAD_OPTION" });
      // The call was not sent yet: refused options fail it too (the caller saw a failure).
      await expect(call).rejects.toMatchObject({ code: "BAD_OPTION" });
      expect(await client.double(4)).toBe(8);
    } finally {
      rpcConnection(client).close();
    }
  });

  it("the object's callTimeout too", () => {
    expectThrowsCode(() => resolveServerOptions({ callTimeout: 2 ** 31 }), "BAD_OPTION");
    expect(resolveServerOptions({ callTimeout: 2 ** 31 - 1 }).callTimeout).toBe(2 ** 31 - 1);
  });
});

describe("option validation", () => {
  const base = { baseUrl: "http://127.0.0.1:1" } as const;
  it.each([
    ["timeout NaN", { timeout: Number.NaN }],
    ["timeout Infinity", { timeout: Number.POSITIVE_INFINITY }],
    ["timeout negative", { timeout: -1 }],
    ["timeout string", { timeout: "100" }],
    ["connectTimeout 0", { connectTimeout: 0 }],
    ["connectTimeout Infinity", { connectTimeout: Number.POSITIVE_INFINITY }],
    ["highWaterMark NaN", { highWaterMark: Number.NaN }],
    ["highWaterMark string", { highWaterMark: "1" }],
    ["limits.maxDepth 0", { limits: { maxDepth: 0 } }],
    ["limits.maxDepth 1.5", { limits: { maxDepth: 1.5 } }],
    ["limits.maxDepth string", { limits: { maxDepth: "5" } }],
    ["limits unknown key", { limits: { maxFoo: 1 } }],
    ["reconnect NaN", { reconnect: { initialDelay: Number.NaN } }],
    ["reconnect unknown", { reconnect: { foo: 1 } }],
    ["reconnect true", { reconnect: true }],
    ["heartbeat true", { heartbeat: true }],
    ["heartbeat interval 5", { heartbeat: { interval: 5 } }],
    ["prefix empty", { prefix: "" }],
    ["prefix /", { prefix: "/" }],
    ["exactlyOnce string", { exactlyOnce: "yes" }],
    ["onError string", { onError: "x" }],
    ["validate array", { validate: [] }],
    ["expose string", { expose: "x" }],
    ["WebSocket not a function", { WebSocket: 5 }],
    ["timeout bigint", { timeout: 5n }],
    ["a misspelt option (timout)", { timout: 5_000 }],
  ])("%s: BAD_OPTION", (_label, options) => {
    expectThrowsCode(() => createRpcClient("API", "x", { ...base, ...(options as object) }), "BAD_OPTION");
  });

  it("an unknown option is named, with the known ones, instead of being ignored", () => {
    expect(() => createRpcClient("API", "x", { ...base, timout: 5_000 } as object)).toThrow(
      /^Unknown option options\.timout; known: baseUrl, prefix, timeout,/,
    );
  });

  it("a getter that throws in options: its own error comes out of createRpcClient", () => {
    const options = {
      baseUrl: "http://127.0.0.1:1",
      get timeout(): number {
        throw new Error("boom");
      },
    };
    expect(() => createRpcClient("API", "x", options)).toThrow("boom");
  });

  it("limits.maxPendingCalls exactly at the limit: the Nth call is accepted, N+1th refused with LIMIT", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "d", { transport: paired.factory, limits: { maxPendingCalls: 3 } });
    try {
      const calls = [client.double(1), client.double(2), client.double(3)];
      const over = client.double(4);
      expectRpcError(await rejectionOf(over), "LIMIT");
      expect(await Promise.all(calls)).toEqual([2, 4, 6]);
      expect(await client.double(5)).toBe(10);
    } finally {
      rpcConnection(client).close();
    }
  });
});

it("refuses an instance with a lone surrogate with RpcError BAD_OPTION, like other bad instances", () => {
  let error: unknown;
  try {
    createRpcClient("COUNTER", "room-\uD800", { baseUrl: "https://app.example.com" });
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(RpcError);
  expect((error as RpcError).code).toBe("BAD_OPTION");
});

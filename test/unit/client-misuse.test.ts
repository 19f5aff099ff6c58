/**
 * A newcomer's first hour with the client API: a clear, typed error at the right time, nothing
 * sent by inspection, no hang, no uncaught exception. Unit tier: client logic in Node against
 * the real dispatcher over the in-memory paired transport.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createRpcClient, httpTransport, rpcConnection, RpcError, withCallOptions } from "../../packages/rpc/src/index.js";
import { connectUrl } from "../../packages/rpc/src/client-url.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { rootProxy } from "../../packages/rpc/src/proxy.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRpcError, expectThrowsCode, settle } from "./helpers.js";

class Api {
  ran: string[] = [];
  double(n: number) {
    return n * 2;
  }
  /** A real method named toJSON (not reserved: ReservedMember does not list it). */
  toJSON(key: string) {
    this.ran.push(`toJSON(${JSON.stringify(key)})`);
    return "from the object";
  }
  /** Calls the client's exposed `method` (as this.client(caller).method() would). */
  async callBack(method: string): Promise<string> {
    const stub = rootProxy(
      currentCall()!.connection.caller,
      () => undefined,
      () => undefined,
    ) as Record<string, () => Promise<unknown>>;
    try {
      return `ok ${String(await stub[method]!())}`;
    } catch (error) {
      return `err ${(error as RpcError).code}`;
    }
  }
}

const base = { baseUrl: "https://app.example.com", WebSocket: class {} as never };
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const c of opened.splice(0)) {
    try {
      c.close();
    } catch {
      // (a misused client's close() must not throw either: its test checks that)
    }
  }
});

/** Uncaught exceptions and unhandled rejections while `fn` runs. */
async function escapes(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onError = (error: unknown) => seen.push(error);
  process.on("uncaughtException", onError);
  process.on("unhandledRejection", onError);
  try {
    await fn();
    await settle(5);
  } finally {
    process.off("uncaughtException", onError);
    process.off("unhandledRejection", onError);
  }
  return seen;
}

describe("transport: httpTransport without the parentheses", () => {
  // `transport: httpTransport` (the function, not `httpTransport()`) is the obvious newcomer slip.
  // BAD_OPTION at creation ("did you mean httpTransport()?"), or at least the call rejecting with a
  // typed error at once.
  it("is refused at creation, or fails the call with a typed error, with nothing escaping", async () => {
    let client: ReturnType<typeof createRpcClient<Api>>;
    try {
      // connectTimeout at its longest: its timer would otherwise throw the same way after the test
      client = createRpcClient<Api>("API", "x", { ...base, transport: httpTransport as never, timeout: 300, connectTimeout: 2 ** 31 - 1 });
    } catch (error) {
      expect(expectRpcError(error, "BAD_OPTION").message).toMatch(/httpTransport\(\)/);
      return;
    }
    let outcome: unknown;
    const uncaught = await escapes(async () => {
      outcome = await client.double(1).then(
        (v) => v,
        (e: unknown) => e,
      );
    });
    expect(uncaught.map(String)).toEqual([]);
    expect(RpcError.is(outcome) && (outcome as RpcError).code).not.toBe("TIMEOUT");
    expect(rpcConnection(client).state).not.toBe("connecting");
    expect(() => rpcConnection(client).close()).not.toThrow();
  });
});

describe("withCallOptions with something that is not an AbortSignal", () => {
  // Passing the AbortController instead of controller.signal. (api.md withCallOptions: "returns a
  // promise"; bad input "returns a promise rejected with BAD_OPTION"): a rejected BAD_OPTION, the
  // call itself untouched.
  it("rejects with BAD_OPTION instead of throwing a TypeError synchronously", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory, onError: () => {} });
    opened.push(rpcConnection(client));
    const call = client.double(1);
    const uncaught = await escapes(async () => {
      const thrown = (() => {
        try {
          const result = withCallOptions(call, { signal: new AbortController() as never });
          return result.then(
            () => "fulfilled",
            (e: unknown) => e,
          );
        } catch (error) {
          return error;
        }
      })();
      expectRpcError(await thrown, "BAD_OPTION");
      await call.catch(() => undefined);
    });
    expect(uncaught.map(String)).toEqual([]);
  });

  // Consequence: when the reply arrives, Caller.finish (caller.ts) calls
  // call.signal.removeEventListener on the bogus signal: an uncaught TypeError out of the client's
  // reply loop (Connection.receiveReplies), so the other replies of the same frame are never
  // delivered: a sibling call made in the same turn times out (or hangs with timeout 0).
  it("does not lose the replies of other calls in the same frame", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory, onError: () => {}, timeout: 0 });
    opened.push(rpcConnection(client));
    const bad = client.double(1);
    const good = client.double(2);
    let goodValue: unknown = "still pending";
    good.then(
      (v) => (goodValue = v),
      (e: unknown) => (goodValue = e),
    );
    const uncaught = await escapes(async () => {
      try {
        void withCallOptions(bad, { signal: new AbortController() as never }).catch(() => undefined);
      } catch {
        // a synchronous throw is the previous test's subject
      }
      await bad.then(
        () => undefined,
        () => undefined,
      );
      await settle(5);
    });
    expect(goodValue).toBe(4);
    expect(uncaught.map(String)).toEqual([]);
  });
});

describe("withCallOptions with a timeout, idempotent or retries of the wrong type", () => {
  // api.md withCallOptions: such options return a promise rejected with BAD_OPTION, and the call
  // given them is not sent. A string timeout used to be ignored ("100" made no deadline), a
  // bigint one threw a TypeError synchronously, and retries took any value.
  it.each([
    ["timeout as a string", { timeout: "100" }],
    ["timeout as a bigint", { timeout: 10n }],
    ["idempotent as a string", { idempotent: "yes" }],
    ["retries negative", { idempotent: true, retries: -5 }],
    ["retries fractional", { idempotent: true, retries: 1.5 }],
    ["retries Infinity", { idempotent: true, retries: Number.POSITIVE_INFINITY }],
  ])("%s: rejected BAD_OPTION, and the call is not sent", async (_name, options) => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory, onError: () => {} });
    opened.push(rpcConnection(client));
    const call = client.double(1);
    let result: unknown;
    try {
      result = await withCallOptions(call, options as never).then(
        () => "fulfilled",
        (e: unknown) => e,
      );
    } catch (error) {
      result = error; // thrown synchronously: the defect
    }
    expectRpcError(result, "BAD_OPTION");
    expectRpcError(
      await call.then(
        () => "fulfilled",
        (e: unknown) => e,
      ),
      "BAD_OPTION",
    );
    await settle(5);
    expect(paired.connections.flatMap((c) => c.sentByClient).filter((frame) => String(frame).includes("double"))).toEqual([]);
  });
});

describe("inspecting a client sends no calls", () => {
  // `${client}`, String(client), "" + client: the runtime reads Symbol.toPrimitive, which the
  // client answers itself; otherwise toString/valueOf would become remote calls of names the
  // object always refuses (api.md "What a chain can reach", rule 1), reported as never-awaited
  // NOT_FOUNDs, and the user would get "Cannot convert object to primitive value".
  it("String(client) sends nothing and does not connect", async () => {
    const paired = pairWith(new Api());
    const reported: string[] = [];
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory, onError: (_e, what) => reported.push(what) });
    opened.push(rpcConnection(client));
    try {
      void `${client as unknown as string}`;
    } catch {
      // what matters is what was sent
    }
    await settle(5);
    expect(paired.connections.flatMap((c) => c.sentByClient)).toEqual([]);
    expect(rpcConnection(client).state).toBe("idle");
    expect(reported).toEqual([]);
  });

  // JSON.stringify({ client }) (logging app state, a Redux/devtools snapshot) reads client.toJSON,
  // gets a callable path, calls it: the client connects and the object's toJSON("client") RUNS.
  // serialising a value that holds a client sends no call.
  it("JSON.stringify of an object holding a client sends no call", async () => {
    const api = new Api();
    const paired = pairWith(api);
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory, onError: () => {} });
    opened.push(rpcConnection(client));
    JSON.stringify({ client });
    await settle(5);
    expect(paired.connections.flatMap((c) => c.sentByClient)).toEqual([]);
    expect(api.ran).toEqual([]);
  });
});

describe("misused arguments give typed errors that say what is wrong", () => {
  // api.md rpcConnection: "Throws RpcError BAD_OPTION ("Not a dorpc client.") for anything that is
  // not a client".
  it("rpcConnection(null) and rpcConnection(undefined) throw BAD_OPTION", () => {
    expectThrowsCode(() => rpcConnection(null as never), "BAD_OPTION");
    expectThrowsCode(() => rpcConnection(undefined as never), "BAD_OPTION");
  });

  // createRpcClient(b, i, null) (options built as `cond ? {...} : null`): TypeError "Cannot read
  // properties of null (reading 'timeout')". BAD_OPTION ("options must be an object").
  it("createRpcClient with options null throws BAD_OPTION", () => {
    expectThrowsCode(() => createRpcClient("API", "x", null as never), "BAD_OPTION");
  });

  // baseUrl: new URL("https://…") — common with import.meta.env / config objects. The error says
  // 'baseUrl is required outside browsers', though one was passed (in a browser the same message
  // appears too). a message saying baseUrl must be a string (or accept a URL).
  it("a URL object as baseUrl is not reported as a missing baseUrl", () => {
    try {
      connectUrl("API", "x", { baseUrl: new URL("https://app.example.com") as never });
    } catch (error) {
      expect(expectRpcError(error, "BAD_OPTION").message).not.toMatch(/required/);
    }
  });

  // reconnect/heartbeat keys that are Object.prototype names ("constructor", "toString",
  // "__proto__" from JSON config) get "heartbeat.constructor must be a number from undefined to
  // undefined, got 1." instead of "Unknown option heartbeat.constructor; known: interval, timeout."
  it("an unknown heartbeat key named like an Object.prototype member is reported as unknown", () => {
    const error = expectThrowsCode(() => createRpcClient("API", "x", { ...base, heartbeat: { constructor: 1 } as never }), "BAD_OPTION");
    expect(error.message).toMatch(/Unknown option heartbeat\.constructor/);
    expect(error.message).not.toMatch(/undefined to undefined/);
  });

  // limits: null must be named as null, not "got object" (typeof null).
  it("limits: null is reported as null, not as 'got object'", () => {
    const error = expectThrowsCode(() => createRpcClient("API", "x", { ...base, limits: null as never }), "BAD_OPTION");
    expect(error.message).not.toMatch(/must be an object, got object/);
  });

  // onStateChange("x") / onStateChange() is accepted and returns an unsubscribe function; the
  // listener is silently skipped (its TypeError swallowed) on every change. subscribe() refuses a
  // non-function handler with BAD_OPTION; onStateChange should too.
  it("onStateChange with a non-function throws BAD_OPTION", () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "x", { transport: paired.factory });
    opened.push(rpcConnection(client));
    expectThrowsCode(() => rpcConnection(client).onStateChange("open" as never), "BAD_OPTION");
  });
});

describe("options accepted that can only misroute or mislead", () => {
  // prefix is only checked for a leading "/" and no trailing "/", then pasted raw into the URL:
  // "/rpc?v=1" gives ws://host/rpc?v=1/API/x (binding and instance end up in the query), "/a/../b"
  // is resolved to /b by the URL parser. routeDORequest refuses both prefixes with BAD_OPTION
  // (routing route.ts compilePrefix: segments of unreserved characters, no "." / ".."), so a client
  // configured like its router can never reach it, silently. BAD_OPTION at creation.
  it.each(["/rpc?v=1", "/rpc#x", "/a/../b", "//rpc", "/my rpc"])("prefix %j is refused with BAD_OPTION", (prefix) => {
    expectThrowsCode(() => createRpcClient("API", "x", { ...base, prefix }), "BAD_OPTION");
  });

  // The guide's own pattern `query: { token }` with token still undefined connects with
  // ?token=undefined (null → "null", an object → "[object Object]"): the onBeforeConnect hook sees
  // a string. BAD_OPTION naming query.token (the type is Record<string, string>).
  it("a query value that is not a string is refused with BAD_OPTION naming it", () => {
    const error = expectThrowsCode(() => createRpcClient("API", "x", { ...base, query: { token: undefined as never } }), "BAD_OPTION");
    expect(error.message).toMatch(/query\.token/);
  });

  // expose: Handlers (the class, instead of new Handlers()) is accepted (api.md lists only "not an
  // object or function" as BAD_OPTION), but nothing on a function is reachable: every call from the
  // object is NOT_FOUND, with no hint. BAD_OPTION at creation ("pass an instance"), or its static
  // methods reachable.
  it("exposing a class constructor is refused, or its static methods are reachable", async () => {
    class Handlers {
      static ping() {
        return "pong";
      }
    }
    const paired = pairWith(new Api());
    let client: ReturnType<typeof createRpcClient<Api>>;
    try {
      client = createRpcClient<Api>("API", "x", { transport: paired.factory, expose: Handlers });
    } catch (error) {
      expectRpcError(error, "BAD_OPTION");
      return;
    }
    opened.push(rpcConnection(client));
    expect(await client.callBack("ping")).toBe("ok pong");
  });
});

/**
 * Misused helpers fail with TestingError (BAD_OPTION, NOT_A_TEST_CLIENT), rejecting where they
 * return promises — never a raw TypeError, URIError or a synchronous throw; and createTestClient
 * refuses up front what could not reach the object as asked (a name that is no URL path segment,
 * an identity header the Worker would strip).
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, readStorage, runInObject, TestingError, waitForState } from "@dorpc/testing";
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unique } from "./support.js";

/** What `run` threw or rejected with. */
async function caught(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describe("null options are BAD_OPTION, not a TypeError", () => {
  it("evictObject(client, null)", async () => {
    using c = createTestClient(env.COUNTER, unique("null-evict"));
    await c.increment();
    const error = await caught(() => evictObject(c, null as never));
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
  });

  it("dropConnection(client, null)", async () => {
    using c = createTestClient(env.COUNTER, unique("null-drop"));
    await c.increment();
    const error = await caught(() => dropConnection(c, null as never));
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
  });

  it("waitForState(client, state, null)", async () => {
    using c = createTestClient(env.COUNTER, unique("null-wait"));
    const error = await caught(() => waitForState(c, "open", null as never));
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
  });
});

describe("an invalid query is BAD_OPTION, not a TypeError", () => {
  it("createTestClient(ns, name, { query: [[a, b, c]] })", async () => {
    const error = await caught(() => createTestClient(env.COUNTER, "x", { query: [["a", "b", "c"]] as never }));
    expect(error instanceof RpcError || TestingError.is(error)).toBe(true);
  });
});

describe("promise-returning helpers reject (not throw synchronously) on a non-test client", () => {
  for (const [name, run] of [
    ["readStorage", () => readStorage({} as never)],
    ["runInObject", () => runInObject({} as never, () => 1)],
    ["waitForState", () => waitForState({} as never, "open")],
  ] as const) {
    it(name, async () => {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = (run as () => Promise<unknown>)();
      }).not.toThrow();
      await expect(promise).rejects.toMatchObject({ code: "NOT_A_TEST_CLIENT" });
    });
  }
});

describe("a name or binding that cannot be a URL path segment is BAD_OPTION, not a URIError", () => {
  // encodeURIComponent throws a bare URIError on a lone surrogate; createRpcClient refuses the
  // same input with BAD_OPTION, and so does the test client, naming what holds it.
  it("a lone surrogate in the name", async () => {
    const error = await caught(() => createTestClient(env.COUNTER, "room-\uD800"));
    expect(error).not.toBeInstanceOf(URIError);
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
    expect((error as Error).message).toMatch(/^The name "room-\\ud800" holds a lone surrogate \(not well-formed Unicode\)/);
  });

  it("a lone surrogate in options.binding", async () => {
    const error = await caught(() => createTestClient(env.COUNTER, "room", { binding: "COUNTER\uDC00" }));
    expect(error).not.toBeInstanceOf(URIError);
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
    expect((error as Error).message).toMatch(/^options\.binding "COUNTER\\udc00" holds a lone surrogate/);
  });

  it('the names "." and "..", which a URL resolves away, are refused as createRpcClient refuses them', async () => {
    for (const name of [".", ".."]) {
      const error = await caught(() => createTestClient(env.COUNTER, name));
      expect(error).toBeInstanceOf(RpcError);
      expect((error as RpcError).code).toBe("BAD_OPTION");
      expect((error as RpcError).message).toContain("URLs resolve it away");
    }
  });
});

describe("options.headers carrying X-Dorpc-Identity with options.worker is refused like options.identity", () => {
  // routeDORequest removes the header from incoming requests: accepted, it would be stripped
  // silently and the object would see no identity.
  for (const header of ["X-Dorpc-Identity", "x-dorpc-identity"]) {
    it(`headers: { "${header}": … }`, async () => {
      const error = await caught(() =>
        createTestClient(env.COUNTER, unique("header-identity"), { worker: SELF, headers: { [header]: '{"user":"ada"}' } }),
      );
      expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
      expect((error as Error).message).toContain("options.headers cannot carry X-Dorpc-Identity with options.worker");
    });
  }
});

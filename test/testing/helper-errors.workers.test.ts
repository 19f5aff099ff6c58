/** Misused helpers fail with TestingError (BAD_OPTION, NOT_A_TEST_CLIENT), rejecting where they return promises — never a raw TypeError or a synchronous throw. */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, readStorage, runInObject, TestingError, waitForState } from "@dorpc/testing";
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

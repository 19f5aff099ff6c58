/**
 * waitForState misused. docs/api.md: it rejects DISPOSED when the client is disposed
 * while waiting for another state, BAD_OPTION for bad input; everywhere else dorpc refuses a
 * timeout above 2³¹ − 1 ms (setTimeout's range) with BAD_OPTION.
 */
import { createTestClient, TestingError, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

let n = 0;
const unique = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`;

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return "resolved";
}

describe("waitForState misused", () => {
  it("on a client already disposed, waiting for another state rejects DISPOSED (not TIMEOUT once the timeout ran out)", async () => {
    const counter = createTestClient(env.COUNTER, unique("wait-after-dispose"));
    await counter.increment();
    counter[Symbol.dispose]();
    const error = await failure(waitForState(counter, "open", { timeout: 1_000 }));
    expect(TestingError.is(error) && error.code).toBe("DISPOSED");
  });

  it("a timeout beyond setTimeout's range is refused with BAD_OPTION instead of waiting for ever", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-huge"));
    await counter.increment(); // open: waiting for "idle" can only end by the timeout
    const error = await failure(waitForState(counter, "idle", { timeout: 2 ** 40 }));
    expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
  });

  it("a timeout that is not a positive number of ms (0, -1, NaN, Infinity, a string) is refused with BAD_OPTION", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-bad-timeout"));
    for (const timeout of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "5"]) {
      const error = await failure(waitForState(counter, "open", { timeout: timeout as number }));
      expect(TestingError.is(error) && error.code).toBe("BAD_OPTION");
      expect((error as Error).message).toContain("options.timeout must be a positive number of ms");
    }
  });
});

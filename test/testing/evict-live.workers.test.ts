/**
 * evictObject on an object served with `hibernation: false` (accept()ed sockets): the runtime
 * waits about 30 s while they hold the object, past a test's timeout; evictObject gives up after
 * 3 s with a TestingError RUNTIME naming that cause.
 */
import { createTestClient, evictObject, TestingError } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { LiveCounter } from "./live-objects.js";
import { unique } from "./support.js";

const LIVE = (env as unknown as { LIVE_COUNTER: DurableObjectNamespace<LiveCounter> }).LIVE_COUNTER;

/** Resolves "hung" if `promise` has not settled after `ms` (the runtime's own wait is 30 s). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([
    promise.then(
      () => "resolved",
      (error: unknown) => error,
    ),
    new Promise((resolve) => setTimeout(() => resolve("hung"), ms)),
  ]);
}

describe("evictObject on a hibernation: false object", () => {
  for (const webSockets of ["hibernate", "close"] as const) {
    it(`{ webSockets: "${webSockets}" } settles promptly instead of hanging for the runtime's 30 s`, async () => {
      using live = createTestClient(LIVE, unique(`live-${webSockets}`));
      await live.increment();
      const outcome = await settlesWithin(evictObject(live, { webSockets }), 3_000);
      expect(outcome).not.toBe("hung");
    });
  }

  it("when the runtime does not evict, the RUNTIME error names the likely cause", { timeout: 45_000 }, async () => {
    using live = createTestClient(LIVE, unique("live-message"));
    await live.increment(); // running, with a call made
    const error = await evictObject(live).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(TestingError.is(error) && error.code).toBe("RUNTIME");
    expect((error as Error).message).toContain("hibernation: false");
  });
});

/**
 * The test client's default reconnection, `{ initialDelay: 5, maxDelay: 200, jitter: 0,
 * resetAfter: 0 }` (docs/testing.md): with `resetAfter: 0` a connection that opens resets the
 * backoff, so a test that drops the connection again and again reconnects after 5 ms each time
 * instead of backing off towards maxDelay (production's resetAfter is 5 s, longer than such a
 * test). The delay is read under fake timers, so the checks are about the configured backoff and
 * not about how fast this machine is.
 */
import { createTestClient, dropConnection, type TestClient, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { unique } from "./support.js";
import type { Counter } from "./worker.js";

/**
 * Drops the open connection `times` times in a row, each time waiting until the client has
 * reconnected and a call went through on the new connection, and dropping it again at once.
 */
async function dropRepeatedly(counter: TestClient<Counter>, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    dropConnection(counter);
    await waitForState(counter, "open");
    await counter.getValue();
  }
}

/** Drops the connection once more and returns after how many (fake) ms the client tried again. */
function delayOfNextReconnect(counter: TestClient<Counter>): number {
  const before = testConnection(counter).attempts.length;
  vi.useFakeTimers();
  try {
    dropConnection(counter);
    for (let ms = 1; ms <= 1_000; ms++) {
      vi.advanceTimersByTime(1);
      if (testConnection(counter).attempts.length > before) return ms;
    }
    throw new Error("the client did not try to reconnect within 1,000 ms of fake time");
  } finally {
    vi.useRealTimers();
  }
}

describe("the default reconnection after repeated drops", () => {
  it("reconnects after the initial 5 ms each time: every connection that opened reset the backoff", async () => {
    using counter = createTestClient(env.COUNTER, unique("drops-reset"));
    await counter.increment();
    await dropRepeatedly(counter, 6);
    expect(delayOfNextReconnect(counter)).toBe(5);
    await waitForState(counter, "open");
    expect(await counter.increment()).toBe(2);
    expect(testConnection(counter).attempts).toHaveLength(8);
  });

  it("with production's resetAfter (given in options.reconnect) the same drops back off up to maxDelay", async () => {
    // The same sequence, without the quick reset: 6 drops within 5 s double the delay each time
    // (5 × 2⁶ = 320 ms, capped at 200). Shows that the check above sees a backoff that grows.
    using counter = createTestClient(env.COUNTER, unique("drops-backoff"), {
      reconnect: { initialDelay: 5, maxDelay: 200, jitter: 0, resetAfter: 5_000 },
    });
    await counter.increment();
    await dropRepeatedly(counter, 6);
    expect(delayOfNextReconnect(counter)).toBe(200);
    await waitForState(counter, "open");
    expect(await counter.increment()).toBe(2);
  });
});

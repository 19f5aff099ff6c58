/**
 * What a Durable Object keeps per method name a client asks for. access.ts `findMember` caches
 * lookups per class prototype (for the life of the isolate, across every object instance and
 * connection); names are client-chosen, so misses must not be kept, or clients calling names that
 * do not exist would grow the cache without bound.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { callFrame, rawServer } from "./helpers.js";

class Room {
  hello(): string {
    return "hi";
  }
}

afterEach(() => void vi.restoreAllMocks());

describe("lookups of names that do not exist", () => {
  it("are not kept without bound (2,000 distinct unknown names)", async () => {
    const caches = new Set<Map<unknown, unknown>>();
    const realSet = Map.prototype.set;
    vi.spyOn(Map.prototype, "set").mockImplementation(function (this: Map<unknown, unknown>, key: unknown, value: unknown) {
      if (typeof key === "string" && key.startsWith("missing") && value === null) caches.add(this);
      return realSet.call(this, key, value);
    });
    const server = rawServer(new Room());
    for (let i = 0; i < 2000; i++) server.dispatch(callFrame([[i + 1, [`missing${i}${"x".repeat(100)}`, [0]]]]));
    expect((await server.outcome(1)).kind).toBe("failed"); // NOT_FOUND, as it should be
    vi.restoreAllMocks();
    const kept = [...caches].reduce((n, map) => n + [...map.keys()].filter((k) => String(k).startsWith("missing")).length, 0);
    // a miss is not remembered forever (or the cache is bounded); 2,000 client-chosen names (each
    // 100+ characters here; up to maxMessageBytes each in general) must not all stay.
    expect(kept).toBeLessThan(2000);
  });
});

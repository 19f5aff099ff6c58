/**
 * The counter of src/index.ts, tested in workerd with @dorpc/testing: calls, eviction,
 * dropped connections, identities, and the Worker's own auth hook.
 */
import { rpcConnection, RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, readStorage, runInObject, testConnection, waitForState } from "@dorpc/testing";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("Counter", () => {
  it("counts, and keeps the count in storage", async () => {
    using counter = createTestClient(env.COUNTER, "counts");
    expect(await counter.increment()).toBe(1);
    expect(await counter.increment(2)).toBe(3);
    expect(await readStorage(counter, "value")).toBe(3);
  });

  it("keeps its count when the runtime evicts it; the socket hibernates and stays open", async () => {
    using counter = createTestClient(env.COUNTER, "evicted");
    await counter.increment(5);
    await evictObject(counter);
    expect(await counter.increment()).toBe(6);
    expect(testConnection(counter).attempts).toHaveLength(1);
  });

  it("a client reconnects after its connection drops, and the count is intact", async () => {
    using counter = createTestClient(env.COUNTER, "dropped");
    await counter.increment(2);
    dropConnection(counter); // what a lost network looks like to the client
    expect(rpcConnection(counter).state).toBe("reconnecting");
    await waitForState(counter, "open");
    expect(await counter.getValue()).toBe(2);
  });

  it("the first caller owns it: only the owner may reset", async () => {
    using ada = createTestClient(env.COUNTER, "owned", { identity: { user: "ada" } });
    using bob = createTestClient(env.COUNTER, "owned", { identity: { user: "bob" } });
    await ada.increment(3);
    await expect(bob.reset()).rejects.toThrow("Only the owner may reset this counter, not bob.");
    await ada.reset();
    expect(await bob.getValue()).toBe(0);
    expect(await runInObject(ada, (_counter, state) => state.storage.kv.get("owner"))).toBe("ada");
  });
});

describe("the Worker in front of it", () => {
  it("turns a known token into the caller's identity", async () => {
    using ada = createTestClient(env.COUNTER, "via-worker", { worker: exports.default, query: { token: "token-ada" } });
    await ada.increment();
    expect(await readStorage(ada, "owner")).toBe("ada");
  });

  it("refuses an unknown token with 401", async () => {
    using stranger = createTestClient(env.COUNTER, "refused", { worker: exports.default, query: { token: "nope" }, reconnect: false });
    const error = await stranger.getValue().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("CONNECT_FAILED");
    expect(testConnection(stranger).attempts[0]!.status).toBe(401);
  });
});

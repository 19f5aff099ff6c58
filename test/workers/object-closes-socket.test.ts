/**
 * The object closing a client's socket while calls from it run (docs/api.md, RPC_SOCKET_TAG):
 * the client takes the close for a cut, reconnects and resends, and each call runs once. After
 * 1001 dorpc takes the client for gone and aborts its running calls' signal, so a call that
 * honours it answers the resend with its AbortError; after 1000, 1011 or a code from 4000 to 4999
 * (but 4002, a disposed client's own) the calls finish and answer their resends: the client
 * answers a close with the object's own code, and only a disposed client closes with 4002. A call
 * that ignores its signal finishes either way.
 */
import { RPC_SOCKET_TAG } from "@dorpc/rpc/server";
import { createTestClient, runInObject, type TestClient, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";
import type { Counter } from "./objects.js";

/** Long enough that the call is still running when the test closes its socket. */
const CALL_MS = 1_500;

/**
 * Closes every dorpc socket of the client's object with `code`, and tells whether the call
 * under test was still running then (it stores its outcome when it ends).
 */
function closeSockets(client: TestClient<unknown>, code: number, reason: string, runningKey: string): Promise<boolean> {
  return runInObject(client, (_obj, state) => {
    const running = state.storage.kv.get(runningKey) === undefined;
    for (const ws of state.getWebSockets(RPC_SOCKET_TAG)) ws.close(code, reason);
    return running;
  });
}

function attemptCodes(client: TestClient<unknown>): (number | "open")[] {
  return testConnection(client).attempts.map((attempt) => attempt.closed?.code ?? "open");
}

describe("a call that honours its signal, its socket closed by the object", () => {
  it.each([
    { code: 1000, reason: "kicked", answer: "finished" },
    { code: 1001, reason: "going away", answer: "cancelled: AbortError" },
    { code: 1011, reason: "restarting", answer: "finished" },
    { code: 4000, reason: "moved", answer: "finished" },
  ])("closed with $code: the resend is answered $answer, the outcome the call stored", async ({ code, reason, answer }) => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName(`close-${code}`));
    const call = client.waitOrCancel(CALL_MS);
    // Calls of one connection start in order: once this answers, the call above is running.
    expect(await client.getValue()).toBe(0);
    expect(await closeSockets(client, code, reason, "waitOutcome")).toBe(true);
    expect(await call).toBe(answer);
    expect(await client.waitOutcome()).toBe(answer);
    expect(attemptCodes(client)).toEqual([code, "open"]);
  });
});

describe("a call that ignores its signal, its socket closed by the object", () => {
  it("closed with 1001 (as api.md shows) during a slow write: the resend gets the one answer, and the write happened once", async () => {
    // HTTP_E2E is not in the generated Env type (http-e2e.test.ts reads it the same way).
    const namespace = (env as unknown as { HTTP_E2E: DurableObjectNamespace<HttpE2e> }).HTTP_E2E;
    using client = createTestClient<HttpE2e>(namespace, uniqueName("close-slow"));
    const call = client.slowIncrement(CALL_MS);
    expect(await client.count()).toBe(0);
    expect(await closeSockets(client, 1001, "going away", "count")).toBe(true);
    expect(await call).toBe(1);
    expect(await client.count()).toBe(1);
    expect(attemptCodes(client)).toEqual([1001, "open"]);
  });
});

describe("ordering: sequential (MY_COUNTER)", () => {
  it("a call held behind a running one when the object closes with 1001 runs once after the resend", async () => {
    using client = createTestClient<Counter>(env.MY_COUNTER, uniqueName("close-sequential"));
    const first = client.increment(1);
    const running = client.waitOrCancel(CALL_MS);
    const held = client.increment(1);
    // The next call starts when the one before it has answered: the wait is running now.
    expect(await first).toBe(1);
    await closeSockets(client, 1001, "going away", "waitOutcome");
    const [waited, incremented] = await Promise.allSettled([running, held]);
    expect(waited).toEqual({ status: "fulfilled", value: "cancelled: AbortError" });
    expect(incremented).toEqual({ status: "fulfilled", value: 2 });
    expect(await client.getValue()).toBe(2);
  });
});

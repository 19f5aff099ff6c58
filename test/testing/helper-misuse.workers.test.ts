/**
 * @dorpc/testing misused on purpose: typed rejections (never synchronous throws) for what is not
 * a test client, messages that fit the client's state (waitForState's hint, evictObject's
 * RUNTIME), defaults that fit Vitest's, and what dropConnection does with the codes that say a
 * frame was refused.
 */
import { type RpcError, rpcConnection } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject, runAlarm, runInObject, TestingError, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { failure, unique } from "./support.js";

describe("runAlarm misused", () => {
  // runAlarm returns a Promise like readStorage/runInObject/waitForState/evictObject, which all
  // reject with NOT_A_TEST_CLIENT (test/testing/helper-errors.workers.test.ts holds the others to
  // "reject, never throw synchronously"). runAlarm throws synchronously instead, so `await
  // expect(runAlarm(x)).rejects…` or `runAlarm(x).catch(…)` never sees the error.
  for (const [label, value] of [
    ["a plain object", {}],
    ["null", null],
  ] as const) {
    it(`runAlarm(${label}) rejects with NOT_A_TEST_CLIENT instead of throwing synchronously`, async () => {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = runAlarm(value as never);
      }).not.toThrow();
      const error = await failure(promise!);
      expect(TestingError.is(error) && error.code).toBe("NOT_A_TEST_CLIENT");
    });
  }
});

describe("dropConnection on a disposed client", () => {
  // The message tells the user to "await rpcConnection(client).waitForOpen() to connect it", which
  // on a disposed client only rejects DISPOSED. the error says the client is disposed (helpers'
  // errors name the fix: there is no connection to drop because `using`/dispose ended it).
  it("says the client is disposed instead of advising waitForOpen()", async () => {
    const counter = createTestClient(env.COUNTER, unique("drop-disposed"));
    await counter.increment();
    counter[Symbol.dispose]();
    let error: unknown;
    try {
      dropConnection(counter);
    } catch (caught) {
      error = caught;
    }
    expect(TestingError.is(error)).toBe(true);
    expect((error as Error).message).not.toContain("waitForOpen");
    expect((error as Error).message).toMatch(/disposed/);
    // What the advice leads to:
    await expect(rpcConnection(counter).waitForOpen()).rejects.toMatchObject({ code: "DISPOSED" });
  });
});

describe("waitForState's default timeout", () => {
  // docs/testing.md §8: "it fails with TIMEOUT after 5 seconds (or { timeout }) ..., listing the
  // states it saw". The default (5,000 ms, connection.ts) equals Vitest's default testTimeout
  // (5,000 ms, started earlier), so with a default Vitest config the documented TIMEOUT error can
  // never be seen: the test dies with Vitest's generic "Test timed out in 5000ms" instead. a
  // default below Vitest's test timeout, so the helpful TestingError is what fails the test.
  it("a state that never comes fails with TestingError TIMEOUT under Vitest's default test timeout", async () => {
    using counter = createTestClient(env.COUNTER, unique("wait-default"));
    await counter.increment(); // open: "connecting" never comes again
    const error = await failure(waitForState(counter, "connecting"));
    expect(TestingError.is(error) && error.code).toBe("TIMEOUT");
  });
});

describe("dropConnection with another close code", () => {
  // docs/api.md dropConnection: with `code` 1008 or 1009, which say the client refused a frame,
  // calls waiting for a reply reject with DISCONNECTED naming it (as such a close does), instead of
  // being resent.
  it("{ code: 1008 }: a call in flight rejects with DISCONNECTED saying a frame was refused", async () => {
    using counter = createTestClient(env.COUNTER, unique("drop-1008"));
    await counter.increment();
    const inFlight = counter.sleep(50);
    await vi.waitFor(async () => expect(await runInObject(counter, (object) => object.sleeping)).toBe(1));
    dropConnection(counter, { code: 1008 });
    const error = await inFlight.then(
      () => undefined,
      (caught: unknown) => caught as { code?: string; message?: string },
    );
    expect(error?.code).toBe("DISCONNECTED");
    expect(error?.message).toContain("1008");
  });
});

describe("waitForState's hint when the client tried to connect and was refused", () => {
  // States idle → connecting → idle: a call was made and its connection refused (401). The hint
  // for a client that never tried ("only connects on a call") would send the user looking for a
  // missing call; this one points at the refused connection.
  it("says the connection was refused or failed, not that the client needs a call", async () => {
    using client = createTestClient(env.BEARER, unique("wait-refused"), { reconnect: false });
    const waiting = failure(waitForState(client, "open", { timeout: 1_000 }));
    const call = failure(client.callerIdentity());
    expect(((await call) as RpcError).code).toBe("CONNECT_FAILED");
    const error = (await waiting) as TestingError;
    expect(error.code).toBe("TIMEOUT");
    expect(error.message).toContain("(states seen: idle → connecting → idle)");
    expect(error.message).toContain("It tried to connect and is idle again: the connection was refused or failed");
    expect(error.message).toContain("testConnection(client)");
    expect(error.message).not.toContain("only connects on a call");
  });
});

describe("evictObject's RUNTIME message", () => {
  // The runtime's own message ends with a full stop; the helper's sentence must not double it.
  it("quotes the runtime's reason as one sentence (no '..')", async () => {
    const name = unique("evict-message");
    using counter = createTestClient(env.COUNTER, name);
    const error = (await failure(evictObject(counter))) as TestingError;
    expect(error.code).toBe("RUNTIME");
    expect(error.message).toContain(`Could not evict COUNTER/${name}: `);
    expect(error.message).not.toContain("..");
  });
});

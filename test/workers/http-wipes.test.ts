/**
 * Exactly once over HTTP batches across `ctx.storage.deleteAll()`, in workerd (docs/protocol.md:
 * a resend whose session may be older than the last wipe, and that no row of the record holds, is
 * refused EXPIRED and not run again). record-wipes.test.ts covers the same over sockets; here the
 * client is httpTransport(), whose resends are requests of their own: an answer lost after the
 * object ran the call, the object's storage wiped, then the resend — of the session's first
 * answer, of a later one, of a turn of 300 calls sent (and resent) in two requests — and an
 * original request that reaches the object after its resend ran and after a wipe.
 */
import { createRpcClient, type FetchLike, httpTransport, RpcError } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";

const namespace = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E;
const stored = (name: string) =>
  runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
const wipe = (name: string) => runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.deleteAll());

/** The value `promise` resolved with, or the code of the RpcError it rejected with. */
function outcome(promise: PromiseLike<unknown>): Promise<{ value: unknown } | { code: string }> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({ code: RpcError.is(error) ? error.code : String(error) }),
  );
}

/**
 * A fetch into the test Worker. While `lose` > 0 a request reaches the object and its answer is
 * lost on the way back; every request after those waits for `release()`, so the test can wipe
 * the object before the resends arrive.
 */
function losingThenHeld() {
  const state = { lose: 0, lost: 0, headers: [] as Headers[] };
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const fetch: FetchLike = async (url, init) => {
    state.headers.push(new Headers(init.headers));
    if (state.lose > 0) {
      state.lose--;
      await (await SELF.fetch(url, init)).arrayBuffer();
      state.lost++;
      throw new TypeError("network connection lost");
    }
    await released;
    return SELF.fetch(url, init);
  };
  return { fetch, state, release };
}

function httpClient(name: string, fetch: FetchLike) {
  return createRpcClient<HttpE2e>("HTTP_E2E", name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    timeout: 20_000,
    reconnect: { initialDelay: 5, maxDelay: 20, jitter: 0 },
  });
}

describe("an answer lost, the object's storage wiped, then the resend", () => {
  it("the session's first answer: the resend says it is resending, with the session's age, and is refused EXPIRED; nothing runs again", async () => {
    const name = uniqueName("http-wipe-first");
    const net = losingThenHeld();
    net.state.lose = 1;
    using client = httpClient(name, net.fetch);
    const call = outcome(client.increment());
    await vi.waitFor(() => expect(net.state.lost).toBe(1));
    expect(await stored(name)).toBe(1); // it ran
    await wipe(name);
    net.release();
    expect(await call).toEqual({ code: "EXPIRED" });
    expect(await stored(name)).toBeUndefined(); // not run again on the wiped state
    expect(net.state.headers.map((h) => h.get("X-Dorpc-Resending"))).toEqual([null, expect.stringMatching(/^1; age=\d+$/)]);
  });

  it("a later answer: the resend is refused EXPIRED; nothing runs again", async () => {
    const name = uniqueName("http-wipe-later");
    const net = losingThenHeld();
    let losing = false;
    using client = httpClient(name, (url, init) => (losing ? net.fetch(url, init) : SELF.fetch(url, init)));
    expect(await client.increment()).toBe(1);
    losing = true;
    net.state.lose = 1;
    const call = outcome(client.increment());
    await vi.waitFor(() => expect(net.state.lost).toBe(1));
    expect(await stored(name)).toBe(2);
    await wipe(name);
    net.release();
    expect(await call).toEqual({ code: "EXPIRED" });
    expect(await stored(name)).toBeUndefined();
  });

  it("300 calls of one turn, sent in two requests whose answers are both lost, resent in two requests: every call EXPIRED, none runs again", {
    timeout: 30_000,
  }, async () => {
    const name = uniqueName("http-wipe-turn");
    const net = losingThenHeld();
    net.state.lose = 2;
    using client = httpClient(name, net.fetch);
    const calls = Array.from({ length: 300 }, () => outcome(client.increment()));
    await vi.waitFor(() => expect(net.state.lost).toBe(2));
    expect(await stored(name)).toBe(300);
    await wipe(name);
    net.release();
    const codes: Record<string, number> = {};
    for (const result of await Promise.all(calls)) {
      const key = "code" in result ? result.code : "answered";
      codes[key] = (codes[key] ?? 0) + 1;
    }
    expect({ codes, stored: (await stored(name)) ?? 0 }).toEqual({ codes: { EXPIRED: 300 }, stored: 0 });
    const resending = net.state.headers.map((h) => h.get("X-Dorpc-Resending"));
    expect(resending.slice(0, 2)).toEqual([null, null]);
    expect(resending.slice(2)).toEqual([expect.stringMatching(/^1; age=\d+$/), expect.stringMatching(/^1; age=\d+$/)]);
  });
});

describe("an original request that arrives after its resend ran, and after a wipe", () => {
  it("is refused EXPIRED and does not run again", async () => {
    const name = uniqueName("http-wipe-late");
    let requests = 0;
    let releaseLate!: () => void;
    const lateGate = new Promise<void>((resolve) => (releaseLate = resolve));
    let late: Promise<string> | undefined;
    using client = httpClient(name, async (url, init) => {
      if (++requests === 2) {
        // Reported lost at once, while the request itself goes on, slowly: it reaches the object later.
        const copy = { method: "POST", headers: new Headers(init.headers), body: init.body };
        late = lateGate.then(() => SELF.fetch(url, copy).then((response) => response.text()));
        throw new TypeError("network connection lost");
      }
      return SELF.fetch(url, init);
    });
    expect(await client.increment()).toBe(1);
    expect(await client.increment()).toBe(2); // request 2 "lost"; its resend (request 3) ran the call
    expect(await stored(name)).toBe(2);
    await wipe(name);
    releaseLate();
    const answer = await late!;
    expect({ stored: (await stored(name)) ?? 0, answer }).toEqual({
      stored: 0,
      answer: expect.stringMatching(/^\u001eR\[\[2,3,"EXPIRED"/),
    });
  });
});

/**
 * Exactly once over HTTP batches, the resends that http.test.ts, http-flaky.test.ts and
 * http-race.test.ts leave out, in workerd: the object evicted between a lost answer and its
 * resend (the record read back from storage), resends whose answers are lost too, an original
 * request still running when its resend arrives, an original that arrives after an eviction, a
 * lost answer the record keeps only a marker of, idempotent calls, the JSON form under a live
 * client's session header, and frames posted by hand reusing a call id. Each call runs once.
 */
import { createRpcClient, type FetchLike, httpTransport, RpcError, withCallOptions } from "@dorpc/rpc";
import { env, evictDurableObject, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";

const namespace = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E;
const stored = (name: string) =>
  runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
const evict = (name: string) => evictDurableObject(namespace().getByName(name));

/** The value `promise` resolved with, or the code and message of what it rejected with. */
function outcome(promise: PromiseLike<unknown>): Promise<{ value: unknown } | { code: string; message: string }> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({ code: RpcError.is(error) ? error.code : String(error), message: String((error as Error).message) }),
  );
}

function httpClient(name: string, fetch: FetchLike, extra: Record<string, unknown> = {}) {
  return createRpcClient<HttpE2e>("HTTP_E2E", name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    timeout: 10_000,
    reconnect: { initialDelay: 5, maxDelay: 20, jitter: 0 },
    ...extra,
  });
}

/**
 * What request n does: `ok` forwarded; `lose` forwarded, answered, the answer lost; `late`
 * reported lost at once while the request goes on and reaches the object (its answer is kept in
 * `late`, for the test to read).
 */
type Fate = "ok" | "lose" | "late";

function scripted(fate: (n: number) => Fate | Promise<Fate>) {
  const sent: { headers: Headers; body: string }[] = [];
  const late: Promise<string>[] = [];
  let n = 0;
  const fetch: FetchLike = async (url, init) => {
    sent.push({ headers: new Headers(init.headers), body: typeof init.body === "string" ? init.body : "<bytes>" });
    const f = await fate(++n);
    const copy = { method: "POST", headers: new Headers(init.headers), body: init.body };
    if (f === "ok") return SELF.fetch(url, init);
    if (f === "late") {
      late.push(SELF.fetch(url, copy).then((response) => response.text()));
      throw new TypeError("network connection lost (the request goes on)");
    }
    await (await SELF.fetch(url, copy)).arrayBuffer();
    throw new TypeError("network connection lost");
  };
  return { fetch, sent, late };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe("the object evicted between a lost answer and its resend", () => {
  for (const [label, first] of [
    ["a later call", false],
    ["the session's first call", true],
  ] as const) {
    it(`${label}: answered from the record read back from storage, not run again`, async () => {
      const name = uniqueName("http-resend-evict");
      const held = gate();
      const lost = first ? 1 : 2;
      const net = scripted(async (n) => {
        if (n === lost) return "lose";
        if (n > lost) await held.opened;
        return "ok";
      });
      using client = httpClient(name, net.fetch);
      if (!first) expect(await client.increment()).toBe(1);
      const call = outcome(client.increment());
      await vi.waitFor(() => expect(net.sent.length).toBe(lost + 1)); // the resend is on its way, held
      await evict(name);
      held.open();
      expect(await call).toEqual({ value: first ? 1 : 2 });
      expect(await stored(name)).toBe(first ? 1 : 2);
    });
  }
});

describe("resends whose answers are lost too", () => {
  it("a later call, its answer lost three times: each try is flagged as a resend, the fourth is answered from the record", async () => {
    const name = uniqueName("http-resend-thrice");
    const net = scripted((n) => (n >= 2 && n <= 4 ? "lose" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    expect(await outcome(client.increment())).toEqual({ value: 2 });
    expect(await stored(name)).toBe(2);
    expect(net.sent.map((s) => s.headers.get("X-Dorpc-Resending") !== null)).toEqual([false, false, true, true, true]);
  });

  it("the session's first call, its answer lost twice: answered once, from the record", async () => {
    const name = uniqueName("http-resend-first-twice");
    const net = scripted((n) => (n <= 2 ? "lose" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await outcome(client.increment())).toEqual({ value: 1 });
    expect(await stored(name)).toBe(1);
    expect(net.sent).toHaveLength(3);
  });
});

describe("the original request still running on the object when its resend arrives", () => {
  for (const [label, first] of [
    ["a later call", false],
    ["the session's first call", true],
  ] as const) {
    it(`${label}: the resend waits for the run and gets its answer; it runs once`, async () => {
      const name = uniqueName("http-resend-running");
      const original = first ? 1 : 2;
      const net = scripted((n) => (n === original ? "late" : "ok"));
      using client = httpClient(name, net.fetch);
      if (!first) expect(await client.increment()).toBe(1);
      const expected = first ? 1 : 2;
      expect(await outcome(client.slowIncrement(300))).toEqual({ value: expected });
      const [answer] = await Promise.all(net.late);
      expect(answer).toBe(`\u001eR[[${original},0,${expected}]]`);
      expect(await stored(name)).toBe(expected);
    });
  }

  it("the resend reported lost too while the original still runs (two copies in flight): it runs once", async () => {
    const name = uniqueName("http-resend-running-two");
    const net = scripted((n) => (n === 2 || n === 3 ? "late" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    expect(await outcome(client.slowIncrement(300))).toEqual({ value: 2 });
    expect(await Promise.all(net.late)).toHaveLength(2);
    expect(await stored(name)).toBe(2);
  });
});

describe("an original request arriving late", () => {
  it("after its resend was answered and the object evicted: answered from the record, not run again", async () => {
    const name = uniqueName("http-resend-late-evict");
    const held = gate();
    let late: Promise<string> | undefined;
    let requests = 0;
    using client = httpClient(name, async (url, init) => {
      if (++requests === 2) {
        const copy = { method: "POST", headers: new Headers(init.headers), body: init.body };
        late = held.opened.then(() => SELF.fetch(url, copy).then((response) => response.text()));
        throw new TypeError("network connection lost (the request goes on, slowly)");
      }
      return SELF.fetch(url, init);
    });
    expect(await client.increment()).toBe(1);
    expect(await client.increment()).toBe(2); // request 2 "lost"; its resend ran the call
    await evict(name);
    held.open();
    expect(await late).toBe("\u001eR[[2,0,2]]");
    expect(await stored(name)).toBe(2);
  });

  it("its answer lost after a later request's call was answered: the resend is answered from the record", async () => {
    const name = uniqueName("http-resend-after-later");
    const held = gate();
    const net = scripted(async (n) => (n === 2 ? (await held.opened, "lose") : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    const earlier = outcome(client.increment()); // request 2: held on the way, then its answer lost
    await vi.waitFor(() => expect(net.sent.length).toBe(2)); // request 2 has left the client
    expect(await outcome(client.increment())).toEqual({ value: 2 });
    held.open();
    expect(await earlier).toEqual({ value: 3 });
    expect(await stored(name)).toBe(3);
  });
});

describe("a lost answer the record keeps only a marker of", () => {
  it("an answer over maxResultBytes in the lost request: that call fails DISCONNECTED saying it ran; the increment beside it is answered from the record", async () => {
    const name = uniqueName("http-resend-marker");
    const net = scripted((n) => (n === 2 ? "lose" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    const big = outcome(client.text(200_000));
    const increment = outcome(client.increment());
    expect(await big).toEqual({
      code: "DISCONNECTED",
      message: expect.stringMatching(/ran before .*not kept .*maxResultBytes.*not run again/),
    });
    expect(await increment).toEqual({ value: 2 });
    expect(await stored(name)).toBe(2);
  });
});

describe("idempotent calls", () => {
  it("a later idempotent call whose answer is lost is resent without the Retry flag and answered from the record", async () => {
    const name = uniqueName("http-resend-idem");
    const net = scripted((n) => (n === 2 ? "lose" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    expect(await outcome(withCallOptions(client.increment(), { idempotent: true }))).toEqual({ value: 2 });
    expect(await stored(name)).toBe(2);
    // The same call under the same id, without the Retry flag: the record still answers it.
    expect(net.sent.map((s) => s.body)[2]).toBe('\u001eC[[2,["increment",[0]]]]');
  });

  it("an idempotent call, the session's first, lost then evicted: answered from the record", async () => {
    const name = uniqueName("http-resend-idem-evict");
    const held = gate();
    const net = scripted(async (n) => (n === 1 ? "lose" : (await held.opened, "ok")));
    using client = httpClient(name, net.fetch);
    const call = outcome(withCallOptions(client.increment(), { idempotent: true }));
    await vi.waitFor(() => expect(net.sent.length).toBe(2));
    await evict(name);
    held.open();
    expect(await call).toEqual({ value: 1 });
    expect(await stored(name)).toBe(1);
  });
});

describe("the JSON form under a live client's session header", () => {
  const postJson = (name: string, body: unknown, headers: Record<string, string>) =>
    SELF.fetch(`http://dorpc.test/__rpc/HTTP_E2E/${name}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    }).then(async (response) => ({ status: response.status, body: await response.json() }));

  it("runs its calls, with or without X-Dorpc-Resending, and the client's next lost answer is still answered from the record", async () => {
    const name = uniqueName("http-resend-json");
    const net = scripted((n) => (n === 3 ? "lose" : "ok"));
    using client = httpClient(name, net.fetch);
    expect(await client.increment()).toBe(1);
    expect(await client.increment()).toBe(2);
    const session = net.sent[0]!.headers.get("X-Dorpc-Session")!;
    const plain = await postJson(name, [{ method: "increment" }, { method: "increment" }], { "X-Dorpc-Session": session });
    const resending = await postJson(name, [{ method: "increment" }], { "X-Dorpc-Session": session, "X-Dorpc-Resending": "1" });
    expect([plain, resending]).toEqual([
      { status: 200, body: [{ result: 3 }, { result: 4 }] },
      { status: 200, body: [{ result: 5 }] },
    ]);
    // The client's call 3, its answer lost: replayed, not mistaken for the JSON requests' calls 1 and 2.
    expect(await outcome(client.increment())).toEqual({ value: 6 });
    expect(await stored(name)).toBe(6);
  });
});

describe("frames posted by hand", () => {
  const postFrame = (name: string, body: string, headers: Record<string, string> = {}) =>
    SELF.fetch(`http://dorpc.test/__rpc/HTTP_E2E/${name}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-dorpc", ...headers },
      body,
    }).then((response) => response.text());
  const increment = '\u001eC[[1,["increment",[0]]]]';

  it("a call flagged Retry without a session header is DISCONNECTED and not run", async () => {
    const name = uniqueName("http-frame-retry");
    expect(await postFrame(name, '\u001eC[[1,["increment",[0]],0,1]]')).toMatch(/^\u001eR\[\[1,3,"DISCONNECTED"/);
    expect(await stored(name)).toBeUndefined();
  });

  it("the same call id of one session twice, without the Retry flag: the second is answered from the record", async () => {
    const name = uniqueName("http-frame-twice");
    const headers = { "X-Dorpc-Session": "abcdefghijklmnopqrstuv" };
    expect([await postFrame(name, increment, headers), await postFrame(name, increment, headers)]).toEqual([
      "\u001eR[[1,0,1]]",
      "\u001eR[[1,0,1]]",
    ]);
    expect(await stored(name)).toBe(1);
  });

  it("the same, with the object evicted in between", async () => {
    const name = uniqueName("http-frame-twice-evict");
    const headers = { "X-Dorpc-Session": "abcdefghijklmnopqrstuw" };
    const first = await postFrame(name, increment, headers);
    await evict(name);
    expect([first, await postFrame(name, increment, headers)]).toEqual(["\u001eR[[1,0,1]]", "\u001eR[[1,0,1]]"]);
    expect(await stored(name)).toBe(1);
  });
});

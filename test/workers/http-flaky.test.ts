/**
 * Exactly once over HTTP batches through a network that misbehaves, in workerd: many requests in
 * flight from one client while its fetch fails at random — before the request leaves, after the
 * object answered, "failing" while the request still reaches the object later, with a 502 from a
 * gateway, or late — with calls of many turns, frames of more than 256 calls, bytes and Blob
 * arguments. Every call settles once with its own answer and the object runs each once
 * (reliability.md, HTTP batch row). Then single lost answers around a call still running or timed
 * out, a reference in a lost answer, and gateway answers (429, 302) that never reached the object.
 */
import { createRpcClient, type FetchLike, httpTransport, RpcError, withCallOptions } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";

const namespace = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E;
const stored = (name: string) =>
  runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));

function httpClient(name: string, fetch: FetchLike, extra: Record<string, unknown> = {}) {
  return createRpcClient<HttpE2e>("HTTP_E2E", name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 1, maxDelay: 20, jitter: 0 },
    ...extra,
  });
}

/** A fetch that forwards to the test Worker. */
const forward: FetchLike = (url, init) => SELF.fetch(url, init);

/** The code of what `promise` rejected with, or its value. */
function outcome(promise: PromiseLike<unknown>): Promise<{ value: unknown } | { code: string; message: string }> {
  return Promise.resolve(promise).then(
    (value) => ({ value }),
    (error: unknown) => ({ code: RpcError.is(error) ? error.code : String(error), message: (error as Error).message }),
  );
}

/** A seeded generator of numbers in [0, 1): the same failures on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * How a request fares: forwarded (`ok`); lost before it leaves (`before`); forwarded and answered,
 * the answer lost (`after`); reported lost at once, but reaching the object up to `lateMs` later
 * (`late`); forwarded, then answered 502 by a gateway (`502`); forwarded after up to 100 ms (`slow`).
 */
type Fate = "ok" | "before" | "after" | "late" | "502" | "slow";

function flakyFetch(seed: number, fates: Fate[], failRate: number, lateMs = 200) {
  const next = random(seed);
  const late: Promise<unknown>[] = [];
  const fetch: FetchLike = async (url, init) => {
    const fate: Fate = next() < failRate ? fates[Math.floor(next() * fates.length)]! : "ok";
    switch (fate) {
      case "ok":
        return SELF.fetch(url, init);
      case "before":
        throw new TypeError("network connection lost (before sending)");
      case "after": {
        await (await SELF.fetch(url, init)).arrayBuffer();
        throw new TypeError("network connection lost (after sending)");
      }
      case "late": {
        const copy = { method: "POST", headers: new Headers(init.headers), body: init.body };
        late.push(
          new Promise((resolve) => setTimeout(resolve, 30 + next() * lateMs)).then(() =>
            SELF.fetch(url, copy).then((r) => r.arrayBuffer()),
          ),
        );
        throw new TypeError("network connection lost (the request goes on)");
      }
      case "502": {
        await (await SELF.fetch(url, init)).arrayBuffer();
        return new Response("bad gateway", { status: 502 });
      }
      case "slow":
        await new Promise((resolve) => setTimeout(resolve, next() * 100));
        return SELF.fetch(url, init);
    }
  };
  return { fetch, late };
}

/** What every call of a run ended with: the fulfilled values, the rejections, the object's count. */
async function settleAll(name: string, calls: Promise<unknown>[], late: Promise<unknown>[]) {
  const outcomes = await Promise.allSettled(calls);
  await Promise.allSettled(late); // every late original has reached the object and been answered
  const values = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
  const rejected = outcomes.flatMap((o) => (o.status === "rejected" ? [String((o.reason as Error).message).slice(0, 200)] : []));
  return { values, rejected, stored: (await stored(name)) ?? 0 };
}

/** `turns` turns of one or two increment() calls each (then `tail` more, one at a time): each runs once. */
async function incrementsThrough(seed: number, fates: Fate[], failRate: number, turns = 50, lateMs = 200, tail = 0) {
  const name = uniqueName(`flaky-${seed}`);
  const { fetch, late } = flakyFetch(seed, fates, failRate, lateMs);
  using client = httpClient(name, fetch, { timeout: 20_000 });
  await client.count(); // the session is known to the object
  const calls: Promise<number>[] = [];
  for (let turn = 0; turn < turns; turn++) {
    calls.push(client.increment());
    if (turn % 3 === 0) calls.push(client.increment());
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  for (let i = 0; i < tail; i++) {
    const call = client.increment();
    calls.push(call);
    await call.catch(() => undefined); // one at a time, while the late originals arrive
  }
  const { values, rejected, stored } = await settleAll(name, calls, late);
  return { rejected: rejected.slice(0, 3), stored, distinct: new Set(values).size, total: calls.length };
}

describe("many requests in flight, a fetch that fails at random", () => {
  for (const [label, fates, seed] of [
    ["lost before sending", ["before"], 1],
    ["answers lost", ["after"], 2],
    ["502 from a gateway", ["502"], 3],
    ["requests reaching the object after being reported lost", ["late"], 4],
    ["slow requests and lost answers", ["slow", "after"], 5],
    ["every kind", ["before", "after", "late", "502", "slow"], 6],
    ["every kind", ["before", "after", "late", "502", "slow"], 7],
  ] as [string, Fate[], number][]) {
    it(`${label} (seed ${seed}): every call is answered once, each with its own value, and runs once`, async () => {
      const r = await incrementsThrough(seed, fates, 0.25);
      expect(r).toEqual({ rejected: [], stored: r.total, distinct: r.total, total: r.total });
    }, 60_000);
  }

  for (const seed of [11, 12]) {
    it(`half the requests lost, originals arriving up to 1.5 s late, after their resend was answered and acknowledged (seed ${seed})`, async () => {
      const r = await incrementsThrough(seed, ["late", "after", "before"], 0.5, 30, 1_500, 30);
      expect(r).toEqual({ rejected: [], stored: r.total, distinct: r.total, total: r.total });
    }, 60_000);
  }

  it("turns of 300 increments (frames cut in pieces) and calls carrying bytes: each runs once, each echo comes back", async () => {
    const name = uniqueName("cut-frames");
    const { fetch, late } = flakyFetch(21, ["before", "after", "late", "502"], 0.35, 300);
    using client = httpClient(name, fetch, { timeout: 30_000 });
    await client.count();
    const increments: Promise<number>[] = [];
    const echoes: Promise<unknown>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      for (let i = 0; i < 300; i++) increments.push(client.increment());
      for (let i = 0; i < 5; i++) echoes.push(client.echo(new Uint8Array([turn, i, 1, 2, 3])));
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    const { values, rejected, stored } = await settleAll(name, [...increments, ...echoes], late);
    expect({ rejected: rejected.slice(0, 3), stored, distinct: new Set(values.slice(0, 900)).size }).toEqual({
      rejected: [],
      stored: 900,
      distinct: 900,
    });
    expect((values.slice(900) as Uint8Array[]).map((bytes) => Array.from(bytes).join(","))).toEqual(
      Array.from({ length: 15 }, (_, k) => `${Math.floor(k / 5)},${k % 5},1,2,3`),
    );
  }, 60_000);

  it("turns of Blob arguments and increments: each runs once, each Blob comes back with its type and bytes", async () => {
    const name = uniqueName("blobs");
    const { fetch, late } = flakyFetch(31, ["after", "before", "502"], 0.4);
    using client = httpClient(name, fetch, { timeout: 30_000 });
    await client.count();
    const text = (turn: number) => `blob-${turn}-${"A".repeat(20_000 * (turn % 3))}`;
    const increments: Promise<number>[] = [];
    const blobs: Promise<unknown>[] = [];
    for (let turn = 0; turn < 10; turn++) {
      increments.push(client.increment());
      blobs.push(client.echo(new Blob([text(turn)], { type: "text/x-flaky" })));
      increments.push(client.increment());
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    const { values, rejected, stored } = await settleAll(name, [...increments, ...blobs], late);
    expect({ rejected: rejected.slice(0, 3), stored }).toEqual({ rejected: [], stored: 20 });
    const echoed = await Promise.all((values.slice(20) as Blob[]).map(async (blob) => `${blob.type}:${await blob.text()}`));
    expect(echoed).toEqual(Array.from({ length: 10 }, (_, turn) => `text/x-flaky:${text(turn)}`));
  }, 60_000);
});

describe("one lost answer", () => {
  it("while another request's call still runs on the object: its resend waits for it, and it runs once", async () => {
    const name = uniqueName("resend-waits");
    let requests = 0;
    let slowForwarded!: () => void;
    const forwarded = new Promise<void>((resolve) => (slowForwarded = resolve));
    using client = httpClient(name, async (url, init) => {
      const n = ++requests;
      const response = SELF.fetch(url, init);
      if (n === 2) slowForwarded();
      if (n !== 3) return response;
      await (await response).arrayBuffer();
      throw new TypeError("network connection lost");
    });
    expect(await client.increment()).toBe(1); // request 1: the session is known
    const slow = client.slowIncrement(300); // request 2
    await forwarded;
    const quick = client.increment(); // request 3: its answer is lost, so slow and quick are resent
    const values = [await slow, await quick];
    expect(values.sort((a, b) => a - b)).toEqual([2, 3]);
    expect(await stored(name)).toBe(3);
  });

  it("a call that timed out while its request was in flight is TIMEOUT, runs once on the object, and is not resent when a later answer is lost", async () => {
    const name = uniqueName("timed-out");
    const bodies: string[] = [];
    let loseNext = false;
    using client = httpClient(name, async (url, init) => {
      bodies.push(String(init.body));
      const response = await SELF.fetch(url, init);
      if (!loseNext) return response;
      loseNext = false;
      await response.arrayBuffer();
      throw new TypeError("network connection lost");
    });
    await client.count();
    expect(await outcome(withCallOptions(client.slowIncrement(400), { timeout: 50 }))).toMatchObject({ code: "TIMEOUT" });
    loseNext = true;
    expect(await outcome(client.increment())).toEqual({ value: expect.any(Number) }); // resent once, answered
    await vi.waitFor(async () => expect(await stored(name)).toBe(2), { timeout: 5_000 });
    expect(bodies.filter((body) => body.includes("slowIncrement"))).toHaveLength(1);
  });

  it("a returned stub whose answer is lost is REFERENCE_LOST saying the call ran and was not run again; a call pipelined on it in the same request is answered", async () => {
    let requests = 0;
    using client = httpClient(uniqueName("ref-lost"), async (url, init) => {
      const response = await SELF.fetch(url, init);
      if (++requests > 1) return response;
      await response.arrayBuffer();
      throw new TypeError("network connection lost");
    });
    const box = client.box("A");
    const title = box.title();
    expect(await outcome(box)).toEqual({
      code: "REFERENCE_LOST",
      message: expect.stringMatching(/The call ran on HttpE2e.*It was not run again/),
    });
    expect(await outcome(title)).toEqual({ value: "A" });
  });
});

describe("answers from a gateway that never reached the object", () => {
  it("a 429: CONNECT_FAILED naming the status, the call did not run, and the next call works", async () => {
    const name = uniqueName("429");
    let first = true;
    using client = httpClient(name, (url, init) => {
      if (!first) return forward(url, init);
      first = false;
      return Promise.resolve(new Response("slow down", { status: 429, headers: { "Retry-After": "1" } }));
    });
    expect(await outcome(client.increment())).toEqual({ code: "CONNECT_FAILED", message: expect.stringContaining("429") });
    expect(await client.increment()).toBe(1);
  });

  it("a 302 redirect (to a login page): the call fails CONNECT_FAILED naming the status, rather than waiting", async () => {
    using client = httpClient(uniqueName("302"), () =>
      Promise.resolve(new Response(null, { status: 302, headers: { Location: "http://elsewhere.test/login" } })),
    );
    expect(await outcome(client.increment())).toEqual({ code: "CONNECT_FAILED", message: expect.stringContaining("302") });
  });
});

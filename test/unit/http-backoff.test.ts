/**
 * An HTTP client after a lost answer (unit tier, a stub fetch): it keeps its backoff, ends the
 * requests of the transport that lost it, never sends a call given up while it waits, resends
 * what was in flight at most once, and resends an idempotent call without the Retry flag
 * `retries` times, then as any sent call (api.md `retries`).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, httpTransport, rpcConnection, withCallOptions } from "../../packages/rpc/src/index.js";
import { expectRpcError, rejectionOf } from "./helpers.js";

describe("an HTTP client reconnecting after a 5xx keeps its backoff (docs/api.md)", () => {
  // docs/api.md (createRpcClient, reconnect): "The client keeps retrying with the backoff above
  // until it connects or is disposed"; reliability.md: `reconnecting` is "waiting out the backoff,
  // or attempting". session.ts onQueued now clears the reconnect timer and connects at once for a
  // connectionless transport whenever a call is queued while reconnecting: against an object
  // answering 503 (overloaded), every new call re-POSTs at once, with every pending resend, and the
  // backoff (here 60 s) never applies.
  it("calls made while waiting out the backoff do not each send a request at once", async () => {
    let posts = 0;
    const fetch = async (): Promise<Response> => {
      posts++;
      return new Response("overloaded", { status: 503 });
    };
    const client = createRpcClient<{ ping(): string }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 60_000, maxDelay: 60_000, jitter: 0 },
      timeout: 0,
      heartbeat: false,
    });
    try {
      void client.ping().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
      expect(posts).toBe(1); // the first request got a 503: the client backs off 60 s
      expect(rpcConnection(client).state).toBe("reconnecting");
      for (let i = 0; i < 5; i++) {
        void client.ping().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(posts).toBe(1); // got 6: one request per call, none waiting for the backoff
    } finally {
      rpcConnection(client).close();
    }
  });
});

describe("an HTTP transport that ended aborts the requests it still had in flight", () => {
  // A lost answer (a 5xx, a network error) ends the transport and its calls are resent on the
  // next one, so the answers of its other requests would be ignored. Left running, a hanging
  // request kept a Node process alive after the client was disposed.
  it("a request hanging when another got a 503 is aborted; both calls are answered once, by the resend", async () => {
    const signals: AbortSignal[] = [];
    const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const signal = init!.signal!;
      signals.push(signal);
      if (signals.length === 1) {
        return new Promise<Response>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      }
      if (signals.length === 2) return new Response("busy", { status: 503 });
      const body = typeof init!.body === "string" ? init!.body : new TextDecoder().decode(init!.body as Uint8Array);
      const ids = (JSON.parse(body.slice(2)) as unknown[][]).map((call) => call[0] as number);
      return new Response(`\u001eR${JSON.stringify(ids.map((id) => [id, 0, id * 10]))}`, {
        headers: { "Content-Type": "application/x-dorpc" },
      });
    };
    using client = createRpcClient<{ a(): number; b(): number }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 1, maxDelay: 1, jitter: 0 },
      timeout: 0,
    });
    const a = client.a();
    await new Promise((r) => setTimeout(r, 10)); // its request is in flight, hanging
    const b = client.b();
    expect(await Promise.all([a, b])).toEqual([10, 20]);
    expect(signals[0]!.aborted).toBe(true);
  });
});

/** Method names of the calls in each request `fetch` saw, and a fetch answering each call with its id. */
function recordingFetch(decide: (request: number) => "answer" | "503" | Promise<"answer" | "lost">) {
  const requests: unknown[][][] = [];
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = typeof init!.body === "string" ? init!.body : new TextDecoder().decode(init!.body as Uint8Array);
    const calls = JSON.parse(body.slice(2)) as unknown[][];
    requests.push(calls);
    const what = await decide(requests.length);
    if (what === "503") return new Response("busy", { status: 503 });
    if (what === "lost") throw new TypeError("network connection lost");
    return new Response(`\u001eR${JSON.stringify(calls.map((call) => [call[0], 0, call[0]]))}`, {
      headers: { "Content-Type": "application/x-dorpc" },
    });
  };
  /** How many requests carried a call to `method`. */
  const sentCount = (method: string) => requests.filter((calls) => calls.some((call) => (call[1] as unknown[])[0] === method)).length;
  return { fetch, requests, sentCount };
}

describe("calls given up while the client waits out its backoff", () => {
  // api.md withCallOptions: "A call not yet sent is then never sent"; a sent call is not resent
  // once its caller gave it up. Fake timers hold the backoff until each test moves past it.
  afterEach(() => {
    vi.useRealTimers();
  });

  function backingOff(fetch: (url: string | URL | Request, init?: RequestInit) => Promise<Response>) {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    return createRpcClient<{ a(): number; b(): number }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 1_000, maxDelay: 1_000, jitter: 0 },
      timeout: 0,
    });
  }

  it("a call aborted while it waits is never sent; the call resent after the backoff is answered", async () => {
    const { fetch, sentCount } = recordingFetch((n) => (n === 1 ? "503" : "answer"));
    using client = backingOff(fetch);
    const a = client.a();
    await vi.waitFor(() => expect(rpcConnection(client).state).toBe("reconnecting"));
    const controller = new AbortController();
    const b = rejectionOf(withCallOptions(client.b(), { signal: controller.signal }));
    await vi.advanceTimersByTimeAsync(10);
    controller.abort(new Error("gave up"));
    expect(((await b) as Error).message).toBe("gave up");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a).toBe(1);
    expect({ a: sentCount("a"), b: sentCount("b") }).toEqual({ a: 2, b: 0 });
  });

  it("a call that times out while it waits is never sent, and its TIMEOUT says so", async () => {
    const { fetch, sentCount } = recordingFetch((n) => (n === 1 ? "503" : "answer"));
    using client = backingOff(fetch);
    const a = client.a();
    await vi.waitFor(() => expect(rpcConnection(client).state).toBe("reconnecting"));
    const b = rejectionOf(withCallOptions(client.b(), { timeout: 50 }));
    await vi.advanceTimersByTimeAsync(50);
    const error = expectRpcError(await b, "TIMEOUT");
    expect(error.message).toContain("the call was never sent");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a).toBe(1);
    expect(sentCount("b")).toBe(0);
  });

  it("a call aborted after its request got a 503 (it may have run) is not resent", async () => {
    const { fetch, sentCount } = recordingFetch((n) => (n === 1 ? "503" : "answer"));
    using client = backingOff(fetch);
    const controller = new AbortController();
    const a = rejectionOf(withCallOptions(client.a(), { signal: controller.signal }));
    await vi.waitFor(() => expect(rpcConnection(client).state).toBe("reconnecting"));
    controller.abort(new Error("gave up"));
    expect(((await a) as Error).message).toBe("gave up");
    await vi.advanceTimersByTimeAsync(1_000);
    const b = client.b();
    await vi.advanceTimersByTimeAsync(0);
    expect(await b).toBeGreaterThan(0);
    expect({ a: sentCount("a"), b: sentCount("b") }).toEqual({ a: 1, b: 1 });
  });
});

describe("what is resent after a lost answer", () => {
  it("50 requests in flight, one answer lost: every call is answered with its own reply, none sent more than twice", async () => {
    const held: (() => void)[] = [];
    const { fetch, requests } = recordingFetch(async (n) => {
      if (n > 50) return "answer";
      await new Promise<void>((resolve) => held.push(resolve));
      return n === 25 ? "lost" : "answer";
    });
    using client = createRpcClient<{ a(n: number): number }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 1, maxDelay: 1, jitter: 0 },
      timeout: 0,
    });
    const calls: Promise<number>[] = [];
    for (let turn = 0; turn < 50; turn++) {
      calls.push(client.a(turn));
      await new Promise((r) => setTimeout(r, 0)); // one request per turn
    }
    await vi.waitFor(() => expect(held).toHaveLength(50));
    for (const release of held) release();
    // Each call's id is its turn + 1, and the stub answers each call with its id.
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const sends = new Map<unknown, number>();
    for (const calls of requests) for (const call of calls) sends.set(call[0], (sends.get(call[0]) ?? 0) + 1);
    expect(Math.max(...sends.values())).toBe(2);
  });
});

describe("an idempotent call after its retries (api.md `retries`)", () => {
  it.each([
    [true, "TIMEOUT"],
    [false, "DISCONNECTED"],
  ] as const)("exactlyOnce %s: resent unflagged `retries` times, then as any sent call: %s", async (exactlyOnce, code) => {
    const { fetch, requests } = recordingFetch(() => "503");
    using client = createRpcClient<{ a(): number }>("A", "b", {
      baseUrl: "http://example.test",
      transport: httpTransport({ fetch }),
      reconnect: { initialDelay: 5, maxDelay: 5, jitter: 0 },
      exactlyOnce,
      timeout: 300,
    });
    const error = expectRpcError(await rejectionOf(withCallOptions(client.a(), { idempotent: true, retries: 2 })), code);
    expect(error.message).toContain("may have run");
    // The envelope's fourth element is its flags; 1 is Retry (protocol.md, call envelopes).
    const flags = requests.map((calls) => (calls[0]![3] as number | undefined) ?? 0);
    expect(flags.slice(0, 3)).toEqual([0, 0, 0]);
    if (exactlyOnce) expect(flags.length > 3 && flags.slice(3).every((f) => f === 1)).toBe(true);
    else expect(flags).toHaveLength(3);
  });
});

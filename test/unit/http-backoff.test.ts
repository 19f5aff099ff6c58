/** An HTTP client reconnecting after a lost answer keeps its backoff (unit tier, a stub fetch). */
import { describe, expect, it } from "vitest";
import { createRpcClient, httpTransport, rpcConnection } from "../../packages/rpc/src/index.js";

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

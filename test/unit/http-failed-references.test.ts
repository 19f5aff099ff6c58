/**
 * Functions a client passes in an HTTP batch whose request was refused, or never reached the
 * object, are given back by the transport: nothing on the object ever held them, so no release
 * for them will come. Before, they stayed counted in the client's export table for the client's
 * whole life; a module-scope client that met `limits.maxExports` such failures then refused every
 * later call passing a function with LIMIT, although the object was reachable again.
 * The cases: a fetch that fails before anything was sent, a typed 4xx refusal, an untyped 4xx (a
 * route hook), an answer that is not dorpc frames, and an answer that ends without the call's
 * reply (and without the object's release). When the answer does carry the object's release,
 * the transport gives nothing back a second time. The real router's 401 is in
 * test/workers/http-failed-references.test.ts.
 */
import { describe, expect, it, vi } from "vitest";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { createRpcClient, httpTransport, RpcError } from "../../packages/rpc/src/index.js";

type Api = { take(cb: () => number): number; pair(a: () => number, b: () => number): number };
type Fetch = (url: string, init: RequestInit) => Promise<Response>;

const MAX_EXPORTS = 3;

function client(fetch: Fetch) {
  const c = createRpcClient<Api>("A", "b", {
    baseUrl: "http://example.test",
    transport: httpTransport({ fetch }),
    reconnect: { initialDelay: 1, maxDelay: 1, jitter: 0 },
    timeout: 2_000,
    heartbeat: false,
    limits: { maxExports: MAX_EXPORTS },
  });
  return { c, session: getRpcSession(c) };
}

/** The code a call rejects with, or "resolved". */
async function code(p: PromiseLike<unknown>): Promise<string> {
  try {
    await p;
    return "resolved";
  } catch (e) {
    return RpcError.is(e) ? e.code : String(e);
  }
}

const dorpc = { "Content-Type": "application/x-dorpc" };

const refusals: [string, Fetch, string][] = [
  [
    "nothing listening (fetch fails with ECONNREFUSED)",
    async () => {
      throw Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } });
    },
    "CONNECT_FAILED",
  ],
  [
    "a typed 4xx refusal",
    async () =>
      new Response(JSON.stringify({ error: { code: "PROTOCOL", message: "refused" } }), {
        status: 400,
        headers: { "Content-Type": "application/json" },
      }),
    "PROTOCOL",
  ],
  ["an untyped 401 (a route hook refused it)", async () => new Response("blocked", { status: 401 }), "CONNECT_FAILED"],
  [
    "an answer that is not dorpc frames (text/html)",
    async () => new Response("<html>", { status: 200, headers: { "Content-Type": "text/html" } }),
    "CONNECT_FAILED",
  ],
  [
    "an answer without the call's reply or the object's release",
    async () => new Response("\u001eR[]", { status: 200, headers: dorpc }),
    "DISCONNECTED",
  ],
];

describe("functions in an HTTP request that never reached the object's call", () => {
  for (const [name, fetch, expected] of refusals) {
    it(`${name}: each call fails ${expected}, past maxExports too, and the client's export table ends empty`, async () => {
      const { c, session } = client(fetch);
      using _ = c;
      const codes: string[] = [];
      for (let i = 0; i < MAX_EXPORTS + 2; i++) codes.push(await code(c.take(() => i)));
      expect(codes, "LIMIT: the functions of earlier refused requests were still counted against maxExports").toEqual(
        Array(MAX_EXPORTS + 2).fill(expected),
      );
      expect(session.exports.size, "the refused requests' functions were left in the client's export table").toBe(0);
    });
  }

  it("one refused request carrying the same function in two calls, twice in one of them: every count is given back", async () => {
    let requests = 0;
    const { c, session } = client(async () => (requests++, new Response("blocked", { status: 401 })));
    using _ = c;
    const fn = () => 1;
    const both = [c.take(fn), c.pair(fn, fn)];
    expect(await Promise.all(both.map(code))).toEqual(["CONNECT_FAILED", "CONNECT_FAILED"]);
    expect(requests).toBe(1);
    expect(session.exports.size, "a function sent three times in one request was given back fewer times").toBe(0);
  });
});

describe("an answer that carries the object's release", () => {
  it("is not given back a second time: the same function, held by a call of a request still on its way, stays exported", async () => {
    const answers: ((response: Response) => void)[] = [];
    const bodies: string[] = [];
    const { c, session } = client((_url, init) => {
      bodies.push(typeof init.body === "string" ? init.body : new TextDecoder().decode(init.body as Uint8Array));
      return new Promise<Response>((resolve) => answers.push(resolve));
    });
    using _ = c;
    const fn = () => 1;
    const first = code(c.take(fn));
    await vi.waitFor(() => expect(answers).toHaveLength(1));
    const second = code(c.take(fn)); // a later turn: a request of its own
    await vi.waitFor(() => expect(answers).toHaveLength(2));
    expect(session.exports.size).toBe(1);
    // The EXPORT record ([31, [id, kind]]) the first request carried the function in.
    const id = Number(/\[31,\[(\d+),/.exec(bodies[0]!)?.[1]);
    expect(id).toBeGreaterThan(0);
    // The first request's answer: the object's release of the function it carried, but no reply.
    answers[0]!(new Response(`\u001eX[[${id},1]]`, { status: 200, headers: dorpc }));
    expect(await first).toBe("DISCONNECTED");
    expect(
      session.exports.size,
      "the transport gave the function back again after the object's release: the other call's hold was lost",
    ).toBe(1);
    answers[1]!(new Response("blocked", { status: 401 }));
    expect(await second).toBe("CONNECT_FAILED");
    expect(session.exports.size).toBe(0);
  });
});

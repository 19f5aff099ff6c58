/**
 * HTTP batches in workerd: `createRpcClient(…, { transport: httpTransport() })` and hand-written requests
 * (the JSON form `curl` uses) through the test Worker (routeDORequest) into real Durable Objects.
 * Each request is one frame of calls, run by the same dispatcher as a socket's frames.
 */
import { createRpcClient, type FetchLike, httpTransport, RpcError } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { rpcFailure, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

interface Sent {
  url: string;
  headers: Headers;
  body: string | Uint8Array;
}

/** A fetch into the test Worker that records what it sends. */
function recordingFetch(): { fetch: FetchLike; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: FetchLike = (url, init) => {
    sent.push({ url, headers: new Headers(init.headers), body: init.body as string | Uint8Array });
    return SELF.fetch(url, init);
  };
  return { fetch, sent };
}

/** A recording fetch that loses the next `n` answers (set with `lose(n)`) after the object sent them. */
function losingFetch(): { fetch: FetchLike; sent: Sent[]; lose(n: number): void } {
  const sent: Sent[] = [];
  let losing = 0;
  const fetch: FetchLike = async (url, init) => {
    sent.push({ url, headers: new Headers(init.headers), body: init.body as string });
    const response = await SELF.fetch(url, init);
    if (losing-- > 0) {
      await response.arrayBuffer();
      throw new TypeError("network connection lost");
    }
    return response;
  };
  return { fetch, sent, lose: (n) => (losing = n) };
}

function httpClient<T>(binding: string, name: string, fetch: FetchLike, extra: Record<string, unknown> = {}) {
  return createRpcClient<T>(binding, name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    ...extra,
  });
}

function count(name: string): Promise<number | undefined> {
  return runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
}

/** POSTs `body` to COUNTER `name` with `type`. */
function post(name: string, body: BodyInit, type = "application/json", headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${name}`, { method: "POST", body, headers: { "Content-Type": type, ...headers } });
}

describe("the HTTP batch client", () => {
  it("runs calls on the object; calls made in one turn travel in one request", async () => {
    const name = uniqueName("http");
    const { fetch, sent } = recordingFetch();
    using client = httpClient<Counter>("COUNTER", name, fetch);
    expect(await Promise.all([client.increment(1), client.increment(2), client.getValue()])).toEqual([1, 3, 3]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe(`http://dorpc.test/__rpc/COUNTER/${name}`);
    expect(sent[0]!.headers.get("Content-Type")).toBe("application/x-dorpc");
    expect(sent[0]!.headers.get("X-Dorpc-Session")).toMatch(/^[A-Za-z0-9_-]{16,64}$/);
    expect(await client.increment(4)).toBe(7);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.headers.get("X-Dorpc-Session")).toBe(sent[0]!.headers.get("X-Dorpc-Session"));
    expect(await count(name)).toBe(7);
  });

  it("pipelines: a call on a call's result and a call taking a pending result go in the same request", async () => {
    const { fetch, sent } = recordingFetch();
    using client = httpClient<Counter>("COUNTER", uniqueName("pipe"), fetch);
    const [ada, echoed, max] = await Promise.all([client.users.get("a"), client.echo(client.increment(5)), client.config.limits.max]);
    expect(ada).toEqual({ id: "a", name: "Ada", tags: new Set(["admin"]) });
    expect(echoed).toBe(5);
    expect(max).toBe(10);
    expect(sent).toHaveLength(1);
  });

  it("carries every structured-clone value, bytes included, both ways", async () => {
    using client = httpClient<Counter>("COUNTER", uniqueName("values"), recordingFetch().fetch);
    const cyclic: Record<string, unknown> = { at: new Date(5) };
    cyclic.self = cyclic;
    const value = { map: new Map([[1, new Set(["x"])]]), big: 2n ** 70n, cyclic, bytes: new Uint8Array([0, 1, 255]) };
    const back = (await client.echo(value)) as typeof value;
    expect(back.map).toEqual(value.map);
    expect(back.big).toBe(value.big);
    expect(back.cyclic.self).toBe(back.cyclic);
    expect(back.bytes).toEqual(value.bytes);
    const big = new Uint8Array(100_000).map((_, i) => i % 251);
    const [one, two] = await Promise.all([client.echo(big), client.echo(big.subarray(10))]);
    expect(one).toEqual(big);
    expect(two).toEqual(big.subarray(10));
  });

  it("brings back errors the method threw, and refusals of the access policy", async () => {
    using client = httpClient<Counter>("COUNTER", uniqueName("errors"), recordingFetch().fetch);
    const thrown = await client.throwTypeError().catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).toBe("expected a number");
    await rpcFailure((client as unknown as { _private(): Promise<string> })._private(), "NOT_FOUND");
    await rpcFailure((client as unknown as { nope(): Promise<void> }).nope(), "NOT_FOUND");
  });

  it("rpcCaller() on the object: no socket (nothing to call back), a connection time and a signal", async () => {
    using client = httpClient<Counter>("COUNTER", uniqueName("caller"), recordingFetch().fetch);
    expect(await client.callerInfo()).toEqual({ socket: false, connectedAt: true, signal: true });
  });

  it("a function passed as an argument cannot be called back: the object's call to it fails NOT_CALLABLE", async () => {
    using client = httpClient<Composer>("COMPOSER", uniqueName("callback"), recordingFetch().fetch);
    const error = await rpcFailure(
      client.callBack((n: number) => n, 1),
      "NOT_CALLABLE",
    );
    expect(error.message).toContain("HTTP batch");
  });

  it("a reference handed out ends with its request: a later call on it fails with a typed error, not a wrong answer", async () => {
    const { fetch, sent } = recordingFetch();
    using client = httpClient<Composer>("COMPOSER", uniqueName("stub"), fetch);
    // In one request the reference works (pipelined):
    expect(await client.openRoom("a").join("x")).toBe(1);
    const room = await client.openRoom("b");
    const error = await room.join("y").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe("REFERENCE_LOST");
    expect((error as RpcError).message).toContain("end with the request that received them");
    expect(sent.length).toBeGreaterThanOrEqual(3);
  });

  it("goes through the Worker's onBeforeConnect: it can refuse the request or replace it", async () => {
    const name = uniqueName("hooks");
    using blocked = httpClient<Counter>("COUNTER", name, recordingFetch().fetch, { query: { block: "1" } });
    const refused = await rpcFailure(blocked.increment(), "CONNECT_FAILED");
    expect(refused.message).toContain(`HTTP 403 (connect blocked for COUNTER/${name})`);
    expect(await count(name)).toBeUndefined();
    using replaced = httpClient<Counter>("COUNTER", name, recordingFetch().fetch, { query: { replace: "1" } });
    expect(await replaced.increment()).toBe(1);
    expect(await replaced.lastRequestHeader()).toBe("yes");
  });

  it("exactly once: an answer lost on the way back makes the client resend, and the object answers from its record", async () => {
    const name = uniqueName("resend");
    const { fetch, sent, lose } = losingFetch();
    using client = httpClient<Counter>("COUNTER", name, fetch);
    expect(await client.increment(1)).toBe(1); // the object has answered this session once
    lose(1);
    expect(await client.increment(3)).toBe(4);
    expect(await count(name)).toBe(4); // ran once
    expect(sent).toHaveLength(3);
    expect(sent[1]!.headers.get("X-Dorpc-Resending")).toBeNull();
    expect(sent[2]!.headers.get("X-Dorpc-Resending")).toMatch(/^1; age=\d+$/); // resending, and how old the session is
    expect(sent[2]!.headers.get("X-Dorpc-Session")).toBe(sent[0]!.headers.get("X-Dorpc-Session"));
    expect(sent[1]!.body).toBe('\u001eC[[2,["increment",[0,3]],0,0,2]]'); // answered: call 1's reply arrived
    expect(sent[2]!.body).toBe('\u001eC[[2,["increment",[0,3]],0,1]]'); // the same call under the same id, flagged Retry
    expect(await client.increment(1)).toBe(5);
  });

  it("exactly once: when the session's very first answer is lost the resend says so, with the session's age, and is answered from the record (run once)", async () => {
    const name = uniqueName("resend-first");
    const { fetch, sent, lose } = losingFetch();
    lose(1);
    using client = httpClient<Counter>("COUNTER", name, fetch);
    expect(await client.increment(3)).toBe(3);
    expect(await count(name)).toBe(3); // the record knew the session and the call: answered from it
    expect(sent).toHaveLength(2);
    // A resend even before any answer arrived: a wipe of the object's storage in between must
    // not let it run again; the age tells a young session from one the object forgot.
    expect(sent[1]!.headers.get("X-Dorpc-Resending")).toMatch(/^1; age=\d+$/);
    expect(sent[1]!.headers.get("X-Dorpc-Session")).toBe(sent[0]!.headers.get("X-Dorpc-Session"));
    expect(await client.increment(1)).toBe(4);
  });

  it("with exactlyOnce: false a lost answer fails the call DISCONNECTED (it may have run) and nothing is resent", async () => {
    const name = uniqueName("at-most-once");
    let requests = 0;
    const fetch: FetchLike = async (url, init) => {
      requests++;
      const response = await SELF.fetch(url, init);
      await response.arrayBuffer();
      throw new TypeError("network connection lost");
    };
    using client = httpClient<Counter>("COUNTER", name, fetch, { exactlyOnce: false });
    await rpcFailure(client.increment(3), "DISCONNECTED");
    expect(requests).toBe(1);
    expect(await count(name)).toBe(3);
  });

  it("a refused request fails its calls with the typed error the object sent", async () => {
    const fetch: FetchLike = (url, init) =>
      SELF.fetch(url, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers)), "X-Dorpc-Session": "short" } });
    using client = httpClient<Counter>("COUNTER", uniqueName("refused"), fetch);
    const error = await rpcFailure(client.getValue(), "PROTOCOL");
    expect(error.message).toContain("X-Dorpc-Session");
    expect(error.message).toContain("HTTP 400");
  });

  it("an answer that is not dorpc's (a web page on that path) fails the calls CONNECT_FAILED, saying what came", async () => {
    const page: FetchLike = async () => new Response("<!doctype html><p>Hello", { headers: { "Content-Type": "text/html" } });
    using client = httpClient<Counter>("COUNTER", uniqueName("page"), page);
    const error = await rpcFailure(client.getValue(), "CONNECT_FAILED");
    expect(error.message).toContain("answered with text/html, not dorpc frames");
    const missing: FetchLike = async () => new Response("Not found", { status: 404 });
    using lost = httpClient<Counter>("COUNTER", uniqueName("missing"), missing);
    expect((await rpcFailure(lost.getValue(), "CONNECT_FAILED")).message).toContain("HTTP 404 (Not found)");
  });

  it("rejects options that cannot work, with BAD_OPTION", () => {
    expect(() => createRpcClient("COUNTER", "x", { transport: "http" as never, baseUrl: "http://a" })).toThrow(
      /transport must be "websocket" or a TransportFactory/,
    );
    expect(() => httpTransport({ headers: 5 as never })).toThrow(/headers.*must be an object, a list of pairs or a Headers/);
    expect(() => httpTransport({ fetch: 5 as never })).toThrow(/fetch \}\) must be a function/);
    expect(() => createRpcClient("COUNTER", "x", { transport: httpTransport() })).toThrow(/baseUrl is required/);
  });
});

describe("the JSON form (for curl)", () => {
  it('answers {"method", "args"} with {"result"}', async () => {
    const name = uniqueName("json");
    const response = await post(name, JSON.stringify({ method: "increment", args: [2] }));
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toContain("application/json");
    expect(await response.json()).toEqual({ result: 2 });
    expect(await count(name)).toBe(2);
  });

  it("runs an array of calls in order and answers each: results, thrown errors, refusals, values JSON cannot carry", async () => {
    const name = uniqueName("json-batch");
    const response = await post(
      name,
      JSON.stringify([
        { method: "increment", args: [5] },
        { method: "getValue" },
        { method: "users.count" },
        { method: "throwCustom" },
        { method: "nope" },
        { method: "_private" },
        { method: "users.get", args: ["a"] },
      ]),
    );
    expect(response.status).toBe(200);
    const answers = (await response.json()) as unknown[];
    expect(answers.slice(0, 3)).toEqual([{ result: 5 }, { result: 5 }, { result: 2 }]);
    expect(answers[3]).toEqual({ error: { name: "QuotaExceededError", message: "quota exceeded" } });
    expect(answers[4]).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect(answers[5]).toMatchObject({ error: { code: "NOT_FOUND" } }); // private names do not exist over RPC
    expect(answers[6]).toMatchObject({ error: { code: "ENCODE" } });
    expect(JSON.stringify(answers)).not.toContain(env.SECRET);
  });

  it("void results are null", async () => {
    const response = await post(uniqueName("void"), JSON.stringify({ method: "reset" }));
    expect(await response.json()).toEqual({ result: null });
  });
});

describe("requests the endpoint refuses (typed 4xx, the object untouched)", () => {
  async function refusedWith(response: Response, status: number, code: string, text: RegExp): Promise<void> {
    expect(response.status).toBe(status);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe(code);
    expect(body.error.message).toMatch(text);
  }

  it.each([
    ["malformed JSON", "{method:", "application/json", 400, "DECODE", /not JSON/],
    ["a call without method", JSON.stringify({ args: [1] }), "application/json", 400, "PROTOCOL", /needs "method"/],
    [
      "args that are not an array",
      JSON.stringify({ method: "increment", args: 1 }),
      "application/json",
      400,
      "PROTOCOL",
      /"args" must be an array/,
    ],
    ["an empty batch", "[]", "application/json", 400, "PROTOCOL", /no calls/],
    ["another content type", "increment", "text/plain", 415, "PROTOCOL", /application\/x-dorpc/],
    ["a frame of replies", "\u001eR[[1,0,1]]", "application/x-dorpc", 400, "PROTOCOL", /frame of calls/],
    ["a malformed frame of calls", "\u001eC[[1,", "application/x-dorpc", 400, "PROTOCOL", /./],
    ["text that is not a frame", "hello", "application/x-dorpc", 400, "PROTOCOL", /frame of calls/],
  ] as const)("%s", async (_label, body, type, status, code, text) => {
    const name = uniqueName("refused");
    await post(name, JSON.stringify({ method: "increment", args: [1] }));
    await refusedWith(await post(name, body, type), status, code, text);
    expect(await count(name)).toBe(1);
  });

  it("a session header that is not one", async () => {
    const name = uniqueName("session");
    const response = await post(name, JSON.stringify({ method: "increment" }), "application/json", { "X-Dorpc-Session": "../../etc" });
    await refusedWith(response, 400, "PROTOCOL", /X-Dorpc-Session/);
    expect(await count(name)).toBeUndefined();
  });

  it("a body larger than limits.maxMessageBytes: 413, whether it declares its length or streams", async () => {
    const name = uniqueName("large");
    const big = new Uint8Array(32 * 1024 * 1024 + 1);
    await refusedWith(await post(name, big, "application/x-dorpc"), 413, "LIMIT", /maxMessageBytes/);
    const chunk = new Uint8Array(4 * 1024 * 1024);
    let chunks = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (chunks++ < 9) controller.enqueue(chunk);
        else controller.close();
      },
    });
    await refusedWith(await post(name, stream, "application/x-dorpc"), 413, "LIMIT", /maxMessageBytes/);
    expect(chunks).toBeLessThan(10); // stopped reading once past the limit
    expect(await count(name)).toBeUndefined();
  });

  it("GET is answered 426 (connect with a WebSocket, or POST), other methods 405", async () => {
    const get = await SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${uniqueName("get")}`);
    expect(get.status).toBe(426);
    expect(await get.text()).toContain("POST a batch");
    const put = await SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${uniqueName("put")}`, { method: "PUT", body: "x" });
    expect(put.status).toBe(405);
    expect(put.headers.get("Allow")).toBe("GET, POST");
  });

  it("onBeforeConnect refuses a POST the way it refuses an upgrade", async () => {
    const name = uniqueName("blocked");
    const response = await SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${name}?block=1`, {
      method: "POST",
      body: JSON.stringify({ method: "increment" }),
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(403);
    expect(await response.text()).toBe(`connect blocked for COUNTER/${name}`);
    expect(await count(name)).toBeUndefined();
  });
});

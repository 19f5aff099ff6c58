/**
 * HTTP batches (httpTransport and the JSON form) at the limits: refusals, many calls, concurrent turns, cut answers, edge inputs,
 * and answers over the client's own limits (bytes, text, blobs), which fail only their own call.
 */
import { createRpcClient, type FetchLike, httpTransport, type RpcError, withCallOptions } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { rejection, uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";
import type { Counter } from "./objects.js";

function httpClient<T>(name: string, extra: Record<string, unknown> = {}, fetch: FetchLike = (url, init) => SELF.fetch(url, init)) {
  return createRpcClient<T>("COUNTER", name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    ...extra,
  });
}

function post(name: string, body: BodyInit, type = "application/json"): Promise<Response> {
  return SELF.fetch(`http://dorpc.test/__rpc/COUNTER/${name}`, { method: "POST", body, headers: { "Content-Type": type } });
}

function count(name: string): Promise<number | undefined> {
  return runInDurableObject(env.COUNTER.getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));
}

describe("httpTransport refusals of frames over the default limits", () => {
  it("a request the object refuses for too many blobs fails its call with the typed error, not a TIMEOUT", async () => {
    await using client = httpClient<Counter>(uniqueName("blobs"));
    const buffers = Array.from({ length: 4100 }, () => new ArrayBuffer(1));
    const error = await rejection(withCallOptions(client.echo(buffers), { timeout: 30_000 }));
    expect((error as RpcError).code, (error as Error).message).toBe("LIMIT");
    expect((error as Error).message).toContain("maxBlobs");
  });

  it("a request body over the object's maxMessageBytes (413 LIMIT) fails its call with LIMIT, not a TIMEOUT", async () => {
    await using client = httpClient<Counter>(uniqueName("huge"));
    const error = await rejection(withCallOptions(client.echo(new Uint8Array(32 * 1024 * 1024 + 16)), { timeout: 4000 }));
    expect((error as RpcError).code, (error as Error).message).toBe("LIMIT");
  });
});

describe("httpTransport: many calls, concurrent turns", () => {
  it("300 calls in one turn (more than 256 per frame) each get their own answer", async () => {
    const name = uniqueName("many");
    await using client = httpClient<Counter>(name);
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => client.echo(i)));
    expect(results).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it("concurrent turns: each request's answers reach their calls", async () => {
    const name = uniqueName("turns");
    await using client = httpClient<Counter>(name);
    const a = client.addLater(1, 1, 50);
    await Promise.resolve();
    await new Promise((r) => setTimeout(r, 1));
    const b = client.addLater(2, 2, 1);
    expect(await Promise.all([a, b])).toEqual([2, 4]);
  });

  it("a response cut mid-frame (readable bytes, truncated JSON): the calls are answered once (resent), not lost", async () => {
    const name = uniqueName("cut");
    let cut = 1;
    const fetch: FetchLike = async (url, init) => {
      const response = await SELF.fetch(url, init);
      if (cut-- > 0) {
        const text = await response.text();
        return new Response(text.slice(0, text.length - 3), { headers: response.headers });
      }
      return response;
    };
    await using client = httpClient<Counter>(name, {}, fetch);
    expect(await withCallOptions(client.increment(3), { timeout: 3000 })).toBe(3);
    expect(await count(name)).toBe(3);
  });

  it("maxPendingCalls over HTTP: exactly at the server limit passes", async () => {
    const name = uniqueName("pending");
    await using client = httpClient<Counter>(name);
    const results = await Promise.all(Array.from({ length: 1024 }, () => client.getValue()));
    expect(results.length).toBe(1024);
  });
});

describe("the JSON form at the edges", () => {
  it("nested arrays: a batch item that is an array is refused with a typed 400", async () => {
    const response = await post(uniqueName("nested"), JSON.stringify([[{ method: "increment" }]]));
    expect(response.status).toBe(400);
  });

  it("an own __proto__ key in JSON args is refused per call, and the object is untouched", async () => {
    const name = uniqueName("proto");
    const response = await post(name, '{"method":"echo","args":[{"__proto__":{"x":1}}]}');
    const body = (await response.json()) as { error?: { code: string } };
    expect(response.status).toBe(200);
    expect(body.error?.code).toBe("DECODE");
  });

  it("method with an empty segment: NOT_FOUND per call", async () => {
    const response = await post(uniqueName("dots"), JSON.stringify({ method: "users..count" }));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });

  it("a method name through a getter into a function property is NOT_FOUND / NOT_CALLABLE, never runs", async () => {
    const response = await post(uniqueName("getter"), JSON.stringify({ method: "config.limits.max", args: [] }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { error?: { code: string }; result?: unknown };
    expect(body.error?.code).toBe("NOT_CALLABLE");
  });

  it("duplicate keys: the last wins, as JSON.parse does", async () => {
    const name = uniqueName("dup");
    const response = await post(name, '{"method":"increment","args":[1],"args":[4]}');
    expect(await response.json()).toEqual({ result: 4 });
  });

  it("more args than maxArgs: LIMIT for that call", async () => {
    const response = await post(uniqueName("args"), JSON.stringify({ method: "echo", args: new Array(65).fill(0) }));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("LIMIT");
  });

  it("more calls than maxPendingCalls: a typed 4xx, nothing runs", async () => {
    const name = uniqueName("toomany");
    const response = await post(name, JSON.stringify(Array.from({ length: 1025 }, () => ({ method: "increment" }))));
    expect(response.status).toBe(400);
    expect(await count(name)).toBeUndefined();
  });

  it("a null inside an array result round-trips", async () => {
    const response = await post(uniqueName("undef"), JSON.stringify({ method: "echo", args: [[1, null, 3]] }));
    expect(await response.json()).toEqual({ result: [1, null, 3] });
  });

  it("a large integer beyond 2^53 stays as JSON.parse reads it", async () => {
    const response = await post(uniqueName("bignum"), '{"method":"echo","args":[12345678901234567890]}');
    expect(await response.json()).toEqual({ result: 12345678901234567000 });
  });

  it("300 calls in one JSON batch (replies span several frames) are each answered", async () => {
    const response = await post(
      uniqueName("json300"),
      JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ method: "echo", args: [i] }))),
    );
    const answers = (await response.json()) as { result: number }[];
    expect(answers.map((a) => a.result)).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it("__proto__ and constructor as method names are NOT_FOUND", async () => {
    const response = await post(
      uniqueName("protoname"),
      JSON.stringify([{ method: "__proto__" }, { method: "constructor" }, { method: "users.__proto__.count" }]),
    );
    const answers = (await response.json()) as { error: { code: string } }[];
    expect(answers.map((a) => a.error.code)).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);
  });

  it("a string result holding the frame mark and line separators comes back as sent", async () => {
    const text = "\u001eR[[1,0,2]]\u2028\u2029\ud800";
    const response = await post(uniqueName("mark"), JSON.stringify({ method: "echo", args: [text] }));
    expect(await response.json()).toEqual({ result: text });
  });

  it("a thrown non-Error value", async () => {
    const response = await post(uniqueName("throwstr"), JSON.stringify({ method: "throwString" }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { error: { name?: string; message: string } };
    expect(body.error.message).toContain("plain string thrown");
  });
});

describe("httpTransport: answers over the client's limits", () => {
  const e2eClient = (name: string, extra: Record<string, unknown> = {}) =>
    createRpcClient<HttpE2e>("HTTP_E2E", name, {
      transport: httpTransport({ fetch: (url, init) => SELF.fetch(url, init) }),
      baseUrl: "http://dorpc.test",
      reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
      ...extra,
    });
  const e2eCount = (name: string) =>
    runInDurableObject((env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E.getByName(name), (_instance, state) =>
      state.storage.kv.get<number>("count"),
    );
  const outcome = (promise: PromiseLike<unknown>) =>
    Promise.resolve(promise).then(
      (value) => ({ value }),
      (error: RpcError) => ({ code: error.code, message: error.message }),
    );

  // Up to three times maxMessageBytes an answer is read and then refused; past that, reading stops
  // at the cap. Either way the call ran: it fails LIMIT saying so, and is not resent.
  it.each([
    ["bytes", 100_000, true],
    ["text", 100_000, true],
    ["bytes", 300_000, true],
    ["bytes", 100_000, false],
    ["bytes", 300_000, false],
  ] as const)(
    "a %s answer of %i bytes over a 64 KiB limit (exactlyOnce %s): LIMIT for that call only; another request's call is answered",
    async (kind, size, exactlyOnce) => {
      const name = uniqueName(`answer-${kind}`);
      await using client = e2eClient(name, { limits: { maxMessageBytes: 64 * 1024 }, exactlyOnce });
      await client.count();
      const slow = outcome(client.slowIncrement(200));
      await new Promise((r) => setTimeout(r, 0)); // another turn: another request
      const big = await outcome(kind === "bytes" ? client.bytes(size) : client.text(size));
      expect(big).toEqual({
        code: "LIMIT",
        message: expect.stringContaining("the call ran, but its answer could not be read, and it is not sent again"),
      });
      expect(await slow).toEqual({ value: 1 });
      expect(await e2eCount(name)).toBe(1);
    },
  );

  it("40 bytes results of different sizes in one turn each come back, and so does a result of 300 Uint8Arrays", async () => {
    await using client = e2eClient(uniqueName("many-bytes"));
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => client.bytes(i * 1000 + 1)));
    expect(results.map((bytes) => bytes.byteLength)).toEqual(Array.from({ length: 40 }, (_, i) => i * 1000 + 1));
    expect(await client.manyBytes(300)).toHaveLength(300);
  });

  it("a result of 5,000 Uint8Arrays (over maxBlobs) fails LIMIT saying it ran and is not sent again; the next call works", async () => {
    const name = uniqueName("blobs-over");
    await using client = e2eClient(name);
    expect(await outcome(client.manyBytes(5_000))).toEqual({
      code: "LIMIT",
      message: expect.stringMatching(/5000 blobs, more than this end's limits\.maxBlobs \(4096\): the call ran, .* it is not sent again/),
    });
    expect(await client.increment()).toBe(1);
  });
});

/**
 * HTTP batches end to end (httpTransport and handleRpcRequest's batch endpoint), in workerd:
 * stubs of an earlier request are REFERENCE_LOST (never another request's object), a 5xx is a
 * lost answer whatever its body, a module-scope client recovers from a lost answer, and the JSON
 * form answers call by call (many bytes values, shared or deep plain JSON). Objects:
 * http-objects.ts (HTTP_E2E, HttpWorker).
 */
import { createRpcClient, type FetchLike, httpTransport, type RpcError } from "@dorpc/rpc";
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";
import type { HttpE2e } from "./http-objects.js";

const ns = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E;
const stored = (name: string) => runInDurableObject(ns().getByName(name), (_i, state) => state.storage.kv.get<number>("count"));

function httpClient<T>(binding: string, name: string, fetch: FetchLike = (url, init) => SELF.fetch(url, init)) {
  return createRpcClient<T>(binding, name, {
    transport: httpTransport({ fetch }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    timeout: 3_000,
  });
}

function postJson(binding: string, name: string, body: unknown): Promise<Response> {
  return SELF.fetch(`http://dorpc.test/__rpc/${binding}/${name}`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
  });
}

describe("references across requests", () => {
  // (api.md httpTransport: "A reference (stub) a request handed out ends with that request ... a
  // later call on it rejects with REFERENCE_LOST"; protocol.md "a later call naming one gets
  // REFERENCE_LOST"): the stale stub must not reach whatever the later request handed out under the
  // same export id. Every request's export table starts at id 1, so it does: `roomA.join()` joins
  // room B (state changed on the wrong object, value returned as if fine).
  it("a stale stub used in a request that first hands out a new reference is REFERENCE_LOST, not the new object", async () => {
    using client = httpClient<Composer>("COMPOSER", uniqueName("alias"));
    const roomA = await client.openRoom("A");
    const [, joined] = await Promise.allSettled([client.openRoom("B"), roomA.join("intruder")]);
    const sizeOfB = await client.openRoom("B").size;
    expect(joined.status === "rejected" ? (joined.reason as RpcError).code : `fulfilled: ${String(joined.value)}`).toBe("REFERENCE_LOST");
    expect(sizeOfB).toBe(0); // room B was never joined
  });

  // Same cause, the stale stub passed as an argument: the method receives the other request's
  // object.
  it("a stale stub passed as an argument in a request that first hands out a new reference is REFERENCE_LOST", async () => {
    using client = httpClient<HttpE2e>("HTTP_E2E", uniqueName("alias-arg"));
    const a = await client.box("A");
    const [, echoed] = await Promise.allSettled([client.box("B"), (client.echo(a) as unknown as { title(): Promise<string> }).title()]);
    expect(echoed.status === "rejected" ? (echoed.reason as RpcError).code : `fulfilled: ${String(echoed.value)}`).toBe("REFERENCE_LOST");
  });
});

describe("lost answers", () => {
  // (api.md httpTransport, Failures: "a network failure after sending, or a 5xx, is a lost answer:
  // the calls are resent (exactly once)"): a 503 from a gateway after the object ran the call is a
  // lost answer, whatever its JSON body says. Its body happens to have dorpc's typed shape
  // {error:{code,message}} (a common API-gateway convention; dorpc never answers 5xx itself), so
  // the call fails INTERNAL "upstream timed out" although it ran and could have been answered from
  // the record.
  it("a 503 with a JSON {error:{code,message}} body after the call ran is still a lost answer: resent, answered once", async () => {
    const name = uniqueName("503-json");
    let requests = 0;
    const fetch: FetchLike = async (url, init) => {
      const response = await SELF.fetch(url, init);
      if (++requests === 2) {
        await response.arrayBuffer();
        return new Response(JSON.stringify({ error: { code: "INTERNAL", message: "upstream timed out" } }), {
          status: 503,
          headers: { "Content-Type": "application/json" },
        });
      }
      return response;
    };
    using client = httpClient<HttpE2e>("HTTP_E2E", name, fetch);
    expect(await client.increment()).toBe(1);
    expect(await client.increment()).toBe(2);
    expect(await stored(name)).toBe(2);
  });
});

describe("a Worker keeping an httpTransport() client in module scope", () => {
  const worker = () => (exports as unknown as { HttpWorker: Fetcher }).HttpWorker;
  const get = async (query: string) => (await worker().fetch(`http://worker/?${query}`)).json();

  // (api.md httpTransport: "One client may serve many requests of a Worker (kept in module
  // scope)"): after one request lost an answer and ended (its call timed out before the reconnect
  // delay), the next requests' calls are sent and answered. Instead the reconnect timer was set in
  // the request that ended, workerd never runs it, and every later call of every later request
  // times out "never sent ... 1 reconnect attempt(s) have not succeeded yet".
  it("a lost answer in a request that ended before the reconnect delay does not wedge the client for later requests", async () => {
    const name = uniqueName("module");
    expect(await get(`name=${name}&timeout=150&delay=400`)).toEqual({ value: 1 });
    // This request's answer is lost; its call times out (150 ms) before the reconnect (400 ms).
    expect(await get(`name=${name}&timeout=150&delay=400&lose=1`)).toMatchObject({ error: { code: "TIMEOUT" } });
    await new Promise((resolve) => setTimeout(resolve, 600)); // well past the reconnect delay
    // A later request, with a generous timeout: the lost call was answered once (record) or not;
    // this one runs.
    const later = (await get(`name=${name}&timeout=1500&delay=400`)) as { value?: number; error?: unknown };
    expect(later.error).toBeUndefined();
    expect(later.value).toBe(await stored(name));
  });
});

describe("the JSON form", () => {
  // (protocol.md, the JSON form: one answer per call; "Calls the object runs and refuses or fails
  // ... are answered in the 200 response, call by call"): a result carrying more blobs than
  // limits.maxBlobs is that call's error. Instead jsonAnswer's readFrame throws LIMIT out of
  // handleBatch: an uncaught exception in the object, the request itself fails, and the answer of
  // the call that ran before it (increment) is lost.
  it("a result with more bytes values than maxBlobs is answered per call, not an uncaught exception", async () => {
    const name = uniqueName("json-blobs");
    let outcome: unknown;
    try {
      const response = await postJson("HTTP_E2E", name, [{ method: "increment" }, { method: "manyBytes", args: [5000] }]);
      outcome = { status: response.status, body: await response.json() };
    } catch (error) {
      outcome = { threw: String(error) };
    }
    expect(outcome).toMatchObject({ status: 200, body: [{ result: 1 }, { error: { code: expect.any(String) } }] });
  });

  // (protocol.md: ENCODE is "for a result that is not plain JSON (it holds a Date, a Map, bytes, a
  // reference…)"): plain JSON results come back as {"result": …}. A sub-object reached twice (no
  // cycle) and arrays nested deeper than 512 are plain JSON, but they take the records path and the
  // JSON form answers ENCODE, saying they hold "dates, maps, bytes, references".
  it("plain JSON results with a shared sub-object or nested deeper than 512 are answered as results, not ENCODE", async () => {
    const response = await postJson("HTTP_E2E", uniqueName("json-plain"), [{ method: "shared" }, { method: "deep", args: [600] }]);
    const [shared, deep] = (await response.json()) as { result?: unknown; error?: { code: string } }[];
    expect(shared).toEqual({ result: { from: { x: 1, y: 2 }, to: { x: 1, y: 2 } } });
    expect(deep!.error).toBeUndefined();
  });
});

/**
 * Argument schemas in workerd over HTTP batches (schema.test.ts covers WebSockets), binary and
 * JSON form: a refused call carries its issues (binary) or its code and message (JSON, per call)
 * while the other calls of the batch run; transforms, async schemas, chains and pipelined stubs
 * are checked as over a socket. An object served with `requireSchemas` that forgot a schema is
 * not served: every request to the RPC path is answered 500 with the typed BAD_OPTION (and
 * logged), and an HTTP-batch client fails its call at once with CONNECT_FAILED quoting it, after
 * one request (it is not a lost answer to resend until the call times out).
 */
import { createRpcClient, httpTransport, RpcError } from "@dorpc/rpc";
import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";
import type { StrictVault, Unchecked, Vault } from "./schema-objects.js";

const UNSERVED = 'Unchecked is served with requireSchemas, but this method has no argument schema: "reset".';

/** A binary-form HTTP client of `binding`/`name`, and how many requests it has made. */
function httpClient<T>(binding: string, name: string) {
  const sent = { requests: 0 };
  const client = createRpcClient<T>(binding, name, {
    transport: httpTransport({
      fetch: (url, init) => {
        sent.requests++;
        return SELF.fetch(url, init);
      },
    }),
    baseUrl: "http://dorpc.test",
    reconnect: { initialDelay: 5, maxDelay: 50, jitter: 0 },
    timeout: 10_000,
  });
  return { client, sent };
}

/** A JSON-form request with `body`. */
function postJson(binding: string, name: string, body: unknown): Promise<Response> {
  return SELF.fetch(`http://dorpc.test/__rpc/${binding}/${name}`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
  });
}

afterEach(() => vi.restoreAllMocks());

describe("schemas over HTTP batches", () => {
  it("binary form: a refused call carries its issues; transforms, async schemas, chains and stubs are checked", async () => {
    const { client } = httpClient<Vault>("VAULT", uniqueName("schema-http"));
    using _ = client;
    const error = await rpcFailure(client.increment(0), "INVALID_ARGUMENT");
    expect(error.issues!.map((issue) => issue.path)).toEqual([[0]]);
    expect(error.message).toContain('Invalid arguments for "increment" on Vault: arguments[0]: ');
    expect(await client.increment(2)).toBe(2); // the refused call did not count
    expect(await client.setPrice("7")).toBe("number");
    const taken = await rpcFailure(client.claim("taken"), "INVALID_ARGUMENT");
    expect(taken.issues).toEqual([{ message: "That name is taken.", path: [0] }]);
    expect(await client.claim("bob")).toBe("bob");
    const chained = await rpcFailure(client.notes.add({ title: 1 } as never), "INVALID_ARGUMENT");
    expect(chained.issues!.map((issue) => issue.path)).toEqual([
      [0, "title"],
      [0, "tags"],
    ]);
    // Pipelined on the call that returns the stub, in one batch: one refused, one run.
    const [bad, good] = await Promise.allSettled([client.shelf().add({ title: 2 } as never), client.shelf().add({ title: "x", tags: [] })]);
    expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(good).toEqual({ status: "fulfilled", value: 1 });
  });

  it("JSON form: each refused call answers its code and message, the others run", async () => {
    const response = await postJson("VAULT", uniqueName("schema-json"), [
      { method: "increment", args: [0] },
      { method: "increment", args: [2] },
      { method: "notes.add", args: [{ title: "", tags: ["x".repeat(30)] }] },
      { method: "setPrice", args: ["12"] },
      { method: "claim", args: ["taken"] },
    ]);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([
      { error: { code: "INVALID_ARGUMENT", message: expect.stringContaining('"increment" on Vault: arguments[0]: ') } },
      { result: 2 },
      {
        error: {
          code: "INVALID_ARGUMENT",
          message: expect.stringMatching(/"add" on Vault: arguments\[0\]\.title: .*; arguments\[0\]\.tags\[0\]: /),
        },
      },
      { result: "number" },
      { error: { code: "INVALID_ARGUMENT", message: 'Invalid arguments for "claim" on Vault: arguments[0]: That name is taken.' } },
    ]);
  });

  it("an object served with requireSchemas whose methods all have one is served over HTTP", async () => {
    const { client } = httpClient<StrictVault>("STRICT_VAULT", uniqueName("schema-http-strict"));
    using _ = client;
    expect(await client.increment(2)).toBe(2);
    expect(await client.value).toBe(2);
    await rpcFailure(client.increment(-1), "INVALID_ARGUMENT");
  });
});

describe("requireSchemas with a method lacking a schema, over HTTP batches", () => {
  it("JSON form: the request is answered 500 with the typed BAD_OPTION, and logged", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const response = await postJson("UNCHECKED", uniqueName("unchecked-json"), { method: "increment", args: [1] });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: { code: "BAD_OPTION", message: expect.stringContaining(UNSERVED) } });
    expect(logged).toHaveBeenCalledWith(expect.stringContaining(UNSERVED));
  });

  it("binary form: the call fails at once with CONNECT_FAILED quoting why, after one request", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { client, sent } = httpClient<Unchecked>("UNCHECKED", uniqueName("unchecked-http"));
    using _ = client;
    const error = await rejection(client.increment(1));
    expect(RpcError.is(error) && error.code, String(error)).toBe("CONNECT_FAILED");
    expect((error as RpcError).message).toContain(UNSERVED);
    expect((error as RpcError).message).toContain("(HTTP 500); nothing ran.");
    expect(sent.requests).toBe(1);
  });
});

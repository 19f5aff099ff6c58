/**
 * The JSON form of HTTP batches (`Content-Type: application/json`, protocol.md "The JSON form")
 * against hostile bodies, in workerd: arguments nested far past limits.maxDepth or holding
 * millions of values, calls and batches of the wrong shape, and method paths aimed at what the
 * access policy never reaches. Each gets a typed answer — a 400 for the whole request, or a
 * per-call error in a 200 — never a 500 or an exception, and nothing runs that should not (the
 * object's stored count stays unwritten). Object: http-objects.ts (HTTP_E2E).
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";

const namespace = () => (env as unknown as { HTTP_E2E: DurableObjectNamespace }).HTTP_E2E;
const stored = (name: string) =>
  runInDurableObject(namespace().getByName(name), (_instance, state) => state.storage.kv.get<number>("count"));

async function post(name: string, body: string): Promise<{ status: number; body: unknown }> {
  const response = await SELF.fetch(`http://dorpc.test/__rpc/HTTP_E2E/${name}`, {
    method: "POST",
    body,
    headers: { "Content-Type": "application/json" },
  });
  return { status: response.status, body: await response.json() };
}

/** How many arrays deep `value` is (iterative: the value may be thousands deep). */
function arrayDepth(value: unknown): number {
  let depth = 0;
  for (let v = value; Array.isArray(v); v = v[0]) depth++;
  return depth;
}

describe("arguments past the limits", () => {
  it("an argument 10,000 arrays deep (within maxDepth) is echoed whole", async () => {
    const depth = 10_000;
    const { status, body } = await post(uniqueName("deep-ok"), `{"method":"echo","args":[${"[".repeat(depth)}${"]".repeat(depth)}]}`);
    expect(status).toBe(200);
    expect(arrayDepth((body as { result: unknown }).result)).toBe(depth);
  });

  it.each([
    ["100,000 arrays deep", "maxDepth", () => `[${"[".repeat(100_000)}${"]".repeat(100_000)}]`],
    ["500,000 arrays deep", "maxDepth", () => `[${"[".repeat(500_000)}${"]".repeat(500_000)}]`],
    ["200,000 objects deep", "maxDepth", () => `[${'{"a":'.repeat(200_000)}1${"}".repeat(200_000)}]`],
    ["an array of 2,000,000 numbers", "maxNodes", () => `[[${new Array(2_000_000).fill(0).join(",")}]]`],
  ])(
    "an argument %s: that call fails LIMIT naming limits.%s",
    async (_label, limit, args) => {
      const { status, body } = await post(uniqueName("past-limit"), `{"method":"echo","args":${args()}}`);
      expect({ status, body }).toEqual({
        status: 200,
        body: { error: { code: "LIMIT", message: expect.stringContaining(`limits.${limit}`) } },
      });
    },
    30_000,
  );

  it("a method path of 41 steps fails LIMIT naming limits.maxChainLength; a 200,000-character name is NOT_FOUND, cut in the message", async () => {
    const long = await post(uniqueName("long-chain"), JSON.stringify({ method: new Array(41).fill("a").join(".") }));
    expect(long).toEqual({ status: 200, body: { error: { code: "LIMIT", message: expect.stringContaining("limits.maxChainLength") } } });
    const huge = await post(uniqueName("long-name"), JSON.stringify({ method: "x".repeat(200_000) }));
    const error = (huge.body as { error: { code: string; message: string } }).error;
    expect({ status: huge.status, code: error.code }).toEqual({ status: 200, code: "NOT_FOUND" });
    expect(error.message).toContain(`"${"x".repeat(100)}"`);
    expect(error.message.length).toBeLessThan(300);
  });
});

describe("calls and batches of the wrong shape", () => {
  it.each([
    ["args null", '{"method":"increment","args":null}', /"args" must be an array/],
    ["args a string", '{"method":"increment","args":"x"}', /"args" must be an array/],
    ["args an array-like object", '{"method":"increment","args":{"length":1,"0":1}}', /"args" must be an array/],
    ["method a number", '{"method":5}', /needs "method"/],
    ["method an array", '{"method":["increment"]}', /needs "method"/],
    ["method empty", '{"method":"","args":[]}', /needs "method"/],
    ["method only inherited (__proto__)", '{"__proto__":{"method":"increment"}}', /needs "method"/],
    ["the body null", "null", /must be \{"method"/],
    ["the body a string", '"increment"', /must be \{"method"/],
    ["a batch holding null", "[null]", /Call 0 must be/],
    ["a batch with one bad call after a good one", '[{"method":"increment"},5]', /Call 1 must be/],
  ])("%s: 400 PROTOCOL, nothing runs", async (_label, body, message) => {
    const name = uniqueName("shape");
    expect(await post(name, body)).toEqual({ status: 400, body: { error: { code: "PROTOCOL", message: expect.stringMatching(message) } } });
    expect(await stored(name)).toBeUndefined();
  });

  it.each([
    ["1e400", '{"method":"increment","args":[1e400]}'],
    ["-1e999 deep inside", '[{"method":"getValue"},{"method":"increment","args":[{"a":[[-1e999]]}]}]'],
  ])("a number beyond a double (%s) is a 400 DECODE, not a silent null, and nothing runs", async (_label, body) => {
    const name = uniqueName("infinite");
    expect(await post(name, body)).toEqual({
      status: 400,
      body: { error: { code: "DECODE", message: expect.stringMatching(/beyond what a double can hold/) } },
    });
    expect(await stored(name)).toBeUndefined();
  });

  it("keys besides method and args, __proto__ and constructor included, are ignored: the call runs once", async () => {
    const name = uniqueName("extra-keys");
    expect(await post(name, '{"method":"increment","args":[],"__proto__":{"x":1},"constructor":{"y":2}}')).toEqual({
      status: 200,
      body: { result: 1 },
    });
    expect(await stored(name)).toBe(1);
  });
});

describe("method paths toward what the access policy never reaches", () => {
  it("prototype, Function.prototype, lifecycle and platform names are NOT_FOUND per call, naming the refused step, and nothing runs", async () => {
    const name = uniqueName("paths");
    const calls = [
      { method: "__proto__.constructor", refused: "__proto__" },
      { method: "toString", refused: "toString" },
      { method: "increment.call", refused: "call" },
      { method: "increment.apply", args: [null, []], refused: "apply" },
      { method: "bump.bind", refused: "bind" },
      { method: "ctx.storage.deleteAll", refused: "ctx" },
      { method: "env", refused: "env" },
      { method: "fetch", args: [{}], refused: "fetch" },
    ];
    const { status, body } = await post(name, JSON.stringify(calls.map(({ method, args }) => ({ method, args }))));
    expect(status).toBe(200);
    expect(body).toEqual(calls.map(({ refused }) => ({ error: { code: "NOT_FOUND", message: expect.stringContaining(`"${refused}"`) } })));
    expect(await stored(name)).toBeUndefined();
  });
});

/**
 * Options given to the Durable Object adapters are checked before anything is served:
 * `withRpc(Base, options)` throws BAD_OPTION when the class is made; `handleRpcRequest` rejects
 * BAD_OPTION for bad options (or a target that is not the object) even for a request outside
 * the RPC path; `handleRpcMessage` returns a promise that rejects BAD_OPTION rather than
 * throwing. (unit/server-options.test.ts has the bounds of callTimeout, prefix, exactlyOnce and
 * topics' options; these are the other options.)
 */
import { RpcError } from "@dorpc/rpc";
import { handleRpcMessage, handleRpcRequest, RPC_SOCKET_TAG, type RpcServerOptions, withRpc } from "@dorpc/rpc/server";
import { createTestClient, runInObject } from "@dorpc/testing";
import { DurableObject, env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

class Base extends DurableObject<Env> {
  greet(): string {
    return "hi";
  }
}

/** `code: message` of the RpcError `run` throws or rejects with. */
async function refusal(run: () => unknown): Promise<string> {
  try {
    await run();
  } catch (error) {
    return RpcError.is(error) ? `${error.code}: ${error.message}` : `not an RpcError: ${String(error)}`;
  }
  return "no error";
}

describe("withRpc checks its options when the class is made", () => {
  it.each<[string, unknown, RegExp]>([
    ["limits that are not an object", { limits: 5 }, /limits must be an object, got number/],
    ["limits.maxArgs 0", { limits: { maxArgs: 0 } }, /limits\.maxArgs must be a positive integer, got 0/],
    ["limits.maxArgs 1.5", { limits: { maxArgs: 1.5 } }, /limits\.maxArgs must be a positive integer, got 1\.5/],
    ["limits.maxArgs null", { limits: { maxArgs: null } }, /limits\.maxArgs must be a positive integer, got null/],
    ["limits.maxDepth NaN", { limits: { maxDepth: Number.NaN } }, /limits\.maxDepth must be a positive integer, got NaN/],
    ["limits.maxDepth Infinity", { limits: { maxDepth: Number.POSITIVE_INFINITY } }, /limits\.maxDepth must be a positive integer/],
    ["limits.maxNodes a string", { limits: { maxNodes: "10" } }, /limits\.maxNodes must be a positive integer/],
    ["an unknown limit", { limits: { maxFrames: 3 } }, /Unknown limit "maxFrames"; known limits are maxMessageBytes, /],
    [
      "ordering other than sequential or concurrent",
      { ordering: "parallel" },
      /ordering must be "sequential" or "concurrent", got "parallel"/,
    ],
    ["hibernation not a boolean", { hibernation: "no" }, /hibernation must be true or false, got "no"/],
    ["identify not a function", { identify: "header" }, /identify must be a function/],
    ["access.allow a number", { access: { allow: 3 } }, /access\.allow must be an array of member names or a function/],
    ["an unknown access option", { access: { deny: [] } }, /Unknown access option "deny"/],
    ["a topic name with a space", { topics: { "a b": {} } }, /Topic name "a b" must be 1–64 characters/],
    ["null options", null, /Server options must be an object/],
    ["string options", "x", /Server options must be an object/],
  ])("%s: BAD_OPTION", async (_label, options, message) => {
    const outcome = await refusal(() => withRpc(Base, options as RpcServerOptions));
    expect(outcome).toMatch(/^BAD_OPTION: /);
    expect(outcome).toMatch(message);
  });
});

describe("handleRpcRequest and handleRpcMessage with bad options", () => {
  /** What handleRpcRequest(new Request(url), object, options) gives, inside a Counter. */
  async function requestOutcome(url: string, options: RpcServerOptions, target?: object): Promise<string> {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("bad-request-options"));
    return runInObject(client, (obj) =>
      refusal(async () => {
        const response = await handleRpcRequest(new Request(url), target ?? obj, options);
        throw new Error(`resolved with ${response?.status ?? "undefined"}`);
      }),
    );
  }

  it("handleRpcRequest rejects BAD_OPTION for bad limits, for a request to the RPC path", async () => {
    expect(await requestOutcome("http://x/__rpc/counter/a", { limits: { maxArgs: -1 } })).toMatch(/^BAD_OPTION: limits\.maxArgs/);
  });

  it("handleRpcRequest rejects BAD_OPTION for bad options even for a request outside the RPC path", async () => {
    expect(await requestOutcome("http://x/elsewhere", { limits: { maxArgs: -1 } })).toMatch(/^BAD_OPTION: limits\.maxArgs/);
    expect(await requestOutcome("http://x/elsewhere", { prefix: "nope" })).toMatch(/^BAD_OPTION: /);
  });

  it("handleRpcRequest rejects BAD_OPTION for a target that is not the Durable Object, saying to pass this", async () => {
    expect(await requestOutcome("http://x/__rpc/a/b", {}, {})).toMatch(
      /^BAD_OPTION: handleRpcRequest needs the Durable Object instance.*handleRpcRequest\(request, this\)/,
    );
  });

  it("handleRpcMessage returns a promise that rejects BAD_OPTION for bad options, and does not throw", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("bad-message-options"));
    expect(await client.getValue()).toBe(0);
    const outcome = await runInObject(client, async (obj, state) => {
      const ws = state.getWebSockets(RPC_SOCKET_TAG)[0]!;
      let returned: Promise<boolean> | undefined;
      const thrown = await refusal(() => {
        returned = handleRpcMessage(ws, '\u001eC[[0,["getValue",[0]]]]', obj, { limits: { maxArgs: 0 } });
      });
      return { thrown, returned: returned instanceof Promise, rejected: await refusal(() => returned) };
    });
    expect(outcome).toEqual({ thrown: "no error", returned: true, rejected: expect.stringMatching(/^BAD_OPTION: limits\.maxArgs/) });
    expect(await client.increment(1)).toBe(1);
  });
});

/**
 * Result schemas (`rpcMethod({ args, result }, fn)`) beyond the plain case, over the in-memory
 * paired transport and the real dispatcher: an async result schema's output is what is sent; a
 * result schema that throws withholds the result as INVALID_RESULT without its message; a method
 * that fails is not mistaken for a result that fails its schema; a result schema decides whether
 * an RpcTarget goes out as a stub or as the plain object its output is.
 */
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, rejectionOf } from "./helpers.js";

/** A hand-written Standard Schema for a result. */
function schema(validate: (value: unknown) => unknown): StandardSchemaV1 {
  return { "~standard": { version: 1, vendor: "test", validate: validate as never } };
}

class Item extends RpcTarget {
  constructor(readonly n: number) {
    super();
  }
  get value(): number {
    return this.n;
  }
}

class Api {
  readonly runs: string[] = [];
  asyncResult = rpcMethod(
    {
      args: v.strictTuple([]),
      result: schema(async (value) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return { value: { wrapped: value } };
      }),
    },
    () => 1,
  );
  throwingResult = rpcMethod(
    {
      args: v.strictTuple([]),
      result: schema(() => {
        throw new Error("secret boom");
      }),
    },
    () => {
      this.runs.push("throwingResult");
      return 1;
    },
  );
  methodFails = rpcMethod({ args: v.strictTuple([]), result: v.number() }, async () => {
    throw new Error("method failed");
  });
  targetResult = rpcMethod({ args: v.strictTuple([]), result: v.instance(Item) }, () => new Item(3));
  plainResult = rpcMethod({ args: v.strictTuple([]), result: v.object({ n: v.number() }) }, () => new Item(4));
}

function connect(api: Api) {
  return createRpcClient<Api>("TEST", "schema-results", { transport: pairWith(api).factory });
}

afterEach(() => vi.restoreAllMocks());

describe("result schemas", () => {
  it("an async result schema's output is what the caller gets", async () => {
    using client = connect(new Api());
    expect(await client.asyncResult()).toEqual({ wrapped: 1 });
  });

  it("a result schema that throws withholds the result as INVALID_RESULT, without the thrown message", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const api = new Api();
    using client = connect(api);
    const error = await expectRejectsCode(client.throwingResult(), "INVALID_RESULT");
    expect(error.message).not.toContain("secret boom");
    expect(api.runs).toEqual(["throwingResult"]); // it ran: only its result was withheld
    expect(warn).toHaveBeenCalled();
  });

  it("a method that throws reaches the caller as its own error, not as INVALID_RESULT", async () => {
    using client = connect(new Api());
    const error = await rejectionOf(client.methodFails());
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe("method failed");
    expect((error as { code?: unknown }).code).toBeUndefined();
  });

  it("a schema accepting the RpcTarget sends a stub; a plain-object schema sends its output as data", async () => {
    using client = connect(new Api());
    using item = await client.targetResult();
    expect(await item.value).toBe(3);
    const plain = await client.plainResult();
    expect(plain).toEqual({ n: 4 });
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
  });
});

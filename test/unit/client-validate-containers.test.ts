/**
 * Client-side validation (the client's `validate` option) and pending results inside a Map or a
 * Set argument, over the in-memory paired transport and the real dispatcher. A pending result is
 * not a value yet: wherever it sits in an argument (schemas.test.ts and schemas-edges.test.ts
 * cover top level and plain objects), the client cannot check the call and leaves it to the
 * object, which checks the resolved values. A Map or Set of plain values is still checked locally.
 */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode } from "./helpers.js";

const mapArgs = v.strictTuple([v.map(v.string(), v.number())]);
const setArgs = v.strictTuple([v.set(v.number())]);

class Api {
  seven = rpcMethod(v.strictTuple([]), () => 7);
  word = rpcMethod(v.strictTuple([]), () => "w");
  notANumber = rpcMethod(v.strictTuple([]), () => "x");
  sumMap = rpcMethod(mapArgs, (m) => [...m].map(([key, n]) => `${key}=${n}`).join(","));
  sumSet = rpcMethod(setArgs, (s) => [...s].reduce((a, b) => a + b, 0));
}

/** A client that checks `sumMap` and `sumSet` itself, and the connections it opened. */
function validating() {
  const paired = pairWith(new Api());
  const client = createRpcClient<Api>("TEST", "validate-containers", {
    transport: paired.factory,
    validate: { sumMap: mapArgs, sumSet: setArgs },
  });
  return { client, paired };
}

describe("client-side validate and pending results in a Map or a Set", () => {
  it("a pending result as a Map value is left to the object, which accepts it", async () => {
    const { client } = validating();
    using _ = client;
    expect(await client.sumMap(new Map([["a", client.seven()]]) as never)).toBe("a=7");
  });

  it("a pending result as a Map key is left to the object, which accepts it", async () => {
    const { client } = validating();
    using _ = client;
    expect(await client.sumMap(new Map([[client.word(), 1]]) as never)).toBe("w=1");
  });

  it("a pending result as a Set element is left to the object, which accepts it", async () => {
    const { client } = validating();
    using _ = client;
    expect(await client.sumSet(new Set([client.seven(), 1]) as never)).toBe(8);
  });

  it("the object still refuses a pending result that resolves to a wrong value", async () => {
    const { client } = validating();
    using _ = client;
    const error = await expectRejectsCode(client.sumSet(new Set([client.notANumber()]) as never), "INVALID_ARGUMENT");
    expect(error.message).not.toContain("checked by the client");
    expect(error.issues!.map((issue) => issue.path)).toEqual([[0, "[entry]"]]);
  });

  it("a Map or Set of plain values is still checked by the client, and nothing is sent", async () => {
    const { client, paired } = validating();
    using _ = client;
    const inMap = await expectRejectsCode(client.sumMap(new Map([["a", "x" as never]])), "INVALID_ARGUMENT");
    expect(inMap.message).toContain("checked by the client; nothing was sent");
    const inSet = await expectRejectsCode(client.sumSet(new Set(["x" as never])), "INVALID_ARGUMENT");
    expect(inSet.message).toContain("checked by the client; nothing was sent");
    expect(paired.connections).toHaveLength(0);
  });
});

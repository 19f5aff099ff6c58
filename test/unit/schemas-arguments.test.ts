/**
 * What an argument schema sees and what reaches the method, over the in-memory paired transport
 * and the real dispatcher: the argument list exactly as the caller wrote it (a missing argument
 * is not an `undefined` one), rest parameters and defaults, the structured values dorpc carries
 * (Map, Set, Date, bytes, bigint) under Valibot and Zod, and the functions of a call that a schema
 * refused or whose output dropped them: the client's exports for them are released.
 */
import * as v from "valibot";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { getRpcSession } from "../../packages/rpc/src/client.js";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode } from "./helpers.js";

class Api {
  readonly runs: string[] = [];
  /** Every argument list the `record` schema was given, as it was given. */
  readonly seen: unknown[][] = [];
  readonly #recording: StandardSchemaV1<unknown, unknown[]> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) => {
        this.seen.push(value as unknown[]);
        return { value: value as unknown[] };
      },
    },
  };
  record = rpcMethod(this.#recording, (...args: unknown[]) => args.length);
  rest = rpcMethod(v.tupleWithRest([v.string()], v.number()), (s, ...ns) => `${s}:${ns.join(",")}`);
  optional = rpcMethod(v.strictTuple([v.string(), v.optional(v.number(), 5)]), (s, n) => `${s}:${n}`);
  values = rpcMethod(
    v.strictTuple([v.map(v.string(), v.number()), v.set(v.number()), v.date(), v.instance(Uint8Array), v.bigint()]),
    (m, s, d, b, big) => `${m.get("a")}|${s.has(2)}|${d.getTime()}|${b.length}|${big}`,
  );
  valuesZ = rpcMethod(
    z.tuple([z.map(z.string(), z.number()), z.set(z.number()), z.date(), z.instanceof(Uint8Array), z.bigint()]),
    (m, s, d, b, big) => `${m.get("a")}|${s.has(2)}|${d.getTime()}|${b.length}|${big}`,
  );
  withCallback = rpcMethod(
    v.strictTuple([v.number(), v.custom<(n: number) => Promise<number>>((x) => typeof x === "function")]),
    async (n, callback) => {
      this.runs.push("withCallback");
      return callback(n);
    },
  );
  /** `v.object` strips unknown keys: a function under one never reaches the method. */
  dropsCallback = rpcMethod(v.strictTuple([v.object({ n: v.number() })]), (o) => {
    this.runs.push("dropsCallback");
    return Object.keys(o).join(",");
  });
}

function connect(api: Api) {
  return createRpcClient<Api>("TEST", "schema-arguments", { transport: pairWith(api).factory });
}

describe("the argument list as the caller wrote it", () => {
  it("a missing argument is not an undefined one; an undefined property is kept", async () => {
    const api = new Api();
    using client = connect(api);
    const record = client.record as unknown as (...args: unknown[]) => Promise<number>;
    expect(await record()).toBe(0);
    expect(await record(undefined)).toBe(1);
    expect(await record(1, undefined)).toBe(2);
    expect(await record(undefined, undefined, 3)).toBe(3);
    expect(await record({ a: undefined })).toBe(1);
    expect(api.seen.map((args) => args.length)).toEqual([0, 1, 2, 3, 1]);
    expect(api.seen[3]).toEqual([undefined, undefined, 3]);
    expect(Object.hasOwn(api.seen[4]![0] as object, "a")).toBe(true);
  });

  it("rest parameters take any count; an optional argument's default fills a missing or undefined one", async () => {
    using client = connect(new Api());
    expect(await client.rest("a", 1, 2, 3)).toBe("a:1,2,3");
    expect(await client.rest("a")).toBe("a:");
    const wrongRest = await expectRejectsCode(client.rest("a", 1, "x" as never), "INVALID_ARGUMENT");
    expect(wrongRest.issues!.map((issue) => issue.path)).toEqual([[2]]);
    // The client's type follows the method's parameters (the schema's output): call it as written.
    const optional = client.optional as (...args: unknown[]) => Promise<string>;
    expect(await optional("s")).toBe("s:5");
    expect(await optional("s", undefined)).toBe("s:5");
    await expectRejectsCode(optional("s", 1, 2), "INVALID_ARGUMENT");
  });

  it("Map, Set, Date, Uint8Array and bigint arrive as themselves and pass Valibot and Zod schemas", async () => {
    using client = connect(new Api());
    const args = [new Map([["a", 1]]), new Set([2]), new Date(5), new Uint8Array(3), 7n] as const;
    expect(await client.values(...args)).toBe("1|true|5|3|7");
    expect(await client.valuesZ(...args)).toBe("1|true|5|3|7");
  });
});

describe("functions in checked arguments", () => {
  it("a refused call's function argument is released by the client; an accepted call's after it returns", async () => {
    const api = new Api();
    using client = connect(api);
    const exports = getRpcSession(client).exports;
    const error = await expectRejectsCode(
      client.withCallback("x" as never, (n: number) => n + 1),
      "INVALID_ARGUMENT",
    );
    expect(error.issues!.map((issue) => issue.path)).toEqual([[0]]);
    await vi.waitFor(() => expect(exports.size, "exports after the refused call").toBe(0));
    expect(await client.withCallback(2, (n: number) => n + 1)).toBe(3);
    await vi.waitFor(() => expect(exports.size, "exports after the accepted call").toBe(0));
    expect(api.runs).toEqual(["withCallback"]);
  });

  it("a function the schema's output drops never reaches the method and is released", async () => {
    const api = new Api();
    using client = connect(api);
    expect(await client.dropsCallback({ n: 1, callback: (x: number) => x } as never)).toBe("n");
    await vi.waitFor(() => expect(getRpcSession(client).exports.size).toBe(0));
    expect(api.runs).toEqual(["dropsCallback"]);
  });
});

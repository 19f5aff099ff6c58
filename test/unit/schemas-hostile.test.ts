/**
 * Argument schemas that misbehave, and the issue lists they report, over the in-memory paired
 * transport and the raw dispatcher. A schema is the object's code, but it reads hostile input: a
 * throw or a rejection refuses the call without leaking its message; an issue list of any shape
 * or size is normalised to at most 50 issues, each a bounded message and a path of strings and
 * finite numbers, and the message names each path segment as the wire does; an output that is no
 * argument list is the object's own mistake (BAD_OPTION). In every case the method never runs and
 * the connection stays usable.
 */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { MAX_ISSUE_MESSAGE, MAX_ISSUE_PATH, MAX_ISSUES } from "../../packages/rpc/src/schema-check.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, rawServer } from "./helpers.js";

/** A hand-written Standard Schema: `validate` may return anything, throw, or reject. */
function schema(validate: (value: unknown) => unknown): StandardSchemaV1<unknown, unknown[]> {
  return { "~standard": { version: 1, vendor: "test", validate: validate as never } };
}

const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

const ISSUE_COUNT = 100_000;
const LONG_MESSAGE = "m".repeat(10_000);
const LONG_PATH = Array.from({ length: 1_000 }, () => "k".repeat(10_000));

class Api {
  /** Every method body that ran: "never ran" is `runs` staying empty. */
  readonly runs: string[] = [];
  throwsError = rpcMethod(
    schema(() => {
      throw new TypeError("secret db=prod-7");
    }),
    () => this.runs.push("throwsError"),
  );
  throwsString = rpcMethod(
    schema(() => {
      throw "a bare string secret";
    }),
    () => this.runs.push("throwsString"),
  );
  asyncTransform = rpcMethod(
    schema(async (value) => {
      await turn();
      return { value: [(value as number[])[0]! * 10] };
    }),
    (n: unknown) => {
      this.runs.push("asyncTransform");
      return n;
    },
  );
  asyncRejects = rpcMethod(
    schema(async () => {
      await turn();
      throw new RangeError("secret range");
    }),
    () => this.runs.push("asyncRejects"),
  );
  oddPaths = rpcMethod(
    schema(() => ({
      issues: [
        { message: "sym", path: [Symbol("s"), { key: Symbol("k") }] },
        { message: "keys", path: [{ key: "a" }, { key: 3 }, {}, { key: null }, { key: { nested: 1 } }, 12n] },
        { message: "numbers", path: [NaN, Infinity, -Infinity, -0] },
        { message: "", path: "not an array" },
        null,
        { message: 42, path: [0] },
      ],
    })),
    () => this.runs.push("oddPaths"),
  );
  setOfNumbers = rpcMethod(v.strictTuple([v.set(v.number())]), () => this.runs.push("setOfNumbers"));
  mapByObject = rpcMethod(v.strictTuple([v.map(v.object({ id: v.number() }), v.number())]), () => this.runs.push("mapByObject"));
  manyIssues = rpcMethod(
    schema(() => ({
      issues: Array.from({ length: ISSUE_COUNT }, (_, i) => ({ message: LONG_MESSAGE, path: i < MAX_ISSUES ? LONG_PATH : [i] })),
    })),
    () => this.runs.push("manyIssues"),
  );
  emptyIssues = rpcMethod(
    schema(() => ({ issues: [] })),
    () => this.runs.push("emptyIssues"),
  );
  nullIssues = rpcMethod(
    schema((value) => ({ value, issues: null })),
    () => this.runs.push("nullIssues"),
  );
  notAList = rpcMethod(
    schema(() => ({ value: { 0: 1, length: 1 } })),
    () => this.runs.push("notAList"),
  );
  ok = rpcMethod(v.strictTuple([]), () => "ok");
}

function connect(api: Api) {
  return createRpcClient<Api>("TEST", "hostile-schemas", { transport: pairWith(api).factory });
}

/** The refusal of `method` (called without arguments) as the object sends it: message and issues. */
async function wireRefusal(
  api: Api,
  method: string,
): Promise<{ code: string; message: string; issues: { message: string; path: unknown[] }[] }> {
  const server = rawServer(api);
  server.sendCalls([[1, [method, [0]]]]);
  const outcome = await server.outcome(1);
  expect(outcome).toMatchObject({ kind: "failed" });
  return outcome as never;
}

describe("schemas that throw or reject", () => {
  it("a schema that throws refuses the call naming only the thrown value's class; the connection stays usable", async () => {
    const api = new Api();
    using client = connect(api);
    const error = await expectRejectsCode(client.throwsError(), "INVALID_ARGUMENT");
    expect(error.issues).toEqual([{ message: "The schema threw TypeError on this value.", path: [] }]);
    expect(error.message).not.toContain("prod-7");
    const bare = await expectRejectsCode(client.throwsString(), "INVALID_ARGUMENT");
    expect(bare.issues).toEqual([{ message: "The schema threw string on this value.", path: [] }]);
    expect(bare.message).not.toContain("secret");
    expect(api.runs).toEqual([]);
    expect(await client.ok()).toBe("ok");
  });

  it("an async schema's output reaches the method; its rejection refuses like a throw", async () => {
    const api = new Api();
    using client = connect(api);
    expect(await client.asyncTransform(4 as never)).toBe(40);
    const error = await expectRejectsCode(client.asyncRejects(), "INVALID_ARGUMENT");
    expect(error.issues).toEqual([{ message: "The schema threw RangeError on this value.", path: [] }]);
    expect(error.message).not.toContain("secret");
    expect(api.runs).toEqual(["asyncTransform"]);
  });
});

describe("issue lists are normalised", () => {
  it("odd path segments and messages become strings and finite numbers, and the message names them as the wire does", async () => {
    const api = new Api();
    const refusal = await wireRefusal(api, "oddPaths");
    expect(refusal.code).toBe("INVALID_ARGUMENT");
    expect(refusal.issues).toEqual([
      { message: "sym", path: ["Symbol(s)", "Symbol(k)"] },
      // `{}` and `{ key: null }` are entries with no key (a Set element); an object key says so.
      { message: "keys", path: ["a", 3, "[entry]", "[entry]", "[object key]", "[bigint key]"] },
      // JSON has no NaN or Infinity: they travel as strings; -0 as 0.
      { message: "numbers", path: ["NaN", "Infinity", "-Infinity", 0] },
      { message: "Invalid value.", path: [] },
      { message: "Invalid value.", path: [] },
      { message: "Invalid value.", path: [0] },
    ]);
    expect(refusal.message).toContain('arguments["Symbol(s)"]["Symbol(k)"]: sym');
    expect(refusal.message).toContain('arguments.a[3]["[entry]"]["[entry]"]["[object key]"]["[bigint key]"]: keys');
    expect(refusal.message).toContain('arguments.NaN.Infinity["-Infinity"][0]: numbers');
    expect(api.runs).toEqual([]);
  });

  it("the client reads the same issues and message the object sent", async () => {
    const api = new Api();
    const sent = await wireRefusal(api, "oddPaths");
    using client = connect(api);
    const error = await expectRejectsCode(client.oddPaths(), "INVALID_ARGUMENT");
    expect(error.issues).toEqual(sent.issues);
    expect(error.message).toBe(sent.message);
  });

  it("a Set element names itself [entry] and an object Map key [object key] (Valibot)", async () => {
    const api = new Api();
    using client = connect(api);
    const inSet = await expectRejectsCode(client.setOfNumbers(new Set([1, "x" as never])), "INVALID_ARGUMENT");
    expect(inSet.issues!.map((issue) => issue.path)).toEqual([[0, "[entry]"]]);
    expect(inSet.message).toContain('arguments[0]["[entry]"]: ');
    const inMap = await expectRejectsCode(client.mapByObject(new Map([[{ id: "1" } as never, 1]])), "INVALID_ARGUMENT");
    expect(inMap.issues!.map((issue) => issue.path)).toEqual([[0, "[object key]", "id"]]);
    expect(api.runs).toEqual([]);
  });

  it("a huge list of long issues is cut to 50, each message and path bounded; the message names five and counts the rest", async () => {
    const api = new Api();
    const refusal = await wireRefusal(api, "manyIssues");
    expect(refusal.code).toBe("INVALID_ARGUMENT");
    expect(refusal.issues).toHaveLength(MAX_ISSUES);
    for (const issue of refusal.issues) {
      expect(issue.message).toBe(`${"m".repeat(MAX_ISSUE_MESSAGE - 1)}…`);
      expect(issue.path).toHaveLength(MAX_ISSUE_PATH);
      expect(issue.path[0]).toBe(`${"k".repeat(199)}…`);
    }
    expect(refusal.message).toContain(`(and ${ISSUE_COUNT - 5} more)`);
    expect(refusal.message.match(/arguments\[/g)).toHaveLength(5);
    expect(refusal.message).toContain(`: ${"m".repeat(199)}…`);
    expect(refusal.message).not.toContain("m".repeat(200));
    expect(api.runs).toEqual([]);
  });

  it("an empty or non-list issue list still refuses, saying why", async () => {
    const api = new Api();
    using client = connect(api);
    const empty = await expectRejectsCode(client.emptyIssues(), "INVALID_ARGUMENT");
    expect(empty.issues).toEqual([{ message: "The schema refused the value without saying why.", path: [] }]);
    const notAList = await expectRejectsCode(client.nullIssues(), "INVALID_ARGUMENT");
    expect(notAList.message).toContain("The schema reported issues that are not a list.");
    expect(api.runs).toEqual([]);
  });
});

describe("a schema whose output is not an argument list", () => {
  it("is the object's mistake: BAD_OPTION naming the method, which never runs", async () => {
    const api = new Api();
    using client = connect(api);
    const error = await expectRejectsCode(client.notAList(), "BAD_OPTION");
    expect(error.message).toContain('"notAList"');
    expect(api.runs).toEqual([]);
    expect(await client.ok()).toBe("ok");
  });
});

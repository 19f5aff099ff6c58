/**
 * Argument schemas at the boundary (rpcMethod + Standard Schema), over the in-memory paired
 * transport and the raw dispatcher: hostile arguments refused with their issues before the method
 * runs, with Valibot and Zod; async schemas; transforms; chains, stubs and handed-out functions;
 * result schemas; the wire form of issues; requireSchemas; client-side validation.
 */
import * as v from "valibot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createRpcClient, type RpcClientOptions } from "../../packages/rpc/src/index.js";
import { RpcError } from "../../packages/rpc/src/errors.js";
import { failure } from "../../packages/rpc/src/replies.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { MAX_ISSUE_MESSAGE, MAX_ISSUE_PATH, MAX_ISSUES } from "../../packages/rpc/src/schema-check.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectThrowsCode, rawServer } from "./helpers.js";

// ---------------------------------------------------------------------------------------------
// Schemas, shared by the object and (in the client-side tests) the client
// ---------------------------------------------------------------------------------------------

const amount = v.strictTuple([v.pipe(v.number(), v.integer(), v.minValue(1))]);
const amountZ = z.tuple([z.number().int().min(1)]);
const user = v.strictTuple([v.strictObject({ id: v.number(), name: v.pipe(v.string(), v.maxLength(20)) })]);
const userZ = z.tuple([z.strictObject({ id: z.number(), name: z.string().max(20) })]);
const numbers = v.strictTuple([v.pipe(v.array(v.number()), v.maxLength(100))]);
const numbersZ = z.tuple([z.array(z.number()).max(100)]);
const digits = v.strictTuple([v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number))]);
const digitsZ = z.tuple([z.string().regex(/^\d+$/).transform(Number)]);
const coerced = z.tuple([z.coerce.number()]);
/** Short when written out: `String(x)` on a value with a poisoned `toString` throws. */
const shortText = v.strictTuple([v.custom<unknown>((x) => String(x).length < 5, "Too long.")]);

/** Async: a name is free unless it is "taken" (as a lookup elsewhere would say, a turn later). */
const freeName = async (name: string) => {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return name !== "taken";
};
const nameV = v.strictTupleAsync([v.pipeAsync(v.string(), v.checkAsync(freeName, "That name is taken."))]);
const nameZ = z.tuple([z.string().refine(freeName, "That name is taken.")]);

/** An RpcTarget whose methods are declared with schemas: reached by a getter (chains) and returned (stubs). */
class Tally extends RpcTarget {
  count = 0;
  constructor(private readonly runs: string[]) {
    super();
  }
  bump = rpcMethod(amount, (by) => {
    this.runs.push("bump");
    this.count += by;
    return this.count;
  });
}

/** An RpcTarget with a method that has no schema (for requireSchemas). */
class LooseTally extends RpcTarget {
  bump(by: number): number {
    return by;
  }
}

class Ledger {
  /** Every method body that ran, in order: "never ran" is `runs` staying empty. */
  readonly runs: string[] = [];
  total = 0;
  readonly #tally = new Tally(this.runs);

  add = rpcMethod(amount, (by) => {
    this.runs.push("add");
    this.total += by;
    return this.total;
  });
  addZ = rpcMethod(amountZ, (by) => {
    this.runs.push("addZ");
    this.total += by;
    return this.total;
  });
  rename = rpcMethod(user, (u) => {
    this.runs.push("rename");
    return `${u.id}:${u.name}`;
  });
  renameZ = rpcMethod(userZ, (u) => {
    this.runs.push("renameZ");
    return `${u.id}:${u.name}`;
  });
  sum = rpcMethod(numbers, (xs) => {
    this.runs.push("sum");
    return xs.reduce((a, b) => a + b, 0);
  });
  sumZ = rpcMethod(numbersZ, (xs) => {
    this.runs.push("sumZ");
    return xs.reduce((a, b) => a + b, 0);
  });
  /** Reports what it received: proves the method gets the schema's output. */
  parse = rpcMethod(digits, (n) => {
    this.runs.push("parse");
    return `${typeof n} ${n}`;
  });
  parseZ = rpcMethod(digitsZ, (n) => {
    this.runs.push("parseZ");
    return `${typeof n} ${n}`;
  });
  coerce = rpcMethod(coerced, (n) => {
    this.runs.push("coerce");
    return `${typeof n} ${n}`;
  });
  short = rpcMethod(shortText, (x) => {
    this.runs.push("short");
    return String(x);
  });
  claim = rpcMethod(nameV, (name) => {
    this.runs.push(`claim ${name}`);
    return name;
  });
  claimZ = rpcMethod(nameZ, (name) => {
    this.runs.push(`claimZ ${name}`);
    return name;
  });
  /** The result schema's output is what is sent: unknown keys are stripped. */
  profile = rpcMethod({ args: v.strictTuple([v.number()]), result: v.object({ id: v.number(), name: v.string() }) }, (id) => ({
    id,
    name: "Ada",
    passwordHash: "never sent",
  }));
  /** A result that fails its schema (asynchronously produced, to cover both paths). */
  broken = rpcMethod({ args: v.strictTuple([]), result: z.object({ id: z.number() }) }, async () => {
    this.runs.push("broken");
    return { id: "not a number", secret: "s3cr3t" };
  });
  one = rpcMethod(v.strictTuple([]), () => 1);
  get users(): Tally {
    return this.#tally;
  }
  tally = rpcMethod(v.strictTuple([]), () => new Tally(this.runs));
  /** A function handed out by reference, itself declared with a schema. */
  adder = rpcMethod(v.strictTuple([]), () =>
    rpcMethod(amount, (by) => {
      this.runs.push("adder");
      return by + 1;
    }),
  );
  /** Calls back with a wrong argument: the client's own callee checks its rpcMethod callback. */
  callBack = rpcMethod(v.strictTuple([v.custom<(n: number) => Promise<number>>((x) => typeof x === "function")]), async (cb) => {
    const good = await cb(2);
    const bad = await cb("two" as never).catch((error: RpcError) => `${error.code} ${JSON.stringify(error.issues)}`);
    return [good, bad];
  });
  /** No schema: fine without requireSchemas. */
  plain(x: unknown): string {
    this.runs.push("plain");
    return typeof x;
  }
}

/** A client paired with `target`, and the paired transport (frames, connections). */
function connect<T extends object>(target: T, options?: RpcServerOptions, client: Omit<RpcClientOptions<T>, "transport"> = {}) {
  const paired = pairWith(target, options);
  return { client: createRpcClient<T>("TEST", "schemas", { ...client, transport: paired.factory }), paired };
}

/** The calls a frame carries, as `[id, first name]`. */
function callNames(frames: readonly (string | Uint8Array)[]): string[] {
  const names: string[] = [];
  for (const frame of frames) {
    if (typeof frame !== "string" || !frame.startsWith("\u001eC")) continue;
    for (const call of JSON.parse(frame.slice(2)) as [number, unknown[]][]) names.push(String(call[1][0]));
  }
  return names;
}

afterEach(() => {
  vi.restoreAllMocks();
});

// ---------------------------------------------------------------------------------------------
// The object refuses what its schemas refuse
// ---------------------------------------------------------------------------------------------

describe("arguments are checked before the method runs (Valibot and Zod)", () => {
  it("a valid call runs with the schema's output", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    expect(await client.add(2)).toBe(2);
    expect(await client.addZ(3)).toBe(5);
    expect(ledger.runs).toEqual(["add", "addZ"]);
  });

  for (const [method, library] of [
    ["add", "Valibot"],
    ["addZ", "Zod"],
  ] as const) {
    it(`a wrong type is INVALID_ARGUMENT listing the issue, and the method never runs (${library})`, async () => {
      const ledger = new Ledger();
      using client = connect(ledger).client;
      const error = await expectRejectsCode(client[method]("2" as never), "INVALID_ARGUMENT");
      expect(error.issues).toHaveLength(1);
      expect(error.issues![0]!.path).toEqual([0]);
      expect(error.issues![0]!.message).toMatch(/number/i);
      expect(error.message).toContain(`Invalid arguments for "${method}" on Ledger: arguments[0]: `);
      expect(ledger.runs).toEqual([]);
      expect(ledger.total).toBe(0);
    });
  }

  it("a refinement (integer ≥ 1) refuses too; the error names the argument", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    const error = await expectRejectsCode(client.add(1.5), "INVALID_ARGUMENT");
    expect(error.message).toMatch(/arguments\[0\]: .*integer/i);
    await expectRejectsCode(client.addZ(0), "INVALID_ARGUMENT");
    expect(ledger.runs).toEqual([]);
  });

  for (const [method, library] of [
    ["rename", "Valibot"],
    ["renameZ", "Zod"],
  ] as const) {
    it(`extra keys and extra arguments are refused, each issue with its path (${library})`, async () => {
      const ledger = new Ledger();
      using client = connect(ledger).client;
      const extraKey = await expectRejectsCode(client[method]({ id: 1, name: "a", admin: true } as never), "INVALID_ARGUMENT");
      expect(extraKey.issues!.some((issue) => issue.path[0] === 0 && JSON.stringify(issue).includes("admin"))).toBe(true);
      const extraArg = await expectRejectsCode(
        (client[method] as (...a: unknown[]) => Promise<unknown>)({ id: 1, name: "a" }, "extra"),
        "INVALID_ARGUMENT",
      );
      expect(extraArg.issues!.length).toBeGreaterThan(0);
      const nested = await expectRejectsCode(client[method]({ id: "1", name: 5 } as never), "INVALID_ARGUMENT");
      expect(nested.issues!.map((issue) => issue.path)).toEqual(
        expect.arrayContaining([
          [0, "id"],
          [0, "name"],
        ]),
      );
      expect(nested.message).toContain("arguments[0].id: ");
      expect(nested.message).toContain("arguments[0].name: ");
      expect(ledger.runs).toEqual([]);
    });
  }

  for (const [method, library] of [
    ["sum", "Valibot"],
    ["sumZ", "Zod"],
  ] as const) {
    it(`a huge array is refused by its length limit without the method running (${library})`, async () => {
      const ledger = new Ledger();
      using client = connect(ledger).client;
      const error = await expectRejectsCode(client[method](new Array(50_000).fill(1)), "INVALID_ARGUMENT");
      expect(error.issues!.some((issue) => issue.path.length === 1 && issue.path[0] === 0)).toBe(true);
      expect(ledger.runs).toEqual([]);
    });
  }

  it("thousands of issues are cut to a bounded list and message; the message says how many more", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    // Valibot reports every element of a wrong type: 5,000 issues.
    const error = await expectRejectsCode(client.sum(new Array(5_000).fill("x") as never), "INVALID_ARGUMENT");
    expect(error.issues).toHaveLength(MAX_ISSUES);
    expect(error.issues![MAX_ISSUES - 1]!.path).toEqual([0, MAX_ISSUES - 1]);
    expect(error.message).toContain("(and 4995 more)");
    expect(error.message.length).toBeLessThan(2_000);
    expect(ledger.runs).toEqual([]);
  });

  it("a poisoned toString that makes the schema throw is INVALID_ARGUMENT, not the validator's TypeError", async () => {
    const ledger = new Ledger();
    // Sent raw: an object whose toString and valueOf are data, so String(x) throws in the schema.
    const server = rawServer(ledger);
    server.sendCalls([[1, ["short", [0, { toString: "x", valueOf: 1 }]]]]);
    const outcome = await server.outcome(1);
    expect(outcome).toMatchObject({ kind: "failed", code: "INVALID_ARGUMENT" });
    const { message, issues } = outcome as { message: string; issues: unknown };
    expect(message).toContain("The schema threw TypeError on this value.");
    expect(issues).toEqual([{ message: "The schema threw TypeError on this value.", path: [] }]);
    expect(ledger.runs).toEqual([]);
  });

  it("prototype tricks in the arguments are refused by a strict schema, and nothing is polluted", async () => {
    const ledger = new Ledger();
    const server = rawServer(ledger);
    server.sendCalls([
      [1, ["rename", [0, { id: 1, name: "a", constructor: { prototype: { polluted: true } } }]]],
      [2, ["renameZ", [0, { id: 1, name: "a", hasOwnProperty: "x", toString: "y" }]]],
      // `__proto__` as a key never gets as far as the schema: the decoder refuses it.
      [3, ["rename", [0, JSON.parse('{"id":1,"name":"a","__proto__":{"polluted":true}}')]]],
    ]);
    expect(await server.outcome(1)).toMatchObject({ kind: "failed", code: "INVALID_ARGUMENT" });
    expect(await server.outcome(2)).toMatchObject({ kind: "failed", code: "INVALID_ARGUMENT" });
    expect(await server.outcome(3)).toMatchObject({ kind: "failed", code: "DECODE" });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(ledger.runs).toEqual([]);
  });

  it("the refusal travels as [id, 3, INVALID_ARGUMENT, message, [{ message, path }]]", async () => {
    const server = rawServer(new Ledger());
    server.sendCalls([[7, ["rename", [0, { id: "1", name: "a" }]]]]);
    const [reply] = await server.replies();
    expect(reply!.slice(0, 3)).toEqual([7, 3, "INVALID_ARGUMENT"]);
    expect(reply![4]).toEqual([{ message: expect.any(String), path: [0, "id"] }]);
    // Only the key of each path segment: never the validator's copy of the input.
    expect(JSON.stringify(reply)).not.toContain('"input"');
  });

  it("a getter-bearing argument is validated as the data the encoder read, once", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    let reads = 0;
    const tricky = {
      id: 1,
      get name(): string {
        reads++;
        return reads === 1 ? "x".repeat(50) : "ok";
      },
    };
    // The encoder reads the getter once; the object validates that value (too long) and refuses.
    await expectRejectsCode(client.rename(tricky), "INVALID_ARGUMENT");
    expect(reads).toBe(1);
    expect(ledger.runs).toEqual([]);
  });
});

describe("transforms and coercions", () => {
  it("the method receives the schema's output: a string of digits arrives as a number (Valibot, Zod)", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    expect(await client.parse("42")).toBe("number 42");
    expect(await client.parseZ("7")).toBe("number 7");
    expect(await client.coerce("3" as never)).toBe("number 3");
    await expectRejectsCode(client.parse("4x2"), "INVALID_ARGUMENT");
  });
});

describe("async schemas", () => {
  for (const [method, library] of [
    ["claim", "Valibot"],
    ["claimZ", "Zod"],
  ] as const) {
    it(`an async check accepts and refuses; a refused call never runs (${library})`, async () => {
      const ledger = new Ledger();
      using client = connect(ledger).client;
      expect(await client[method]("ada")).toBe("ada");
      const error = await expectRejectsCode(client[method]("taken"), "INVALID_ARGUMENT");
      expect(error.issues).toEqual([{ message: "That name is taken.", path: [0] }]);
      // The validator's full stop is not doubled by the sentence around it.
      expect(error.message).toBe(`Invalid arguments for "${method}" on Ledger: arguments[0]: That name is taken.`);
      expect(ledger.runs).toEqual([`${method} ada`]);
    });
  }

  it("a call waiting for its async schema holds the calls after it (sequential ordering)", async () => {
    const ledger = new Ledger();
    using client = connect(ledger, { ordering: "sequential" }).client;
    const results = await Promise.all([client.claim("first"), client.add(1), client.claimZ("taken").catch(() => "refused"), client.add(2)]);
    expect(results).toEqual(["first", 1, "refused", 3]);
    expect(ledger.runs).toEqual(["claim first", "add", "add"]);
  });
});

describe("chains, stubs and functions handed out are checked the same way", () => {
  it("a chain through a getter to an RpcTarget's rpcMethod (client.users.bump)", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    expect(await client.users.bump(2)).toBe(2);
    const error = await expectRejectsCode(client.users.bump(-1), "INVALID_ARGUMENT");
    expect(error.message).toContain('Invalid arguments for "bump" on Ledger');
    expect(ledger.runs).toEqual(["bump"]);
  });

  it("a stub of a returned RpcTarget", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    using tally = await client.tally();
    expect(await tally.bump(3)).toBe(3);
    await expectRejectsCode(tally.bump("3" as never), "INVALID_ARGUMENT");
    // Pipelined on the call that returns it, in the same frame.
    await expectRejectsCode(client.tally().bump(0), "INVALID_ARGUMENT");
    expect(ledger.runs).toEqual(["bump"]);
  });

  it("a function handed out by reference, declared with rpcMethod", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    using adder = await client.adder();
    expect(await adder(1)).toBe(2);
    const error = await expectRejectsCode(adder("1" as never), "INVALID_ARGUMENT");
    expect(error.message).toContain("Invalid arguments for a function Ledger handed out");
    expect(ledger.runs).toEqual(["adder"]);
  });

  it("a callback the client passes, declared with rpcMethod, is checked by the client when the object calls it", async () => {
    const seen: number[] = [];
    using client = connect(new Ledger()).client;
    const callback = rpcMethod(v.strictTuple([v.number()]), (n) => {
      seen.push(n);
      return n * 10;
    });
    expect(await client.callBack(callback)).toEqual([
      20,
      `INVALID_ARGUMENT [{"message":"Invalid type: Expected number but received \\"two\\"","path":[0]}]`,
    ]);
    expect(seen).toEqual([2]);
  });

  it("a call pipelined on a refused call fails with the same INVALID_ARGUMENT", async () => {
    const ledger = new Ledger();
    using client = connect(ledger).client;
    const bad = client.add("x" as never);
    const after = client.sum([bad as never]);
    const [first, second] = await Promise.allSettled([bad, after]);
    expect((first as PromiseRejectedResult).reason).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect((second as PromiseRejectedResult).reason).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(ledger.runs).toEqual([]);
  });
});

describe("result schemas", () => {
  it("what is sent is the result schema's output (unknown keys stripped)", async () => {
    using client = connect(new Ledger()).client;
    expect(await client.profile(1)).toEqual({ id: 1, name: "Ada" });
  });

  it("a result that fails is withheld as INVALID_RESULT, without the issues; the server log has them", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const ledger = new Ledger();
    using client = connect(ledger).client;
    const error = await expectRejectsCode(client.broken(), "INVALID_RESULT");
    expect(error.message).toContain('The result of "broken" on Ledger does not match its result schema');
    expect(error.issues).toBeUndefined();
    expect(error.message).not.toContain("s3cr3t");
    expect(ledger.runs).toEqual(["broken"]); // it ran: only its result was withheld
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("result.id: "));
  });
});

describe("issues read from the wire", () => {
  it("a hostile reply's issue list is bounded and cleaned", () => {
    const hostile = [...new Array(MAX_ISSUES + 500).fill({ message: "m".repeat(10_000), path: new Array(1_000).fill("k".repeat(1_000)) })];
    const error = failure("INVALID_ARGUMENT", "bad", hostile, undefined);
    expect(error.issues).toHaveLength(MAX_ISSUES);
    expect(error.issues![0]!.message.length).toBe(MAX_ISSUE_MESSAGE);
    expect(error.issues![0]!.path).toHaveLength(MAX_ISSUE_PATH);
    expect(String(error.issues![0]!.path[0]).length).toBeLessThanOrEqual(200);
    const junk = failure("INVALID_ARGUMENT", "bad", [5, null, { message: 1 }, { message: "ok", path: [{}, 1, "a", null] }], undefined);
    expect(junk.issues).toEqual([{ message: "ok", path: [1, "a"] }]);
    expect(failure("INVALID_ARGUMENT", "bad", "not a list", undefined).issues).toBeUndefined();
  });

  it("only INVALID_ARGUMENT carries issues; the RpcError of any other code has no issues property", () => {
    expect(Object.hasOwn(failure("NOT_FOUND", "m", undefined, undefined), "issues")).toBe(false);
    expect(Object.hasOwn(new RpcError("LIMIT", "m"), "issues")).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// requireSchemas
// ---------------------------------------------------------------------------------------------

class Strict {
  /** Getters take no arguments: exempt. */
  get label(): string {
    return "strict";
  }
  add = rpcMethod(amount, (by) => by);
  now = rpcMethod(v.strictTuple([]), () => 1);
  /** Returns an RpcTarget whose method has no schema: refused per call. */
  loose = rpcMethod(v.strictTuple([]), () => new LooseTally());
  /** Hands out a plain function: refused per call. */
  adder = rpcMethod(v.strictTuple([]), () => (n: number) => n + 1);
  /** Unreachable names are not the policy's concern. */
  _helper(): number {
    return 1;
  }
}

class Forgetful extends Strict {
  reset(): void {}
  peek = rpcMethod({ readOnly: true }, () => 1);
}

describe("requireSchemas", () => {
  it("refuses to serve an object with methods that lack an argument schema, naming every one (getters exempt)", () => {
    const error = expectThrowsCode(() => pairWith(new Forgetful(), { requireSchemas: true }), "BAD_OPTION");
    expect(error.message).toContain('Forgetful is served with requireSchemas, but these methods have no argument schema: "peek", "reset".');
    expect(error.message).not.toContain("label");
    expect(error.message).not.toContain("_helper");
    // The same object is served without the option.
    expect(() => pairWith(new Forgetful())).not.toThrow();
  });

  it("methods the allow option hides are not required to have one", () => {
    expect(() => pairWith(new Forgetful(), { requireSchemas: true, access: { allow: ["add", "now", "label"] } })).not.toThrow();
  });

  it("an object whose every method has a schema is served; its calls work", async () => {
    using client = connect(new Strict(), { requireSchemas: true }).client;
    expect(await client.add(2)).toBe(2);
    expect(await client.label).toBe("strict");
    await expectRejectsCode(client.add(0), "INVALID_ARGUMENT");
  });

  it("a method of a returned RpcTarget or a handed-out function without a schema is refused per call", async () => {
    using client = connect(new Strict(), { requireSchemas: true }).client;
    const error = await expectRejectsCode(client.loose().bump(1), "NOT_CALLABLE");
    expect(error.message).toContain('"bump" on Strict has no argument schema, and Strict is served with requireSchemas');
    await expectRejectsCode(client.adder()(1), "NOT_CALLABLE");
    // Without the option they run.
    using open = connect(new Strict()).client;
    expect(await open.loose().bump(1)).toBe(1);
    expect(await open.adder()(1)).toBe(2);
  });

  it("is validated as an option: a boolean, and never with unsafeTrustedCaller", () => {
    expectThrowsCode(() => pairWith(new Strict(), { requireSchemas: "yes" as never }), "BAD_OPTION");
    const error = expectThrowsCode(
      () => pairWith(new Strict(), { requireSchemas: true, access: { unsafeTrustedCaller: true } }),
      "BAD_OPTION",
    );
    expect(error.message).toContain("unsafeTrustedCaller");
  });
});

// ---------------------------------------------------------------------------------------------
// Client-side validation
// ---------------------------------------------------------------------------------------------

describe("client-side validation (validate option)", () => {
  const schemas = { add: amount, addZ: amountZ, rename: user, parse: digits, claim: nameV, "users.bump": amount };

  it("a call whose arguments fail is refused before anything is sent, with the object's error and issues", async () => {
    const ledger = new Ledger();
    const { client, paired } = connect(ledger, undefined, { validate: schemas });
    using _ = client;
    const local = await expectRejectsCode(client.rename({ id: "1", name: 5 } as never), "INVALID_ARGUMENT");
    await expectRejectsCode(client.addZ(0), "INVALID_ARGUMENT");
    await expectRejectsCode(client.users.bump(0), "INVALID_ARGUMENT");
    expect(paired.connections).toHaveLength(0); // not even a connection was opened
    expect(local.message).toContain("checked by the client; nothing was sent");
    // The object, asked directly, says the same.
    using direct = connect(new Ledger()).client;
    const remote = await expectRejectsCode(direct.rename({ id: "1", name: 5 } as never), "INVALID_ARGUMENT");
    expect(local.issues).toEqual(remote.issues);
    expect(ledger.runs).toEqual([]);
  });

  it("valid calls go out as before; methods without a client schema are not checked locally", async () => {
    const ledger = new Ledger();
    const { client, paired } = connect(ledger, undefined, { validate: schemas });
    using _ = client;
    expect(await client.add(1)).toBe(1);
    await expectRejectsCode(client.sum(["x"] as never), "INVALID_ARGUMENT"); // the object's refusal
    expect(callNames(paired.connections[0]!.sentByClient)).toEqual(["add", "sum"]);
  });

  it("sends what was passed, not the schema's output: the object transforms it once", async () => {
    const ledger = new Ledger();
    const { client, paired } = connect(ledger, undefined, { validate: schemas });
    using _ = client;
    expect(await client.parse("42")).toBe("number 42");
    expect(paired.connections[0]!.sentByClient.join("")).toContain('"42"');
  });

  it("an async schema holds its call and the calls after it, so order is kept; a refused one is never sent", async () => {
    const ledger = new Ledger();
    // Sequential on the object too, so the order the client kept is the order they run in.
    const { client, paired } = connect(ledger, { ordering: "sequential" }, { validate: schemas });
    using _ = client;
    const results = await Promise.all([
      client.claim("ada"),
      client.add(1),
      client.claim("taken").catch((e: RpcError) => e.code),
      client.add(2),
    ]);
    expect(results).toEqual(["ada", 1, "INVALID_ARGUMENT", 3]);
    expect(callNames(paired.connections[0]!.sentByClient)).toEqual(["claim", "add", "add"]);
    expect(ledger.runs).toEqual(["claim ada", "add", "add"]);
  });

  it("a pending result passed as an argument is left to the object to check", async () => {
    const ledger = new Ledger();
    using client = connect(ledger, undefined, { validate: schemas }).client;
    expect(await client.add(client.one())).toBe(1);
  });

  it("the option is checked when the client is created", () => {
    const make = (validate: unknown) => () =>
      createRpcClient("TEST", "x", { transport: pairWith(new Ledger()).factory, validate: validate as never });
    expectThrowsCode(make(5), "BAD_OPTION");
    expect(expectThrowsCode(make({ add: {} }), "BAD_OPTION").message).toContain("validate.add must be a Standard Schema");
    expectThrowsCode(make({ add: v.number() as never, "": amount }), "BAD_OPTION");
    expectThrowsCode(make({ "users..bump": amount }), "BAD_OPTION");
  });
});

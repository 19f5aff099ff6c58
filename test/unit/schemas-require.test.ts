/**
 * `requireSchemas` beyond the methods a class declares directly (schemas.test.ts covers those),
 * over the in-memory paired transport and the real dispatcher. When the object is first served,
 * methods inherited from further up the prototype chain and async generator methods count as
 * methods that need a schema. Functions the check could not see then (a getter's returned
 * function, a method of an RpcTarget reached through a getter, an rpcMethod field added later
 * without `args`, a method patched onto the prototype later) are refused per call with
 * NOT_CALLABLE: none of them runs, and the connection stays usable.
 */
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { RpcTarget } from "../../packages/rpc/src/rpc-target.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectThrowsCode } from "./helpers.js";

class Base {
  inherited(x: number): number {
    return x;
  }
}
class Middle extends Base {}
class Child extends Middle {
  ok = rpcMethod(v.strictTuple([]), () => 1);
}

class Streams {
  ok = rpcMethod(v.strictTuple([]), () => 1);
  async *numbers(): AsyncGenerator<number> {
    yield 1;
  }
}

class Loose extends RpcTarget {
  constructor(private readonly runs: string[]) {
    super();
  }
  loose(x: number): number {
    this.runs.push("loose");
    return x;
  }
}

class Strict {
  readonly runs: string[] = [];
  ok = rpcMethod(v.strictTuple([]), () => "ok");
  /** A getter needs no schema, but the function it returns is handed out and has none. */
  get adder(): (x: number) => number {
    return (x) => {
      this.runs.push("adder");
      return x;
    };
  }
  get sub(): Loose {
    return new Loose(this.runs);
  }
  /** Adds an rpcMethod declared without `args`, after the object was first served. */
  addLater = rpcMethod(v.strictTuple([]), () => {
    (this as Record<string, unknown>).late = rpcMethod({ readOnly: true }, () => this.runs.push("late"));
    return true;
  });
}

/** Methods a test patches onto `Strict.prototype`, removed after each test. */
const patched: string[] = [];
afterEach(() => {
  for (const name of patched.splice(0)) delete (Strict.prototype as unknown as Record<string, unknown>)[name];
});

function connect(api: Strict) {
  return createRpcClient<Strict>("TEST", "require-schemas", { transport: pairWith(api, { requireSchemas: true }).factory });
}

/** The client as a bag of callables, for names its type does not declare. */
type Untyped = Record<string, (...args: unknown[]) => Promise<unknown>>;

describe("requireSchemas when the object is first served", () => {
  it("a method inherited from a grandparent class without a schema refuses the object", () => {
    const error = expectThrowsCode(() => pairWith(new Child(), { requireSchemas: true }), "BAD_OPTION");
    expect(error.message).toContain('Child is served with requireSchemas, but this method has no argument schema: "inherited".');
  });

  it("an async generator method counts as a method", () => {
    const error = expectThrowsCode(() => pairWith(new Streams(), { requireSchemas: true }), "BAD_OPTION");
    expect(error.message).toContain('this method has no argument schema: "numbers".');
  });
});

describe("requireSchemas per call, for functions the first check could not see", () => {
  it("a function a getter returns is refused with NOT_CALLABLE", async () => {
    const api = new Strict();
    using client = connect(api);
    const error = await expectRejectsCode(client.adder(1), "NOT_CALLABLE");
    expect(error.message).toContain("A function Strict handed out has no argument schema, and Strict is served with requireSchemas");
    expect(api.runs).toEqual([]);
    expect(await client.ok()).toBe("ok");
  });

  it("a method of an RpcTarget reached through a getter is refused with NOT_CALLABLE", async () => {
    const api = new Strict();
    using client = connect(api);
    const error = await expectRejectsCode(client.sub.loose(1), "NOT_CALLABLE");
    expect(error.message).toContain('"loose" on Strict has no argument schema');
    expect(api.runs).toEqual([]);
  });

  it("an rpcMethod field without args added after the first call is refused with NOT_CALLABLE", async () => {
    const api = new Strict();
    using client = connect(api);
    expect(await client.addLater()).toBe(true);
    const error = await expectRejectsCode((client as unknown as Untyped).late!(), "NOT_CALLABLE");
    expect(error.message).toContain('"late" on Strict has no argument schema');
    expect(api.runs).toEqual([]);
    expect(await client.ok()).toBe("ok");
  });

  it("a method patched onto the prototype after the object was served is refused with NOT_CALLABLE", async () => {
    const api = new Strict();
    using client = connect(api);
    expect(await client.ok()).toBe("ok");
    patched.push("patched");
    (Strict.prototype as unknown as Record<string, unknown>).patched = () => api.runs.push("patched");
    const error = await expectRejectsCode((client as unknown as Untyped).patched!(), "NOT_CALLABLE");
    expect(error.message).toContain('"patched" on Strict has no argument schema');
    expect(api.runs).toEqual([]);
    expect(await client.ok()).toBe("ok");
  });
});

import * as v from "valibot";
import { it } from "vitest";
import { z } from "zod";
import { createRpcClient, RpcError, rpcMethod, RpcTarget } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

const custom = (fn: (v: unknown) => unknown) => ({ "~standard": { version: 1 as const, vendor: "x", validate: fn } }) as any;

class T2 extends RpcTarget {
  m = rpcMethod(v.strictTuple([v.object({ a: v.number() })]), (x) => x.a);
}
class Obj {
  nested = rpcMethod(v.strictTuple([v.object({ u: v.array(v.object({ name: v.string() })) })]), (x) => 1);
  nestedZ = rpcMethod(z.tuple([z.object({ u: z.array(z.object({ name: z.string() })) })]), (x) => 1);
  mapV = rpcMethod(v.strictTuple([v.map(v.string(), v.number())]), (x) => 1);
  symPath = rpcMethod(
    custom(() => ({ issues: [{ message: "s", path: [Symbol("k"), { key: 1 }, { key: "z" }, 2n] }] })),
    () => 1,
  );
  noMsg = rpcMethod(
    custom(() => ({ issues: [{ path: [0] }] })),
    () => 1,
  );
  throws = rpcMethod(
    custom(() => {
      throw new RangeError("secret");
    }),
    () => 1,
  );
  rejects = rpcMethod(
    custom(() => Promise.reject(new TypeError("secret"))),
    () => 1,
  );
  notArr = rpcMethod(
    custom((x) => ({ value: 5 })),
    () => 1,
  );
  res = rpcMethod({ result: v.object({ id: v.string() }) }, () => ({ id: 5 }));
  resStrip = rpcMethod({ result: v.object({ id: v.string() }) }, () => ({ id: "x", secret: 1 }));
  throwRpc() {
    throw new RpcError("INVALID_ARGUMENT", "mine", { issues: [{ message: "m", path: [0, "a"] }] });
  }
  throwRpcCause() {
    throw new RpcError("LIMIT", "mine", { cause: new Error("inner") });
  }
  throwFakeRpc() {
    const e: any = new Error("fake");
    e.name = "RpcError";
    e.code = "TIMEOUT";
    throw e;
  }
  get t() {
    return new T2();
  }
}

async function show(name: string, p: Promise<unknown>) {
  try {
    console.log(name, "=>", await p);
  } catch (e: any) {
    console.log(
      name,
      "REJ",
      RpcError.is(e),
      e instanceof RpcError,
      e?.code,
      e?.message?.slice(0, 200),
      "issues:",
      JSON.stringify(e?.issues),
      "own issues:",
      e && Object.hasOwn(e, "issues"),
      "cause:",
      e?.cause?.message,
      "keys:",
      e && Object.keys(e),
    );
  }
}

it("probe", async () => {
  const paired = pairWith(new Obj());
  const c: any = createRpcClient<any>("TEST", "p", { transport: paired.factory });
  await show("nested", c.nested({ u: [{ name: "a" }, { name: 5 }] }));
  await show("nestedZ", c.nestedZ({ u: [{ name: "a" }, { name: 5 }] }));
  await show("mapV", c.mapV(new Map([["a", "x"]])));
  await show("symPath", c.symPath(1));
  await show("noMsg", c.noMsg(1));
  await show("throws", c.throws(1));
  await show("rejects", c.rejects(1));
  await show("notArr", c.notArr(1));
  await show("res", c.res());
  await show("resStrip", c.resStrip());
  await show("throwRpc", c.throwRpc());
  await show("throwRpcCause", c.throwRpcCause());
  await show("throwFakeRpc", c.throwFakeRpc());
  await show("chain t.m", c.t.m({ a: "x" }));
  await show("too many args", c.nested({ u: [] }, 2));
  await show("zero args", c.nested());
  const vc: any = createRpcClient<any>("TEST", "p2", {
    transport: pairWith(new Obj()).factory,
    validate: { nested: v.strictTuple([v.object({ u: v.array(v.object({ name: v.string() })) })]) } as any,
  });
  await show("client validate", vc.nested({ u: [{ name: 5 }] }));
  c[Symbol.dispose]?.();
  vc[Symbol.dispose]?.();
});

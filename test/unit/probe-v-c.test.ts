import { it } from "vitest";
import { decode, encode, RpcError, RPC_ERROR_CODES } from "../../packages/rpc/src/index.js";

const M = "\u001eV";
function tryIt(name: string, fn: () => unknown) {
  try {
    const r = fn();
    console.log(name, "=>", r);
  } catch (e) {
    console.log(
      name,
      "THREW",
      RpcError.is(e) ? "RpcError" : "NOT-RPC " + (e as any)?.constructor?.name,
      (e as any)?.code,
      String((e as any)?.message).slice(0, 200),
      "cause:",
      (e as any)?.cause,
    );
  }
}
const d = (s: string) => decode(M + s);
const rt = (x: unknown) => decode(encode(x));

it("probe", () => {
  tryIt("rec0 Infinity", () => d("[1,[[0,1e999]]]"));
  tryIt("json Infinity", () => d("[0,[1e999]]"));
  tryIt("err long name", () => d(`[1,[[7,{"name":"${"x".repeat(300)}","message":"m"}]]]`));
  tryIt("err long name enc", () => {
    const e = new Error("m");
    e.name = "y".repeat(300);
    return (rt(e) as any).name.length;
  });
  tryIt("getter top", () =>
    encode({
      get a() {
        throw new Error("boom");
      },
    }),
  );
  tryIt("getter nested", () =>
    encode({
      x: {
        get a() {
          throw new Error("boom");
        },
      },
    }),
  );
  tryIt("getter arr", () =>
    encode([
      0,
      {
        get a() {
          throw new Error("boom");
        },
      },
    ]),
  );
  tryIt("getter in error prop", () => {
    const e: any = new Error("m");
    Object.defineProperty(e, "p", {
      get() {
        throw new Error("boom");
      },
      enumerable: true,
    });
    return rt(e);
  });
  tryIt("proxy throw ownKeys", () =>
    encode(
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("ok-boom");
          },
        },
      ),
    ),
  );
  tryIt("proxy throw getProto", () =>
    encode(
      new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error("gp-boom");
          },
        },
      ),
    ),
  );
  tryIt("proxy nested ownKeys", () =>
    encode({
      a: new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("ok-boom");
          },
        },
      ),
    }),
  );
  tryIt("getter in map records", () =>
    encode(
      new Map([
        [
          1,
          {
            get a() {
              throw new Error("boom");
            },
          },
        ],
      ]),
    ),
  );
  tryIt("encode class inst nested", () => encode({ a: [1, new (class Foo {})()] }));
  tryIt("encode fn in map", () => encode(new Map([["k", () => 1]])));
  // RpcError
  const e = new RpcError("TIMEOUT", "timed out", { cause: new Error("inner") });
  tryIt("json stringify", () => JSON.stringify(e));
  tryIt("structuredClone", () => {
    const c = structuredClone(e) as any;
    return [c.name, c.message, c.code, c.cause?.message, RpcError.is(c), c instanceof RpcError];
  });
  tryIt("structuredClone issues", () => {
    const c = structuredClone(new RpcError("INVALID_ARGUMENT", "x", { issues: [{ message: "m", path: [0] }] })) as any;
    return [c.code, c.issues, RpcError.is(c)];
  });
  tryIt("toString", () => String(e));
  tryIt("is plain obj", () => RpcError.is({ name: "RpcError", code: "TIMEOUT", message: "x" }));
  tryIt("is Error bad code", () => {
    const x: any = new Error("x");
    x.name = "RpcError";
    x.code = "NOPE";
    return RpcError.is(x);
  });
  tryIt("is Error good code", () => {
    const x: any = new Error("x");
    x.name = "RpcError";
    x.code = "TIMEOUT";
    return RpcError.is(x);
  });
  tryIt("is Error proto code", () => {
    const x: any = new Error("x");
    x.name = "RpcError";
    x.code = "hasOwnProperty";
    return RpcError.is(x);
  });
  tryIt("is Error code toString", () => {
    const x: any = new Error("x");
    x.name = "RpcError";
    x.code = "toString";
    return RpcError.is(x);
  });
  tryIt("is null", () => RpcError.is(null));
  tryIt("is subclass renamed", () => {
    class X extends RpcError {}
    const x = new X("TIMEOUT", "x");
    (x as any).name = "X";
    return RpcError.is(x);
  });
  tryIt("is rpcError with bad code", () => RpcError.is(new RpcError("NOPE" as any, "x")));
  tryIt("ctor bad code", () => new RpcError("NOPE" as any, "x").code);
  tryIt("ctor cause undefined", () => {
    const x = new RpcError("TIMEOUT", "x", { cause: undefined });
    return ["cause" in x, Object.hasOwn(x, "cause")];
  });
  tryIt("ctor no cause", () => {
    const x = new RpcError("TIMEOUT", "x", {});
    return ["cause" in x];
  });
  tryIt("ctor issues empty", () => {
    const x = new RpcError("INVALID_ARGUMENT", "x", { issues: [] });
    return [Object.hasOwn(x, "issues"), x.issues];
  });
  tryIt("own keys", () => Object.keys(new RpcError("TIMEOUT", "x")));
  tryIt("code writable?", () => {
    const x: any = new RpcError("TIMEOUT", "x");
    x.code = "LIMIT";
    return x.code;
  });
  tryIt("codes frozen", () => [Object.isFrozen(RPC_ERROR_CODES), RPC_ERROR_CODES.length]);
  tryIt("rt rpcError ctor", () => {
    const r: any = rt(new RpcError("LIMIT", "x"));
    return [r.constructor.name, r instanceof RpcError, Object.keys(r), r.code];
  });
  tryIt("rt rpcError no stack", () => {
    const r: any = decode(encode(new RpcError("LIMIT", "x"), { errorStack: false }));
    return [RpcError.is(r), r.code];
  });
  tryIt("rt error with code prop cross", () => {
    const x: any = new TypeError("x");
    x.name = "RpcError";
    x.code = "LIMIT";
    const r: any = rt(x);
    return [RpcError.is(r), r.constructor.name];
  });
  tryIt("rt error null proto props", () => {
    const x: any = new Error("x");
    x.d = Object.create(null);
    return rt(x);
  });
  tryIt("rt error message non-own getter", () => {
    class E extends Error {
      get message() {
        return "from getter";
      }
    }
    return (rt(new E()) as any).message;
  });
  tryIt("rt DOMException", () => {
    const r: any = rt(new DOMException("dm", "AbortError"));
    return [r.name, r.message, r.constructor.name, r.code];
  });
  tryIt("rt error sub name", () => {
    class QuotaExceededError extends Error {}
    const r: any = rt(new QuotaExceededError("q"));
    return [r.name];
  });
  tryIt("rt error sub toStringTag", () => {
    const o = { [Symbol.toStringTag]: "Error", message: "x" };
    return rt(o);
  });
  tryIt("rt arr toStringTag", () => {
    const o = { [Symbol.toStringTag]: "Array" };
    return rt(o);
  });
  tryIt("rt error w/ stack prop false", () => {
    const x = new Error("x");
    const r: any = decode(encode(x, { errorStack: false }));
    return Object.hasOwn(r, "stack") ? r.stack.slice(0, 30) : "no own stack";
  });
  tryIt("rt error own stack nonstring", () => {
    const x: any = new Error("x");
    x.stack = 5;
    const r: any = rt(x);
    return r.stack;
  });
  tryIt("rt aggregate errors own?", () => {
    const r: any = rt(new AggregateError([1, 2], "m"));
    return [r.errors, Object.hasOwn(r, "errors")];
  });
  tryIt("rt error message nonstring", () => {
    const x: any = new Error("x");
    x.message = 5;
    const r: any = rt(x);
    return [r.message, typeof r.message];
  });
  tryIt("rt error name nonstring", () => {
    const x: any = new Error("x");
    x.name = 5;
    const r: any = rt(x);
    return [r.name, typeof r.name];
  });
  tryIt("rt error name getter throws", () => {
    const x: any = new Error("x");
    Object.defineProperty(x, "name", {
      get() {
        throw new Error("nb");
      },
    });
    const r: any = rt(x);
    return [r.name, r.message];
  });
});

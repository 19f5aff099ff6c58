import { it } from "vitest";
import { decode, encode, encodeAsync, RpcError } from "../../packages/rpc/src/index.js";

function tryIt(name: string, fn: () => unknown) {
  try {
    const r = fn();
    console.log(name, "=>", r);
  } catch (e) {
    console.log(name, "THREW", (e as any)?.constructor?.name, (e as any)?.code, (e as any)?.message);
  }
}
const rt = (x: unknown) => decode(encode(x));

it("probe", async () => {
  tryIt("-0", () => Object.is(rt(-0), -0));
  tryIt("NaN", () => rt(NaN));
  tryIt("undefined", () => rt(undefined));
  tryIt("bigint", () => rt(-123n));
  tryIt("arr -0", () => Object.is((rt([-0]) as any)[0], -0));
  tryIt("obj undef", () => JSON.stringify(Object.keys(rt({ a: undefined }) as any)));
  tryIt("holes", () => {
    const a = rt([1, , 3]) as any[];
    return [a.length, 1 in a];
  });
  tryIt("arr named", () => {
    const a: any = [1];
    a.x = 2;
    return (rt(a) as any).x;
  });
  tryIt("sparse big", () => {
    const a: any[] = [];
    a[5] = 1;
    const r = rt(a) as any[];
    return [r.length, 0 in r, r[5]];
  });
  tryIt("trailing hole", () => {
    const a: any[] = [1];
    a.length = 3;
    const r = rt(a) as any[];
    return r.length;
  });
  tryIt("date invalid", () => rt(new Date(NaN)));
  tryIt("regexp", () => {
    const r = rt(/a\/b/gimsuy) as RegExp;
    return [r.source, r.flags];
  });
  tryIt("regexp v", () => {
    const r = rt(/[a]/v) as RegExp;
    return [r.source, r.flags];
  });
  tryIt("regexp lastIndex", () => {
    const re = /a/g;
    re.lastIndex = 3;
    return (rt(re) as RegExp).lastIndex;
  });
  tryIt("boxed", () => [rt(new Number(-0)), rt(new String("x")), rt(new Boolean(false)), rt(Object(1n))]);
  tryIt("boxed -0", () => Object.is((rt(new Number(-0)) as Number).valueOf(), -0));
  tryIt("boxed symbol", () => rt(Object(Symbol("x"))));
  tryIt("map", () =>
    rt(
      new Map<any, any>([
        [NaN, -0],
        [{ a: 1 }, new Set([1])],
      ]),
    ),
  );
  tryIt("map -0 key", () => {
    const m = rt(new Map([[-0, 1]])) as Map<any, any>;
    return Object.is([...m.keys()][0], -0);
  });
  tryIt("cycle", () => {
    const o: any = {};
    o.self = o;
    const r = rt(o) as any;
    return r.self === r;
  });
  tryIt("shared", () => {
    const s = {};
    const r = rt([s, s]) as any[];
    return r[0] === r[1];
  });
  tryIt("proto key", () => rt(JSON.parse('{"__proto__": 1}')));
  tryIt("null proto", () => {
    const o = Object.create(null);
    o.a = 1;
    const r = rt(o) as any;
    return [r.a, Object.getPrototypeOf(r) === Object.prototype];
  });
  tryIt("constructor key", () => rt({ constructor: 1, toString: 2 }));
  tryIt("error", () => {
    const e = rt(new TypeError("m", { cause: 1 })) as any;
    return [e instanceof TypeError, e.message, e.cause, e.name];
  });
  tryIt("error no msg", () => {
    const e = rt(new Error()) as any;
    return ["message" in e, Object.hasOwn(e, "message")];
  });
  tryIt("error empty msg", () => {
    const e = rt(new Error("")) as any;
    return [Object.hasOwn(e, "message"), e.message];
  });
  tryIt("error cause undefined", () => {
    const e = rt(new Error("x", { cause: undefined })) as any;
    return ["cause" in e, Object.hasOwn(e, "cause")];
  });
  tryIt("aggregate", () => {
    const e = rt(new AggregateError([new Error("a")], "agg")) as any;
    return [e instanceof AggregateError, e.errors?.length, e.message];
  });
  tryIt("error name custom", () => {
    class Foo extends Error {}
    const e = rt(new Foo("x")) as any;
    return [e.name, e.constructor.name];
  });
  tryIt("error own name", () => {
    const e = new Error("x");
    e.name = "Custom";
    const r = rt(e) as any;
    return [r.name, Object.hasOwn(r, "name")];
  });
  tryIt("error stack", () => {
    const e = new Error("x");
    const r = rt(e) as any;
    return r.stack === e.stack;
  });
  tryIt("error stack false", () => {
    const e = new Error("x");
    const r = decode(encode(e, { errorStack: false })) as any;
    return r.stack === e.stack;
  });
  tryIt("error props", () => {
    const e: any = new Error("x");
    e.code = 5;
    e.detail = { a: [1] };
    const r = rt(e) as any;
    return [r.code, JSON.stringify(r.detail)];
  });
  tryIt("error cyclic cause", () => {
    const e: any = new Error("x");
    e.cause = e;
    const r = rt(e) as any;
    return r.cause === r;
  });
  tryIt("rpcError", () => {
    const e = new RpcError("TIMEOUT", "t", { cause: 1 });
    const r = rt(e) as any;
    return [RpcError.is(r), r.code, r.message, r.cause, r.name, r instanceof RpcError];
  });
  tryIt("rpcError issues", () => {
    const e = new RpcError("INVALID_ARGUMENT", "t", { issues: [{ message: "m", path: [0, "a"] }] });
    const r = rt(e) as any;
    return [RpcError.is(r), JSON.stringify(r.issues)];
  });
  tryIt("typed", () => {
    const r = rt(new Float64Array([1, -0, NaN])) as any;
    return [r.constructor.name, Object.is(r[1], -0), r[2]];
  });
  tryIt("bigint64", () => {
    const r = rt(new BigInt64Array([-1n])) as any;
    return [r.constructor.name, r[0]];
  });
  tryIt("float16", () => {
    const F = (globalThis as any).Float16Array;
    if (!F) return "none";
    const r = rt(new F([1.5])) as any;
    return [r.constructor.name, r[0]];
  });
  tryIt("dataview", () => {
    const r = rt(new DataView(new ArrayBuffer(4), 1, 2)) as any;
    return [r.constructor.name, r.byteLength, r.byteOffset];
  });
  tryIt("shared views", () => {
    const b = new ArrayBuffer(8);
    const r = rt([new Uint8Array(b, 2, 2), new Uint16Array(b, 4, 1)]) as any[];
    return [r[0].buffer === r[1].buffer, r[0].byteOffset, r[1].byteOffset, r[0].buffer.byteLength];
  });
  tryIt("resizable", () => {
    const b = new (ArrayBuffer as any)(4, { maxByteLength: 16 });
    const r = rt(b) as any;
    return [r.resizable, r.maxByteLength, r.byteLength];
  });
  tryIt("resizable in obj", () => {
    const b = new (ArrayBuffer as any)(4, { maxByteLength: 16 });
    const r = rt({ b }) as any;
    return [r.b.resizable, r.b.maxByteLength, r.b.byteLength];
  });
  tryIt("empty ab", () => {
    const r = rt(new ArrayBuffer(0)) as any;
    return [r.constructor.name, r.byteLength];
  });
  tryIt("empty u8 in obj", () => {
    const r = rt({ a: new Uint8Array(0) }) as any;
    return [r.a.constructor.name, r.a.byteLength];
  });
  tryIt("buffer", () => {
    const r = rt(Buffer.from("hi")) as any;
    return [r.constructor.name, r.byteLength, r.buffer.byteLength];
  });
  tryIt("length-tracking", () => {
    const b = new (ArrayBuffer as any)(4, { maxByteLength: 16 });
    const v = new Uint8Array(b);
    const r = rt(v) as any;
    return [r.length];
  });
  tryIt("string lone surrogate", () => rt("\ud800") === "\ud800");
  tryIt("obj lone surrogate key", () => Object.keys(rt({ "\ud800": 1 }) as any)[0] === "\ud800");
  tryIt("string lone surrogate in map", () => (rt(new Map([["\udc00", 1]])) as any).has("\udc00"));
  tryIt("big string", () => (rt("x".repeat(100000)) as string).length);
  tryIt("number keys order", () => Object.keys(rt({ b: 1, 2: 1, a: 1, 1: 1 }) as any).join());
  tryIt("date", () => (rt(new Date(0)) as Date).getTime());
  tryIt("date neg zero", () => Object.is((rt(new Date(-0)) as Date).getTime(), 0));
  tryIt("blob sync", () => encode(new Blob(["a"])));
  const b = await encodeAsync({ f: new File(["abc"], "n.txt", { type: "text/plain", lastModified: 5 }) });
  const r = decode(b) as any;
  console.log("file", r.f.constructor.name, r.f.name, r.f.type, r.f.lastModified, await r.f.text());
  const b2 = await encodeAsync(new Blob([]));
  const r2 = decode(b2) as any;
  console.log("blob empty", r2.constructor.name, r2.size, r2.type);
  tryIt("function", () => encode(() => 1));
  tryIt("symbol", () => encode(Symbol()));
  tryIt("class inst", () => encode(new (class A {})()));
  tryIt("sab", () => encode(new SharedArrayBuffer(1)));
  tryIt("weakmap", () => encode(new WeakMap()));
  tryIt("promise", () => encode(Promise.resolve()));
  tryIt("deep", () => {
    let o: any = 1;
    for (let i = 0; i < 25000; i++) o = [o];
    return typeof encode(o);
  });
  tryIt("deep obj ok", () => {
    let o: any = 1;
    for (let i = 0; i < 20000; i++) o = [o];
    return typeof rt(o);
  });
  tryIt("deep map", () => {
    let o: any = 1;
    for (let i = 0; i < 25000; i++) o = new Map([[1, o]]);
    return typeof encode(o);
  });
  tryIt("getter throws", () =>
    encode({
      get a() {
        throw new Error("boom");
      },
    }),
  );
  tryIt("getter throws in map", () =>
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
  tryIt("symbol prop", () => Object.keys(rt({ [Symbol()]: 1, a: 1 }) as any));
  tryIt("proxy", () => rt(new Proxy({ a: 1 }, {})));
  tryIt("proxy arr", () => rt(new Proxy([1, 2], {})));
});

import { it } from "vitest";
import { decode, encode, encodeAsync, RpcError } from "../../packages/rpc/src/index.js";

function tryIt(name: string, fn: () => unknown) {
  try {
    console.log(name, "=>", fn());
  } catch (e) {
    console.log(
      name,
      "THREW",
      RpcError.is(e) ? "RpcError" : "NOT-RPC " + (e as any)?.constructor?.name,
      (e as any)?.code,
      String((e as any)?.message).slice(0, 200),
    );
  }
}
const rt = (x: unknown) => decode(encode(x));
it("probe", async () => {
  tryIt("key 01", () => rt({ "01": 1, "1": 2, "-0": 3 }));
  tryIt("arr key 01", () => {
    const a: any = [1];
    a["01"] = 2;
    a["-1"] = 3;
    a["4294967295"] = 4;
    return rt(a);
  });
  tryIt("arr big index", () => {
    const a: any = [];
    a[4294967294] = 1;
    return (rt(a) as any).length;
  });
  tryIt("resizable view", () => {
    const b = new (ArrayBuffer as any)(8, { maxByteLength: 16 });
    const r = rt(new Uint8Array(b, 2, 4)) as any;
    return [r.length, r.byteOffset, r.buffer.resizable, r.buffer.maxByteLength];
  });
  tryIt("resizable view+buf", () => {
    const b = new (ArrayBuffer as any)(8, { maxByteLength: 16 });
    const r = rt([b, new Uint8Array(b, 2, 4)]) as any;
    return [r[0] === r[1].buffer, r[1].byteOffset, r[0].maxByteLength];
  });
  tryIt("detached", () => {
    const b = new ArrayBuffer(8);
    structuredClone(b, { transfer: [b] });
    return encode(b);
  });
  tryIt("detached view", () => {
    const b = new ArrayBuffer(8);
    const u = new Uint8Array(b);
    structuredClone(b, { transfer: [b] });
    return encode(u);
  });
  tryIt("detached in obj", () => {
    const b = new ArrayBuffer(8);
    structuredClone(b, { transfer: [b] });
    return encode({ b });
  });
  tryIt("deep cause chain", () => {
    let e: any = new Error("0");
    for (let i = 0; i < 25000; i++) e = new Error(String(i), { cause: e });
    return typeof encode(e);
  });
  tryIt("date w/ prop", () => {
    const d: any = new Date(0);
    d.x = 1;
    return (rt(d) as any).x;
  });
  tryIt("map w/ prop", () => {
    const m: any = new Map();
    m.x = 1;
    return (rt(m) as any).x;
  });
  tryIt("obj with toJSON", () =>
    rt({
      toJSON() {
        return 5;
      },
      a: 1,
    }),
  );
  tryIt("obj with toJSON nonfn", () => rt({ toJSON: 5, a: 1 }));
  tryIt("date toJSON override", () => {
    const o = { a: 1, toJSON: undefined };
    return rt(o);
  });
  tryIt("nested toJSON value", () => rt({ a: { toJSON: () => "X" } }));
  tryIt("string getter toJSON proto", () => {
    const o = Object.create({
      toJSON() {
        return "P";
      },
    });
    return rt(o);
  });
  tryIt("null proto toJSON", () => {
    const o = Object.create(null);
    o.toJSON = 1;
    return rt(o);
  });
  tryIt("arr in err cause shared", () => {
    const s = { a: 1 };
    const e = new Error("x", { cause: s });
    const r: any = rt([e, s]);
    return r[0].cause === r[1];
  });
  tryIt("error stack non-own", () => {
    const e = Object.create(Error.prototype);
    return rt(e);
  });
  tryIt("bigint in typed arr", () => (rt({ a: new BigUint64Array([2n ** 64n - 1n]) }) as any).a[0]);
  tryIt("view misaligned shared", () => {
    const b = new ArrayBuffer(8);
    const r = rt([new Uint8Array(b), new Uint16Array(b, 2, 2)]) as any;
    return [r[1].byteOffset, r[1].length];
  });
  tryIt("dataview shared", () => {
    const b = new ArrayBuffer(8);
    const r = rt({ b, d: new DataView(b, 3, 2) }) as any;
    return [r.d.buffer === r.b, r.d.byteOffset, r.d.byteLength];
  });
  tryIt("uint8 with named prop", () => {
    const u: any = new Uint8Array(2);
    u.x = 1;
    return rt(u);
  });
  tryIt("string obj with props", () => {
    const s: any = new String("ab");
    s.x = 1;
    return rt(s);
  });
  tryIt("empty key", () => rt({ "": 1 }));
  tryIt("frozen", () => Object.isFrozen(rt(Object.freeze({ a: 1 }))));
  const f = new File(["x"], "f", { lastModified: NaN });
  try {
    console.log("file NaN lm", (decode(await encodeAsync(f)) as any).lastModified);
  } catch (e: any) {
    console.log("file NaN lm THREW", e.code, e.message);
  }
  try {
    const b = new Blob(["x"]);
    console.log(
      "blob shared",
      (() => {
        return 1;
      })(),
    );
    const r: any = decode(await encodeAsync([b, b]));
    console.log("blob shared", r[0] === r[1]);
  } catch (e: any) {
    console.log("THREW", e.code, e.message);
  }
  try {
    const r: any = decode(await encodeAsync(new Error("x", { cause: new Blob(["q"]) })));
    console.log("blob cause", await r.cause.text());
  } catch (e: any) {
    console.log("THREW", e.code, e.message);
  }
  try {
    const r: any = decode(await encodeAsync(Object.assign(new Blob(["q"]), { x: 1 })));
    console.log("blob own prop", r.x);
  } catch (e: any) {
    console.log("THREW", e.code, e.message);
  }
});

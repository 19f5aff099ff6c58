import { it } from "vitest";
import { decode, encode, RpcError } from "../../packages/rpc/src/index.js";

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
      String((e as any)?.message).slice(0, 150),
    );
  }
}
const d = (s: string) => decode(M + s);

it("probe", () => {
  tryIt("empty", () => decode(""));
  tryIt("plain json", () => decode("[0,1]"));
  tryIt("mark only", () => decode("\u001e"));
  tryIt("mark V only", () => decode(M));
  tryIt("bad json", () => d("[0,"));
  tryIt("tag 2", () => d("[2,1]"));
  tryIt("tag '0'", () => d('["0",1]'));
  tryIt("len 3", () => d("[0,1,2]"));
  tryIt("json __proto__", () => {
    const r = d('[0,{"__proto__":{"x":1}}]') as any;
    return [Object.getPrototypeOf(r) === Object.prototype, r.x, Object.keys(r)];
  });
  tryIt("rec __proto__", () => {
    const r = d('[1,[[2,[[1,2]]],[0,"__proto__"],[2,[]]]]') as any;
    return [Object.getPrototypeOf(r) === Object.prototype, Object.keys(r)];
  });
  tryIt("rec empty table", () => d("[1,[]]"));
  tryIt("rec not array", () => d("[1,{}]"));
  tryIt("rec null", () => d("[1,null]"));
  tryIt("rec bad type", () => d("[1,[[99,1]]]"));
  tryIt("rec record not array", () => d("[1,[5]]"));
  tryIt("rec index oob", () => d("[1,[[1,[5]]]]"));
  tryIt("rec index negative", () => d("[1,[[1,[-1]]]]"));
  tryIt("rec index float", () => d("[1,[[1,[0.5]]]]"));
  tryIt("rec self array", () => {
    const r = d("[1,[[1,[0]]]]") as any;
    return r[0] === r;
  });
  tryIt("rec primitive bad", () => d("[1,[[0,{}]]]"));
  tryIt("rec bigint bad", () => d('[1,[[8,"abc"]]]'));
  tryIt("rec bigint num", () => d("[1,[[8,5]]]"));
  tryIt("rec bigint hex", () => d('[1,[[8,"0x10"]]]'));
  tryIt("rec bigint space", () => d('[1,[[8," 1"]]]'));
  tryIt("rec bigint empty", () => d('[1,[[8,""]]]'));
  tryIt("rec bigint -0", () => d('[1,[[8,"-0"]]]'));
  tryIt("rec bigint +1", () => d('[1,[[8,"+1"]]]'));
  tryIt("rec date str", () => d('[1,[[3,"2020"]]]'));
  tryIt("rec date NaN", () => d("[1,[[3,null]]]"));
  tryIt("rec date huge", () => d("[1,[[3,1e300]]]"));
  tryIt("rec regexp bad", () => d('[1,[[4,{"source":"(","flags":""}]]]'));
  tryIt("rec regexp bad flags", () => d('[1,[[4,{"source":"a","flags":"gg"}]]]'));
  tryIt("rec regexp flags x", () => d('[1,[[4,{"source":"a","flags":"x"}]]]'));
  tryIt("rec regexp no src", () => d('[1,[[4,{"flags":""}]]]'));
  tryIt("rec regexp extra", () => {
    const r = d('[1,[[4,{"source":"a","flags":"","lastIndex":5}]]]') as any;
    return [r, r.lastIndex];
  });
  tryIt("rec number", () => d('[1,[[16,"abc"]]]'));
  tryIt("rec number 1", () => d('[1,[[16,"1"]]]'));
  tryIt("rec neg0 payload", () => d('[1,[["-0", 5]]]'));
  tryIt("rec map odd", () => d("[1,[[5,[[1]]],[0,1]]]"));
  tryIt("rec map entry not arr", () => d("[1,[[5,[1]],[0,1]]]"));
  tryIt("rec set bad", () => d("[1,[[6,5]]]"));
  tryIt("rec obj bad entry", () => d('[1,[[2,[[1]]],[0,"a"]]]'));
  tryIt("rec obj key not string", () => d("[1,[[2,[[1,1]]],[0,5]]]"));
  tryIt("rec obj dup key", () => d('[1,[[2,[[1,2],[1,3]]],[0,"a"],[0,1],[0,2]]]'));
  tryIt("rec obj key object", () => d("[1,[[2,[[1,1]]],[2,[]]]]"));
  tryIt("rec sparse bad len", () => d("[1,[[19,[-1]]]]"));
  tryIt("rec sparse huge len", () => d("[1,[[19,[4294967296]]]]"));
  tryIt("rec sparse max len", () => {
    const r = d("[1,[[19,[4294967295]]]]") as any;
    return r.length;
  });
  tryIt("rec sparse idx>=len", () => d("[1,[[19,[2,5,1]],[0,1]]]"));
  tryIt("rec sparse dup idx", () => {
    const r = d("[1,[[19,[2,0,1,0,2]],[0,1],[0,2]]]") as any;
    return r;
  });
  tryIt("rec sparse desc idx", () => {
    const r = d("[1,[[19,[3,2,1,0,2]],[0,1],[0,2]]]") as any;
    return r;
  });
  tryIt("rec named length", () => d('[1,[[20,[1,[0,1],[[2,3]]]],[0,1],[0,"length"],[0,2]]]'));
  tryIt("rec named 0", () => d('[1,[[20,[1,[0,1],[[2,3]]]],[0,1],[0,"0"],[0,2]]]'));
  tryIt("rec named 5", () => d('[1,[[20,[1,[0,1],[[2,3]]]],[0,1],[0,"5"],[0,2]]]'));
  tryIt("rec error bad", () => d("[1,[[7,5]]]"));
  tryIt("rec error name obj", () => d('[1,[[7,{"name":{},"message":"x"}]]]'));
  tryIt("rec error msg num", () => d('[1,[[7,{"name":"Error","message":5}]]]'));
  tryIt("rec error extra key", () => {
    const r = d('[1,[[7,{"name":"Error","message":"x","foo":1}]]]') as any;
    return [r, r.foo];
  });
  tryIt("rec error name RpcError", () => {
    const r = d('[1,[[7,{"name":"RpcError","message":"x"}]]]') as any;
    return [RpcError.is(r), r.name];
  });
  tryIt("rec boxed bad", () => d('[1,[["Number","x"]]]'));
  tryIt("rec boxed Symbol", () => d('[1,[["Symbol","x"]]]'));
  tryIt("rec boxed Object", () => d('[1,[["Object",1]]]'));
  tryIt("rec boxed Function", () => d('[1,[["Function","return 1"]]]'));
  tryIt("rec string type", () => d('[1,[["String",5]]]'));
  tryIt("rec type toString", () => d('[1,[["toString",5]]]'));
  tryIt("rec type __proto__", () => d('[1,[["__proto__",5]]]'));
  tryIt("rec type constructor", () => d('[1,[["constructor",5]]]'));
  tryIt("rec typed bad", () => d('[1,[["Uint8Array",5]]]'));
  tryIt("rec extra records", () => d("[1,[[0,1],[0,2]]]"));
  tryIt("rec unreferenced cyc", () => d("[1,[[0,1],[1,[1]]]]"));
  tryIt("bytes bad type", () => d('[4,["Foo",0]]'));
  tryIt("bytes no blob", () => d('[4,["Uint8Array",0]]'));
  tryIt("bytes toString", () => d('[4,["toString",0]]'));
  tryIt("json NaN-ish", () => d("[0,1e999]"));
  tryIt("json -0", () => Object.is(d("[0,-0]"), -0));
  tryIt("json deep", () => {
    return typeof d("[0," + "[".repeat(30000) + "]".repeat(30000) + "]");
  });
  tryIt("json deep 20001", () => {
    return typeof d("[0," + "[".repeat(20001) + "]".repeat(20001) + "]");
  });
  tryIt("json deep 20000", () => {
    return typeof d("[0," + "[".repeat(20000) + "]".repeat(20000) + "]");
  });
  tryIt("array input", () => decode(new Uint8Array([0x1e, 0x56])));
  tryIt("short bin", () => decode(new Uint8Array([0x1e, 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])));
  tryIt("non-data", () => decode(123 as any));
  tryIt("null", () => decode(null as any));
  tryIt("undef", () => decode(undefined as any));
  tryIt("obj", () => decode({} as any));
  tryIt("bad limits", () => decode(encode(1), { maxDepth: -1 }));
  tryIt("bad limits key", () => decode(encode(1), { foo: 1 } as any));
  tryIt("heartbeat-kind", () => decode("\u001eH"));
  tryIt("json obj with dup", () => d('[0,{"a":1,"a":2}]'));
  tryIt("bom", () => decode("\ufeff" + M + "[0,1]"));
  tryIt("trailing ws", () => d("[0,1]   "));
  tryIt("limit nodes", () => decode(encode([1, 2, 3, 4, 5]), { maxNodes: 3 }));
  tryIt("limit bigint", () => decode(encode(10n ** 20n), { maxBigIntDigits: 5 }));
  tryIt("limit regexp", () => decode(encode(/abcdef/), { maxRegExpSource: 3 }));
  tryIt("limit msg", () => decode(encode("abcdefghijk"), { maxMessageBytes: 5 }));
  tryIt("limit depth map", () => {
    let o: any = 1;
    for (let i = 0; i < 10; i++) o = new Map([[1, o]]);
    return decode(encode(o), { maxDepth: 5 });
  });
  tryIt("limit depth json", () => {
    let o: any = 1;
    for (let i = 0; i < 10; i++) o = [o];
    return decode(encode(o), { maxDepth: 5 });
  });
  tryIt("limit depth json exact", () => {
    let o: any = 1;
    for (let i = 0; i < 5; i++) o = [o];
    return JSON.stringify(decode(encode(o), { maxDepth: 5 }));
  });
  tryIt("limit depth rec exact", () => {
    let o: any = 1n;
    for (let i = 0; i < 5; i++) o = [o];
    return decode(encode(o), { maxDepth: 5 });
  });
  tryIt("limit depth rec exact6", () => {
    let o: any = 1n;
    for (let i = 0; i < 6; i++) o = [o];
    return decode(encode(o), { maxDepth: 5 });
  });
  tryIt("limit depth json exact6", () => {
    let o: any = 1;
    for (let i = 0; i < 6; i++) o = [o];
    return decode(encode(o), { maxDepth: 5 });
  });
  tryIt("limit expanded", () => {
    const s = [1, 2, 3];
    const o = [s, s, s, s];
    return decode(encode(o), { maxExpandedNodes: 5 });
  });
  tryIt("limit blobs", () => decode(encode([new Uint8Array(1), new Uint8Array(1)]), { maxBlobs: 1 }));
});

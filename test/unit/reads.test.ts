/**
 * Encoding reads each property exactly once and sends what it read: a getter runs once (a
 * Proxy's traps once), and a value cannot change between the JSON fast path's check and the
 * frame's write. An exception thrown while reading is kept as the `cause` of the `ENCODE` error,
 * locally and over the wire.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode, RpcError } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectRpcError, expectSame, expectThrowsCode, rawServer } from "./helpers.js";

/** An object whose getter `x` counts its reads and returns `value(read number)`. */
function counted(value: (n: number) => unknown = () => 1): { target: { readonly x: unknown }; reads: () => number } {
  let reads = 0;
  const target = {
    get x() {
      return value(reads++);
    },
  };
  return { target, reads: () => reads };
}

class Echo {
  received: unknown[] = [];
  echo(value: unknown) {
    this.received.push(value);
    return value;
  }
}

describe("each property is read once", () => {
  it("runs a getter of a plain object once on the JSON path", () => {
    const { target, reads } = counted();
    expect(decode(encode(target))).toEqual({ x: 1 });
    expect(reads()).toBe(1);
  });

  it("runs a getter once when the value goes as a record table", () => {
    const { target, reads } = counted();
    const value = { target, when: new Date(0) };
    expectSame(decode(encode(value)), { target: { x: 1 }, when: new Date(0) });
    expect(reads()).toBe(1);
  });

  it("runs a getter once when its object sits in a Map (read by the record writer)", () => {
    const { target, reads } = counted();
    expectSame(decode(encode(new Map([["k", target]]))), new Map([["k", { x: 1 }]]));
    expect(reads()).toBe(1);
  });

  it("runs a getter once when its object is reached both as plain data and through a Map, and keeps it one object", () => {
    const { target, reads } = counted();
    const [direct, map] = decode(encode([target, new Map([["k", target]])])) as [object, Map<string, object>];
    expect(reads()).toBe(1);
    expect(map.get("k")).toBe(direct);
  });

  it("runs an array element's getter once", () => {
    let reads = 0;
    const arr = [1, 2];
    Object.defineProperty(arr, 0, { get: () => ++reads, enumerable: true, configurable: true });
    expect(decode(encode(arr))).toEqual([1, 2]);
    expect(reads).toBe(1);
  });

  it("reads each property of a Proxy once", () => {
    const gets: PropertyKey[] = [];
    const proxy = new Proxy({ a: 1, b: { c: "x" } }, { get: (t, key, r) => (gets.push(key), Reflect.get(t, key, r)) });
    expect(decode(encode(proxy))).toEqual({ a: 1, b: { c: "x" } });
    expect(gets).toEqual(["a", "b"]);
  });

  it("sends the value the check saw when a getter would answer differently the second time", () => {
    // Before: the check saw { a: 1 }, JSON.stringify then read a Map and sent {}.
    const { target: changing } = counted((n) => (n === 0 ? { a: 1 } : new Map([["m", 1]])));
    expect(decode(encode(changing))).toEqual({ x: { a: 1 } });
    // …or read a BigInt and threw a raw TypeError.
    const { target: toBigInt } = counted((n) => (n === 0 ? 1 : 2n));
    expect(decode(encode(toBigInt))).toEqual({ x: 1 });
  });

  it("runs an argument's getter once on the client and a result's getter once on the server", async () => {
    const argument = counted();
    const result = counted();
    class Server {
      take(value: unknown) {
        return { got: value, result: result.target };
      }
    }
    const paired = pairWith(new Server());
    using client = createRpcClient<Server>("S", "reads", { transport: paired.factory });
    expect(await client.take(argument.target)).toEqual({ got: { x: 1 }, result: { x: 1 } });
    expect(argument.reads()).toBe(1);
    expect(result.reads()).toBe(1);
  });
});

describe("an exception thrown while reading", () => {
  const boom = () => new TypeError("getter failed");

  it("is the cause of the ENCODE error, which names the object on the JSON path", () => {
    const error = boom();
    const value = {
      a: {
        get b(): number {
          throw error;
        },
      },
    };
    const thrown = expectThrowsCode(() => encode(value), "ENCODE");
    expect(thrown.cause).toBe(error);
    expect(thrown.message).toContain("value.a");
    expect(thrown.message).toContain("getter failed");
  });

  it("is the cause of the ENCODE error, which names the property on the record path", () => {
    const error = boom();
    const inner = {
      get b(): number {
        throw error;
      },
    };
    const thrown = expectThrowsCode(() => encode(new Map([["k", inner]])), "ENCODE");
    expect(thrown.cause).toBe(error);
    expect(thrown.message).toContain("value<Map value #0>.b");
  });

  it("is not thrown raw: a non-Error thrown value is kept as the cause too", () => {
    const thrown = expectThrowsCode(
      () =>
        encode({
          get x(): number {
            throw "plain string";
          },
        }),
      "ENCODE",
    );
    expect(thrown.cause).toBe("plain string");
  });

  it("rejects the call with ENCODE whose cause is the very exception, and sends nothing", async () => {
    const error = boom();
    const paired = pairWith(new Echo());
    using client = createRpcClient<Echo>("E", "reads", { transport: paired.factory });
    const rejected = await expectRejectsCode(
      client.echo({
        get x(): number {
          throw error;
        },
      } as never),
      "ENCODE",
    );
    expect(rejected.cause).toBe(error);
    expect(rejected.message).toContain("arguments[0]");
    for (const connection of paired.connections) expect(connection.sentByClient).toEqual([]);
  });

  it("reaches the client as the cause of its ENCODE RpcError when a result's getter throws on the server", async () => {
    class Server {
      broken() {
        return {
          get x(): number {
            throw new RangeError("server-side getter failed");
          },
        };
      }
    }
    const paired = pairWith(new Server());
    using client = createRpcClient<Server>("S", "reads", { transport: paired.factory });
    const rejected = await expectRejectsCode(client.broken() as PromiseLike<unknown>, "ENCODE");
    expect(rejected.message).toContain("result");
    expect(rejected.cause).toBeInstanceOf(RangeError);
    expect((rejected.cause as Error).message).toBe("server-side getter failed");
  });

  it("puts the cause on the wire as a fifth element of the failure reply", async () => {
    const server = rawServer(
      new (class {
        broken() {
          return {
            get x(): number {
              throw new Error("why");
            },
          };
        }
      })(),
    );
    server.sendCalls([[1, ["broken", [0]]]]);
    const [reply] = await server.replies();
    expect(reply!.slice(0, 3)).toEqual([1, 3, "ENCODE"]);
    expect(reply).toHaveLength(5);
    const outcome = await server.outcome(1);
    expect(outcome.kind === "failed" && (outcome.cause as Error).message).toBe("why");
  });

  it("leaves out a cause that cannot travel itself, keeping code and message", async () => {
    const server = rawServer(
      new (class {
        broken() {
          return {
            get x(): number {
              throw Object.assign(new Error("with a handle"), { handle: new (class Socket {})() });
            },
          };
        }
      })(),
    );
    server.sendCalls([[1, ["broken", [0]]]]);
    const [reply] = await server.replies();
    expect(reply).toHaveLength(4);
    expect(reply!.slice(0, 3)).toEqual([1, 3, "ENCODE"]);
  });

  it("is an RpcError the client recognises by code", async () => {
    const error = expectThrowsCode(
      () =>
        encode({
          get x(): number {
            throw new Error("x");
          },
        }),
      "ENCODE",
    );
    expectRpcError(error, "ENCODE");
    expect(RpcError.is(error)).toBe(true);
  });
});

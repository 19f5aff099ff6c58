/** The public value API (encode/decode) at its edges: error names past what a receiver accepts are cut, a Proxy whose getPrototypeOf throws is ENCODE. */
import { describe, expect, it } from "vitest";
import { decode, encode, RpcError } from "../../packages/rpc/src/index.js";
import { expectThrowsCode, thrownBy } from "./helpers.js";

describe("value API edges", () => {
  it("an Error whose name is longer than 256 characters round-trips (or encode refuses it with ENCODE)", () => {
    const error = new Error("m");
    error.name = "N".repeat(300);
    let frame: string | Uint8Array;
    try {
      frame = encode(error);
    } catch (e) {
      expectThrowsCode(() => {
        throw e;
      }, "ENCODE");
      return;
    }
    const back = decode(frame) as Error;
    expect(back.message).toBe("m");
  });

  it("a class whose name is longer than 256 characters: decode(encode(instance of it)) gives the error, its name cut to 256", () => {
    const Long = { [`E${"x".repeat(300)}`]: class extends Error {} }[`E${"x".repeat(300)}`]!;
    const back = decode(encode(new Long("m"))) as Error;
    expect(back.message).toBe("m");
    expect(back.name).toBe(`E${"x".repeat(255)}`);
  });

  it("a Proxy (the value itself) whose getPrototypeOf trap throws: encode throws RpcError ENCODE with the exception as cause", () => {
    const boom = new Error("gp-boom");
    const value = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw boom;
        },
      },
    );
    const error = thrownBy(() => encode(value));
    expect(RpcError.is(error)).toBe(true);
    expect((error as RpcError).code).toBe("ENCODE");
    expect((error as RpcError).cause).toBe(boom);
  });
});

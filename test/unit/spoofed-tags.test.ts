/** Class instances whose Symbol.toStringTag claims "Array" or "Error" are refused like other class instances, not sent as one. */
import { describe, it } from "vitest";
import { createRpcClient, encode } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { expectRejectsCode, expectThrowsCode } from "./helpers.js";

class LooksLikeArray {
  get [Symbol.toStringTag]() {
    return "Array";
  }
  a = 1;
}
class LooksLikeError {
  get [Symbol.toStringTag]() {
    return "Error";
  }
  message = "m";
  secret = "s";
}
class Api {
  array() {
    return { x: new LooksLikeArray() };
  }
  error() {
    return new LooksLikeError();
  }
}

describe("class instances with a spoofed Symbol.toStringTag", () => {
  it("encode refuses an instance tagged Array with ENCODE", () => {
    expectThrowsCode(() => encode(new LooksLikeArray()), "ENCODE");
  });
  it("encode refuses an instance tagged Error with ENCODE", () => {
    expectThrowsCode(() => encode(new LooksLikeError()), "ENCODE");
  });
  it("a result holding an instance tagged Array is ENCODE", async () => {
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("A", "x", { transport: paired.factory, timeout: 2000 });
    await expectRejectsCode(client.array(), "ENCODE");
  });
});

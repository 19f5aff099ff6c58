/** A DOMException keeps its message (defined on its prototype, not the instance) through encode/decode and as a thrown value. */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encode } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { rejectionOf } from "./helpers.js";

class Api {
  abort(): number {
    throw new DOMException("The operation was aborted.", "AbortError");
  }
}

describe("DOMException keeps its message", () => {
  it("encode/decode keeps a DOMException's name and message", () => {
    const decoded = decode(encode(new DOMException("Quota exceeded.", "QuotaExceededError"))) as Error;
    expect(decoded).toBeInstanceOf(Error);
    expect(decoded.name).toBe("QuotaExceededError");
    expect(decoded.message).toBe("Quota exceeded.");
  });
  it("a DOMException thrown by a method arrives with its message", async () => {
    const paired = pairWith(new Api());
    using client = createRpcClient<Api>("A", "d", { transport: paired.factory, timeout: 2000 });
    const error = (await rejectionOf(client.abort())) as Error;
    expect(error.name).toBe("AbortError");
    expect(error.message).toBe("The operation was aborted.");
  });
});

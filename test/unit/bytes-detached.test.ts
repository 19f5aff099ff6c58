/** A buffer detached after the call was made does not break its frame: the bytes were copied when the call was encoded. */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

class Echo {
  echo(value: unknown) {
    return value;
  }
}

describe("argument buffer transferred away right after the call", () => {
  it("the call arrives as it was at the call, and a call of the same turn is answered", async () => {
    using client = createRpcClient<Echo>("E", "d1", { transport: pairWith(new Echo()).factory, timeout: 1000 });
    const arg = new Uint8Array([1, 2, 3, 4]);
    const sibling = client.echo(5).then(
      (v) => v,
      (e: unknown) => e,
    );
    const p = client.echo({ arg }).then(
      (v) => v,
      (e: unknown) => e,
    );
    (arg.buffer as ArrayBuffer & { transfer(): ArrayBuffer }).transfer();
    expect(await sibling).toBe(5);
    expect([...((await p) as { arg: Uint8Array }).arg]).toEqual([1, 2, 3, 4]);
  });
});

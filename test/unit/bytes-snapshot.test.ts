/** Bytes are sent as they were when the value was encoded (the call made, the result settled), not as changed before the frame leaves. */
import { describe, expect, it } from "vitest";
import { createRpcClient, decode, encodeAsync } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

class Echo {
  buf = new Uint8Array([1, 2, 3, 4]);
  echo(value: unknown) {
    return value;
  }
  withBlob() {
    const b = this.buf;
    queueMicrotask(() => b.fill(9));
    return { blob: new Blob(["x"]), bytes: b };
  }
}

describe("bytes changed after they were handed to dorpc", () => {
  it("a lone Uint8Array argument changed right after the call is sent as it was at the call", async () => {
    using client = createRpcClient<Echo>("E", "m1", { transport: pairWith(new Echo()).factory });
    const arg = new Uint8Array([1, 2, 3, 4]);
    const p = client.echo(arg);
    arg.fill(7);
    expect([...((await p) as Uint8Array)]).toEqual([1, 2, 3, 4]);
  });

  it("a Uint8Array inside a Map argument changed right after the call is sent as it was", async () => {
    using client = createRpcClient<Echo>("E", "m2", { transport: pairWith(new Echo()).factory });
    const arg = new Uint8Array([1, 2, 3, 4]);
    const p = client.echo(new Map([["a", arg]]));
    arg.fill(7);
    expect([...((await p) as Map<string, Uint8Array>).get("a")!]).toEqual([1, 2, 3, 4]);
  });

  it("an ArrayBuffer argument changed right after the call is sent as it was", async () => {
    using client = createRpcClient<Echo>("E", "m3", { transport: pairWith(new Echo()).factory });
    const arg = new Uint8Array([1, 2, 3, 4]);
    const p = client.echo(arg.buffer);
    arg.fill(7);
    expect([...new Uint8Array((await p) as ArrayBuffer)]).toEqual([1, 2, 3, 4]);
  });

  it("a result holding a Blob and the object's own buffer arrives as returned", async () => {
    using client = createRpcClient<Echo>("E", "m5", { transport: pairWith(new Echo()).factory });
    const { bytes } = (await client.withBlob()) as { bytes: Uint8Array };
    expect([...bytes]).toEqual([1, 2, 3, 4]);
  });

  it("encodeAsync: bytes changed after the call (while the Blob is read) are not what it encodes", async () => {
    const bytes = new Uint8Array([1, 2, 3, 4]);
    const pending = encodeAsync({ blob: new Blob(["x"]), bytes });
    bytes.fill(7);
    const back = decode(await pending) as { bytes: Uint8Array };
    expect([...back.bytes]).toEqual([1, 2, 3, 4]);
  });
});

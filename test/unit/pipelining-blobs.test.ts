/** A call with bytes pipelining on an earlier call with bytes in the same turn (a frame carries one envelope's blobs). */
import { describe, expect, it } from "vitest";
import { createRpcClient, type RpcError } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";

class Api {
  async size(b: Blob | Uint8Array) {
    return b instanceof Blob ? b.size : b.byteLength;
  }
  async pair(a: unknown, b: Blob) {
    return [a, b.size];
  }
  bytes(n: number) {
    return new Uint8Array(n);
  }
}

function mk() {
  const api = new Api();
  const paired = pairWith(api);
  const client = createRpcClient<Api>("API", "p", { transport: paired.factory, reconnect: { initialDelay: 1, maxDelay: 5 } });
  return { api, paired, client };
}

const outcome = async (p: PromiseLike<unknown>) => {
  try {
    return { ok: await p };
  } catch (e) {
    return { err: (e as RpcError).code ?? String(e), msg: String(e) };
  }
};

describe("blobs and pipelining", () => {
  it("a call with blobs pipelining on an earlier call with blobs in the same turn", async () => {
    const { client } = mk();
    using _ = client;
    const a = client.size(new Blob(["hello"]));
    const b = client.pair(a, new Blob(["xy"]));
    expect(await outcome(a)).toEqual({ ok: 5 });
    expect(await outcome(b)).toEqual({ ok: [5, 2] });
  });
});

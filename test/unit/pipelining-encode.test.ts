/** A call that fails to encode sends nothing, not even the lazy-path reads it made for earlier arguments. */
import { describe, expect, it } from "vitest";
import { createRpcClient, type RpcError } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

class Api {
  reads = 0;
  get prop() {
    this.reads++;
    return "p";
  }
  echo(v: unknown) {
    return v;
  }
}

function mk() {
  const api = new Api();
  const paired = pairWith(api);
  const client = createRpcClient<Api>("API", "p", { transport: paired.factory, reconnect: { initialDelay: 1, maxDelay: 5 } });
  return { api, paired, client };
}

describe("a call that fails to encode", () => {
  it("a call that fails to encode does not read the lazy path passed before the bad argument", async () => {
    const { client, api } = mk();
    using _ = client;
    const e = await client.echo([client.prop, Symbol("x")]).catch((x) => x);
    expect((e as RpcError).code).toBe("ENCODE");
    await client.echo(1);
    await settle();
    expect(api.reads).toBe(0);
  });
});

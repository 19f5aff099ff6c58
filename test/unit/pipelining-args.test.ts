/** Results and lazy paths passed as arguments: never another client's (it used that client's data), read once when the call is held back. */
import { describe, expect, it } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

class Api {
  reads = 0;
  gate: (() => void) | undefined;
  constructor(readonly tag: string) {}
  user(id: string) {
    return { id: `${this.tag}:${id}`, list: [1, 2, 3], text: "abc" };
  }
  echo(v: unknown) {
    return v;
  }
  two(a: unknown, b: unknown) {
    return [a, b];
  }
  get prop() {
    this.reads++;
    return `prop${this.reads}`;
  }
  async slow(id: string) {
    await new Promise<void>((r) => (this.gate = r));
    return { id };
  }
}

function mk(tag: string) {
  const api = new Api(tag);
  const paired = pairWith(api);
  const client = createRpcClient<Api>("API", tag, { transport: paired.factory, reconnect: { initialDelay: 1, maxDelay: 5 } });
  return { api, paired, client };
}

describe("results and lazy paths as arguments", () => {
  it("cross-client: an unawaited result of client A passed to client B", async () => {
    const A = mk("A");
    const B = mk("B");
    using _a = A.client;
    using _b = B.client;
    const u = A.client.user("x");
    void B.client.user("other");
    // Correct: A's user (sent once it arrived), or a typed RpcError; never B's call 1's result.
    const got = await rejectionOrValue(B.client.echo(u));
    expect(got).not.toEqual({ id: "B:other", list: [1, 2, 3], text: "abc" });
    expect(got === undefined || (got as { code?: string }).code !== undefined || (got as { id?: string }).id === "A:x").toBe(true);
  });

  it("cross-client: a lazy root path of client A passed to client B", async () => {
    const A = mk("A");
    const B = mk("B");
    using _a = A.client;
    using _b = B.client;
    // Correct: A's getter read (on A), or a typed RpcError; never B's getter read silently.
    const got = await rejectionOrValue(B.client.echo(A.client.prop));
    expect(B.api.reads).toBe(0);
    expect(typeof got === "object" ? (got as { code?: string }).code : A.api.reads).toBeTruthy();
  });

  it("deferred call with a lazy path argument: the path is read once, and the call gets it", async () => {
    const { api, client } = mk("A");
    using _ = client;
    const s = client.slow("q");
    await settle();
    // s left in an earlier frame: this call is deferred
    const p = client.two(client.prop, s);
    await settle();
    api.gate!();
    const got = await rejectionOrValue(p);
    expect(got).toEqual(["prop1", { id: "q" }]);
    expect(api.reads).toBe(1);
  });

  it("deferred call with lazy path argument after the dep", async () => {
    const { api, client } = mk("A");
    using _ = client;
    const s = client.slow("q");
    await settle();
    const p = client.two(s, client.prop);
    await settle();
    api.gate!();
    const got = await rejectionOrValue(p);
    expect(got).toEqual([{ id: "q" }, "prop1"]);
    expect(api.reads).toBe(1);
  });
});

async function rejectionOrValue(p: PromiseLike<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (e) {
    return { rejected: String(e), code: (e as any)?.code };
  }
}

/** Limits at exactly the limit and one over, client and server agreeing; calls held by async schemas. */
import { describe, expect, it } from "vitest";
import {
  createRpcClient,
  DEFAULT_LIMITS,
  decode,
  encode,
  type RpcError,
  rpcConnection,
  withCallOptions,
  type RpcLimits,
} from "../../packages/rpc/src/index.js";
import type { RpcServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { pairWith } from "../support/paired-transport.js";

class Api {
  echo(value: unknown) {
    return value;
  }
  args(...values: unknown[]) {
    return values.length;
  }
  get a() {
    return { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } };
  }
  nested(depth: number, kind: "array" | "map") {
    return nest(depth, kind);
  }
}

function nest(depth: number, kind: "array" | "map" | "date"): unknown {
  let v: unknown = kind === "date" ? new Date(0) : 0;
  for (let i = 0; i < depth; i++) v = kind === "map" ? new Map([[0, v]]) : [v];
  return v;
}

function setup(client: Partial<RpcLimits>, server: Partial<RpcLimits>, serverOptions: RpcServerOptions = {}) {
  const paired = pairWith(new Api(), { ...serverOptions, limits: server });
  const c = createRpcClient<Api>("API", "edges", { transport: paired.factory, limits: client, timeout: 2000 });
  return { client: c, paired, [Symbol.dispose]: () => rpcConnection(c).close() };
}

async function outcome(p: PromiseLike<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

describe("maxDepth: a value of exactly maxDepth levels travels as an argument and as a result (docs: up to limits.maxDepth levels)", () => {
  for (const kind of ["array", "map", "date"] as const) {
    it(`${kind}: argument of depth N with maxDepth N on both ends`, async () => {
      using s = setup({ maxDepth: 5 }, { maxDepth: 5 });
      expect(await outcome(s.client.echo(nest(4, kind)))).toBe("ok");
      expect(await outcome(s.client.echo(nest(5, kind)))).toBe("ok");
    });
    it(`${kind}: result of depth N with maxDepth N on both ends`, async () => {
      using s = setup({ maxDepth: 5 }, { maxDepth: 5 });
      expect(await outcome(s.client.nested(5, kind as "array"))).toBe("ok");
    });
  }

  it("defaults: an argument 20,000 levels deep (DEFAULT_LIMITS.maxDepth), which encode/decode accept standalone", async () => {
    using s = setup({}, {});
    expect(await outcome(s.client.echo(nest(20_000, "array")))).toBe("ok");
  });

  it("the sender refuses a plain-array argument deeper than its maxDepth with ENCODE (docs), before sending", async () => {
    using s = setup({ maxDepth: 5 }, { maxDepth: 100 });
    expect(await outcome(s.client.echo(nest(7, "array")))).toBe("ENCODE");
    expect(await outcome(s.client.echo(nest(7, "map")))).toBe("ENCODE");
  });
});

/** `leaf` inside `depth` arrays. */
function around(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

describe("maxDepth: what the sender passes, a receiver with the same limits accepts", () => {
  // A view is a level, on both ends: the sender used to pass a value with a view one level
  // below maxDepth, and the receiver refused it with LIMIT.
  const VIEWS: [string, () => unknown][] = [
    ["a typed array", () => new Uint8Array(1)],
    ["a DataView", () => new DataView(new ArrayBuffer(1))],
    ["an object holding a typed array", () => ({ u: new Uint8Array(1) })],
  ];

  it.each(VIEWS)("%s under maxDepth arrays: the sender refuses it (ENCODE) or it arrives, never the receiver", async (_name, leaf) => {
    using s = setup({ maxDepth: 5 }, { maxDepth: 5 });
    expect(await outcome(s.client.echo(around(3, leaf())))).toBe("ok");
    expect(["ok", "ENCODE"]).toContain(await outcome(s.client.echo(around(5, leaf()))));
  });

  it.each(VIEWS)("%s under 20,000 arrays (the default maxDepth): encode refuses it (ENCODE) or decode accepts it", (_name, leaf) => {
    let encoded: ReturnType<typeof encode>;
    try {
      encoded = encode(around(DEFAULT_LIMITS.maxDepth, leaf()));
    } catch (error) {
      expect((error as RpcError).code).toBe("ENCODE");
      return;
    }
    expect(() => decode(encoded)).not.toThrow();
  });

  it("a subtree shared by a shallow and a deeper spot passes the sender and is refused by the receiver with LIMIT (as docs/api.md says)", async () => {
    // The sender does not walk an object it has met again; the receiver measures the longest path.
    using s = setup({ maxDepth: 5 }, { maxDepth: 5 });
    const shared = around(3, 0);
    expect(await outcome(s.client.echo([shared, around(3, shared)]))).toBe("LIMIT");
    // Unshared, the same shape is refused by the sender.
    expect(await outcome(s.client.echo([around(3, 0), around(6, 0)]))).toBe("ENCODE");
  });
});

describe("maxArgs and maxChainLength at the limit", () => {
  it("maxArgs: N args pass, N+1 refused", async () => {
    using s = setup({}, { maxArgs: 4 });
    expect(await s.client.args(1, 2, 3, 4)).toBe(4);
    expect(await outcome(s.client.args(1, 2, 3, 4, 5))).toBe("LIMIT");
  });

  it("maxChainLength: a chain of exactly N steps passes on both ends", async () => {
    using s = setup({ maxChainLength: 4 }, { maxChainLength: 4 });
    expect(await s.client.a.b.c.d).toEqual({ e: { f: { g: { h: 1 } } } });
    expect(await outcome(s.client.a.b.c.d.e)).toBe("ENCODE");
  });

  it("maxChainLength: server lower than client refuses with LIMIT", async () => {
    using s = setup({}, { maxChainLength: 3 });
    expect(await s.client.a.b.c).toEqual({ d: { e: { f: { g: { h: 1 } } } } });
    expect(await outcome(s.client.a.b.c.d)).toBe("LIMIT");
  });
});

describe("maxPendingCalls on the server", () => {
  it("a frame of exactly N calls runs", async () => {
    using s = setup({}, { maxPendingCalls: 4 });
    expect(await Promise.all([1, 2, 3, 4].map((n) => s.client.echo(n)))).toEqual([1, 2, 3, 4]);
  });
});

describe("maxNodes / maxExpandedNodes at the limit", () => {
  it("maxNodes: reply of exactly N nodes passes at the client", async () => {
    // [0,0,...] of k elements = k+1 nodes
    using s = setup({ maxNodes: 11 }, {});
    const results = [];
    for (const k of [9, 10, 11]) results.push(await outcome(s.client.echo(new Array(k).fill(0))));
    expect(results).toEqual(["ok", "ok", "LIMIT"]);
  });
});

/** An async argument schema that never answers: the call it checks is held, and the calls after it. */
const NEVER = { "~standard": { version: 1, vendor: "test", validate: () => new Promise(() => {}) } };

describe("timeouts while an async schema holds the queue", () => {
  it("a held call timing out does not keep the calls after it held forever", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "held", {
      transport: paired.factory,
      validate: { echo: NEVER as never },
      timeout: 100,
    });
    try {
      const held = client.echo(1);
      const after = withCallOptions(client.args(1, 2), { timeout: 1000 });
      expect(await outcome(held)).toBe("TIMEOUT");
      // The call after it was not held by a schema; once the held one is gone it should go.
      expect(await outcome(after)).toBe("ok");
    } finally {
      rpcConnection(client).close();
    }
  });
});

describe("aborting a call held by an async client-side schema", () => {
  it("the calls after it go once it is aborted (they no longer wait behind a call that is gone)", async () => {
    const paired = pairWith(new Api());
    const client = createRpcClient<Api>("API", "held-abort", { transport: paired.factory, validate: { echo: NEVER as never } });
    try {
      const controller = new AbortController();
      const held = withCallOptions(client.echo(1), { signal: controller.signal });
      const after = withCallOptions(client.args(1, 2), { timeout: 500 });
      await new Promise((r) => setTimeout(r, 10));
      controller.abort(new Error("user gave up"));
      expect(await outcome(held)).toBe("Error: user gave up");
      expect(await outcome(after)).toBe("ok");
    } finally {
      rpcConnection(client).close();
    }
  });
});

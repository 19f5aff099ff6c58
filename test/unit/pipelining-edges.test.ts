/**
 * Pipelining through collections, awaiting twice, reads after a call left, calls on stubs before
 * they arrive, and a call with bytes pipelining on an earlier one with bytes in the same turn (a
 * frame carries one envelope's blobs: it waits for that call instead of naming another frame's).
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, type RpcError, RpcTarget, withCallOptions } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

class Thing extends RpcTarget {
  hits = 0;
  hit() {
    return ++this.hits;
  }
}

class Api {
  calls = 0;
  reads = 0;
  gate: (() => void) | undefined;
  thing = new Thing();
  user(id: string) {
    this.calls++;
    return { id, list: [1, 2, 3] };
  }
  echo(v: unknown) {
    return v;
  }
  getThing() {
    return this.thing;
  }
  async size(b: Blob) {
    return b.size;
  }
  async pair(a: unknown, b: Blob) {
    return [a, b.size];
  }
  get prop() {
    this.reads++;
    return `prop${this.reads}`;
  }
  async slow(id: string) {
    await new Promise<void>((r) => (this.gate = r));
    return { id, list: [7, 8] };
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
    return { err: (e as RpcError).code ?? String(e) };
  }
};

describe("pipelining edges", () => {
  it("Map/Set/array positions, same turn", async () => {
    const { client } = mk();
    using _ = client;
    const u = client.user("a") as any;
    const r = await outcome(
      client.echo(
        new Map<unknown, unknown>([
          ["k", u],
          [u.id, 1],
        ]),
      ),
    );
    const s = await outcome(client.echo(new Set([u, u.id])));
    const a = await outcome(client.echo([u, u.id, { x: u.list }]));
    expect(r).toEqual({
      ok: new Map<unknown, unknown>([
        ["k", { id: "a", list: [1, 2, 3] }],
        ["a", 1],
      ]),
    });
    expect(s).toEqual({ ok: new Set([{ id: "a", list: [1, 2, 3] }, "a"]) });
    expect(a).toEqual({ ok: [{ id: "a", list: [1, 2, 3] }, "a", { x: [1, 2, 3] }] });
  });

  it("Map/Set positions, same turn pipelined", async () => {
    const { client } = mk();
    using _ = client;
    const u = client.user("a") as any;
    const r = client.echo(
      new Map<unknown, unknown>([
        ["k", u],
        [u.id, 1],
      ]),
    );
    const s = client.echo(new Set([u, u.id]));
    expect(await outcome(r)).toEqual({
      ok: new Map<unknown, unknown>([
        ["k", { id: "a", list: [1, 2, 3] }],
        ["a", 1],
      ]),
    });
    expect(await outcome(s)).toEqual({ ok: new Set([{ id: "a", list: [1, 2, 3] }, "a"]) });
  });

  it("Map/Set positions, deferred", async () => {
    const { client, api } = mk();
    using _ = client;
    const u = client.slow("a") as any;
    await settle();
    const r = client.echo(
      new Map<unknown, unknown>([
        ["k", u],
        [u.id, 1],
      ]),
    );
    const s = client.echo(new Set([u, u.list]));
    await settle();
    api.gate!();
    expect(await outcome(r)).toEqual({
      ok: new Map<unknown, unknown>([
        ["k", { id: "a", list: [7, 8] }],
        ["a", 1],
      ]),
    });
    expect(await outcome(s)).toEqual({ ok: new Set([{ id: "a", list: [7, 8] }, [7, 8]]) });
  });

  it("ENCODE failure then pipelining on it", async () => {
    const { client, paired } = mk();
    using _ = client;
    const bad = client.echo(Symbol("x")) as any;
    const r1 = await outcome(bad);
    const r2 = await outcome(bad.id);
    const r3 = await outcome(client.echo(bad));
    const r4 = await outcome(bad.foo());
    const r5 = await outcome(client.echo([bad.id]));
    expect([r1, r2, r3, r4, r5]).toEqual(Array(5).fill({ err: "ENCODE" }));
    expect(paired.connections.length === 0 || paired.connections[0]!.sentByClient.length === 0).toBe(true);
  });

  it("await twice: one call; path read awaited twice: one read", async () => {
    const { client, api } = mk();
    using _ = client;
    const u = client.user("a") as any;
    await u;
    await u;
    const id = u.id;
    await id;
    await id;
    expect(api.calls).toBe(1);
    const t = client.getThing() as any;
    const h = t.hit();
    await h;
    await h;
    expect(api.thing.hits).toBe(1);
  });

  it("withCallOptions on the same handle twice sends once", async () => {
    const { client, api } = mk();
    using _ = client;
    const u = client.user("a") as any;
    await withCallOptions(u, { timeout: 1000 });
    await withCallOptions(u, { timeout: 1000 });
    await u;
    expect(api.calls).toBe(1);
  });

  it("pipelined call on a deferred call, then a read on that", async () => {
    const { client, api } = mk();
    using _ = client;
    void client.getThing();
    const s = client.slow("z") as any;
    await settle();
    const l = s.list; // s left: waits then local
    const one = s.list[1];
    await settle();
    api.gate!();
    expect(await outcome(l)).toEqual({ ok: [7, 8] });
    expect(await outcome(one)).toEqual({ ok: 8 });
  });

  it("stub returned: pipelined call on it in a later turn, before and after arrival", async () => {
    const { client } = mk();
    using _ = client;
    const t = client.getThing() as any;
    const a = t.hit();
    await settle();
    const b = t.hit();
    expect(await outcome(a)).toEqual({ ok: 1 });
    expect(await outcome(b)).toEqual({ ok: 2 });
    const c = t.hit();
    expect(await outcome(c)).toEqual({ ok: 3 });
  });
  it("array index / length: pipelined vs after arrival agree", async () => {
    const { client } = mk();
    using _ = client;
    const u = client.user("x");
    const pipelined = await Promise.allSettled([(u as any).list[1], (u as any).list.length, (u as any).list.length]);
    const later = await Promise.allSettled([(u as any).list[1], (u as any).list.length, (u as any).list.length]);
    const u2 = client.user("y");
    await u2;
    const after = await Promise.allSettled([(u2 as any).list[1], (u2 as any).list.length, (u2 as any).list.length]);
    const norm = (r: PromiseSettledResult<unknown>[]) => r.map((x) => (x.status === "fulfilled" ? x.value : (x.reason as any).code));
    expect(norm(pipelined)).toEqual(norm(after));
    expect(norm(later)).toEqual(norm(after));
  });
});

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

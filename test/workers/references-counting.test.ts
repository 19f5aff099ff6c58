/**
 * What the object holds for one socket (rpcSocketInfo: its exports and imports) over a life of
 * stubs, callbacks, dup()s and an eviction, in workerd (real hibernatable sockets, evictObject).
 * docs/protocol.md ("Counting"): a reference is held until its last holder lets go, and the
 * object numbers new references past those an earlier instance handed out on the socket, so a
 * release of a stub from before the eviction cannot release one the new instance handed out.
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, evictObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import { uniqueName } from "./helpers.js";

async function outcome(p: PromiseLike<unknown>): Promise<string> {
  try {
    return `value ${String(await p)}`;
  } catch (e) {
    return RpcError.is(e) ? e.code : String(e);
  }
}

describe("the object's reference tables for one socket", () => {
  it("stubs, dup()s and a kept callback, used and released: both tables end empty, and only when the last holder lets go", async () => {
    using c = createTestClient<Composer>(env.COMPOSER, uniqueName("counting-life"));
    const rooms = await Promise.all(["a", "b", "c"].map((t) => c.openRoom(t)));
    const dups = rooms.map((r) => r.dup());
    expect(await c.callBack((n: number) => n, 3)).toBe(3);
    await c.listen((e: string) => e.length);
    expect(await c.emit("four")).toBe(4);
    expect(await c.info()).toMatchObject({ exports: 3, imports: 1 });
    await c.unlisten();
    for (const r of rooms) r[Symbol.dispose]();
    expect(await dups[0]!.join("x"), "disposing the first holder released the dup's room").toBe(1);
    await vi.waitFor(async () => expect(await c.info()).toMatchObject({ exports: 3, imports: 0 }));
    for (const d of dups) d[Symbol.dispose]();
    await vi.waitFor(async () => expect(await c.info()).toMatchObject({ exports: 0, imports: 0 }));
  });

  it("across an eviction: stubs and a callback from before it count for nothing; releasing them does not release what the new instance handed out", async () => {
    using c = createTestClient<Composer>(env.COMPOSER, uniqueName("counting-evict"));
    const old = await c.openRoom("old");
    const oldDup = old.dup();
    await c.listen((e: string) => e.length);
    await evictObject(c);
    const fresh = await c.openRoom("fresh");
    expect(await c.info()).toMatchObject({ exports: 1, imports: 0 });
    expect(await outcome(old.join("x"))).toBe("REFERENCE_LOST");
    old[Symbol.dispose]();
    oldDup[Symbol.dispose]();
    // A later call on the same socket: the releases of the old stubs reached the object before it.
    expect(await outcome(fresh.join("y")), "a release of a stub from before the eviction released the new one").toBe("value 1");
    expect(await c.info()).toMatchObject({ exports: 1, imports: 0 });
    fresh[Symbol.dispose]();
    await vi.waitFor(async () => expect(await c.info()).toMatchObject({ exports: 0, imports: 0 }));
    expect(await c.callBack((n: number) => n, 2)).toBe(1);
  });
});

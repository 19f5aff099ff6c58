/**
 * References (stubs, callbacks) over the life of a connection: handed out again after a dispose,
 * returned by the method that received them, in answers replayed from the delivery record, in
 * answers nobody waits for any more, across an eviction, and across connections.
 */
import { rpcConnection, rpcDispose, RpcError, withCallOptions } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import type { Counter } from "./objects.js";
import type { Room } from "./push-objects.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";

const composerClient = (label: string) => createTestClient<Composer>(env.COMPOSER, uniqueName(label));
const counterClient = (label: string) => createTestClient<Counter>(env.COUNTER, uniqueName(label));

describe("stubs", () => {
  it("dup, dispose the first holder, the same object arrives again: the new arrival is usable", async () => {
    using composer = composerClient("dup-dispose-again");
    const room = await composer.openRoom("r");
    const kept = room.dup();
    room[Symbol.dispose]();
    const again = await composer.openRoom("r");
    expect(await again.join("a")).toBe(1);
    void kept;
  });

  it("a function the client passed, returned by the method, comes back as the client's own function", async () => {
    using counter = counterClient("echo-fn");
    const fn = (n: number) => n + 1;
    const back = await counter.echo(fn);
    expect(back).toBe(fn);
  });

  it("the same function in two calls of one frame: both run, the object releases both", async () => {
    using composer = composerClient("same-fn-twice");
    const fn = (n: number) => n * 2;
    const a = composer.callBack(fn, 2);
    const b = composer.callBack(fn, 3);
    expect(await Promise.all([a, b])).toEqual([2, 6]);
    expect((await composer.info())!.imports).toBe(0);
  });

  it("a stub passed back to the object that issued it reaches the original", async () => {
    using counter = counterClient("stub-back");
    const users = await counter.users;
    const back = (await counter.echo(users)) as typeof users;
    expect(back).toBe(users);
    expect(await back.count()).toBe(2);
  });

  it("disposing a stub twice, and after the client was disposed, is harmless", async () => {
    const composer = composerClient("dispose-twice");
    const room = await composer.openRoom("r");
    const dup = room.dup();
    room[Symbol.dispose]();
    room[Symbol.dispose]();
    rpcDispose(room);
    composer[Symbol.dispose]();
    dup[Symbol.dispose]();
    dup[Symbol.dispose]();
    const code = ((await rejection(dup.join("x"))) as RpcError).code;
    expect(["RELEASED", "DISPOSED"]).toContain(code);
    expect(() => dup.dup()).toThrow(RpcError);
  });

  it("dup() on a stub whose connection was lost throws REFERENCE_LOST", async () => {
    using composer = composerClient("dup-lost");
    const room = await composer.openRoom("r");
    dropConnection(composer);
    let thrown: unknown;
    try {
      room.dup();
    } catch (e) {
      thrown = e;
    }
    expect(RpcError.is(thrown) && thrown.code).toBe("REFERENCE_LOST");
    await rpcConnection(composer).waitForOpen();
  });

  it("a call pipelined on a call that rejects, made after that call left, rejects with its error", async () => {
    using counter = counterClient("pipe-reject");
    const failing = counter.rejectLater();
    await new Promise((r) => setTimeout(r, 0));
    const error = await rejection((failing as unknown as { foo(): Promise<unknown> }).foo());
    expect((error as Error).message).toBe("async quota exceeded");
    await rejection(failing);
  });
});

describe("answers replayed from the delivery record", () => {
  it("a stub in an answer replayed after a dropped connection is usable", async () => {
    using composer = composerClient("replay-stub-one");
    await rpcConnection(composer).waitForOpen();
    const roomCall = composer.openRoom("r");
    for (let i = 0; i < 5; i++) await Promise.resolve(); // the call's frame leaves
    dropConnection(composer); // before its answer arrives: resent, answered from the record
    const error = await rpcFailure(roomCall, "REFERENCE_LOST");
    expect(error.message).toContain("It was not run again");
  });

  it("a stub in a replayed answer is not confused with a stub the new connection hands out", async () => {
    using composer = composerClient("replay-stub");
    await rpcConnection(composer).waitForOpen();
    const roomCall = composer.openRoom("r");
    // Let the call's frame leave, then cut the connection before its answer arrives.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    dropConnection(composer);
    const other = composer.openRoom("other");
    await rpcFailure(roomCall, "REFERENCE_LOST");
    const otherRoom = await other;
    expect(await otherRoom.join("ann")).toBe(1);
    expect(await composer.openRoom("r").size).toBe(0);
    expect(await composer.openRoom("other").size).toBe(1);
  });
});

describe("a reply that arrives after the call was given up", () => {
  it("the object does not keep the reference a late reply handed out", async () => {
    using composer = composerClient("late-reply-leak");
    const before = (await composer.info())!.exports;
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      // A awaits the client's callback; B pipelines on A, so it runs only after the callback
      // answered. The callback aborts B: the cancel reaches the object after B has answered.
      const a = composer.callBack(() => {
        controller.abort(new Error("gave up"));
        return 100 + i;
      }, 1);
      const b = withCallOptions(composer.openRoom(a as never), { signal: controller.signal });
      const bFailed = rejection(b);
      expect(await a).toBe(100 + i);
      expect(((await bFailed) as Error).message).toBe("gave up");
    }
    await new Promise((r) => setTimeout(r, 50));
    expect((await composer.info())!.exports).toBe(before);
  });
});

describe("eviction", () => {
  it("a stub from before an eviction is not confused with one the new instance hands out", async () => {
    using composer = createTestClient<Composer>(env.COMPOSER, uniqueName("evict-ids"));
    const before = await composer.openRoom("before");
    expect(await before.join("ann")).toBe(1);
    await evictObject(composer);
    const after = await composer.openRoom("after");
    // The new instance numbers its references after the ids the old one handed out on this
    // socket (the client may still hold them).
    const lost = await rpcFailure(before.join("bob"), "REFERENCE_LOST");
    expect(lost.message).toContain("evicted");
    expect(await after.size).toBe(0);
    expect(before === after).toBe(false);
  });
});

describe("stubs across connections", () => {
  it("a stub of client A passed to client B's call is refused without claiming a connection closed", async () => {
    using a = createTestClient<Composer>(env.COMPOSER, uniqueName("cross-a"));
    using b = createTestClient<Composer>(env.COMPOSER, uniqueName("cross-b"));
    const room = await a.openRoom("r");
    const error = (await rejection(b.greet(room as never))) as RpcError;
    expect(RpcError.is(error)).toBe(true);
    expect(error.code).toBe("REFERENCE_LOST");
    expect(error.message).toContain("came over another connection");
    expect(error.message).not.toMatch(/has closed|reconnect/);
  });

  it("a client's exposed method returns a function: the object hands it back, the client gets its own", async () => {
    const fn = () => "mine";
    using c = createTestClient<Room>(env.ROOM, uniqueName("return-fn"), {
      query: { name: "ann" },
      expose: { message: () => undefined, confirm: () => true, slow: () => fn },
    });
    const back = await c.askSlow(1);
    expect(back).toBe(fn as never);
  });
});

describe("a call on a stub cut after it was sent", () => {
  // Stubs do not survive a reconnect, so the call is not resent: its REFERENCE_LOST must say
  // that it may have run (here it did), or "get a new stub and call again" would run it twice.
  it("rejects REFERENCE_LOST saying it may have run", async () => {
    using composer = composerClient("stub-call-cut");
    const room = await composer.openRoom("r");
    const joined = room.join("ann");
    for (let i = 0; i < 5; i++) await Promise.resolve(); // its frame leaves at the end of the turn
    dropConnection(composer); // before any answer can arrive
    const error = (await rejection(joined)) as RpcError;
    expect({ code: error.code, message: error.message }).toEqual({
      code: "REFERENCE_LOST",
      message: expect.stringMatching(/closed before its answer arrived: it may have run/),
    });
  });
});

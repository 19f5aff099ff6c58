/**
 * Calls that compose, in workerd over real (hibernatable) WebSockets: pipelining in one frame,
 * stubs by reference and their release, callbacks, and what eviction and reconnects do to
 * in-memory references.
 */
import { rpcConnection, RpcError } from "@dorpc/rpc";
import { createTestClient, dropConnection, evictObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import { rejection, rpcFailure, uniqueName } from "./helpers.js";

const client = (label: string) => createTestClient<Composer>(env.COMPOSER, uniqueName(label));

describe("pipelining over a real socket", () => {
  it("three dependent calls made in one turn reach the object in one message", async () => {
    using composer = client("pipeline");
    const before = await composer.frames();
    const user = composer.user("a");
    const room = composer.openRoom("lobby");
    const joined = room.join(user.id);
    const greeting = composer.greet(user);
    expect(await Promise.all([joined, greeting])).toEqual([1, "hello user a"]);
    expect(await composer.frames()).toBe(before + 2); // the pipelined batch, then this read
  });

  it("a failing step fails what depends on it, with its error", async () => {
    using composer = client("pipeline-fail");
    const missing = (composer as unknown as { nope(): Promise<{ id: string; name: string }> }).nope();
    const error = await rpcFailure(composer.greet(missing as never), "NOT_FOUND");
    expect(error.message).toContain('"nope"');
  });
});

describe("stubs over a real socket", () => {
  it("an RpcTarget comes back as a stub; calls on it reach the same object; disposing releases it on the object", async () => {
    using composer = client("stub");
    const room = await composer.openRoom("r");
    expect(await room.join("a")).toBe(1);
    expect(await room.size).toBe(1);
    expect((await composer.info())!.exports).toBe(1);
    room[Symbol.dispose]();
    await vi.waitFor(async () => expect((await composer.info())!.exports).toBe(0));
    await rpcFailure(room.join("b"), "RELEASED");
  });

  it("after the object is evicted, a call on an old stub fails with REFERENCE_LOST saying so; a fresh stub works", async () => {
    using composer = client("evicted");
    const room = await composer.openRoom("before");
    expect(await room.join("a")).toBe(1);
    await evictObject(composer); // hibernation eviction: the socket stays open
    expect(rpcConnection(composer).state).toBe("open");
    const error = await rpcFailure(room.join("b"), "REFERENCE_LOST");
    expect(error.message).toContain("evicted");
    // The object is a new instance: its rooms are gone too, a fresh stub starts over.
    expect(await composer.openRoom("before").join("c")).toBe(1);
  });

  it("after a reconnect an old stub fails with REFERENCE_LOST without being sent", async () => {
    using composer = client("reconnected");
    const room = await composer.openRoom("x");
    dropConnection(composer);
    await rpcConnection(composer).waitForOpen();
    const error = await rpcFailure(room.join("y"), "REFERENCE_LOST");
    expect(error.message).toContain("reconnect");
    expect(await composer.openRoom("x").size).toBe(0);
  });
});

describe("callbacks over a real socket", () => {
  it("the object calls a function the client passed, as often as it needs", async () => {
    using composer = client("callback");
    const seen: number[] = [];
    const sum = await composer.callBack((n) => {
      seen.push(n);
      return n * 10;
    }, 5);
    expect(sum).toBe(100);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    // Released when the call returned: the object holds nothing.
    expect((await composer.info())!.imports).toBe(0);
  });

  it("a callback kept with dup() works in later calls until the object disposes it", async () => {
    using composer = client("listen");
    const events: string[] = [];
    await composer.listen((event) => {
      events.push(event);
      return events.length;
    });
    expect((await composer.info())!.imports).toBe(1);
    expect(await composer.emit("one")).toBe(1);
    expect(await composer.emit("two")).toBe(2);
    await composer.unlisten();
    expect((await composer.info())!.imports).toBe(0);
    expect(events).toEqual(["one", "two"]);
    expect(((await rejection(composer.emit("three"))) as Error).message).toBe("nobody listens");
  });

  it("a kept callback of a client that disconnected fails on the object with DISCONNECTED or REFERENCE_LOST", async () => {
    const name = uniqueName("gone");
    const listener = createTestClient<Composer>(env.COMPOSER, name);
    await listener.listen(() => 1);
    listener[Symbol.dispose]();
    using other = createTestClient<Composer>(env.COMPOSER, name);
    const error = await rejection(other.emit("x"));
    expect(RpcError.is(error) && ["DISCONNECTED", "REFERENCE_LOST"].includes(error.code)).toBe(true);
  });
});

/**
 * Objects and functions by reference across an eviction, in workerd (real hibernatable sockets,
 * evictObject): a call refused for an old stub gives back the callback it also carried.
 */
import { RpcError } from "@dorpc/rpc";
import { createTestClient, evictObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Composer } from "./compose-objects.js";
import { rejection, uniqueName } from "./helpers.js";

describe("the client's exports across an eviction", () => {
  // a call refused with REFERENCE_LOST (an old stub after an eviction, api.md RpcStub "Connection")
  // runs nothing and gives back what else it passed by reference (protocol.md "Counting":
  // references of a call the receiver never runs are released).
  it("a call refused for an old stub gives back the callback it also carried", async () => {
    using composer = createTestClient<Composer>(env.COMPOSER, uniqueName("refs-evict-mixed"), { limits: { maxExports: 1 } });
    const room = await composer.openRoom("r");
    await evictObject(composer);
    const error = await rejection(composer.greet({ id: room, name: (() => "x") as never } as never));
    expect(RpcError.is(error) && error.code).toBe("REFERENCE_LOST");
    expect(await composer.callBack((n) => n, 2)).toBe(1);
  });
});

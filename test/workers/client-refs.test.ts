/**
 * What `client(who)` and `clients({ except })` do with something that is not a client
 * reference. docs/api.md: client() "Throws … BAD_OPTION for anything that is not a socket or a
 * caller"; a bad `except` should be refused the same way, not with a TypeError from inside dorpc.
 */
import { RpcError } from "@dorpc/rpc";
import { rpcClient, rpcClients } from "@dorpc/rpc/server";
import { createTestClient, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return "no error";
  } catch (error) {
    return RpcError.is(error) ? error.code : `${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe("client references that are not one", () => {
  it("client(who) refuses a number, a string or a boolean with BAD_OPTION", async () => {
    using c = createTestClient<Room>(env.ROOM, uniqueName("bad-who"), { query: { name: "ann" } });
    await c.connected();
    const codes = await runInObject(c, (obj) => [42, "socket", true].map((who) => codeOf(() => rpcClient<RoomClient>(obj, who as never))));
    expect(codes).toEqual(["BAD_OPTION", "BAD_OPTION", "BAD_OPTION"]);
  });

  it("clients({ except }) refuses null, a number or a list holding undefined with BAD_OPTION", async () => {
    using c = createTestClient<Room>(env.ROOM, uniqueName("bad-except"), { query: { name: "ann" } });
    await c.connected();
    const codes = await runInObject(c, (obj) =>
      [null, 42, [undefined]].map((except) =>
        codeOf(() => rpcClients<RoomClient>(obj, { except: except as never }).message({ from: "a", text: "b", at: new Date(0) })),
      ),
    );
    expect(codes).toEqual(["BAD_OPTION", "BAD_OPTION", "BAD_OPTION"]);
  });
});

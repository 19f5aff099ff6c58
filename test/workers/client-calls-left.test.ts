/**
 * The object calling a client that has left, and a call to a client that waits without a
 * timeout. A socket whose client left is still one of the object's dorpc sockets: calls to it
 * reject DISCONNECTED (they were refused BAD_OPTION, "not accepted by dorpc", because workerd
 * keeps no tags for a closed socket). A call whose timeout `withCallOptions` turned off no
 * longer keeps the caller's shared timer armed, which kept the object from hibernating until
 * its callTimeout (30 s by default).
 */
import { RpcError, withCallOptions } from "@dorpc/rpc";
import { rpcClient, rpcClients } from "@dorpc/rpc/server";
import { createTestClient, dropConnection, evictObject, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Composer } from "./compose-objects.js";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

type Keeper = { kept?: WebSocket };

/** Ann (who leaves) and Bob (who stays) in a new room; the object keeps Ann's socket. */
async function annLeaves(how: "dispose" | "drop") {
  const room = uniqueName(`left-${how}`);
  const ann = createTestClient<Room>(env.ROOM, room, { query: { name: "ann" }, expose: { confirm: () => true }, reconnect: false });
  const bob = createTestClient<Room>(env.ROOM, room, { query: { name: "bob" }, expose: { message: () => undefined } });
  await ann.connected();
  await runInObject(ann, (obj, state) => {
    (obj as unknown as Keeper).kept = state.getWebSockets()[0];
  });
  if (how === "dispose") ann[Symbol.dispose]();
  else dropConnection(ann);
  await vi.waitFor(() => expect(bob.connected()).resolves.toBe(1));
  return {
    bob,
    [Symbol.dispose]() {
      ann[Symbol.dispose]();
      bob[Symbol.dispose]();
    },
  };
}

describe("calls to a client that has left", () => {
  for (const how of ["dispose", "drop"] as const) {
    it(`a socket kept after its client left (${how}): client(socket) calls reject DISCONNECTED, and broadcasts skip it`, async () => {
      using t = await annLeaves(how);
      const outcome = await runInObject(t.bob, async (obj) => {
        const kept = (obj as unknown as Keeper).kept!;
        const stub = rpcClient<RoomClient>(obj, kept);
        const asked = await stub.confirm("still there?").then(
          (value) => ({ value }),
          (error: unknown) => ({ code: RpcError.is(error) ? error.code : String(error) }),
        );
        return {
          readyState: kept.readyState,
          asked,
          reached: rpcClients<RoomClient>(obj, { except: kept }).message({ from: "x", text: "y", at: new Date(0) }),
        };
      });
      expect(outcome).toEqual({ readyState: 3, asked: { code: "DISCONNECTED" }, reached: 1 });
    });
  }

  it("a method whose caller drops while it awaits, then asks that caller: the resend is answered DISCONNECTED", async () => {
    using client = createTestClient<Room>(env.ROOM, uniqueName("ask-later"), { expose: { confirm: () => true } });
    await client.connected();
    const asked = client.askLater(200, "still there?");
    await client.connected(); // askLater is running
    dropConnection(client);
    const error = await asked.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(RpcError.is(error) && error.code).toBe("DISCONNECTED");
    expect((error as Error).message).toMatch(/client has disconnected/);
  });
});

describe("a call to a client without a timeout", () => {
  it("withCallOptions({ timeout: 0 }) on a call to a client lets the object hibernate while it waits (callTimeout 30 s)", async () => {
    using client = createTestClient<Composer>(env.COMPOSER, uniqueName("no-timeout"), {
      expose: { slow: () => new Promise<string>(() => {}) },
    });
    await client.frames();
    await runInObject(client, (obj, state) => {
      // A call that waits for a person: no timeout. Its callTimeout timer must not stay armed.
      void withCallOptions(rpcClient<RoomClient>(obj, state.getWebSockets()[0]!).slow(0), { timeout: 0 }).catch(() => {});
    });
    // evictObject gives up (RUNTIME) when the runtime would not evict within 3 s.
    await expect(evictObject(client)).resolves.toBeUndefined();
  });
});

/**
 * The object's calls to a client after it was evicted (hibernation) while one of its earlier
 * calls to that client was still running there. The socket survives the eviction; the new
 * instance numbers its calls after the earlier one's (it numbered from 1 again, and the client
 * refused the new call: a call with that id was still running on its connection).
 */
import { RpcError, withCallOptions } from "@dorpc/rpc";
import { rpcClient } from "@dorpc/rpc/server";
import { createTestClient, evictObject, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

describe("calls to a client across the object's eviction", () => {
  it("a call made by the new instance is not refused because the old instance's call is still running on the client", {
    timeout: 15_000,
  }, async () => {
    let finishOld: (value: string) => void = () => {};
    const client = createTestClient<Room>(env.ROOM, uniqueName("call-ids"), {
      query: { name: "ann" },
      expose: {
        // The old instance's call: answered only when the test says so (a human choosing a move).
        slow: (ms: number) => (ms === 0 ? new Promise<string>((resolve) => (finishOld = resolve)) : Promise.resolve(`quick ${ms}`)),
        confirm: (q: string) => q === "new",
      },
    });
    using _ = client;
    await client.connected();
    // callTimeout disabled for this call ("0 disables"): nothing keeps the object from hibernating.
    await runInObject(client, (obj, state) => {
      void withCallOptions(rpcClient<RoomClient>(obj, state.getWebSockets()[0]!).slow(0), { timeout: 0 }).catch(() => {});
    });
    await evictObject(client); // hibernation: the client keeps its socket
    const answer = await runInObject(client, (obj, state) =>
      rpcClient<RoomClient>(obj, state.getWebSockets()[0]!)
        .confirm("new")
        .then(
          (value) => ({ value }),
          (error: unknown) => ({ error: RpcError.is(error) ? `${error.code}: ${error.message}` : String(error) }),
        ),
    );
    finishOld("old answer");
    expect(answer).toEqual({ value: true });
  });
});

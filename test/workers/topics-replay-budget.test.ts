/**
 * The per-connection replay budget of a topic (topics.ts) never costs a legitimate client: a
 * resubscription from the cursor it reached is replayed, not resynced.
 */
import { RpcError, subscribe } from "@dorpc/rpc";
import { rpcPublish } from "@dorpc/rpc/server";
import { createTestClient, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

function member(room: string) {
  const errors: string[] = [];
  const client = createTestClient<Room>(env.ROOM, room, {
    query: { name: "ann", team: "none" },
    expose: { message: () => undefined, confirm: () => true, slow: async () => "" } satisfies RoomClient,
    onError: (error) => errors.push(RpcError.is(error) ? `${error.code}: ${error.message}` : String(error)),
  });
  return { client, errors };
}

describe("topics.ts subscribe: the per-connection replay budget", () => {
  // docs/api.md (subscribe, Resync): "When the events after the cursor are no longer kept, onResync
  // is called"; protocol.md: the object resyncs "When those events are no longer all kept". a
  // component that closes its subscription and subscribes again later with its saved cursor (a
  // remount, a page switch, React StrictMode's double mount) gets the one missed event, which the
  // topic still keeps.
  it("a resubscription with a saved cursor whose missed event is kept is replayed, not resynced", async () => {
    const room = uniqueName("refs-budget");
    const { client, errors } = member(room);
    using _ = client;
    await client.connected();
    await runInObject(client, (obj) => {
      for (let i = 1; i <= 5; i++) rpcPublish(obj, "chat", { from: "s", text: `${i}` }); // chat keeps 5
    });
    const first: number[] = [];
    const a = subscribe(client, "chat", (_e, info) => void first.push(info.seq), { since: 0 });
    await a.ready;
    expect(first).toEqual([1, 2, 3, 4, 5]);
    const cursor = a.cursor!;
    a.close();
    await runInObject(client, (obj) => void rpcPublish(obj, "chat", { from: "s", text: "6" }));
    const second: number[] = [];
    const resyncs: unknown[] = [];
    const b = subscribe(client, "chat", (_e, info) => void second.push(info.seq), {
      since: cursor,
      onResync: (info) => void resyncs.push(info),
    });
    await b.ready;
    expect({ second, resyncs, errors }).toEqual({ second: [6], resyncs: [], errors: [] });
  });
});

/**
 * On one socket, the object's calls to a client and its broadcasts leave in the order they were
 * made (docs/protocol.md, "Broadcasts and calls to one client").
 */
import { rpcClient, rpcClients } from "@dorpc/rpc/server";
import { createTestClient, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room, RoomClient } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

describe("order of the object's calls and broadcasts on one socket", () => {
  // docs/protocol.md "Broadcasts and calls to one client": "On each socket, the object's calls,
  // notifications and replies leave in the order they were made". A call made with client(who).x()
  // and a broadcast made right after it in the same turn must reach the client in that order: call
  // first, broadcast second.
  it("client(ws).confirm('first') then clients().message('second'), in one turn, arrive in that order", { timeout: 10_000 }, async () => {
    const seen: string[] = [];
    let answered!: () => void;
    const done = new Promise<void>((resolve) => (answered = resolve));
    const client = createTestClient<Room>(env.ROOM, uniqueName("order"), {
      query: { name: "ann" },
      expose: {
        message: (m: { text: string }) => {
          seen.push(`message ${m.text}`);
          if (seen.length === 2) answered();
        },
        confirm: (q: string) => {
          seen.push(`confirm ${q}`);
          if (seen.length === 2) answered();
          return true;
        },
        slow: async () => "",
      } satisfies RoomClient,
    });
    using _ = client;
    await client.connected();
    await runInObject(client, (obj, state) => {
      const ws = state.getWebSockets()[0]!;
      void rpcClient<RoomClient>(obj, ws)
        .confirm("first")
        .catch(() => undefined);
      rpcClients<RoomClient>(obj).message({ from: "obj", text: "second", at: new Date(0) });
    });
    await done;
    expect(seen).toEqual(["confirm first", "message second"]);
  });
});

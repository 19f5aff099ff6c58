/**
 * On one socket, the object's calls to a client and its broadcasts leave in the order they were
 * made (docs/protocol.md, "Broadcasts and calls to one client").
 */
import { subscribe } from "@dorpc/rpc";
import { rpcClient, rpcClients, rpcPublish } from "@dorpc/rpc/server";
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

describe("order of a topic replay behind a reply that reads a Blob", () => {
  // outbox.ts: "An envelope whose bytes are not ready (a Blob being read) holds back every
  // envelope after it"; a resubscribe replays the missed events "in order, ahead of what comes
  // next" (topics.ts). Events carrying bytes are stored as binary frames; they used to be sent
  // straight to the socket, overtaking the reply that waited for its Blob and the text events
  // queued behind it, so the client saw 2, 4 before 1, 3, 5.
  it("events with and without bytes replayed in the frame of a Blob call arrive in order, after the Blob's reply", {
    timeout: 10_000,
  }, async () => {
    const client = createTestClient<Room>(env.ROOM, uniqueName("replay-order"), {
      query: { name: "ann" },
      expose: { message: () => undefined, confirm: () => true, slow: async () => "" } satisfies RoomClient,
    });
    using _ = client;
    await client.connected();
    await runInObject(client, (obj) => {
      for (let i = 1; i <= 5; i++) {
        const event = i % 2 === 0 ? { from: "s", text: `${i}`, bytes: new Uint8Array([i]) } : { from: "s", text: `${i}` };
        rpcPublish(obj, "chat", event as never);
      }
    });
    const seen: string[] = [];
    const blob = client.blob("b").then((b) => {
      seen.push(`blob ${b.size}`);
      return b.text();
    });
    const sub = subscribe(
      client,
      "chat",
      (event, info) => {
        const bytes = (event as { bytes?: Uint8Array }).bytes;
        seen.push(`event ${info.seq}${bytes ? ` [${bytes[0]}]` : ""}`);
      },
      { since: 0 },
    );
    const [text] = await Promise.all([blob, sub.ready]);
    sub.close();
    expect(text).toBe("b");
    expect(seen).toEqual(["blob 1", "event 1", "event 2 [2]", "event 3", "event 4 [4]", "event 5"]);
  });
});

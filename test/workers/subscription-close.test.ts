/**
 * Closing a subscription tells the object to stop pushing its events to that connection, at
 * whatever point of the connection's life it is closed — also before the connection has opened,
 * the case a React effect cleanup (a component unmounted right after mounting) runs into.
 */
import { subscribe } from "@dorpc/rpc";
import { createTestClient, runInObject } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Room } from "./push-objects.js";
import { uniqueName } from "./helpers.js";

/** The topics each of the object's sockets is subscribed to, as the object sees them. */
function subscribedTopics(client: Parameters<typeof runInObject>[0]): Promise<string[][]> {
  return runInObject(client, (_room, state) =>
    state.getWebSockets().map((ws) => (ws.deserializeAttachment() as { topics?: string[] } | null)?.topics ?? []),
  );
}

describe("closing a subscription", () => {
  it("after it was confirmed: the object no longer lists the connection as a subscriber", async () => {
    using client = createTestClient<Room>(env.ROOM, uniqueName("close-after"), { query: { name: "ann" } });
    const sub = subscribe(client, "chat", () => undefined);
    await sub.ready;
    expect(await subscribedTopics(client)).toEqual([["chat"]]);
    sub.close();
    await client.connected(); // a later call: the unsubscribe went before it
    expect(await subscribedTopics(client)).toEqual([[]]);
  });

  // KNOWN BUG in @dorpc/rpc (reported): Subscriptions.close() sends `unsubscribe` only when the
  // connection is open. Closed while it is still connecting, the `subscribe` call already queued
  // goes out when it opens, the object lists the socket as a subscriber and pushes every event
  // of the topic to it until the socket closes; the client drops them. `it.fails` keeps the bug
  // visible in `npm test`: when it is fixed this test fails, and `it.fails` becomes `it`.
  it.fails("before the connection opened: the object does not keep pushing the topic to it", async () => {
    using client = createTestClient<Room>(env.ROOM, uniqueName("close-before"), { query: { name: "ann" } });
    const sub = subscribe(client, "chat", () => undefined); // queued: the connection opens now
    sub.close(); // still connecting: the subscribe call is already queued
    await client.connected();
    expect(await subscribedTopics(client)).toEqual([[]]);
  });
});

/**
 * Closing a subscription tells the object to stop pushing its events to that connection, at
 * whatever point of the connection's life it is closed — also before the connection has opened,
 * the case a React effect cleanup (a component unmounted right after mounting) runs into. And
 * what disposing the client tells its subscriptions: one not yet confirmed rejects its `ready`,
 * a ready one ends through its `onEnd`.
 */
import { rpcConnection, RpcError, subscribe } from "@dorpc/rpc";
import { createTestClient, dropConnection, runInObject } from "@dorpc/testing";
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

  // The subscribe call is already queued when the subscription is closed: the unsubscribe must
  // follow it, or the object would push every event of the topic to this socket until it closes.
  it("before the connection opened: the object does not keep pushing the topic to it", async () => {
    using client = createTestClient<Room>(env.ROOM, uniqueName("close-before"), { query: { name: "ann" } });
    const sub = subscribe(client, "chat", () => undefined); // queued: the connection opens now
    sub.close(); // still connecting: the subscribe call is already queued
    await client.connected();
    expect(await subscribedTopics(client)).toEqual([[]]);
  });
});

describe("disposing the client of a subscription not yet confirmed", () => {
  const outcome = (ready: Promise<void>) =>
    ready.then(
      () => "resolved",
      (error: unknown) => (RpcError.is(error) ? error.code : String(error)),
    );

  it("its subscribe cut by a drop and waiting for the next open: ready rejects DISPOSED", async () => {
    const client = createTestClient<Room>(env.ROOM, uniqueName("dispose-cut"), {
      query: { name: "ann" },
      reconnect: { initialDelay: 60_000, maxDelay: 60_000, jitter: 0 },
    });
    await rpcConnection(client).waitForOpen();
    const sub = subscribe(client, "chat", () => undefined);
    await Promise.resolve(); // the subscribe is sent at the end of the turn; its answer needs another
    await Promise.resolve();
    dropConnection(client);
    expect(rpcConnection(client).state).toBe("reconnecting");
    client[Symbol.dispose]();
    expect(await outcome(sub.ready)).toBe("DISPOSED");
  });

  it("its subscribe queued while connecting: ready rejects DISPOSED", async () => {
    const client = createTestClient<Room>(env.ROOM, uniqueName("dispose-queued"), { query: { name: "ann" } });
    const sub = subscribe(client, "chat", () => undefined);
    client[Symbol.dispose]();
    expect(await outcome(sub.ready)).toBe("DISPOSED");
  });
});

describe("disposing the client of a ready subscription", () => {
  it("calls its onEnd once, with DISPOSED; without onEnd nothing reaches the client's onError", async () => {
    const reported: unknown[] = [];
    const client = createTestClient<Room>(env.ROOM, uniqueName("dispose-ready"), {
      query: { name: "ann" },
      onError: (error) => reported.push(error),
    });
    const ended: unknown[] = [];
    const told = subscribe(client, "chat", () => undefined, { onEnd: (error) => ended.push(error) });
    const untold = subscribe(client, "news", () => undefined);
    await Promise.all([told.ready, untold.ready]);

    client[Symbol.dispose]();

    expect(ended).toHaveLength(1);
    expect(RpcError.is(ended[0]) && ended[0].code).toBe("DISPOSED");
    expect((ended[0] as Error).message).toContain('"chat"');
    await new Promise((resolve) => setTimeout(resolve, 0)); // anything the dispose queued has run
    expect(ended).toHaveLength(1);
    expect(reported).toEqual([]);
  });
});

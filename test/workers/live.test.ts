/**
 * `hibernation: false`: the same Counter over accept()ed sockets.
 */
import { HEARTBEAT_PING, HEARTBEAT_PONG } from "../../packages/rpc/src/envelopes.js";
import { describe, expect, it } from "vitest";
import { createTestClient, testConnection } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { nextMessage, rpcFailure, uniqueName } from "./helpers.js";
import type { LiveCounter } from "./objects.js";

describe("hibernation: false", () => {
  it("serves calls over an accepted socket that the hibernation API does not hold", async () => {
    using client = createTestClient<LiveCounter>(env.LIVE_COUNTER, uniqueName("live"));
    expect(await client.increment(2)).toBe(2);
    expect(await client.getValue()).toBe(2);
    expect(await client.hibernatableSockets()).toBe(0);
    const rich = new Map<unknown, unknown>([
      ["bytes", new Uint8Array([1, 2, 3])],
      ["when", new Date(5)],
    ]);
    const back = (await client.echo(rich)) as Map<unknown, unknown>;
    expect(back.get("bytes")).toEqual(new Uint8Array([1, 2, 3]));
    expect((back.get("when") as Date).getTime()).toBe(5);
  });

  it("keeps the access policy and error codes", async () => {
    using client = createTestClient<LiveCounter>(env.LIVE_COUNTER, uniqueName("live-policy"));
    const reach = client as unknown as Record<string, () => Promise<unknown>>;
    await rpcFailure(reach.webSocketMessage!(), "NOT_FOUND");
    await rpcFailure(reach.ctx!(), "NOT_FOUND");
    expect(await client.getValue()).toBe(0);
  });

  it("answers heartbeats itself (no runtime auto-response for accepted sockets)", async () => {
    using client = createTestClient<LiveCounter>(env.LIVE_COUNTER, uniqueName("live-ping"));
    await client.getValue();
    const socket = testConnection(client).attempts[0]!.socket!;
    const pong = nextMessage(socket, (data) => data === HEARTBEAT_PONG);
    socket.send(HEARTBEAT_PING);
    expect(await pong).toBe(HEARTBEAT_PONG);
  });
});

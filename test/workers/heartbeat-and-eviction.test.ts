/**
 * The client's heartbeat and the object's eviction (hibernation), in workerd:
 * - an object that sets a WebSocket auto-response of its own replaces dorpc's (an object has only
 *   one): heartbeats then reach webSocketMessage, which answers them, so an idle connection stays
 *   open, also across an eviction, and a client that connects later does not take the app's pair
 *   away (RpcDurableObject, withRpc(PlainBase) and a hand-composed object alike);
 * - rpcSocketInfo across an eviction: `undefined` while only runtime-answered heartbeats have
 *   reached the new instance (docs/api.md: "no message since the object started"), then counts;
 * - a call running when evictObject is asked for: the runtime waits for it, and it is answered;
 * - a real heartbeat timeout (pings lost on the way): the client closes with 4000, reconnects,
 *   and the call that was running is answered through its resend.
 */
import { type ConnectionState, rpcConnection } from "@dorpc/rpc";
import { rpcSocketInfo } from "@dorpc/rpc/server";
import { createTestClient, evictObject, runInObject, type TestClient, testConnection, waitForState } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runningPerSocket } from "./cancel-support.js";
import { nextMessage, uniqueName } from "./helpers.js";
import type { Counter } from "./objects.js";

const PING = "\u001eP";
const PONG = "\u001eQ";

/** Counts the heartbeat answers `socket` receives from now on. */
function pongsOn(socket: WebSocket): { count: number } {
  const seen = { count: 0 };
  socket.addEventListener("message", (event) => {
    if (event.data === PONG) seen.count++;
  });
  return seen;
}

/**
 * Waits until `socket` has received `n` more heartbeat answers: `n` pings of its client were
 * answered in turn (a ping left unanswered closes the connection, and nothing more arrives on it).
 */
async function answeredPings(socket: WebSocket, n = 3): Promise<void> {
  const pongs = pongsOn(socket);
  await vi.waitFor(() => expect(pongs.count, "heartbeat answers received").toBeGreaterThanOrEqual(n), { timeout: 3_000, interval: 20 });
}

const heartbeat = { interval: 20, timeout: 200 };

/** The next text message on `socket` that is `expected`; fails saying `what` when none comes within 3 s. */
function expectMessage(socket: WebSocket, expected: string, what: string): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(expected)} within 3 s: ${what}`)), 3_000);
  });
  return Promise.race([nextMessage(socket, (data) => data === expected), late]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

/** A client of `binding`, and its method that counts 1, 2, 3 … in the object's storage. */
function countingClient(binding: "COUNTER" | "WRAPPED" | "MANUAL", name: string): { client: TestClient<unknown>; next(): Promise<number> } {
  if (binding === "COUNTER") {
    const client = createTestClient<Counter>(env.COUNTER, name, { heartbeat });
    return { client, next: async () => await client.increment() };
  }
  const client = createTestClient<{ bump(): number }>(env[binding], name, { heartbeat });
  return { client, next: async () => await client.bump() };
}

describe("an object with a WebSocket auto-response of its own", () => {
  it.each(["COUNTER", "WRAPPED", "MANUAL"] as const)(
    "%s: webSocketMessage answers the heartbeats, the idle connection stays open across an eviction, and a later client keeps the app's pair",
    async (binding) => {
      const name = uniqueName(`own-auto-response-${binding}`);
      const first = countingClient(binding, name);
      using _first = first.client;
      expect(await first.next()).toBe(1);
      await runInObject(first.client, (_instance, state) => {
        state.setWebSocketAutoResponse(new WebSocketRequestResponsePair("app-ping", "app-pong"));
      });
      const socket = testConnection(first.client).socket!;
      await answeredPings(socket);
      await evictObject(first.client);
      await answeredPings(socket); // each ping wakes the object now
      expect(rpcConnection(first.client).state).toBe("open");
      expect(testConnection(first.client).attempts).toHaveLength(1);
      expect(await first.next()).toBe(2);

      const later = countingClient(binding, name);
      using _later = later.client;
      expect(await later.next()).toBe(3);
      const laterSocket = testConnection(later.client).socket!;
      const appPong = expectMessage(laterSocket, "app-pong", "the later connection replaced the app's auto-response pair");
      laterSocket.send("app-ping");
      await appPong;
      const pong = expectMessage(laterSocket, PONG, "the heartbeat of the later connection was not answered");
      laterSocket.send(PING);
      await pong;
    },
    10_000,
  );
});

describe("rpcSocketInfo across an eviction", () => {
  it("undefined while only runtime-answered heartbeats reached the new instance; zeros after a call; running 1 while a call runs", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("socket-info"), { heartbeat });
    await client.getValue();
    const info = () => runInObject(client, (_instance, state) => state.getWebSockets().map((ws) => rpcSocketInfo(ws)));
    const idle = { exports: 0, imports: 0, running: 0, waiting: 0 };
    expect(await info()).toEqual([idle]);
    await evictObject(client);
    await answeredPings(testConnection(client).socket!);
    expect(await info()).toEqual([undefined]);
    expect(await client.getValue()).toBe(0);
    expect(await info()).toEqual([idle]);
    const slow = client.addLater(1, 2, 300);
    await vi.waitFor(async () => expect((await info())[0]?.running).toBe(1));
    expect(await slow).toBe(3);
    await vi.waitFor(async () => expect(await info()).toEqual([idle]));
  });
});

describe("a call running when the object is evicted", () => {
  it("evictObject waits for it: the call runs to its end and is answered, and the next call reaches a new instance", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("evict-running"), { timeout: 4_000 });
    const before = await client.whoami();
    const slow = client.waitOrCancel(500); // stores how it ended
    await vi.waitFor(async () => expect(await runningPerSocket(client)).toEqual([1]));
    await evictObject(client);
    expect(await slow, "the eviction cut the call short").toBe("finished");
    expect(await client.waitOutcome()).toBe("finished");
    expect(await client.whoami()).not.toBe(before);
    expect(testConnection(client).attempts).toHaveLength(1); // the socket hibernated
  });
});

describe("a real heartbeat timeout", () => {
  it("pings lost on the way: the client closes with 4000, reconnects, and the call that was running is answered through its resend", async () => {
    using client = createTestClient<Counter>(env.COUNTER, uniqueName("heartbeat-timeout"), {
      heartbeat: { interval: 50, timeout: 50 },
      timeout: 4_000,
    });
    const states: ConnectionState[] = [];
    rpcConnection(client).onStateChange((state) => states.push(state));
    expect(await client.increment()).toBe(1);
    const socket = testConnection(client).socket!;
    const send = socket.send.bind(socket);
    socket.send = (data: string | ArrayBuffer | ArrayBufferView) => {
      if (data !== PING) send(data);
    };
    const slow = client.waitOrCancel(400); // nothing arrives while it runs: the client pings
    await vi.waitFor(() => expect(testConnection(client).attempts).toHaveLength(2), { timeout: 3_000, interval: 10 });
    expect(testConnection(client).attempts[0]!.closed?.code).toBe(4000);
    expect(await slow, "the close cancelled the running call, or its resend was not answered").toBe("finished");
    expect(await client.waitOutcome()).toBe("finished");
    expect(await client.increment()).toBe(2);
    await waitForState(client, "open");
    expect(states).toEqual(["connecting", "open", "reconnecting", "open"]);
  });
});

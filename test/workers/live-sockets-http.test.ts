/** `hibernation: false` (live sockets): pushes, eviction, identity; HTTP to the same objects. */
import { createRpcClient, httpTransport } from "@dorpc/rpc";
import { rpcClient, rpcClients } from "@dorpc/rpc/server";
import { createTestClient, runInObject } from "@dorpc/testing";
import { env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { uniqueName } from "./helpers.js";
import type { LiveCounter } from "./objects.js";

interface Exposed {
  note(text: string): void;
  ask(n: number): number;
}

describe("live sockets", () => {
  it("a broadcast from outside a call reaches a live socket client", async () => {
    const name = uniqueName("live-bcast");
    const notes: string[] = [];
    using client = createTestClient<LiveCounter>(env.LIVE_COUNTER, name, {
      expose: { note: (t: string) => void notes.push(t), ask: (n: number) => n * 2 } satisfies Exposed,
    });
    expect(await client.increment()).toBe(1);
    const reached = await runInObject(client, (instance) => rpcClients<Exposed>(instance).note("hello"));
    expect(reached).toBe(1);
    await vi.waitFor(() => expect(notes).toEqual(["hello"]));
  });

  it("a call to one live client from outside a call gets its answer", async () => {
    const name = uniqueName("live-call");
    using client = createTestClient<LiveCounter>(env.LIVE_COUNTER, name, {
      expose: { note: () => {}, ask: (n: number) => n * 2 } satisfies Exposed,
    });
    expect(await client.increment()).toBe(1);
    const answer = await runInObject(client, async (instance, state) => {
      void state;
      // live sockets are not in ctx.getWebSockets(): find it through a broadcast filter
      let found: WebSocket | undefined;
      rpcClients<Exposed>(instance, { where: (c) => ((found = c.socket), true) }).note("x");
      return rpcClient<Exposed>(instance, found!).ask(21);
    });
    expect(answer).toBe(42);
  });

  it("HTTP batch to a hibernation: false object", async () => {
    const name = uniqueName("live-http");
    await using client = createRpcClient<LiveCounter>("LIVE_COUNTER", name, {
      transport: httpTransport({ fetch: (url, init) => SELF.fetch(url, init) }),
      baseUrl: "http://dorpc.test",
    });
    expect(await client.increment(2)).toBe(2);
    expect(await client.callerInfo()).toEqual({ socket: false, connectedAt: true, signal: true });
  });
});

/** highWaterMark: calls wait while the transport buffers more than it, and go, in order, once it drains or on a new connection. */
import { describe, expect, it } from "vitest";
import { createRpcClient, type TransportFactory } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

class Echo {
  echo(v: unknown) {
    return v;
  }
}

function congestible(factory: TransportFactory) {
  const state = { level: 0 };
  const wrapped: TransportFactory = (handler) => {
    const t = factory(handler);
    Object.defineProperty(t, "bufferedAmount", { get: () => state.level, configurable: true });
    return t;
  };
  return { state, factory: wrapped };
}

describe("backpressure", () => {
  it("holds calls while congested and sends them when it clears", async () => {
    const paired = pairWith(new Echo());
    const c = congestible(paired.factory);
    using client = createRpcClient<Echo>("E", "b1", { transport: c.factory, highWaterMark: 100 });
    expect(await client.echo(1)).toBe(1);
    c.state.level = 1000;
    const p = client.echo(new Uint8Array([1, 2, 3]));
    await settle(5);
    expect(paired.connections[0]!.sentByClient.length).toBe(1);
    c.state.level = 0;
    expect([...((await p) as Uint8Array)]).toEqual([1, 2, 3]);
  });

  it("calls queued while congested go after a reconnect onto a clear socket", async () => {
    const paired = pairWith(new Echo());
    const c = congestible(paired.factory);
    using client = createRpcClient<Echo>("E", "b2", {
      transport: c.factory,
      highWaterMark: 100,
      reconnect: { initialDelay: 1, maxDelay: 5 } as never,
    });
    expect(await client.echo(1)).toBe(1);
    c.state.level = 1000;
    const p = client.echo(2);
    await settle(3);
    paired.connections[0]!.cut();
    c.state.level = 0;
    expect(await p).toBe(2);
  });

  it("a Blob call held by congestion still goes, in order", async () => {
    const paired = pairWith(new Echo());
    const c = congestible(paired.factory);
    using client = createRpcClient<Echo>("E", "b3", { transport: c.factory, highWaterMark: 100 });
    expect(await client.echo(1)).toBe(1);
    c.state.level = 1000;
    const a = client.echo(new Blob(["abc"], { type: "t/a" }));
    const b = client.echo(new Uint8Array([9]));
    await settle(3);
    c.state.level = 0;
    const [ra, rb] = await Promise.all([a, b]);
    expect(await (ra as Blob).text()).toBe("abc");
    expect((ra as Blob).type).toBe("t/a");
    expect([...(rb as Uint8Array)]).toEqual([9]);
  });
});

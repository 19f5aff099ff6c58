/**
 * highWaterMark: calls wait while the transport buffers more than it, and go, in order, once it
 * drains or on a new connection. Calls waiting behind a Blob argument being read count as sent
 * (docs/protocol.md, Batching), so the calls after them wait too: what the socket is handed stays
 * within about twice highWaterMark, in one turn, in later turns, and under a long mix of big
 * calls (before, every call made behind a Blob reached the socket at once, however full). A call
 * held until its timeout says it was never sent, and why.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, RpcError, type TransportFactory } from "../../packages/rpc/src/index.js";
import { pairWith } from "../support/paired-transport.js";
import { rejectionOf, settle } from "./helpers.js";

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

/** Records the calls it runs, in order. */
class Recorder {
  order: number[] = [];
  rec(i: number, _padding?: unknown): number {
    this.order.push(i);
    return i;
  }
  size(value: Blob | Uint8Array): number {
    return value instanceof Blob ? value.size : value.byteLength;
  }
}

/** A Blob whose bytes can be read only once `open()` has been called. */
class GatedBlob extends Blob {
  #open: () => void = () => {};
  readonly #opened = new Promise<void>((resolve) => (this.#open = resolve));
  open(): void {
    this.#open();
  }
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await this.#opened;
    return super.arrayBuffer();
  }
}

/**
 * A transport whose bufferedAmount is every byte handed to it that has not drained; it drains
 * only when the test drains it. `most`: the most it ever held.
 */
function fillingSocket(target: object) {
  const paired = pairWith(target);
  const state = { buffered: 0, most: 0 };
  const factory: TransportFactory = (handler) => {
    const t = paired.factory(handler);
    const send = t.send.bind(t);
    t.send = (frame) => {
      state.buffered += typeof frame === "string" ? frame.length : frame.byteLength;
      state.most = Math.max(state.most, state.buffered);
      send(frame);
    };
    Object.defineProperty(t, "bufferedAmount", { get: () => state.buffered, configurable: true });
    return t;
  };
  /** Drains `bytes` every millisecond until the returned function is called. */
  const drainEvery = (bytes: number) => {
    const timer = setInterval(() => (state.buffered = Math.max(0, state.buffered - bytes)), 1);
    return () => clearInterval(timer);
  };
  return { paired, state, factory, drainEvery };
}

const HWM = 200_000;
const KB100 = 100_000;

describe("calls behind a Blob count toward highWaterMark", () => {
  it("a Blob call, then 40 calls of 100 KB in one turn, the socket never draining: it is handed about twice highWaterMark at most", async () => {
    const socket = fillingSocket(new Recorder());
    using client = createRpcClient<Recorder>("R", "bp-blob-turn", { transport: socket.factory, highWaterMark: HWM, timeout: 10_000 });
    expect(await client.rec(0)).toBe(0);
    const blob = client.size(new Blob([new Uint8Array(10)]));
    const big = Array.from({ length: 40 }, () => client.size(new Uint8Array(KB100)));
    expect(await blob).toBe(10); // the Blob was read, and what waited behind it went with it
    await settle();
    const sent = socket.paired.connections[0]!.sentByClient.length;
    expect(socket.state.most).toBeLessThanOrEqual(2 * HWM);
    const drained = socket.drainEvery(HWM);
    try {
      expect(await Promise.all(big)).toEqual(Array(40).fill(KB100));
    } finally {
      drained();
    }
    expect(sent).toBeLessThan(socket.paired.connections[0]!.sentByClient.length); // the rest waited for the drain
  });

  it("a Blob not read yet, then 10 later turns of 5 calls of 100 KB, the socket never draining: about twice highWaterMark at most", async () => {
    const socket = fillingSocket(new Recorder());
    using client = createRpcClient<Recorder>("R", "bp-blob-turns", { transport: socket.factory, highWaterMark: HWM, timeout: 10_000 });
    expect(await client.rec(0)).toBe(0);
    const gated = new GatedBlob([new Uint8Array(10)]);
    const blob = client.size(gated);
    const big: Promise<number>[] = [];
    for (let turn = 0; turn < 10; turn++) {
      for (let i = 0; i < 5; i++) big.push(client.size(new Uint8Array(KB100)));
      await settle(1);
    }
    gated.open();
    expect(await blob).toBe(10);
    await settle();
    expect(socket.state.most).toBeLessThanOrEqual(2 * HWM);
    const drained = socket.drainEvery(HWM);
    try {
      expect(await Promise.all(big)).toEqual(Array(50).fill(KB100));
    } finally {
      drained();
    }
  });

  it("3,000 calls in one turn, some with 70 KB strings or 30 KB Blobs, the socket draining slowly: all run in order, about twice highWaterMark at most", {
    timeout: 30_000,
  }, async () => {
    const target = new Recorder();
    const socket = fillingSocket(target);
    using client = createRpcClient<Recorder>("R", "bp-blob-mix", {
      transport: socket.factory,
      highWaterMark: HWM,
      limits: { maxPendingCalls: 5000 },
      timeout: 30_000,
    });
    const drained = socket.drainEvery(KB100);
    try {
      const calls = Array.from({ length: 3000 }, (_, i) =>
        i % 97 === 5
          ? client.rec(i, "x".repeat(70_000))
          : i % 131 === 7
            ? client.rec(i, new Blob([new Uint8Array(30_000)]))
            : client.rec(i),
      );
      const all = Array.from({ length: 3000 }, (_, i) => i);
      expect(await Promise.all(calls)).toEqual(all);
      expect(target.order).toEqual(all);
    } finally {
      drained();
    }
    expect(socket.state.most).toBeLessThanOrEqual(2 * HWM);
  });
});

describe("a call held until its timeout", () => {
  it("fails TIMEOUT saying it was never sent because the socket is not draining past highWaterMark; the object never ran it", async () => {
    const target = new Recorder();
    const socket = fillingSocket(target);
    using client = createRpcClient<Recorder>("R", "bp-stuck", { transport: socket.factory, highWaterMark: 100, timeout: 200 });
    expect(await client.rec(1)).toBe(1);
    socket.state.buffered = 1_000_000;
    const before = socket.paired.connections[0]!.sentByClient.length;
    const error = await rejectionOf(client.rec(2));
    expect(error).toBeInstanceOf(RpcError);
    expect({ code: (error as RpcError).code, message: (error as RpcError).message }).toEqual({
      code: "TIMEOUT",
      message: expect.stringMatching(
        /the call was never sent, because the socket still held 1000000 bytes not yet sent, more than highWaterMark \(100\): the connection is not draining\.$/,
      ),
    });
    expect(socket.paired.connections[0]!.sentByClient.length).toBe(before);
    expect(target.order).toEqual([1]);
  });
});

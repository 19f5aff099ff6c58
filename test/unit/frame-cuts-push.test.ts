/**
 * A broadcast (`rpcClients(this).x(…)`) made while the object's outbox is held (the synchronous
 * part of a method, inside the dispatch of the client's frame) puts a call envelope in the outbox
 * that the object's caller does not count; calls the caller flushed after it joined that frame and
 * the outbox cut the whole where the caller had not, so a call pipelining on another was refused
 * (PROTOCOL). Each flush of the caller now starts a frame of its own (caller.ts, Outbox.cut).
 *
 * The seeded mixes at the end (a review probe's) add turns, tasks, byte broadcasts and Blob
 * arguments read in a later task, next to Blob results of the client's own calls.
 *
 * A paired transport whose server channel looks like an open hibernatable WebSocket, and a target
 * whose `ctx` lists it; `rpcClients` is `broadcastTo` (durable-object.ts imports
 * cloudflare:workers), loaded at run time because push.ts's socket code is typed for Workers.
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, type RpcTransport, type TransportFactory, type TransportHandler } from "../../packages/rpc/src/index.js";
import { currentCall } from "../../packages/rpc/src/current-call.js";
import { rootProxy } from "../../packages/rpc/src/proxy.js";
import { channelClosed, checkServed, dispatchFrame, resolveServerOptions } from "../../packages/rpc/src/dispatcher.js";

const PUSH_MODULE = new URL("../../packages/rpc/src/push.ts", import.meta.url).pathname;
const { broadcastTo } = (await import(/* @vite-ignore */ PUSH_MODULE)) as { broadcastTo<C>(target: object, options: undefined): C };
const rpcClients = <C>(target: object) => broadcastTo<C>(target, undefined);

type Frame = string | Uint8Array;
const settleAll = (ps: unknown[]) => Promise.all(ps.map((p) => Promise.resolve(p).catch((x: unknown) => x)));
const show = (x: unknown) => (x instanceof Error ? `${(x as { code?: string }).code ?? x.name}: ${x.message}` : x);

function pairSocket(target: object): { factory: TransportFactory; channels: object[] } {
  const resolved = resolveServerOptions(undefined);
  checkServed(target, resolved);
  const channels: object[] = [];
  const factory = (handler: TransportHandler): RpcTransport => {
    let closed = false;
    const channel = {
      readyState: 1,
      send(frame: Frame) {
        if (closed) throw new Error("socket closed");
        const data = typeof frame === "string" ? frame : frame.slice().buffer;
        setTimeout(() => !closed && handler.onMessage(data), 0);
      },
      close(code = 1000, reason = "") {
        setTimeout(() => {
          if (closed) return;
          closed = true;
          channelClosed(channel, code, reason);
          handler.onClose(code, reason);
        }, 0);
      },
      deserializeAttachment: () => null,
      serializeAttachment: () => undefined,
    };
    channels.push(channel);
    return {
      open: () => Promise.resolve(),
      send(frame) {
        if (closed) return;
        const data = typeof frame === "string" ? frame : frame.slice().buffer;
        setTimeout(() => !closed && dispatchFrame(data, target, resolved, channel as never), 0);
      },
      close(code = 1000, reason = "") {
        if (closed) return;
        closed = true;
        channelClosed(channel, code, reason);
        handler.onClose(code, reason);
      },
    };
  };
  return { factory, channels };
}

type ClientSide = { get(): Promise<number>; echo(v: unknown): Promise<unknown>; size(v: unknown): Promise<number>; tick(v: unknown): void };

class Api {
  ctx: { acceptWebSocket(): void; getWebSockets(): object[] };
  channels: object[] = [];
  constructor() {
    this.ctx = { acceptWebSocket: () => undefined, getWebSockets: () => this.channels };
  }
  protected client(): ClientSide {
    return rootProxy(
      currentCall()!.connection.caller,
      () => undefined,
      () => undefined,
    ) as unknown as ClientSide;
  }
  /** Sync part: a big broadcast, then calls pipelining; the method returns at once (its reply flushes the caller). */
  pushThenCallsSize(pushBytes: number, argBytes: number): string {
    const c = this.client();
    rpcClients<ClientSide>(this).tick("p".repeat(pushBytes));
    const first = c.get();
    const s = c.size("a".repeat(argBytes));
    const e = c.echo(first);
    this.pending = settleAll([first, s, e]).then((r) => r.map(show));
    return "ok";
  }
  /** Sync part: 200 calls, a broadcast (flushes them), 100 calls with an echo of the first, a second broadcast. */
  async pushThenCallsCount(): Promise<unknown[]> {
    const c = this.client();
    const a: unknown[] = [];
    for (let i = 0; i < 200; i++) a.push(c.get());
    rpcClients<ClientSide>(this).tick(1);
    const first = c.get();
    const b: unknown[] = [first];
    for (let i = 0; i < 100; i++) b.push(c.get());
    b.push(c.echo(first));
    rpcClients<ClientSide>(this).tick(2);
    return (await settleAll([...a, ...b])).map(show);
  }
  pending: Promise<unknown[]> | undefined;
}

/** A client paired with `api` that exposes `get`, `echo`, `size` and `tick` (the broadcasts' lengths or values). */
function setup<T extends Api>(api: T, instance: string) {
  const { factory, channels } = pairSocket(api);
  api.channels = channels;
  const ticks: unknown[] = [];
  const client = createRpcClient<T>("API", instance, {
    transport: factory,
    reconnect: false,
    timeout: 10_000,
    expose: {
      get: () => 7,
      echo: (v: unknown) => v,
      size: (v: unknown) => (typeof v === "string" ? v.length : v instanceof Blob ? v.size : v instanceof Uint8Array ? v.byteLength : -1),
      tick: (v: unknown) => void ticks.push(typeof v === "string" ? v.length : v),
    },
  });
  return { api, client, ticks };
}

describe("broadcasts and the object's calls in one held outbox", () => {
  it("control: no broadcast, a call, a 20 KB argument and an echo of the call", async () => {
    const { api, client } = setup(new Api(), "frame-cuts-push");
    using _ = client;
    expect(await client.pushThenCallsSize(0, 20_000)).toBe("ok");
    expect(await api.pending).toEqual([7, 20_000, 7]);
  });

  it("a 50 KB broadcast, then a call, a 20 KB argument and an echo of the call", async () => {
    const { api, client, ticks } = setup(new Api(), "frame-cuts-push");
    using _ = client;
    expect(await client.pushThenCallsSize(50_000, 20_000)).toBe("ok");
    expect(await api.pending).toEqual([7, 20_000, 7]);
    expect(ticks).toEqual([50_000]);
  });

  it("200 calls, a broadcast, 101 calls and an echo of the first of them, a broadcast", async () => {
    const { client, ticks } = setup(new Api(), "frame-cuts-push");
    using _ = client;
    const r = await client.pushThenCallsCount();
    expect(r).toEqual(Array(302).fill(7));
    expect(ticks).toEqual([1, 2]);
  });
});

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
class SlowBlob extends Blob {
  override async arrayBuffer(): Promise<ArrayBuffer> {
    await wait(10);
    return super.arrayBuffer();
  }
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Mixes of the object's calls to its client, broadcasts and Blob arguments, made in one method. */
class MixApi extends Api {
  blobResult(n: number): Blob {
    return new SlowBlob([new Uint8Array(n).fill(3)]);
  }
  plainResult(n: number): string {
    return "r".repeat(n);
  }
  /** Fixed mix in the synchronous part. */
  async fixedMix(): Promise<{ got: unknown[]; want: unknown[] }> {
    const c = this.client();
    const got: unknown[] = [];
    const want: unknown[] = [];
    for (let i = 0; i < 200; i++) got.push(c.get()), want.push(7);
    rpcClients<ClientSide>(this).tick(40_000);
    got.push(c.size(new SlowBlob([new Uint8Array(70_000)])));
    want.push(70_000);
    const first = c.get();
    got.push(first), want.push(7);
    for (let i = 0; i < 100; i++) got.push(c.get()), want.push(7);
    got.push(c.echo(first)), want.push(7);
    rpcClients<ClientSide>(this).tick(1);
    const second = c.get();
    got.push(second), want.push(7);
    for (let i = 0; i < 260; i++) got.push(c.size("s".repeat(i * 7))), want.push(i * 7);
    got.push(c.echo(second)), want.push(7);
    rpcClients<ClientSide>(this).tick(2);
    return { got: (await settleAll(got)).map(show), want };
  }
  /** A seeded mix: calls, pipelining, Blob args, broadcasts, turns and tasks in between. */
  async seededMix(seed: number): Promise<{ got: unknown[]; want: unknown[]; ticks: number }> {
    const r = rng(seed);
    const c = this.client();
    const got: unknown[] = [];
    const want: unknown[] = [];
    const gets: Promise<number>[] = [];
    let ticks = 0;
    const steps = 200 + Math.floor(r() * 600);
    for (let s = 0; s < steps; s++) {
      const x = r();
      if (x < 0.35) {
        const g = c.get();
        gets.push(g), got.push(g), want.push(7);
      } else if (x < 0.55 && gets.length) {
        got.push(c.echo(gets[Math.floor(r() * gets.length)])), want.push(7);
      } else if (x < 0.7) {
        const n = r() < 0.1 ? Math.floor(r() * 40_000) : Math.floor(r() * 300);
        got.push(c.size("z".repeat(n))), want.push(n);
      } else if (x < 0.74) {
        const n = Math.floor(r() * 90_000);
        got.push(c.size(r() < 0.5 ? new SlowBlob([new Uint8Array(n)]) : new Blob([new Uint8Array(n)]))), want.push(n);
      } else if (x < 0.77) {
        const n = Math.floor(r() * 30_000);
        got.push(c.size(new Uint8Array(n))), want.push(n);
      } else if (x < 0.85) {
        ticks++;
        rpcClients<ClientSide>(this).tick(r() < 0.3 ? "b".repeat(Math.floor(r() * 50_000)) : 1);
      } else if (x < 0.9) {
        ticks++;
        rpcClients<ClientSide>(this).tick(new Uint8Array(Math.floor(r() * 20_000)));
      } else if (x < 0.95) {
        await Promise.resolve();
      } else if (x < 0.97) {
        await wait(0);
      }
    }
    return { got: (await settleAll(got)).map(show), want, ticks };
  }
}

describe("object → client traffic mixed in one method: broadcasts, Blob arguments and results, pipelining", () => {
  it("a fixed mix: 200 calls, a 40 KB broadcast, a 70 KB Blob argument, 101 calls and an echo, 261 calls and an echo, broadcasts between", async () => {
    const { client, ticks } = setup(new MixApi(), "frame-cuts-push-mixed");
    using _ = client;
    const r = await client.fixedMix();
    expect(r.got).toEqual(r.want);
    expect(ticks.length).toBe(3);
  }, 30_000);

  it("the fixed mix in the same client frame as a Blob result (read in a later task) and plain results", async () => {
    const { client, ticks } = setup(new MixApi(), "frame-cuts-push-mixed");
    using _ = client;
    const [b, p1, m, p2, b2] = await settleAll([
      client.blobResult(70_000),
      client.plainResult(10),
      client.fixedMix(),
      client.plainResult(30_000),
      client.blobResult(5),
    ]);
    expect((b as Blob).size).toBe(70_000);
    expect(p1).toBe("r".repeat(10));
    expect(p2).toBe("r".repeat(30_000));
    expect((b2 as Blob).size).toBe(5);
    const r = m as { got: unknown[]; want: unknown[] };
    expect(r.got).toEqual(r.want);
    expect(ticks.length).toBe(3);
  }, 30_000);

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) {
    it(`seeded mix ${seed}, next to Blob results`, async () => {
      const { client, ticks } = setup(new MixApi(), "frame-cuts-push-mixed");
      using _ = client;
      const out = await settleAll([
        client.blobResult(1000 * seed),
        client.seededMix(seed),
        client.blobResult(66_000),
        client.plainResult(seed * 5000),
        client.seededMix(seed + 100),
      ]);
      expect((out[0] as Blob).size).toBe(1000 * seed);
      expect((out[2] as Blob).size).toBe(66_000);
      expect(out[3]).toBe("r".repeat(seed * 5000));
      const a = out[1] as { got: unknown[]; want: unknown[]; ticks: number };
      const b = out[4] as { got: unknown[]; want: unknown[]; ticks: number };
      const bad = (x: typeof a) => x.got.map((g, i) => [i, g, x.want[i]]).filter(([, g, w]) => g !== w);
      expect(bad(a).slice(0, 5)).toEqual([]);
      expect(bad(b).slice(0, 5)).toEqual([]);
      expect(ticks.length).toBe(a.ticks + b.ticks);
    }, 60_000);
  }
});

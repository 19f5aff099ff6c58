/**
 * A broadcast (`rpcClients(this).x(…)`) made while the object's outbox is held (the synchronous
 * part of a method, inside the dispatch of the client's frame) puts a call envelope in the outbox
 * that the object's caller does not count; calls the caller flushed after it joined that frame and
 * the outbox cut the whole where the caller had not, so a call pipelining on another was refused
 * (PROTOCOL). Each flush of the caller now starts a frame of its own (caller.ts, Outbox.cut).
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
  private client(): ClientSide {
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

function setup() {
  const api = new Api();
  const { factory, channels } = pairSocket(api);
  api.channels = channels;
  const ticks: unknown[] = [];
  const client = createRpcClient<Api>("API", "frame-cuts-push", {
    transport: factory,
    reconnect: false,
    timeout: 3000,
    expose: {
      get: () => 7,
      echo: (v: unknown) => v,
      size: (v: unknown) => (typeof v === "string" ? v.length : -1),
      tick: (v: unknown) => void ticks.push(typeof v === "string" ? v.length : v),
    },
  });
  return { api, client, ticks };
}

describe("broadcasts and the object's calls in one held outbox", () => {
  it("control: no broadcast, a call, a 20 KB argument and an echo of the call", async () => {
    const { api, client } = setup();
    using _ = client;
    expect(await client.pushThenCallsSize(0, 20_000)).toBe("ok");
    expect(await api.pending).toEqual([7, 20_000, 7]);
  });

  it("a 50 KB broadcast, then a call, a 20 KB argument and an echo of the call", async () => {
    const { api, client, ticks } = setup();
    using _ = client;
    expect(await client.pushThenCallsSize(50_000, 20_000)).toBe("ok");
    expect(await api.pending).toEqual([7, 20_000, 7]);
    expect(ticks).toEqual([50_000]);
  });

  it("200 calls, a broadcast, 101 calls and an echo of the first of them, a broadcast", async () => {
    const { client, ticks } = setup();
    using _ = client;
    const r = await client.pushThenCallsCount();
    expect(r).toEqual(Array(302).fill(7));
    expect(ticks).toEqual([1, 2]);
  });
});

/**
 * Starting and stopping the V8 sampling profiler on both ends of a call:
 *  - the client: this Node process, through `node:inspector/promises`;
 *  - the Worker and its Durable Objects: workerd's DevTools endpoint, which `wrangler dev`
 *    serves on `--inspector-port` (one isolate, so the Worker and every Durable Object class of
 *    the config are in the same profile).
 */
import { Session } from "node:inspector/promises";
import type { CpuProfile } from "./cpu-profile.js";

export interface Profiler {
  start(): Promise<void>;
  stop(): Promise<CpuProfile>;
  close(): Promise<void>;
}

/** Sampling interval asked for, µs. workerd may sample more coarsely than asked. */
const INTERVAL_US = 100;

export function nodeProfiler(): Profiler {
  const session = new Session();
  session.connect();
  return {
    async start() {
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: INTERVAL_US });
      await session.post("Profiler.start");
    },
    async stop() {
      const { profile } = await session.post("Profiler.stop");
      return profile as unknown as CpuProfile;
    },
    async close() {
      session.disconnect();
    },
  };
}

interface Reply {
  id?: number;
  result?: unknown;
  error?: { message: string };
}

/**
 * A DevTools protocol client for workerd behind `wrangler dev`. wrangler's inspector proxy
 * refuses upgrades without an allowed Origin, hence the header (Node's WebSocket takes one).
 */
export async function workerdProfiler(inspectorPort: number): Promise<Profiler> {
  const url = `ws://127.0.0.1:${inspectorPort}/ws`;
  const WebSocketWithHeaders = WebSocket as unknown as new (url: string, init: { headers: Record<string, string> }) => WebSocket;
  const socket = new WebSocketWithHeaders(url, { headers: { Origin: "http://127.0.0.1" } });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot open workerd's inspector at ${url}`)), { once: true });
  });
  const pending = new Map<number, { resolve(value: unknown): void; reject(reason: Error): void }>();
  let nextId = 1;
  socket.addEventListener("message", (event: MessageEvent) => {
    const reply = JSON.parse(String(event.data)) as Reply;
    if (reply.id === undefined) return; // an event
    // workerd answers a command with no result by sending the command back (method, params, no result).
    const waiter = pending.get(reply.id);
    if (!waiter) return;
    pending.delete(reply.id);
    if (reply.error) waiter.reject(new Error(`workerd inspector: ${reply.error.message}`));
    else waiter.resolve(reply.result);
  });
  const post = (method: string, params: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return {
    async start() {
      await post("Profiler.enable");
      await post("Profiler.setSamplingInterval", { interval: INTERVAL_US });
      await post("Profiler.start");
    },
    async stop() {
      const { profile } = (await post("Profiler.stop")) as { profile: CpuProfile };
      return profile;
    },
    async close() {
      socket.close();
    },
  };
}

/**
 * The floor: a minimal hand-written JSON request/reply client (see worker/floor-counter.ts).
 * Text `[id, method, args]` → `[id, result]`; a top-level Uint8Array goes as one binary message
 * (4-byte id + bytes). JSON cannot carry Map, Set, Date, BigInt, RegExp, undefined or cycles,
 * so those payloads are unsupported by design. The feature scenarios use the least code that
 * does the job: three awaited calls, a hand-written callback exchange, one string per listener,
 * and a POST of `[[method, args], …]`.
 */
import { closeAndWait, countingWebSocket, whenOpen, type WireCounters } from "../wire.js";
import type { Connected, Contender } from "./types.js";
import { elapsedNs } from "./types.js";

interface Waiter {
  resolve(value: unknown): void;
  reject(reason: unknown): void;
}

/** A floor client for the Worker route `path` (/floor/ or /floor-accept/). */
export function floorContender(name: string, label: string, path: string, features = false): Contender {
  return {
    name,
    label,
    wire: "hand-written JSON text frames `[id, method, args]` → `[id, result]`; a lone Uint8Array as one binary frame",
    pipeline: "awaited",
    supports: (payload) => (payload.json || payload.bytes ? true : "JSON only (by design)"),
    feature: () => (features ? true : { unsupported: "diagnostic contender: latency scenarios only" }),
    async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
      const url = `${baseUrl.replace(/^http/, "ws")}${path}${encodeURIComponent(instance)}`;
      const WebSocketClass = countingWebSocket(counters);
      const start = process.hrtime.bigint();
      const socket = new WebSocketClass(url);
      socket.binaryType = "arraybuffer";
      const waiting = new Map<number, Waiter>();
      const callbacks = new Map<number, (i: number) => number>();
      let onFan: ((message: string) => void) | undefined;
      let nextId = 1;
      socket.addEventListener("message", (event: MessageEvent) => {
        const data = event.data as string | ArrayBuffer;
        if (typeof data === "string") {
          const frame = JSON.parse(data) as [number, unknown, string?] | ["fan", string] | ["cb", number, number];
          if (frame[0] === "fan") return onFan?.(frame[1]);
          if (frame[0] === "cb") {
            const fn = callbacks.get(frame[1]);
            if (fn) socket.send(JSON.stringify(["cbr", frame[1], fn(frame[2])]));
            return;
          }
          const waiter = waiting.get(frame[0]);
          if (!waiter) return;
          waiting.delete(frame[0]);
          callbacks.delete(frame[0]);
          if (frame.length > 2) waiter.reject(new Error(frame[2]));
          else waiter.resolve(frame[1] ?? undefined);
        } else {
          if (data.byteLength < 4) return; // not a floor reply; the call then times out visibly
          const id = new DataView(data).getUint32(0, true);
          const waiter = waiting.get(id);
          if (!waiter) return;
          waiting.delete(id);
          waiter.resolve(new Uint8Array(data, 4));
        }
      });
      socket.addEventListener("close", () => {
        for (const waiter of waiting.values()) waiter.reject(new Error("floor: socket closed"));
        waiting.clear();
      });
      const call = (method: string, args: unknown[], callback?: (i: number) => number): Promise<unknown> =>
        new Promise((resolve, reject) => {
          const id = nextId++;
          waiting.set(id, { resolve, reject });
          if (callback) callbacks.set(id, callback);
          socket.send(JSON.stringify([id, method, args]));
        });
      const sendBytes = (bytes: Uint8Array): Promise<unknown> =>
        new Promise((resolve, reject) => {
          const id = nextId++;
          const message = new Uint8Array(4 + bytes.byteLength);
          new DataView(message.buffer).setUint32(0, id, true);
          message.set(bytes, 4);
          waiting.set(id, { resolve, reject });
          socket.send(message);
        });
      await whenOpen(socket);
      await call("getValue", []);
      const totalNs = elapsedNs(start);
      const echo = <T>(value: T) => (value instanceof Uint8Array ? sendBytes(value) : call("echo", [value])) as Promise<T>;
      return {
        handshakeNs: elapsedNs(start, socket.times.openedAt),
        totalNs,
        conn: {
          noop: () => call("noop", []) as Promise<void>,
          increment: () => call("increment", []) as Promise<number>,
          getValue: () => call("getValue", []) as Promise<number>,
          echo,
          bornAt: () => call("bornAt", []) as Promise<number>,
          slow: (ms: number) => call("slow", [ms]) as Promise<void>,
          chain3: async () => echo(await echo((await call("getValue", [])) as number)),
          callback: (times: number) => call("callback", [times], (i) => i) as Promise<number>,
          listen: async (onMessage) => {
            onFan = onMessage;
          },
          fanOut: (message: string) => call("fanOut", [message]),
          async close() {
            await closeAndWait(socket);
          },
        },
      };
    },
    async httpBatch(baseUrl: string, instance: string, calls: number): Promise<number[]> {
      const body = JSON.stringify(Array.from({ length: calls }, () => ["getValue", []]));
      const response = await fetch(`${baseUrl}${path}${encodeURIComponent(instance)}`, { method: "POST", body });
      if (!response.ok) throw new Error(`floor: HTTP ${response.status} ${await response.text()}`);
      const results = (await response.json()) as [number, string?][];
      return results.map((r) => {
        if (r.length > 1) throw new Error(`floor: ${r[1]}`);
        return r[0];
      });
    },
  };
}

export const floor = floorContender("floor", "floor (hand-written JSON over a hibernatable WebSocket, /floor/<instance>)", "/floor/", true);

/**
 * A/A control: the floor again, the same client and the same route, on a Durable Object instance
 * of its own. It is not a contender: floor-twin ÷ floor is what identical code measures against
 * itself in this run, so it shows how often noise alone would "miss" a bound such as
 * dorpc ≤ 1.10 × floor, scenario by scenario.
 */
export const floorTwin = floorContender(
  "floor-twin",
  "the floor again on an instance of its own (A/A control: identical code, /floor/<instance>)",
  "/floor/",
);

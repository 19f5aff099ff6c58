/**
 * The floor: a minimal hand-written JSON request/reply client (see worker/floor-counter.ts).
 * Text `[id, method, args]` → `[id, result]`; a top-level Uint8Array goes as one binary message
 * (4-byte id + bytes). JSON cannot carry Map, Set, Date, BigInt, RegExp, undefined or cycles,
 * so those payloads are unsupported by design.
 */
import { closeAndWait, countingWebSocket, whenOpen, type WireCounters } from "../wire.js";
import { elapsedNs, type Connected, type Contender } from "./types.js";

interface Waiter {
  resolve(value: unknown): void;
  reject(reason: unknown): void;
}

/** A floor client for the Worker route `path` (/floor/ or /floor-accept/). */
export function floorContender(name: string, label: string, path: string): Contender {
  return {
    name,
    label,
    supports: (payload) => (payload.json || payload.bytes ? true : "JSON only (by design)"),
    async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
      const url = `${baseUrl.replace(/^http/, "ws")}${path}${encodeURIComponent(instance)}`;
      const WebSocketClass = countingWebSocket(counters);
      const start = process.hrtime.bigint();
      const socket = new WebSocketClass(url);
      socket.binaryType = "arraybuffer";
      const waiting = new Map<number, Waiter>();
      let nextId = 1;
      socket.addEventListener("message", (event: MessageEvent) => {
        const data = event.data as string | ArrayBuffer;
        if (typeof data === "string") {
          const reply = JSON.parse(data) as [number, unknown, string?];
          const waiter = waiting.get(reply[0]);
          if (!waiter) return;
          waiting.delete(reply[0]);
          if (reply.length > 2) waiter.reject(new Error(reply[2]));
          else waiter.resolve(reply[1] ?? undefined);
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
      const call = (method: string, args: unknown[]): Promise<unknown> =>
        new Promise((resolve, reject) => {
          const id = nextId++;
          waiting.set(id, { resolve, reject });
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
      return {
        handshakeNs: elapsedNs(start, socket.times.openedAt),
        totalNs,
        conn: {
          noop: () => call("noop", []) as Promise<void>,
          increment: () => call("increment", []) as Promise<number>,
          getValue: () => call("getValue", []) as Promise<number>,
          echo: <T>(value: T) => (value instanceof Uint8Array ? sendBytes(value) : call("echo", [value])) as Promise<T>,
          async close() {
            await closeAndWait(socket);
          },
        },
      };
    },
  };
}

export const floor = floorContender("floor", "floor (hand-written JSON over a hibernatable WebSocket, /floor/<instance>)", "/floor/");

/**
 * Cap'n Web 0.12: `newWebSocketRpcSession(socket)` over our own counting WebSocket, to the
 * CapnwebCounter Durable Object at /capnweb/<instance> (served by `newWorkersRpcResponse`).
 * Its own features where it has them: pipelined calls (a call's promise passed as the next
 * call's argument), functions as arguments, stored callbacks for fan-out, and HTTP batch
 * (`newHttpBatchRpcSession`, the same route).
 */
import { newHttpBatchRpcSession, newWebSocketRpcSession, type RpcStub } from "capnweb";
import { closeAndWait, countingWebSocket, whenOpen, type WireCounters } from "../wire.js";
import { elapsedNs, type Connected, type Contender, type CounterMethods } from "./types.js";

/** The server side's extra methods (worker/capnweb-counter.ts). */
interface CapnwebMethods extends CounterMethods {
  callback(fn: (i: number) => number, times: number): number;
  subscribe(listener: (message: string) => void): void;
  fanOut(message: string): number;
}

function url(baseUrl: string, instance: string): string {
  return `${baseUrl}/capnweb/${encodeURIComponent(instance)}`;
}

export const capnweb: Contender = {
  name: "capnweb",
  label: "Cap'n Web 0.12 (newWebSocketRpcSession, /capnweb/<instance>)",
  wire: "Cap'n Web's JSON messages (push, pull, resolve, release) in text frames; bytes as base64",
  pipeline: "pipelined",
  supports: () => true,
  feature: () => true,
  async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
    const WebSocketClass = countingWebSocket(counters);
    const start = process.hrtime.bigint();
    const socket = new WebSocketClass(url(baseUrl, instance).replace(/^http/, "ws"));
    await whenOpen(socket);
    const stub: RpcStub<CapnwebMethods> = newWebSocketRpcSession<CapnwebMethods>(socket as unknown as WebSocket);
    await stub.getValue();
    const totalNs = elapsedNs(start);
    return {
      handshakeNs: elapsedNs(start, socket.times.openedAt),
      totalNs,
      conn: {
        noop: () => stub.noop(),
        increment: () => stub.increment(),
        getValue: () => stub.getValue(),
        echo: <T>(value: T) => stub.echo(value) as Promise<T>,
        bornAt: () => stub.bornAt(),
        slow: (ms: number) => stub.slow(ms),
        // Pipelined: both echo calls leave before the getValue() reply arrives.
        chain3: () => stub.echo(stub.echo(stub.getValue())) as Promise<number>,
        callback: (times: number) => stub.callback((i: number) => i, times),
        listen: async (onMessage) => {
          await stub.subscribe((message: string) => onMessage(message));
        },
        fanOut: (message: string) => stub.fanOut(message),
        async close() {
          stub[Symbol.dispose]();
          await closeAndWait(socket);
        },
      },
    };
  },
  async httpBatch(baseUrl: string, instance: string, calls: number): Promise<number[]> {
    // Calls made before the first await go in one POST (capnweb sends the batch on the next tick).
    const stub = newHttpBatchRpcSession<CapnwebMethods>(url(baseUrl, instance));
    return Promise.all(Array.from({ length: calls }, () => stub.getValue()));
  },
};

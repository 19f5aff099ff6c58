/**
 * Cap'n Web 0.12: `newWebSocketRpcSession(socket)` over our own counting WebSocket, to the
 * CapnwebCounter Durable Object at /capnweb/<instance> (served by `newWorkersRpcResponse`).
 */
import { newWebSocketRpcSession, type RpcStub } from "capnweb";
import { closeAndWait, countingWebSocket, whenOpen, type WireCounters } from "../wire.js";
import { elapsedNs, type Connected, type Contender, type CounterMethods } from "./types.js";

export const capnweb: Contender = {
  name: "capnweb",
  label: "Cap'n Web 0.12 (newWebSocketRpcSession, /capnweb/<instance>)",
  supports: () => true,
  async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
    const url = `${baseUrl.replace(/^http/, "ws")}/capnweb/${encodeURIComponent(instance)}`;
    const WebSocketClass = countingWebSocket(counters);
    const start = process.hrtime.bigint();
    const socket = new WebSocketClass(url);
    await whenOpen(socket);
    const stub: RpcStub<CounterMethods> = newWebSocketRpcSession<CounterMethods>(socket as unknown as WebSocket);
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
        async close() {
          stub[Symbol.dispose]();
          await closeAndWait(socket);
        },
      },
    };
  },
};

/** dorpc through routeDORequest: `createRpcClient("COUNTER", instance, { baseUrl })`. */
import { createRpcClient, type RpcClientOptions } from "@dorpc/rpc";
import { closeAndWait, countingWebSocket, type WireCounters } from "../wire.js";
import { elapsedNs, type Connected, type Contender, type CounterMethods, type CountingSocket } from "./types.js";

/** A dorpc contender; `prefix` picks the Worker route (routeDORequest or the hand-written one). */
export function dorpcContender(name: string, label: string, prefix: string, binding = "COUNTER"): Contender {
  return {
    name,
    label,
    supports: () => true,
    async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
      let socket: CountingSocket | undefined;
      const WebSocketClass = countingWebSocket(counters, (created) => (socket = created));
      const options: RpcClientOptions = {
        baseUrl,
        prefix,
        WebSocket: WebSocketClass as unknown as NonNullable<RpcClientOptions["WebSocket"]>,
      };
      const start = process.hrtime.bigint();
      const client = createRpcClient<CounterMethods>(binding, instance, options);
      await client.getValue();
      const totalNs = elapsedNs(start);
      if (!socket) throw new Error("dorpc did not construct a WebSocket through the counting class");
      const opened = socket;
      return {
        handshakeNs: elapsedNs(start, opened.times.openedAt),
        totalNs,
        conn: {
          noop: () => client.noop(),
          increment: () => client.increment(),
          getValue: () => client.getValue(),
          echo: <T>(value: T) => client.echo(value) as Promise<T>,
          async close() {
            client[Symbol.dispose]();
            await closeAndWait(opened);
          },
        },
      };
    },
  };
}

export const dorpc = dorpcContender("dorpc", "dorpc (routeDORequest, /__rpc/COUNTER/<instance>)", "/__rpc");

/** The same Counter class served with `hibernation: false` (plain accepted sockets). */
export const dorpcLive = dorpcContender(
  "dorpc-live",
  "dorpc with hibernation: false (routeDORequest, /__rpc/COUNTER_LIVE/<instance>)",
  "/__rpc",
  "COUNTER_LIVE",
);

/** dorpc through routeDORequest: `createRpcClient("COUNTER", instance, { baseUrl })`. */
import { createRpcClient, httpTransport, type RpcClientOptions } from "@dorpc/rpc";
import { closeAndWait, countingWebSocket, type WireCounters } from "../wire.js";
import {
  elapsedNs,
  type Connected,
  type Contender,
  type CounterMethods,
  type CountingSocket,
  type Feature,
  type Support,
} from "./types.js";

/** The bench Counter's methods as dorpc's client sees them (bench/worker/counter.ts). */
interface DorpcCounter extends CounterMethods {
  callback(fn: (i: number) => number, times: number): number;
  fanOut(message: string): number;
}

/** Every feature scenario runs for dorpc. */
function support(_feature: Feature): Support {
  return true;
}

export interface DorpcContenderOptions {
  /** The Worker route prefix: routeDORequest's /__rpc or the hand-written /direct. */
  prefix?: string;
  binding?: string;
  /** The whole contender waits for a server feature (see `Contender.pending`). */
  pending?: string;
}

/** A dorpc contender for one binding and route. */
export function dorpcContender(name: string, label: string, options: DorpcContenderOptions = {}): Contender {
  const { prefix = "/__rpc", binding = "COUNTER", pending } = options;
  return {
    name,
    label,
    wire: "dorpc frames: one JSON text frame per microtask's calls (rich values as records), bytes in binary frames",
    pipeline: "pipelined",
    pending,
    supports: () => true,
    feature: support,
    httpBatch: (url, instance, calls) => httpBatch(url, instance, calls, binding),
    async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
      let socket: CountingSocket | undefined;
      const WebSocketClass = countingWebSocket(counters, (created) => (socket = created));
      // A fan-out listener's handler; the object calls `fan` on every other client.
      let onFan: ((message: string) => void) | undefined;
      const clientOptions: RpcClientOptions = {
        baseUrl,
        prefix,
        WebSocket: WebSocketClass as unknown as NonNullable<RpcClientOptions["WebSocket"]>,
        expose: { fan: (message: string) => onFan?.(message) },
      };
      const start = process.hrtime.bigint();
      const client = createRpcClient<DorpcCounter>(binding, instance, clientOptions);
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
          bornAt: () => client.bornAt(),
          slow: (ms: number) => client.slow(ms),
          // Pipelined: both echo calls leave in the same frame as getValue(), before its reply.
          chain3: () => client.echo(client.echo(client.getValue())) as Promise<number>,
          callback: (times: number) => client.callback((i: number) => i, times),
          listen: async (onMessage) => {
            onFan = onMessage;
          },
          fanOut: (message: string) => client.fanOut(message),
          async close() {
            client[Symbol.dispose]();
            await closeAndWait(opened);
          },
        },
      };
    },
  };
}

/** A one-shot client: `calls` getValue() calls made in one turn travel as one HTTP batch. */
async function httpBatch(baseUrl: string, instance: string, calls: number, binding: string): Promise<number[]> {
  const client = createRpcClient<DorpcCounter>(binding, instance, { baseUrl, transport: httpTransport() });
  try {
    return await Promise.all(Array.from({ length: calls }, () => client.getValue()));
  } finally {
    client[Symbol.dispose]();
  }
}

export const dorpc = dorpcContender("dorpc", "dorpc (routeDORequest, /__rpc/COUNTER/<instance>)");

/** The same Counter class served with `hibernation: false` (plain accepted sockets). */
export const dorpcLive = dorpcContender("dorpc-live", "dorpc with hibernation: false (routeDORequest, /__rpc/COUNTER_LIVE/<instance>)", {
  binding: "COUNTER_LIVE",
});

/** The same Counter class with `ordering: "sequential"` (the ordering scenario). */
export const dorpcSequential = dorpcContender(
  "dorpc-sequential",
  'dorpc with ordering: "sequential" (routeDORequest, /__rpc/COUNTER_SEQUENTIAL/<instance>)',
  { binding: "COUNTER_SEQUENTIAL" },
);

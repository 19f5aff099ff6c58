/** dorpc through routeDORequest: `createRpcClient("COUNTER", instance, { baseUrl })`. */
import { createRpcClient, type RpcClientOptions } from "@dorpc/rpc";
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

/**
 * The feature scenarios dorpc does not run yet, and why. When a feature lands: delete its line
 * here and fill the matching method in `conn` below (`chain3`, `callback`, `listen` + `fanOut`)
 * or `httpBatch` — the scenarios, the targets and the report are already wired to them.
 */
const NOT_BUILT: Partial<Record<Feature, string>> = {
  pipeline: "promise pipelining is not built yet (issue 10)",
  callback: "functions as arguments are not built yet (issue 10)",
  fanout: "server push / broadcast is not built yet (issue 11)",
  http: "the HTTP batch transport is not built yet (issue 16)",
};

function support(feature: Feature): Support {
  const reason = NOT_BUILT[feature];
  return reason === undefined ? true : { pending: reason };
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
    async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
      let socket: CountingSocket | undefined;
      const WebSocketClass = countingWebSocket(counters, (created) => (socket = created));
      const clientOptions: RpcClientOptions = {
        baseUrl,
        prefix,
        WebSocket: WebSocketClass as unknown as NonNullable<RpcClientOptions["WebSocket"]>,
      };
      const start = process.hrtime.bigint();
      const client = createRpcClient<CounterMethods>(binding, instance, clientOptions);
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
          async close() {
            client[Symbol.dispose]();
            await closeAndWait(opened);
          },
        },
      };
    },
  };
}

export const dorpc = dorpcContender("dorpc", "dorpc (routeDORequest, /__rpc/COUNTER/<instance>)");

/** The same Counter class served with `hibernation: false` (plain accepted sockets). */
export const dorpcLive = dorpcContender("dorpc-live", "dorpc with hibernation: false (routeDORequest, /__rpc/COUNTER_LIVE/<instance>)", {
  binding: "COUNTER_LIVE",
});

/** The same Counter class with `ordering: "concurrent"` (the ordering scenario). */
export const dorpcConcurrent = dorpcContender(
  "dorpc-concurrent",
  'dorpc with ordering: "concurrent" (routeDORequest, /__rpc/COUNTER_CONCURRENT/<instance>)',
  { binding: "COUNTER_CONCURRENT" },
);

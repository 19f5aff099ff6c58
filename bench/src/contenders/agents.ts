/**
 * The Agents SDK (agents 0.32): its Node-capable client `AgentClient` (PartySocket underneath) to
 * the AgentsCounter Agent at /agents/agents-counter/<instance>, calling its `@callable()` methods
 * with `client.call(method, args)` — what `client.stub.method(…)` does. The wire is JSON text: one
 * `{"type":"rpc",…}` frame per call each way, after the Agent's identity message on connect.
 *
 * JSON has no binary values, so byte payloads are unsupported by design; everything else is tried
 * (a Map comes back as {} and is then reported as a wrong result). Callables cannot call the
 * client back and are not reachable over HTTP (`agentFetch` reaches `onRequest`, not callables);
 * fan-out is the Agent's own `broadcast`.
 */
import { AgentClient } from "agents/client";
import { closeAndWait, countingWebSocket, type WireCounters } from "../wire.js";
import { elapsedNs, type Connected, type Contender, type CountingSocket } from "./types.js";

export const agents: Contender = {
  name: "agents",
  label: "Agents SDK 0.32 (AgentClient → Agent with @callable methods, /agents/agents-counter/<instance>)",
  wire: 'JSON text frames `{type: "rpc", id, method, args}` → `{type: "rpc", id, success, result, done}`, one per call each way; identity frame on connect; no binary values',
  pipeline: "awaited",
  supports: (payload) => (payload.bytes ? "JSON wire: no binary values (by design)" : true),
  feature(feature) {
    if (feature === "callback") return { unsupported: "a @callable cannot call the client back (no functions as arguments)" };
    if (feature === "http") return { unsupported: "@callable methods are WebSocket-only (agentFetch reaches onRequest, not callables)" };
    return true;
  },
  async connect(baseUrl: string, instance: string, counters: WireCounters): Promise<Connected> {
    let socket: CountingSocket | undefined;
    const WebSocketClass = countingWebSocket(counters, (created) => (socket = created));
    const start = process.hrtime.bigint();
    const client = new AgentClient({
      agent: "AgentsCounter",
      name: instance,
      host: baseUrl.replace(/^https?:\/\//, ""),
      protocol: baseUrl.startsWith("https") ? "wss" : "ws",
      WebSocket: WebSocketClass,
      // A bench connection that drops is an error to report, not something to paper over.
      maxRetries: 0,
    });
    const call = <T>(method: string, args: unknown[] = []) => client.call(method, args) as Promise<T>;
    await client.ready;
    await call("getValue");
    const totalNs = elapsedNs(start);
    if (!socket) throw new Error("agents: AgentClient did not construct a WebSocket through the counting class");
    const opened = socket;
    let onFan: ((message: string) => void) | undefined;
    client.addEventListener("message", (event: MessageEvent) => {
      if (!onFan || typeof event.data !== "string" || !event.data.startsWith('{"type":"bench_fan"')) return;
      onFan((JSON.parse(event.data) as { message: string }).message);
    });
    return {
      handshakeNs: elapsedNs(start, opened.times.openedAt),
      totalNs,
      conn: {
        noop: () => call<void>("noop"),
        increment: () => call<number>("increment"),
        getValue: () => call<number>("getValue"),
        echo: <T>(value: T) => call<T>("echo", [value]),
        bornAt: () => call<number>("bornAt"),
        slow: (ms: number) => call<void>("slow", [ms]),
        chain3: async () => call<number>("echo", [await call<number>("echo", [await call<number>("getValue")])]),
        listen: async (onMessage) => {
          onFan = onMessage;
        },
        fanOut: (message: string) => call("fanOut", [message]),
        async close() {
          client.close(1000, "bench done");
          await closeAndWait(opened);
        },
      },
    };
  },
};

/**
 * What is measured: every scenario of the plan, its kind and its contender set. How much of it
 * (samples per block, passes per round, rounds) is in sizes.ts.
 */
import type { Conn, ContenderSet, Feature } from "./contenders/index.js";
import { PAYLOADS, type Payload } from "./payloads.js";
import { featureScenarios } from "./scenarios-features.js";
import { type Sizes, sizesFor } from "./sizes.js";

export { FULL, QUICK, type Sizes } from "./sizes.js";

export type Group =
  | "counter"
  | "counter-fresh"
  | "counter-large"
  | "payload"
  | "connect"
  | "routing"
  | "inflight"
  | "clients"
  | "pipeline"
  | "callback"
  | "fanout"
  | "oneshot"
  | "ordering"
  | "guarantee";

interface Base {
  id: string;
  group: Group;
  label: string;
  /** Which contenders it compares (contenders/index.ts). */
  set: ContenderSet;
  /** Passes per round: in each, every contender runs one block (order alternating). */
  repeats: number;
  /** Runs only for contenders that support this feature; the others report why not. */
  feature?: Feature;
}

/** n sequential samples on one connection; a sample is `callsPerSample` calls made one after another. */
export interface SequenceScenario extends Base {
  kind: "sequence";
  samplesPerBlock: number;
  callsPerSample: number;
  /** Untimed calls on the block's connection before timing (0 = fresh connection). */
  warmupPerBlock: number;
  /** Untimed samples per contender before round 1 (after the correctness check). */
  warmupPerScenario: number;
  payload?: Payload;
  sample(conn: Conn, value: unknown): Promise<unknown>;
  /** Checked once per contender before timing (untimed): why the sample's result is wrong, or undefined. */
  check?(conn: Conn, value: unknown): Promise<string | undefined>;
  /**
   * A plain call that a ratio target compares the sample with, timed in the same block on the
   * same connection (as many samples, just before or just after the timed region, alternating
   * by pass), so both sides of the ratio see the same moment of the machine. Outside the timed
   * region: the block's CPU and wire counts stay the sample's own.
   */
  reference?: { label: string; sample(conn: Conn): Promise<unknown> };
}

/** k samples, each a new connection + first call (getValue), then closed untimed. */
export interface ConnectScenario extends Base {
  kind: "connect";
  samplesPerBlock: number;
  /** Each sample connects to a Durable Object instance never used before. */
  newInstance: boolean;
}

/** Closed loop: `inFlight` calls outstanding on one connection; `warmMs` untimed, then a `durationMs` window. */
export interface InflightScenario extends Base {
  kind: "inflight";
  inFlight: number;
  durationMs: number;
  warmMs: number;
}

/** `clientsPerDO` connections to each of `dos` instances, each a closed loop of one call at a time. */
export interface ClientsScenario extends Base {
  kind: "clients";
  clientsPerDO: number;
  dos: number;
  durationMs: number;
  warmMs: number;
}

/** One caller and `recipients` listeners on one object; a sample: fanOut() until the last listener has it. */
export interface FanoutScenario extends Base {
  kind: "fanout";
  recipients: number;
  samplesPerBlock: number;
}

/** A sample: a client that makes `calls` getValue() calls and leaves (new HTTP request, or new WebSocket). */
export interface OneshotScenario extends Base {
  kind: "oneshot";
  transport: "http" | "ws";
  calls: number;
  samplesPerBlock: number;
}

/** A sample: slow(slowMs) sent, then `fastCalls` getValue() calls right behind it; the fast calls are timed. */
export interface OrderingScenario extends Base {
  kind: "ordering";
  slowMs: number;
  fastCalls: number;
  samplesPerBlock: number;
}

export type Scenario =
  | SequenceScenario
  | ConnectScenario
  | InflightScenario
  | ClientsScenario
  | FanoutScenario
  | OneshotScenario
  | OrderingScenario;

export interface Plan {
  rounds: number;
  scenarios: Scenario[];
}

const increment = (conn: Conn) => conn.increment();
const getValue = (conn: Conn) => conn.getValue();
const incrementThenGet = async (conn: Conn) => {
  await conn.increment();
  return conn.getValue();
};

function latencyScenarios(sizes: Sizes): Scenario[] {
  const scenarios: Scenario[] = [];
  const trio = (group: Group, n: number, repeats: number, warmup: number) => {
    const suffix = warmup === 0 ? ", fresh connection" : "";
    const common = { group, set: "main" as const, repeats, warmupPerBlock: warmup, warmupPerScenario: 20, samplesPerBlock: n };
    const blocks = repeats > 1 ? ` (blocks of ${n})` : "";
    scenarios.push(
      {
        ...common,
        kind: "sequence",
        id: `${group}-increment`,
        label: `increment()${suffix}${blocks}`,
        callsPerSample: 1,
        sample: increment,
      },
      { ...common, kind: "sequence", id: `${group}-getValue`, label: `getValue()${suffix}${blocks}`, callsPerSample: 1, sample: getValue },
      {
        ...common,
        kind: "sequence",
        id: `${group}-incget`,
        label: `increment + getValue${suffix}${blocks}`,
        callsPerSample: 2,
        sample: incrementThenGet,
      },
    );
  };
  trio("counter", sizes.trio, sizes.trioRepeats, 20);
  trio("counter-fresh", sizes.trio, sizes.trioRepeats, 0);
  if (sizes.trioLarge) trio("counter-large", sizes.trioLarge, 1, 20);

  for (const payload of PAYLOADS) {
    const n = sizes.payload[payload.id] ?? sizes.payload.default;
    const big = payload.id.endsWith("-1m") || payload.id.endsWith("-10m");
    scenarios.push({
      kind: "sequence",
      id: `payload-${payload.id}`,
      group: "payload",
      set: "main",
      repeats: sizes.payloadRepeats,
      label: payload.label,
      samplesPerBlock: n,
      callsPerSample: 1,
      warmupPerScenario: big ? sizes.bigWarmup[0] : 20,
      warmupPerBlock: big ? sizes.bigWarmup[1] : 10,
      payload,
      sample: payload.id === "empty" ? (conn) => conn.noop() : (conn, value) => conn.echo(value),
    });
  }

  const connect = (id: string, group: Group, set: ContenderSet, label: string, n: number, repeats: number, newInstance: boolean) =>
    scenarios.push({ kind: "connect", id, group, set, label, samplesPerBlock: n, repeats, newInstance });
  connect("connect-fresh", "connect", "main", "fresh connection + first call (same instance)", sizes.connect, sizes.connectRepeats, false);
  connect("connect-new-do", "connect", "main", "fresh connection + first call (new instance)", sizes.connectNewInstance, 1, true);
  connect("routing-connect", "routing", "routing", "fresh connection + first call", sizes.connect, 1, false);
  scenarios.push({
    kind: "sequence",
    id: "routing-getValue",
    group: "routing",
    set: "routing",
    repeats: 1,
    label: `${sizes.routingGetValue} × getValue() on the open connection`,
    samplesPerBlock: sizes.routingGetValue,
    callsPerSample: 1,
    warmupPerBlock: 20,
    warmupPerScenario: 20,
    sample: getValue,
  });
  return scenarios;
}

function throughputScenarios(sizes: Sizes): Scenario[] {
  const scenarios: Scenario[] = [];
  for (const inFlight of [1, 4, 16, 64, 128]) {
    scenarios.push({
      kind: "inflight",
      id: `inflight-${inFlight}`,
      group: "inflight",
      set: "main",
      repeats: 1,
      label: `${inFlight} in flight, one connection`,
      inFlight,
      durationMs: sizes.inflightMs,
      warmMs: sizes.loopWarmMs,
    });
  }
  for (const dos of [1, 16]) {
    for (const clientsPerDO of sizes.clientsPerDO) {
      const connections = clientsPerDO * dos;
      scenarios.push({
        kind: "clients",
        id: `clients-${clientsPerDO}x${dos}`,
        group: "clients",
        set: "main",
        repeats: 1,
        label: `${clientsPerDO} client${clientsPerDO > 1 ? "s" : ""} per DO × ${dos} DO${dos > 1 ? "s" : ""} (${connections} connection${connections > 1 ? "s" : ""})`,
        clientsPerDO,
        dos,
        durationMs: sizes.clientsMs,
        warmMs: sizes.loopWarmMs,
      });
    }
  }
  return scenarios;
}

export function plan(mode: { quick: boolean; pinned: boolean; rounds?: number | null }): Plan {
  const sizes = sizesFor(mode);
  return {
    rounds: mode.rounds ?? sizes.rounds,
    scenarios: [...latencyScenarios(sizes), ...throughputScenarios(sizes), ...featureScenarios(sizes)],
  };
}

export const GROUP_TITLES: Record<Group, string> = {
  counter: "Counter calls (reused, warmed connection)",
  "counter-fresh": "Counter calls on a fresh connection (no warm-up on it)",
  "counter-large": "Counter calls, large samples",
  payload: "Payload matrix: echo(value) on a reused connection",
  connect: "Connection setup",
  routing: "Routing: routeDORequest vs a hand-written route (dorpc both sides)",
  inflight: "Throughput vs calls in flight (closed loop, one connection, increment())",
  clients: "Concurrent clients (closed loop, one call at a time per connection, increment())",
  pipeline: "Pipelining: three dependent calls, echo(echo(getValue()))",
  callback: "Callbacks: the object calls a function the client passed",
  fanout: "Fan-out: one call reaches every connected client (call → last recipient)",
  oneshot: "One-shot clients: a new HTTP request or a new WebSocket, N calls, gone",
  ordering: "Ordering: fast calls sent right behind a slow call (fast calls timed)",
  guarantee: "Cost of guarantees (dorpc only)",
};

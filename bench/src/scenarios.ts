/**
 * What is measured, and how much of it, per mode. Every number of samples here is per block
 * (one contender, one pass of one round); a scenario runs `repeats` passes per round, so a
 * contender's pooled n is samples × repeats × rounds. Latency scenarios of small calls are sized
 * for n ≥ 2,000 per contender (an honest p99) with small blocks; docs/performance.md lists the
 * sizes and the wall time they cost.
 */
import type { Conn, ContenderSet, Feature } from "./contenders/index.js";
import { PAYLOADS, type Payload } from "./payloads.js";
import { featureScenarios } from "./scenarios-features.js";

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

/** Every size in one place. */
export interface Sizes {
  rounds: number;
  /** The counter trio, samples per block and passes per round (reused and fresh connection). */
  trio: number;
  trioRepeats: number;
  /** The counter trio with large blocks (one pass), or none. */
  trioLarge: number | null;
  /** Samples per block by payload id; `default` for the small ones. */
  payload: Record<string, number> & { default: number };
  payloadRepeats: number;
  /** Warm-up for payloads of ≥ 1 MiB (per scenario, per block); smaller ones use 20 / 10. */
  bigWarmup: [number, number];
  connect: number;
  connectRepeats: number;
  connectNewInstance: number;
  routingGetValue: number;
  /** Closed-loop window and the untimed run-in before it. */
  inflightMs: number;
  clientsMs: number;
  loopWarmMs: number;
  /** Clients per DO, on 1 DO and on 16 DOs. */
  clientsPerDO: number[];
  /** Feature scenarios (scenarios-features.ts). */
  pipeline: number;
  pipelineRepeats: number;
  callbackTimes: number;
  callback: number;
  fanoutRecipients: number[];
  /** Fan-out samples per block, by recipients (blocks connect every listener, untimed). */
  fanout: (recipients: number) => number;
  oneshot: number;
  ordering: number;
  guarantee: number;
  guaranteeRepeats: number;
}

export const FULL: Sizes = {
  rounds: 5,
  trio: 100,
  trioRepeats: 4,
  trioLarge: 2_000,
  payload: { default: 500, "structs-1000": 400, "string-64k": 400, "u8-64k": 400, "string-1m": 40, "u8-1m": 40, "u8-10m": 6 },
  payloadRepeats: 1,
  bigWarmup: [2, 1],
  connect: 100,
  connectRepeats: 4,
  connectNewInstance: 40,
  routingGetValue: 1_000,
  inflightMs: 1_000,
  clientsMs: 1_000,
  loopWarmMs: 300,
  clientsPerDO: [1, 4, 16],
  pipeline: 100,
  pipelineRepeats: 4,
  callbackTimes: 100,
  callback: 40,
  fanoutRecipients: [1, 16, 128],
  fanout: (recipients) => (recipients >= 128 ? 40 : recipients >= 16 ? 100 : 400),
  oneshot: 40,
  ordering: 20,
  guarantee: 100,
  guaranteeRepeats: 4,
};

export const QUICK: Sizes = {
  rounds: 2,
  trio: 50,
  trioRepeats: 1,
  trioLarge: null,
  payload: { default: 20, "structs-1000": 10, "string-64k": 10, "u8-64k": 10, "string-1m": 2, "u8-1m": 2, "u8-10m": 1 },
  payloadRepeats: 1,
  bigWarmup: [0, 0],
  connect: 3,
  connectRepeats: 1,
  connectNewInstance: 2,
  routingGetValue: 100,
  inflightMs: 200,
  clientsMs: 200,
  loopWarmMs: 100,
  clientsPerDO: [1, 4],
  pipeline: 20,
  pipelineRepeats: 1,
  callbackTimes: 100,
  callback: 5,
  fanoutRecipients: [1, 16, 128],
  fanout: (recipients) => (recipients >= 128 ? 3 : 10),
  oneshot: 5,
  ordering: 5,
  guarantee: 20,
  guaranteeRepeats: 1,
};

/**
 * The pinned (quieter) mode's sizes: the full plan with every block twice as long (samples and
 * closed-loop windows), so each per-round value rests on more samples; rounds and passes stay.
 */
export function longerBlocks(sizes: Sizes): Sizes {
  const double = (n: number) => n * 2;
  return {
    ...sizes,
    trio: double(sizes.trio),
    trioLarge: sizes.trioLarge === null ? null : double(sizes.trioLarge),
    payload: Object.fromEntries(Object.entries(sizes.payload).map(([k, v]) => [k, double(v)])) as Sizes["payload"],
    connect: double(sizes.connect),
    connectNewInstance: double(sizes.connectNewInstance),
    routingGetValue: double(sizes.routingGetValue),
    inflightMs: double(sizes.inflightMs),
    clientsMs: double(sizes.clientsMs),
    pipeline: double(sizes.pipeline),
    callback: double(sizes.callback),
    fanout: (recipients) => double(sizes.fanout(recipients)),
    oneshot: double(sizes.oneshot),
    ordering: double(sizes.ordering),
    guarantee: double(sizes.guarantee),
  };
}

export function sizesFor(mode: { quick: boolean; pinned: boolean }): Sizes {
  if (mode.quick) return QUICK;
  return mode.pinned ? longerBlocks(FULL) : FULL;
}

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

export function plan(mode: { quick: boolean; pinned: boolean }): Plan {
  const sizes = sizesFor(mode);
  return { rounds: sizes.rounds, scenarios: [...latencyScenarios(sizes), ...throughputScenarios(sizes), ...featureScenarios(sizes)] };
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

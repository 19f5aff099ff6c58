/**
 * What is measured, and how much of it, in quick and full mode. Sizes are chosen so that a full
 * run stays near 20 minutes on a 2-core machine (documented in docs/performance.md); every
 * number of samples here is per block (one contender, one round).
 */
import type { Conn } from "./contenders/index.js";
import { PAYLOADS, type Payload } from "./payloads.js";

export type Group = "counter" | "counter-fresh" | "counter-large" | "payload" | "connect" | "routing" | "inflight" | "clients";

interface Base {
  id: string;
  group: Group;
  label: string;
  /** Which contender set: the main three or dorpc vs dorpc behind a hand-written route. */
  set: "main" | "routing";
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

export type Scenario = SequenceScenario | ConnectScenario | InflightScenario | ClientsScenario;

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

/** Every size in one place. Full: ~20 minutes on 2 cores. Quick: a smoke test under 2 minutes. */
export interface Sizes {
  rounds: number;
  /** The counter trio at n = 100 (reused and fresh connection). */
  trio: number;
  /** The counter trio with large samples: increment and getValue per block, pairs = half. */
  trioLarge: number | null;
  /** Samples per block by payload id; `default` for the small ones. */
  payload: Record<string, number> & { default: number };
  /** Warm-up for payloads of ≥ 1 MiB (per scenario, per block); smaller ones use 20 / 10. */
  bigWarmup: [number, number];
  connect: number;
  connectNewInstance: number;
  routingGetValue: number;
  /** Closed-loop window and the untimed run-in before it. */
  inflightMs: number;
  clientsMs: number;
  loopWarmMs: number;
  /** Clients per DO, on 1 DO and on 16 DOs. */
  clientsPerDO: number[];
}

export const FULL: Sizes = {
  rounds: 5,
  trio: 100,
  trioLarge: 2_000,
  payload: { default: 500, "structs-1000": 150, "string-64k": 150, "u8-64k": 150, "string-1m": 20, "u8-1m": 20, "u8-10m": 4 },
  bigWarmup: [2, 1],
  connect: 30,
  connectNewInstance: 15,
  routingGetValue: 1_000,
  inflightMs: 1_000,
  clientsMs: 1_000,
  loopWarmMs: 300,
  clientsPerDO: [1, 4, 16],
};

export const QUICK: Sizes = {
  rounds: 2,
  trio: 100,
  trioLarge: null,
  payload: { default: 20, "structs-1000": 10, "string-64k": 10, "u8-64k": 10, "string-1m": 2, "u8-1m": 2, "u8-10m": 1 },
  bigWarmup: [0, 0],
  connect: 3,
  connectNewInstance: 2,
  routingGetValue: 100,
  inflightMs: 200,
  clientsMs: 200,
  loopWarmMs: 100,
  clientsPerDO: [1, 4],
};

export function plan(quick: boolean): Plan {
  const sizes = quick ? QUICK : FULL;
  const scenarios: Scenario[] = [];
  const trio = (group: Group, n: number, warmup: number) => {
    const suffix = warmup === 0 ? ", fresh connection" : "";
    const common = { group, set: "main" as const, warmupPerBlock: warmup, warmupPerScenario: 20 };
    scenarios.push(
      {
        ...common,
        kind: "sequence",
        id: `${group}-increment`,
        label: `${n} × increment()${suffix}`,
        samplesPerBlock: n,
        callsPerSample: 1,
        sample: increment,
      },
      {
        ...common,
        kind: "sequence",
        id: `${group}-getValue`,
        label: `${n} × getValue()${suffix}`,
        samplesPerBlock: n,
        callsPerSample: 1,
        sample: getValue,
      },
      {
        ...common,
        kind: "sequence",
        id: `${group}-incget`,
        label: `${n / 2} × (increment + getValue)${suffix}`,
        samplesPerBlock: n / 2,
        callsPerSample: 2,
        sample: incrementThenGet,
      },
    );
  };
  trio("counter", sizes.trio, 20);
  trio("counter-fresh", sizes.trio, 0);
  if (sizes.trioLarge) trio("counter-large", sizes.trioLarge, 20);

  for (const payload of PAYLOADS) {
    const n = sizes.payload[payload.id] ?? sizes.payload.default;
    const big = payload.id.endsWith("-1m") || payload.id.endsWith("-10m");
    scenarios.push({
      kind: "sequence",
      id: `payload-${payload.id}`,
      group: "payload",
      set: "main",
      label: payload.label,
      samplesPerBlock: n,
      callsPerSample: 1,
      warmupPerScenario: big ? sizes.bigWarmup[0] : 20,
      warmupPerBlock: big ? sizes.bigWarmup[1] : 10,
      payload,
      sample: payload.id === "empty" ? (conn) => conn.noop() : (conn, value) => conn.echo(value),
    });
  }

  scenarios.push(
    {
      kind: "connect",
      id: "connect-fresh",
      group: "connect",
      set: "main",
      label: "fresh connection + first call (same instance)",
      samplesPerBlock: sizes.connect,
      newInstance: false,
    },
    {
      kind: "connect",
      id: "connect-new-do",
      group: "connect",
      set: "main",
      label: "fresh connection + first call (new instance)",
      samplesPerBlock: sizes.connectNewInstance,
      newInstance: true,
    },
    {
      kind: "connect",
      id: "routing-connect",
      group: "routing",
      set: "routing",
      label: "fresh connection + first call",
      samplesPerBlock: sizes.connect,
      newInstance: false,
    },
    {
      kind: "sequence",
      id: "routing-getValue",
      group: "routing",
      set: "routing",
      label: `${sizes.routingGetValue} × getValue() on the open connection`,
      samplesPerBlock: sizes.routingGetValue,
      callsPerSample: 1,
      warmupPerBlock: 20,
      warmupPerScenario: 20,
      sample: getValue,
    },
  );

  for (const inFlight of [1, 4, 16, 64, 128]) {
    scenarios.push({
      kind: "inflight",
      id: `inflight-${inFlight}`,
      group: "inflight",
      set: "main",
      label: `${inFlight} in flight, one connection`,
      inFlight,
      durationMs: sizes.inflightMs,
      warmMs: sizes.loopWarmMs,
    });
  }
  for (const dos of [1, 16]) {
    for (const clientsPerDO of sizes.clientsPerDO) {
      scenarios.push({
        kind: "clients",
        id: `clients-${clientsPerDO}x${dos}`,
        group: "clients",
        set: "main",
        label: `${clientsPerDO} client${clientsPerDO > 1 ? "s" : ""} per DO × ${dos} DO${dos > 1 ? "s" : ""} (${clientsPerDO * dos} connection${clientsPerDO * dos > 1 ? "s" : ""})`,
        clientsPerDO,
        dos,
        durationMs: sizes.clientsMs,
        warmMs: sizes.loopWarmMs,
      });
    }
  }
  return { rounds: sizes.rounds, scenarios };
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
};

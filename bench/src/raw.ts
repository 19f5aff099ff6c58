/** The raw result of one run, as the run file hands it to the report (and as stored in JSON). */
import type { BundleRun } from "./bundle-size.js";
import type { Environment } from "./environment.js";
import type { IdleRun } from "./idle.js";
import type { Row } from "./measure.js";
import type { MicroRun } from "./micro.js";
import type { Group, Scenario } from "./scenarios.js";

export interface TypeSupport {
  contender: string;
  probe: string;
  label: string;
  result: "ok" | "wrong" | "error" | "unsupported";
  detail: string;
}

export interface ScenarioInfo {
  id: string;
  group: Group;
  kind: Scenario["kind"];
  set: string;
  label: string;
  repeats?: number;
  feature?: string;
  samplesPerBlock?: number;
  callsPerSample: number;
  warmupPerBlock?: number;
  payload?: { id: string; size: string };
  inFlight?: number;
  clientsPerDO?: number;
  dos?: number;
  durationMs?: number;
  warmMs?: number;
  newInstance?: boolean;
  recipients?: number;
  transport?: "http" | "ws";
  calls?: number;
  slowMs?: number;
  fastCalls?: number;
  /** The in-block reference call, when the scenario has one (its samples are each block's `refUs`). */
  reference?: string;
}

export interface RunMode {
  quick: boolean;
  /** Client and server CPU sets when pinned (quieter mode), else null. */
  pinned: { client: string; server: string } | null;
  /** Set when the run was filtered (a partial run): what it was limited to. */
  partial: { scenarios: string[] | null; contenders: string[] | null; rounds?: number | null } | null;
}

/** What the global setup measured before wrangler dev started: nothing else was running then. */
export interface Extras {
  micro?: MicroRun;
  bundle?: BundleRun;
}

export interface RawRun extends Extras {
  complete: true;
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  mode?: RunMode;
  description: string;
  environment: Environment;
  loadBefore: [number, number, number];
  loadAfterMeasuring: [number, number, number];
  rounds: number;
  scenarios: ScenarioInfo[];
  contenders: { name: string; label: string; wire?: string; pending?: string }[];
  typeSupport: TypeSupport[];
  rows: Row[];
  /** Whether workerd's CPU was readable (/proc): server CPU columns are empty otherwise. */
  serverCpu?: boolean;
  idle?: IdleRun;
}

export function scenarioInfo(s: Scenario): ScenarioInfo {
  return {
    id: s.id,
    group: s.group,
    kind: s.kind,
    set: s.set,
    label: s.label,
    repeats: s.repeats,
    feature: s.feature,
    samplesPerBlock: "samplesPerBlock" in s ? s.samplesPerBlock : undefined,
    callsPerSample: s.kind === "sequence" ? s.callsPerSample : s.kind === "oneshot" ? s.calls : 1,
    warmupPerBlock: s.kind === "sequence" ? s.warmupPerBlock : undefined,
    payload: s.kind === "sequence" && s.payload ? { id: s.payload.id, size: s.payload.size } : undefined,
    inFlight: s.kind === "inflight" ? s.inFlight : undefined,
    clientsPerDO: s.kind === "clients" ? s.clientsPerDO : undefined,
    dos: s.kind === "clients" ? s.dos : undefined,
    durationMs: s.kind === "inflight" || s.kind === "clients" ? s.durationMs : undefined,
    warmMs: s.kind === "inflight" || s.kind === "clients" ? s.warmMs : undefined,
    newInstance: s.kind === "connect" ? s.newInstance : undefined,
    recipients: s.kind === "fanout" ? s.recipients : undefined,
    transport: s.kind === "oneshot" ? s.transport : undefined,
    calls: s.kind === "oneshot" ? s.calls : undefined,
    slowMs: s.kind === "ordering" ? s.slowMs : undefined,
    fastCalls: s.kind === "ordering" ? s.fastCalls : undefined,
    reference: s.kind === "sequence" ? s.reference?.label : undefined,
  };
}

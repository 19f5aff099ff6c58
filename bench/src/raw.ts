/** The raw result of one run, as the run file hands it to the report (and as stored in JSON). */
import type { Environment } from "./environment.js";
import type { Row } from "./measure.js";
import type { Group } from "./scenarios.js";

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
  kind: "sequence" | "connect" | "inflight" | "clients";
  set: "main" | "routing";
  label: string;
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
}

export interface RawRun {
  complete: true;
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  description: string;
  environment: Environment;
  loadBefore: [number, number, number];
  loadAfterMeasuring: [number, number, number];
  rounds: number;
  scenarios: ScenarioInfo[];
  contenders: { name: string; label: string }[];
  typeSupport: TypeSupport[];
  rows: Row[];
}

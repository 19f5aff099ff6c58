/**
 * The contenders, and which of them each kind of scenario compares. Adding one = one file
 * implementing `Contender` + one entry here. The order of a set is the A/B/C… order of the
 * interleaving (ABC…, …CBA, ABC…, …).
 */
import { agents } from "./agents.js";
import { capnweb } from "./capnweb.js";
import { dorpc, dorpcLive, dorpcSequential } from "./dorpc.js";
import { dorpcDirect } from "./dorpc-direct.js";
import { dorpcAtMostOnce, dorpcSchema } from "./dorpc-guarantees.js";
import { floor, floorTwin } from "./floor.js";
import { floorAccept } from "./floor-accept.js";
import type { Contender } from "./types.js";

/**
 * Which contenders a scenario compares:
 *  - main: every latency, throughput and cost scenario. Targets are dorpc ÷ floor, ÷ capnweb and
 *    ÷ agents; dorpc-at-most-once (the same Counter without the exactly-once record: what the
 *    record costs, scenario by scenario), dorpc-live (hibernation: false) and floor-accept (the
 *    floor on an accepted socket) are diagnostics (what the hibernation API costs); floor-twin
 *    (the floor again, its own instance) is the A/A control: what identical code measures
 *    against itself, the noise any floor ratio carries.
 *  - features: pipelining, callbacks, fan-out, HTTP one-shot (dorpc's side may be pending).
 *  - ordering: a slow call then fast calls; dorpc with its default concurrent ordering and with
 *    sequential ordering.
 *  - routing: the same dorpc object behind routeDORequest and behind a hand-written route.
 *  - exactly-once / schema: dorpc-only cost-of-guarantee ratios.
 */
export const SETS = {
  main: [dorpc, dorpcAtMostOnce, dorpcLive, capnweb, agents, floor, floorAccept, floorTwin],
  features: [dorpc, capnweb, agents, floor],
  ordering: [dorpc, dorpcSequential, capnweb, agents, floor],
  routing: [dorpc, dorpcDirect],
  "exactly-once": [dorpc, dorpcAtMostOnce],
  schema: [dorpc, dorpcSchema],
} as const satisfies Record<string, readonly Contender[]>;

export type ContenderSet = keyof typeof SETS;

/** Every contender once, in a stable order. */
export const ALL: readonly Contender[] = [...new Set(Object.values(SETS).flat())];

export type { Conn, Connected, Contender, Feature, Support } from "./types.js";

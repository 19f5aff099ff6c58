/**
 * The contenders. Adding one = one file implementing `Contender` + one entry here. The order of
 * MAIN is the A/B/C/D order of the interleaving (ABCD, DCBA, ABCD, …).
 */
import { capnweb } from "./capnweb.js";
import { dorpc, dorpcLive } from "./dorpc.js";
import { dorpcDirect } from "./dorpc-direct.js";
import { floor } from "./floor.js";
import { floorAccept } from "./floor-accept.js";
import type { Contender } from "./types.js";

/**
 * Compared in every scenario. Ratios are dorpc ÷ capnweb and dorpc ÷ floor in the tables; the
 * targets also give dorpc-live (hibernation: false) ÷ capnweb and ÷ floor-accept, its like-for-like
 * floor. floor-accept alone is a diagnostic: what the hibernation API costs.
 */
export const MAIN: readonly Contender[] = [dorpc, dorpcLive, capnweb, floor, floorAccept];

/** Only in the routing scenarios: the same dorpc Durable Object behind a hand-written route. */
export const ROUTING: readonly Contender[] = [dorpc, dorpcDirect];

export type { Conn, Connected, Contender } from "./types.js";

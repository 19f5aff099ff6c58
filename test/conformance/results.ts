/**
 * What a conformance run records and what it must keep: the columns of docs/conformance.md, the
 * committed baseline (the cases each dorpc column passed when it was last generated), and the
 * shape tests leave in `task.meta` for the generator (generate.ts) to collect.
 */
import baseline from "./baseline.json" with { type: "json" };
import type { Outcome } from "./battery.js";

/** Columns, in table order. The dorpc columns are gated by the baseline; the others are for comparison. */
export const COLUMNS = {
  codec: "dorpc (codec)",
  connection: "dorpc (connection)",
  native: "structuredClone (Node)",
  capnweb: "Cap'n Web",
  ungap: "@ungap/structured-clone",
} as const;

export type Column = keyof typeof COLUMNS;

/** One case's outcome for one column, or a whole battery's outcomes for one column. */
export interface ConformanceMeta {
  column: Column;
  description?: string;
  outcome?: Outcome;
  outcomes?: Record<string, Outcome>;
}

/** Cases that passed in the committed baseline: a case listed here that fails is a regression. */
export function baselinePasses(column: "codec" | "connection"): ReadonlySet<string> {
  return new Set((baseline as Record<string, string[]>)[column] ?? []);
}

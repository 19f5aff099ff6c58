/**
 * Slots for what dorpc's guarantees cost: the same calls on a Counter that keeps an exactly-once
 * record (issue 12) and on one that validates its argument with a 3-field schema (issue 15).
 * Both are dorpc-only ratios against the plain `dorpc` contender in the same rounds.
 *
 * A slot whose server side does not exist yet is `pending` and never connects. To fill one: add the Durable
 * Object class in bench/worker/counter.ts (e.g. `CounterExactlyOnce extends Counter` with the
 * option switched on, or `CounterSchema` whose `echo` declares the schema of `SMALL_RECORD` in
 * ../scenarios-features.ts), its binding and migration in the root wrangler.toml and env.d.ts, then
 * replace `pending` below by `binding`.
 */
import { dorpcContender } from "./dorpc.js";

export const dorpcExactlyOnce = dorpcContender("dorpc-exactly-once", "dorpc with an exactly-once record per call (issue 12)", {
  pending: "the exactly-once record is not built yet (issue 12)",
});

/** CounterSchema (bench/worker/counter-schema.ts): echo validates its argument with Valibot. */
export const dorpcSchema = dorpcContender("dorpc-schema", "dorpc with a 3-field argument schema on echo (issue 15)", {
  binding: "COUNTER_SCHEMA",
});

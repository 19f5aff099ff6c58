/**
 * What dorpc's guarantees cost, as dorpc-only ratios in the same rounds: the plain `dorpc`
 * contender (its Counter keeps the exactly-once record, the default) against the same Counter
 * without it (`exactlyOnce: false`, issue 12); and a Counter whose `echo` validates its argument
 * with a 3-field schema against the plain one (issue 15).
 */
import { dorpcContender } from "./dorpc.js";

export const dorpcAtMostOnce = dorpcContender(
  "dorpc-at-most-once",
  "dorpc without the exactly-once record (exactlyOnce: false, issue 12)",
  {
    binding: "COUNTER_AT_MOST_ONCE",
  },
);

export const dorpcSchema = dorpcContender("dorpc-schema", "dorpc with a 3-field argument schema on echo (issue 15)", {
  binding: "COUNTER_SCHEMA",
});

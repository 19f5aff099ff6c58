/**
 * The feature scenarios (issues 10, 11, 12, 13, 15, 16): pipelining, callbacks, fan-out, HTTP
 * one-shots, ordering and the cost of guarantees. Each contender that has the feature runs it; a
 * contender that lacks it reports why (unsupported). dorpc's hooks are in contenders/dorpc.ts and
 * contenders/dorpc-guarantees.ts.
 */
import type { Conn } from "./contenders/index.js";
import { callbackSum } from "./contenders/types.js";
import type { Scenario } from "./scenarios.js";
import type { Sizes } from "./sizes.js";

/** The small call of the schema slot: a 3-field record, echoed (issue 15's "3-field object"). */
export const SMALL_RECORD = { id: 42, name: "Ada Lovelace", active: true } as const;

export function featureScenarios(sizes: Sizes): Scenario[] {
  const scenarios: Scenario[] = [];
  scenarios.push({
    kind: "sequence",
    id: "pipeline-chain3",
    group: "pipeline",
    set: "features",
    feature: "pipeline",
    repeats: sizes.pipelineRepeats,
    label: "echo(echo(getValue())): pipelined where the library can, else three awaited calls",
    samplesPerBlock: sizes.pipeline,
    callsPerSample: 3,
    warmupPerBlock: 10,
    warmupPerScenario: 20,
    sample: (conn: Conn) => conn.chain3!(),
    // The target compares the chain with one plain call timed in the same blocks (a getValue()
    // block of the main set runs minutes away, when the machine may be in another state).
    reference: { label: "getValue()", sample: (conn: Conn) => conn.getValue() },
    async check(conn: Conn) {
      const [value, chained] = [await conn.getValue(), await conn.chain3!()];
      return chained === value ? undefined : `wrong result: chain3() gave ${String(chained)}, getValue() ${value}`;
    },
  });
  const times = sizes.callbackTimes;
  scenarios.push({
    kind: "sequence",
    id: `callback-${times}`,
    group: "callback",
    set: "features",
    feature: "callback",
    repeats: 1,
    label: `one call in which the object calls the client's function ${times} times`,
    samplesPerBlock: sizes.callback,
    callsPerSample: 1,
    warmupPerBlock: 2,
    warmupPerScenario: 3,
    sample: (conn: Conn) => conn.callback!(times),
    async check(conn: Conn) {
      const sum = await conn.callback!(times);
      return sum === callbackSum(times) ? undefined : `wrong result: callback(${times}) gave ${sum}, expected ${callbackSum(times)}`;
    },
  });
  for (const recipients of sizes.fanoutRecipients) {
    scenarios.push({
      kind: "fanout",
      id: `fanout-${recipients}`,
      group: "fanout",
      set: "features",
      feature: "fanout",
      repeats: 1,
      label: `${recipients} recipient${recipients > 1 ? "s" : ""}`,
      recipients,
      samplesPerBlock: sizes.fanout(recipients),
    });
  }
  for (const transport of ["http", "ws"] as const) {
    for (const calls of [1, 10]) {
      scenarios.push({
        kind: "oneshot",
        id: `oneshot-${transport}-${calls}`,
        group: "oneshot",
        set: "features",
        // A new WebSocket + calls is what every contender can do; only the HTTP variant needs the feature.
        feature: transport === "http" ? "http" : undefined,
        repeats: 1,
        label: `${transport === "http" ? "new HTTP request" : "new WebSocket (connect, calls, leave)"} carrying ${calls} getValue() call${calls > 1 ? "s" : ""}`,
        transport,
        calls,
        samplesPerBlock: sizes.oneshot,
      });
    }
  }
  scenarios.push({
    kind: "ordering",
    id: "ordering-slow-then-fast",
    group: "ordering",
    set: "ordering",
    repeats: 1,
    label: "slow(50) then 3 × getValue() on the same connection",
    slowMs: 50,
    fastCalls: 3,
    samplesPerBlock: sizes.ordering,
  });
  scenarios.push(
    {
      kind: "sequence",
      id: "guarantee-exactly-once",
      group: "guarantee",
      set: "exactly-once",
      repeats: sizes.guaranteeRepeats,
      label: "increment() without / with an exactly-once record",
      samplesPerBlock: sizes.guarantee,
      callsPerSample: 1,
      warmupPerBlock: 20,
      warmupPerScenario: 20,
      sample: (conn: Conn) => conn.increment(),
    },
    {
      kind: "sequence",
      id: "guarantee-schema",
      group: "guarantee",
      set: "schema",
      repeats: sizes.guaranteeRepeats,
      label: "echo({ id, name, active }) without / with a 3-field argument schema",
      samplesPerBlock: sizes.guarantee,
      callsPerSample: 1,
      warmupPerBlock: 20,
      warmupPerScenario: 20,
      sample: (conn: Conn) => conn.echo(SMALL_RECORD),
    },
  );
  return scenarios;
}

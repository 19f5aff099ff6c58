/**
 * How much is measured, per mode. Every number of samples here is per block (one contender, one
 * pass of one round); a scenario runs `repeats` passes per round, so a contender's pooled n is
 * samples × repeats × rounds. Latency scenarios of small calls are sized for n ≥ 2,000 per
 * contender (an honest p99) with small blocks; big payloads cannot be (2,000 echoes of 10 MiB
 * take hours) and their p99 is reported as not judged. docs/performance.md lists the sizes and
 * the wall time they cost.
 */

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

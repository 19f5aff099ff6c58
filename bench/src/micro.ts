/**
 * Codec micro-benchmark: one encode + decode of each payload in this process (Node), for JSON
 * (the lower bound for JSON-shaped values), dorpc's codec and @ungap/structured-clone's record
 * form. No network, no workerd: a codec change shows here without a full bench run.
 *
 * Built to judge a 10 % change: every codec of a payload runs in `batches` independent tinybench
 * batches (each with its own warm-up), interleaved codec by codec and alternating the order per
 * batch, so drift hits every codec alike. Each batch gives a median time per operation; the
 * result is the median of the batch medians with their [min–max] spread, and dorpc ÷ JSON is
 * formed per batch (same batch = adjacent in time) and summarised the same way. A change smaller
 * than the spread is noise.
 */
import { decode, encode } from "@dorpc/rpc";
import { deserialize, serialize } from "@ungap/structured-clone";
import { Bench } from "tinybench";
import { PAYLOADS } from "./payloads.js";
import { relativeRange, spread, type Spread } from "./stats.js";

export interface MicroSettings {
  batches: number;
  /** Measuring time per codec per batch, ms (after its own warm-up of a quarter of that). */
  batchMs: number;
  payloads: string[];
}

export const MICRO_FULL: MicroSettings = {
  batches: 10,
  batchMs: 250,
  payloads: ["small-string", "nested-object", "structs-1000", "string-64k", "u8-1k", "u8-64k", "u8-1m", "rich", "rich-plain", "cyclic"],
};
export const MICRO_QUICK: MicroSettings = { batches: 3, batchMs: 40, payloads: ["small-string", "nested-object", "u8-1k"] };

export interface MicroRow {
  payload: string;
  label: string;
  codec: "JSON" | "dorpc" | "ungap";
  /** Median per-operation time of each batch, ns. */
  batchMediansNs: number[];
  /** Median and range of those. */
  ns: Spread;
  /** (max − min) ÷ median of the batch medians. */
  relativeSpread: number | null;
  /** Operations timed over all batches. */
  samples: number;
}

export interface MicroRun {
  settings: MicroSettings;
  node: string;
  rows: MicroRow[];
  /** dorpc ÷ JSON per batch, by payload (JSON-shaped payloads only). */
  dorpcVsJson: { payload: string; ratio: Spread }[];
}

type Codec = MicroRow["codec"];

function codecs(value: unknown, json: boolean, bytes: boolean): [Codec, () => unknown][] {
  const out: [Codec, () => unknown][] = [];
  if (json) out.push(["JSON", () => JSON.parse(JSON.stringify(value))]);
  out.push(["dorpc", () => decode(encode(value))]);
  if (!bytes) out.push(["ungap", () => deserialize(JSON.parse(JSON.stringify(serialize(value))))]);
  return out;
}

export async function runMicro(settings: MicroSettings, progress: (line: string) => void = () => {}): Promise<MicroRun> {
  const rows: MicroRow[] = [];
  const dorpcVsJson: MicroRun["dorpcVsJson"] = [];
  for (const payload of PAYLOADS.filter((p) => settings.payloads.includes(p.id))) {
    const value = payload.make();
    const tasks = codecs(value, payload.json, payload.bytes);
    const medians = new Map<Codec, number[]>(tasks.map(([name]) => [name, []]));
    const counts = new Map<Codec, number>(tasks.map(([name]) => [name, 0]));
    for (let batch = 0; batch < settings.batches; batch++) {
      const order = batch % 2 === 0 ? tasks : [...tasks].reverse();
      for (const [name, fn] of order) {
        const bench = new Bench({ time: settings.batchMs, warmup: true, warmupTime: settings.batchMs / 4 });
        bench.add(name, fn);
        await bench.run();
        const latency = (bench.tasks[0]?.result as { latency?: { p50?: number; samplesCount?: number } } | undefined)?.latency;
        if (latency?.p50 === undefined) throw new Error(`micro: ${payload.id} ${name} produced no result`);
        medians.get(name)!.push(latency.p50 * 1e6);
        counts.set(name, counts.get(name)! + (latency.samplesCount ?? 0));
      }
    }
    for (const [name] of tasks) {
      const values = medians.get(name)!;
      rows.push({
        payload: payload.id,
        label: payload.label,
        codec: name,
        batchMediansNs: values,
        ns: spread(values)!,
        relativeSpread: relativeRange(values),
        samples: counts.get(name)!,
      });
    }
    const json = medians.get("JSON");
    const dorpc = medians.get("dorpc")!;
    if (json) dorpcVsJson.push({ payload: payload.id, ratio: spread(dorpc.map((d, i) => d / json[i]!))! });
    progress(`micro · ${payload.label} done`);
  }
  return { settings, node: process.version, rows, dorpcVsJson };
}

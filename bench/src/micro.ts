/**
 * Codec micro-benchmark: one encode + decode of each payload in this process (Node), for dorpc's
 * codec and its references: JSON (the lower bound for JSON-shaped values), Node's V8 serializer
 * (`v8.serialize` / `v8.deserialize`, every payload) and @ungap/structured-clone's record form.
 * No network, no workerd: a codec change shows here without a full bench run.
 *
 * Built to judge a 10 % change. Every codec of a payload runs in `batches` independent tinybench
 * batches (each with its own warm-up), interleaved codec by codec, alternating the order per
 * batch. Each batch gives a median time per operation. A codec's result is the median of its batch
 * medians with a distribution-free 95 % confidence interval. Because machine speed drifts
 * (other load, frequency), the figure to compare across commits is the ratio to a reference in
 * the same batch — dorpc ÷ V8 (every payload) and dorpc ÷ JSON — formed per batch, summarised the
 * same way: when two commits' intervals do not overlap, the change is real.
 */
import { deserialize as v8Deserialize, serialize as v8Serialize } from "node:v8";
import { decode, encode } from "@dorpc/rpc";
import { deserialize, serialize } from "@ungap/structured-clone";
import { Bench } from "tinybench";
import { PAYLOADS } from "./payloads.js";
import { type MedianCI, medianCI } from "./stats.js";

export interface MicroSettings {
  batches: number;
  /** Measuring time per codec per batch, ms (after its own warm-up of a quarter of that). */
  batchMs: number;
  payloads: string[];
}

export const MICRO_FULL: MicroSettings = {
  batches: 20,
  batchMs: 100,
  payloads: ["small-string", "nested-object", "structs-1000", "string-64k", "u8-1k", "u8-64k", "u8-1m", "rich", "rich-plain", "cyclic"],
};
export const MICRO_QUICK: MicroSettings = { batches: 6, batchMs: 30, payloads: ["small-string", "nested-object", "u8-1k"] };

export type Codec = "dorpc" | "JSON" | "v8" | "ungap";

export interface MicroRow {
  payload: string;
  label: string;
  codec: Codec;
  /** Median per-operation time of each batch, ns. */
  batchMediansNs: number[];
  /** Median of those with its 95 % confidence interval, ns. */
  ns: MedianCI;
  /** Operations timed over all batches. */
  samples: number;
}

export interface MicroRun {
  settings: MicroSettings;
  node: string;
  rows: MicroRow[];
  /** dorpc ÷ reference, formed per batch, by payload. */
  ratios: { payload: string; versus: "JSON" | "v8"; ratio: MedianCI }[];
}

function codecs(value: unknown, json: boolean, bytes: boolean): [Codec, () => unknown][] {
  const out: [Codec, () => unknown][] = [["dorpc", () => decode(encode(value))]];
  if (json) out.push(["JSON", () => JSON.parse(JSON.stringify(value))]);
  out.push(["v8", () => v8Deserialize(v8Serialize(value))]);
  if (!bytes) out.push(["ungap", () => deserialize(JSON.parse(JSON.stringify(serialize(value))))]);
  return out;
}

async function batchMedian(name: string, fn: () => unknown, ms: number): Promise<{ p50Ns: number; samples: number }> {
  const bench = new Bench({ time: ms, warmup: true, warmupTime: ms / 4 });
  bench.add(name, fn);
  await bench.run();
  const latency = (bench.tasks[0]?.result as { latency?: { p50?: number; samplesCount?: number } } | undefined)?.latency;
  if (latency?.p50 === undefined) throw new Error(`micro: ${name} produced no result`);
  return { p50Ns: latency.p50 * 1e6, samples: latency.samplesCount ?? 0 };
}

export async function runMicro(settings: MicroSettings, progress: (line: string) => void = () => {}): Promise<MicroRun> {
  const rows: MicroRow[] = [];
  const ratios: MicroRun["ratios"] = [];
  for (const payload of PAYLOADS.filter((p) => settings.payloads.includes(p.id))) {
    const value = payload.make();
    const tasks = codecs(value, payload.json, payload.bytes);
    const medians = new Map<Codec, number[]>(tasks.map(([name]) => [name, []]));
    const counts = new Map<Codec, number>(tasks.map(([name]) => [name, 0]));
    for (let batch = 0; batch < settings.batches; batch++) {
      for (const [name, fn] of batch % 2 === 0 ? tasks : [...tasks].reverse()) {
        const { p50Ns, samples } = await batchMedian(`${payload.id} ${name}`, fn, settings.batchMs);
        medians.get(name)!.push(p50Ns);
        counts.set(name, counts.get(name)! + samples);
      }
    }
    for (const [name] of tasks) {
      const values = medians.get(name)!;
      rows.push({
        payload: payload.id,
        label: payload.label,
        codec: name,
        batchMediansNs: values,
        ns: medianCI(values)!,
        samples: counts.get(name)!,
      });
    }
    const dorpc = medians.get("dorpc")!;
    for (const versus of ["JSON", "v8"] as const) {
      const reference = medians.get(versus);
      if (reference) ratios.push({ payload: payload.id, versus, ratio: medianCI(dorpc.map((d, i) => d / reference[i]!))! });
    }
    progress(`micro · ${payload.label} done`);
  }
  return { settings, node: process.version, rows, ratios };
}

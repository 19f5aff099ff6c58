/**
 * Codec micro-benchmarks: one encode + decode of each payload, in this process (Node), for
 * JSON (the lower bound for JSON-shaped values), dorpc's codec and @ungap/structured-clone's
 * record form. No network, no workerd: a codec regression shows here without a full bench run.
 *
 * `npm run micro --workspace=bench` (prints a table; writes nothing). Numbers are per
 * operation, median of tinybench's samples, with the relative margin of error.
 */
import { decode, encode } from "@dorpc/rpc";
import { deserialize, serialize } from "@ungap/structured-clone";
import { Bench } from "tinybench";
import { PAYLOADS } from "../src/payloads.js";

const ids = new Set(["small-string", "nested-object", "structs-1000", "string-64k", "u8-64k", "u8-1m", "rich", "cyclic"]);
const rows: Record<string, string>[] = [];

for (const payload of PAYLOADS.filter((p) => ids.has(p.id))) {
  const value = payload.make();
  const bench = new Bench({ time: 300, warmup: true, warmupTime: 100 });
  if (payload.json) bench.add("JSON", () => JSON.parse(JSON.stringify(value)));
  bench.add("dorpc", () => decode(encode(value)));
  if (!payload.bytes) bench.add("ungap", () => deserialize(JSON.parse(JSON.stringify(serialize(value)))));
  await bench.run();
  const row: Record<string, string> = { payload: payload.label };
  for (const task of bench.tasks) {
    const result = task.result as { latency?: { p50?: number; rme?: number } } | undefined;
    const p50 = result?.latency?.p50;
    row[task.name] =
      p50 === undefined
        ? "–"
        : `${p50 < 1 ? (p50 * 1000).toFixed(1) + " µs" : p50.toFixed(2) + " ms"} ±${(result?.latency?.rme ?? 0).toFixed(1)}%`;
  }
  rows.push(row);
  process.stdout.write(`micro: ${payload.label} done\n`);
}
console.table(rows);

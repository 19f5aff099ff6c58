/**
 * `npm run micro --workspace=bench [-- --quick]`: the codec micro-benchmark on its own (src/micro.ts;
 * a full `npm run bench` runs the same thing and puts it in the log entry). Prints a table;
 * writes nothing.
 */
import { MICRO_FULL, MICRO_QUICK, runMicro } from "../src/micro.js";
import { fmtPct, fmtRatio } from "../src/report/format.js";

const quick = process.argv.includes("--quick");
const run = await runMicro(quick ? MICRO_QUICK : MICRO_FULL, (line) => process.stderr.write(`${line}\n`));
const us = (ns: number) => `${(ns / 1e3).toFixed(ns >= 1e4 ? 1 : 2)} µs`;
console.table(
  run.rows.map((r) => ({
    payload: r.payload,
    codec: r.codec,
    "median of batch medians": us(r.ns.median),
    "[min–max]": `${us(r.ns.min)}–${us(r.ns.max)}`,
    spread: fmtPct(r.relativeSpread),
    "dorpc ÷ JSON": r.codec === "dorpc" ? fmtRatio(run.dorpcVsJson.find((d) => d.payload === r.payload)?.ratio) : "",
  })),
);
process.stdout.write(`${run.settings.batches} batches × ${run.settings.batchMs} ms per codec and payload, Node ${run.node}.\n`);

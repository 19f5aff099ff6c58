/**
 * `npm run micro --workspace=bench [-- --quick]`: the codec micro-benchmark on its own (src/micro.ts;
 * a full `npm run bench` runs the same thing and puts it in the log entry). Prints a table;
 * writes nothing.
 */
import { MICRO_FULL, MICRO_QUICK, runMicro } from "../src/micro.js";
import { fmtPct } from "../src/report/format.js";
import { ciHalfWidth, type MedianCI } from "../src/stats.js";

const quick = process.argv.includes("--quick");
const run = await runMicro(quick ? MICRO_QUICK : MICRO_FULL, (line) => process.stderr.write(`${line}\n`));
const us = (ns: number) => `${(ns / 1e3).toFixed(ns >= 1e4 ? 1 : 2)} µs`;
const ci = (c: MedianCI | undefined, f: (v: number) => string) => (c ? `${f(c.median)} [${f(c.low)}–${f(c.high)}]` : "");
console.table(
  run.rows.map((r) => {
    const vs = (versus: string) => run.ratios.find((x) => x.payload === r.payload && x.versus === versus)?.ratio;
    return {
      payload: r.payload,
      codec: r.codec,
      "median [95% CI]": ci(r.ns, us),
      "÷ JSON": r.codec === "dorpc" ? ci(vs("JSON"), (v) => v.toFixed(2)) : "",
      "÷ V8": r.codec === "dorpc" ? ci(vs("v8"), (v) => v.toFixed(2)) : "",
      "±": r.codec === "dorpc" ? fmtPct(ciHalfWidth(vs("v8") ?? null)) : "",
    };
  }),
);
process.stdout.write(`${run.settings.batches} batches × ${run.settings.batchMs} ms per codec and payload, Node ${run.node}.\n`);

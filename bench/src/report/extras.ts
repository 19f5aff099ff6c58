/** The entry's in-process sections: the codec micro-benchmark and the bundle sizes. */
import type { BundleRun } from "../bundle-size.js";
import type { MicroRun } from "../micro.js";
import { ciHalfWidth, type MedianCI } from "../stats.js";
import { cell, fmtPct } from "./format.js";

function fmtNs(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e4) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${(ns / 1e3).toFixed(2)} µs`;
}

const fmtCI = (ci: MedianCI | undefined, f: (v: number) => string) => (ci ? `${f(ci.median)} [${f(ci.low)}–${f(ci.high)}]` : "–");
const ratio = (v: number) => v.toFixed(2);

export function microSection(micro: MicroRun | undefined): string[] {
  const out = ["**Codec micro-benchmark** (encode + decode in Node, no network; `npm run micro --workspace=bench` runs it alone)", ""];
  if (!micro) return [...out, "_Not measured in this run._"];
  const { batches, batchMs } = micro.settings;
  out.push(
    `Node ${micro.node}; measured before wrangler dev started. Each codec ran ${batches} tinybench batches of ${batchMs} ms (each after its own warm-up), interleaved with the other codecs, order alternating. Cells: median of the batch medians per operation [95 % confidence interval of that median]. The ratios are formed per batch (a reference in the same batch cancels machine drift): compare them across commits; "±" is the interval's half-width, so a change of about twice that is resolved.`,
    "",
    "| payload | dorpc | JSON | V8 serializer | ungap | dorpc ÷ JSON | dorpc ÷ V8 | ± (÷ V8) | operations timed (dorpc) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const payload of [...new Set(micro.rows.map((r) => r.payload))]) {
    const row = (codec: string) => micro.rows.find((r) => r.payload === payload && r.codec === codec);
    const vs = (versus: string) => micro.ratios.find((r) => r.payload === payload && r.versus === versus)?.ratio;
    out.push(
      `| ${cell(row("dorpc")?.label ?? payload)} | ${["dorpc", "JSON", "v8", "ungap"].map((c) => fmtCI(row(c)?.ns, fmtNs)).join(" | ")} | ${fmtCI(vs("JSON"), ratio)} | ${fmtCI(vs("v8"), ratio)} | ${fmtPct(ciHalfWidth(vs("v8") ?? null))} | ${(row("dorpc")?.samples ?? 0).toLocaleString("en-US")} |`,
    );
  }
  return out;
}

export function bundleSection(bundle: BundleRun | undefined): string[] {
  const out = [
    "**Bundle size of a minimal client page** (a browser entry that imports the client and makes one call; esbuild bundle, minified, ESM, gzip level 9)",
    "",
  ];
  if (!bundle) return [...out, "_Not measured in this run._"];
  const capnweb = bundle.sizes.find((b) => b.contender === "capnweb" && !b.error)?.gzipBytes;
  out.push(
    `esbuild ${bundle.esbuild}.`,
    "",
    "| client | minified bytes | min+gzip bytes | ÷ Cap'n Web (gzip) |",
    "| --- | ---: | ---: | ---: |",
  );
  for (const b of bundle.sizes) {
    if (b.error) {
      out.push(`| ${b.contender} | failed: ${cell(b.error)} | | |`);
      continue;
    }
    out.push(
      `| ${b.contender} | ${b.minifiedBytes.toLocaleString("en-US")} | ${b.gzipBytes.toLocaleString("en-US")} | ${capnweb ? (b.gzipBytes / capnweb).toFixed(2) : "–"} |`,
    );
  }
  return out;
}

/** The entry's in-process sections: the codec micro-benchmark and the bundle sizes. */
import type { BundleRun } from "../bundle-size.js";
import type { MicroRun } from "../micro.js";
import { cell, fmtPct, fmtRatio } from "./format.js";

function fmtNs(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e4) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${(ns / 1e3).toFixed(2)} µs`;
}

export function microSection(micro: MicroRun | undefined): string[] {
  const out = ["**Codec micro-benchmark** (encode + decode in Node, no network; `npm run micro --workspace=bench` runs it alone)", ""];
  if (!micro) return [...out, "_Not measured in this run._"];
  const { batches, batchMs } = micro.settings;
  out.push(
    `Node ${micro.node}; measured before wrangler dev started. Each codec ran ${batches} tinybench batches of ${batchMs} ms (each after its own warm-up), interleaved with the other codecs and alternating their order; a cell is the median of the batch medians per operation, [min–max] over batches, and the spread (max − min) ÷ median. A difference smaller than the spread is noise; dorpc ÷ JSON is formed per batch.`,
    "",
    "| payload | JSON | dorpc | ungap | spread JSON / dorpc / ungap | dorpc ÷ JSON | operations timed (dorpc) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const payload of [...new Set(micro.rows.map((r) => r.payload))]) {
    const row = (codec: string) => micro.rows.find((r) => r.payload === payload && r.codec === codec);
    const value = (codec: string) => {
      const r = row(codec);
      return r ? `${fmtNs(r.ns.median)} [${fmtNs(r.ns.min)}–${fmtNs(r.ns.max)}]` : "–";
    };
    const spreads = ["JSON", "dorpc", "ungap"].map((c) => (row(c) ? fmtPct(row(c)!.relativeSpread) : "–")).join(" / ");
    const label = row("dorpc")?.label ?? payload;
    const ratio = micro.dorpcVsJson.find((r) => r.payload === payload)?.ratio;
    out.push(
      `| ${cell(label)} | ${value("JSON")} | ${value("dorpc")} | ${value("ungap")} | ${spreads} | ${fmtRatio(ratio)} | ${(row("dorpc")?.samples ?? 0).toLocaleString("en-US")} |`,
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

/**
 * Hand-rolled SVG charts (no dependencies): latency percentiles per scenario per contender on a
 * log axis, throughput against calls in flight, and throughput per client layout. Every mark is
 * a measured number from the analysis; nothing is smoothed or interpolated.
 */
import type { ScenarioStats } from "./analyze.js";
import { fmtRate, fmtUs } from "./format.js";

export const COLORS: Record<string, string> = {
  dorpc: "#1f6fd1",
  capnweb: "#e0631b",
  floor: "#2e9e4f",
  "floor-accept": "#8c5bbf",
  "floor-twin": "#8fd19e",
  "dorpc-direct": "#14a0b4",
  "dorpc-live": "#6d9eeb",
  "dorpc-sequential": "#0b3d91",
  agents: "#c2185b",
};
const FALLBACK = ["#b8860b", "#555555", "#7f6000"];

function color(name: string, index: number): string {
  return COLORS[name] ?? FALLBACK[index % FALLBACK.length]!;
}

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const FONT = `font-family="-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"`;

function svgOpen(width: number, height: number, title: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`,
    `<title>${esc(title)}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="16" font-weight="600" fill="#111">${esc(title)}</text>`,
  ];
}

function legend(names: string[], x: number, y: number, extra?: string): string[] {
  const out: string[] = [];
  let at = x;
  names.forEach((name, i) => {
    out.push(`<rect x="${at}" y="${y - 9}" width="12" height="12" rx="2" fill="${color(name, i)}"/>`);
    out.push(`<text x="${at + 17}" y="${y + 1}" fill="#222">${esc(name)}</text>`);
    at += 30 + name.length * 7.2;
  });
  if (extra) out.push(`<text x="${at + 10}" y="${y + 1}" fill="#555">${esc(extra)}</text>`);
  return out;
}

/** Latency percentiles: one group per scenario, one lane per contender, log-scale µs axis. */
export function latencyChart(title: string, scenarios: ScenarioStats[], contenders: string[]): string {
  const width = 1100;
  const labelW = 330;
  const valueW = 120;
  const plotX0 = labelW + 10;
  const plotX1 = width - valueW - 10;
  const lane = 13;
  const top = 70;
  const values: number[] = [];
  for (const s of scenarios) for (const r of s.rows) if (r.latency) values.push(r.latency.p50, r.latency.max);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.max(1, Math.min(...values, 1e9)))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 10))));
  const x = (us: number) =>
    plotX0 + ((Math.log10(Math.max(us, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (plotX1 - plotX0);
  const groupHeights = scenarios.map((s) => 20 + s.rows.length * lane + 8);
  const plotH = groupHeights.reduce((a, b) => a + b, 0);
  const height = top + plotH + 50;
  const out = svgOpen(width, height, title);
  out.push(...legend(contenders, 16, 48, "●  p50   ▬  p50–p90   —  p90–p99   |  max   (log scale)"));
  // grid
  for (let decade = lo; decade <= hi * 1.0001; decade *= 10) {
    for (const m of [1, 2, 5]) {
      const v = decade * m;
      if (v > hi * 1.0001) break;
      const gx = x(v).toFixed(1);
      out.push(
        `<line x1="${gx}" y1="${top - 6}" x2="${gx}" y2="${top + plotH}" stroke="${m === 1 ? "#c8c8c8" : "#ececec"}" stroke-width="1"/>`,
      );
      if (m === 1 || (hi / lo <= 1e3 && m !== 1)) {
        out.push(
          `<text x="${gx}" y="${top + plotH + 16}" text-anchor="middle" fill="#444" font-size="${m === 1 ? 12 : 10}">${esc(tickUs(v))}</text>`,
        );
      }
    }
  }
  out.push(`<text x="${(plotX0 + plotX1) / 2}" y="${top + plotH + 36}" text-anchor="middle" fill="#333">latency per sample</text>`);
  out.push(`<text x="${plotX1 + 10}" y="${top - 8}" fill="#333" font-weight="600">p50</text>`);
  let y = top;
  scenarios.forEach((s, gi) => {
    const h = groupHeights[gi]!;
    if (gi % 2 === 0) out.push(`<rect x="8" y="${y}" width="${width - 16}" height="${h - 4}" fill="#f7f8fa"/>`);
    out.push(`<text x="16" y="${y + 14}" fill="#111" font-weight="600">${esc(s.info.label)}</text>`);
    s.rows.forEach((row, li) => {
      const cy = y + 20 + li * lane + lane / 2;
      const ci = contenders.indexOf(row.contender);
      const c = color(row.contender, ci < 0 ? li : ci);
      out.push(`<text x="${labelW}" y="${cy + 4}" text-anchor="end" fill="${c}" font-size="11">${esc(row.contender)}</text>`);
      const l = row.latency;
      if (!l || row.status.kind !== "ok") {
        const why = row.status.kind === "ok" ? "no samples" : row.status.kind;
        out.push(`<text x="${plotX0 + 4}" y="${cy + 4}" fill="#888" font-style="italic" font-size="11">${esc(why)}</text>`);
        if (!l) return;
      }
      out.push(`<line x1="${x(l.p90).toFixed(1)}" y1="${cy}" x2="${x(l.p99).toFixed(1)}" y2="${cy}" stroke="${c}" stroke-width="1.5"/>`);
      out.push(
        `<rect x="${x(l.p50).toFixed(1)}" y="${cy - 3.5}" width="${Math.max(1, x(l.p90) - x(l.p50)).toFixed(1)}" height="7" fill="${c}" opacity="0.55"/>`,
      );
      out.push(
        `<line x1="${x(l.max).toFixed(1)}" y1="${cy - 5}" x2="${x(l.max).toFixed(1)}" y2="${cy + 5}" stroke="${c}" stroke-width="1.5"/>`,
      );
      out.push(`<circle cx="${x(l.p50).toFixed(1)}" cy="${cy}" r="3.5" fill="${c}"/>`);
      out.push(`<text x="${plotX1 + 10}" y="${cy + 4}" fill="#222" font-size="11">${esc(fmtUs(l.p50))}</text>`);
    });
    y += h;
  });
  out.push("</svg>");
  return out.join("\n");
}

/** Axis label for a round number of µs: 100 µs, 2 ms, 10 ms, 1 s. */
function tickUs(us: number): string {
  if (us >= 1e6) return `${+(us / 1e6).toPrecision(3)} s`;
  if (us >= 1e3) return `${+(us / 1e3).toPrecision(3)} ms`;
  return `${+us.toPrecision(3)} µs`;
}

function niceMax(v: number): { max: number; step: number } {
  if (!(v > 0)) return { max: 1, step: 0.2 };
  const rough = v / 5;
  const mag = Math.pow(10, Math.floor(Math.log10(rough)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= rough) ?? 10 * mag;
  return { max: Math.ceil(v / step) * step, step };
}

function roundRange(row: ScenarioStats["rows"][number]): [number, number] | null {
  const v = row.perRound.filter((x): x is number => x != null);
  return v.length ? [Math.min(...v), Math.max(...v)] : null;
}

/** calls/s against calls in flight (log2 x axis), one line per contender, min–max whiskers per round. */
export function inflightChart(title: string, scenarios: ScenarioStats[], contenders: string[]): string {
  const width = 900;
  const height = 520;
  const x0 = 90;
  const x1 = width - 40;
  const y0 = height - 70;
  const y1 = 70;
  const points = scenarios.map((s) => ({ inFlight: s.info.inFlight ?? 1, s }));
  const all = points.flatMap((p) => p.s.rows.flatMap((r) => [r.callsPerSec ?? 0, ...(roundRange(r) ?? [])]));
  const { max, step } = niceMax(Math.max(...all, 1));
  const xs = points.map((p) => p.inFlight);
  const lx = (n: number) =>
    x0 +
    ((Math.log2(n) - Math.log2(Math.min(...xs))) / Math.max(1e-9, Math.log2(Math.max(...xs)) - Math.log2(Math.min(...xs)))) * (x1 - x0);
  const ly = (v: number) => y0 - (v / max) * (y0 - y1);
  const out = svgOpen(width, height, title);
  out.push(...legend(contenders, 16, 48, "point: calls/s over all rounds; whisker: min–max of rounds"));
  for (let v = 0; v <= max * 1.0001; v += step) {
    out.push(`<line x1="${x0}" y1="${ly(v).toFixed(1)}" x2="${x1}" y2="${ly(v).toFixed(1)}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${x0 - 8}" y="${(ly(v) + 4).toFixed(1)}" text-anchor="end" fill="#444">${esc(v === 0 ? "0" : fmtRate(v))}</text>`);
  }
  for (const n of xs) {
    out.push(`<line x1="${lx(n).toFixed(1)}" y1="${y1}" x2="${lx(n).toFixed(1)}" y2="${y0}" stroke="#efefef"/>`);
    out.push(`<text x="${lx(n).toFixed(1)}" y="${y0 + 18}" text-anchor="middle" fill="#444">${n}</text>`);
  }
  out.push(`<line x1="${x0}" y1="${y0}" x2="${x1}" y2="${y0}" stroke="#888"/>`);
  out.push(
    `<text x="${(x0 + x1) / 2}" y="${y0 + 40}" text-anchor="middle" fill="#333">calls in flight on one connection (log scale)</text>`,
  );
  out.push(`<text transform="translate(22 ${(y0 + y1) / 2}) rotate(-90)" text-anchor="middle" fill="#333">calls/s (completed)</text>`);
  contenders.forEach((name, ci) => {
    const c = color(name, ci);
    const pts = points
      .map((p) => ({ n: p.inFlight, row: p.s.rows.find((r) => r.contender === name) }))
      .filter((p): p is { n: number; row: NonNullable<typeof p.row> } => !!p.row && p.row.callsPerSec != null);
    if (!pts.length) return;
    out.push(
      `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${lx(p.n).toFixed(1)},${ly(p.row.callsPerSec!).toFixed(1)}`).join(" ")}"/>`,
    );
    for (const p of pts) {
      const range = roundRange(p.row);
      const px = lx(p.n) + (ci - (contenders.length - 1) / 2) * 4;
      if (range)
        out.push(
          `<line x1="${px.toFixed(1)}" y1="${ly(range[0]).toFixed(1)}" x2="${px.toFixed(1)}" y2="${ly(range[1]).toFixed(1)}" stroke="${c}" stroke-width="1.5"/>`,
        );
      out.push(`<circle cx="${lx(p.n).toFixed(1)}" cy="${ly(p.row.callsPerSec!).toFixed(1)}" r="4" fill="${c}"/>`);
    }
  });
  out.push("</svg>");
  return out.join("\n");
}

/** Grouped bars: calls/s per client layout and contender, min–max whiskers per round. */
export function clientsChart(title: string, scenarios: ScenarioStats[], contenders: string[]): string {
  const width = 1000;
  const height = 520;
  const x0 = 90;
  const x1 = width - 30;
  const y0 = height - 90;
  const y1 = 70;
  const all = scenarios.flatMap((s) => s.rows.flatMap((r) => [r.callsPerSec ?? 0, ...(roundRange(r) ?? [])]));
  const { max, step } = niceMax(Math.max(...all, 1));
  const ly = (v: number) => y0 - (v / max) * (y0 - y1);
  const groupW = (x1 - x0) / Math.max(1, scenarios.length);
  const barW = Math.min(26, (groupW - 20) / Math.max(1, contenders.length));
  const out = svgOpen(width, height, title);
  out.push(...legend(contenders, 16, 48, "bar: calls/s over all rounds; whisker: min–max of rounds"));
  for (let v = 0; v <= max * 1.0001; v += step) {
    out.push(`<line x1="${x0}" y1="${ly(v).toFixed(1)}" x2="${x1}" y2="${ly(v).toFixed(1)}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${x0 - 8}" y="${(ly(v) + 4).toFixed(1)}" text-anchor="end" fill="#444">${esc(v === 0 ? "0" : fmtRate(v))}</text>`);
  }
  out.push(
    `<text transform="translate(22 ${(y0 + y1) / 2}) rotate(-90)" text-anchor="middle" fill="#333">calls/s (completed, all connections)</text>`,
  );
  scenarios.forEach((s, gi) => {
    const gx = x0 + gi * groupW + (groupW - barW * contenders.length) / 2;
    contenders.forEach((name, ci) => {
      const row = s.rows.find((r) => r.contender === name);
      if (!row || row.callsPerSec == null) return;
      const c = color(name, ci);
      const bx = gx + ci * barW;
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${ly(row.callsPerSec).toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${(y0 - ly(row.callsPerSec)).toFixed(1)}" fill="${c}" opacity="0.85"/>`,
      );
      const range = roundRange(row);
      if (range) {
        const cx = bx + (barW - 3) / 2;
        out.push(
          `<line x1="${cx.toFixed(1)}" y1="${ly(range[0]).toFixed(1)}" x2="${cx.toFixed(1)}" y2="${ly(range[1]).toFixed(1)}" stroke="#222" stroke-width="1.2"/>`,
        );
      }
    });
    const cx = x0 + gi * groupW + groupW / 2;
    const label =
      s.info.clientsPerDO !== undefined ? `${s.info.clientsPerDO} per DO × ${s.info.dos} DO${s.info.dos === 1 ? "" : "s"}` : s.info.id;
    out.push(`<text x="${cx.toFixed(1)}" y="${y0 + 18}" text-anchor="middle" fill="#333">${esc(label)}</text>`);
    out.push(
      `<text x="${cx.toFixed(1)}" y="${y0 + 34}" text-anchor="middle" fill="#777" font-size="11">${(s.info.clientsPerDO ?? 0) * (s.info.dos ?? 0)} connection${(s.info.clientsPerDO ?? 0) * (s.info.dos ?? 0) === 1 ? "" : "s"}</text>`,
    );
  });
  out.push(`<line x1="${x0}" y1="${y0}" x2="${x1}" y2="${y0}" stroke="#888"/>`);
  out.push(
    `<text x="${(x0 + x1) / 2}" y="${y0 + 62}" text-anchor="middle" fill="#333">clients per Durable Object × Durable Objects (each connection: one call at a time)</text>`,
  );
  out.push("</svg>");
  return out.join("\n");
}

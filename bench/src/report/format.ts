/** Number formatting shared by the log, the terminal summary and the charts. */
import type { Spread } from "../stats.js";

export function fmtUs(us: number | null | undefined): string {
  if (us == null || !Number.isFinite(us)) return "–";
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e4) return `${(us / 1e3).toFixed(1)} ms`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(0)} µs`;
}

export function fmtRate(perSec: number | null | undefined): string {
  if (perSec == null || !Number.isFinite(perSec)) return "–";
  return perSec >= 100 ? Math.round(perSec).toLocaleString("en-US") : perSec.toFixed(1);
}

export function fmtBytes(bytes: number | null | undefined): string {
  if (bytes == null || !Number.isFinite(bytes)) return "–";
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;
  if (bytes >= 10 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${Math.round(bytes)} B`;
}

export function fmtNum(v: number | null | undefined, digits = 1): string {
  if (v == null || !Number.isFinite(v)) return "–";
  return v >= 1000 ? Math.round(v).toLocaleString("en-US") : v.toFixed(digits);
}

export function fmtRatio(s: Spread | null | undefined): string {
  if (!s) return "–";
  if (s.n === 1) return `${s.median.toFixed(2)}`;
  return `${s.median.toFixed(2)} [${s.min.toFixed(2)}–${s.max.toFixed(2)}]`;
}

export function fmtPct(fraction: number | null | undefined): string {
  if (fraction == null || !Number.isFinite(fraction)) return "–";
  return `${(fraction * 100).toFixed(0)}%`;
}

/** Escapes text for a Markdown table cell. */
export function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** Number formatting shared by the log, the terminal summary and the charts. */
import type { Spread } from "../stats.js";

export function fmtUs(us: number | null | undefined): string {
  if (us == null || !Number.isFinite(us)) return "–";
  // The unit is chosen on the magnitude as it will be printed (999.6 µs is "1.00 ms", not
  // "1000 µs"), and a negative difference keeps its sign with the same units.
  const sign = us < 0 ? "-" : "";
  const a = Math.abs(us);
  if (Number(a.toFixed(0)) < 1e3) return `${sign}${a.toFixed(0)} µs`;
  if (Number((a / 1e3).toFixed(2)) < 10) return `${sign}${(a / 1e3).toFixed(2)} ms`;
  if (Number((a / 1e3).toFixed(1)) < 1e3) return `${sign}${(a / 1e3).toFixed(1)} ms`;
  return `${sign}${(a / 1e6).toFixed(2)} s`;
}

/**
 * A ratio judged against `bound` (≤), with two decimals — or more when two would print a missed
 * value as one within the bound (1.1004 against 1.10 is "1.1004", not "1.10").
 */
export function ratioText(value: number, bound?: number, met = bound === undefined ? undefined : value <= bound): string {
  let digits = 2;
  if (bound !== undefined && met === false) while (digits < 6 && Number(value.toFixed(digits)) <= bound) digits++;
  return value.toFixed(digits);
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

/** A median ratio and its spread; `bound`: the bound a missed median must not seem to meet when printed. */
export function fmtRatio(s: Spread | null | undefined, bound?: number): string {
  if (!s) return "–";
  if (s.n === 1) return ratioText(s.median, bound);
  return `${ratioText(s.median, bound)} [${s.min.toFixed(2)}–${s.max.toFixed(2)}]`;
}

export function fmtPct(fraction: number | null | undefined): string {
  if (fraction == null || !Number.isFinite(fraction)) return "–";
  return `${(fraction * 100).toFixed(0)}%`;
}

/** Escapes text for a Markdown table cell. */
export function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

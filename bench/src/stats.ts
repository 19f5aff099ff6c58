/**
 * Statistics, all on raw samples: nothing is ever dropped, trimmed or estimated.
 * Percentiles are nearest-rank on the sorted samples (p-th percentile = the smallest sample with
 * at least p% of samples ≤ it), so every reported value is a latency that was actually observed.
 */

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  /** Only when n ≥ 10,000; below that p99.9 is the max or next to it and says nothing. */
  p999: number | null;
  max: number;
  mean: number;
}

export const P999_MIN_N = 10_000;

export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  // In whole numbers: (99.9 / 100) × 20,000 is 19,980.000000000004 in floating point, and its
  // ceiling the next rank. p is given to at most three decimals.
  const rank = Math.ceil((Math.round(p * 1000) * sorted.length) / 100_000);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function sortedCopy(samples: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(samples);
  out.sort();
  return out;
}

export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = sortedCopy(samples);
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  return {
    n: sorted.length,
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    p999: sorted.length >= P999_MIN_N ? percentileSorted(sorted, 99.9) : null,
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

export function median(values: readonly number[]): number {
  return percentileSorted(sortedCopy(values), 50);
}

/** Median, min and max of per-round values (e.g. paired ratios). */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: readonly number[]): Spread | null {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return null;
  // The median of an even count is the mean of the middle two here (ratios, not latencies).
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const med = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median: med, min: sorted[0]!, max: sorted[sorted.length - 1]!, n: sorted.length };
}

/** (max − min) / median of per-round values, as a fraction: the round-to-round noise. */
export function relativeRange(values: readonly number[]): number | null {
  const s = spread(values);
  if (!s || s.median === 0) return null;
  return (s.max - s.min) / s.median;
}

/** The median with a distribution-free ~95 % confidence interval (order statistics of the sorted values). */
export interface MedianCI {
  median: number;
  low: number;
  high: number;
  n: number;
}

/**
 * Median and its ~95 % confidence interval without assuming a distribution: the interval runs
 * between the order statistics at ranks n/2 ∓ 0.98·√n (the normal approximation of the binomial
 * with p = ½), clamped to the sample. Needs n ≥ 11 for an interval narrower than the whole range.
 */
export function medianCI(values: readonly number[]): MedianCI | null {
  const s = spread(values);
  if (!s) return null;
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const n = sorted.length;
  const half = 0.98 * Math.sqrt(n);
  const lowRank = Math.max(1, Math.floor(n / 2 - half));
  const highRank = Math.min(n, Math.ceil(n / 2 + 1 + half));
  return { median: s.median, low: sorted[lowRank - 1]!, high: sorted[highRank - 1]!, n };
}

/** Half the confidence interval's width relative to the median: a change larger than about twice this is resolved. */
export function ciHalfWidth(ci: MedianCI | null): number | null {
  if (!ci || ci.median === 0) return null;
  return (ci.high - ci.low) / 2 / ci.median;
}

/**
 * The bench's statistics (bench/src/stats.ts) on samples whose right answers are known by hand.
 * Percentiles are nearest-rank: the p-th percentile is the smallest sample with at least p % of
 * the samples at or below it, its rank computed in whole numbers (in floating point,
 * 99.9 / 100 × 20,000 is 19,980.000000000004, whose ceiling took p99.9 one sample too high: the
 * maximum of 1..1,000). The median's confidence interval is narrower than the samples' range only
 * from 11 values on, as its comment says.
 */
import { describe, expect, it } from "vitest";
import { medianCI, percentileSorted, relativeRange, spread, summarize } from "../../bench/src/stats.js";

/** a, a + 1, …, b. */
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe("nearest-rank percentiles", () => {
  it("p50, p90 and p99 of 1..n", () => {
    expect(percentileSorted([1, 2, 3, 4], 50)).toBe(2);
    expect(percentileSorted([1, 2, 3, 4, 5], 50)).toBe(3);
    expect(percentileSorted(range(1, 10), 90)).toBe(9);
    expect(percentileSorted(range(1, 100), 99)).toBe(99);
    expect(percentileSorted(range(1, 2000), 99)).toBe(1980);
    expect(percentileSorted(range(1, 20_000), 99)).toBe(19_800);
  });

  it("p99.9 of 1..1,000 is 999, of 1..10,000 is 9,990 and of 1..20,000 is 19,980", () => {
    expect(percentileSorted(range(1, 1000), 99.9)).toBe(999);
    expect(summarize(range(1, 10_000)).p999).toBe(9990);
    expect(summarize(range(1, 20_000)).p999).toBe(19_980);
  });

  it("for every n up to 30,000: the smallest sample with at least p % of the samples at or below it", () => {
    const samples = Float64Array.from(range(1, 30_000));
    const wrong: string[] = [];
    for (const p of [50, 90, 99, 99.9]) {
      const share = Math.round(p * 1000); // p in thousandths of a percent: whole numbers from here on
      for (let n = 1; n <= samples.length; n++) {
        // In 1..n the sample v has exactly v samples at or below it.
        const v = percentileSorted(samples.subarray(0, n), p);
        const enough = v * 100_000 >= share * n;
        const fewerBefore = (v - 1) * 100_000 < share * n;
        if (!enough || !fewerBefore) wrong.push(`p${p} of 1..${n}: ${v}`);
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it("summarize: unsorted samples, and p99.9 only from 10,000 samples on", () => {
    expect(summarize([5, 1, 4, 2, 3])).toEqual({ n: 5, p50: 3, p90: 5, p99: 5, p999: null, max: 5, mean: 3 });
    expect(summarize(range(1, 9999)).p999).toBeNull();
    expect(summarize([]).n).toBe(0);
    expect(percentileSorted([], 50)).toBeNaN();
  });
});

describe("per-round spread", () => {
  it("the median of an odd count, of an even count (the mean of the middle two); values that are not finite are dropped", () => {
    expect(spread([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3, n: 3 });
    expect(spread([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4, n: 4 });
    expect(spread([Number.NaN, Number.POSITIVE_INFINITY, 2])).toEqual({ median: 2, min: 2, max: 2, n: 1 });
    expect(spread([])).toBeNull();
  });

  it("relativeRange is (max − min) / median, and null when the median is 0", () => {
    expect(relativeRange([100, 130, 110, 105, 120])).toBeCloseTo(30 / 110, 12);
    expect(relativeRange([0, 0, 0])).toBeNull();
  });
});

describe("the median's confidence interval", () => {
  it("spans every value up to n = 10, and is narrower on both sides from n = 11 on", () => {
    const wrong: string[] = [];
    for (let n = 1; n <= 1000; n++) {
      const ci = medianCI(range(1, n))!;
      const whole = ci.low === 1 && ci.high === n;
      const narrower = ci.low > 1 && ci.high < n;
      if (n <= 10 ? !whole : !narrower) wrong.push(`n = ${n}: ${ci.low}–${ci.high}`);
      if (ci.low > ci.median || ci.high < ci.median) wrong.push(`n = ${n}: ${ci.low}–${ci.high} leaves out the median ${ci.median}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(medianCI(range(1, 11))).toEqual({ median: 6, low: 2, high: 10, n: 11 });
  });
});

/**
 * Shared parts of the seeded stress tests (stress-counter.test.ts, stress-room.test.ts): which
 * seeds to run, the seeded random numbers that pick each run's operations, a generous bound that
 * turns a call that never settles into a reported hang, evictions made one at a time, and the
 * check that prints a failing seed's log.
 */
import { evictObject, type TestClient } from "@dorpc/testing";
import { expect } from "vitest";

declare global {
  interface ImportMeta {
    /** Vitest's environment variables, VITE_* ones included, as they are when the tests run. */
    readonly env: Record<string, string | undefined>;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The seeds to run: `defaults`, or those of the VITE_STRESS_SEEDS environment variable, a
 * comma-separated list of seeds and ranges ("7", "1,5,9", "1-40"). Only variables whose name
 * starts with VITE_ reach the tests inside workerd, through `import.meta.env` written out as
 * such: Vitest rewrites that exact expression to read them at run time (through a cast, it would
 * read values baked into the transformed file, which Vitest caches from one run to the next).
 */
export function stressSeeds(defaults: number[]): number[] {
  const value = import.meta.env.VITE_STRESS_SEEDS?.trim();
  if (!value) return defaults;
  return value.split(",").flatMap((part) => {
    const [from, to = from] = part.split("-").map((n) => Number(n.trim()));
    if (!Number.isInteger(from) || !Number.isInteger(to) || to! < from!) throw new Error(`VITE_STRESS_SEEDS: bad seed or range "${part}"`);
    return Array.from({ length: to! - from! + 1 }, (_, k) => from! + k);
  });
}

/** Seeded random numbers (mulberry32): one seed, one sequence of operations. */
export function seeded(seed: number): { rand: () => number; int: (n: number) => number } {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { rand, int: (n: number) => Math.floor(rand() * n) };
}

/** How long a call may stay unsettled before it counts as hung: far above any call's timeout. */
const HANG_LIMIT = 20_000;

/**
 * Calls `onOk` or `onError` when `call` settles, or `onHang` if it has not settled after
 * HANG_LIMIT. The returned promise settles (resolves) in every case.
 */
export function settleOrHang<T>(call: Promise<T>, onOk: (value: T) => void, onError: (error: unknown) => void, onHang: () => void) {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      onHang();
      resolve();
    }, HANG_LIMIT);
    call.then(onOk, onError).finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * `evictObject`, one eviction at a time: the next starts when the previous has settled.
 * Overlapping evictObject calls on one object crashed workerd itself ("onEmpty() can only be
 * called once at a time", with seed 9 of stress-room.test.ts), so they are never overlapped.
 */
export function serialEvictions(): (client: TestClient<unknown>, webSockets: "hibernate" | "close") => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  return (client, webSockets) => {
    const next = last.then(() => evictObject(client, { webSockets }));
    last = next.catch(() => undefined);
    return next;
  };
}

/** The broken invariants of a run: for each kind, what broke it. */
export class Problems {
  readonly found: Record<string, string[]> = {};
  add(kind: string, detail: string): void {
    (this.found[kind] ??= []).push(detail);
  }
}

/**
 * Passes when `problems` found nothing. Otherwise prints the seed, the run's summary and its log
 * (only then: a passing run prints nothing), and fails with the problems, ten of each kind.
 */
export function expectNoProblems(run: string, seed: number, problems: Problems, summary: unknown, log: string[]): void {
  const shown: Record<string, string[]> = {};
  for (const [kind, details] of Object.entries(problems.found)) {
    shown[kind] = details.length > 10 ? [...details.slice(0, 10), `... and ${details.length - 10} more`] : details;
  }
  if (Object.keys(shown).length > 0) {
    console.log(
      `${run}, seed ${seed}: an invariant failed. Run this seed again with VITE_STRESS_SEEDS=${seed}` +
        ` (the same random choices; timings, and so some outcomes, may differ).\nSummary: ${JSON.stringify(summary)}\n` +
        `Log (last 150 entries):\n${log.slice(-150).join("\n")}`,
    );
  }
  expect(shown, `${run}, seed ${seed}`).toEqual({});
}

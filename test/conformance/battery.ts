/**
 * The WPT structured-clone battery (vendored in wpt/, see wpt/PROVENANCE.md) as a list of cases
 * any contender can run: `runCase(case, clone)` passes the case a runner whose
 * `structuredClone(value)` is `clone`, and reports pass, fail (with the assertion's message) or
 * n/a (the case needs a DOM: FileList, ImageData, ImageBitmap).
 */
import "./wpt-globals.js";
import "./wpt/structured-clone-battery-of-tests.js";

export interface BatteryCase {
  readonly description: string;
  readonly requiresDocument?: boolean;
  f(runner: { structuredClone(value: unknown): Promise<unknown> }, t: unknown): Promise<void>;
}

export type Status = "pass" | "fail" | "n/a";

export interface Outcome {
  status: Status;
  /** Why it failed, in one line. */
  message?: string;
}

/** A contender: clones one value, however it likes (a codec, a connection, a native call). */
export type Clone = (value: unknown) => Promise<unknown>;

export const CASES: readonly BatteryCase[] = (globalThis as unknown as { structuredCloneBatteryOfTests: BatteryCase[] })
  .structuredCloneBatteryOfTests;

/** Runs one case against `clone`; never throws. A case that does not settle in `timeout` ms fails. */
export async function runCase(testCase: BatteryCase, clone: Clone, timeout = 10_000): Promise<Outcome> {
  if (testCase.requiresDocument) return { status: "n/a", message: "needs a DOM" };
  let timer: ReturnType<typeof setTimeout> | null = null;
  try {
    await Promise.race([
      testCase.f({ structuredClone: clone }, {}),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not settle within ${timeout} ms`)), timeout);
      }),
    ]);
    return { status: "pass" };
  } catch (error) {
    return { status: "fail", message: oneLine(error) };
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}

/** Runs every case, in order (some cases touch globals, so never in parallel). */
export async function runBattery(clone: Clone): Promise<Record<string, Outcome>> {
  const out: Record<string, Outcome> = {};
  for (const testCase of CASES) out[testCase.description] = await runCase(testCase, clone);
  return out;
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 160 ? line.slice(0, 157) + "..." : line;
}

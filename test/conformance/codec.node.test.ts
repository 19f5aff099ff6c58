/**
 * The WPT structured-clone battery through dorpc's codec, in Node: `decode(await encodeAsync(v))`.
 * A case the committed baseline lists as passing must still pass; the outcome of every case is
 * recorded for docs/conformance.md (`npm run conformance --workspace=test`).
 */
import { describe, expect, it } from "vitest";
import { decode, encodeAsync } from "../../packages/rpc/src/index.js";
import { CASES, runCase } from "./battery.js";
import { baselinePasses } from "./results.js";

const passing = baselinePasses("codec");
const clone = async (value: unknown) => decode(await encodeAsync(value));

describe("WPT structured-clone battery through dorpc's codec", () => {
  for (const testCase of CASES) {
    it(testCase.description, async ({ task }) => {
      const outcome = await runCase(testCase, clone);
      task.meta.conformance = { column: "codec", description: testCase.description, outcome };
      if (passing.has(testCase.description)) expect(outcome.status, outcome.message).toBe("pass");
    });
  }

  it("has every case the baseline lists (a renamed case would silently stop being checked)", () => {
    const names = new Set(CASES.map((c) => c.description));
    expect([...passing].filter((name) => !names.has(name))).toEqual([]);
  });
});

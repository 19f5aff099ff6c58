/**
 * The WPT structured-clone battery through a real connection: a dorpc client in workerd calls
 * `echo(value)` on a Durable Object in workerd over a hibernatable WebSocket (routeDORequest →
 * RpcDurableObject), so every value is encoded by the client, decoded by the object, encoded
 * again as the result and decoded by the client. Gated by the committed baseline like the codec
 * column; every outcome is recorded for docs/conformance.md.
 */
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import { CASES, runCase } from "./battery.js";
import type { Echo } from "./objects.js";
import { baselinePasses } from "./results.js";

const passing = baselinePasses("connection");
const client = createTestClient<Echo>(env.ECHO, "wpt", { timeout: 10_000 });
const clone = (value: unknown) => client.echo(value as never) as Promise<unknown>;

afterAll(() => client[Symbol.dispose]());

describe("WPT structured-clone battery through a connection to a Durable Object", () => {
  for (const testCase of CASES) {
    it(testCase.description, async ({ task }) => {
      const outcome = await runCase(testCase, clone);
      task.meta.conformance = { column: "connection", description: testCase.description, outcome };
      if (passing.has(testCase.description)) expect(outcome.status, outcome.message).toBe("pass");
    });
  }

  it("has every case the baseline lists (a renamed case would silently stop being checked)", () => {
    const names = new Set(CASES.map((c) => c.description));
    expect([...passing].filter((name) => !names.has(name))).toEqual([]);
  });
});

/**
 * Values by reference (references.ts) through a real dorpc connection to a Durable Object in
 * workerd: a function argument the object calls, an RpcTarget the object returns, and an
 * unawaited result passed as the next call's argument. Asserted, and recorded for
 * docs/conformance.md.
 */
import { createTestClient } from "@dorpc/testing";
import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import type { Echo } from "./objects.js";
import { observe, REFERENCE_CASES, type ReferenceObservations } from "./references.js";

const client = createTestClient<Echo>(env.ECHO, "references", { timeout: 10_000 });
afterAll(() => client[Symbol.dispose]());

describe("values by reference through a connection to a Durable Object", () => {
  it("a function is called back, a returned RpcTarget is a stub, a pending result is resolved by the object", async ({ task }) => {
    const observed: ReferenceObservations = {
      function: await observe(async () => `by reference: the receiver called it and got ${await client.callBack((x: number) => x + 1, 2)}`),
      target: await observe(async () => {
        using adder = await client.adder(1);
        return `a stub: add(2) ran at the sender and gave ${await adder.add(2)}`;
      }),
      pending: await observe(async () => `pipelined: the receiver resolved it (${await client.echo(client.echo(5))})`),
    };
    expect(observed).toEqual({
      function: "by reference: the receiver called it and got 3",
      target: "a stub: add(2) ran at the sender and gave 3",
      pending: "pipelined: the receiver resolved it (5)",
    });
    task.meta.references = { column: "connection", observed, cases: REFERENCE_CASES };
  });
});

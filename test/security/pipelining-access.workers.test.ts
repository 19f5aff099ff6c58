/**
 * Pipelining against the access policy, and the HTTP JSON form against maxMessageBytes, sent as
 * raw frames (raw.ts) or raw HTTP batches: a PIPELINE path is read as a chain on the value would
 * be (never into env or ctx), a pipelined result holding the object's platform state is never
 * passed as an argument, refusals name the object, and a JSON-form body within the limit is
 * served whatever its rewritten frame's length.
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Victim } from "./objects.js";
import { calls, openRaw, routeUrl } from "./raw.js";

const SECRET = "s3cr3t-dorpc-value";

/** The chain `method(x)` where `x` is a PIPELINE record `[callId, ...path]` of an earlier call of the frame. */
const pipelined = (method: string, ...ref: (number | string)[]) => [
  method,
  [
    1,
    [
      [1, [1]],
      [30, ref],
    ],
  ],
];
let serial = 0;
const uniqueName = (label: string): string => `pipelining-access-${label}-${Date.now().toString(36)}-${serial++}`;
const stubOf = (name: string) => (env.VICTIM as DurableObjectNamespace<Victim>).getByName(name);

async function seed(name: string): Promise<void> {
  await runInDurableObject(stubOf(name), (_i: Victim, state) => state.storage.kv.put("count", 7));
}

describe("pipelining must give nothing a chain would not", () => {
  // docs/security.md, "What a chain can reach", rule 3: "the Durable Object itself, its env and its
  // ctx are never stepped into, whatever they look like and whoever handed them out"; and
  // "References are capabilities": "Pipelining gives nothing a round trip would not: … a PIPELINE
  // path into it, is checked as a chain on the value would be". The chain ["environment", "SECRET"]
  // is NOT_FOUND (hostile.workers.test.ts); the same read as a PIPELINE path `[30, [1, "SECRET"]]`
  // in the argument of `echo` must be refused too (NOT_FOUND) and the secret must never reach the
  // client.
  it("a PIPELINE path into a getter's this.env never yields the secret", async () => {
    const name = uniqueName("pipe-env");
    await seed(name);
    const conn = await openRaw(routeUrl("VICTIM", name));
    try {
      conn.send(
        calls([
          [1, ["environment"]],
          [2, pipelined("echo", 1, "SECRET")],
        ]),
      );
      const reply = await conn.reply(2);
      expect(
        conn.texts.some((t) => t.includes(SECRET)),
        `secret leaked: ${JSON.stringify(reply)}`,
      ).toBe(false);
      expect(reply.slice(0, 3)).toEqual([2, 3, "NOT_FOUND"]);
    } finally {
      conn.close();
    }
  });

  // Same guarantee, the value itself: docs/security.md says "nothing reaches the object's ctx
  // (storage, sockets, alarms) or env (secrets, bindings) through dorpc's own machinery", and
  // "Pipelining gives nothing a round trip would not". A round trip cannot get env or ctx.storage
  // to the client (`await client.environment` / `await client.storage` are ENCODE), so the client
  // can never pass them as an argument; a PIPELINE record `[30, [1]]` on ["environment"] /
  // ["storage"] must be refused (NOT_FOUND or ENCODE) and the method must not run.
  it("a PIPELINE record of a getter's this.env or this.ctx.storage is never passed to a method as an argument", async () => {
    const name = uniqueName("pipe-whole");
    await seed(name);
    const conn = await openRaw(routeUrl("VICTIM", name));
    try {
      conn.send(
        calls([
          [1, ["environment"]],
          [2, pipelined("record", 1)],
          [3, ["storage"]],
          [4, pipelined("kindOf", 3)],
        ]),
      );
      const record = await conn.reply(2);
      const kind = await conn.reply(4);
      expect(record[1], `record ran with env as its argument: ${JSON.stringify(record)}`).toBe(3);
      expect(kind[1], `kindOf ran with ctx.storage as its argument: ${JSON.stringify(kind)}`).toBe(3);
      expect(await runInDurableObject(stubOf(name), (i: Victim) => i.recorded)).toBe(0);
    } finally {
      conn.close();
    }
  });

  // docs/security.md, "What a chain can reach": "A forbidden name and a missing name get the same
  // NOT_FOUND with the same message shape (`No method or property "x" is reachable on
  // <YourClass>.`) … the class named is always the Durable Object's". A PIPELINE path that is not
  // reachable (here "peek" on an RpcTarget: only plain data is read along a path) is NOT_FOUND,
  // naming the object (Victim), never "the client".
  it("a PIPELINE path refused on the object names the Durable Object's class, not the client", async () => {
    const name = uniqueName("pipe-label");
    await seed(name);
    const conn = await openRaw(routeUrl("VICTIM", name));
    try {
      conn.send(
        calls([
          [1, ["tools"]],
          [2, pipelined("echo", 1, "peek")],
          [3, ["getValue", [0]]],
          [4, pipelined("echo", 3, "nope")],
        ]),
      );
      expect(await conn.reply(2)).toEqual([2, 3, "NOT_FOUND", 'No method or property "peek" is reachable on Victim.']);
      expect(await conn.reply(4)).toEqual([4, 3, "NOT_FOUND", 'No method or property "nope" is reachable on Victim.']);
    } finally {
      conn.close();
    }
  });
});

describe("the same pipelining leak over an HTTP batch", () => {
  // As above, through the HTTP batch endpoint (docs/security.md "HTTP batches": "The access rules,
  // limits, schemas and requireSchemas are the same as on a socket"). Call 2 is NOT_FOUND, the secret
  // absent from the response.
  it("an application/x-dorpc batch cannot read env.SECRET through a PIPELINE path", async () => {
    const name = uniqueName("http-pipe-env");
    const response = await SELF.fetch(routeUrl("VICTIM", name), {
      method: "POST",
      headers: { "Content-Type": "application/x-dorpc" },
      body: calls([
        [1, ["environment"]],
        [2, pipelined("echo", 1, "SECRET")],
      ]),
    });
    const text = await response.text();
    expect(text.includes(SECRET), `secret leaked: ${text.slice(0, 300)}`).toBe(false);
    expect(text).toContain('[2,3,"NOT_FOUND"');
  });
});

describe("HTTP batch, JSON form and maxMessageBytes", () => {
  // docs/security.md "HTTP batches": "The body is refused with 413 as soon as it is larger than
  // limits.maxMessageBytes … before anything is decoded"; a body within the limit is taken. The
  // TIGHT object has maxMessageBytes 65,536. A JSON-form body of 30,030 bytes (an array of 6,000
  // numbers written `9e20`) is within it, so the call must run (kindOf answers "[object Array]").
  it("a JSON-form body under maxMessageBytes is not refused as an oversized frame", async () => {
    const name = uniqueName("http-json-amp");
    const body = `{"method":"kindOf","args":[[${new Array(6000).fill("9e20").join(",")}]]}`;
    expect(body.length).toBeLessThan(65_536);
    const response = await SELF.fetch(routeUrl("TIGHT", name), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body,
    });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toEqual({ result: "[object Array]" });
  });
});

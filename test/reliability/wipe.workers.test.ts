/**
 * The exactly-once record across `ctx.storage.deleteAll()` in workerd (packages/rpc/src/
 * delivery-wipe.ts): the deletion takes the record's tables too. Writing calls must keep working
 * and be recorded again, and a call answered before the wipe must not run again on the wiped
 * state when its client resends it.
 */
import { createRpcClient, type RpcClient, type RpcTransport, type TransportFactory, type TransportHandler } from "@dorpc/rpc";
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { go, rpcFailure } from "./outcomes.js";
import { connect, unique, upgrade } from "./upgrade.js";
import type { Reliable } from "./worker.js";

/** A client whose reconnects wait until `release()`: the test decides what happens in between. */
function gatedClient(instance: string) {
  const inner = upgrade(`http://x/__rpc/RELIABLE/${encodeURIComponent(instance)}`);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const factory: TransportFactory = (handler: TransportHandler): RpcTransport => {
    const transport = inner(handler);
    const first = inner.attempts.length === 1;
    return {
      ...transport,
      async open() {
        if (!first) await gate;
        await transport.open();
      },
    };
  };
  const client = createRpcClient<Reliable>("RELIABLE", instance, {
    timeout: 10_000,
    reconnect: { initialDelay: 10, maxDelay: 100 },
    transport: factory,
  }) as RpcClient<Reliable>;
  return { client, attempts: inner.attempts, release, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** The record's tables of `instance`, read inside the object. */
function recordOf(instance: string) {
  return runInDurableObject(env.RELIABLE.getByName(instance), (_object, state) => {
    const sql = state.storage.sql;
    const sessions = sql
      .exec("SELECT session FROM _dorpc_sessions ORDER BY session")
      .toArray()
      .map((row) => row.session as string);
    const answers = sql
      .exec("SELECT ids FROM _dorpc_replies")
      .toArray()
      .flatMap((row) => (JSON.parse(row.ids as string) as [number, number, number][]).map(([id]) => id));
    return { sessions, answers };
  });
}

describe("the exactly-once record across ctx.storage.deleteAll()", () => {
  it("writing calls keep working after the wipe, and the record keeps recording (it failed with 'no such table' before)", async () => {
    const name = unique("wipe");
    using c = connect<Reliable>(name);
    expect(await c.client.increment()).toBe(1);
    expect(await c.client.increment()).toBe(2);
    await c.client.wipe();
    expect(await c.client.getValue()).toBe(0);
    expect(await c.client.increment()).toBe(1);
    expect(await c.client.increment()).toBe(2);
    const record = await recordOf(name);
    // The pre-wipe answers went with the wipe; the wipe's own answer and the later ones are there.
    expect(record.answers.length).toBeGreaterThanOrEqual(3);
    expect(record.sessions).toContain("#wiped");
    expect(record.sessions.filter((session) => session !== "#wiped" && session !== "")).toHaveLength(1);
  });

  it("a call answered before the wipe and resent after it is refused (EXPIRED), not run again on the wiped state", async () => {
    const name = unique("wipe-resend");
    using a = gatedClient(name);
    expect(await a.client.increment()).toBe(1);
    const lost = go(a.client.incrementThenDrop()); // runs (2), its answer is lost with the socket
    await vi.waitFor(() => expect(a.attempts[0]!.closed).toBeDefined());
    using b = connect<Reliable>(name);
    await b.client.wipe();
    a.release(); // now a reconnects and resends the call
    const error = await rpcFailure(lost, "EXPIRED");
    expect(error.message).toContain("deleteAll");
    expect(await b.client.getValue()).toBe(0);
    expect(await a.client.getValue()).toBe(0); // the session goes on
  });

  it("a wipe made outside any call, first thing after a wake-up, is seen too (the record watches from the constructor)", async () => {
    const name = unique("wipe-woken");
    using a = gatedClient(name);
    expect(await a.client.increment()).toBe(1);
    const lost = go(a.client.incrementThenDrop());
    await vi.waitFor(() => expect(a.attempts[0]!.closed).toBeDefined());
    const stub = env.RELIABLE.getByName(name);
    await evictDurableObject(stub);
    await runInDurableObject(stub, async (_object, state) => {
      await state.storage.deleteAll();
    });
    a.release();
    await rpcFailure(lost, "EXPIRED");
    expect(await a.client.getValue()).toBe(0);
  });

  it("a session older than the wipe still gets answers recorded after it from the record", async () => {
    const name = unique("wipe-replay");
    using a = connect<Reliable>(name);
    using b = connect<Reliable>(name);
    expect(await a.client.increment()).toBe(1);
    await b.client.wipe();
    // After the wipe: runs (1), answer lost; a's resend is answered from the record.
    expect(await a.client.incrementThenDrop()).toBe(1);
    expect(a.transport.attempts.length).toBeGreaterThan(1);
    expect(await b.client.getValue()).toBe(1);
  });
});

/**
 * A forgotten session across connections, and a resend that waited for its run on a connection
 * whose hello was refused (Node over node:sqlite with the fault transport).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { faulty } from "./fault-transport.js";
import { Service } from "./service.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import type { StandardSchemaV1 } from "../../packages/rpc/src/standard-schema.js";

afterEach(() => {
  vi.restoreAllMocks();
});

const HOUR = 3_600_000;

/**
 * A client and an object with a record (maxAge 2 h), after one call; `fresh()` cuts the
 * connection and returns the next one, on which the test speaks for a client as session `S` (the
 * real client's frames are dropped); `now` moves the clock.
 */
async function harness(name: string) {
  const service = new Service();
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery({ maxAge: 2 * HOUR, flushAfter: 0 })!, writes);
  const faults = faulty(service, undefined, { records });
  const client = createRpcClient<Service>("S", name, {
    heartbeat: false,
    timeout: 5_000,
    reconnect: { initialDelay: 1, maxDelay: 20 },
    transport: faults.factory,
  });
  opened.push(client);
  await client.increment();
  const now = vi.spyOn(Date, "now").mockReturnValue(Date.now());
  const fresh = async () => {
    faults.halfOpen = true;
    const count = faults.connections.length;
    faults.last.peerClose(1006);
    await vi.waitFor(() => expect(faults.connections.length).toBe(count + 1));
    return faults.last.paired;
  };
  return { service, now, fresh, S: "AAAAAAAAAAAAAAAAAAAAAA" };
}

const opened: { [Symbol.dispose](): void }[] = [];

afterEach(() => {
  for (const client of opened.splice(0)) client[Symbol.dispose]();
});

describe("a resend waiting for its run, from a session refused as stale", () => {
  // reliability.md: a resend whose call "is still running (its connection dropped under it) →
  // answer it when it ends", also on a connection whose hello was refused as stale: once the run
  // ends, the record holds its answer.
  it("the resend gets the run's answer when it ends, not EXPIRED", async () => {
    const { service, now, fresh, S } = await harness("one");
    let conn = await fresh();
    conn.inject(`\u001eH["${S}",0]`);
    conn.inject('\u001eC[[5,["hold",[0,"x"]],0,0]]'); // runs, and keeps running
    await vi.waitFor(() => expect(service.runsOf("hold:x")).toBe(1));
    now.mockReturnValue(Date.now() + 3 * HOUR); // the call runs for three hours
    conn = await fresh(); // its connection dropped under it; S comes back resending
    conn.inject(`\u001eH["${S}",1,${3 * HOUR}]`);
    const before = conn.sentByServer.length;
    conn.inject('\u001eC[[5,["hold",[0,"x"]],0,1]]'); // waits for the run (not EXPIRED at once)
    await new Promise((r) => setTimeout(r, 10));
    expect(conn.sentByServer.length).toBe(before);
    service.releaseAll(); // the run ends
    await vi.waitFor(() => expect(conn.sentByServer.length).toBeGreaterThan(before));
    const reply = JSON.parse((conn.sentByServer[before] as string).slice(2)) as unknown[][];
    expect(reply[0]).toEqual([5, 0, "x"]); // got [5, 3, "EXPIRED", …]
    expect(service.runsOf("hold:x")).toBe(1);
  });
});

describe("a forgotten session stays forgotten once one of its resends was answered EXPIRED", () => {
  // reliability.md: the session is unknown although the client resends and is not younger than 0.9
  // × maxAge → EXPIRED, "Never run twice." Saving the EXPIRED answer of its first resend writes the
  // session's row, so on the next connection the session is known again: its forgotten marker
  // still refuses a resend that was not decided before the drop (call 6).
  it("calls 5 and 6 ran and were swept; resend 5 EXPIRED, drop; resend 6 on the next connection is EXPIRED, not run again", async () => {
    const { service, now, fresh, S } = await harness("two");
    let conn = await fresh();
    conn.inject(`\u001eH["${S}",0]`);
    conn.inject('\u001eC[[5,["increment",[0]],0,0],[6,["increment",[0]],0,0]]'); // both run; answers lost
    await vi.waitFor(() => expect(service.runsOf("increment")).toBe(3));
    now.mockReturnValue(Date.now() + 3 * HOUR); // S is away for three hours
    conn = await fresh();
    conn.inject('\u001eH["BBBBBBBBBBBBBBBBBBBBBB",0]');
    conn.inject('\u001eC[[1,["increment",[0]],0,0]]'); // another client's call: its write sweeps S
    await vi.waitFor(() => expect(service.runsOf("increment")).toBe(4));
    conn = await fresh();
    conn.inject(`\u001eH["${S}",1,${3 * HOUR}]`); // refused: S was forgotten
    let before = conn.sentByServer.length;
    conn.inject('\u001eC[[5,["increment",[0]],0,1]]'); // resend 5: EXPIRED...
    await vi.waitFor(() => expect(conn.sentByServer.length).toBeGreaterThan(before));
    expect((JSON.parse((conn.sentByServer[before] as string).slice(2)) as unknown[][])[0]![2]).toBe("EXPIRED");
    conn = await fresh(); // ...and the connection drops before resend 6 arrives
    conn.inject(`\u001eH["${S}",1,${3 * HOUR + 1000}]`);
    before = conn.sentByServer.length;
    conn.inject('\u001eC[[6,["increment",[0]],0,1]]');
    await vi.waitFor(() => expect(conn.sentByServer.length).toBeGreaterThan(before));
    const reply = JSON.parse((conn.sentByServer[before] as string).slice(2)) as unknown[][];
    expect(reply[0]![1]).toBe(3); // failed (EXPIRED) — got a success: call 6 ran a second time
    expect(service.runsOf("increment")).toBe(4);
  });
});

/** A validator that reports many long issues (e.g. one per bad item, quoting what it received). */
const noisy: StandardSchemaV1<unknown, unknown[]> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: () => ({ issues: Array.from({ length: 50 }, (_, i) => ({ message: `item ${i}: ${"received ".repeat(60)}`, path: [i] })) }),
  },
};

class Strict {
  put = rpcMethod(noisy, (_x: unknown) => "stored");
}

describe("maxResultBytes bounds what the record stores (docs/security.md, api.md)", () => {
  // security.md "The record takes storage": every recorded call stores its reply frame "(up to
  // maxResultBytes, 128 KiB by default)"; api.md/reliability.md: "answers larger than this keep
  // only a marker". server-callee.ts record() now saves every Failed reply with keep "always"
  // (delivery.ts save: kept whatever maxResultBytes says): an INVALID_ARGUMENT carrying 50 issues
  // of 500 characters (≈ 27 KB) is stored whole under maxResultBytes: 1024, once per call a client
  // makes. stored within the bound (e.g. the refusal without its issues).
  it("an INVALID_ARGUMENT refusal with long issues is stored within maxResultBytes", async () => {
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({ maxResultBytes: 1024, flushAfter: 0 })!, writes);
    const faults = faulty(new Strict(), undefined, { records });
    const client = createRpcClient<Strict>("S", "noisy", { heartbeat: false, timeout: 5_000, transport: faults.factory });
    using _ = client;
    const error = (await client.put("x").then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string };
    expect(error?.code).toBe("INVALID_ARGUMENT");
    await vi.waitFor(() => expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies").one().n).toBe(1));
    const stored = sql.exec("SELECT length(frames) AS n FROM _dorpc_replies").one().n as number;
    expect(stored).toBeLessThanOrEqual(1024 + 64); // got ≈ 27,000
  });
});

/**
 * Delivery-record retention over time (unit tier: real client, real dispatcher, real
 * DeliveryRecord on node:sqlite).
 */
import { describe, expect, it } from "vitest";
import { createRpcClient, getRpcSession } from "../../packages/rpc/src/client.js";
import { faulty } from "../reliability/fault-transport.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";
import { pairWith } from "../support/paired-transport.js";
import { settle } from "./helpers.js";

class Counter {
  value = 0;
  increment(): number {
    return ++this.value;
  }
}

function setup(delivery: Parameters<typeof resolveDelivery>[0]) {
  const sql = nodeSql();
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(delivery)!, writes);
  const paired = pairWith(new Counter(), undefined, { records });
  const client = createRpcClient<Counter>("C", "one", { transport: paired.factory, heartbeat: false });
  return { sql, records, client };
}

function answersKept(sql: ReturnType<typeof nodeSql>): number {
  const rows = sql.exec("SELECT ids FROM _dorpc_replies").toArray();
  return rows.reduce((n, row) => n + (JSON.parse(row.ids as string) as unknown[]).length, 0);
}

describe("delivery record retention (docs/reliability.md: about 1.25 × window answers plus one batch row)", () => {
  // A batch row is deleted whole once its newest call is `window` calls old: right after a burst
  // answered together the record holds the whole burst; once `window` more calls have been
  // answered it is gone, and what is left is within about 1.25 × window.
  it("a burst of concurrent calls is kept whole, then pruned as a whole (window 16)", async () => {
    const { sql, client } = setup({ window: 16 });
    using _ = client;
    await Promise.all(Array.from({ length: 400 }, () => client.increment()));
    await new Promise((r) => setTimeout(r, 50));
    await Promise.all(Array.from({ length: 10 }, () => client.increment()));
    await new Promise((r) => setTimeout(r, 50));
    await settle();
    expect(answersKept(sql)).toBeGreaterThan(400); // the burst's row, whole
    for (let i = 0; i < 24; i++) await client.increment();
    await new Promise((r) => setTimeout(r, 50));
    await settle();
    expect(answersKept(sql)).toBeLessThanOrEqual(Math.ceil(16 * 1.25) + 4);
  });
});

class WithCallback {
  runs = 0;
  each(cb: (n: number) => unknown): number {
    this.runs++;
    void cb;
    return this.runs;
  }
}

// A resend answered from the record (replay) never builds its arguments: the callback it carries
// (re-pinned and counted as held by the new connection) is released, and the client's export
// table is empty once the call is answered.
describe("a resend answered from the record releases the callbacks it carries", () => {
  it("a callback in a call whose answer was lost and replayed from the record is not held by the client forever", async () => {
    const sql = nodeSql();
    const writes = watchWrites({ sql });
    const records = new DeliveryRecord(writes.sql, resolveDelivery({})!, writes);
    const service = new WithCallback();
    const faults = faulty(service, undefined, { records });
    const client = createRpcClient<WithCallback>("C", "cb", {
      transport: faults.factory,
      heartbeat: false,
      reconnect: { initialDelay: 1, maxDelay: 5 },
    });
    using _ = client;
    expect(await client.each(() => 1)).toBe(1);
    faults.cutOnReply = 1; // the answer of the next call is lost with its connection
    expect(await client.each(() => 1)).toBe(2);
    expect(service.runs).toBe(2); // the resend was answered from the record
    await settle();
    // the object holds nothing of this client; the client's export table is empty.
    expect(getRpcSession(client).exports.size).toBe(0);
  });
});

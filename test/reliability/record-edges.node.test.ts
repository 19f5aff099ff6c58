/**
 * The exactly-once record's options and lifecycle, Node over node:sqlite with the fault
 * transport (the patterns of exactly-once.node.test.ts): refusals kept whatever maxResultBytes
 * says, a resend of a running call waits even when its session is stale, pruning with a huge
 * window, options of the wrong type, a forgotten session that stays forgotten, and a stored
 * binary answer sent in its place behind a reply that reads a Blob.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRpcClient, type RpcClientOptions } from "../../packages/rpc/src/client.js";
import { DeliveryRecord } from "../../packages/rpc/src/delivery.js";
import { resolveServerOptions } from "../../packages/rpc/src/dispatcher.js";
import { resolveDelivery } from "../../packages/rpc/src/delivery-options.js";
import { SessionMemory } from "../../packages/rpc/src/delivery-sessions.js";
import { CallFlags } from "../../packages/rpc/src/envelopes.js";
import { readFrame } from "../../packages/rpc/src/frame.js";
import type { RpcError } from "../../packages/rpc/src/errors.js";
import { rpcMethod } from "../../packages/rpc/src/rpc-method.js";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { type NodeSql, nodeSql } from "../support/node-sql.js";
import { faulty } from "./fault-transport.js";
import { Service } from "./service.js";

class Ledger extends Service {
  storage: NodeSql | undefined;
  store(n: number): number {
    this.runs.set("store", (this.runs.get("store") ?? 0) + 1);
    this.storage!.exec("CREATE TABLE IF NOT EXISTS kept (n INTEGER)");
    this.storage!.exec("INSERT INTO kept VALUES (?)", n);
    return n;
  }
  /** A read: not recorded. */
  peek = rpcMethod({ readOnly: true }, () => this.value);
  /** A read whose result is a Blob: its reply waits for the bytes. */
  peekBlob = rpcMethod({ readOnly: true }, (text: string) => {
    this.runs.set("peekBlob", (this.runs.get("peekBlob") ?? 0) + 1);
    return new Blob([text]);
  });
  bytesOf(n: number): Uint8Array {
    this.runs.set("bytesOf", (this.runs.get("bytesOf") ?? 0) + 1);
    return new Uint8Array(n).fill(n);
  }
  bulk = rpcMethod({ record: false }, (n: number) => {
    this.runs.set("bulk", (this.runs.get("bulk") ?? 0) + 1);
    return "x".repeat(n);
  });
}

function setup(options: Omit<RpcClientOptions, "transport"> = {}, delivery?: Parameters<typeof resolveDelivery>[0]) {
  const service = new Ledger();
  const sql = nodeSql();
  service.storage = sql;
  const writes = watchWrites({ sql });
  const records = new DeliveryRecord(writes.sql, resolveDelivery(delivery)!, writes);
  const faults = faulty(service, undefined, { records });
  const client = createRpcClient<Ledger>("LEDGER", "one", {
    heartbeat: false,
    timeout: 2_000,
    reconnect: { initialDelay: 1, maxDelay: 20 },
    ...options,
    transport: faults.factory,
  });
  return { service, sql, records, faults, client, [Symbol.dispose]: () => client[Symbol.dispose]() };
}

/** A fresh connection on which the test speaks for a client (the real client's frames are dropped). */
async function freshConnection(t: ReturnType<typeof setup>) {
  t.faults.halfOpen = true;
  const count = t.faults.connections.length;
  t.faults.last.peerClose(1006);
  await vi.waitFor(() => expect(t.faults.connections.length).toBe(count + 1));
  return t.faults.last.paired;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("maxResultBytes", () => {
  // delivery.ts/server-callee.ts `record`: "a refusal (the method did not run, or its result was
  // withheld) is short and is kept, so a resend is told what happened, not that it ran". With a
  // small (valid, ≥ 0) maxResultBytes the refusal is replaced by the marker, and the resend is told
  // "Call N ran before the connection dropped" for a call that never ran.
  it.each([0, 64])(
    "maxResultBytes: %i — a call refused before it ran (unknown method) is not reported to its resend as having run",
    async (max) => {
      using t = setup({}, { maxResultBytes: max });
      await t.client.increment();
      t.faults.cutOnReply = 1;
      const error = (await (t.client as unknown as { nope(): Promise<unknown> }).nope().catch((e: unknown) => e)) as RpcError;
      expect(error.message).not.toContain("ran before the connection dropped");
      expect(error.code).toBe("NOT_FOUND");
    },
  );
});

describe("maxAge against a session whose call is still running", () => {
  // docs/api.md: "a session's row is rewritten often enough (at least ten times per maxAge) that an
  // active one is never forgotten"; reliability.md: a resend of a call "still running (its
  // connection dropped under it) → answer it when it ends". A session whose only activity is a call
  // that runs longer than maxAge is active, and the record knows the call is running.
  it("a resend of a call still running, from a session last written more than maxAge ago, waits for it instead of EXPIRED", () => {
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000_000);
    const records = new DeliveryRecord(nodeSql(), resolveDelivery({ maxAge: 1_000 })!);
    const S = "AAAAAAAAAAAAAAAAAAAAAA";
    records.hello(S, false);
    expect(records.decide(S, 1, 0, true, false)).toEqual({ kind: "run", record: true });
    records.started(S, 1);
    now.mockReturnValue(1_000_000 + 3_000); // the call still runs; the connection drops; the client comes back
    const known = records.hello(S, true, 3_000);
    expect(records.decide(S, 1, CallFlags.Retry, true, !known).kind).toBe("wait");
  });
});

describe("window / 4 pruning with a large window", () => {
  // reliability.md: old batches are deleted "at a session's first write in an object instance and
  // then every window / 4 calls". delivery.ts prune uses `window >> 2`, a 32-bit shift.
  it("window 2^31: 40 calls are due to prune once, not on every batch, and (fewer than the window) delete nothing", async () => {
    using t = setup({}, { window: 2 ** 31, flushAfter: 0 });
    for (let i = 0; i < 40; i++) await t.client.increment();
    const prunes = t.sql.statements.filter((q) => q.startsWith("DELETE FROM _dorpc_replies WHERE session = ?")).length;
    expect(prunes).toBe(0);
    // When a prune is due: at the first batch, then every window / 4 calls (2^29 here).
    const memory = new SessionMemory(resolveDelivery({ window: 2 ** 31 })!.maxAge);
    const every = Math.max(1, Math.floor(2 ** 31 / 4));
    const due = Array.from({ length: 40 }, (_, i) => memory.pruneDue("S", i + 1, every)).filter(Boolean).length;
    expect(due).toBe(1);
  });
});

describe("exactlyOnce option types", () => {
  // docs/api.md: "Invalid options throw BAD_OPTION"; resolveLimits refuses `null` values and the
  // topics option refuses arrays ("so a typo fails at construction time rather than silently
  // keeping a default"). exactlyOnce takes both silently and keeps the defaults.
  it.each([
    ["{ window: null }", { window: null }],
    ["{ maxResultBytes: null }", { maxResultBytes: null }],
    ["[]", []],
    ["new Map([['window', 16]])", new Map([["window", 16]])],
  ])("exactlyOnce: %s is BAD_OPTION, not silently the defaults", (_name, value) => {
    expect(() => resolveServerOptions({ exactlyOnce: value as never })).toThrow(expect.objectContaining({ code: "BAD_OPTION" }));
  });
});

describe("a forgotten session's second resending hello", () => {
  // reliability.md: "the session is unknown although the client resends and does not say it is
  // younger than 0.9 × maxAge → EXPIRED" ... "Never run twice." The first resending hello of a
  // swept session writes the session's row again (hello → touch), so if that connection is lost
  // before its resends are decided (or, over HTTP, the response carrying the EXPIRED refusals is
  // lost and the batch is resent), the next resending hello finds the session "known", and a resend
  // of a call that ran before the sweep — whose answer the sweep deleted — runs again.
  it("call ran, answer lost, session swept; first resending hello is EXPIRED; the second must be too (not run again)", () => {
    const HOUR = 3_600_000;
    const now = vi.spyOn(Date, "now").mockReturnValue(1_000 * HOUR);
    const sql = nodeSql();
    const records = new DeliveryRecord(sql, resolveDelivery({ maxAge: 2 * HOUR })!);
    const S = "AAAAAAAAAAAAAAAAAAAAAA";
    records.hello(S, false);
    expect(records.decide(S, 5, 0, true, false)).toEqual({ kind: "run", record: true });
    records.started(S, 5);
    records.save(S, 5, "\u001eR[[5,0,1]]", true); // ran; its answer is lost with the connection
    // Three hours later another session's write sweeps S (idle > maxAge) with its answers.
    now.mockReturnValue(1_003 * HOUR);
    records.hello("BBBBBBBBBBBBBBBBBBBBBB", false);
    expect(sql.exec("SELECT count(*) AS n FROM _dorpc_replies WHERE session = ?", S).one().n).toBe(0);
    // S comes back resending (it began 3 h ago): unknown, so its resends are EXPIRED...
    const age = 3 * HOUR + 1_000;
    expect(records.hello(S, true, age)).toBe(false);
    // ...but that connection drops before call 5's resend is decided; S reconnects and resends.
    now.mockReturnValue(1_003 * HOUR + 1_000);
    const known = records.hello(S, true, age + 1_000);
    expect(records.decide(S, 5, CallFlags.Retry, true, !known)).toMatchObject({ kind: "refuse", error: { code: "EXPIRED" } }); // got { kind: "run" }
  });
});

describe("a forgotten session's second resending hello, over connections", () => {
  it("the resend on the second connection after the sweep is EXPIRED like on the first, and the call does not run twice", async () => {
    const HOUR = 3_600_000;
    using t = setup({}, { maxAge: 2 * HOUR, flushAfter: 0 });
    await t.client.increment();
    const now = vi.spyOn(Date, "now").mockReturnValue(Date.now());
    const fresh = () => freshConnection(t);
    const S = "AAAAAAAAAAAAAAAAAAAAAA";
    let conn = await fresh();
    conn.inject(`\u001eH["${S}",0]`);
    conn.inject('\u001eC[[5,["increment",[0]],0,0]]'); // runs; its answer is lost with the connection
    await vi.waitFor(() => expect(t.service.runsOf("increment")).toBe(2));
    now.mockReturnValue(Date.now() + 3 * HOUR); // S is away for three hours
    conn = await fresh();
    conn.inject('\u001eH["BBBBBBBBBBBBBBBBBBBBBB",0]');
    conn.inject('\u001eC[[1,["increment",[0]],0,0]]'); // another client's call: its write sweeps S
    await vi.waitFor(() => expect(t.service.runsOf("increment")).toBe(3));
    conn = await fresh();
    conn.inject(`\u001eH["${S}",1,${3 * HOUR}]`); // S resends... and this connection drops at once
    conn = await fresh();
    conn.inject(`\u001eH["${S}",1,${3 * HOUR + 1000}]`);
    const before = conn.sentByServer.length;
    conn.inject('\u001eC[[5,["increment",[0]],0,1]]');
    await vi.waitFor(() => expect(conn.sentByServer.length).toBeGreaterThan(before));
    const reply = JSON.parse((conn.sentByServer[before] as string).slice(2)) as unknown[][];
    expect(reply[0]![1]).toBe(3); // failed (EXPIRED) — got a success: it ran again
    expect(t.service.runsOf("increment")).toBe(3);
  });
});

describe("a resend answered from the record behind a reply still reading its Blob", () => {
  // outbox.ts: what one end queues leaves in the order it was queued, and a reply holding a Blob
  // holds back what comes after it; server-callee.ts: a binary answer kept in the record is sent
  // "in its place". It used to go straight to the socket after outbox.flush(), which does not
  // send what waits behind a Blob read, so it overtook the reply queued before it.
  it("the stored binary answer of a resend arriving after a Blob call leaves after that call's reply", async () => {
    using t = setup({}, { flushAfter: 0 });
    await t.client.increment();
    const fresh = () => freshConnection(t);
    const S = "AAAAAAAAAAAAAAAAAAAAAA";
    const ids = (frames: readonly (string | Uint8Array)[]) =>
      frames.map((f) => ((readFrame(f, LIMITS)!.body as unknown[][])[0] as number[])[0]);
    let conn = await fresh();
    conn.inject(`\u001eH["${S}",0]`);
    conn.inject('\u001eC[[1,["bytesOf",[0,3]]]]'); // runs; its binary answer is kept, and lost with the connection
    await vi.waitFor(() => expect(conn.sentByServer.length).toBe(1));
    conn = await fresh();
    conn.inject(`\u001eH["${S}",1,1000]`);
    const before = conn.sentByServer.length;
    conn.inject('\u001eC[[2,["peekBlob",[0,"b"]]]]'); // its reply waits for the Blob's bytes
    conn.inject(`\u001eC[[1,["bytesOf",[0,3]],0,${CallFlags.Retry}]]`); // answered from the record
    await vi.waitFor(() => expect(conn.sentByServer.length).toBe(before + 2));
    expect(ids(conn.sentByServer.slice(before))).toEqual([2, 1]); // was [1, 2]: the stored answer went first
    expect([t.service.runsOf("peekBlob"), t.service.runsOf("bytesOf")]).toEqual([1, 1]);
  });
});

const LIMITS = { maxMessageBytes: 1 << 30, maxBlobs: 1 << 20 } as never;
